// The reductions family (docs/operations/reductions.md): reduce_sum,
// reduce_prod, reduce_max, reduce_min, argmax, argmin, cumsum, sort, topk,
// typed over Generic and CPU. Each test names the requirement it checks;
// expected values are worked out by hand.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "support/shipped_types.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

template <class C>
class ReductionOps : public ::testing::Test {};
using Carriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(ReductionOps, Carriers);

using Ints = std::vector<std::int64_t>;
using Floats = std::vector<float>;
using Int32s = std::vector<std::int32_t>;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<std::int64_t> reversed_axes(std::size_t rank) {
  std::vector<std::int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  return perm;
}
// A tensor from values written row-major (last axis fastest, as numpy prints
// them): a permuted view of compact storage.
template <class C>
Tensor rows(const Floats& values, const Ints& extents) {
  const Ints rev(extents.rbegin(), extents.rend());
  return make_tensor<C>(values, Shape::of(rev)).permute(reversed_axes(extents.size()));
}
// A tensor's values read row-major.
template <class T>
std::vector<T> row_values(const Tensor& t) {
  return TypedTensor<T>(t.permute(reversed_axes(t.rank()))).values();
}
template <class T>
std::vector<T> vals(const Tensor& t) {
  return TypedTensor<T>(t).values();
}
float f32(const Tensor& t) { return TypedTensor<float>(t).at_ordinal(0); }
std::int32_t i32(const Tensor& t) { return TypedTensor<std::int32_t>(t).at_ordinal(0); }
bool negative_zero(float f) { return f == 0.0f && std::signbit(f); }
bool positive_zero(float f) { return f == 0.0f && !std::signbit(f); }
// A size-n view of one stored element (nothing of size n is stored).
template <class C>
Tensor broadcast_one(std::int64_t n) {
  return make_tensor<C>({1.0f}, Shape{1}).broadcast_to(Shape{n});
}
constexpr std::int64_t kTwoTo31 = std::int64_t{1} << 31;

// ------------------------------------------------------------------ reduce_sum

