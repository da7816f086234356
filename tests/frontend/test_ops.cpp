// The operation front end (issue: foundation, item 4): one resolution, one
// dispatch path, exact plan semantics, bad input rejected before any effect.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "support/shipped_types.h"

#include <cmath>
#include <limits>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

template <class C>
class FrontEnd : public ::testing::Test {};
using Carriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(FrontEnd, Carriers);

template <class T>
std::vector<T> vals(const Tensor& t) {
  return TypedTensor<T>(t).values();
}

// A user carrier class with no kernel table: every plan must fail the gate
// before allocation. It counts allocations to prove it.
class CountingCarrier final : public Carrier {
 public:
  explicit CountingCarrier(std::int64_t n) : Carrier(DType::Float32(), true), values_(static_cast<std::size_t>(n)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  static inline int allocations = 0;

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v.f; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool, const SimpleDType&, bool) const override {
    ++allocations;
    return std::make_shared<CountingCarrier>(n);
  }

 private:
  std::vector<float> values_;
};

TEST(FrontEndGate, UnsupportedPlanRaisesBeforeAllocation) {
  const Tensor t(std::make_shared<CountingCarrier>(4), Shape{4});
  CountingCarrier::allocations = 0;
  try {
    add(t, t);
    FAIL() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOperationPlan);
    EXPECT_EQ(e.plan(), resolve_operation_plan("add", {DType::Float32(), DType::Float32()}));
    EXPECT_EQ(std::string(e.what()), carrier_class<CountingCarrier>().name() + " has no capability for operation 'add'.");
  }
  EXPECT_THROW_EXACTLY(relu(t), UnsupportedOperationPlan);
  static_assert(std::is_base_of_v<NotImplementedError, UnsupportedOperationPlan>);
  EXPECT_EQ(CountingCarrier::allocations, 0);
}

TEST(FrontEndGate, ReasonDistinguishesUnknownOperationFromUnmatchedShape) {
  const OperationPlan add_plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  EXPECT_EQ(unsupported_plan_reason(carrier_class<CPU>(), add_plan), std::nullopt);
  // A plan shape CPU does not register (Float32 + Float32 -> Int32 is never resolved).
  const OperationPlan odd("add", {OperandPlan::tensor(DType::Float32()), OperandPlan::tensor(DType::Float32())},
                          Arithmetic::BINARY32, std::nullopt, nullptr, DType::Int32());
  const auto reason = unsupported_plan_reason(carrier_class<CPU>(), odd);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->rfind("CPU has capabilities for operation 'add' but none matches the plan ", 0), 0u) << *reason;
}

