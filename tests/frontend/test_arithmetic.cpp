// Semantic tests of the arithmetic family (docs/operations/arithmetic.md):
// sub, div, pow, rem, maximum, minimum, clamp, eq, ne, lt, le, logical_not,
// select. Every test runs on Generic (the reference) and on CPU.
#include <gtest/gtest.h>

#include "support/shipped_types.h"
#include <strideweave/strideweave.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

template <class C>
class ArithmeticOps : public ::testing::Test {};
using Carriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(ArithmeticOps, Carriers);

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, const Output&);

template <class T>
std::vector<T> vals(const Tensor& t) {
  return TypedTensor<T>(t).values();
}

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
bool is_pos_zero(float f) { return f == 0.0f && !std::signbit(f); }
bool is_neg_zero(float f) { return f == 0.0f && std::signbit(f); }

template <class C>
Tensor f32(std::initializer_list<float> v, const Shape& s) {
  return make_tensor<C>(v, s);
}
template <class C>
Tensor f32(std::initializer_list<float> v) {
  return make_tensor<C>(v, Shape{static_cast<std::int64_t>(v.size())});
}
template <class C>
Tensor i32(std::initializer_list<std::int32_t> v) {
  return make_tensor<C>(v, Shape{static_cast<std::int64_t>(v.size())});
}
template <class C>
Tensor b8(std::initializer_list<bool> v, const Shape& s) {
  return make_tensor<C>(v, s);
}

// ---------------------------------------------------------------- sub

TYPED_TEST(ArithmeticOps, SubInt32IsExactAndChecked) {
  const Tensor a = i32<TypeParam>({5, -3, kMin, kMax, -1});
  const Tensor b = i32<TypeParam>({7, -3, 0, kMax, kMax});
  const Tensor d = sub(a, b);
  EXPECT_EQ(d.dtype(), DType::Int32());
  EXPECT_EQ(vals<std::int32_t>(d), (std::vector<std::int32_t>{-2, 0, kMin, 0, kMin}));
  EXPECT_THROW_EXACTLY(sub(i32<TypeParam>({kMin}), i32<TypeParam>({1})), OverflowError);
  EXPECT_THROW_EXACTLY(sub(i32<TypeParam>({kMax}), i32<TypeParam>({-1})), OverflowError);
  EXPECT_THROW_EXACTLY(sub(i32<TypeParam>({0}), i32<TypeParam>({kMin})), OverflowError);  // -INT32_MIN
}

TYPED_TEST(ArithmeticOps, SubWithAFloat32OperandIsBinary32) {
  const Tensor a = f32<TypeParam>({kInf, 0.0f, -0.0f, 1.0f, kNaN});
  const Tensor b = f32<TypeParam>({kInf, 0.0f, 0.0f, 1.0f, 1.0f});
  const std::vector<float> r = vals<float>(sub(a, b));
  EXPECT_TRUE(std::isnan(r[0]));  // inf - inf
  EXPECT_TRUE(is_pos_zero(r[1]));
  EXPECT_TRUE(is_neg_zero(r[2]));  // -0 - +0 = -0
  EXPECT_TRUE(is_pos_zero(r[3]));  // x - x = +0
  EXPECT_TRUE(std::isnan(r[4]));
  // Int32 converts to Float32 first (16777217 rounds to 16777216).
  const Tensor m = sub(i32<TypeParam>({16777217, kMax}), f32<TypeParam>({0.0f, 0.0f}));
  EXPECT_EQ(m.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(m), (std::vector<float>{16777216.0f, 2147483648.0f}));
}

TYPED_TEST(ArithmeticOps, SubBroadcastsAndKeepsEmptyExtents) {
  const Tensor a = f32<TypeParam>({1, 2, 3, 4, 5, 6}, Shape{2, 3});  // rows (1,3,5), (2,4,6)
  const Tensor b = f32<TypeParam>({10, 20}, Shape{2, 1});
  const Tensor d = sub(a, b);
  EXPECT_EQ(d.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(d), (std::vector<float>{-9, -18, -7, -16, -5, -14}));
  const Tensor e = make_tensor<TypeParam>(std::vector<float>{}, Shape{0, 3});
  EXPECT_EQ(sub(e, f32<TypeParam>({1, 2, 3})).shape(), (Shape{0, 3}));
}

