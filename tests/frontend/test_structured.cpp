// The structured family (docs/operations/structured.md): conv_general,
// gather, scatter, scatter_add, typed over Generic and CPU. Each test names
// the requirement it checks; expected values are worked out by hand.
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
class StructuredOps : public ::testing::Test {};
using Carriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(StructuredOps, Carriers);

using Ints = std::vector<std::int64_t>;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<std::int64_t> reversed_axes(std::size_t rank) {
  std::vector<std::int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  return perm;
}

// A tensor from values written row-major (last axis fastest, as torch prints
// them). The result is a permuted view of compact storage.
template <class C, class T>
Tensor rows(const std::vector<T>& values, const Ints& extents) {
  const Ints rev(extents.rbegin(), extents.rend());
  return make_tensor<C>(values, Shape::of(rev)).permute(reversed_axes(extents.size()));
}
// A tensor's values read row-major.
template <class T>
std::vector<T> row_values(const Tensor& t) {
  return TypedTensor<T>(t.permute(reversed_axes(t.rank()))).values();
}
template <class C>
Tensor ints(const std::vector<std::int32_t>& values, const Ints& extents) {
  return rows<C>(values, extents);
}
bool negative_zero(float f) { return f == 0.0f && std::signbit(f); }
bool positive_zero(float f) { return f == 0.0f && !std::signbit(f); }

// ---------------------------------------------------------------- conv_general

TYPED_TEST(StructuredOps, ConvGeneralIsCrossCorrelationLikeTorchConv1d) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, Shape{1, 1, 5});
  const Tensor w = make_tensor<TypeParam>({1.0f, 0.0f, -1.0f}, Shape{1, 1, 3});
  const Tensor y = conv_general(x, w);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(TypedTensor<float>(y).values(), (std::vector<float>{-2, -2, -2}));  // not flipped: x[o] - x[o+2]
  EXPECT_EQ(y.carrier_type(), carrier_class<TypeParam>());
  EXPECT_TRUE(y.layout().is_compact());
}

TYPED_TEST(StructuredOps, ConvGeneralStrideAsymmetricPaddingAndDilationFollowTheOutputFormula) {
  // O = floor((10 + 2 + 1 - 2*(3-1) - 1) / 3) + 1 = 3; input position of (o, k) = 3o - 2 + 2k.
  std::vector<float> xs(10);
  std::iota(xs.begin(), xs.end(), 1.0f);  // x[i] = i + 1
  const Tensor x = make_tensor<TypeParam>(xs, Shape{1, 1, 10});
  const Tensor w = make_tensor<TypeParam>({1.0f, 1.0f, 1.0f}, Shape{1, 1, 3});
  const Tensor y = conv_general(x, w, ConvOptions{Ints{3}, Ints{2, 1}, Ints{2}, 1});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  // o=0: positions -2 (pad), 0, 2 -> 0+1+3; o=1: 1,3,5 -> 2+4+6; o=2: 4,6,8 -> 5+7+9.
  EXPECT_EQ(TypedTensor<float>(y).values(), (std::vector<float>{4, 12, 21}));
}

TYPED_TEST(StructuredOps, ConvGeneralSymmetricPaddingAndDefaults2d) {
  // 2-d, one channel, 3x3 input 1..9 (row-major), 2x2 kernel of ones, padding 1.
  const Tensor x = rows<TypeParam>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor w = rows<TypeParam>(std::vector<float>{1, 1, 1, 1}, {1, 1, 2, 2});
  const Tensor y = conv_general(x, w, ConvOptions{std::nullopt, Ints{1, 1}, std::nullopt, 1});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(row_values<float>(y),
            (std::vector<float>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  // Asymmetric (lo_1, hi_1, lo_2, hi_2) = (0, 1, 1, 0) with stride (2, 1).
  const Tensor z = conv_general(x, w, ConvOptions{Ints{2, 1}, Ints{0, 1, 1, 0}, std::nullopt, 1});
  EXPECT_EQ(z.shape(), (Shape{1, 1, 2, 3}));  // floor((3+1-2)/2)+1 = 2, (3+1-2)/1+1 = 3
  EXPECT_EQ(row_values<float>(z), (std::vector<float>{5, 12, 16, 7, 15, 17}));
}

TYPED_TEST(StructuredOps, ConvGeneralGroupsSplitChannels) {
  // C_in = 4, C_out = 2, groups = 2: output channel g sees input channels 2g, 2g+1.
  const Tensor x = rows<TypeParam>(std::vector<float>{1, 2, 10, 20, 100, 200, 1000, 2000}, {1, 4, 2});
  const Tensor w = rows<TypeParam>(std::vector<float>{1, 3, 5, 7}, {2, 2, 1});  // (C_out, C_in/groups, K)
  const Tensor y = conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, std::nullopt, 2});
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2}));
  // channel 0: 1*x0 + 3*x1; channel 1: 5*x2 + 7*x3.
  EXPECT_EQ(row_values<float>(y), (std::vector<float>{31, 62, 7500, 15000}));
}

