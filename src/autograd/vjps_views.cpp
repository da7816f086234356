// VJPs of the views (tensor.h): the front end broadcasts and aligns operands
// with these, so gradients flow back through them to the inputs' shapes.
// Operand 0 is the source (detached); ctx.output is the view.
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave::autograd {
namespace {

Grads reshape_vjp(const VjpContext& c, const Tensor& g) { return {reshape_to(g, c.tensor(0).shape())}; }

Grads permute_vjp(const VjpContext& c, const Tensor& g) {
  const std::vector<std::int64_t>& perm = attr_ints(c, "perm");
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const std::int64_t p = perm[i] < 0 ? perm[i] + static_cast<std::int64_t>(perm.size()) : perm[i];
    inverse[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(i);
  }
  return {g.permute(inverse)};
}

// Sum over the leading new axes and over the source's widened extent-1
// axes, then view with the source's shape.
Grads broadcast_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& source = c.tensor(0);
  const std::size_t lead = g.rank() - source.rank();
  std::vector<std::int64_t> axes;
  for (std::size_t i = 0; i < g.rank(); ++i)
    if (i < lead || (source.shape().extent(i - lead) == 1 && g.shape().extent(i) != 1))
      axes.push_back(static_cast<std::int64_t>(i));
  if (axes.empty()) return {reshape_to(g, source.shape())};
  return {reshape_to(reduce_sum(g, axes, /*keepdims=*/true), source.shape())};
}

// The cotangent scattered into zeros at the sliced positions start + k step.
Grads slice_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& source = c.tensor(0);
  const std::int64_t axis = attr_int(c, "axis"), start = attr_int(c, "start"), step = attr_int(c, "step");
  if (g.size() == 0) return {zeros_like(source)};
  const auto extents = g.shape().extents();
  const Tensor at = int_tensor(g, extents, [&](std::span<const std::int64_t> coord) {
    return static_cast<std::int32_t>(start + coord[static_cast<std::size_t>(axis)] * step);
  });
  return {scatter(zeros_like(source), at, g, axis)};
}

// as_strided: the view's elements are matched with the source's elements by
// carrier slot (recorded as the attribute "ordinals": per view element, the
// source's logical ordinal); the cotangent is scatter-added there.
Grads as_strided_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& source = c.tensor(0);
  const std::vector<std::int64_t>& ordinals = attr_ints(c, "ordinals");
  const std::int64_t n = static_cast<std::int64_t>(ordinals.size());
  const std::int64_t one_axis[] = {n};
  const Tensor at = int_tensor(g, one_axis, [&](std::span<const std::int64_t> coord) {
    return static_cast<std::int32_t>(ordinals[static_cast<std::size_t>(coord[0])]);
  });
  const Tensor flat_g = reshape_to(g, Shape::of({n}));
  const std::int64_t source_extent[] = {source.size()};
  const Tensor summed = scatter_add(zeros(source, source_extent), at, flat_g, 0);
  return {reshape_to(summed, source.shape())};
}

}  // namespace

void add_view_vjps(VjpTable& t) {
  t["reshape"] = reshape_vjp;
  t["squeeze"] = reshape_vjp;
  t["unsqueeze"] = reshape_vjp;
  t["permute"] = permute_vjp;
  t["broadcast_to"] = broadcast_vjp;
  t["slice"] = slice_vjp;
  t["as_strided"] = as_strided_vjp;
}

}  // namespace strideweave::autograd
