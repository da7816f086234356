// VJPs of the structured family (ops/structured.h): matmul, conv_general,
// gather, scatter, scatter_add. Derivations: docs/autograd.md.
#include <algorithm>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave::autograd {
namespace {

// The last two axes swapped (a view).
Tensor transposed(const Tensor& t) {
  std::vector<std::int64_t> perm(t.rank());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
  std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
  return t.permute(perm);
}

// The front end hands matmul (..., m, k) x (..., k, n) with equal batch axes.
Grads matmul_vjp(const VjpContext& c, const Tensor& g) {
  Grads out(2);
  if (c.needs_grad[0]) out[0] = matmul(g, transposed(c.tensor(1)));
  if (c.needs_grad[1]) out[1] = matmul(transposed(c.tensor(0)), g);
  return out;
}

// ---- conv_general
//
// out[n, co, o] = sum_{ci', k} xpad[n, G(co) Cig + ci', o s + k d] w[co, ci', k]
// (per spatial axis: s stride, d dilation, xpad the input with lo/hi zeros).

struct Conv {
  std::vector<std::int64_t> stride, dilation, lo, hi;
  std::int64_t groups;
  std::size_t d;  // spatial rank
  explicit Conv(const VjpContext& c)
      : stride(attr_ints(c, "stride")),
        dilation(attr_ints(c, "dilation")),
        lo(attr_ints(c, "padding_lo")),
        hi(attr_ints(c, "padding_hi")),
        groups(attr_int(c, "groups")),
        d(stride.size()) {}
};

std::vector<std::int64_t> extents_of(const Tensor& t) { return {t.shape().extents().begin(), t.shape().extents().end()}; }

// (1, 0, 2, 3, ...): swaps the two leading axes.
Tensor swap_leading(const Tensor& t) {
  std::vector<std::int64_t> perm(t.rank());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
  std::swap(perm[0], perm[1]);
  return t.permute(perm);
}

// grad_w[co, ci', k] = sum_{n, o} g[n, co, o] xpad[n, G(co) Cig + ci', k d + o s]:
// a convolution of the input (channels as batch) with the cotangent (batch as
// channels), stride d and dilation s, for every (ci, co) pair; the pairs of
// each group are then picked with a gather.
Tensor conv_weight_grad(const Conv& p, const Tensor& x, const Tensor& w, const Tensor& g) {
  ConvOptions o;
  o.stride = p.dilation;
  o.dilation = p.stride;
  std::vector<std::int64_t> padding;
  for (std::size_t i = 0; i < p.d; ++i) padding.insert(padding.end(), {p.lo[i], p.hi[i]});
  o.padding = padding;
  Tensor all = conv_general(swap_leading(x), swap_leading(g), o);  // (Cin, Cout, P...), P >= K
  for (std::size_t i = 0; i < p.d; ++i) all = all.slice(static_cast<std::int64_t>(i + 2), 0, w.shape().extent(i + 2));
  all = swap_leading(all);  // (Cout, Cin, K...)
  if (p.groups == 1) return all;
  const std::int64_t cig = w.shape().extent(1), cog = w.shape().extent(0) / p.groups;
  const std::vector<std::int64_t> we = extents_of(w);
  const Tensor pick = int_tensor(w, we, [&](std::span<const std::int64_t> c) {
    return static_cast<std::int32_t>((c[0] / cog) * cig + c[1]);
  });
  return gather(all, pick, 1);
}

// grad_x: the transposed convolution. The cotangent dilated by s (s - 1
// zeros between elements), padded by d (K - 1) on both sides, correlated
// with the kernel flipped on every spatial axis and transposed per group
// (W'[g Cig + ci', co', k'] = w[g Cog + co', ci', K - 1 - k']), with
// dilation d and the same groups; then the input's window [lo, lo + S).
Tensor conv_input_grad(const Conv& p, const Tensor& x, const Tensor& w, const Tensor& g) {
  Tensor gd = g;
  for (std::size_t i = 0; i < p.d; ++i) {
    if (p.stride[i] == 1) continue;
    const auto axis = static_cast<std::int64_t>(i + 2);
    std::vector<std::int64_t> e = extents_of(gd);
    const std::int64_t s = p.stride[i];
    const Tensor at = int_tensor(gd, e, [&](std::span<const std::int64_t> c) {
      return static_cast<std::int32_t>(c[i + 2] * s);
    });
    e[i + 2] = (e[i + 2] - 1) * s + 1;
    gd = scatter(zeros(gd, e), at, gd, axis);
  }
  // W' (Cin, Cout/G, K...), flipped. Reshapes split and merge modes first
  // mode fastest (docs/layout.md): co = co' + Cog g is the split (Cog, G),
  // and c = c' + Cig g the merge of (Cig, G).
  const std::vector<std::int64_t> we = extents_of(w);
  const std::int64_t cout = we[0], cig = we[1], cog = cout / p.groups;
  std::vector<std::int64_t> split{cog, p.groups, cig};
  split.insert(split.end(), we.begin() + 2, we.end());
  std::vector<std::int64_t> perm{2, 1, 0};  // (Cig, G, Cog, K...)
  for (std::size_t i = 0; i < p.d; ++i) perm.push_back(static_cast<std::int64_t>(i + 3));
  std::vector<std::int64_t> merged{cig * p.groups, cog};
  merged.insert(merged.end(), we.begin() + 2, we.end());
  Tensor wt = reshape_to(reshape_to(w, Shape::of(split)).permute(perm), Shape::of(merged));
  for (std::size_t i = 0; i < p.d; ++i) wt = flip(wt, static_cast<std::int64_t>(i + 2));

  ConvOptions o;
  o.dilation = p.dilation;
  o.groups = p.groups;
  std::vector<std::int64_t> padding;
  for (std::size_t i = 0; i < p.d; ++i) {
    const std::int64_t reach = p.dilation[i] * (we[i + 2] - 1);
    const std::int64_t covered = gd.shape().extent(i + 2) + reach;  // output extent without extra padding
    const std::int64_t needed = p.lo[i] + x.shape().extent(i + 2);
    padding.insert(padding.end(), {reach, reach + std::max<std::int64_t>(0, needed - covered)});
  }
  o.padding = padding;
  Tensor full = conv_general(gd, wt, o);  // (N, Cin, >= lo + S ...)
  for (std::size_t i = 0; i < p.d; ++i)
    full = full.slice(static_cast<std::int64_t>(i + 2), p.lo[i], p.lo[i] + x.shape().extent(i + 2));
  return full;
}

Grads conv_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& x = c.tensor(0);
  const Tensor& w = c.tensor(1);
  Grads out(2);
  if (g.size() == 0 || x.size() == 0 || w.size() == 0) {  // nothing to convolve: zero gradients
    if (c.needs_grad[0]) out[0] = zeros_like(x);
    if (c.needs_grad[1]) out[1] = zeros_like(w);
    return out;
  }
  const Conv p(c);
  if (c.needs_grad[0]) out[0] = conv_input_grad(p, x, w, g);
  if (c.needs_grad[1]) out[1] = conv_weight_grad(p, x, w, g);
  return out;
}

