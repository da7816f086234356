// Unary math and activations (docs/operations/unary.md): concrete values for
// every documented special case, on Generic (the reference) and on CPU.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <functional>

#include "support/shipped_types.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

template <class C>
class UnaryOps : public ::testing::Test {};
using Carriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(UnaryOps, Carriers);

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();

template <class C>
Tensor f32(std::initializer_list<float> v) {
  return make_tensor<C>(v, Shape{static_cast<std::int64_t>(v.size())});
}
template <class C>
Tensor i32(std::initializer_list<std::int32_t> v) {
  return make_tensor<C>(v, Shape{static_cast<std::int64_t>(v.size())});
}
std::vector<float> vals(const Tensor& t) { return TypedTensor<float>(t).values(); }

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
// Bitwise equality, except that any NaN equals any NaN.
::testing::AssertionResult Same(float expected, float actual) {
  if ((std::isnan(expected) && std::isnan(actual)) || bits(expected) == bits(actual))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << expected << " (0x" << std::hex << bits(expected)
                                       << "), got " << actual << " (0x" << bits(actual) << ")";
}
void ExpectSame(const std::vector<float>& expected, const Tensor& actual) {
  ASSERT_EQ(&actual.dtype(), &DType::Float32());
  const std::vector<float> got = vals(actual);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(Same(expected[i], got[i])) << "element " << i;
}

// The C library's float functions, called at run time: with a constant
// argument the compiler would fold std::exp and friends with correctly
// rounded arithmetic, which the C library need not reproduce.
float opaque(float x) {
  volatile float v = x;
  return v;
}
float c_exp(float x) { return std::exp(opaque(x)); }
float c_expm1(float x) { return std::expm1(opaque(x)); }
float c_log(float x) { return std::log(opaque(x)); }
float c_log1p(float x) { return std::log1p(opaque(x)); }
float c_sin(float x) { return std::sin(opaque(x)); }
float c_cos(float x) { return std::cos(opaque(x)); }
float c_erf(float x) { return std::erf(opaque(x)); }
float c_tanh(float x) { return std::tanh(opaque(x)); }
float c_sqrt(float x) { return std::sqrt(opaque(x)); }

using UnaryFn = std::function<Tensor(const Tensor&)>;
// Each operation with its default options (a function pointer would not
// carry the trailing Output's default).
#define SW_UNARY(name) {#name, [](const Tensor& x) { return name(x); }}
const std::vector<std::pair<const char*, UnaryFn>> kMath = {
    SW_UNARY(neg),  SW_UNARY(abs), SW_UNARY(sign), SW_UNARY(recip), SW_UNARY(sqrt),
    SW_UNARY(rsqrt), SW_UNARY(exp2), SW_UNARY(log), SW_UNARY(log2), SW_UNARY(sin),
    SW_UNARY(cos),  SW_UNARY(erf), SW_UNARY(floor), SW_UNARY(ceil), SW_UNARY(round)};
Tensor exp_default(const Tensor& x) { return exp(x); }
Tensor sigmoid_default(const Tensor& x) { return sigmoid(x); }
Tensor silu_default(const Tensor& x) { return silu(x); }
Tensor tanh_default(const Tensor& x) { return tanh(x); }
#undef SW_UNARY
Tensor elu_default(const Tensor& x) { return elu(x); }
Tensor gelu_default(const Tensor& x) { return gelu(x); }
Tensor leaky_default(const Tensor& x) { return leaky_relu(x); }
Tensor softplus_default(const Tensor& x) { return softplus(x); }
const std::vector<std::pair<const char*, UnaryFn>> kActivations = {
    {"elu", elu_default},         {"exp", exp_default},   {"gelu", gelu_default}, {"leaky_relu", leaky_default},
    {"sigmoid", sigmoid_default}, {"silu", silu_default}, {"softplus", softplus_default}, {"tanh", tanh_default}};

// ---- dtypes

TYPED_TEST(UnaryOps, MathFunctionsAcceptOnlyFloat32) {
  const Tensor i = i32<TypeParam>({1, 2});
  const Tensor b = make_tensor<TypeParam>(std::initializer_list<bool>{true}, Shape{1});
  for (const auto& [name, fn] : kMath) {
    SCOPED_TRACE(name);
    EXPECT_THROW_EXACTLY(fn(i), TypeError);            // Int32 outside the F domain
    EXPECT_THROW_EXACTLY(fn(b), NotImplementedError);  // Bool is never numeric
    EXPECT_EQ(&fn(f32<TypeParam>({1.0f})).dtype(), &DType::Float32());
  }
}