// ops.h step 3: every tensor operand lives on one exact carrier class. An
// operand of this suite's carrier beside one of any other shipped class, in
// any position, is a TypeError naming the operation and both classes, raised
// before anything is allocated or written.
TYPED_TEST(FrontEnd, OperandsOnDifferentCarrierClassesAreATypeError) {
  const std::string mine_name = carrier_class<TypeParam>().name();
  int other_classes = 0;
  for (const ShippedCarrier& other : shipped_carriers()) {
    if (other.cls == carrier_class<TypeParam>()) continue;
    ++other_classes;
    const std::string other_name = other.cls.name();
    SCOPED_TRACE(mine_name + " beside " + other_name);
    const Tensor mine = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{2, 2});
    const std::vector<Value> values{Value::from_float32(5), Value::from_float32(6), Value::from_float32(7),
                                    Value::from_float32(8)};
    const Tensor theirs(other.make(values, DType::Float32()), Shape{2, 2});
    const Tensor mine_cond = make_tensor<TypeParam>(std::initializer_list<bool>{true, false, true, false}, Shape{2, 2});
    const auto mine_version = mine.carrier()->version(), theirs_version = theirs.carrier()->version();
    auto expect_refused = [&](const std::string& message, const char* op, const std::string& first,
                              const std::string& second) {
      EXPECT_NE(message.find(std::string(op) + ": "), std::string::npos) << message;
      EXPECT_NE(message.find("(" + first + " and " + second + ")"), std::string::npos) << message;
    };
    expect_refused(EXACT_ERROR_MESSAGE(add(mine, theirs), TypeError), "add", mine_name, other_name);
    expect_refused(EXACT_ERROR_MESSAGE(add(theirs, mine), TypeError), "add", other_name, mine_name);
    expect_refused(EXACT_ERROR_MESSAGE(mul(theirs, mine), TypeError), "mul", other_name, mine_name);
    expect_refused(EXACT_ERROR_MESSAGE(matmul(mine, theirs), TypeError), "matmul", mine_name, other_name);
    expect_refused(EXACT_ERROR_MESSAGE(matmul(theirs, mine), TypeError), "matmul", other_name, mine_name);
    // Three tensor operands: the odd one out in the middle or last position.
    expect_refused(EXACT_ERROR_MESSAGE(clamp(mine, theirs, mine), TypeError), "clamp", mine_name, other_name);
    expect_refused(EXACT_ERROR_MESSAGE(clamp(mine, mine, theirs), TypeError), "clamp", mine_name, other_name);
    expect_refused(EXACT_ERROR_MESSAGE(select(mine_cond, mine, theirs), TypeError), "select", mine_name, other_name);
    EXPECT_EQ(vals<float>(mine), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(vals<float>(theirs), (std::vector<float>{5, 6, 7, 8}));
    EXPECT_EQ(mine.carrier()->version(), mine_version);
    EXPECT_EQ(theirs.carrier()->version(), theirs_version);
  }
  EXPECT_GT(other_classes, 0) << "no other shipped carrier class to pair " << mine_name << " with";
}

TYPED_TEST(FrontEnd, AddBroadcastsRightAligned) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});
  const Tensor b = make_tensor<TypeParam>({10.0f, 20.0f, 30.0f}, Shape{3});
  const Tensor c = add(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{11, 12, 23, 24, 35, 36}));
  EXPECT_EQ(c.carrier_type(), carrier_class<TypeParam>());
}

TYPED_TEST(FrontEnd, ShapeMismatchIsAValueErrorAndChangesNothing) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor b = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const auto va = a.carrier()->version(), vb = b.carrier()->version();
  EXPECT_THROW_EXACTLY(add(a, b), ValueError);
  EXPECT_THROW_EXACTLY(elementwise_mul(a, b), ValueError);
  EXPECT_THROW_EXACTLY(matmul(a, b), ValueError);
  EXPECT_EQ(vals<float>(a), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(a.carrier()->version(), va);
  EXPECT_EQ(b.carrier()->version(), vb);
}

TYPED_TEST(FrontEnd, WrongDtypeIsRejectedByThePolicy) {
  const Tensor b = make_tensor<TypeParam>(std::initializer_list<bool>{true, false}, Shape{2});
  const Tensor f = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  EXPECT_THROW_EXACTLY(add(b, f), NotImplementedError);  // Bool outside a Bool slot
  EXPECT_THROW_EXACTLY(relu(b), NotImplementedError);
  EXPECT_THROW_EXACTLY(reduce_sum(b), NotImplementedError);
}

TYPED_TEST(FrontEnd, ReleasedCarrierIsARuntimeError) {
  auto storage = TypeParam::from_values(std::vector<Value>{Value::from_float32(1.0f)}, DType::Float32());
  const Tensor a(storage, Shape{1});
  storage->release();
  EXPECT_THROW_EXACTLY(add(a, a), RuntimeError);
  EXPECT_THROW_EXACTLY(relu(a), RuntimeError);
  EXPECT_THROW_EXACTLY(reduce_sum(a), RuntimeError);
  EXPECT_THROW_EXACTLY(mul(a, 2), RuntimeError);
}

