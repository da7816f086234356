// Internal: the one dispatch path every front-end operation takes.
#pragma once

#include <strideweave/execution.h>
#include <strideweave/ops.h>
#include <strideweave/output.h>

#include <span>

#include <optional>
#include <string_view>
#include <vector>

namespace strideweave::frontend {

// Step 3 of ops.h: one exact carrier class, no released carrier; returns the
// carrier that serves as allocation prototype.
const Carrier& common_carrier(std::string_view operation, std::initializer_list<const Tensor*> tensors);

// resolve_operation_plan(op, dtypes) for tensor-only operands with default
// options, remembered per thread: resolution is a pure function of the
// operation and the dtypes, so a repeated call returns the same immutable
// plan without running the rule again. Errors are never remembered (each
// failing call re-raises). The reference is valid for the thread's life, or
// refers to `scratch` once the per-thread table is full (256 entries).
const OperationPlan& tensor_plan(std::string_view op, std::initializer_list<const DType*> dtypes,
                                 std::optional<OperationPlan>& scratch);

// Steps 4-5 of ops.h: gate on the exact plan; then, following the entry's
// execution axes (docs/capabilities.md): admit the operands (borrowed_input)
// and either allocate the result in the canonical layout on the prototype's
// class (owned_result) or write the caller's `out` (caller_output,
// strided_output, accumulation); run the kernel; record autograd. Every
// refusal comes before any allocation; a FallbackCopy is counted
// (execution_fallback_copies).
Tensor execute(const OperationPlan& plan, std::vector<KernelOperand> operands, const Attributes& attributes,
               const Shape& result_shape, const Carrier& prototype, const Output& out);

// ---- Lowering: one call, decided before any capability check or allocation
//
// Every single-kernel front-end family is written once, as a template over
// a finisher that receives what the call lowers to: the plan, the kernel's
// operands (broadcast views, materialised scalars), the attributes, the
// kernel's result shape, the allocation prototype, and the axes the
// published result squeezes away (matmul's vector promotion, rank-0
// gather/scatter). The typed functions finish with Execute (the hot path:
// nothing is copied); the built-in OperationDefinitions and the by-name
// calls finish with Lower, so their resolve step is exactly what the typed
// function does up to the kernel (docs/design.md, "One record per
// operation").

// What one call lowers to (Lower's product).
struct Lowered {
  OperationPlan plan;
  std::vector<KernelOperand> operands;
  Attributes attributes;
  Shape kernel_shape;
  const Carrier* prototype = nullptr;
  std::vector<std::int64_t> squeeze;  // axes of the kernel result the published result drops
  // The published result's shape.
  Shape published_shape() const;
};

// Runs a lowered call: execute(), then the published view.
Tensor run(Lowered lowered, const Output& out);

// The typed functions' finisher: execute, then squeeze (never a caller's
// output: it is returned as given).
struct Execute {
  const Output& out;
  Tensor operator()(const OperationPlan& plan, std::vector<KernelOperand> operands, const Attributes& attributes,
                    const Shape& shape, const Carrier& prototype, std::span<const std::int64_t> squeeze = {}) const;
};

// The definitions' finisher: records the lowering, runs nothing.
struct Lower {
  Lowered operator()(const OperationPlan& plan, std::vector<KernelOperand> operands, const Attributes& attributes,
                     const Shape& shape, const Carrier& prototype, std::span<const std::int64_t> squeeze = {}) const {
    return Lowered{plan, std::move(operands), attributes, shape, &prototype, {squeeze.begin(), squeeze.end()}};
  }
};

// A weak scalar materialised as its plan operand's convert_to dtype.
Value materialize(const WeakScalar& scalar, const OperandPlan& operand, std::string_view operation);

// The common shapes of front-end families.
// Tensor/tensor elementwise with broadcasting; the plan is resolved here.
template <class Finish>
auto binary(std::string_view op, const Tensor& a, const Tensor& b, Finish&& finish) {
  std::optional<OperationPlan> scratch;
  const OperationPlan& plan = tensor_plan(op, {&a.dtype(), &b.dtype()}, scratch);
  // Equal shapes (the common case) need no broadcast shape to be built.
  std::optional<Shape> broadcast;
  const bool same = a.shape() == b.shape() && a.shape().is_flat();  // broadcast_shapes is flat
  if (!same) broadcast.emplace(broadcast_shapes(a.shape(), b.shape(), op));
  const Shape& shape = same ? a.shape() : *broadcast;
  const Carrier& prototype = common_carrier(op, {&a, &b});
  // An operand already of the result's shape is passed as it is (no view).
  return finish(plan, {a.shape() == shape ? a : a.broadcast_to(shape), b.shape() == shape ? b : b.broadcast_to(shape)},
                Attributes{}, shape, prototype);
}
inline Tensor binary(std::string_view op, const Tensor& a, const Tensor& b, const Output& out) {
  return binary(op, a, b, Execute{out});
}

// Tensor/weak-scalar elementwise; the result has the tensor's (flat) shape.
template <class Finish>
auto tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s, Finish&& finish) {
  const OperationPlan plan = resolve_operation_plan(op, {a.dtype(), s});
  const Carrier& prototype = common_carrier(op, {&a});
  return finish(plan, {a, materialize(s, plan.operands()[1], op)}, Attributes{}, Shape::of(a.shape().extents()),
                prototype);
}
inline Tensor tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s, const Output& out) {
  return tensor_scalar(op, a, s, Execute{out});
}
// Normalised, sorted, duplicate-free axes (ValueError otherwise); nullopt =
// every axis.
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::optional<std::vector<std::int64_t>>& axes,
                                         std::size_t rank);
// A flat Shape with the top-level extents of `shape`.
inline Shape flat(const Shape& shape) { return Shape::of(shape.extents()); }

}  // namespace strideweave::frontend