// ---------------------------------------------------------------- div

TYPED_TEST(ArithmeticOps, DivIsAlwaysFloat32WithIeeeSpecials) {
  const Tensor a = i32<TypeParam>({7, 1, -1, 0, 16777217});
  const Tensor b = i32<TypeParam>({2, 0, 0, 0, 1});
  const Tensor q = div(a, b);
  EXPECT_EQ(q.dtype(), DType::Float32());
  const std::vector<float> r = vals<float>(q);
  EXPECT_EQ(r[0], 3.5f);
  EXPECT_EQ(r[1], kInf);
  EXPECT_EQ(r[2], -kInf);
  EXPECT_TRUE(std::isnan(r[3]));  // 0/0
  EXPECT_EQ(r[4], 16777216.0f);   // converted before dividing
  const std::vector<float> z =
      vals<float>(div(f32<TypeParam>({1.0f, kInf, 1.0f}), f32<TypeParam>({-0.0f, kInf, 3.0f})));
  EXPECT_EQ(z[0], -kInf);
  EXPECT_TRUE(std::isnan(z[1]));
  EXPECT_EQ(z[2], 1.0f / 3.0f);  // one binary32 division
}

// ---------------------------------------------------------------- pow

TYPED_TEST(ArithmeticOps, PowFloat32FollowsCPowfSpecialCases) {
  const Tensor x = f32<TypeParam>({kNaN, 1.0f, -1.0f, -8.0f, 0.0f, -0.0f, 2.0f, -2.0f, 4.0f, 0.5f});
  const Tensor y = f32<TypeParam>({0.0f, kNaN, kInf, 1.0f / 3.0f, -1.0f, -1.0f, 0.5f, 3.0f, -0.5f, -kInf});
  const std::vector<float> r = vals<float>(pow(x, y));
  EXPECT_EQ(r[0], 1.0f);          // pow(NaN, 0) = 1
  EXPECT_EQ(r[1], 1.0f);          // pow(1, NaN) = 1
  EXPECT_EQ(r[2], 1.0f);          // pow(-1, inf) = 1
  EXPECT_TRUE(std::isnan(r[3]));  // negative base, non-integer exponent
  EXPECT_EQ(r[4], kInf);          // pow(+0, -1)
  EXPECT_EQ(r[5], -kInf);         // pow(-0, odd negative)
  EXPECT_EQ(r[6], std::pow(2.0f, 0.5f));
  EXPECT_EQ(r[7], -8.0f);
  EXPECT_EQ(r[8], 0.5f);
  EXPECT_EQ(r[9], kInf);  // pow(0.5, -inf)
  // Infinite and zero bases keep the sign only for odd integer exponents.
  const Tensor xi = f32<TypeParam>({-kInf, -kInf, -kInf, kInf, -0.0f, -0.0f, 0.5f});
  const Tensor yi = f32<TypeParam>({-1.0f, 3.0f, 2.0f, -2.0f, 3.0f, 2.0f, kInf});
  const std::vector<float> ri = vals<float>(pow(xi, yi));
  EXPECT_TRUE(is_neg_zero(ri[0]));
  EXPECT_EQ(ri[1], -kInf);
  EXPECT_EQ(ri[2], kInf);
  EXPECT_TRUE(is_pos_zero(ri[3]));
  EXPECT_TRUE(is_neg_zero(ri[4]));
  EXPECT_TRUE(is_pos_zero(ri[5]));
  EXPECT_TRUE(is_pos_zero(ri[6]));
  // Tensor/tensor pow is Float32 even for two Int32 operands.
  const Tensor ii = pow(i32<TypeParam>({2, 3}), i32<TypeParam>({10, -1}));
  EXPECT_EQ(ii.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(ii), (std::vector<float>{1024.0f, std::pow(3.0f, -1.0f)}));
}