TYPED_TEST(UnaryOps, ActivationsConvertInt32ToFloat32RoundingTheLimits) {
  const Tensor i = i32<TypeParam>({kI32Max, kI32Min, 16777217, 0});
  for (const auto& [name, fn] : kActivations) {
    SCOPED_TRACE(name);
    const Tensor r = fn(i);
    EXPECT_EQ(&r.dtype(), &DType::Float32());
    EXPECT_EQ(r.shape(), Shape{4});
  }
  // INT32_MAX rounds to 2^31, 16777217 to 16777216 (nearest even), before
  // the function is applied.
  ExpectSame({2147483648.0f, -2147483648.0f, 16777216.0f, 0.0f}, leaky_relu(i, 1.0));
  ExpectSame({2147483648.0f, -2147483648.0f * 0.01f, 16777216.0f, 0.0f}, leaky_relu(i));
  ExpectSame({2147483648.0f, -1.0f, 16777216.0f, 0.0f}, elu(i));
  ExpectSame({kInf, 0.0f, kInf, 1.0f}, exp(i));
  ExpectSame({1.0f, -1.0f, 1.0f, 0.0f}, tanh(i));
  ExpectSame({1.0f, 0.0f, 1.0f, 0.5f}, sigmoid(i));
  ExpectSame({2147483648.0f, 0.0f, 16777216.0f, c_log1p(1.0f)}, softplus(i));
  // relu keeps Int32.
  EXPECT_EQ(&relu(i).dtype(), &DType::Int32());
  EXPECT_EQ(TypedTensor<std::int32_t>(relu(i)).values(), (std::vector<std::int32_t>{kI32Max, 0, 16777217, 0}));
}

// ---- IEEE-exact math

TYPED_TEST(UnaryOps, NegFlipsTheSignOfZerosInfinitiesAndNaN) {
  const Tensor x = f32<TypeParam>({0.0f, -0.0f, 1.5f, -kInf, kInf, kNaN, -kNaN});
  const std::vector<float> r = vals(neg(x));
  EXPECT_TRUE(Same(-0.0f, r[0]));
  EXPECT_TRUE(Same(0.0f, r[1]));
  EXPECT_TRUE(Same(-1.5f, r[2]));
  EXPECT_TRUE(Same(kInf, r[3]));
  EXPECT_TRUE(Same(-kInf, r[4]));
  EXPECT_EQ(bits(r[5]), bits(kNaN) ^ 0x80000000u);  // the same NaN, sign flipped
  EXPECT_EQ(bits(r[6]), bits(kNaN));
}

TYPED_TEST(UnaryOps, AbsClearsTheSignBit) {
  const Tensor x = f32<TypeParam>({-0.0f, -2.0f, 3.0f, -kInf, -kNaN, -1e-45f});
  const std::vector<float> r = vals(abs(x));
  EXPECT_TRUE(Same(0.0f, r[0]));
  EXPECT_TRUE(Same(2.0f, r[1]));
  EXPECT_TRUE(Same(3.0f, r[2]));
  EXPECT_TRUE(Same(kInf, r[3]));
  EXPECT_EQ(bits(r[4]), bits(kNaN));  // the sign of NaN is cleared too
  EXPECT_TRUE(Same(1e-45f, r[5]));
}

TYPED_TEST(UnaryOps, SignKeepsSignedZerosAndNaN) {
  ExpectSame({1.0f, -1.0f, 0.0f, -0.0f, 1.0f, -1.0f, 1.0f, -1.0f, kNaN},
             sign(f32<TypeParam>({2.5f, -7.0f, 0.0f, -0.0f, kInf, -kInf, 1e-45f, -1e-45f, kNaN})));
}

TYPED_TEST(UnaryOps, RecipIsOneIeeeDivision) {
  ExpectSame({kInf, -kInf, 0.0f, -0.0f, 0.5f, 1.0f / 3.0f, kNaN, kInf},
             recip(f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, 2.0f, 3.0f, kNaN, 1e-45f})));
}