TYPED_TEST(StructuredOps, ConvGeneralThreeSpatialAxes) {
  // (1,1,2,2,2) input 1..8 row-major, kernel (1,1,2,2,2) of ones: the sum 36.
  const Tensor x = rows<TypeParam>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 2, 2});
  const Tensor w = rows<TypeParam>(std::vector<float>(8, 1.0f), {1, 1, 2, 2, 2});
  const Tensor y = conv_general(x, w);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 1, 1}));
  EXPECT_EQ(row_values<float>(y), (std::vector<float>{36}));
  // Padding 1 on the last axis only, dilation 1: 3 outputs along it.
  const Tensor z = conv_general(x, w, ConvOptions{std::nullopt, Ints{0, 0, 1}, std::nullopt, 1});
  EXPECT_EQ(z.shape(), (Shape{1, 1, 1, 1, 3}));
  EXPECT_EQ(row_values<float>(z), (std::vector<float>{1 + 3 + 5 + 7, 36, 2 + 4 + 6 + 8}));
}

TYPED_TEST(StructuredOps, ConvGeneralAddsInputChannelFastestInBinary32) {
  // Weight slice (C_in=2, K=2) in logical order (ci fastest):
  //   (0,0)=2^24, (1,0)=-2^24, (0,1)=1, (1,1)=1; all inputs are 1.
  // Sequential from +0.0 in that order: 2^24 - 2^24 + 1 + 1 = 2. (With the
  // kernel tap fastest it would be 2^24 + 1 -> 2^24, - 2^24 = 0, + 1 = 1.)
  const float big = 16777216.0f;
  const Tensor x = make_tensor<TypeParam>({1.0f, 1.0f, 1.0f, 1.0f}, Shape{1, 2, 2});
  const Tensor w = make_tensor<TypeParam>({big, -big, 1.0f, 1.0f}, Shape{1, 2, 2});
  EXPECT_EQ(TypedTensor<float>(conv_general(x, w)).values(), (std::vector<float>{2.0f}));
}

TYPED_TEST(StructuredOps, ConvGeneralRoundsEveryProductBeforeAdding) {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds (tie to even) to 1 + 2^-11; minus
  // (1 + 2^-11) gives exactly +0.0. A fused multiply-add would give 2^-24.
  const float a = 1.0f + std::ldexp(1.0f, -12), b = 1.0f + std::ldexp(1.0f, -11);
  const Tensor x = make_tensor<TypeParam>({a, 1.0f}, Shape{1, 2, 1});
  const Tensor w = make_tensor<TypeParam>({a, -b}, Shape{1, 2, 1});
  const float y = TypedTensor<float>(conv_general(x, w)).at_ordinal(0);
  EXPECT_TRUE(positive_zero(y)) << y;
}