TYPED_TEST(FrontEnd, MulHasThreeForms) {
  const Tensor i = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1, -2, 3}, Shape{3});
  const Tensor f = make_tensor<TypeParam>({0.5f, 1.5f, -2.0f}, Shape{3});
  EXPECT_EQ(vals<std::int32_t>(mul(i, 2)), (std::vector<std::int32_t>{2, -4, 6}));
  EXPECT_EQ(vals<std::int32_t>(mul(2, i)), (std::vector<std::int32_t>{2, -4, 6}));
  EXPECT_EQ(vals<float>(mul(i, 0.5)), (std::vector<float>{0.5f, -1.0f, 1.5f}));
  EXPECT_EQ(vals<float>(mul(i, true)), (std::vector<float>{1.0f, -2.0f, 3.0f}));  // bool is a weak float
  EXPECT_EQ(vals<float>(mul(i, f)), (std::vector<float>{0.5f, -3.0f, -6.0f}));
  EXPECT_EQ(vals<std::int32_t>(mul(i, i)), (std::vector<std::int32_t>{1, 4, 9}));
  EXPECT_EQ(mul(f, 1LL << 31).dtype(), DType::Float32());  // a float plan takes 2**31
  EXPECT_THROW_EXACTLY(mul(i, 1LL << 31), OverflowError);          // an integer plan does not
  EXPECT_THROW_EXACTLY(mul(i, std::numeric_limits<std::int32_t>::max()), OverflowError);  // 3 * INT32_MAX
}

TYPED_TEST(FrontEnd, ReluFollowsTheDocumentedSpecialValueRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor x = make_tensor<TypeParam>({-1.0f, -0.0f, 0.0f, 2.5f, nan, inf, -inf}, Shape{7});
  const std::vector<float> r = vals<float>(relu(x));
  EXPECT_EQ(r[0], 0.0f);
  EXPECT_FALSE(std::signbit(r[1]));  // -0 -> +0
  EXPECT_EQ(r[3], 2.5f);
  EXPECT_TRUE(std::isnan(r[4]));
  EXPECT_EQ(r[5], inf);
  EXPECT_EQ(r[6], 0.0f);
  const Tensor i = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{-5, 0, 7, std::numeric_limits<std::int32_t>::min()}, Shape{4});
  EXPECT_EQ(vals<std::int32_t>(relu(i)), (std::vector<std::int32_t>{0, 0, 7, 0}));
  EXPECT_EQ(relu(i).dtype(), DType::Int32());
}

TYPED_TEST(FrontEnd, ReduceSumAxesKeepdimsAndErrors) {
  // (2,3): logical order first mode fastest -> rows are (1,3,5) and (2,4,6).
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});
  EXPECT_EQ(vals<float>(reduce_sum(a, {1})), (std::vector<float>{9, 12}));
  EXPECT_EQ(vals<float>(reduce_sum(a, {0})), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(vals<float>(reduce_sum(a, {-1})), (std::vector<float>{9, 12}));
  EXPECT_EQ(reduce_sum(a, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(reduce_sum(a).shape(), Shape{});
  EXPECT_EQ(vals<float>(reduce_sum(a)), (std::vector<float>{21}));
  EXPECT_EQ(reduce_sum(a, std::vector<std::int64_t>{}).shape(), (Shape{2, 3}));
  EXPECT_THROW_EXACTLY(reduce_sum(a, {2}), ValueError);
  EXPECT_THROW_EXACTLY(reduce_sum(a, {-3}), ValueError);
  EXPECT_THROW_EXACTLY(reduce_sum(a, {0, -2}), ValueError);  // duplicate
  const Tensor e = make_tensor<TypeParam>(std::vector<float>{}, Shape{0, 3});
  EXPECT_EQ(vals<float>(reduce_sum(e, {0})), (std::vector<float>{0, 0, 0}));
}

// operation-dtype-policy R2 scenario: an out-of-range partial sum with an
// in-range total succeeds (exact accumulation, checked only at narrowing).
TYPED_TEST(FrontEnd, Int32SumCheckedOnlyAtFinalNarrowing) {
  const std::int32_t max = std::numeric_limits<std::int32_t>::max();
  const Tensor x = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{max, max, -max, -max, 5}, Shape{5});
  EXPECT_EQ(vals<std::int32_t>(reduce_sum(x)), (std::vector<std::int32_t>{5}));
  const Tensor y = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{max, 1}, Shape{2});
  EXPECT_THROW_EXACTLY(reduce_sum(y), OverflowError);
  // matmul likewise: partial sums leave Int32, the result does not.
  const Tensor a = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{max, max, -max}, Shape{1, 3});
  const Tensor b = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1, 1, 1}, Shape{3, 1});
  EXPECT_EQ(vals<std::int32_t>(matmul(a, b)), (std::vector<std::int32_t>{max}));
}