// ---- gather / scatter / scatter_add (indices: operand 1, Int32)

// `part` (the indices' extents) placed at the origin of zeros with `like`'s
// extents (a scatter with identity indices along axis 0).
Tensor embed(const Tensor& part, const Tensor& like) {
  if (std::ranges::equal(part.shape().extents(), like.shape().extents())) return part;
  const Tensor at = int_tensor(part, extents_of(part),
                               [](std::span<const std::int64_t> c) { return static_cast<std::int32_t>(c[0]); });
  return scatter(zeros_like(like), at, part, 0);
}

// gather: every read position receives its cotangent (summed over repeats).
Grads gather_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& data = c.tensor(0);
  return {scatter_add(zeros_like(data), c.tensor(1), g, attr_int(c, "axis")), std::nullopt};
}

// scatter: written positions of data get no gradient; src[p] gets the
// cotangent of its target only if it was the last write there (ascending
// logical order, as the kernel writes).
Grads scatter_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& data = c.tensor(0);
  const Tensor& indices = c.tensor(1);
  const Tensor& src = c.tensor(2);
  const std::int64_t axis = attr_int(c, "axis");
  Grads out(3);
  if (c.needs_grad[0]) out[0] = scatter(g, indices, zeros_like(src), axis);
  if (c.needs_grad[2]) {
    const std::vector<std::int64_t> ie = extents_of(indices);
    std::int64_t k = 0;
    const Tensor ordinal = float_tensor(indices, ie, [&](auto) { return static_cast<float>(k++); });
    const Tensor last = scatter(float_tensor(data, extents_of(data), [](auto) { return -1.0f; }), indices, ordinal, axis);
    const Tensor won = eq(gather(last, indices, axis), ordinal);
    out[2] = embed(select(won, gather(g, indices, axis), scalar_like(g, 0.0f)), src);
  }
  return out;
}

Grads scatter_add_vjp(const VjpContext& c, const Tensor& g) {
  Grads out(3);
  if (c.needs_grad[0]) out[0] = g;
  if (c.needs_grad[2]) out[2] = embed(gather(g, c.tensor(1), attr_int(c, "axis")), c.tensor(2));
  return out;
}

}  // namespace

void add_structured_vjps(VjpTable& t) {
  using Op = policy::OperationId;
  vjp_slot(t, Op::matmul) = matmul_vjp;
  vjp_slot(t, Op::conv_general) = conv_vjp;
  vjp_slot(t, Op::gather) = gather_vjp;
  vjp_slot(t, Op::scatter) = scatter_vjp;
  vjp_slot(t, Op::scatter_add) = scatter_add_vjp;
}

}  // namespace strideweave::autograd
