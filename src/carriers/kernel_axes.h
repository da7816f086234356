// Internal: the execution axes of a kernel that writes its result through
// the output tensor's own layout (strided writes) — true of every Generic
// and CPU kernel. Shared by the shipped carriers' registrations so that what
// a table claims is written once (backend-capability-descriptor.md).
//
//   owned_result    Native       fresh compact result storage
//   borrowed_input  as given     Generic: Native (every view is read in place
//                                through its Layout); CPU: FallbackCopy (plain
//                                strided views are read in place, an operand
//                                with a hierarchical mode that does not
//                                coalesce to one stride goes through the
//                                framework's counted copy first;
//                                docs/capabilities.md)
//   caller_output   Native when the kernel cannot fail once entered,
//                   FallbackCopy otherwise (checked Int32 arithmetic, exact
//                   integer narrowing, index errors, the contracted matmul's
//                   library call), so a failing call never
//                   leaves a caller's output half written
//   strided_output  as caller_output (kernels write through the strides)
//   accumulation    Unsupported for Bool results; for Float32/Int32 results
//                   Native where the kernel read-modify-writes its output
//                   itself (KernelCall::accumulate: CPU's elementwise
//                   arithmetic family, `native_accumulation`), FallbackCopy
//                   otherwise (compute, then the framework adds in the
//                   output arithmetic, storage/ranges.h publish_result)
#pragma once

#include <strideweave/capability.h>

#include "policy/operation_ids.h"

namespace strideweave::carriers {

inline bool kernel_may_fail(const OperationPlan& plan) {
  using Op = policy::OperationId;
  const std::optional<Op> op = policy::find_operation_id(plan.operation());
  return plan.compute() == Arithmetic::INT32_EXACT_CHECKED || plan.accumulation() == Accumulation::EXACT_INTEGER ||
         op == Op::gather || op == Op::scatter || op == Op::scatter_add ||
         plan.compute() == Arithmetic::BINARY32_FUSED;  // a library call (oneDNN) that may fail
}

inline ExecutionAxes direct_write_axes(const OperationPlan& plan, SupportLevel borrowed_input,
                                       bool native_accumulation = false) {
  ExecutionAxes axes;
  axes.owned_result = SupportLevel::Native;
  axes.borrowed_input = borrowed_input;
  axes.caller_output = kernel_may_fail(plan) ? SupportLevel::FallbackCopy : SupportLevel::Native;
  axes.strided_output = axes.caller_output;
  axes.accumulation = &plan.output() == &DType::Bool() ? SupportLevel::Unsupported
                      : native_accumulation            ? SupportLevel::Native
                                                       : SupportLevel::FallbackCopy;
  return axes;
}

}  // namespace strideweave::carriers