TYPED_TEST(UnaryOps, SqrtIsCorrectlyRoundedAndKeepsNegativeZero) {
  ExpectSame({2.0f, 0.0f, -0.0f, kNaN, kInf, kNaN, 1.41421354f},
             sqrt(f32<TypeParam>({4.0f, 0.0f, -0.0f, -1.0f, kInf, kNaN, 2.0f})));
}

TYPED_TEST(UnaryOps, RsqrtRoundsTwiceNeverApproximates) {
  // 1/sqrt(6) correctly rounded is 0.408248305; the documented two-step form
  // (sqrtf, then 1.0f / r) gives 0.408248276.
  ExpectSame({0.5f, kInf, -kInf, 0.0f, kNaN, kNaN, 0.408248276f, 1.0f / c_sqrt(7.0f)},
             rsqrt(f32<TypeParam>({4.0f, 0.0f, -0.0f, kInf, -1.0f, kNaN, 6.0f, 7.0f})));
}

TYPED_TEST(UnaryOps, RoundBreaksTiesToEven) {
  ExpectSame({0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 4.0f, 8388608.0f, 0.0f, -0.0f, kInf, kNaN, -0.0f},
             round(f32<TypeParam>({0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, 8388607.5f, 0.49999997f, -0.0f, kInf, kNaN,
                                   -1e-45f})));
}

TYPED_TEST(UnaryOps, FloorAndCeilAreExactAndKeepTheSignOfZero) {
  const Tensor x = f32<TypeParam>({-0.5f, 0.5f, -0.0f, 2.0f, -kInf, kNaN, 1e-45f, -1e-45f, 8388607.5f});
  ExpectSame({-1.0f, 0.0f, -0.0f, 2.0f, -kInf, kNaN, 0.0f, -1.0f, 8388607.0f}, floor(x));
  ExpectSame({-0.0f, 1.0f, -0.0f, 2.0f, -kInf, kNaN, 1.0f, -0.0f, 8388608.0f}, ceil(x));
}

// ---- C-library functions

TYPED_TEST(UnaryOps, ExpFamilyOverflowsAndUnderflowsWithoutRaising) {
  ExpectSame({1.0f, 1.0f, 0.0f, kInf, kInf, 0.0f, kNaN, c_exp(1.0f)},
             exp(f32<TypeParam>({0.0f, -0.0f, -kInf, kInf, 89.0f, -110.0f, kNaN, 1.0f})));
  ExpectSame({8.0f, 0.5f, 0.0f, 1e-45f, kInf, 0.0f, kInf, kNaN},
             exp2(f32<TypeParam>({3.0f, -1.0f, -151.0f, -149.0f, 128.0f, -kInf, kInf, kNaN})));
}

TYPED_TEST(UnaryOps, LogOfZeroIsMinusInfinityAndOfNegativesNaN) {
  const Tensor x = f32<TypeParam>({1.0f, 0.0f, -0.0f, -1.0f, kInf, -kInf, kNaN, 8.0f, 1e-45f});
  ExpectSame({0.0f, -kInf, -kInf, kNaN, kInf, kNaN, kNaN, c_log(8.0f), c_log(1e-45f)}, log(x));
  ExpectSame({0.0f, -kInf, -kInf, kNaN, kInf, kNaN, kNaN, 3.0f, -149.0f}, log2(x));
}

TYPED_TEST(UnaryOps, SinCosErfTanhSpecialValues) {
  const Tensor x = f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, kNaN, 1.0f, 3.0e38f});
  ExpectSame({0.0f, -0.0f, kNaN, kNaN, kNaN, c_sin(1.0f), c_sin(3.0e38f)}, sin(x));
  ExpectSame({1.0f, 1.0f, kNaN, kNaN, kNaN, c_cos(1.0f), c_cos(3.0e38f)}, cos(x));
  ExpectSame({0.0f, -0.0f, 1.0f, -1.0f, kNaN, c_erf(1.0f), 1.0f}, erf(x));
  ExpectSame({0.0f, -0.0f, 1.0f, -1.0f, kNaN, c_tanh(1.0f), 1.0f}, tanh(x));
}

// ---- activations

TYPED_TEST(UnaryOps, SigmoidIsOneOverOnePlusExpOfMinusX) {
  const float s1 = 1.0f / (1.0f + c_exp(-1.0f));
  ExpectSame({0.5f, 0.5f, 1.0f, 0.0f, 0.0f, 1.0f, kNaN, s1},
             sigmoid(f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, -200.0f, 200.0f, kNaN, 1.0f})));
}

