// Internal: the one dispatch path every front-end operation takes.
#pragma once

#include <strideweave/execution.h>
#include <strideweave/output.h>

#include <optional>
#include <string_view>
#include <vector>

namespace strideweave::frontend {

// Step 3 of ops.h: one exact carrier class, no released carrier; returns the
// carrier that serves as allocation prototype.
const Carrier& common_carrier(std::string_view operation, std::initializer_list<const Tensor*> tensors);

// Steps 4-5 of ops.h: gate on the exact plan; then, following the entry's
// execution axes (docs/capabilities.md): admit the operands (borrowed_input)
// and either allocate the result in the canonical layout on the prototype's
// class (owned_result) or write the caller's `out` (caller_output,
// strided_output, accumulation); run the kernel; record autograd. Every
// refusal comes before any allocation; a FallbackCopy is counted
// (execution_fallback_copies).
Tensor execute(const OperationPlan& plan, std::vector<KernelOperand> operands, const Attributes& attributes,
               const Shape& result_shape, const Carrier& prototype, const Output& out);

// A weak scalar materialised as its plan operand's convert_to dtype.
Value materialize(const WeakScalar& scalar, const OperandPlan& operand, std::string_view operation);

// The common shapes of front-end families.
// Tensor/tensor elementwise with broadcasting; the plan is resolved here.
Tensor binary(std::string_view op, const Tensor& a, const Tensor& b, const Output& out);

// resolve_operation_plan(op, dtypes) for tensor-only operands with default
// options, remembered per thread: resolution is a pure function of the
// operation and the dtypes, so a repeated call returns the same immutable
// plan without running the rule again. Errors are never remembered (each
// failing call re-raises). The reference is valid for the thread's life, or
// refers to `scratch` once the per-thread table is full (256 entries).
const OperationPlan& tensor_plan(std::string_view op, std::initializer_list<const DType*> dtypes,
                                 std::optional<OperationPlan>& scratch);
// Tensor/weak-scalar elementwise; the result has the tensor's (flat) shape.
Tensor tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s, const Output& out);
// Normalised, sorted, duplicate-free axes (ValueError otherwise); nullopt =
// every axis.
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::optional<std::vector<std::int64_t>>& axes,
                                         std::size_t rank);
// A flat Shape with the top-level extents of `shape`.
inline Shape flat(const Shape& shape) { return Shape::of(shape.extents()); }

}  // namespace strideweave::frontend