TYPED_TEST(FrontEnd, MatmulShapesFollowNumpy) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});  // [[1,3,5],[2,4,6]]
  const Tensor v = make_tensor<TypeParam>({1.0f, 0.0f, 1.0f}, Shape{3});
  EXPECT_EQ(matmul(a, v).shape(), (Shape{2}));
  EXPECT_EQ(vals<float>(matmul(a, v)), (std::vector<float>{6, 8}));
  const Tensor w = make_tensor<TypeParam>({1.0f, 1.0f}, Shape{2});
  EXPECT_EQ(vals<float>(matmul(w, a)), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(matmul(v, v).shape(), Shape{});
  EXPECT_EQ(vals<float>(matmul(v, v)), (std::vector<float>{2}));
  // Batched with broadcasting batch axes.
  const Tensor batch = make_tensor<TypeParam>(std::vector<float>(24, 1.0f), Shape{4, 2, 3});
  EXPECT_EQ(matmul(batch, a.permute({1, 0})).shape(), (Shape{4, 2, 2}));
  const Tensor s = make_tensor<TypeParam>({2.0f}, Shape{});
  EXPECT_THROW_EXACTLY(matmul(s, a), ValueError);
  EXPECT_THROW_EXACTLY(matmul(a, a), ValueError);  // (2,3) x (2,3)
}

// cpp-mapping "Numbers": one case where fused contraction would change the
// bits. p1 = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds (to even) to 1 + 2^-11;
// p2 = -(1 + 2^-11) exactly. Strict: p1 + p2 = 0. Fused: 2^-24.
TYPED_TEST(FrontEnd, StrictBinary32MatmulRoundsEveryProduct) {
  const float u = 1.0f + std::ldexp(1.0f, -12), w = 1.0f + std::ldexp(1.0f, -11);
  const Tensor a = make_tensor<TypeParam>({u, -1.0f}, Shape{1, 2});
  const Tensor b = make_tensor<TypeParam>({u, w}, Shape{2, 1});
  EXPECT_EQ(vals<float>(matmul(a, b)), (std::vector<float>{0.0f}));
  const OperationExecutionOptions wide("matmul", &DType::Float64());
  EXPECT_EQ(vals<float>(matmul(a, b, wide)), (std::vector<float>{0.0f}));  // products still rounded to binary32
  // Elementwise: mul then add is two roundings, never one.
  const Tensor x = make_tensor<TypeParam>({u}, Shape{1});
  const Tensor y = make_tensor<TypeParam>({-w}, Shape{1});
  EXPECT_EQ(vals<float>(add(elementwise_mul(x, x), y)), (std::vector<float>{0.0f}));
}