TYPED_TEST(StructuredOps, ConvGeneralPaddedPositionsTakePartInProducts) {
  // Padding [1]: positions -1, 0, 1 read 0, 2, 0. An inf weight on a padded
  // position gives 0 * inf = NaN (as torch/XLA); a NaN weight likewise.
  const Tensor x = make_tensor<TypeParam>({2.0f}, Shape{1, 1, 1});
  const ConvOptions pad1{std::nullopt, Ints{1}, std::nullopt, 1};
  EXPECT_TRUE(std::isnan(TypedTensor<float>(conv_general(x, make_tensor<TypeParam>({kInf, 1.0f, 1.0f}, Shape{1, 1, 3}), pad1)).at_ordinal(0)));
  EXPECT_TRUE(std::isnan(TypedTensor<float>(conv_general(x, make_tensor<TypeParam>({1.0f, 1.0f, kNaN}, Shape{1, 1, 3}), pad1)).at_ordinal(0)));
  EXPECT_EQ(TypedTensor<float>(conv_general(x, make_tensor<TypeParam>({-5.0f, 1.5f, 7.0f}, Shape{1, 1, 3}), pad1)).at_ordinal(0), 3.0f);
  // An empty input axis with padding: every product is +0.0 * w.
  const Tensor empty = make_tensor<TypeParam>(std::vector<float>{}, Shape{1, 1, 0});
  const Tensor y = conv_general(empty, make_tensor<TypeParam>({-1.0f}, Shape{1, 1, 1}), ConvOptions{std::nullopt, Ints{1, 1}, std::nullopt, 1});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  for (float v : TypedTensor<float>(y).values()) EXPECT_TRUE(positive_zero(v)) << v;  // +0.0 + (-0.0) = +0.0
}

TYPED_TEST(StructuredOps, ConvGeneralSpecialValuesPropagateAndSumsStartAtPositiveZero) {
  const Tensor w = make_tensor<TypeParam>({1.0f, 1.0f}, Shape{1, 1, 2});
  auto conv1 = [&](std::initializer_list<float> xs) {
    return TypedTensor<float>(conv_general(make_tensor<TypeParam>(xs, Shape{1, 1, 2}), w)).at_ordinal(0);
  };
  EXPECT_TRUE(std::isnan(conv1({kInf, -kInf})));
  EXPECT_EQ(conv1({kInf, 1.0f}), kInf);
  EXPECT_EQ(conv1({3.0e38f, 3.0e38f}), kInf);  // overflow gives inf, never an error
  EXPECT_TRUE(positive_zero(conv1({-0.0f, -0.0f})));  // +0.0 + (-0.0) + (-0.0)
  const Tensor zero_w = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{1, 1, 2});
  EXPECT_TRUE(std::isnan(TypedTensor<float>(conv_general(make_tensor<TypeParam>({kInf, 1.0f}, Shape{1, 1, 2}), zero_w)).at_ordinal(0)));
}

TYPED_TEST(StructuredOps, ConvGeneralEmptyExtentsGiveEmptyOrZeroResults) {
  // O = floor((2 - 3) / 1) + 1 = 0: an empty result, not an error.
  EXPECT_EQ(conv_general(make_tensor<TypeParam>({1.0f, 2.0f}, Shape{1, 1, 2}),
                         make_tensor<TypeParam>({1.0f, 1.0f, 1.0f}, Shape{1, 1, 3})).shape(),
            (Shape{1, 1, 0}));
  // C_in = 0: every sum is empty, +0.0.
  const Tensor y = conv_general(make_tensor<TypeParam>(std::vector<float>{}, Shape{2, 0, 3}),
                                make_tensor<TypeParam>(std::vector<float>{}, Shape{2, 0, 2}));
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  for (float v : TypedTensor<float>(y).values()) EXPECT_TRUE(positive_zero(v));
  EXPECT_EQ(conv_general(make_tensor<TypeParam>(std::vector<float>{}, Shape{0, 1, 3}),
                         make_tensor<TypeParam>({1.0f}, Shape{1, 1, 1})).shape(),
            (Shape{0, 1, 3}));
}