TYPED_TEST(ReductionOps, ReduceSumReducesAxesAndKeepsDims) {
  const Tensor x = rows<TypeParam>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(vals<float>(reduce_sum(x, {1})), (Floats{6, 15}));
  EXPECT_EQ(vals<float>(reduce_sum(x, {0})), (Floats{5, 7, 9}));
  EXPECT_EQ(reduce_sum(x, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(vals<float>(reduce_sum(x)), (Floats{21}));
  EXPECT_THROW_EXACTLY(reduce_sum(x, {0, -2}), ValueError);
}

TYPED_TEST(ReductionOps, ReduceSumOfPermutedStridedViewIsCompactResult) {
  // A strided slice of a permuted view: every other row of a 4x3 matrix.
  const Tensor x = rows<TypeParam>({1, 2, 3, 10, 20, 30, 4, 5, 6, 40, 50, 60}, {4, 3}).slice(0, 0, 4, 2);
  const Tensor r = reduce_sum(x, {0}, true);
  EXPECT_EQ(r.shape(), (Shape{1, 3}));
  EXPECT_TRUE(r.layout().is_compact());
  EXPECT_EQ(vals<float>(r), (Floats{5, 7, 9}));
}

// ----------------------------------------------------------------- reduce_prod

TYPED_TEST(ReductionOps, ReduceProdMultipliesInLogicalOrderFirstAxisFastest) {
  // Logical order of a 2x2: (0,0), (1,0), (0,1), (1,1). Sequentially
  // 1e30 * 1e30 overflows to inf before the small factors come.
  const Tensor x = make_tensor<TypeParam>({1e30f, 1e30f, 1e-30f, 1e-30f}, Shape{2, 2});
  EXPECT_EQ(f32(reduce_prod(x)), kInf);
  // The transposed view visits 1e30, 1e-30, 1e30, 1e-30: each step rounds.
  volatile float p = 1.0f;
  for (float v : {1e30f, 1e-30f, 1e30f, 1e-30f}) p = p * v;
  EXPECT_EQ(f32(reduce_prod(x.permute({1, 0}))), p);
  EXPECT_TRUE(std::isfinite(p));
  // Per axis.
  const Tensor y = rows<TypeParam>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(vals<float>(reduce_prod(y, {1})), (Floats{6, 120}));
  EXPECT_EQ(vals<float>(reduce_prod(y, {0})), (Floats{4, 10, 18}));
}

TYPED_TEST(ReductionOps, ReduceProdOfEmptyBlockIsOne) {
  const Tensor x = make_tensor<TypeParam>(Floats{}, Shape{2, 0});
  EXPECT_EQ(vals<float>(reduce_prod(x, {1})), (Floats{1, 1}));
  EXPECT_EQ(vals<float>(reduce_prod(x)), (Floats{1}));
  EXPECT_EQ(reduce_prod(x, {0}).shape(), (Shape{0}));
}

TYPED_TEST(ReductionOps, ReduceProdPropagatesSpecialsAndSignedZero) {
  EXPECT_TRUE(std::isnan(f32(reduce_prod(make_tensor<TypeParam>({0.0f, kInf}, Shape{2})))));
  EXPECT_TRUE(std::isnan(f32(reduce_prod(make_tensor<TypeParam>({2.0f, kNaN, 0.0f}, Shape{3})))));
  EXPECT_TRUE(negative_zero(f32(reduce_prod(make_tensor<TypeParam>({-0.0f, 1.0f}, Shape{2})))));
  EXPECT_TRUE(positive_zero(f32(reduce_prod(make_tensor<TypeParam>({-0.0f, -3.0f}, Shape{2})))));
  EXPECT_EQ(f32(reduce_prod(make_tensor<TypeParam>({-kInf, -2.0f}, Shape{2}))), kInf);
}

// ----------------------------------------------------------- reduce_max / min

TYPED_TEST(ReductionOps, ReduceMaxPropagatesNaNAndPrefersPositiveZero) {
  for (const Floats& v : {Floats{-0.0f, 0.0f}, Floats{0.0f, -0.0f}}) {
    const Tensor x = make_tensor<TypeParam>(v, Shape{2});
    EXPECT_TRUE(positive_zero(f32(reduce_max(x))));
    EXPECT_TRUE(negative_zero(f32(reduce_min(x))));
  }
  const Tensor n = make_tensor<TypeParam>({1.0f, kNaN, kInf, -kInf}, Shape{4});
  EXPECT_TRUE(std::isnan(f32(reduce_max(n))));
  EXPECT_TRUE(std::isnan(f32(reduce_min(n))));
  const Tensor i = make_tensor<TypeParam>({1.0f, kInf, -kInf}, Shape{3});
  EXPECT_EQ(f32(reduce_max(i)), kInf);
  EXPECT_EQ(f32(reduce_min(i)), -kInf);
}

TYPED_TEST(ReductionOps, ReduceMaxAndMinReduceAxesAndKeepDims) {
  const Tensor x = rows<TypeParam>({3, -1, 7, 2, 8, -5}, {2, 3});
  EXPECT_EQ(vals<float>(reduce_max(x, {1})), (Floats{7, 8}));
  EXPECT_EQ(vals<float>(reduce_min(x, {1})), (Floats{-1, -5}));
  EXPECT_EQ(vals<float>(reduce_max(x, {0})), (Floats{3, 8, 7}));
  EXPECT_EQ(vals<float>(reduce_min(x, {-2})), (Floats{2, -1, -5}));
  EXPECT_EQ(reduce_max(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(reduce_min(x).shape(), Shape{});
  EXPECT_EQ(f32(reduce_min(x)), -5.0f);
  EXPECT_EQ(vals<float>(reduce_max(x, Ints{})), (Floats{3, 2, -1, 8, 7, -5}));  // nothing reduced
}

TYPED_TEST(ReductionOps, ReduceMaxOfEmptyBlockHasNoIdentity) {
  const Tensor x = make_tensor<TypeParam>(Floats{}, Shape{0, 3});
  EXPECT_THROW_EXACTLY(reduce_max(x), ValueError);
  EXPECT_THROW_EXACTLY(reduce_min(x, {0}), ValueError);
  EXPECT_THROW_EXACTLY(reduce_max(make_tensor<TypeParam>(Floats{}, Shape{3, 0}), {1}), ValueError);
  EXPECT_THROW_EXACTLY(reduce_max(make_tensor<TypeParam>(Floats{}, Shape{0, 0}), {0}),
                       ValueError);  // even with no result element
  EXPECT_EQ(reduce_max(x, {1}).shape(), (Shape{0}));  // blocks of 3, no result element
  EXPECT_EQ(reduce_min(x, Ints{}).shape(), (Shape{0, 3}));
}

TYPED_TEST(ReductionOps, ReductionsRejectBadAxes) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2, 1});
  for (auto op : {+[](const Tensor& t, Ints a) { return reduce_prod(t, std::move(a)); },
                  +[](const Tensor& t, Ints a) { return reduce_max(t, std::move(a)); },
                  +[](const Tensor& t, Ints a) { return reduce_min(t, std::move(a)); }}) {
    EXPECT_THROW_EXACTLY(op(x, {2}), ValueError);
    EXPECT_THROW_EXACTLY(op(x, {-3}), ValueError);
    EXPECT_THROW_EXACTLY(op(x, {1, -1}), ValueError);  // duplicate
  }
}

TYPED_TEST(ReductionOps, ReductionsOtherThanSumRequireFloat32) {
  const Tensor i = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1, 2}, Shape{2});
  EXPECT_THROW_EXACTLY(reduce_prod(i), TypeError);
  EXPECT_THROW_EXACTLY(reduce_max(i), TypeError);
  EXPECT_THROW_EXACTLY(reduce_min(i), TypeError);
  EXPECT_THROW_EXACTLY(argmax(i), TypeError);
  EXPECT_THROW_EXACTLY(argmin(i), TypeError);
  EXPECT_THROW_EXACTLY(cumsum(i, 0), TypeError);
  EXPECT_THROW_EXACTLY(sort(i), TypeError);
  EXPECT_THROW_EXACTLY(topk(i, 1), TypeError);
  EXPECT_EQ(vals<std::int32_t>(reduce_sum(i)), (Int32s{3}));
}

