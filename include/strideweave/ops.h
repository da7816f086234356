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
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <strideweave/execution.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// add(a, b): elementwise sum with broadcasting.
Tensor add(const Tensor& a, const Tensor& b);
// elementwise_mul(a, b): elementwise product with broadcasting.
Tensor elementwise_mul(const Tensor& a, const Tensor& b);
// mul: tensor/tensor, tensor/weak-scalar and weak-scalar/tensor. The
// weak-scalar/tensor form resolves the registry's (tensor, weak_scalar) plan:
// multiplication is commutative in every plan's arithmetic, so the result is
// identical (docs/operations.md).
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, WeakScalar b);
Tensor mul(WeakScalar a, const Tensor& b);
// relu(x) = x > 0 ? x : +0 (NaN propagates; -0 becomes +0).
Tensor relu(const Tensor& x);

// Options of the reductions. axes: nullopt = every axis; each axis in
// [-rank, rank), no duplicates (ValueError).
struct ReduceOptions {
  std::optional<std::vector<std::int64_t>> axes;
  bool keepdims = false;
};
// reduce_sum(x, axes, keepdims, options): options may select the Float64
// accumulator of the Float32 plan.
Tensor reduce_sum(const Tensor& x, ReduceOptions reduce = {},
                  const std::optional<OperationExecutionOptions>& options = std::nullopt);
inline Tensor reduce_sum(const Tensor& x, std::vector<std::int64_t> axes, bool keepdims = false,
                         const std::optional<OperationExecutionOptions>& options = std::nullopt) {
  return reduce_sum(x, ReduceOptions{std::move(axes), keepdims}, options);
}

// matmul(a, b): numpy matmul semantics: rank >= 1; a 1-D operand is treated
// as a row (a) or column (b) vector and its axis removed from the result;
// leading batch axes broadcast. Mismatched contraction extents -> ValueError.
Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options = std::nullopt);

// The broadcast of two shapes' top-level extents (ValueError naming
// `operation` when incompatible).
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation);

// The reason an exact class does not execute `plan` (one of two stable
// sentences), or nullopt when it does.
std::optional<std::string> unsupported_plan_reason(CarrierClass cls, const OperationPlan& plan);

}  // namespace strideweave
