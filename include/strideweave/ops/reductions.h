// strideweave/ops/reductions.h — reductions, arg reductions, cumsum, sort, topk.
// Every function follows the front-end contract of <strideweave/ops.h>; the
// exact semantics (order of accumulation, NaN, signed zero, ties) are in
// docs/operations/reductions.md.
//
// Common rules:
// - Axes are top-level modes; an axis is in [-rank, rank) (ValueError
//   otherwise, also for a duplicate). A rank-0 tensor has no axis.
// - The "reduced block" of a result element is the set of reduced
//   coordinates, visited in logical order: first reduced axis fastest.
// - Every error (TypeError from the policy, ValueError for options and
//   shapes, OverflowError for Int32 indices that cannot hold every position)
//   is raised before any result is allocated; operands are never changed.
// - Results are fresh compact tensors of a flat Shape.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/output.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>
#include <strideweave/ops/option_defaults.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// The axes a reduction reduces. Unambiguous by construction:
//   Axes::all()   every axis (the default argument);
//   {1, 2} / std::vector / one integer   those axes, each in [-rank, rank),
//                 no duplicates (ValueError);
//   {} / Axes()   the empty list: reduces nothing (each block is one
//                 element), as numpy's axis=() does (torch's dim=[] would
//                 reduce everything; strideweave never guesses).
class Axes {
 public:
  Axes() = default;
  Axes(std::initializer_list<std::int64_t> axes) : list_(std::vector<std::int64_t>(axes)) {}
  Axes(std::vector<std::int64_t> axes) : list_(std::move(axes)) {}  // NOLINT: implicit on purpose
  Axes(std::int64_t axis) : list_(std::vector<std::int64_t>{axis}) {}  // NOLINT: implicit on purpose
  Axes(int axis) : Axes(static_cast<std::int64_t>(axis)) {}           // NOLINT: a literal axis
  static Axes all() {
    Axes a;
    a.list_.reset();
    return a;
  }
  // nullopt = every axis.
  const std::optional<std::vector<std::int64_t>>& list() const noexcept { return list_; }

 private:
  std::optional<std::vector<std::int64_t>> list_ = std::vector<std::int64_t>{};
};

// reduce_sum(x, axes, keepdims, options): Float32 (FLOATING: order chosen by
// the carrier, tolerance in docs/numerics.md; options may select the Float64
// accumulator) or Int32 (EXACT_INTEGER, OverflowError when the exact total
// leaves Int32). Empty block -> 0. keepdims keeps every reduced axis with
// extent 1.
Tensor reduce_sum(const Tensor& x, Axes axes = Axes::all(), bool keepdims = detail::option_defaults::reduce_sum_keepdims,
                  const std::optional<OperationExecutionOptions>& options = std::nullopt, const Output& out = {});

// reduce_prod(x, axes, keepdims): Float32 only (Int32 -> TypeError).
// SEQUENTIAL_BINARY32_PRODUCT: from 1.0f, multiply the block in logical
// order, rounding to binary32 after each multiply. Empty block -> 1.
Tensor reduce_prod(const Tensor& x, Axes axes = Axes::all(), bool keepdims = detail::option_defaults::reduce_prod_keepdims, const Output& out = {});

// reduce_max / reduce_min(x, axes, keepdims): Float32 only. Any NaN in the
// block -> NaN (the first NaN in logical order); +0 is greater than -0. An
// empty block has no identity: ValueError.
Tensor reduce_max(const Tensor& x, Axes axes = Axes::all(), bool keepdims = detail::option_defaults::reduce_max_keepdims, const Output& out = {});
Tensor reduce_min(const Tensor& x, Axes axes = Axes::all(), bool keepdims = detail::option_defaults::reduce_min_keepdims, const Output& out = {});

// argmax / argmin(x, axis, keepdims) -> Int32. axis: one axis, or nullopt =
// every element in logical order (the result is the flat logical ordinal;
// with keepdims every axis keeps extent 1). The first winner (lowest ordinal
// in the block) is returned; NaN is the extreme for both (the first NaN
// wins); +0 beats -0 for argmax, -0 beats +0 for argmin. Empty block ->
// ValueError; a block of more than 2^31 elements -> OverflowError.
Tensor argmax(const Tensor& x, std::optional<std::int64_t> axis = std::nullopt,
              bool keepdims = detail::option_defaults::argmax_keepdims,
              const Output& out = {});
Tensor argmin(const Tensor& x, std::optional<std::int64_t> axis = std::nullopt,
              bool keepdims = detail::option_defaults::argmin_keepdims,
              const Output& out = {});

// cumsum(x, axis): Float32 only; same shape as x. SEQUENTIAL_BINARY32 along
// the axis: from +0.0, add in ascending order, rounding after each add
// (so cumsum of [-0.0] is [+0.0]).
Tensor cumsum(const Tensor& x, std::int64_t axis, const Output& out = {});

// The two results of sort and topk.
struct SortResult {
  Tensor values;   // Float32, the elements (bit for bit) in sorted order
  Tensor indices;  // Int32, their positions along the axis
};

// sort(x, axis, descending): Float32 only; both results have x's shape.
// Stable. Order: -inf < ... < -0 < +0 < ... < +inf < NaN (every NaN equal to
// every other NaN); descending reverses the order, equal elements keep their
// original order in both directions. An axis extent above 2^31 ->
// OverflowError. Runs the plans _sort_values and _sort_indices. (Two results:
// no caller-provided output.)
SortResult sort(const Tensor& x, std::int64_t axis = detail::option_defaults::sort_axis,
                bool descending = detail::option_defaults::sort_descending);

// topk(x, k, axis, largest): the k largest (largest = true, largest first) or
// smallest (smallest first) elements along the axis, in the order of sort
// (ties: lower index first; NaN is the largest). 0 <= k <= extent, else
// ValueError. Results have x's shape with the axis extent replaced by k.
// Runs the plans _topk_values and _topk_indices.
SortResult topk(const Tensor& x, std::int64_t k, std::int64_t axis = detail::option_defaults::topk_axis,
                bool largest = detail::option_defaults::topk_largest);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
