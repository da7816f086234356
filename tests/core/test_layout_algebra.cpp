// Tests for the layout algebra on Layout (include/strideweave/layout.h,
// docs/layout.md "Layout algebra"; issue 22 step 0, the tile geometry that
// carrier-composition.md B2's footprints are written in). Suites are named
// LayoutAlgebra_<operation>: CuTe's documented examples (NVIDIA CUTLASS,
// media/docs/cute/02_layout_algebra.md) as exact strings, then CuTe's
// defining identities checked element by element over every small layout
// of a generated family, then the refusals.
#include <strideweave/errors.h>
#include <strideweave/layout.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace sw = strideweave;
using sw::IntTuple;
using sw::Layout;
using sw::Shape;
using sw::Stride;
using sw::ValueError;

namespace {

Layout L(Shape shape, Stride stride) { return Layout(std::move(shape), std::move(stride)); }

// Every flat layout of rank 1..3 with extents in {1, 2, 3, 4} and strides in
// `strides` (a few thousand; small enough to check each element).
std::vector<Layout> small_layouts(const std::vector<std::int64_t>& strides) {
  std::vector<Layout> out;
  const std::int64_t extents[] = {1, 2, 3, 4};
  for (std::int64_t e0 : extents)
    for (std::int64_t s0 : strides) {
      out.push_back(L(Shape::of({e0}), Stride::of({s0})));
      for (std::int64_t e1 : extents)
        for (std::int64_t s1 : strides) {
          out.push_back(L(Shape::of({e0, e1}), Stride::of({s0, s1})));
          if (e0 > 1 && e1 > 1)
            for (std::int64_t e2 : {2, 3})
              for (std::int64_t s2 : {1, 4, 12}) out.push_back(L(Shape::of({e0, e1, e2}), Stride::of({s0, s1, s2})));
        }
    }
  return out;
}

std::vector<std::int64_t> leaves_of(std::span<const IntTuple> modes) {
  return IntTuple::tuple({modes.begin(), modes.end()}).leaves();
}

bool injective(const Layout& l) {
  std::set<std::int64_t> seen;
  for (std::int64_t i = 0; i < l.size(); ++i)
    if (!seen.insert(l(i)).second) return false;
  return true;
}

// (a, b) as one layout: a's modes then b's.
Layout concat(const Layout& a, const Layout& b) {
  std::vector<IntTuple> e(a.shape().modes().begin(), a.shape().modes().end());
  std::vector<IntTuple> s(a.stride().modes().begin(), a.stride().modes().end());
  e.insert(e.end(), b.shape().modes().begin(), b.shape().modes().end());
  s.insert(s.end(), b.stride().modes().begin(), b.stride().modes().end());
  return Layout(Shape(std::move(e)), Stride(std::move(s)));
}

}  // namespace

// ---- CuTe's documented examples

TEST(LayoutAlgebra_Compose, CuteDocumentedExamples) {
  EXPECT_EQ(L(Shape{20}, Stride{2}).compose(L(Shape{5, 4}, Stride{4, 1})).to_string(), "(5,4):(8,2)");
  EXPECT_EQ(L(Shape{10, 2}, Stride{16, 4}).compose(L(Shape{5, 4}, Stride{1, 5})).to_string(),
            "(5,(2,2)):(16,(80,4))");
  EXPECT_EQ(L(Shape{6, 2}, Stride{8, 2}).compose(L(Shape{4, 3}, Stride{3, 1})).to_string(),
            "((2,2),3):((24,2),8)");
}

TEST(LayoutAlgebra_Compose, ByModeTilerCuteExample) {
  const Layout a = L(Shape{12, IntTuple{4, 8}}, Stride{59, IntTuple{13, 1}});
  const Layout tiler[] = {L(Shape{3}, Stride{4}), L(Shape{8}, Stride{2})};
  EXPECT_EQ(a.compose(tiler).to_string(), "(3,(2,4)):(236,(26,1))");
  // A shorter tiler keeps the modes past it.
  EXPECT_EQ(a.compose(std::span<const Layout>(tiler, 1)).to_string(), "(3,(4,8)):(236,(13,1))");
}