TYPED_TEST(ArithmeticOps, PowInt32BaseWithIntegerExponentIsExact) {
  const Tensor b = i32<TypeParam>({2, -3, 0, 1, -1, 7});
  const Tensor p3 = pow(b, 3);
  EXPECT_EQ(p3.dtype(), DType::Int32());
  EXPECT_EQ(vals<std::int32_t>(p3), (std::vector<std::int32_t>{8, -27, 0, 1, -1, 343}));
  EXPECT_EQ(vals<std::int32_t>(pow(b, 0)), (std::vector<std::int32_t>{1, 1, 1, 1, 1, 1}));  // 0**0 = 1
  EXPECT_EQ(vals<std::int32_t>(pow(b, 1)), (std::vector<std::int32_t>{2, -3, 0, 1, -1, 7}));
  EXPECT_EQ(vals<std::int32_t>(pow(i32<TypeParam>({-2}), 31)), (std::vector<std::int32_t>{kMin}));
  EXPECT_EQ(vals<std::int32_t>(pow(i32<TypeParam>({2}), 30)), (std::vector<std::int32_t>{1 << 30}));
  EXPECT_EQ(vals<std::int32_t>(pow(i32<TypeParam>({46340}), 2)), (std::vector<std::int32_t>{2147395600}));
  EXPECT_EQ(vals<std::int32_t>(pow(i32<TypeParam>({kMin, kMax}), 1)), (std::vector<std::int32_t>{kMin, kMax}));
}

TYPED_TEST(ArithmeticOps, PowInt32LargeExponentsExitEarlyOrRaiseOverflow) {
  // 2**31-1 is the largest exact exponent; bases -1, 0, 1 answer at once.
  const Tensor u = i32<TypeParam>({-1, 0, 1});
  EXPECT_EQ(vals<std::int32_t>(pow(u, kMax)), (std::vector<std::int32_t>{-1, 0, 1}));
  EXPECT_EQ(vals<std::int32_t>(pow(u, kMax - 1)), (std::vector<std::int32_t>{1, 0, 1}));
  EXPECT_THROW_EXACTLY(pow(i32<TypeParam>({2}), 31), OverflowError);
  EXPECT_THROW_EXACTLY(pow(i32<TypeParam>({-2}), 32), OverflowError);
  EXPECT_THROW_EXACTLY(pow(i32<TypeParam>({46341}), 2), OverflowError);
  EXPECT_THROW_EXACTLY(pow(i32<TypeParam>({1, 2}), kMax), OverflowError);
  EXPECT_THROW_EXACTLY(pow(i32<TypeParam>({kMin}), 2), OverflowError);
}

TYPED_TEST(ArithmeticOps, PowInt32WithOtherExponentsIsFloat32) {
  const Tensor b = i32<TypeParam>({2, 4});
  const Tensor neg = pow(b, -1);
  EXPECT_EQ(neg.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(neg), (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(vals<float>(pow(b, 0.5)), (std::vector<float>{std::pow(2.0f, 0.5f), 2.0f}));
  EXPECT_EQ(vals<float>(pow(b, true)), (std::vector<float>{2.0f, 4.0f}));  // bool is a weak float
  const Tensor big = pow(b, 1LL << 31);  // above 2**31-1: Float32, never OverflowError
  EXPECT_EQ(big.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(big), (std::vector<float>{kInf, kInf}));
  EXPECT_EQ(pow(f32<TypeParam>({2.0f}), 3).dtype(), DType::Float32());
}

TYPED_TEST(ArithmeticOps, PowScalarBaseTakesTheTensorShape) {
  const Tensor e = f32<TypeParam>({0, 1, 2, -1, 0.5f, kNaN}, Shape{2, 3});
  const Tensor r = pow(2, e);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::Float32());
  const std::vector<float> v = vals<float>(r);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 2.0f);
  EXPECT_EQ(v[2], 4.0f);
  EXPECT_EQ(v[3], 0.5f);
  EXPECT_EQ(v[4], std::pow(2.0f, 0.5f));
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(vals<float>(pow(1, f32<TypeParam>({kNaN}))), (std::vector<float>{1.0f}));  // pow(1, NaN) = 1
  EXPECT_EQ(vals<float>(pow(-2, i32<TypeParam>({3, 2}))),
            (std::vector<float>{-8.0f, 4.0f}));                                          // Int32 exponents convert
  EXPECT_EQ(vals<float>(pow(0.1, f32<TypeParam>({1.0f}))), (std::vector<float>{0.1f}));  // the base rounds to binary32
}

