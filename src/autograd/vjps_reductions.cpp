// VJPs of the reduction family (ops/reductions.h). Conventions (extrema
// ties, products with zeros, sort ties): docs/autograd.md.
#include <limits>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave::autograd {
namespace {

struct Reduction {
  const Tensor& x;
  std::vector<std::int64_t> extents;
  const std::vector<std::int64_t>& axes;  // sorted, normalised
  bool keepdims;
  explicit Reduction(const VjpContext& c)
      : x(c.tensor(0)),
        extents(x.shape().extents().begin(), x.shape().extents().end()),
        axes(attr_ints(c, "axes")),
        keepdims(attr_bool(c, "keepdims")) {}
  // The cotangent broadcast back to x's extents.
  Tensor expand(const Tensor& g) const { return expand_reduced(g, extents, axes, keepdims); }
  Axes reduced() const { return Axes(axes); }
};

Grads sum_vjp(const VjpContext& c, const Tensor& g) { return {Reduction(c).expand(g)}; }

// d prod / d x_i = the product of the block's other elements: P / x_i when
// the block has no zero; P' (the product of the non-zero elements) at the
// only zero; 0 elsewhere (and everywhere when two or more are zero).
Grads prod_vjp(const VjpContext& c, const Tensor& g) {
  const Reduction r(c);
  const Tensor one = scalar_like(r.x, 1.0f), zero = scalar_like(r.x, 0.0f);
  const Tensor is_zero = eq(r.x, zero);
  const Tensor nonzero = select(is_zero, one, r.x);
  const Tensor p = reduce_prod(nonzero, r.reduced(), true);
  const Tensor zeros = reduce_sum(select(is_zero, one, zero), r.reduced(), true);
  const Tensor d = select(is_zero, select(eq(zeros, one), p, zero), select(eq(zeros, zero), div(p, nonzero), zero));
  return {mul(r.expand(g), d)};
}

// reduce_max / reduce_min: the whole cotangent goes to the first winner of
// each block in logical order (first reduced axis fastest), which is the
// element the kernel returned; in a block with a NaN, to the first NaN.
template <bool Max>
Grads extremum_vjp(const VjpContext& c, const Tensor& g) {
  const Reduction r(c);
  const Tensor m = Max ? reduce_max(r.x, r.reduced(), true) : reduce_min(r.x, r.reduced(), true);
  const Tensor one = scalar_like(r.x, 1.0f), zero = scalar_like(r.x, 0.0f);
  const Tensor winner = eq(select(ne(m, m), select(ne(r.x, r.x), one, zero), select(eq(r.x, m), one, zero)), one);
  // The ordinal of each element inside its block (exact below 2^24).
  const Tensor ordinal = float_tensor(r.x, r.extents, [&](std::span<const std::int64_t> coord) {
    std::int64_t k = 0, stride = 1;
    for (std::int64_t a : r.axes) {
      k += coord[static_cast<std::size_t>(a)] * stride;
      stride *= r.extents[static_cast<std::size_t>(a)];
    }
    return static_cast<float>(k);
  });
  const Tensor never = scalar_like(r.x, std::numeric_limits<float>::infinity());
  const Tensor first = reduce_min(select(winner, ordinal, never), r.reduced(), true);
  return {select(eq(ordinal, first), r.expand(g), zero)};
}

// cumsum: the reversed cumulative sum of the cotangent along the axis.
Grads cumsum_vjp(const VjpContext& c, const Tensor& g) {
  const std::int64_t axis = attr_int(c, "axis");
  return {flip(cumsum(flip(g, axis), axis), axis)};
}

// _sort_values / _topk_values: the cotangent goes back to the positions the
// elements came from (the indices of the same stable sort, recomputed).
Grads sort_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& x = c.tensor(0);
  const std::int64_t axis = attr_int(c, "axis");
  const Tensor indices = sort(x, axis, attr_bool(c, "descending")).indices;
  return {scatter(zeros_like(x), indices, g, axis)};
}
Grads topk_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& x = c.tensor(0);
  const std::int64_t axis = attr_int(c, "axis");
  const Tensor indices = topk(x, attr_int(c, "k"), axis, attr_bool(c, "largest")).indices;
  return {scatter(zeros_like(x), indices, g, axis)};
}

}  // namespace

void add_reduction_vjps(VjpTable& t) {
  using Op = policy::OperationId;
  vjp_slot(t, Op::reduce_sum) = sum_vjp;
  vjp_slot(t, Op::reduce_prod) = prod_vjp;
  vjp_slot(t, Op::reduce_max) = extremum_vjp<true>;
  vjp_slot(t, Op::reduce_min) = extremum_vjp<false>;
  vjp_slot(t, Op::cumsum) = cumsum_vjp;
  vjp_slot(t, Op::_sort_values) = sort_vjp;
  vjp_slot(t, Op::_topk_values) = topk_vjp;
}

}  // namespace strideweave::autograd