// The contracted plan (beyond the specification, docs/policy.md) is used only
// when asked for, and there each product is added with one rounding. Its
// accumulation is FLOATING (docs/numerics.md, "Contracted matmul"): the
// order of the k steps is the backend's (CPU's oneDNN picks it by strides,
// thread count and instruction set), so this case is built to have one
// contracted result in every order. Every result element sums u*u and
// -u*v with u = 1 + 2^-12, v = 1.5 - 2^-12:
//   p1 = u*u  = 1 + 2^-11 + 2^-24           rounds (tie, to even) to 1 + 2^-11,
//   p2 = -u*v = -(1.5 + 2^-13 - 2^-24)      rounds (tie, to even) to -(1.5 + 2^-13),
// both rounding errors +2^-24. Strict: round(p1) + round(p2) = -0.5 + 3*2^-13
// exactly. Contracted, in either order: the first product is rounded alone
// (a multiply-add onto +0.0), the second is added exactly with one rounding:
// -0.5 + 3*2^-13 + 2^-24 (representable). 130 x 5 results cover the strict
// kernel's register tiles and their row and column tails; the transposed
// views cover the library call's other layouts.
TYPED_TEST(FrontEnd, ContractedMatmulFusesEachStepOnlyWhenRequested) {
  const std::int64_t M = 130, N = 5;
  const float u = 1.0f + std::ldexp(1.0f, -12), v = 1.5f - std::ldexp(1.0f, -12);
  const std::vector<float> av(static_cast<std::size_t>(2 * M), u);  // every A(m, k) = u
  std::vector<float> bv;
  for (std::int64_t n = 0; n < N; ++n) bv.insert(bv.end(), {u, -v});  // every column (u, -v)
  const Tensor a = make_tensor<TypeParam>(av, Shape{M, 2});
  const Tensor b = make_tensor<TypeParam>(bv, Shape{2, N});
  const float strict_value = -0.5f + 3.0f * std::ldexp(1.0f, -13);
  const std::vector<float> strict(static_cast<std::size_t>(M * N), strict_value);
  const std::vector<float> fused(static_cast<std::size_t>(M * N), strict_value + std::ldexp(1.0f, -24));
  // The case's premise: one fused result in both orders, unlike the strict one.
  ASSERT_EQ(std::fma(u, -v, std::fma(u, u, 0.0f)), strict_value + std::ldexp(1.0f, -24));
  ASSERT_EQ(std::fma(u, u, std::fma(u, -v, 0.0f)), strict_value + std::ldexp(1.0f, -24));
  ASSERT_NE(strict_value + std::ldexp(1.0f, -24), strict_value);
  EXPECT_EQ(vals<float>(matmul(a, b)), strict);
  EXPECT_EQ(vals<float>(matmul(a, b, OperationExecutionOptions("matmul", nullptr, Arithmetic::BINARY32))), strict);
  const OperationExecutionOptions contracted("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  EXPECT_EQ(vals<float>(matmul(a, b, contracted)), fused);
  // Transposed views: (b^T a^T)^T has the same elements.
  const Tensor bt = b.permute({1, 0}), at = a.permute({1, 0});
  EXPECT_EQ(vals<float>(matmul(bt, at, contracted).permute({1, 0})), fused);
  EXPECT_EQ(vals<float>(matmul(bt, at).permute({1, 0})), strict);
}

// On general operands the contracted plan grants only the FLOATING rule
// (docs/numerics.md, "The agreement rule"), with the exact products as the
// terms: against the reference's fmaf steps in ascending k from +0.0 (what
// Generic computes), |x - reference| <= 2 * n * 2^-24 * sum|t_i| +
// ulp32(reference), for plain and transposed operands alike. (Bit equality
// with the sequential reference is not granted: oneDNN's order differs
// between layouts, thread counts and instruction sets.)
TYPED_TEST(FrontEnd, ContractedMatmulMeetsTheFloatingRuleOnEveryLayout) {
  const std::int64_t M = 37, N = 29, K = 301;
  std::vector<float> av(static_cast<std::size_t>(M * K)), bv(static_cast<std::size_t>(K * N));
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = std::sin(0.37f * static_cast<float>(i)) * 1.75f;
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = std::cos(0.61f * static_cast<float>(i)) - 0.25f;
  const OperationExecutionOptions contracted("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  const Tensor a = make_tensor<TypeParam>(av, Shape{M, K}), b = make_tensor<TypeParam>(bv, Shape{K, N});
  const std::vector<float> plain = vals<float>(matmul(a, b, contracted));
  const std::vector<float> transposed =
      vals<float>(matmul(b.permute({1, 0}), a.permute({1, 0}), contracted).permute({1, 0}));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t m = 0; m < M; ++m) {
      double magnitude = 0.0;
      float g = 0.0f;
      for (std::int64_t k = 0; k < K; ++k) {
        const float x = av[static_cast<std::size_t>(m + k * M)], y = bv[static_cast<std::size_t>(k + n * K)];
        magnitude += std::fabs(static_cast<double>(x) * y);
        g = std::fma(x, y, g);
      }
      const std::size_t i = static_cast<std::size_t>(m + n * M);
      const double ulp = std::nextafter(std::fabs(g), std::numeric_limits<float>::infinity()) - std::fabs(g);
      const double bound = 2.0 * static_cast<double>(K) * std::ldexp(1.0, -24) * magnitude + ulp;
      EXPECT_LE(std::fabs(static_cast<double>(plain[i]) - g), bound) << m << "," << n;
      EXPECT_LE(std::fabs(static_cast<double>(transposed[i]) - g), bound) << m << "," << n << " (transposed views)";
    }
}

TYPED_TEST(FrontEnd, Float64AccumulatorChangesOnlyTheAccumulation) {
  // 2^24 + 1 + 1 + ... : Float32 sequential accumulation loses each 1.
  std::vector<float> v{16777216.0f};
  for (int i = 0; i < 16; ++i) v.push_back(1.0f);
  const Tensor x = make_tensor<TypeParam>(v, Shape{17});
  const OperationExecutionOptions wide("reduce_sum", &DType::Float64());
  const Tensor r = reduce_sum(x, Axes::all(), false, wide);
  EXPECT_EQ(r.dtype(), DType::Float32());
  EXPECT_EQ(vals<float>(r), (std::vector<float>{16777232.0f}));
  EXPECT_THROW_EXACTLY(
      reduce_sum(make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1}, Shape{1}), Axes::all(), false, wide),
      TypeError);
}