TYPED_TEST(StructuredOps, ConvGeneralAcceptsPermutedStridedAndBroadcastViews) {
  const Tensor x = rows<TypeParam>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 2, 2, 3});
  const Tensor w = rows<TypeParam>(std::vector<float>{1, -1, 2, 0.5f, 3, 1, 1, 1}, {1, 2, 2, 2});
  const std::vector<float> expected = row_values<float>(conv_general(x, w));
  // The same values through a strided view (every other element of a doubled axis).
  std::vector<float> doubled(24, kNaN);
  const std::vector<float> xv = TypedTensor<float>(x).values();
  for (std::size_t i = 0; i < xv.size(); ++i) doubled[2 * i] = xv[i];
  const Tensor xs = make_tensor<TypeParam>(doubled, Shape{2, 2, 2, 3}).slice(0, 0, 2, 2);
  EXPECT_EQ(row_values<float>(conv_general(xs, w)), expected);
  // A broadcast weight: every output channel equals channel 0.
  const Tensor w1 = w.broadcast_to(Shape{3, 2, 2, 2});
  const Tensor y = conv_general(x, w1);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 1, 2}));
  EXPECT_EQ(row_values<float>(y), (std::vector<float>{expected[0], expected[1], expected[0], expected[1], expected[0], expected[1]}));
}

TYPED_TEST(StructuredOps, ConvGeneralRejectsBadShapesAndOptionsBeforeAnyEffect) {
  const Tensor x = make_tensor<TypeParam>(std::vector<float>(16, 1.0f), Shape{1, 4, 4});
  const Tensor w = make_tensor<TypeParam>(std::vector<float>(8, 1.0f), Shape{2, 2, 2});  // C_in/groups = 2
  const auto vx = x.carrier()->version(), vw = w.carrier()->version();
  const ConvOptions g2{std::nullopt, std::nullopt, std::nullopt, 2};
  EXPECT_NO_THROW(conv_general(x, w, g2));
  EXPECT_THROW_EXACTLY(conv_general(x, w), ValueError);  // groups 1: weight needs 4 channels
  EXPECT_THROW_EXACTLY(conv_general(make_tensor<TypeParam>({1.0f, 2.0f}, Shape{1, 2}), w), ValueError);  // rank < 3
  EXPECT_THROW_EXACTLY(conv_general(x, make_tensor<TypeParam>({1.0f, 2.0f}, Shape{1, 2})),
                       ValueError);  // rank mismatch
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, std::nullopt, 0}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, std::nullopt, 3}),
                       ValueError);  // 3 ∤ 4
  EXPECT_THROW_EXACTLY(conv_general(x, make_tensor<TypeParam>(std::vector<float>(6, 1.0f), Shape{3, 2, 1}), g2),
                       ValueError);  // 2 ∤ 3
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{Ints{0}, std::nullopt, std::nullopt, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{Ints{1, 1}, std::nullopt, std::nullopt, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{Ints{}, std::nullopt, std::nullopt, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, Ints{-1}, std::nullopt, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, Ints{1, 1, 1}, std::nullopt, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, Ints{0}, 2}), ValueError);
  EXPECT_THROW_EXACTLY(conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, Ints{5}, 2}), ValueError);  // O = -1
  EXPECT_EQ(conv_general(x, w, ConvOptions{std::nullopt, std::nullopt, Ints{4}, 2}).shape(), (Shape{1, 2, 0}));  // O = 0
  EXPECT_THROW_EXACTLY(conv_general(x, make_tensor<TypeParam>(std::vector<float>{}, Shape{2, 2, 0}), g2),
                       ValueError);  // K = 0
  EXPECT_THROW_EXACTLY(
      conv_general(x, w, ConvOptions{std::nullopt, Ints{std::numeric_limits<std::int64_t>::max()}, std::nullopt, 2}),
      ValueError);  // the output extent overflows
  // The policy: Float32 operands only.
  const Tensor xi = make_tensor<TypeParam>(std::vector<std::int32_t>(16, 1), Shape{1, 4, 4});
  EXPECT_THROW_EXACTLY(conv_general(xi, w, g2), TypeError);
  EXPECT_EQ(x.carrier()->version(), vx);
  EXPECT_EQ(w.carrier()->version(), vw);
}

