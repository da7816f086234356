// strideweave/ops.h — the operation front end.
//
// Every function here is policy, not arithmetic (STYLE.md habit 1). It
//   1. resolves the OperationPlan once through the central dtype policy
//      (errors: TypeError / NotImplementedError / OverflowError as
//      operation-dtype-policy.md says);
//   2. validates options and shapes and computes the result Shape
//      (ValueError), reading no element;
//   3. checks that every tensor operand lives on one exact carrier class
//      (TypeError) and that no carrier is released (RuntimeError);
//   4. requires a kernel for exactly that plan on that class
//      (UnsupportedOperationPlan), before any allocation;
//   5. allocates the result on the operands' carrier class in the canonical
//      compact layout of a flat Shape (one leaf per top-level mode of the
//      inputs, whatever their nesting) and runs the kernel.
// A failure at any step leaves every operand unchanged.
//
// Broadcasting follows docs/broadcasting.md (numpy rules on top-level modes).
// Results are fresh tensors; inputs may be any view (strided, broadcast,
// permuted, hierarchical).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/execution.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>

#include <strideweave/ops/arithmetic.h>
#include <strideweave/ops/reductions.h>
#include <strideweave/ops/structured.h>
#include <strideweave/ops/unary.h>

namespace strideweave {

// The broadcast of two shapes' top-level extents (ValueError naming
// `operation` when incompatible).
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation);

// Caller-provided outputs (the descriptor note's execution axes).
//
//   Tensor r = compute_into(out, [&] { return add(a, b); });
//   compute_into(acc, [&] { return matmul(a, b); }, OutputMode::Accumulate);
//
// runs one front-end call and writes its (first) result into `out` instead
// of fresh storage, or adds it into `out` (read-modify-write in the plan's
// output arithmetic). `out` must be on the operands' exact carrier class
// (TypeError), publicly mutable and live (RuntimeError), of the plan's output
// dtype (TypeError), of the result's shape (ValueError), and share no
// carrier with an operand (ValueError). The executing carrier's capability
// entry decides how: caller_output / accumulation (and strided_output when
// `out` is not compact) must not be Unsupported (UnsupportedOpDType, before
// any allocation); Native kernels write `out` directly, FallbackCopy computes
// into fresh storage and copies. Either way `out` changes only if the whole
// call succeeds, and its carrier's version advances by exactly one. Returns
// `out`.
enum class OutputMode { Overwrite, Accumulate };
Tensor compute_into(const Tensor& out, const std::function<Tensor()>& op, OutputMode mode = OutputMode::Overwrite);

}  // namespace strideweave