// ------------------------------------------------------------ argmax / argmin

TYPED_TEST(ReductionOps, ArgmaxReturnsTheFirstWinner) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 3.0f, 3.0f, 2.0f, 1.0f}, Shape{5});
  const Tensor a = argmax(x);
  EXPECT_EQ(&a.dtype(), &DType::Int32());
  EXPECT_EQ(a.shape(), Shape{});
  EXPECT_EQ(i32(a), 1);
  EXPECT_EQ(i32(argmin(x)), 0);
  EXPECT_EQ(i32(argmax(make_tensor<TypeParam>({kInf, 0.0f, kInf}, Shape{3}))), 0);
  EXPECT_EQ(i32(argmin(make_tensor<TypeParam>({5.0f, -kInf, -kInf}, Shape{3}))), 1);
}

TYPED_TEST(ReductionOps, ArgmaxAndArgminTreatTheFirstNaNAsTheExtreme) {
  const Tensor x = make_tensor<TypeParam>({1.0f, -kInf, kNaN, kInf, kNaN}, Shape{5});
  EXPECT_EQ(i32(argmax(x)), 2);
  EXPECT_EQ(i32(argmin(x)), 2);
}

TYPED_TEST(ReductionOps, ArgmaxPrefersPositiveZeroAndArgminNegativeZero) {
  const Tensor a = make_tensor<TypeParam>({-0.0f, 0.0f, -0.0f}, Shape{3});
  EXPECT_EQ(i32(argmax(a)), 1);
  EXPECT_EQ(i32(argmin(a)), 0);
  const Tensor b = make_tensor<TypeParam>({0.0f, -0.0f, 0.0f}, Shape{3});
  EXPECT_EQ(i32(argmax(b)), 0);
  EXPECT_EQ(i32(argmin(b)), 1);
}