// ---------------------------------------------------------------- rem

TYPED_TEST(ArithmeticOps, RemIsTruncatedFmodNotPythonModulo) {
  const Tensor a = f32<TypeParam>({-7.0f, 7.0f, 5.5f, -0.0f, 1.0f, kInf, 5.0f, -5.0f, 1e30f, kNaN});
  const Tensor b = f32<TypeParam>({3.0f, -3.0f, 2.0f, 1.0f, 0.0f, 1.0f, kInf, -kInf, 3.0f, 1.0f});
  const std::vector<float> r = vals<float>(rem(a, b));
  EXPECT_EQ(r[0], -1.0f);  // Python's -7 % 3 would be 2
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_EQ(r[2], 1.5f);
  EXPECT_TRUE(is_neg_zero(r[3]));  // sign of the dividend
  EXPECT_TRUE(std::isnan(r[4]));   // rem(x, 0)
  EXPECT_TRUE(std::isnan(r[5]));   // rem(inf, y)
  EXPECT_EQ(r[6], 5.0f);           // rem(x, inf) = x
  EXPECT_EQ(r[7], -5.0f);
  EXPECT_EQ(r[8], std::fmod(1e30f, 3.0f));  // exact, not (a - trunc(a/b)*b)
  EXPECT_TRUE(std::isnan(r[9]));
}

// ---------------------------------------------------------------- maximum / minimum

TYPED_TEST(ArithmeticOps, MaximumPropagatesNaNAndPrefersPositiveZero) {
  const Tensor a = f32<TypeParam>({kNaN, 1.0f, -0.0f, 0.0f, -0.0f, -kInf, 3.0f});
  const Tensor b = f32<TypeParam>({1.0f, kNaN, 0.0f, -0.0f, -0.0f, -1.0f, 2.0f});
  const std::vector<float> r = vals<float>(maximum(a, b));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(is_pos_zero(r[2]));
  EXPECT_TRUE(is_pos_zero(r[3]));
  EXPECT_TRUE(is_neg_zero(r[4]));
  EXPECT_EQ(r[5], -1.0f);
  EXPECT_EQ(r[6], 3.0f);
}

TYPED_TEST(ArithmeticOps, MinimumPropagatesNaNAndPrefersNegativeZero) {
  const Tensor a = f32<TypeParam>({kNaN, 1.0f, -0.0f, 0.0f, 0.0f, kInf, 3.0f});
  const Tensor b = f32<TypeParam>({1.0f, kNaN, 0.0f, -0.0f, 0.0f, 1.0f, 2.0f});
  const std::vector<float> r = vals<float>(minimum(a, b));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(is_neg_zero(r[2]));
  EXPECT_TRUE(is_neg_zero(r[3]));
  EXPECT_TRUE(is_pos_zero(r[4]));
  EXPECT_EQ(r[5], 1.0f);
  EXPECT_EQ(r[6], 2.0f);
}

TYPED_TEST(ArithmeticOps, MaximumAndMinimumReturnTheFirstNaNQuieted) {
  const float snan = std::bit_cast<float>(0xFFA00001u);  // negative signalling NaN with a payload
  const float qnan = std::bit_cast<float>(0x7FC00002u);
  const Tensor a = f32<TypeParam>({snan, 1.0f, qnan});
  const Tensor b = f32<TypeParam>({qnan, snan, snan});
  const std::vector<float> mx = vals<float>(maximum(a, b)), mn = vals<float>(minimum(a, b));
  EXPECT_EQ(bits(mx[0]), 0xFFE00001u);
  EXPECT_EQ(bits(mx[1]), 0xFFE00001u);
  EXPECT_EQ(bits(mx[2]), 0x7FC00002u);
  EXPECT_EQ(bits(mn[0]), 0xFFE00001u);
  EXPECT_EQ(bits(mn[1]), 0xFFE00001u);
  EXPECT_EQ(bits(mn[2]), 0x7FC00002u);
}

