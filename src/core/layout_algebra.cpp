// CuTe's layout algebra on strideweave's Layout: compose, complement and the
// divisions and product built from them (docs/layout.md, "Layout algebra").
//
// Written here rather than taken from CuTe: CuTe is a header-only CUDA C++
// library of compile-time (static) layouts whose run-time integer path is
// tied to its own tuple types; strideweave's layouts are run-time values
// with their own checked arithmetic and error contract. The algorithms follow
// CuTe's documented definitions (NVIDIA CUTLASS, media/docs/cute/
// 02_layout_algebra.md) with one deliberate difference: every result stays
// inside its operand's domain. CuTe lets a composition run past the last
// mode of its left operand ("extension"); here that is a ValueError, so
// compose(b)(i) == (*this)(b(i)) holds for every result.
#include <strideweave/errors.h>
#include <strideweave/layout.h>

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

namespace strideweave {
namespace {

// One leaf of a flat layout.
struct Mode {
  std::int64_t extent;
  std::int64_t stride;
};

// A layout's leaves in depth-first order (the modes of Layout::flatten).
std::vector<Mode> leaf_modes(const Layout& l) {
  const Layout flat = l.flatten();
  const std::span<const std::int64_t> extents = flat.shape().extents();
  const std::vector<std::int64_t> strides = *flat.flat_strides();
  std::vector<Mode> out(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) out[i] = Mode{extents[i], strides[i]};
  return out;
}

void require_positive(const Layout& l, const char* what, const char* operand) {
  if (l.size() == 0)
    throw ValueError(fmt::format("{}: {} {} has a zero extent; the layout algebra needs positive extents", what,
                                 operand, l.to_string()));
}

// The layout's leaves after coalesce (same function, fewest modes; a size-1
// layout is the one mode (1):(0)).
std::vector<Mode> coalesced_modes(const Layout& l) { return leaf_modes(l.coalesce()); }

// Modes as one mode of a Shape and of a Stride: none -> the leaf 1:0, one
// -> that mode itself, more -> a tuple of them.
void group(std::vector<IntTuple> shape, std::vector<IntTuple> stride, IntTuple* out_shape, IntTuple* out_stride) {
  if (shape.empty()) {
    *out_shape = IntTuple(1);
    *out_stride = IntTuple(0);
  } else if (shape.size() == 1) {
    *out_shape = std::move(shape[0]);
    *out_stride = std::move(stride[0]);
  } else {
    *out_shape = IntTuple::tuple(std::move(shape));
    *out_stride = IntTuple::tuple(std::move(stride));
  }
}

// The leaves (extent > 1) of a flat list as one mode.
void as_mode(const std::vector<Mode>& modes, IntTuple* shape, IntTuple* stride) {
  std::vector<IntTuple> e, s;
  for (const Mode& m : modes)
    if (m.extent != 1) {
      e.emplace_back(m.extent);
      s.emplace_back(m.stride);
    }
  group(std::move(e), std::move(s), shape, stride);
}

// A whole layout as one mode: the leaf 1:0 (rank 0), its one mode, or the
// tuple of its modes.
void whole_as_mode(const Layout& l, IntTuple* shape, IntTuple* stride) {
  group({l.shape().modes().begin(), l.shape().modes().end()}, {l.stride().modes().begin(), l.stride().modes().end()},
        shape, stride);
}

Layout mode_layout(const Layout& l, std::size_t i) {
  return Layout(Shape{l.shape().mode(i)}, Stride{l.stride().mode(i)});
}

// A (coalesced, so every mode but possibly a lone (1):(0) has extent > 1)
// composed with the leaf s:d. The caller checked that the leaf's image lies
// in A's domain, so A's last mode is never walked past its extent: it is
// treated as unbounded below and its true extent never matters.
std::vector<Mode> compose_leaf(const std::vector<Mode>& a, std::int64_t s, std::int64_t d) {
  if (s == 1) return {};
  if (d == 0) return {Mode{s, 0}};
  constexpr const char* kWhat = "Layout.compose";
  // Divide A by d: the modes skipped by a step of d drop out, the mode the
  // step lands inside is shortened and its stride multiplied.
  std::vector<Mode> rest;
  std::int64_t rd = d;
  std::size_t k = 0;
  for (; k + 1 < a.size() && rd > 1; ++k) {
    const Mode m = a[k];
    if (rd >= m.extent) {
      if (rd % m.extent != 0)
        throw ValueError(fmt::format("{}: the stride divisibility condition fails: a step of {} does not skip whole "
                                     "copies of a mode of extent {}",
                                     kWhat, d, m.extent));
      rd /= m.extent;
    } else {
      if (m.extent % rd != 0)
        throw ValueError(fmt::format("{}: the stride divisibility condition fails: a step of {} does not divide a "
                                     "mode of extent {}",
                                     kWhat, d, m.extent));
      rest.push_back(Mode{m.extent / rd, checked_mul(m.stride, rd, kWhat)});
      rd = 1;
    }
  }
  for (; k < a.size(); ++k) {
    const bool last = k + 1 == a.size();
    rest.push_back(last && rd > 1 ? Mode{0, checked_mul(a[k].stride, rd, kWhat)} : a[k]);
  }
  // Keep the first s coordinates of what remains.
  std::vector<Mode> out;
  std::int64_t rs = s;
  for (std::size_t j = 0; j < rest.size() && rs > 1; ++j) {
    const Mode m = rest[j];
    if (j + 1 == rest.size() || rs <= m.extent) {
      out.push_back(Mode{rs, m.stride});
      rs = 1;
    } else {
      if (rs % m.extent != 0)
        throw ValueError(fmt::format("{}: the shape divisibility condition fails: {} elements do not cover whole "
                                     "copies of a mode of extent {}",
                                     kWhat, s, m.extent));
      out.push_back(m);
      rs /= m.extent;
    }
  }
  return out;
}

// The composition is built leaf by leaf: R(i) is the sum of A applied to
// each of B's leaf terms, which equals A(B(i)) only when the terms add
// without carrying across a boundary between A's (coalesced) modes. At the
// boundary P (the product of the extents below it), the terms never carry
// when the largest remainders modulo P of all of B's leaves sum to less than
// P. A leaf d*j (j < s) that passed compose_leaf's divisibility conditions
// has d a multiple or a divisor of P, so its largest remainder is 0 or
// d * (min(s, P/d) - 1).
void require_carry_free(const Layout& self, const std::vector<Mode>& a, const Layout& b) {
  const std::vector<Mode> leaves = leaf_modes(b);
  // No product or sum below can overflow: the boundaries are below size(A),
  // and each remainder term is at most d_i * (e_i - 1), so their sum is at
  // most b.cosize() - 1 < size(A) (the caller checked b.cosize() <= size(A)).
  std::int64_t boundary = 1;
  for (std::size_t k = 0; k + 1 < a.size(); ++k) {
    boundary *= a[k].extent;
    std::int64_t remainders = 0;
    for (const auto [e, d] : leaves) {
      if (e == 1 || d == 0 || d % boundary == 0) continue;
      // boundary % d == 0 here (compose_leaf's conditions); d < boundary.
      remainders += d * (std::min(e, boundary / d) - 1);
    }
    if (remainders >= boundary)
      throw ValueError(fmt::format("Layout.compose: the leaves of {} add across the boundary {} between modes of {} "
                                   "(their terms carry there), so the composition is not a layout",
                                   b.to_string(), boundary, self.to_string()));
  }
}

// A composed with one mode of B (a leaf or a nested tuple), keeping its
// nesting.
void compose_mode(const std::vector<Mode>& a, const IntTuple& shape, const IntTuple& stride, IntTuple* out_shape,
                  IntTuple* out_stride) {
  if (shape.is_leaf()) {
    as_mode(compose_leaf(a, shape.value(), stride.value()), out_shape, out_stride);
    return;
  }
  std::vector<IntTuple> e(shape.rank(), IntTuple(1)), s(shape.rank(), IntTuple(0));
  for (std::size_t i = 0; i < shape.rank(); ++i) compose_mode(a, shape[i], stride[i], &e[i], &s[i]);
  *out_shape = IntTuple::tuple(std::move(e));
  *out_stride = IntTuple::tuple(std::move(s));
}

// Layout with the given top-level modes.
Layout from_modes(std::vector<IntTuple> shape, std::vector<IntTuple> stride) {
  return Layout(Shape(std::move(shape)), Stride(std::move(stride)));
}

// Each mode i < tiler.size() divided by tiler[i] (rank-2 layouts), the
// rest kept.
std::vector<Layout> divided_modes(const Layout& a, std::span<const Layout> tiler, const char* what) {
  require_positive(a, what, "the layout");
  if (tiler.size() > a.rank())
    throw ValueError(fmt::format("{}: a tiler of {} layouts for a layout of rank {}", what, tiler.size(), a.rank()));
  std::vector<Layout> out;
  for (std::size_t i = 0; i < tiler.size(); ++i) out.push_back(mode_layout(a, i).logical_divide(tiler[i]));
  return out;
}

}  // namespace

Layout Layout::compose(const Layout& b) const {
  require_positive(*this, "Layout.compose", "the layout");
  require_positive(b, "Layout.compose", "the right operand");
  if (b.cosize() > size())
    throw ValueError(fmt::format("Layout.compose: {} reaches index {}, outside the domain [0, {}) of {}",
                                 b.to_string(), b.cosize() - 1, size(), to_string()));
  const std::vector<Mode> a = coalesced_modes(*this);
  std::vector<IntTuple> shape(b.rank(), IntTuple(1)), stride(b.rank(), IntTuple(0));
  for (std::size_t i = 0; i < b.rank(); ++i) compose_mode(a, b.shape().mode(i), b.stride().mode(i), &shape[i], &stride[i]);
  require_carry_free(*this, a, b);
  return from_modes(std::move(shape), std::move(stride));
}

Layout Layout::compose(std::span<const Layout> tiler) const {
  require_positive(*this, "Layout.compose", "the layout");
  if (tiler.size() > rank())
    throw ValueError(fmt::format("Layout.compose: a tiler of {} layouts for a layout of rank {}", tiler.size(), rank()));
  std::vector<IntTuple> shape(shape_.modes().begin(), shape_.modes().end());
  std::vector<IntTuple> stride(stride_.modes().begin(), stride_.modes().end());
  for (std::size_t i = 0; i < tiler.size(); ++i)
    whole_as_mode(mode_layout(*this, i).compose(tiler[i]), &shape[i], &stride[i]);
  return from_modes(std::move(shape), std::move(stride));
}

Layout Layout::complement(std::optional<std::int64_t> cotarget) const {
  require_positive(*this, "Layout.complement", "the layout");
  const std::int64_t target = cotarget.value_or(cosize());
  if (target < 1) throw ValueError(fmt::format("Layout.complement: the cotarget {} is not positive", target));
  std::vector<Mode> leaves = leaf_modes(*this);
  std::erase_if(leaves, [](const Mode& m) { return m.extent == 1 || m.stride == 0; });
  std::sort(leaves.begin(), leaves.end(),
            [](const Mode& x, const Mode& y) { return x.stride != y.stride ? x.stride < y.stride : x.extent < y.extent; });
  std::vector<std::int64_t> extents, strides;
  std::int64_t reach = 1;  // the indices the leaves so far cover: [0, reach) in steps
  for (const Mode& m : leaves) {
    if (m.stride % reach != 0)
      throw ValueError(fmt::format("Layout.complement: {} has no complement: its leaf {}:{} starts inside the reach "
                                   "{} of the leaves with smaller strides (the layout is not injective, or its leaves "
                                   "do not nest)",
                                   to_string(), m.extent, m.stride, reach));
    extents.push_back(m.stride / reach);
    strides.push_back(reach);
    reach = checked_mul(m.extent, m.stride, "Layout.complement");
  }
  extents.push_back(target / reach + (target % reach != 0));  // ceil, without overflow near INT64_MAX
  strides.push_back(reach);
  return Layout(Shape::of(extents), Stride::of(strides)).coalesce();
}

Layout Layout::logical_divide(const Layout& b) const {
  require_positive(*this, "Layout.logical_divide", "the layout");
  require_positive(b, "Layout.logical_divide", "the tile");
  // A division reorders the domain, so the tile visits distinct indices: a
  // broadcast (stride-0) leaf would repeat them (complement ignores such
  // leaves, and its own checks refuse every other overlap).
  for (const Mode& m : leaf_modes(b))
    if (m.extent > 1 && m.stride == 0)
      throw ValueError(fmt::format("Layout.logical_divide: the tile {} repeats indices (a stride-0 leaf of extent "
                                   "{}); a tile visits each index once",
                                   b.to_string(), m.extent));
  const Layout rest = b.complement(size());
  std::vector<IntTuple> shape(2, IntTuple(1)), stride(2, IntTuple(0));
  whole_as_mode(b, &shape[0], &stride[0]);
  whole_as_mode(rest, &shape[1], &stride[1]);
  const Layout tiler = from_modes(std::move(shape), std::move(stride));
  if (tiler.cosize() > size() || tiler.size() != size())
    throw ValueError(fmt::format("Layout.logical_divide: the tile {} does not tile the domain [0, {}) of {} exactly "
                                 "(tile and rest reach {})",
                                 b.to_string(), size(), to_string(), tiler.cosize()));
  return compose(tiler);
}

Layout Layout::logical_divide(std::span<const Layout> tiler) const {
  const std::vector<Layout> divided = divided_modes(*this, tiler, "Layout.logical_divide");
  std::vector<IntTuple> shape(shape_.modes().begin(), shape_.modes().end());
  std::vector<IntTuple> stride(stride_.modes().begin(), stride_.modes().end());
  for (std::size_t i = 0; i < divided.size(); ++i) whole_as_mode(divided[i], &shape[i], &stride[i]);
  return from_modes(std::move(shape), std::move(stride));
}

Layout Layout::zipped_divide(std::span<const Layout> tiler) const {
  const std::vector<Layout> divided = divided_modes(*this, tiler, "Layout.zipped_divide");
  if (divided.empty()) throw ValueError("Layout.zipped_divide: an empty tiler");
  std::vector<IntTuple> tile_e, tile_s, rest_e, rest_s;
  for (const Layout& d : divided) {
    tile_e.push_back(d.shape().mode(0));
    tile_s.push_back(d.stride().mode(0));
    rest_e.push_back(d.shape().mode(1));
    rest_s.push_back(d.stride().mode(1));
  }
  for (std::size_t i = divided.size(); i < rank(); ++i) {
    rest_e.push_back(shape_.mode(i));
    rest_s.push_back(stride_.mode(i));
  }
  std::vector<IntTuple> shape(2, IntTuple(1)), stride(2, IntTuple(0));
  group(std::move(tile_e), std::move(tile_s), &shape[0], &stride[0]);
  group(std::move(rest_e), std::move(rest_s), &shape[1], &stride[1]);
  return from_modes(std::move(shape), std::move(stride));
}

Layout Layout::tiled_divide(std::span<const Layout> tiler) const {
  const std::vector<Layout> divided = divided_modes(*this, tiler, "Layout.tiled_divide");
  if (divided.empty()) throw ValueError("Layout.tiled_divide: an empty tiler");
  std::vector<IntTuple> tile_e, tile_s;
  std::vector<IntTuple> shape(1, IntTuple(1)), stride(1, IntTuple(0));
  for (const Layout& d : divided) {
    tile_e.push_back(d.shape().mode(0));
    tile_s.push_back(d.stride().mode(0));
    shape.push_back(d.shape().mode(1));
    stride.push_back(d.stride().mode(1));
  }
  for (std::size_t i = divided.size(); i < rank(); ++i) {
    shape.push_back(shape_.mode(i));
    stride.push_back(stride_.mode(i));
  }
  group(std::move(tile_e), std::move(tile_s), &shape[0], &stride[0]);
  return from_modes(std::move(shape), std::move(stride));
}

Layout Layout::logical_product(const Layout& b) const {
  require_positive(*this, "Layout.logical_product", "the layout");
  require_positive(b, "Layout.logical_product", "the right operand");
  const Layout repeat =
      complement(checked_mul(size(), b.cosize(), "Layout.logical_product")).compose(b);
  std::vector<IntTuple> shape(2, IntTuple(1)), stride(2, IntTuple(0));
  whole_as_mode(*this, &shape[0], &stride[0]);
  whole_as_mode(repeat, &shape[1], &stride[1]);
  return from_modes(std::move(shape), std::move(stride));
}

}  // namespace strideweave