TYPED_TEST(StructuredOps, ConvGeneralCallEntryDocumentsAndReadsEveryOption) {
  const CallableOperation* entry = find_callable("conv_general");
  ASSERT_NE(entry, nullptr);
  std::vector<std::string> names;
  for (const OptionDoc& o : entry->options) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"stride", "padding", "dilation", "groups"}));
  std::vector<float> xs(10);
  std::iota(xs.begin(), xs.end(), 1.0f);
  const Tensor x = make_tensor<TypeParam>(xs, Shape{1, 1, 10});
  const Tensor w = make_tensor<TypeParam>({1.0f, 1.0f, 1.0f}, Shape{1, 1, 3});
  const std::vector<CallOperand> ops{x, w};
  const CallResult r = call_operation("conv_general", ops,
                                      {{"stride", std::int64_t{3}}, {"padding", Ints{2, 1}}, {"dilation", Ints{2}}, {"groups", std::int64_t{1}}});
  EXPECT_EQ(r.plans.front(), resolve_operation_plan("conv_general", {DType::Float32(), DType::Float32()}));
  EXPECT_EQ(TypedTensor<float>(r.results.front()).values(), (std::vector<float>{4, 12, 21}));
  EXPECT_THROW_EXACTLY(call_operation("conv_general", ops, {{"stride", true}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("conv_general", ops, {{"groups", Ints{1}}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("conv_general", ops, {{"strides", Ints{1}}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("conv_general", ops, {{"stride", Ints{0}}}), ValueError);
  EXPECT_THROW_EXACTLY(call_operation("conv_general", ops, {}, &DType::Float64()), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("conv_general", std::vector<CallOperand>{x}, {}), TypeError);
}

// ---------------------------------------------------------------- gather

TYPED_TEST(StructuredOps, GatherFollowsTorchGather) {
  // data[i][j] = 10 i + j, shape (2, 3).
  const Tensor data = rows<TypeParam>(std::vector<float>{0, 1, 2, 10, 11, 12}, {2, 3});
  const Tensor by_col = gather(data, ints<TypeParam>({2, 0, 1, 1}, {2, 2}), 1);
  EXPECT_EQ(by_col.shape(), (Shape{2, 2}));
  EXPECT_EQ(row_values<float>(by_col), (std::vector<float>{2, 0, 11, 11}));  // out[i][j] = data[i][idx[i][j]]
  const Tensor by_row = gather(data, ints<TypeParam>({1, 0, 1}, {1, 3}), 0);
  EXPECT_EQ(row_values<float>(by_row), (std::vector<float>{10, 1, 12}));  // out[i][j] = data[idx[i][j]][j]
  // Negative axis counts from the end; indices may be longer than data on the axis.
  EXPECT_EQ(row_values<float>(gather(data, ints<TypeParam>({2, 2, 2, 2, 0}, {1, 5}), -1)),
            (std::vector<float>{2, 2, 2, 2, 0}));
  EXPECT_TRUE(gather(data, ints<TypeParam>({}, {0, 3}), 0).shape() == (Shape{0, 3}));
}

TYPED_TEST(StructuredOps, GatherCopiesValuesBitForBit) {
  const Tensor data = make_tensor<TypeParam>({-0.0f, kNaN, -kInf, std::numeric_limits<float>::denorm_min()}, Shape{4});
  const std::vector<float> v = TypedTensor<float>(gather(data, ints<TypeParam>({0, 1, 2, 3, 0}, {5}), 0)).values();
  EXPECT_TRUE(negative_zero(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -kInf);
  EXPECT_EQ(v[3], std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(negative_zero(v[4]));
}

TYPED_TEST(StructuredOps, GatherOnRankZeroTakesAxisZeroOrMinusOne) {
  const Tensor data = make_tensor<TypeParam>({7.5f}, Shape{});
  const Tensor idx = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{0}, Shape{});
  const Tensor y = gather(data, idx, -1);
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(TypedTensor<float>(y).at_ordinal(0), 7.5f);
  EXPECT_THROW_EXACTLY(gather(data, idx, 1), ValueError);
  EXPECT_THROW_EXACTLY(gather(data, make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1}, Shape{}), 0),
                       IndexError);
}

TYPED_TEST(StructuredOps, GatherOutOfRangeIndexIsIndexErrorAndChangesNothing) {
  const Tensor data = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const auto v = data.carrier()->version();
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 3}, {2}), 0), IndexError);
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({-1}, {1}), 0), IndexError);  // no negative indices
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({std::numeric_limits<std::int32_t>::min()}, {1}), 0), IndexError);
  EXPECT_THROW_EXACTLY(
      gather(make_tensor<TypeParam>(std::vector<float>{}, Shape{2, 0}), ints<TypeParam>({0, 0}, {2, 1}), 1),
      IndexError);  // an empty axis has no valid index
  EXPECT_EQ(data.carrier()->version(), v);
  EXPECT_EQ(TypedTensor<float>(data).values(), (std::vector<float>{1, 2, 3}));
}