TYPED_TEST(ArithmeticOps, Float32OnlyOperationsRejectInt32WithTypeError) {
  const Tensor i = i32<TypeParam>({1, 2});
  const Tensor f = f32<TypeParam>({1.0f, 2.0f});
  for (BinaryFn op :
       {BinaryFn(maximum), BinaryFn(minimum), BinaryFn(rem), BinaryFn(eq), BinaryFn(ne), BinaryFn(lt), BinaryFn(le)}) {
    EXPECT_THROW_EXACTLY(op(i, f, {}), TypeError);
    EXPECT_THROW_EXACTLY(op(f, i, {}), TypeError);
  }
  EXPECT_THROW_EXACTLY(logical_not(i), TypeError);
  EXPECT_THROW_EXACTLY(clamp(i, 0, 1), TypeError);
  EXPECT_THROW_EXACTLY(clamp(f, i, 1), TypeError);
  EXPECT_THROW_EXACTLY(clamp(f, 0, i), TypeError);
}

// ---------------------------------------------------------------- comparisons

TYPED_TEST(ArithmeticOps, ComparisonsFollowIeeeAndReturnBool) {
  const Tensor a = f32<TypeParam>({1.0f, kNaN, -0.0f, 1.0f, 2.0f, -kInf, kNaN});
  const Tensor b = f32<TypeParam>({1.0f, kNaN, 0.0f, 2.0f, 1.0f, -kInf, 1.0f});
  const Tensor e = eq(a, b);
  EXPECT_EQ(e.dtype(), DType::Bool());
  EXPECT_EQ(vals<bool>(e), (std::vector<bool>{true, false, true, false, false, true, false}));
  EXPECT_EQ(vals<bool>(ne(a, b)), (std::vector<bool>{false, true, false, true, true, false, true}));
  EXPECT_EQ(vals<bool>(lt(a, b)), (std::vector<bool>{false, false, false, true, false, false, false}));
  EXPECT_EQ(vals<bool>(le(a, b)), (std::vector<bool>{true, false, true, true, false, true, false}));
}

TYPED_TEST(ArithmeticOps, ComparisonsBroadcast) {
  const Tensor a = f32<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3, 1});
  const Tensor b = f32<TypeParam>({2.0f, 3.0f}, Shape{1, 2});
  const Tensor r = lt(a, b);
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  // (i, j) at ordinal i + 3j: a_i < b_j.
  EXPECT_EQ(vals<bool>(r), (std::vector<bool>{true, false, false, true, true, false}));
}

TYPED_TEST(ArithmeticOps, LogicalNotIsEqualToZero) {
  const Tensor x = f32<TypeParam>({0.0f, -0.0f, 1.0f, kNaN, -kInf, 1e-45f}, Shape{2, 3});
  const Tensor r = logical_not(x);
  EXPECT_EQ(r.dtype(), DType::Bool());
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<bool>(r), (std::vector<bool>{true, true, false, false, false, false}));
  EXPECT_THROW_EXACTLY(logical_not(b8<TypeParam>({true}, Shape{1})), NotImplementedError);  // no Bool arithmetic
}

// ---------------------------------------------------------------- clamp