TYPED_TEST(ReductionOps, ArgmaxWithoutAxisIsTheFlatLogicalOrdinal) {
  // Row-major [[1, 9, 2], [9, 0, 3]]: logical order (first axis fastest) is
  // 1, 9, 9, 0, 2, 3, so the first 9 is at ordinal 1 and the 0 at ordinal 3.
  const Tensor x = rows<TypeParam>({1, 9, 2, 9, 0, 3}, {2, 3});
  EXPECT_EQ(i32(argmax(x)), 1);
  EXPECT_EQ(i32(argmin(x)), 3);
  const Tensor k = argmax(x, std::nullopt, true);
  EXPECT_EQ(k.shape(), (Shape{1, 1}));
  EXPECT_EQ(vals<std::int32_t>(k), (Int32s{1}));
  // The transposed view has its own logical order: 1, 9, 2, 9, 0, 3.
  EXPECT_EQ(i32(argmax(x.permute({1, 0}))), 1);
  EXPECT_EQ(i32(argmin(x.permute({1, 0}))), 4);
}

TYPED_TEST(ReductionOps, ArgmaxAlongOneAxisGivesPositionsAlongIt) {
  const Tensor x = rows<TypeParam>({1, 9, 2, 9, 0, 3}, {2, 3});
  EXPECT_EQ(row_values<std::int32_t>(argmax(x, 1)), (Int32s{1, 0}));
  EXPECT_EQ(row_values<std::int32_t>(argmin(x, -1)), (Int32s{0, 1}));
  EXPECT_EQ(row_values<std::int32_t>(argmax(x, 0)), (Int32s{1, 0, 1}));  // 9 vs 9 along axis 0: column 1 has 9, 0
  const Tensor k = argmin(x, 0, true);
  EXPECT_EQ(k.shape(), (Shape{1, 3}));
  EXPECT_EQ(row_values<std::int32_t>(k), (Int32s{0, 1, 0}));
}

TYPED_TEST(ReductionOps, ArgmaxRejectsEmptyBlocksAndBadAxes) {
  const Tensor e = make_tensor<TypeParam>(Floats{}, Shape{0, 2});
  EXPECT_THROW_EXACTLY(argmax(e), ValueError);
  EXPECT_THROW_EXACTLY(argmin(e, 0), ValueError);
  EXPECT_EQ(argmax(e, 1).shape(), (Shape{0}));
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  EXPECT_THROW_EXACTLY(argmax(x, 1), ValueError);
  EXPECT_THROW_EXACTLY(argmin(x, -2), ValueError);
  const Tensor scalar = make_tensor<TypeParam>({4.0f}, Shape{});
  EXPECT_EQ(i32(argmax(scalar)), 0);
  EXPECT_THROW_EXACTLY(argmax(scalar, 0), ValueError);  // a rank-0 tensor has no axis
}

TYPED_TEST(ReductionOps, IndicesBeyondInt32AreAnOverflowErrorBeforeAllocation) {
  // 2^31 + 1 positions need the index 2^31; the result is never allocated
  // (a full-size result would be 8 GiB).
  const Tensor x = broadcast_one<TypeParam>(kTwoTo31 + 1);
  EXPECT_THROW_EXACTLY(argmax(x), OverflowError);
  EXPECT_THROW_EXACTLY(argmin(x, 0), OverflowError);
  EXPECT_THROW_EXACTLY(sort(x), OverflowError);
  EXPECT_THROW_EXACTLY(topk(x, 1), OverflowError);
  // reduce_max has no index: it runs (over a broadcast of 1.0).
  EXPECT_EQ(f32(reduce_max(make_tensor<TypeParam>({1.0f}, Shape{1}).broadcast_to(Shape{1000}))), 1.0f);
}

// ---------------------------------------------------------------------- cumsum