TYPED_TEST(StructuredOps, GatherRejectsBadShapesAxesAndDtypes) {
  const Tensor data = rows<TypeParam>(std::vector<float>{0, 1, 2, 10, 11, 12}, {2, 3});
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 0}, {2}), 0), ValueError);               // rank mismatch
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 0, 0, 0}, {1, 4}), 0), ValueError);      // 4 > 3 on axis 1
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 0, 0}, {3, 1}), 1), ValueError);         // 3 > 2 on axis 0
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 0}, {1, 2}), 2), ValueError);            // axis out of range
  EXPECT_THROW_EXACTLY(gather(data, ints<TypeParam>({0, 0}, {1, 2}), -3), ValueError);
  EXPECT_THROW_EXACTLY(gather(data, data, 0), TypeError);                                         // Float32 indices
  EXPECT_THROW_EXACTLY(gather(ints<TypeParam>({0, 0}, {1, 2}), ints<TypeParam>({0, 0}, {1, 2}), 0),
                       TypeError);  // Int32 data
}

TYPED_TEST(StructuredOps, GatherCallEntryRequiresAxis) {
  const Tensor data = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const std::vector<CallOperand> ops{data, ints<TypeParam>({2, 0}, {2})};
  EXPECT_THROW_EXACTLY(call_operation("gather", ops, {}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("gather", ops, {{"axis", std::monostate{}}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("gather", ops, {{"axis", 0.5}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("gather", ops, {{"axis", std::int64_t{0}}, {"dim", std::int64_t{0}}}), TypeError);
  const CallResult r = call_operation("gather", ops, {{"axis", std::int64_t{0}}});
  EXPECT_EQ(TypedTensor<float>(r.results.front()).values(), (std::vector<float>{3, 1}));
  EXPECT_EQ(find_callable("gather")->options.front().default_value, "required");
}

// ---------------------------------------------------------------- scatter

TYPED_TEST(StructuredOps, ScatterFollowsTorchScatterAndLeavesDataUnchanged) {
  // torch.zeros(3, 5).scatter_(0, [[0, 1, 2, 0]], arange(1, 11).reshape(2, 5)).
  const Tensor data = rows<TypeParam>(std::vector<float>(15, 0.0f), {3, 5});
  const Tensor src = rows<TypeParam>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  const auto v = data.carrier()->version();
  const Tensor y = scatter(data, ints<TypeParam>({0, 1, 2, 0}, {1, 4}), src, 0);
  EXPECT_EQ(y.shape(), (Shape{3, 5}));
  EXPECT_EQ(row_values<float>(y), (std::vector<float>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  EXPECT_FALSE(y.carrier() == data.carrier());
  EXPECT_EQ(data.carrier()->version(), v);
  EXPECT_EQ(row_values<float>(data), std::vector<float>(15, 0.0f));
  // Along axis 1: out[i][idx[i][j]] = src[i][j].
  const Tensor z = scatter(data, ints<TypeParam>({4, 3, 0, 1}, {2, 2}), src, 1);
  EXPECT_EQ(row_values<float>(z), (std::vector<float>{0, 0, 0, 2, 1, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TYPED_TEST(StructuredOps, ScatterWithDuplicateIndicesKeepsTheLastInLogicalOrder) {
  const Tensor data = make_tensor<TypeParam>({-1.0f, -1.0f, -1.0f}, Shape{3});
  const Tensor src = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{4});
  EXPECT_EQ(TypedTensor<float>(scatter(data, ints<TypeParam>({0, 2, 0, 2}, {4}), src, 0)).values(),
            (std::vector<float>{3, -1, 4}));
  // 2-d: logical order is first axis fastest, so (1, 0) comes after (0, 0).
  const Tensor d2 = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{1, 2});
  const Tensor s2 = rows<TypeParam>(std::vector<float>{10, 20, 30, 40}, {2, 2});
  const Tensor i2 = ints<TypeParam>({0, 0, 0, 0}, {2, 2});
  EXPECT_EQ(row_values<float>(scatter(d2, i2, s2, 0)), (std::vector<float>{30, 40}));
}

TYPED_TEST(StructuredOps, ScatterAddAddsInAscendingLogicalOrderWithBinary32Rounding) {
  // 0 + 2^24 = 2^24; + 1 -> 2^24 (tie to even); + 1 -> 2^24. In the reverse
  // order the result would be 2^24 + 2.
  const float big = 16777216.0f;
  const Tensor data = make_tensor<TypeParam>({0.0f, 5.0f}, Shape{2});
  const Tensor src = make_tensor<TypeParam>({big, 1.0f, 1.0f, 0.25f}, Shape{4});
  EXPECT_EQ(TypedTensor<float>(scatter_add(data, ints<TypeParam>({0, 0, 0, 1}, {4}), src, 0)).values(),
            (std::vector<float>{big, 5.25f}));
  // The running value starts at the data element itself: -0.0 + -0.0 = -0.0,
  // and an untouched element is copied (signed zero kept).
  const Tensor zeros = make_tensor<TypeParam>({-0.0f, -0.0f}, Shape{2});
  const std::vector<float> r = TypedTensor<float>(
      scatter_add(zeros, ints<TypeParam>({0}, {1}), make_tensor<TypeParam>({-0.0f}, Shape{1}), 0)).values();
  EXPECT_TRUE(negative_zero(r[0]));
  EXPECT_TRUE(negative_zero(r[1]));
  // Specials propagate.
  const std::vector<float> s = TypedTensor<float>(scatter_add(make_tensor<TypeParam>({kInf, 1.0f}, Shape{2}),
                                                              ints<TypeParam>({0, 1, 1}, {3}),
                                                              make_tensor<TypeParam>({-kInf, 3.0e38f, 3.0e38f}, Shape{3}), 0)).values();
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], kInf);
}

TYPED_TEST(StructuredOps, ScatterAcceptsLargerSrcAndBroadcastViews) {
  // src may be larger than indices in every axis; only src[p] for p in indices is read.
  const Tensor data = make_tensor<TypeParam>(std::vector<float>(6, 0.0f), Shape{2, 3});
  const Tensor src = rows<TypeParam>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  const Tensor y = scatter_add(data, ints<TypeParam>({2, 2}, {1, 2}), src, 1);
  EXPECT_EQ(row_values<float>(y), (std::vector<float>{0, 0, 3, 0, 0, 0}));
  // A broadcast src and broadcast indices.
  const Tensor bsrc = make_tensor<TypeParam>({0.5f}, Shape{1, 1}).broadcast_to(Shape{2, 3});
  const Tensor bidx = ints<TypeParam>({1}, {1, 1}).broadcast_to(Shape{2, 3});
  EXPECT_EQ(row_values<float>(scatter_add(data, bidx, bsrc, 1)), (std::vector<float>{0, 1.5f, 0, 0, 1.5f, 0}));
}

TYPED_TEST(StructuredOps, ScatterOutOfRangeIndexIsIndexErrorAndChangesNothing) {
  const Tensor data = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor src = make_tensor<TypeParam>({9.0f, 9.0f}, Shape{2});
  const auto vd = data.carrier()->version(), vs = src.carrier()->version();
  EXPECT_THROW_EXACTLY(scatter(data, ints<TypeParam>({0, 3}, {2}), src, 0), IndexError);
  EXPECT_THROW_EXACTLY(scatter_add(data, ints<TypeParam>({-1, 0}, {2}), src, 0), IndexError);
  EXPECT_THROW_EXACTLY(scatter_add(data, ints<TypeParam>({1, std::numeric_limits<std::int32_t>::max()}, {2}), src, 0),
                       IndexError);
  EXPECT_EQ(data.carrier()->version(), vd);
  EXPECT_EQ(src.carrier()->version(), vs);
  EXPECT_EQ(TypedTensor<float>(data).values(), (std::vector<float>{1, 2, 3}));
}

TYPED_TEST(StructuredOps, ScatterRejectsBadShapesAxesAndDtypes) {
  const Tensor data = make_tensor<TypeParam>(std::vector<float>(6, 0.0f), Shape{2, 3});
  const Tensor src = make_tensor<TypeParam>(std::vector<float>(6, 1.0f), Shape{2, 3});
  for (auto op : {scatter, scatter_add}) {  // each with no caller output: op(..., {})
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0, 0}, {2}), src, 0, {}), ValueError);                  // rank mismatch
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0, 0}, {1, 2}), make_tensor<TypeParam>({1.0f}, Shape{1}), 0, {}),
                         ValueError);                                                                 // src rank
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0, 0, 0, 0}, {1, 4}), make_tensor<TypeParam>(std::vector<float>(4, 1.0f), Shape{1, 4}), 0, {}),
                         ValueError);                                                                 // 4 > 3 on axis 1
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0, 0, 0}, {3, 1}), src, 1, {}),
                         ValueError);           // src smaller than indices
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0}, {1, 1}), src, 2, {}),
                         ValueError);                 // axis out of range
    EXPECT_THROW_EXACTLY(op(data, src, src, 0, {}), TypeError);                                           // Float32 indices
    EXPECT_THROW_EXACTLY(op(data, ints<TypeParam>({0}, {1, 1}), ints<TypeParam>({0}, {1, 1}), 0, {}),
                         TypeError);  // Int32 src
  }
  // Indices longer than data on the axis itself are fine.
  EXPECT_NO_THROW(scatter(data, ints<TypeParam>({0, 1, 0, 1}, {4, 1}), make_tensor<TypeParam>(std::vector<float>(4, 1.0f), Shape{4, 1}), 0));
}