TYPED_TEST(ArithmeticOps, ClampIsMinimumOfMaximum) {
  const Tensor x = f32<TypeParam>({-2.0f, 0.5f, 3.0f, kNaN, -0.0f, kInf, -kInf});
  const std::vector<float> r = vals<float>(clamp(x, 0, 1));
  EXPECT_EQ(r[0], 0.0f);
  EXPECT_EQ(r[1], 0.5f);
  EXPECT_EQ(r[2], 1.0f);
  EXPECT_TRUE(std::isnan(r[3]));
  EXPECT_TRUE(is_pos_zero(r[4]));  // maximum(-0, +0) = +0
  EXPECT_EQ(r[5], 1.0f);
  EXPECT_EQ(r[6], 0.0f);
  // lo > hi: every element becomes hi.
  EXPECT_EQ(vals<float>(clamp(f32<TypeParam>({-5.0f, 1.5f, 5.0f}), 2, 1)), (std::vector<float>{1.0f, 1.0f, 1.0f}));
  // minimum(+0, -0) = -0 when hi is -0.
  EXPECT_TRUE(is_neg_zero(vals<float>(clamp(f32<TypeParam>({0.0f}), -1, -0.0))[0]));
}

TYPED_TEST(ArithmeticOps, ClampNaNBoundGivesNaN) {
  const Tensor x = f32<TypeParam>({-1.0f, 0.5f, 2.0f});
  for (float v : vals<float>(clamp(x, std::nan(""), 1))) EXPECT_TRUE(std::isnan(v));
  for (float v : vals<float>(clamp(x, 0, std::nan("")))) EXPECT_TRUE(std::isnan(v));
  const Tensor lo = f32<TypeParam>({0.0f, kNaN, 0.0f});
  const std::vector<float> r = vals<float>(clamp(x, lo, 1));
  EXPECT_EQ(r[0], 0.0f);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_EQ(r[2], 1.0f);
}

TYPED_TEST(ArithmeticOps, ClampWeakBoundsRoundToFloat32WithoutRangeCheck) {
  const Tensor x = f32<TypeParam>({-kInf, 3.0e38f, kInf, 0.1f});
  const Tensor r = clamp(x, -1e40, 1e40);  // +-1e40 round to +-inf
  EXPECT_EQ(r.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(r), (std::vector<float>{-kInf, 3.0e38f, kInf, 0.1f}));
  EXPECT_EQ(vals<float>(clamp(x, 0.1, 0.1)), (std::vector<float>{0.1f, 0.1f, 0.1f, 0.1f}));  // 0.1 -> 0.1f
  const WeakScalar huge = WeakScalar::integer(int128(1) << 100);  // an integer far outside Int32
  EXPECT_EQ(vals<float>(clamp(x, 0, huge)),
            (std::vector<float>{0.0f, std::ldexp(1.0f, 100), std::ldexp(1.0f, 100), 0.1f}));
}

TYPED_TEST(ArithmeticOps, ClampBroadcastsThreeWays) {
  const Tensor x = f32<TypeParam>({-5.0f, 0.0f, 5.0f}, Shape{3, 1, 1});
  const Tensor lo = f32<TypeParam>({-1.0f, 1.0f}, Shape{1, 2, 1});
  const Tensor hi = f32<TypeParam>({2.0f, 4.0f}, Shape{1, 1, 2});
  const Tensor r = clamp(x, lo, hi);
  EXPECT_EQ(r.shape(), (Shape{3, 2, 2}));
  // Ordinal i + 3j + 6k: clamp(x_i, lo_j, hi_k).
  EXPECT_EQ(vals<float>(r), (std::vector<float>{-1, 0, 2, 1, 1, 2, -1, 0, 4, 1, 1, 4}));
  // Mixed forms broadcast the tensors they have.
  EXPECT_EQ(clamp(x, lo, 3).shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(vals<float>(clamp(x, -1, hi)), (std::vector<float>{-1, 0, 2, -1, 0, 4}));
  EXPECT_EQ(clamp(f32<TypeParam>({1.0f}, Shape{}), lo, hi).shape(), (Shape{1, 2, 2}));
  EXPECT_THROW_EXACTLY(clamp(x, f32<TypeParam>({1, 2}, Shape{2, 1, 1}), hi), ValueError);  // 3 vs 2 on axis 0
}

// ---------------------------------------------------------------- select

TYPED_TEST(ArithmeticOps, SelectBroadcastsThreeWaysAndCopiesBits) {
  const Tensor c = b8<TypeParam>({true, false}, Shape{2, 1});
  const float payload = std::bit_cast<float>(0x7FC01234u);
  const Tensor a = f32<TypeParam>({-0.0f, payload, 3.0f}, Shape{1, 3});
  const Tensor b = f32<TypeParam>({9.0f}, Shape{});
  const Tensor r = select(c, a, b);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.dtype(), DType::Float32());
  const std::vector<float> v = vals<float>(r);  // ordinal i + 2j
  EXPECT_TRUE(is_neg_zero(v[0]));
  EXPECT_EQ(v[1], 9.0f);
  EXPECT_EQ(bits(v[2]), 0x7FC01234u);
  EXPECT_EQ(v[3], 9.0f);
  EXPECT_EQ(v[4], 3.0f);
  EXPECT_EQ(v[5], 9.0f);
}