TYPED_TEST(FrontEnd, IeeeSpecialValuesPropagate) {
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const Tensor a = make_tensor<TypeParam>({inf, 0.0f, big, -0.0f}, Shape{4});
  const Tensor b = make_tensor<TypeParam>({-inf, inf, big, -0.0f}, Shape{4});
  const std::vector<float> s = vals<float>(add(a, b)), p = vals<float>(elementwise_mul(a, b));
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[2], inf);  // overflow gives inf, not an exception
  EXPECT_TRUE(std::signbit(s[3]));  // -0 + -0 = -0
  EXPECT_TRUE(std::isnan(p[1]));   // 0 * inf
  EXPECT_FALSE(std::signbit(p[3]));
}

TYPED_TEST(FrontEnd, NonContiguousInputsNeedNoCopyByTheCaller) {
  const Tensor base = make_tensor<TypeParam>({0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f}, Shape{8});
  const Tensor even = base.slice(0, 0, 8, 2);                    // 0 2 4 6
  const Tensor grid = base.reshape(Shape{2, 4}).permute({1, 0});  // (4,2): (i,j) = base[2i + j]... in logical order
  EXPECT_EQ(vals<float>(add(even, even)), (std::vector<float>{0, 4, 8, 12}));
  EXPECT_EQ(vals<float>(reduce_sum(grid, {1})), (std::vector<float>{1, 5, 9, 13}));
  const Tensor hier(base.carrier(), 0, Layout(Shape{IntTuple{2, 2}}, Stride{IntTuple{1, 4}}));  // 0 1 4 5
  EXPECT_EQ(vals<float>(relu(hier)), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(vals<float>(mul(hier, 2)), (std::vector<float>{0, 2, 8, 10}));
}

TYPED_TEST(FrontEnd, ResultsAreFreshStorageOfTheOperandClass) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const Tensor r = add(a, a);
  EXPECT_NE(r.carrier(), a.carrier());
  EXPECT_EQ(r.carrier()->exact_class(), carrier_class<TypeParam>());
  EXPECT_EQ(r.carrier()->version(), 0u);
  EXPECT_TRUE(r.layout().is_compact());
}

}  // namespace