TEST(LayoutAlgebra_Complement, CuteDocumentedExamples) {
  EXPECT_EQ(L(Shape{4}, Stride{1}).complement(24).to_string(), "(6):(4)");
  EXPECT_EQ(L(Shape{6}, Stride{4}).complement(24).to_string(), "(4):(1)");
  EXPECT_EQ(L(Shape{4, 6}, Stride{1, 4}).complement(24).to_string(), "(1):(0)");
  EXPECT_EQ(L(Shape{4}, Stride{2}).complement(24).to_string(), "(2,3):(1,8)");
  EXPECT_EQ(L(Shape{2, 2}, Stride{1, 6}).complement(24).to_string(), "(3,2):(2,12)");
  // Without a cotarget: the holes below the layout's own cosize.
  EXPECT_EQ(L(Shape{4}, Stride{2}).complement().to_string(), "(2):(1)");
}

TEST(LayoutAlgebra_LogicalDivide, CuteDocumentedExamples) {
  EXPECT_EQ(L(Shape{4, 2, 3}, Stride{2, 1, 8}).logical_divide(L(Shape{4}, Stride{2})).to_string(),
            "((2,2),(2,3)):((4,1),(2,8))");
  const Layout a = L(Shape{9, IntTuple{4, 8}}, Stride{59, IntTuple{13, 1}});
  const Layout tiler[] = {L(Shape{3}, Stride{3}), L(Shape{2, 4}, Stride{1, 8})};
  EXPECT_EQ(a.zipped_divide(tiler).to_string(), "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
  EXPECT_EQ(a.tiled_divide(tiler).to_string(), "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
  EXPECT_EQ(a.logical_divide(tiler).to_string(), "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
}

TEST(LayoutAlgebra_LogicalProduct, CuteDocumentedExample) {
  EXPECT_EQ(L(Shape{2, 2}, Stride{4, 1}).logical_product(L(Shape{6}, Stride{1})).to_string(),
            "((2,2),(2,3)):((4,1),(2,8))");
}

// A tiled tensor's geometry (carrier-composition B2): an 8x6 compact
// logical tensor in 4x3 tiles; zipped_divide's mode 0 walks one tile, mode 1
// the tiles first-mode-fastest, and tile t's footprint is the image of
// mode 0 shifted by mode 1's index of t.
TEST(LayoutAlgebra_ZippedDivide, TileFootprintsOfACompactTensor) {
  const Layout logical = Layout::compact(Shape::of({8, 6}));
  const Layout tiles[] = {L(Shape{4}, Stride{1}), L(Shape{3}, Stride{1})};
  const Layout z = logical.zipped_divide(tiles);
  EXPECT_EQ(z.to_string(), "((4,3),(2,2)):((1,8),(4,24))");
  std::set<std::int64_t> covered;
  for (std::int64_t t = 0; t < z.shape().extent(1); ++t) {
    const std::int64_t row = t % 2, col = t / 2;  // tile coordinate, first mode fastest
    for (std::int64_t k = 0; k < z.shape().extent(0); ++k) {
      const std::int64_t index = z(std::vector<std::int64_t>{k, t});
      EXPECT_EQ(index % 8 / 4, row);
      EXPECT_EQ(index / 8 / 3, col);
      covered.insert(index);
    }
  }
  EXPECT_EQ(covered.size(), 48u);
}

// ---- CuTe's defining identities, element by element

TEST(LayoutAlgebra_Compose, EveryResultIsTheFunctionComposition) {
  const std::vector<Layout> as = small_layouts({0, 1, 2, 3, 4, 6});
  const std::vector<Layout> bs = small_layouts({0, 1, 2, 3});
  std::size_t composed = 0, refused = 0;
  for (std::size_t i = 0; i < as.size(); i += 7)
    for (std::size_t j = 0; j < bs.size(); j += 5) {
      const Layout& a = as[i];
      const Layout& b = bs[j];
      if (b.cosize() > a.size()) {
        EXPECT_THROW((void)a.compose(b), ValueError);
        continue;
      }
      Layout r;
      try {
        r = a.compose(b);
      } catch (const ValueError&) {
        ++refused;  // a divisibility condition
        continue;
      }
      ++composed;
      ASSERT_EQ(r.size(), b.size()) << a.to_string() << " o " << b.to_string();
      ASSERT_EQ(r.rank(), b.rank());
      for (std::size_t m = 0; m < b.rank(); ++m) EXPECT_EQ(r.shape().extent(m), b.shape().extent(m));
      for (std::int64_t k = 0; k < b.size(); ++k)
        ASSERT_EQ(r(k), a(b(k))) << a.to_string() << " o " << b.to_string() << " = " << r.to_string() << " at " << k;
    }
  EXPECT_GT(composed, 1000u);
  EXPECT_GT(refused, 0u);
}

// A layout that coalesces to one mode is linear on its domain, so no
// divisibility condition or carry applies: every b inside the domain
// composes (this also guards the refusals above against being spurious).
TEST(LayoutAlgebra_Compose, OneModeLayoutsComposeWithEverythingInTheirDomain) {
  std::size_t composed = 0;
  for (const Layout& a : {L(Shape{24}, Stride{3}), Layout::compact(Shape::of({4, 6})), L(Shape{2, 12}, Stride{5, 10})})
    for (const Layout& b : small_layouts({0, 1, 2, 3})) {
      if (b.cosize() > a.size()) continue;
      const Layout r = a.compose(b);  // never refused
      ++composed;
      for (std::int64_t k = 0; k < b.size(); ++k) ASSERT_EQ(r(k), a(b(k))) << a.to_string() << " o " << b.to_string();
    }
  EXPECT_GT(composed, 1000u);
}

TEST(LayoutAlgebra_Complement, ConcatenationIsInjectiveAndCoversTheCotarget) {
  std::size_t complemented = 0;
  for (const Layout& a : small_layouts({0, 1, 2, 4, 6, 12})) {
    for (std::int64_t cotarget : {a.cosize(), std::int64_t{24}, std::int64_t{48}}) {
      Layout r;
      try {
        r = a.complement(cotarget);
      } catch (const ValueError&) {
        // Only a layout whose non-broadcast part is not injective, or whose
        // leaves interleave, has no complement.
        continue;
      }
      ++complemented;
      const std::vector<std::int64_t> strides = leaves_of(r.stride().modes());
      EXPECT_TRUE(std::is_sorted(strides.begin(), strides.end())) << r.to_string();
      // (a without its stride-0 modes, r) is injective and reaches the cotarget.
      std::vector<std::int64_t> e, s;
      const std::vector<std::int64_t> ae = leaves_of(a.shape().modes()), as = leaves_of(a.stride().modes());
      for (std::size_t k = 0; k < ae.size(); ++k)
        if (as[k] != 0) {
          e.push_back(ae[k]);
          s.push_back(as[k]);
        }
      const Layout stripped = e.empty() ? Layout() : L(Shape::of(e), Stride::of(s));
      const Layout both = concat(stripped, r);
      EXPECT_TRUE(injective(both)) << a.to_string() << " with " << r.to_string();
      EXPECT_GE(both.cosize(), cotarget) << a.to_string() << " with " << r.to_string();
    }
  }
  EXPECT_GT(complemented, 500u);
}

TEST(LayoutAlgebra_LogicalDivide, IsTheCompositionWithTileAndRest) {
  const Layout compact = Layout::compact(Shape::of({4, 6}));
  const Layout column_major = L(Shape{4, 6}, Stride{6, 1});
  for (const Layout& a : {compact, column_major, L(Shape{24}, Stride{3})}) {
    for (const Layout& tile : {L(Shape{2}, Stride{1}), L(Shape{4}, Stride{2}), L(Shape{3}, Stride{8}),
                               L(Shape{2, 3}, Stride{1, 8}), L(Shape{6}, Stride{4})}) {
      const Layout d = a.logical_divide(tile);
      ASSERT_EQ(d.rank(), 2u);
      EXPECT_EQ(d.size(), a.size()) << a.to_string() << " / " << tile.to_string();
      EXPECT_EQ(d.shape().extent(0), tile.size());
      // Mode 0 walks the tile: d(k, 0) == a(tile(k)).
      for (std::int64_t k = 0; k < tile.size(); ++k) EXPECT_EQ(d(std::vector<std::int64_t>{k, 0}), a(tile(k)));
      // Every element of a's domain once: the division is a's map reordered.
      std::multiset<std::int64_t> want, got;
      for (std::int64_t k = 0; k < a.size(); ++k) {
        want.insert(a(k));
        got.insert(d(k));
      }
      EXPECT_EQ(got, want) << a.to_string() << " / " << tile.to_string() << " = " << d.to_string();
    }
  }
}

TEST(LayoutAlgebra_LogicalProduct, FirstModeIsTheLayoutAndTheWholeIsInjective) {
  std::size_t built = 0;
  for (const Layout& a : small_layouts({1, 2, 4})) {
    if (!injective(a)) continue;
    for (const Layout& b : {L(Shape{3}, Stride{1}), L(Shape{2, 2}, Stride{2, 1}), L(Shape{2}, Stride{2})}) {
      Layout p;
      try {
        p = a.logical_product(b);
      } catch (const ValueError&) {
        continue;
      }
      ++built;
      ASSERT_EQ(p.rank(), 2u);
      EXPECT_EQ(p.size(), a.size() * b.size());
      for (std::int64_t k = 0; k < a.size(); ++k) EXPECT_EQ(p(std::vector<std::int64_t>{k, 0}), a(k));
      EXPECT_TRUE(injective(p)) << a.to_string() << " x " << b.to_string() << " = " << p.to_string();
    }
  }
  EXPECT_GT(built, 100u);
}

// ---- refusals

TEST(LayoutAlgebra_Refusals, TypedErrorsNameTheCondition) {
  const Layout a = L(Shape{4, 3}, Stride{1, 5});
  // Outside the domain (CuTe would extend the last mode).
  EXPECT_THROW((void)a.compose(L(Shape{13}, Stride{1})), ValueError);
  // Shape divisibility: 6 elements are not whole copies of the 4-mode.
  try {
    (void)a.compose(L(Shape{6}, Stride{1}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("shape divisibility"), std::string::npos) << e.what();
  }
  // Stride divisibility: a step of 3 inside a mode of extent 4.
  try {
    (void)a.compose(L(Shape{2}, Stride{3}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("stride divisibility"), std::string::npos) << e.what();
  }
  // Leaves whose terms carry across a boundary between the layout's modes
  // (4:1 and 3:1 reach 3 + 2 = 5 >= 4; key 4 = 3 + 1 lies in the second
  // mode, its terms in the first): CuTe's by-mode distribution would give a
  // layout that is not the composition.
  try {
    (void)L(Shape{4, 3}, Stride{0, 1}).compose(L(Shape{4, 3}, Stride{1, 1}));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("carry"), std::string::npos) << e.what();
  }
  // No complement of a non-injective layout.
  EXPECT_THROW((void)L(Shape{2, 2}, Stride{1, 1}).complement(8), ValueError);
  EXPECT_THROW((void)a.complement(0), ValueError);
  // Zero extents.
  EXPECT_THROW((void)L(Shape{0, 3}, Stride{1, 1}).compose(L(Shape{1}, Stride{0})), ValueError);
  EXPECT_THROW((void)a.compose(L(Shape{0}, Stride{1})), ValueError);
  // A tile that does not divide the domain, or that repeats indices; a
  // tiler longer than the rank.
  EXPECT_THROW((void)L(Shape{6}, Stride{1}).logical_divide(L(Shape{4}, Stride{1})), ValueError);
  EXPECT_THROW((void)L(Shape{2, 2}, Stride{1, 2}).logical_divide(L(Shape{2}, Stride{0})), ValueError);
  EXPECT_THROW((void)L(Shape{4}, Stride{1}).logical_divide(L(Shape{2, 2}, Stride{0, 1})), ValueError);
  // A cotarget near the int64 limit is exact, not an overflow.
  EXPECT_EQ(L(Shape{4}, Stride{1}).complement(std::numeric_limits<std::int64_t>::max()).shape().extent(0),
            std::numeric_limits<std::int64_t>::max() / 4 + 1);
  const Layout three[] = {L(Shape{2}, Stride{1}), L(Shape{3}, Stride{1}), L(Shape{1}, Stride{0})};
  EXPECT_THROW((void)a.logical_divide(three), ValueError);
  EXPECT_THROW((void)a.zipped_divide(std::span<const Layout>()), ValueError);
}