TYPED_TEST(UnaryOps, SiluIsXTimesTheRoundedSigmoid) {
  const float s = 1.0f / (1.0f + c_exp(-2.0f));
  // silu(-200) = -200 * +0 = -0, and silu(-inf) is that limit, -0 (the
  // formula alone would give -inf * 0 = NaN).
  ExpectSame({0.0f, -0.0f, kInf, -0.0f, -0.0f, kNaN, 2.0f * s},
             silu(f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, -200.0f, kNaN, 2.0f})));
}

TYPED_TEST(UnaryOps, EluNegativeBranchIsAlphaTimesExpm1) {
  const Tensor x = f32<TypeParam>({2.0f, 0.0f, -0.0f, -1.0f, -kInf, kInf, kNaN});
  ExpectSame({2.0f, 0.0f, -0.0f, c_expm1(-1.0f), -1.0f, kInf, kNaN}, elu(x));
  // alpha is rounded to binary32 first: 0.1f * expm1f(-1) (-0.0632120594
  // with glibc 2.36), not the double product (-0.063212052).
  ExpectSame({2.0f, 0.0f, -0.0f, 0.1f * c_expm1(-1.0f), -0.1f, kInf, kNaN}, elu(x, 0.1));
  ExpectSame({2.0f, -0.0f, 0.0f, -2.0f * c_expm1(-1.0f), 2.0f, kInf, kNaN}, elu(x, -2.0));
}

TYPED_TEST(UnaryOps, LeakyReluScalesTheNonPositiveBranch) {
  const Tensor x = f32<TypeParam>({3.0f, 0.0f, -0.0f, -2.0f, -kInf, kNaN});
  ExpectSame({3.0f, 0.0f, -0.0f, -2.0f * 0.01f, -kInf, kNaN}, leaky_relu(x));
  ExpectSame({3.0f, -0.0f, 0.0f, 1.0f, kInf, kNaN}, leaky_relu(x, -0.5));
  ExpectSame({3.0f, 0.0f, -0.0f, -0.0f, kNaN, kNaN}, leaky_relu(x, 0.0));  // -inf * 0 = NaN
}

TYPED_TEST(UnaryOps, GeluExactFormFollowsTheDocumentedSteps) {
  auto reference = [](float x) {
    const float t = x * 0.70710677f;
    const float s = 1.0f + c_erf(t);
    return (0.5f * x) * s;
  };
  // gelu(-10): erf rounds to -1, result -0; gelu(-inf) is that limit, -0
  // (the formula alone would give -inf * 0 = NaN).
  ExpectSame({0.0f, -0.0f, kInf, -0.0f, kNaN, -0.0f, reference(1.0f), reference(-1.0f), reference(3.25f)},
             gelu(f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, kNaN, -10.0f, 1.0f, -1.0f, 3.25f})));
}

TYPED_TEST(UnaryOps, GeluTanhFormFollowsTheDocumentedSteps) {
  auto reference = [](float x) {
    const float x3 = (x * x) * x;
    const float u = x + 0.044715f * x3;
    const float s = 1.0f + c_tanh(0.7978846f * u);
    return (0.5f * x) * s;
  };
  // x^3 overflows for |x| = 1e13: tanh(+-inf) = +-1, so the result is x or -0.
  ExpectSame({0.0f, -0.0f, kInf, -0.0f, kNaN, 1e13f, -0.0f, reference(1.0f), reference(-1.0f)},
             gelu(f32<TypeParam>({0.0f, -0.0f, kInf, -kInf, kNaN, 1e13f, -1e13f, 1.0f, -1.0f}), true));
}