TYPED_TEST(ArithmeticOps, SelectRequiresABoolConditionAndFloat32Values) {
  const Tensor c = b8<TypeParam>({true, false}, Shape{2});
  const Tensor f = f32<TypeParam>({1.0f, 2.0f});
  const Tensor i = i32<TypeParam>({1, 2});
  EXPECT_THROW_EXACTLY(select(f, f, f), TypeError);            // Float32 condition
  EXPECT_THROW_EXACTLY(select(i, f, f), TypeError);            // Int32 condition
  EXPECT_THROW_EXACTLY(select(c, i, f), TypeError);            // Int32 value
  EXPECT_THROW_EXACTLY(select(c, f, c), NotImplementedError);  // Bool outside the Bool slot
  EXPECT_THROW_EXACTLY(select(c, f, f32<TypeParam>({1.0f, 2.0f, 3.0f})), ValueError);
  EXPECT_EQ(vals<float>(select(c, f, f32<TypeParam>({7.0f, 8.0f}))), (std::vector<float>{1.0f, 8.0f}));
}

// ---------------------------------------------------------------- views and errors

TYPED_TEST(ArithmeticOps, OperandsMayBeStridedPermutedAndBroadcastViews) {
  const Tensor base = f32<TypeParam>({1, 2, 3, 4, 5, 6}, Shape{2, 3});       // (i,j) = 1 + i + 2j
  const Tensor t = base.permute({1, 0});                                     // (3,2): (j,i) = 1 + i + 2j
  const Tensor s = f32<TypeParam>({10, 0, 20, 0, 30, 0}).slice(0, 0, 6, 2);  // 10, 20, 30
  const Tensor r = sub(t, s.unsqueeze(1));
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(r), (std::vector<float>{-9, -17, -25, -8, -16, -24}));
  EXPECT_EQ(vals<float>(maximum(t, s.unsqueeze(1).broadcast_to(Shape{3, 2}))),
            (std::vector<float>{10, 20, 30, 10, 20, 30}));
}

