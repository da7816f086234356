// Tests for include/strideweave/layout.h. Test suites are named after the
// requirement they check: CoreConcepts_3_<n>_* for core-concepts.md section 3
// (Shape and Layout), CoreConcepts_4_4_View* for the pure views listed in
// section 4.4, CppMapping_Numbers_* for the overflow rule of cpp-mapping.md
// ("Numbers"). See docs/layout.md.
#include <strideweave/errors.h>
#include <strideweave/layout.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::IntTuple;
using sw::Layout;
using sw::Shape;
using sw::Stride;
using sw::ValueError;

namespace {

std::vector<std::int64_t> all_indices(const Layout& l) {
  std::vector<std::int64_t> out;
  for (std::int64_t k = 0; k < l.size(); ++k) out.push_back(l(k));
  return out;
}

std::int64_t at(const Layout& l, std::vector<std::int64_t> coordinate) { return l(coordinate); }

std::string error_message(auto&& fn) {
  try {
    fn();
  } catch (const sw::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------
// 3.1 Shape and Stride

TEST(CoreConcepts_3_1_Shape, NestedModesHaveProductExtentsAndPrintAsTuples) {
  const Shape s{2, IntTuple{3, 4}};
  EXPECT_EQ(s.rank(), 2u);
  EXPECT_EQ(s.extent(0), 2);
  EXPECT_EQ(s.extent(1), 12);
  EXPECT_EQ(s.size(), 24);
  EXPECT_FALSE(s.is_flat());
  EXPECT_TRUE(s.mode(0).is_leaf());
  EXPECT_EQ(s.mode(1).leaves(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(s.to_string(), "(2,(3,4))");
  EXPECT_EQ(s.as_tuple().to_string(), "(2,(3,4))");
  EXPECT_EQ(Shape::of({2, 3}).to_string(), "(2,3)");
  EXPECT_TRUE(Shape::of({2, 3}).is_flat());
}

TEST(CoreConcepts_3_1_Shape, DeeplyNestedModes) {
  const Shape s{IntTuple{2, IntTuple{3, 5}}, 7};
  EXPECT_EQ(s.extent(0), 30);
  EXPECT_EQ(s.size(), 210);
  EXPECT_EQ(s.to_string(), "((2,(3,5)),7)");
  EXPECT_EQ(s.as_tuple().leaves(), (std::vector<std::int64_t>{2, 3, 5, 7}));
}

TEST(CoreConcepts_3_1_Shape, RankZeroShapeHasSizeOne) {
  const Shape s;
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.size(), 1);
  EXPECT_TRUE(s.is_flat());
  EXPECT_EQ(s.to_string(), "()");
  EXPECT_EQ(Shape::of(std::vector<std::int64_t>{}), s);
}

TEST(CoreConcepts_3_1_Shape, RejectsNegativeExtentWithValueError) {
  EXPECT_THROW_EXACTLY(Shape({2, -1}), ValueError);
  EXPECT_THROW_EXACTLY((Shape{2, IntTuple{3, -4}}), ValueError);
  EXPECT_THROW_EXACTLY(Shape::of({-1}), ValueError);
  EXPECT_NE(error_message([] { Shape::of({-1}); }).find("Shape"), std::string::npos);
}

TEST(CoreConcepts_3_1_Shape, ZeroExtentIsAllowedAsDocumentedExtension) {
  const Shape s = Shape::of({3, 0, 2});
  EXPECT_EQ(s.size(), 0);
  EXPECT_EQ(s.extent(1), 0);
  EXPECT_EQ((Shape{2, IntTuple{0, 5}}).extent(1), 0);
}

TEST(CoreConcepts_3_1_Shape, OfMatchesBracedConstruction) {
  EXPECT_EQ(Shape::of({2, 3, 4}), (Shape{2, 3, 4}));
  const std::vector<std::int64_t> v{5, 6};
  EXPECT_EQ(Shape::of(v), (Shape{5, 6}));
  EXPECT_EQ(Shape(std::vector<IntTuple>{2, IntTuple{3, 4}}), (Shape{2, IntTuple{3, 4}}));
}

// layout.h: a Shape or Stride is an immutable value whose copies share its
// modes (copying allocates nothing); a copy, a moved-to value and an equal
// independently built value all compare and hash alike, and out-of-range
// mode access stays std::out_of_range.
TEST(CoreConcepts_3_1_Shape, CopiesShareModesAndKeepValueSemantics) {
  const Shape s{2, IntTuple{3, 4}};
  const Shape copy = s;
  EXPECT_EQ(copy.modes().data(), s.modes().data());
  EXPECT_EQ(copy.extents().data(), s.extents().data());
  Shape moved_from = s;
  const Shape moved = std::move(moved_from);
  const Shape rebuilt{2, IntTuple{3, 4}};
  for (const Shape* x : {&copy, &moved, &rebuilt}) {
    EXPECT_EQ(*x, s);
    EXPECT_EQ(x->hash(), s.hash());
    EXPECT_EQ(x->size(), 24);
    EXPECT_EQ(x->extent(1), 12);
    EXPECT_EQ(x->to_string(), "(2,(3,4))");
  }
  EXPECT_NE(rebuilt.modes().data(), s.modes().data());
  EXPECT_NE(s, (Shape{2, 12}));
  EXPECT_THROW(s.mode(2), std::out_of_range);
  EXPECT_THROW(s.extent(2), std::out_of_range);
  const Stride st = Stride::of({1, 2});
  const Stride st_copy = st;
  EXPECT_EQ(st_copy.modes().data(), st.modes().data());
  EXPECT_EQ(st_copy, (Stride{1, 2}));
  EXPECT_THROW(st.mode(2), std::out_of_range);
  Shape assigned = Shape::of({7});
  assigned = s;
  EXPECT_EQ(assigned, s);
  EXPECT_EQ(Shape().size(), 1);
  EXPECT_EQ(Shape(), Shape(std::vector<IntTuple>{}));
}

TEST(CoreConcepts_3_1_Stride, RejectsNegativeStrideWithValueError) {
  EXPECT_THROW_EXACTLY(Stride::of({1, -2}), ValueError);
  EXPECT_THROW_EXACTLY((Stride{1, IntTuple{2, -3}}), ValueError);
  EXPECT_NE(error_message([] { Stride::of({-2}); }).find("Stride"), std::string::npos);
  EXPECT_NO_THROW(Stride::of({0, 0}));
  EXPECT_EQ((Stride{1, IntTuple{2, 6}}).to_string(), "(1,(2,6))");
}

TEST(CoreConcepts_3_1_IntTuple, LeavesCongruenceAndProduct) {
  const IntTuple leaf(3);
  EXPECT_TRUE(leaf.is_leaf());
  EXPECT_EQ(leaf.value(), 3);
  EXPECT_EQ(leaf.rank(), 0u);
  EXPECT_EQ(leaf.to_string(), "3");
  // Braces always build a tuple, even with one element.
  const IntTuple one{3};
  EXPECT_FALSE(one.is_leaf());
  EXPECT_EQ(one.rank(), 1u);
  EXPECT_EQ(one.to_string(), "(3)");
  EXPECT_NE(leaf, one);

  const IntTuple t{2, IntTuple{3, 4}};
  EXPECT_EQ(t.leaves(), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(t.product(), 24);
  EXPECT_TRUE(t.congruent(IntTuple{9, IntTuple{9, 9}}));
  EXPECT_FALSE(t.congruent(IntTuple{9, 9}));
  EXPECT_FALSE(t.congruent(IntTuple{9, IntTuple{9, 9, 9}}));
  EXPECT_FALSE(leaf.congruent(one));
  EXPECT_TRUE(leaf.congruent(IntTuple(7)));
  EXPECT_EQ(IntTuple::tuple({}).to_string(), "()");
  EXPECT_EQ(IntTuple::tuple({}).product(), 1);
}

// ---------------------------------------------------------------------------
// cpp-mapping.md "Numbers": every product of extents is overflow-checked.

TEST(CppMapping_Numbers_ExtentProducts, ShapeSizeOverflowIsValueError) {
  constexpr std::int64_t big = std::int64_t{1} << 32;
  EXPECT_THROW_EXACTLY(Shape::of({big, big}), ValueError);
  EXPECT_THROW_EXACTLY((Shape{IntTuple{big, big}}), ValueError);  // inside one mode
  EXPECT_THROW_EXACTLY((Shape{IntTuple{big, 2}, IntTuple{big, 2}}), ValueError);  // across modes
  EXPECT_EQ(Shape::of({std::int64_t{1} << 31, std::int64_t{1} << 31}).size(), std::int64_t{1} << 62);
}

TEST(CppMapping_Numbers_ExtentProducts, ZeroExtentDoesNotHideOverflow) {
  constexpr std::int64_t big = std::int64_t{1} << 40;
  EXPECT_THROW_EXACTLY(Shape::of({big, big, 0}), ValueError);
  EXPECT_THROW_EXACTLY(Shape::of({0, big, big}), ValueError);
  EXPECT_EQ(Shape::of({big, 0}).size(), 0);
}

TEST(CppMapping_Numbers_ExtentProducts, IntTupleProductOverflowIsValueError) {
  constexpr std::int64_t big = std::int64_t{1} << 33;
  EXPECT_THROW_EXACTLY((IntTuple{big, big}).product("test"), ValueError);
  EXPECT_NE(error_message([] { (IntTuple{big, big}).product("my_entity"); }).find("my_entity"), std::string::npos);
}

TEST(CppMapping_Numbers_ExtentProducts, CosizeOverflowIsValueError) {
  constexpr std::int64_t half = std::int64_t{1} << 62;
  EXPECT_THROW_EXACTLY(Layout(Shape::of({3}), Stride::of({half})), ValueError);
  EXPECT_THROW_EXACTLY(Layout(Shape::of({2, 2}), Stride::of({half, half})), ValueError);
  EXPECT_EQ(Layout(Shape::of({2}), Stride::of({half})).cosize(), half + 1);
}

TEST(CppMapping_Numbers_CheckedArithmetic, CheckedMulAndAddThrowValueError) {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(sw::checked_mul(6, 7, "t"), 42);
  EXPECT_EQ(sw::checked_add(6, 7, "t"), 13);
  EXPECT_THROW_EXACTLY(sw::checked_mul(max / 2 + 1, 2, "t"), ValueError);
  EXPECT_THROW_EXACTLY(sw::checked_add(max, 1, "t"), ValueError);
  EXPECT_NE(error_message([] { sw::checked_add(max, 1, "adder"); }).find("adder"), std::string::npos);
}

// ---------------------------------------------------------------------------
// 3.2 Layout: congruence, index map, integer keys

TEST(CoreConcepts_3_2_Layout, RequiresIdenticalNestingElseValueError) {
  EXPECT_THROW_EXACTLY(Layout((Shape{2, IntTuple{3, 4}}), Stride::of({1, 2})), ValueError);
  EXPECT_THROW_EXACTLY(Layout(Shape::of({2, 3}), (Stride{1, IntTuple{2, 6}})), ValueError);
  EXPECT_THROW_EXACTLY(Layout(Shape::of({2, 3}), Stride::of({1})), ValueError);
  EXPECT_THROW_EXACTLY(Layout((Shape{IntTuple{2, 3}}), (Stride{IntTuple{1, 2, 6}})), ValueError);
  EXPECT_NO_THROW(Layout((Shape{2, IntTuple{3, 4}}), (Stride{1, IntTuple{2, 6}})));
}

TEST(CoreConcepts_3_2_Layout, IndexIsSumOfLeafCoordinateTimesStride) {
  const Layout l((Shape{2, IntTuple{3, 4}}), (Stride{100, IntTuple{1, 10}}));
  // Mode 1 key 7 -> leaf coordinates (7 % 3, 7 / 3) = (1, 2) -> 1*1 + 2*10.
  EXPECT_EQ(at(l, {1, 7}), 100 + 21);
  EXPECT_EQ(at(l, {0, 0}), 0);
  EXPECT_EQ(at(l, {1, 11}), 100 + 2 + 30);
  EXPECT_EQ(l.mode_index(1, 7), 21);
  EXPECT_EQ(l.mode_index(0, 1), 100);
}

TEST(CoreConcepts_3_2_Layout, IntegerKeyExpandsFirstModeFastest) {
  const Layout l(Shape::of({2, 3}), Stride::of({10, 1}));
  EXPECT_EQ(all_indices(l), (std::vector<std::int64_t>{0, 10, 1, 11, 2, 12}));
}

TEST(CoreConcepts_3_2_Layout, IntegerKeyRecursesIntoNestedModesFirstLeafFastest) {
  const Layout l((Shape{2, IntTuple{3, 2}}), (Stride{100, IntTuple{1, 10}}));
  // key = c0 + 2*(c10 + 3*c11)
  EXPECT_EQ(l(5), 100 + 2);   // c0=1, c10=2, c11=0
  EXPECT_EQ(l(7), 100 + 10);  // c0=1, c10=0, c11=1
  EXPECT_EQ(l(10), 0 + 2 + 10);
  EXPECT_EQ(all_indices(l),
            (std::vector<std::int64_t>{0, 100, 1, 101, 2, 102, 10, 110, 11, 111, 12, 112}));
}

TEST(CoreConcepts_3_2_Layout, OutOfDomainIsValueError) {
  const Layout l((Shape{2, IntTuple{3, 4}}), (Stride{1, IntTuple{2, 6}}));
  EXPECT_THROW_EXACTLY(l(-1), ValueError);
  EXPECT_THROW_EXACTLY(l(24), ValueError);
  EXPECT_THROW_EXACTLY(at(l, {0}), ValueError);
  EXPECT_THROW_EXACTLY(at(l, {0, 0, 0}), ValueError);
  EXPECT_THROW_EXACTLY(at(l, {2, 0}), ValueError);
  EXPECT_THROW_EXACTLY(at(l, {0, 12}), ValueError);
  EXPECT_THROW_EXACTLY(at(l, {0, -1}), ValueError);
  EXPECT_THROW_EXACTLY(l.mode_index(2, 0), ValueError);
  EXPECT_THROW_EXACTLY(l.mode_index(1, 12), ValueError);
  const Layout empty(Shape::of({0}), Stride::of({1}));
  EXPECT_THROW_EXACTLY(empty(0), ValueError);
}

TEST(CoreConcepts_3_2_Layout, RankZeroLayoutMapsItsOneElementToZero) {
  const Layout l;
  EXPECT_EQ(l.rank(), 0u);
  EXPECT_EQ(l.size(), 1);
  EXPECT_EQ(l.cosize(), 1);
  EXPECT_EQ(l(0), 0);
  EXPECT_EQ(at(l, {}), 0);
  EXPECT_TRUE(l.is_compact());
  EXPECT_EQ(l.to_string(), "():()");
}

TEST(CoreConcepts_3_2_Layout, CompactKeepsProfileAndMapsKeyToItself) {
  const Shape s{2, IntTuple{3, 4}};
  const Layout c = Layout::compact(s);
  EXPECT_EQ(c.stride(), (Stride{1, IntTuple{2, 6}}));
  EXPECT_EQ(c.to_string(), "(2,(3,4)):(1,(2,6))");
  for (std::int64_t k = 0; k < c.size(); ++k) EXPECT_EQ(c(k), k);
  EXPECT_TRUE(c.is_compact());
  EXPECT_TRUE(c.is_injective());
  EXPECT_EQ(c.cosize(), c.size());
}

TEST(CoreConcepts_3_2_Layout, RowMajorMakesLastLeafFastest) {
  EXPECT_EQ(Layout::row_major(Shape::of({2, 3, 4})).stride(), Stride::of({12, 4, 1}));
  EXPECT_EQ(Layout::row_major(Shape{2, IntTuple{3, 4}}).stride(), (Stride{12, IntTuple{4, 1}}));
  EXPECT_FALSE(Layout::row_major(Shape::of({2, 3})).is_compact());
  EXPECT_TRUE(Layout::row_major(Shape::of({5})).is_compact());
}

TEST(CoreConcepts_3_2_Layout, CompactSkipsZeroExtentsInStrides) {
  const Layout c = Layout::compact(Shape::of({0, 3}));
  EXPECT_EQ(c.stride(), Stride::of({1, 1}));
  EXPECT_TRUE(c.is_compact());
  EXPECT_EQ(Layout::row_major(Shape::of({3, 0})).stride(), Stride::of({1, 1}));
}

TEST(CoreConcepts_3_2_Layout, IsCompactOnlyForCanonicalStrides) {
  EXPECT_TRUE(Layout(Shape::of({2, 3}), Stride::of({1, 2})).is_compact());
  EXPECT_FALSE(Layout(Shape::of({2, 3}), Stride::of({3, 1})).is_compact());
  EXPECT_FALSE(Layout(Shape::of({2, 3}), Stride::of({1, 4})).is_compact());
  // Compact keeps the profile: ((2,3)):((1,2)) is compact for its own shape,
  // though it differs (by profile) from the compact layout of (6).
  const Layout nested((Shape{IntTuple{2, 3}}), (Stride{IntTuple{1, 2}}));
  EXPECT_TRUE(nested.is_compact());
  EXPECT_NE(nested, Layout::compact(Shape::of({6})));
  EXPECT_FALSE(Layout((Shape{IntTuple{2, 3}}), (Stride{IntTuple{3, 1}})).is_compact());
}

TEST(CoreConcepts_3_2_Layout, FlatStridesOnlyForFlatLayouts) {
  const auto flat = Layout(Shape::of({2, 3}), Stride::of({3, 1})).flat_strides();
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(*flat, (std::vector<std::int64_t>{3, 1}));
  EXPECT_FALSE(Layout::compact(Shape{2, IntTuple{3, 4}}).flat_strides().has_value());
  EXPECT_TRUE(Layout().flat_strides().has_value());
  EXPECT_TRUE(Layout().flat_strides()->empty());
}

TEST(CoreConcepts_3_2_Layout, ModeStrideOfLeafAndOfCoalescingNestedMode) {
  const Layout l((Shape{2, IntTuple{3, 4}, IntTuple{3, 4}}), (Stride{7, IntTuple{1, 3}, IntTuple{2, 100}}));
  EXPECT_EQ(l.mode_stride(0), 7);
  EXPECT_EQ(l.mode_stride(1), 1);               // (3,4):(1,3) coalesces to 12:1
  EXPECT_EQ(l.mode_stride(2), std::nullopt);    // (3,4):(2,100) does not
  EXPECT_THROW_EXACTLY(l.mode_stride(3), ValueError);
  // Extent-1 leaves are ignored.
  EXPECT_EQ(Layout((Shape{IntTuple{3, 1, 4}}), (Stride{IntTuple{1, 77, 3}})).mode_stride(0), 1);
  EXPECT_EQ(Layout((Shape{IntTuple{1, 4}}), (Stride{IntTuple{9, 5}})).mode_stride(0), 5);
  EXPECT_EQ(Layout((Shape{IntTuple{1, 1}}), (Stride{IntTuple{5, 7}})).mode_stride(0), 0);
  // Stride-0 leaves coalesce into one stride-0 mode.
  EXPECT_EQ(Layout((Shape{IntTuple{2, 3}}), (Stride{IntTuple{0, 0}})).mode_stride(0), 0);
  // An empty nested mode reports its zero-extent leaf's stride.
  EXPECT_EQ(Layout((Shape{IntTuple{3, 0}}), (Stride{IntTuple{1, 5}})).mode_stride(0), 5);
}

// ---------------------------------------------------------------------------
// 3.3 size, cosize, injectivity

TEST(CoreConcepts_3_3_SizeCosize, GapsAndStrideZeroMakeThemDiffer) {
  const Layout gaps(Shape::of({2, 3}), Stride::of({1, 4}));
  EXPECT_EQ(gaps.size(), 6);
  EXPECT_EQ(gaps.cosize(), 10);  // 1 + 1*1 + 2*4
  const Layout zero(Shape::of({4}), Stride::of({0}));
  EXPECT_EQ(zero.size(), 4);
  EXPECT_EQ(zero.cosize(), 1);
  const Layout mixed(Shape::of({2, 3}), Stride::of({0, 2}));
  EXPECT_EQ(mixed.size(), 6);
  EXPECT_EQ(mixed.cosize(), 5);
  const Layout nested((Shape{2, IntTuple{3, 4}}), (Stride{1, IntTuple{2, 10}}));
  EXPECT_EQ(nested.cosize(), 1 + 1 + 4 + 30);
}

TEST(CoreConcepts_3_3_SizeCosize, CompactLayoutHasCosizeEqualToSize) {
  const Layout c = Layout::compact(Shape{IntTuple{2, 5}, 3});
  EXPECT_EQ(c.size(), 30);
  EXPECT_EQ(c.cosize(), 30);
}

TEST(CoreConcepts_3_3_SizeCosize, EmptyLayoutHasSizeAndCosizeZero) {
  const Layout e(Shape::of({3, 0}), Stride::of({1, 3}));
  EXPECT_EQ(e.size(), 0);
  EXPECT_EQ(e.cosize(), 0);
  EXPECT_TRUE(e.is_injective());
}

TEST(CoreConcepts_3_3_IsInjective, FalseForAnyIndexCollision) {
  EXPECT_FALSE(Layout(Shape::of({4}), Stride::of({0})).is_injective());
  EXPECT_FALSE(Layout(Shape::of({2, 2}), Stride::of({1, 1})).is_injective());
  EXPECT_FALSE(Layout(Shape::of({3, 2}), Stride::of({1, 2})).is_injective());  // 2 reached twice
  EXPECT_FALSE(Layout((Shape{IntTuple{2, 2}}), (Stride{IntTuple{3, 3}})).is_injective());
}

TEST(CoreConcepts_3_3_IsInjective, TrueForDistinctIndicesIncludingInterleavedAndExtentOneStrideZero) {
  EXPECT_TRUE(Layout(Shape::of({2, 3}), Stride::of({1, 4})).is_injective());
  EXPECT_TRUE(Layout(Shape::of({1, 3}), Stride::of({0, 1})).is_injective());
  EXPECT_TRUE(Layout::row_major(Shape::of({2, 3, 4})).is_injective());
  // (3,2):(2,3) reaches {0,2,4,3,5,7}: injective though the sorted strides do
  // not nest; the exact check finds it.
  EXPECT_TRUE(Layout(Shape::of({3, 2}), Stride::of({2, 3})).is_injective());
  EXPECT_TRUE(Layout(Shape::of({3, 2, 4}), Stride::of({2, 3, 6})).is_injective());
}

TEST(CoreConcepts_3_3_IsInjective, LargeLayoutsUseTheNestingConditionConservatively) {
  EXPECT_TRUE(Layout(Shape::of({2048, 1024}), Stride::of({1, 2048})).is_injective());
  EXPECT_TRUE(Layout(Shape::of({2048, 1024}), Stride::of({1024, 1})).is_injective());
  EXPECT_FALSE(Layout(Shape::of({2048, 1024}), Stride::of({1, 1})).is_injective());
  // Injective, but beyond the exact-check limit and not nesting: reported
  // false (documented in docs/layout.md).
  EXPECT_FALSE(Layout(Shape::of({3, 2, std::int64_t{1} << 19}), Stride::of({2, 3, 6})).is_injective());
}

// ---------------------------------------------------------------------------
// 3.4 broadcast_to

TEST(CoreConcepts_3_4_BroadcastTo, KeepsProfileAndWidensExtentOneWithStrideZero) {
  const Layout l((Shape{1, IntTuple{2, 3}}), (Stride{7, IntTuple{1, 2}}));
  const Layout b = l.broadcast_to(Shape{5, IntTuple{4, 2}, 6});
  EXPECT_EQ(b.shape(), (Shape{5, IntTuple{4, 2}, IntTuple{2, 3}}));
  EXPECT_EQ(b.stride(), (Stride{0, IntTuple{0, 0}, IntTuple{1, 2}}));
  EXPECT_EQ(b.to_string(), "(5,(4,2),(2,3)):(0,(0,0),(1,2))");
  EXPECT_EQ(b.size(), 5 * 8 * 6);
  EXPECT_EQ(b.cosize(), l.cosize());
  // Every broadcast coordinate reads the source's (reduced) coordinate.
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 8; ++j)
      for (std::int64_t k = 0; k < 6; ++k) EXPECT_EQ(at(b, {i, j, k}), at(l, {0, k}));
}

TEST(CoreConcepts_3_4_BroadcastTo, EqualExtentKeepsOwnProfileEvenIfTargetIsNested) {
  const Layout l(Shape::of({6}), Stride::of({3}));
  const Layout b = l.broadcast_to(Shape{IntTuple{2, 3}});
  EXPECT_EQ(b, l);
  EXPECT_EQ(Layout::compact(Shape::of({2, 3})).broadcast_to(Shape::of({2, 3})), Layout::compact(Shape::of({2, 3})));
}

TEST(CoreConcepts_3_4_BroadcastTo, ExtentOneBroadcastsToZero) {
  const Layout b = Layout(Shape::of({1, 3}), Stride::of({3, 1})).broadcast_to(Shape::of({0, 3}));
  EXPECT_EQ(b.shape(), Shape::of({0, 3}));
  EXPECT_EQ(b.stride(), Stride::of({0, 1}));
  EXPECT_EQ(b.size(), 0);
}

TEST(CoreConcepts_3_4_BroadcastTo, IncompatibleExtentOrLowerRankIsValueError) {
  const Layout l(Shape::of({2, 3}), Stride::of({1, 2}));
  EXPECT_THROW_EXACTLY(l.broadcast_to(Shape::of({4, 3})), ValueError);
  EXPECT_THROW_EXACTLY(l.broadcast_to(Shape::of({3, 2})), ValueError);
  EXPECT_THROW_EXACTLY(l.broadcast_to(Shape::of({3})), ValueError);
  EXPECT_THROW_EXACTLY(Layout(Shape::of({0}), Stride::of({1})).broadcast_to(Shape::of({2})), ValueError);
  EXPECT_NE(error_message([&] { l.broadcast_to(Shape::of({4, 3})); }).find("Layout.broadcast_to"),
            std::string::npos);
}

// ---------------------------------------------------------------------------
// 4.4 pure views: permute

TEST(CoreConcepts_4_4_ViewPermute, ReordersTopLevelModesKeepingProfiles) {
  const Layout l = Layout::compact(Shape{2, IntTuple{3, 4}, 5});
  const std::vector<std::int64_t> perm{2, 0, 1};
  const Layout p = l.permute(perm);
  EXPECT_EQ(p.to_string(), "(5,2,(3,4)):(24,1,(2,6))");
  EXPECT_EQ(at(p, {4, 1, 7}), at(l, {1, 7, 4}));
}

TEST(CoreConcepts_4_4_ViewPermute, NonPermutationIsValueError) {
  const Layout l = Layout::compact(Shape::of({2, 3}));
  for (const std::vector<std::int64_t>& bad :
       {std::vector<std::int64_t>{0, 0}, {0}, {0, 2}, {-1, 0}, {0, 1, 2}}) {
    EXPECT_THROW_EXACTLY(l.permute(bad), ValueError);
  }
}

// ---------------------------------------------------------------------------
// 4.4 pure views: slice

TEST(CoreConcepts_4_4_ViewSlice, LeafModeGetsCeilExtentStrideTimesStepAndOffset) {
  const Layout l(Shape::of({10}), Stride::of({3}));
  std::int64_t off = -1;
  const Layout s = l.slice(0, 2, 9, 3, &off);
  EXPECT_EQ(s.to_string(), "(3):(9)");
  EXPECT_EQ(off, 6);
  for (std::int64_t k = 0; k < s.size(); ++k) EXPECT_EQ(off + s(k), l(2 + 3 * k));
}

TEST(CoreConcepts_4_4_ViewSlice, PythonStyleClampingAndNegativeAxis) {
  const Layout l(Shape::of({10}), Stride::of({1}));
  std::int64_t off = -1;
  EXPECT_EQ(l.slice(0, -3, 100, 1, &off).shape(), Shape::of({3}));
  EXPECT_EQ(off, 7);
  EXPECT_EQ(l.slice(0, -100, -8, 1, &off).shape(), Shape::of({2}));
  EXPECT_EQ(off, 0);
  EXPECT_EQ(l.slice(-1, 0, 10, 4, &off).to_string(), "(3):(4)");

  const Layout m(Shape::of({4, 5}), Stride::of({1, 4}));
  const Layout s = m.slice(-1, 1, 5, 2, &off);
  EXPECT_EQ(s.to_string(), "(4,2):(1,8)");
  EXPECT_EQ(off, 4);
}

TEST(CoreConcepts_4_4_ViewSlice, EmptyResultHasZeroExtentAndZeroOffset) {
  const Layout l(Shape::of({10}), Stride::of({2}));
  std::int64_t off = -1;
  const Layout s = l.slice(0, 5, 2, 1, &off);
  EXPECT_EQ(s.shape(), Shape::of({0}));
  EXPECT_EQ(s.size(), 0);
  EXPECT_EQ(s.cosize(), 0);
  EXPECT_EQ(off, 0);
  EXPECT_EQ(l.slice(0, 10, 20, 1, &off).size(), 0);
  EXPECT_EQ(off, 0);
  off = -1;
  const Layout e = Layout((Shape{2, IntTuple{0, 3}}), (Stride{1, IntTuple{2, 2}})).slice(1, 0, 5, 2, &off);
  EXPECT_EQ(e.to_string(), "(2,0):(1,4)");
  EXPECT_EQ(off, 0);
}

TEST(CoreConcepts_4_4_ViewSlice, SliceOfALayoutEmptyInAnotherAxisHasZeroOffset) {
  // numpy's a[1] of a (2, 0) array: the slice keeps one index of axis 0,
  // but axis 1 is empty, so no slot is addressed and the offset is 0 (not
  // 1 * stride, which lies past the end of an empty carrier).
  const Layout l = Layout::compact(Shape::of({2, 0}));
  std::int64_t off = -1;
  const Layout s = l.slice(0, 1, 2, 1, &off);
  EXPECT_EQ(s.shape(), Shape::of({1, 0}));
  EXPECT_EQ(off, 0);
  off = -1;
  EXPECT_EQ(Layout::compact(Shape::of({3, 0, 2})).slice(2, 1, 2, 1, &off).shape(), Shape::of({3, 0, 1}));
  EXPECT_EQ(off, 0);
}

TEST(CoreConcepts_4_4_ViewSlice, CoalescingNestedModeBecomesLeaf) {
  const Layout l((Shape{2, IntTuple{3, 4}}), (Stride{12, IntTuple{1, 3}}));
  std::int64_t off = -1;
  const Layout s = l.slice(1, 2, 12, 5, &off);
  EXPECT_EQ(s.to_string(), "(2,2):(12,5)");
  EXPECT_EQ(off, 2);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 2; ++j) EXPECT_EQ(off + at(s, {i, j}), at(l, {i, 2 + 5 * j}));
}

TEST(CoreConcepts_4_4_ViewSlice, NonCoalescingNestedModeIsValueError) {
  const Layout l((Shape{2, IntTuple{3, 4}}), (Stride{1, IntTuple{2, 100}}));
  std::int64_t off = 0;
  EXPECT_THROW_EXACTLY(l.slice(1, 0, 6, 1, &off), ValueError);
  EXPECT_NO_THROW(l.slice(0, 0, 1, 1, &off));
}

TEST(CoreConcepts_4_4_ViewSlice, BadStepOrAxisIsValueError) {
  const Layout l(Shape::of({4, 5}), Stride::of({1, 4}));
  std::int64_t off = 0;
  EXPECT_THROW_EXACTLY(l.slice(0, 0, 4, 0, &off), ValueError);
  EXPECT_THROW_EXACTLY(l.slice(0, 4, 0, -1, &off), ValueError);
  EXPECT_THROW_EXACTLY(l.slice(2, 0, 1, 1, &off), ValueError);
  EXPECT_THROW_EXACTLY(l.slice(-3, 0, 1, 1, &off), ValueError);
  EXPECT_NE(error_message([&] { l.slice(0, 0, 4, 0, &off); }).find("Layout.slice"), std::string::npos);
}

// ---------------------------------------------------------------------------
// 4.4 pure views: reshape (view-only)

namespace {
void expect_same_map(const Layout& a, const Layout& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::int64_t k = 0; k < a.size(); ++k) EXPECT_EQ(a(k), b(k)) << "key " << k;
}
}  // namespace

TEST(CoreConcepts_4_4_ViewReshape, CompactReshapesToFlatCompact) {
  const Layout l = Layout::compact(Shape::of({2, 3, 4}));
  const Layout r = l.reshape(Shape::of({6, 4}));
  EXPECT_EQ(r.to_string(), "(6,4):(1,6)");
  EXPECT_TRUE(r.is_compact());
  EXPECT_EQ(l.reshape(Shape::of({24})).to_string(), "(24):(1)");
  expect_same_map(r, l);
}

TEST(CoreConcepts_4_4_ViewReshape, CompactToHierarchicalTargetIsCompactTarget) {
  const Shape target{IntTuple{2, 3}, 4};
  const Layout r = Layout::compact(Shape::of({24})).reshape(target);
  EXPECT_EQ(r, Layout::compact(target));
  EXPECT_EQ(r.to_string(), "((2,3),4):((1,2),6)");
}

TEST(CoreConcepts_4_4_ViewReshape, NonContiguousPiecesBecomeHierarchicalMode) {
  const Layout t(Shape::of({3, 2}), Stride::of({2, 1}));  // permuted compact (2,3)
  const Layout r = t.reshape(Shape::of({6}));
  EXPECT_EQ(r.to_string(), "((3,2)):((2,1))");
  EXPECT_EQ(r.shape().extent(0), 6);
  EXPECT_EQ(all_indices(r), (std::vector<std::int64_t>{0, 2, 4, 1, 3, 5}));
  expect_same_map(r, t);
}

TEST(CoreConcepts_4_4_ViewReshape, SplitsLeavesWhenExtentsDivide) {
  const Layout l = Layout::row_major(Shape::of({4, 6}));  // (4,6):(6,1)
  const Layout r = l.reshape(Shape::of({2, 2, 3, 2}));
  EXPECT_EQ(r.to_string(), "(2,2,3,2):(6,12,1,3)");
  expect_same_map(r, l);
  // A target mode made of a split piece and a further piece.
  const Layout r2 = l.reshape(Shape::of({8, 3}));
  EXPECT_EQ(r2.to_string(), "((4,2),3):((6,1),2)");
  expect_same_map(r2, l);
}

TEST(CoreConcepts_4_4_ViewReshape, HierarchicalSourceKeepsLogicalOrder) {
  const Layout l((Shape{IntTuple{2, 3}, 4}), (Stride{IntTuple{12, 1}, 3}));
  // Leaves (2:12),(3:1),(4:3): the last two coalesce to 12:1.
  const Layout r = l.reshape(Shape::of({2, 12}));
  EXPECT_EQ(r.to_string(), "(2,12):(12,1)");
  expect_same_map(r, l);
}

TEST(CoreConcepts_4_4_ViewReshape, ExtentOneTargetModesGetStrideZero) {
  const Layout r = Layout(Shape::of({6}), Stride::of({2})).reshape(Shape::of({1, 6, 1}));
  EXPECT_EQ(r.to_string(), "(1,6,1):(0,2,0)");
  // Extent-1 target leaves get stride 0, so this differs from compact((1,6)).
  EXPECT_EQ(Layout::compact(Shape::of({6})).reshape(Shape::of({1, 6})).to_string(), "(1,6):(0,1)");
  EXPECT_EQ(Layout(Shape::of({1, 1}), Stride::of({5, 9})).reshape(Shape{}).to_string(), "():()");
}

TEST(CoreConcepts_4_4_ViewReshape, StrideZeroSourceSplitsIntoStrideZeroPieces) {
  const Layout b = Layout(Shape::of({1}), Stride::of({0})).broadcast_to(Shape::of({4}));
  const Layout r = b.reshape(Shape::of({2, 2}));
  EXPECT_EQ(r.to_string(), "(2,2):(0,0)");
}

TEST(CoreConcepts_4_4_ViewReshape, NotExpressibleAsViewIsValueError) {
  EXPECT_THROW_EXACTLY(Layout(Shape::of({4, 3}), Stride::of({1, 10})).reshape(Shape::of({6, 2})), ValueError);
  EXPECT_THROW_EXACTLY(Layout(Shape::of({3, 2}), Stride::of({2, 1})).reshape(Shape::of({2, 3})), ValueError);
  EXPECT_NE(error_message([] { Layout(Shape::of({3, 2}), Stride::of({2, 1})).reshape(Shape::of({2, 3})); })
                .find("not expressible as a view"),
            std::string::npos);
}

TEST(CoreConcepts_4_4_ViewReshape, SizeMismatchIsValueError) {
  const Layout l = Layout::compact(Shape::of({2, 3}));
  EXPECT_THROW_EXACTLY(l.reshape(Shape::of({7})), ValueError);
  EXPECT_THROW_EXACTLY(l.reshape(Shape::of({0, 6})), ValueError);
}

TEST(CoreConcepts_4_4_ViewReshape, EmptyLayoutReshapesToCompactTarget) {
  const Layout e(Shape::of({0, 3}), Stride::of({7, 9}));
  EXPECT_EQ(e.reshape(Shape::of({3, 0})), Layout::compact(Shape::of({3, 0})));
}

// ---------------------------------------------------------------------------
// 4.4 pure views: squeeze / unsqueeze

TEST(CoreConcepts_4_4_ViewSqueeze, RemovesAllOrListedExtentOneModes) {
  const Layout l((Shape{1, 3, 1, IntTuple{2, 1}}), (Stride{0, 1, 5, IntTuple{3, 0}}));
  EXPECT_EQ(l.squeeze().to_string(), "(3,(2,1)):(1,(3,0))");
  EXPECT_EQ(l.squeeze(std::vector<std::int64_t>{-2}).to_string(), "(1,3,(2,1)):(0,1,(3,0))");
  EXPECT_EQ(l.squeeze(std::vector<std::int64_t>{0, 2}).to_string(), "(3,(2,1)):(1,(3,0))");
  EXPECT_EQ(l.squeeze(std::vector<std::int64_t>{}), l);
  // A nested mode of extent 1 is an extent-1 mode.
  EXPECT_EQ(Layout((Shape{IntTuple{1, 1}, 2}), (Stride{IntTuple{0, 0}, 1})).squeeze().to_string(), "(2):(1)");
}

TEST(CoreConcepts_4_4_ViewSqueeze, BadAxesAreValueError) {
  const Layout l(Shape::of({1, 3, 1}), Stride::of({0, 1, 0}));
  EXPECT_THROW_EXACTLY(l.squeeze(std::vector<std::int64_t>{1}), ValueError);       // extent 3
  EXPECT_THROW_EXACTLY(l.squeeze(std::vector<std::int64_t>{0, 0}), ValueError);    // duplicate
  EXPECT_THROW_EXACTLY(l.squeeze(std::vector<std::int64_t>{0, -3}), ValueError);   // duplicate after normalising
  EXPECT_THROW_EXACTLY(l.squeeze(std::vector<std::int64_t>{3}), ValueError);       // out of range
}

TEST(CoreConcepts_4_4_ViewUnsqueeze, InsertsExtentOneStrideZeroMode) {
  const Layout l(Shape::of({3, 4}), Stride::of({1, 3}));
  EXPECT_EQ(l.unsqueeze(0).to_string(), "(1,3,4):(0,1,3)");
  EXPECT_EQ(l.unsqueeze(1).to_string(), "(3,1,4):(1,0,3)");
  EXPECT_EQ(l.unsqueeze(2).to_string(), "(3,4,1):(1,3,0)");
  EXPECT_EQ(l.unsqueeze(-1), l.unsqueeze(2));
  EXPECT_EQ(l.unsqueeze(-3), l.unsqueeze(0));
  EXPECT_EQ(Layout().unsqueeze(0).to_string(), "(1):(0)");
  EXPECT_THROW_EXACTLY(l.unsqueeze(3), ValueError);
  EXPECT_THROW_EXACTLY(l.unsqueeze(-4), ValueError);
  expect_same_map(l.unsqueeze(1), l);
}

// ---------------------------------------------------------------------------
// flatten / coalesce (same map)

TEST(CoreConcepts_3_2_LayoutFlattenCoalesce, FlattenLiftsLeavesDepthFirst) {
  const Layout l = Layout::compact(Shape{2, IntTuple{3, IntTuple{4, 5}}});
  const Layout f = l.flatten();
  EXPECT_EQ(f.to_string(), "(2,3,4,5):(1,2,6,24)");
  expect_same_map(f, l);
  EXPECT_EQ(Layout().flatten(), Layout());
}

TEST(CoreConcepts_3_2_LayoutFlattenCoalesce, CoalesceMergesContiguousAndDropsExtentOne) {
  EXPECT_EQ(Layout::compact(Shape{2, IntTuple{3, 4}}).coalesce().to_string(), "(24):(1)");
  EXPECT_EQ(Layout(Shape::of({2, 1, 3}), Stride::of({1, 9, 2})).coalesce().to_string(), "(6):(1)");
  EXPECT_EQ(Layout(Shape::of({2, 3}), Stride::of({1, 4})).coalesce().to_string(), "(2,3):(1,4)");
  EXPECT_EQ(Layout(Shape::of({2, 3}), Stride::of({0, 0})).coalesce().to_string(), "(6):(0)");
  const Layout l((Shape{IntTuple{2, 3}, 5}), (Stride{IntTuple{10, 20}, 1}));
  expect_same_map(l.coalesce(), l);
  EXPECT_EQ(l.coalesce().to_string(), "(6,5):(10,1)");
}

TEST(CoreConcepts_3_2_LayoutFlattenCoalesce, CoalesceOfSizeOneAndEmptyLayouts) {
  EXPECT_EQ(Layout(Shape::of({1, 1}), Stride::of({3, 4})).coalesce().to_string(), "(1):(0)");
  EXPECT_EQ(Layout().coalesce().to_string(), "(1):(0)");
  EXPECT_EQ(Layout(Shape::of({0, 3}), Stride::of({1, 1})).coalesce().to_string(), "(0):(1)");
}

// ---------------------------------------------------------------------------
// Value semantics: equality, hashing, printing

TEST(CoreConcepts_3_ValueSemantics, EqualityComparesProfilesAndHashAgrees) {
  const Layout a((Shape{2, IntTuple{3, 4}}), (Stride{1, IntTuple{2, 6}}));
  const Layout b = Layout::compact(Shape{2, IntTuple{3, 4}});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(std::hash<Layout>{}(a), std::hash<Layout>{}(b));
  EXPECT_EQ(std::hash<Shape>{}(a.shape()), std::hash<Shape>{}(b.shape()));
  EXPECT_EQ(std::hash<IntTuple>{}(IntTuple{1, 2}), std::hash<IntTuple>{}(IntTuple{1, 2}));

  // Same map, different profile: not equal.
  EXPECT_NE(Shape::of({6}), Shape{IntTuple{6}});
  EXPECT_NE(Layout(Shape::of({6}), Stride::of({1})), Layout((Shape{IntTuple{6}}), (Stride{IntTuple{1}})));
  EXPECT_NE(Layout(Shape::of({2, 3}), Stride::of({1, 2})), Layout(Shape::of({2, 3}), Stride::of({3, 1})));
  EXPECT_NE(Shape::of({2, 3}), Shape::of({3, 2}));
  EXPECT_NE(Stride::of({1, 2}), Stride::of({2, 1}));

  std::unordered_set<Layout> set{a, b, Layout::row_major(Shape{2, IntTuple{3, 4}}), Layout()};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.count(Layout::compact(Shape{2, IntTuple{3, 4}})), 1u);
  std::unordered_set<Shape> shapes{Shape::of({6}), Shape{IntTuple{6}}, Shape::of({6}), Shape{}};
  EXPECT_EQ(shapes.size(), 3u);
}

TEST(CoreConcepts_3_ValueSemantics, LayoutPrintsShapeColonStride) {
  EXPECT_EQ(Layout(Shape::of({2, 3}), Stride::of({1, 2})).to_string(), "(2,3):(1,2)");
  EXPECT_EQ(Layout::compact(Shape{IntTuple{2, IntTuple{3, 4}}}).to_string(), "((2,(3,4))):((1,(2,6)))");
}

// ---------------------------------------------------------------------------
// normalize_axis

TEST(CoreConcepts_3_NormalizeAxis, AcceptsMinusRankToRankExclusive) {
  EXPECT_EQ(sw::normalize_axis(0, 3, "t"), 0);
  EXPECT_EQ(sw::normalize_axis(2, 3, "t"), 2);
  EXPECT_EQ(sw::normalize_axis(-1, 3, "t"), 2);
  EXPECT_EQ(sw::normalize_axis(-3, 3, "t"), 0);
  EXPECT_THROW_EXACTLY(sw::normalize_axis(3, 3, "t"), ValueError);
  EXPECT_THROW_EXACTLY(sw::normalize_axis(-4, 3, "t"), ValueError);
  EXPECT_THROW_EXACTLY(sw::normalize_axis(0, 0, "t"), ValueError);
  EXPECT_NE(error_message([] { sw::normalize_axis(5, 2, "my_op"); }).find("my_op"), std::string::npos);
}

// Core-concepts 3: Layout.compact(shape) is the canonical compact layout of
// the shape. The flat shapes' layouts are interned (a bounded, pinned set
// shared without reference counting: src/core/layout.cpp) and remembered
// per thread; neither may change the value. Past the interning capacity
// layouts are built per call; every answer is still the compact layout, and
// copies and destruction of interned layouts from many threads race on
// nothing (run under ThreadSanitizer in CI).
TEST(CoreConcepts_3_2_Layout, CompactIsTheSameValueWhetherInternedRememberedOrBuilt) {
  const auto expected_strides = [](const std::vector<std::int64_t>& extents) {
    std::vector<std::int64_t> strides;
    std::int64_t s = 1;
    for (const std::int64_t e : extents) {
      strides.push_back(s);
      if (e > 1) s *= e;
    }
    return strides;
  };
  const auto check = [&](const std::vector<std::int64_t>& extents) {
    const Layout c = Layout::compact(Shape::of(extents));
    ASSERT_EQ(c.shape(), Shape::of(extents));
    ASSERT_EQ(*c.flat_strides(), expected_strides(extents));
    ASSERT_EQ(c.cosize(), Shape::of(extents).size());
    ASSERT_TRUE(c.is_compact());
  };
  // More distinct shapes than the process interns (4096), each asked twice
  // (the second answer comes from the per-thread memo or the table).
  for (std::int64_t i = 0; i < 5000; ++i) {
    const std::vector<std::int64_t> extents{i % 7, 1 + i / 7, 3};
    check(extents);
    check(extents);
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<Layout> held;
      for (std::int64_t i = 0; i < 2000; ++i) {
        const std::vector<std::int64_t> extents{2 + (i + t) % 13, 1 + i % 5};
        held.push_back(Layout::compact(Shape::of(extents)));
        if (*held.back().flat_strides() != expected_strides(extents)) ++failures;
        if (held.size() > 64) held.erase(held.begin());
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}