TYPED_TEST(UnaryOps, SoftplusReturnsXAboveTheThresholdOnly) {
  const Tensor x = f32<TypeParam>({0.0f, 25.0f, 20.0f, -kInf, kInf, kNaN, 1.0f});
  ExpectSame({c_log1p(1.0f), 25.0f, c_log1p(c_exp(20.0f)), 0.0f, kInf, kNaN, c_log1p(c_exp(1.0f))},
             softplus(x));
  // beta = 2: log1pf(expf(2x)) / 2; threshold compares x * beta.
  ExpectSame({c_log1p(1.0f) / 2.0f, 25.0f, 20.0f, 0.0f, kInf, kNaN, c_log1p(c_exp(2.0f)) / 2.0f},
             softplus(x, 2.0));
  // threshold = inf: never linear; threshold = -inf: always linear except NaN.
  ExpectSame({c_log1p(1.0f), c_log1p(c_exp(25.0f)), c_log1p(c_exp(20.0f)), 0.0f, kInf, kNaN,
              c_log1p(c_exp(1.0f))},
             softplus(x, 1.0, std::numeric_limits<double>::infinity()));
  ExpectSame({0.0f, 25.0f, 20.0f, 0.0f, kInf, kNaN, 1.0f}, softplus(x, 1.0, -std::numeric_limits<double>::infinity()));
  // beta = -1: -log1p(exp(-x)), never above a positive threshold.
  ExpectSame({-c_log1p(1.0f), -c_log1p(c_exp(-25.0f)), -c_log1p(c_exp(-20.0f)), -kInf, -0.0f, kNaN,
              -c_log1p(c_exp(-1.0f))},
             softplus(x, -1.0));
}

// ---- options and errors

TYPED_TEST(UnaryOps, InvalidOptionsRaiseValueErrorBeforeAnyEffect) {
  const Tensor x = f32<TypeParam>({-1.0f, 2.0f});
  const auto version = x.carrier()->version();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW_EXACTLY(elu(x, inf), ValueError);
  EXPECT_THROW_EXACTLY(elu(x, nan), ValueError);
  EXPECT_THROW_EXACTLY(elu(x, 1e39), ValueError);  // finite in double, infinite in binary32
  EXPECT_THROW_EXACTLY(leaky_relu(x, -inf), ValueError);
  EXPECT_THROW_EXACTLY(leaky_relu(x, nan), ValueError);
  EXPECT_THROW_EXACTLY(softplus(x, 0.0), ValueError);
  EXPECT_THROW_EXACTLY(softplus(x, -0.0), ValueError);
  EXPECT_THROW_EXACTLY(softplus(x, 1e-50), ValueError);  // rounds to 0 in binary32
  EXPECT_THROW_EXACTLY(softplus(x, inf), ValueError);
  EXPECT_THROW_EXACTLY(softplus(x, 1.0, nan), ValueError);
  EXPECT_EQ(x.carrier()->version(), version);
  ExpectSame({-1.0f, 2.0f}, x);
  // Values that round to a finite binary32 are accepted.
  ExpectSame({-0.0f, -1.0f * 1e-40f, 2.0f}, leaky_relu(f32<TypeParam>({-0.0f, -1.0f, 2.0f}), 1e-40));
}

TYPED_TEST(UnaryOps, DtypeErrorsComeBeforeOptionErrors) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor b = make_tensor<TypeParam>(std::initializer_list<bool>{true}, Shape{1});
  EXPECT_THROW_EXACTLY(elu(b, nan), NotImplementedError);
  EXPECT_THROW_EXACTLY(softplus(b, 0.0), NotImplementedError);
  // An Int32 operand is valid for the activations: the option error remains.
  EXPECT_THROW_EXACTLY(elu(i32<TypeParam>({1}), nan), ValueError);
}

TYPED_TEST(UnaryOps, ReleasedCarrierIsARuntimeError) {
  auto storage = TypeParam::from_values(std::vector<Value>{Value::from_float32(1.0f)}, DType::Float32());
  const Tensor a(storage, Shape{1});
  storage->release();
  for (const auto& [name, fn] : kMath) EXPECT_THROW_EXACTLY(fn(a), RuntimeError) << name;
  for (const auto& [name, fn] : kActivations) EXPECT_THROW_EXACTLY(fn(a), RuntimeError) << name;
  // A bad option on a released operand: the option error comes first.
  EXPECT_THROW_EXACTLY(softplus(a, 0.0), ValueError);
}

// ---- layouts