TYPED_TEST(ReductionOps, CumsumAddsSequentiallyFromPositiveZero) {
  EXPECT_TRUE(positive_zero(f32(cumsum(make_tensor<TypeParam>({-0.0f}, Shape{1}), 0))));
  // Each step rounds to binary32: 1e8 + 1 is 1e8.
  EXPECT_EQ(vals<float>(cumsum(make_tensor<TypeParam>({1e8f, 1.0f, -1e8f, 1.0f}, Shape{4}), 0)),
            (Floats{1e8f, 1e8f, 0.0f, 1.0f}));
  const Floats s = vals<float>(cumsum(make_tensor<TypeParam>({kInf, 1.0f, -kInf, 2.0f}, Shape{4}), 0));
  EXPECT_EQ(s[0], kInf);
  EXPECT_EQ(s[1], kInf);
  EXPECT_TRUE(std::isnan(s[2]) && std::isnan(s[3]));
}

TYPED_TEST(ReductionOps, CumsumRunsAlongTheChosenAxis) {
  const Tensor x = rows<TypeParam>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor c1 = cumsum(x, 1);
  EXPECT_EQ(c1.shape(), (Shape{2, 3}));
  EXPECT_EQ(row_values<float>(c1), (Floats{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(row_values<float>(cumsum(x, 0)), (Floats{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(row_values<float>(cumsum(x, -2)), (Floats{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(cumsum(make_tensor<TypeParam>(Floats{}, Shape{0, 3}), 0).shape(), (Shape{0, 3}));
  EXPECT_THROW_EXACTLY(cumsum(x, 2), ValueError);
  EXPECT_THROW_EXACTLY(cumsum(x, -3), ValueError);
  EXPECT_THROW_EXACTLY(cumsum(make_tensor<TypeParam>({1.0f}, Shape{}), 0), ValueError);
}

TYPED_TEST(ReductionOps, CumsumByNameRequiresTheAxis) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  EXPECT_THROW_EXACTLY(call_operation("cumsum", std::vector<CallOperand>{x}), TypeError);
  const CallResult r = call_operation("cumsum", std::vector<CallOperand>{x}, {{"axis", std::int64_t{0}}});
  EXPECT_EQ(vals<float>(r.results.at(0)), (Floats{1, 3}));
}

// ------------------------------------------------------------------------ sort

TYPED_TEST(ReductionOps, SortIsStableWithNaNLastAndNegativeZeroFirst) {
  const Tensor x = make_tensor<TypeParam>({3.0f, kNaN, -0.0f, 1.0f, 0.0f, -kInf, 1.0f, kInf}, Shape{8});
  const SortResult s = sort(x);
  const Floats v = vals<float>(s.values);
  EXPECT_EQ(&s.indices.dtype(), &DType::Int32());
  EXPECT_EQ(vals<std::int32_t>(s.indices), (Int32s{5, 2, 4, 3, 6, 0, 7, 1}));
  EXPECT_EQ(v[0], -kInf);
  EXPECT_TRUE(negative_zero(v[1]));
  EXPECT_TRUE(positive_zero(v[2]));
  EXPECT_EQ((Floats{v[3], v[4], v[5], v[6]}), (Floats{1, 1, 3, kInf}));
  EXPECT_TRUE(std::isnan(v[7]));
}

TYPED_TEST(ReductionOps, SortDescendingPutsNaNFirstAndKeepsTiesInOrder) {
  const Tensor x = make_tensor<TypeParam>({3.0f, kNaN, -0.0f, 1.0f, 0.0f, -kInf, 1.0f, kInf}, Shape{8});
  const SortResult s = sort(x, -1, true);
  const Floats v = vals<float>(s.values);
  EXPECT_EQ(vals<std::int32_t>(s.indices), (Int32s{1, 7, 0, 3, 6, 4, 2, 5}));  // the two 1s stay 3, 6
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ((Floats{v[1], v[2], v[3], v[4]}), (Floats{kInf, 3, 1, 1}));
  EXPECT_TRUE(positive_zero(v[5]));
  EXPECT_TRUE(negative_zero(v[6]));
  EXPECT_EQ(v[7], -kInf);
}

TYPED_TEST(ReductionOps, SortTreatsEveryNaNAsEqualAndKeepsTheirBits) {
  const float negative_nan = -kNaN;
  const Tensor x = make_tensor<TypeParam>({negative_nan, 1.0f, kNaN}, Shape{3});
  const SortResult s = sort(x);
  EXPECT_EQ(vals<std::int32_t>(s.indices), (Int32s{1, 0, 2}));
  const Floats v = vals<float>(s.values);
  EXPECT_TRUE(std::isnan(v[1]) && std::signbit(v[1]));
  EXPECT_TRUE(std::isnan(v[2]) && !std::signbit(v[2]));
}

TYPED_TEST(ReductionOps, SortAlongAnAxisGivesPositionsAlongIt) {
  const Tensor x = rows<TypeParam>({3, 1, 2, 0, 5, 4}, {2, 3});
  const SortResult s0 = sort(x, 0);
  EXPECT_EQ(s0.values.shape(), (Shape{2, 3}));
  EXPECT_EQ(row_values<float>(s0.values), (Floats{0, 1, 2, 3, 5, 4}));
  EXPECT_EQ(row_values<std::int32_t>(s0.indices), (Int32s{1, 0, 0, 0, 1, 1}));
  const SortResult s1 = sort(x, 1, true);
  EXPECT_EQ(row_values<float>(s1.values), (Floats{3, 2, 1, 5, 4, 0}));
  EXPECT_EQ(row_values<std::int32_t>(s1.indices), (Int32s{0, 2, 1, 1, 2, 0}));
  EXPECT_THROW_EXACTLY(sort(x, 2), ValueError);
  EXPECT_THROW_EXACTLY(sort(make_tensor<TypeParam>({1.0f}, Shape{})), ValueError);  // no axis -1 at rank 0
  EXPECT_EQ(sort(make_tensor<TypeParam>(Floats{}, Shape{2, 0})).indices.shape(), (Shape{2, 0}));
}

// ------------------------------------------------------------------------ topk

TYPED_TEST(ReductionOps, TopkReturnsLargestFirstWithTiesByLowerIndex) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 3.0f, kNaN, 3.0f, 2.0f, -0.0f, 0.0f}, Shape{7});
  const SortResult big = topk(x, 3);
  EXPECT_EQ(big.values.shape(), Shape{3});
  EXPECT_EQ(vals<std::int32_t>(big.indices), (Int32s{2, 1, 3}));  // NaN is the largest
  const Floats bv = vals<float>(big.values);
  EXPECT_TRUE(std::isnan(bv[0]));
  EXPECT_EQ(bv[1], 3.0f);
  EXPECT_EQ(bv[2], 3.0f);
  const SortResult small = topk(x, 3, -1, false);
  EXPECT_EQ(vals<std::int32_t>(small.indices), (Int32s{5, 6, 0}));  // -0 before +0
  const Floats sv = vals<float>(small.values);
  EXPECT_TRUE(negative_zero(sv[0]));
  EXPECT_TRUE(positive_zero(sv[1]));
  EXPECT_EQ(sv[2], 1.0f);
}

TYPED_TEST(ReductionOps, TopkReplacesTheAxisExtentByK) {
  const Tensor x = rows<TypeParam>({3, 1, 2, 0, 5, 4}, {2, 3});
  const SortResult r = topk(x, 1, 0);
  EXPECT_EQ(r.values.shape(), (Shape{1, 3}));
  EXPECT_EQ(row_values<float>(r.values), (Floats{3, 5, 4}));
  EXPECT_EQ(row_values<std::int32_t>(r.indices), (Int32s{0, 1, 1}));
  const SortResult z = topk(x, 0);
  EXPECT_EQ(z.values.shape(), (Shape{2, 0}));
  EXPECT_EQ(z.indices.shape(), (Shape{2, 0}));
  EXPECT_EQ(row_values<float>(topk(x, 3).values), (Floats{3, 2, 1, 5, 4, 0}));  // k = extent: a full sort
}

TYPED_TEST(ReductionOps, TopkRejectsKOutsideTheExtent) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  EXPECT_THROW_EXACTLY(topk(x, 3), ValueError);
  EXPECT_THROW_EXACTLY(topk(x, -1), ValueError);
  EXPECT_THROW_EXACTLY(topk(x, 1, 1), ValueError);
  EXPECT_THROW_EXACTLY(call_operation("topk", std::vector<CallOperand>{x}), TypeError);  // k is required
}

TYPED_TEST(ReductionOps, SortAndTopkByNameReturnValuesThenIndices) {
  const Tensor x = make_tensor<TypeParam>({2.0f, 1.0f, 3.0f}, Shape{3});
  const CallResult s = call_operation("sort", std::vector<CallOperand>{x}, {{"descending", true}});
  ASSERT_EQ(s.results.size(), 2u);
  EXPECT_EQ(s.plans.at(0).operation(), "_sort_values");
  EXPECT_EQ(s.plans.at(1).operation(), "_sort_indices");
  EXPECT_EQ(vals<float>(s.results[0]), (Floats{3, 2, 1}));
  EXPECT_EQ(vals<std::int32_t>(s.results[1]), (Int32s{2, 0, 1}));
  const CallResult t = call_operation("topk", std::vector<CallOperand>{x}, {{"k", std::int64_t{2}}, {"largest", false}});
  EXPECT_EQ(vals<float>(t.results.at(0)), (Floats{1, 2}));
  EXPECT_EQ(vals<std::int32_t>(t.results.at(1)), (Int32s{1, 0}));
  EXPECT_THROW_EXACTLY(call_operation("sort", std::vector<CallOperand>{x}, {{"stable", true}}),
                       TypeError);  // unknown option
}

// -------------------------------------------------------------- whole family

TYPED_TEST(ReductionOps, OperationsAcceptEveryViewKind) {
  // A hierarchical view: axis 0 is the nested mode (2,2):(1,6), which does
  // not coalesce to one stride; axis 1 has stride 2.
  auto storage = TypeParam::from_values(
      [] {
        std::vector<Value> v;
        for (float f : {5.0f, -1.0f, 7.0f, 0.0f, 2.0f, 9.0f, -3.0f, 4.0f, 8.0f, 1.0f, 6.0f, 3.0f})
          v.push_back(Value::from_float32(f));
        return v;
      }(),
      DType::Float32());
  const Tensor h(storage, 0, Layout(Shape(std::vector<IntTuple>{IntTuple{2, 2}, IntTuple(3)}),
                                    Stride(std::vector<IntTuple>{IntTuple{1, 6}, IntTuple(2)})));
  // Logical element (i, j) with i = a + 2b sits at a + 6b + 2j.
  std::vector<float> col0;
  for (std::int64_t i = 0; i < 4; ++i) col0.push_back(h.at({i, 0}).f);
  EXPECT_EQ(col0, (Floats{5, -1, -3, 4}));
  // Columns: [5, -1, -3, 4], [7, 0, 8, 1], [2, 9, 6, 3].
  EXPECT_EQ(vals<float>(reduce_max(h, {0})), (Floats{5, 8, 9}));
  EXPECT_EQ(vals<float>(reduce_min(h, {0})), (Floats{-3, 0, 2}));
  EXPECT_EQ(vals<std::int32_t>(argmax(h, 0)), (Int32s{0, 2, 1}));
  EXPECT_EQ(vals<float>(cumsum(h, 0)).at(3), 5.0f);  // 5 - 1 - 3 + 4
  EXPECT_EQ(vals<std::int32_t>(sort(h, 0).indices), (Int32s{2, 1, 3, 0, 1, 3, 0, 2, 0, 3, 2, 1}));
  EXPECT_EQ(vals<std::int32_t>(topk(h, 1, 0).indices), (Int32s{0, 2, 1}));
  // A broadcast view: every block holds equal elements, the first wins.
  const Tensor b = make_tensor<TypeParam>({2.0f, -0.0f}, Shape{1, 2}).broadcast_to(Shape{3, 2});
  EXPECT_EQ(vals<std::int32_t>(argmax(b, 0)), (Int32s{0, 0}));
  EXPECT_EQ(vals<float>(cumsum(b, 0)), (Floats{2, 4, 6, 0, 0, 0}));
  EXPECT_EQ(vals<std::int32_t>(sort(b, 0, true).indices), (Int32s{0, 1, 2, 0, 1, 2}));
}

// A (2*rows, cols) storage filled with `fill`; the output is its odd rows
// (offset 1, stride 2 along axis 0): a strided caller output.
template <class C, class T>
std::pair<Tensor, Tensor> strided_output(std::int64_t rows_, std::int64_t cols, T fill) {
  const Tensor base = make_tensor<C>(std::vector<T>(static_cast<std::size_t>(2 * rows_ * cols), fill), Shape{2 * rows_, cols});
  return {base, base.slice(0, 1, 2 * rows_, 2)};
}

TYPED_TEST(ReductionOps, KernelsWriteThroughAStridedCallerOutput) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  const Tensor x = rows<TypeParam>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto untouched = [](const Tensor& base) { return base.slice(0, 0, base.shape().extent(0), 2); };
  {
    auto [base, out] = strided_output<TypeParam, float>(2, 1, -7.0f);
    reduce_sum(x, {1}, true, std::nullopt, into(out));
    EXPECT_EQ(row_values<float>(out), (Floats{6, 15}));
    EXPECT_EQ(vals<float>(untouched(base)), (Floats{-7, -7}));
    reduce_prod(x, {1}, true, into(out));
    EXPECT_EQ(row_values<float>(out), (Floats{6, 120}));
    reduce_min(x, {1}, true, into(out));
    EXPECT_EQ(row_values<float>(out), (Floats{1, 4}));
    EXPECT_EQ(vals<float>(untouched(base)), (Floats{-7, -7}));
  }
  {
    auto [base, out] = strided_output<TypeParam, std::int32_t>(2, 1, -7);
    argmax(x, 1, true, into(out));
    EXPECT_EQ(row_values<std::int32_t>(out), (Int32s{2, 2}));
    EXPECT_EQ(vals<std::int32_t>(untouched(base)), (Int32s{-7, -7}));
  }
  {
    auto [base, out] = strided_output<TypeParam, float>(2, 3, -7.0f);
    cumsum(x, 1, into(out));
    EXPECT_EQ(row_values<float>(out), (Floats{1, 3, 6, 4, 9, 15}));
    cumsum(x, 0, into(out));
    EXPECT_EQ(row_values<float>(out), (Floats{1, 2, 3, 5, 7, 9}));
    ExecutionRequest request;
    request.out = into(out);
    const std::vector<CallOperand> operands{x};
    call_operation("_sort_values", operands, CallOptions{{"axis", std::int64_t{1}}, {"descending", true}},
                   request);  // the values plan of sort, by name
    EXPECT_EQ(row_values<float>(out), (Floats{3, 2, 1, 6, 5, 4}));
    EXPECT_EQ(vals<float>(untouched(base)), (Floats(6, -7.0f)));
  }
}

TYPED_TEST(ReductionOps, FailedCallsLeaveTheOperandUnchanged) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const std::uint64_t version = x.carrier()->version();
  EXPECT_THROW_EXACTLY(reduce_max(x, {1}), ValueError);
  EXPECT_THROW_EXACTLY(argmin(x, 3), ValueError);
  EXPECT_THROW_EXACTLY(cumsum(x, 1), ValueError);
  EXPECT_THROW_EXACTLY(sort(x, 1), ValueError);
  EXPECT_THROW_EXACTLY(topk(x, 4), ValueError);
  EXPECT_EQ(vals<float>(x), (Floats{1, 2, 3}));
  EXPECT_EQ(x.carrier()->version(), version);
}

TYPED_TEST(ReductionOps, ReleasedCarrierIsARuntimeError) {
  auto storage = TypeParam::from_values(std::vector<Value>{Value::from_float32(1.0f)}, DType::Float32());
  const Tensor a(storage, Shape{1});
  storage->release();
  EXPECT_THROW_EXACTLY(reduce_prod(a), RuntimeError);
  EXPECT_THROW_EXACTLY(reduce_max(a), RuntimeError);
  EXPECT_THROW_EXACTLY(argmax(a), RuntimeError);
  EXPECT_THROW_EXACTLY(cumsum(a, 0), RuntimeError);
  EXPECT_THROW_EXACTLY(sort(a), RuntimeError);
  EXPECT_THROW_EXACTLY(topk(a, 1), RuntimeError);
}

}  // namespace