TYPED_TEST(ArithmeticOps, ShapeMismatchIsAValueErrorAndChangesNothing) {
  const Tensor a = f32<TypeParam>({1.0f, 2.0f, 3.0f});
  const Tensor b = f32<TypeParam>({1.0f, 2.0f});
  const auto va = a.carrier()->version(), vb = b.carrier()->version();
  for (BinaryFn op : {BinaryFn(sub), BinaryFn(div), BinaryFn(rem), BinaryFn(maximum), BinaryFn(minimum), BinaryFn(eq),
                      BinaryFn(ne), BinaryFn(lt), BinaryFn(le), BinaryFn(pow)})
    EXPECT_THROW_EXACTLY(op(a, b, {}), ValueError);
  EXPECT_THROW_EXACTLY(clamp(a, b, 1), ValueError);
  EXPECT_THROW_EXACTLY(clamp(a, 0, b), ValueError);
  EXPECT_THROW_EXACTLY(clamp(a, a, b), ValueError);
  EXPECT_EQ(vals<float>(a), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(a.carrier()->version(), va);
  EXPECT_EQ(b.carrier()->version(), vb);
}

TYPED_TEST(ArithmeticOps, OverflowPublishesNothingAndChangesNoOperand) {
  const Tensor a = i32<TypeParam>({1, kMin});
  const auto va = a.carrier()->version();
  EXPECT_THROW_EXACTLY(sub(a, i32<TypeParam>({0, 1})), OverflowError);
  EXPECT_THROW_EXACTLY(pow(a, 3), OverflowError);
  EXPECT_EQ(vals<std::int32_t>(a), (std::vector<std::int32_t>{1, kMin}));
  EXPECT_EQ(a.carrier()->version(), va);
}

TYPED_TEST(ArithmeticOps, MixedCarrierClassesAndReleasedCarriersAreRejected) {
  const Tensor g = make_tensor<Generic>({1.0f}, Shape{1});
  const Tensor c = make_tensor<CPU>({1.0f}, Shape{1});
  EXPECT_THROW_EXACTLY(sub(g, c), TypeError);
  EXPECT_THROW_EXACTLY(clamp(g, c, 1), TypeError);
  EXPECT_THROW_EXACTLY(select(make_tensor<Generic>(std::initializer_list<bool>{true}, Shape{1}), g, c), TypeError);
  auto storage = TypeParam::from_values(std::vector<Value>{Value::from_float32(1.0f)}, DType::Float32());
  const Tensor r(storage, Shape{1});
  storage->release();
  EXPECT_THROW_EXACTLY(maximum(r, r), RuntimeError);
  EXPECT_THROW_EXACTLY(pow(2, r), RuntimeError);
  EXPECT_THROW_EXACTLY(clamp(r, 0, 1), RuntimeError);
  EXPECT_THROW_EXACTLY(logical_not(r), RuntimeError);
}

// ---------------------------------------------------------------- calls by name

TYPED_TEST(ArithmeticOps, CallEntriesAcceptTheOverloadPositionsOnly) {
  const Tensor f = f32<TypeParam>({2.0f, 3.0f});
  const Tensor i = i32<TypeParam>({2, 3});
  const std::vector<CallOperand> st{CallOperand(WeakScalar(2)), CallOperand(f)};
  const CallResult r = call_operation("pow", st);
  EXPECT_EQ(r.plans.front(), resolve_operation_plan("pow", {WeakScalar(2), DType::Float32()}));
  EXPECT_EQ(vals<float>(r.results.front()), (std::vector<float>{4.0f, 8.0f}));
  const std::vector<CallOperand> ts{CallOperand(i), CallOperand(WeakScalar(2))};
  EXPECT_EQ(call_operation("pow", ts).plans.front().compute(), Arithmetic::INT32_EXACT_CHECKED);
  const std::vector<CallOperand> ss{CallOperand(WeakScalar(2)), CallOperand(WeakScalar(2))};
  EXPECT_THROW_EXACTLY(call_operation("pow", ss), TypeError);
  const std::vector<CallOperand> clamp_ok{CallOperand(f), CallOperand(WeakScalar(0)), CallOperand(f)};
  EXPECT_EQ(vals<float>(call_operation("clamp", clamp_ok).results.front()), (std::vector<float>{2.0f, 3.0f}));
  const std::vector<CallOperand> clamp_bad{CallOperand(WeakScalar(0)), CallOperand(f), CallOperand(f)};
  EXPECT_THROW_EXACTLY(call_operation("clamp", clamp_bad), TypeError);
  const std::vector<CallOperand> two{CallOperand(f), CallOperand(f)};
  EXPECT_THROW_EXACTLY(call_operation("clamp", two), TypeError);
  const std::vector<CallOperand> select_bad{CallOperand(WeakScalar(true)), CallOperand(f), CallOperand(f)};
  EXPECT_THROW_EXACTLY(call_operation("select", select_bad), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("sub", two, CallOptions{{"alpha", OptionValue(1.0)}}), TypeError);  // no options
  EXPECT_THROW_EXACTLY(call_operation("maximum", two, {}, &DType::Float64()), TypeError);
  for (const char* name :
       {"sub", "div", "pow", "rem", "maximum", "minimum", "clamp", "eq", "ne", "lt", "le", "logical_not", "select"})
    EXPECT_NE(find_callable(name), nullptr) << name;
}

}  // namespace