TYPED_TEST(StructuredOps, ScatterCallEntriesRequireAxis) {
  const Tensor data = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{2});
  const Tensor src = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const std::vector<CallOperand> ops{data, ints<TypeParam>({1, 1}, {2}), src};
  for (const char* name : {"scatter", "scatter_add"}) {
    EXPECT_THROW_EXACTLY(call_operation(name, ops, {}), TypeError) << name;
    EXPECT_THROW_EXACTLY(call_operation(name, std::vector<CallOperand>{data, src}, {{"axis", std::int64_t{0}}}),
                         TypeError);
  }
  EXPECT_EQ(TypedTensor<float>(call_operation("scatter", ops, {{"axis", std::int64_t{0}}}).results.front()).values(),
            (std::vector<float>{0, 2}));
  EXPECT_EQ(TypedTensor<float>(call_operation("scatter_add", ops, {{"axis", std::int64_t{-1}}}).results.front()).values(),
            (std::vector<float>{0, 3}));
}

// ---------------------------------------------------------------- both carriers

template <class C>
std::string index_error_message(const std::string& op) {
  const Tensor data = make_tensor<C>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor idx = make_tensor<C>(std::initializer_list<std::int32_t>{1, 5, -2}, Shape{3});
  try {
    if (op == "gather") gather(data, idx, 0);
    else if (op == "scatter") scatter(data, idx, data, 0);
    else scatter_add(data, idx, data, 0);
  } catch (const IndexError& e) {
    EXPECT_ERROR_TYPE_IS(e, IndexError);
    return e.what();
  }
  return "no error";
}

TEST(StructuredOpsAgreement, IndexErrorMessageIsTheSameOnBothCarriers) {
  for (const std::string op : {"gather", "scatter", "scatter_add"}) {
    EXPECT_EQ(index_error_message<Generic>(op), index_error_message<CPU>(op));
    // The first bad index in logical order is reported.
    EXPECT_EQ(index_error_message<Generic>(op), op + ": index 5 is out of range for axis 0 of extent 3");
  }
}

}  // namespace