TYPED_TEST(UnaryOps, ViewsGiveFlatCompactResultsInLogicalOrder) {
  // (2,3) permuted to (3,2): logical order 1,3,5,2,4,6 -> transposed view.
  const Tensor a = make_tensor<TypeParam>({1.0f, -2.0f, 3.0f, -4.0f, 5.0f, -6.0f}, Shape{2, 3});
  const Tensor p = a.permute({1, 0});
  const Tensor r = neg(p);
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_TRUE(r.layout().is_compact());
  ExpectSame({-1.0f, -3.0f, -5.0f, 2.0f, 4.0f, 6.0f}, r);
  // Hierarchical, broadcast, strided, empty and rank-0 operands.
  const Tensor h(a.carrier(), 0, Layout(Shape{IntTuple{2, 3}}, Stride{IntTuple{3, 1}}));
  const Tensor hr = abs(h);
  EXPECT_EQ(hr.shape(), Shape{6});
  ExpectSame({1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}, hr);
  const Tensor one = make_tensor<TypeParam>({-0.5f}, Shape{1});
  ExpectSame({-0.0f, -0.0f, -0.0f}, round(one.broadcast_to(Shape{3})));
  ExpectSame({1.0f, 1.0f, 1.0f}, sign(a.slice(1, 0, 3, 1).slice(0, 0, 1, 1).reshape(Shape{3})));
  const Tensor empty = make_tensor<TypeParam>(std::vector<float>{}, Shape{0, 4});
  EXPECT_EQ(gelu(empty).shape(), (Shape{0, 4}));
  const Tensor scalar = make_tensor<TypeParam>({4.0f}, Shape{});
  EXPECT_EQ(sqrt(scalar).shape(), Shape{});
  ExpectSame({2.0f}, sqrt(scalar));
}

// ---- the name-based entries

TEST(UnaryCalls, EveryOptionIsDocumentedWithItsDefault) {
  auto names = [](const char* op) {
    std::vector<std::string> out;
    for (const OptionDoc& d : find_callable(op)->options) out.push_back(d.name + "=" + d.default_value);
    return out;
  };
  EXPECT_EQ(names("elu"), (std::vector<std::string>{"alpha=1.0"}));
  EXPECT_EQ(names("gelu"), (std::vector<std::string>{"approximate=false"}));
  EXPECT_EQ(names("leaky_relu"), (std::vector<std::string>{"negative_slope=0.01"}));
  EXPECT_EQ(names("softplus"), (std::vector<std::string>{"beta=1.0", "threshold=20.0"}));
  for (const char* op : {"relu", "exp", "sigmoid", "silu", "tanh", "neg", "abs", "sign", "recip", "sqrt", "rsqrt",
                         "exp2", "log", "log2", "sin", "cos", "erf", "floor", "ceil", "round"}) {
    ASSERT_NE(find_callable(op), nullptr) << op;
    EXPECT_TRUE(find_callable(op)->options.empty()) << op;
    EXPECT_EQ(find_callable(op)->signature, std::string(op) + "(x: tensor)");
  }
}

TEST(UnaryCalls, OptionsReachTheTypedFunctionAndBadOnesRaise) {
  const Tensor x = make_tensor<CPU>({-1.0f, 30.0f}, Shape{2});
  const std::vector<CallOperand> ops{x};
  const CallResult r = call_operation("softplus", ops, CallOptions{{"beta", 2.0}, {"threshold", std::int64_t{50}}});
  EXPECT_EQ(r.plans.front(), resolve_operation_plan("softplus", {DType::Float32()}));
  ExpectSame({c_log1p(c_exp(-2.0f)) / 2.0f, 30.0f}, r.results.front());
  ExpectSame(vals(gelu(x, true)), call_operation("gelu", ops, CallOptions{{"approximate", true}}).results.front());
  ExpectSame(vals(elu(x, 3.0)), call_operation("elu", ops, CallOptions{{"alpha", std::int64_t{3}}}).results.front());
  EXPECT_THROW_EXACTLY(call_operation("elu", ops, CallOptions{{"alpha", true}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("gelu", ops, CallOptions{{"approximate", 1.0}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("leaky_relu", ops, CallOptions{{"slope", 0.1}}), TypeError);  // unknown option
  EXPECT_THROW_EXACTLY(call_operation("neg", ops, CallOptions{{"alpha", 1.0}}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("softplus", ops, CallOptions{{"beta", 0.0}}), ValueError);
  EXPECT_THROW_EXACTLY(call_operation("sqrt", std::vector<CallOperand>{x, x}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("sqrt", std::vector<CallOperand>{WeakScalar(2.0)}), TypeError);
  const DType* f64 = &DType::Float64();
  EXPECT_THROW_EXACTLY(call_operation("exp", ops, {}, f64), TypeError);  // no execution options
  // An explicit null option means the default.
  ExpectSame(vals(elu(x)), call_operation("elu", ops, CallOptions{{"alpha", std::monostate{}}}).results.front());
}

}  // namespace
