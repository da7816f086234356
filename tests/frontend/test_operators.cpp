// Issue 10, item 15: what a libtorch or xtensor user expects of the C++
// surface. Operators on Tensor are the operations themselves
// (ops/operators.h); C++ scalars take the policy's weak form where it has
// one (mul, pow) and otherwise become rank-0 tensors of their C++ type's
// dtype, so nothing is promoted that two tensors would not promote.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "support/expect_exactly.h"
#include "support/shipped_types.h"

namespace {

using namespace strideweave;

template <class C>
class Operators : public ::testing::Test {};
TYPED_TEST_SUITE(Operators, sw_support::ShippedCarrierTypes, sw_support::ShippedCarrierName);

std::vector<float> floats(const Tensor& t) { return TypedTensor<float>(t).values(); }
std::vector<std::int32_t> ints(const Tensor& t) { return TypedTensor<std::int32_t>(t).values(); }
std::vector<bool> bools(const Tensor& t) { return TypedTensor<bool>(t).values(); }

TYPED_TEST(Operators, ArithmeticOperatorsAreTheOperations) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor b = make_tensor<TypeParam>({4.0f, 8.0f, 16.0f}, Shape{3});
  EXPECT_EQ(floats(a + b), floats(add(a, b)));
  EXPECT_EQ(floats(a - b), floats(sub(a, b)));
  EXPECT_EQ(floats(a * b), floats(mul(a, b)));
  EXPECT_EQ(floats(b / a), floats(div(b, a)));
  EXPECT_EQ(floats(-a), (std::vector<float>{-1, -2, -3}));
  EXPECT_EQ(floats(a * b + a), (std::vector<float>{5, 18, 51}));
  // Broadcasting and carrier rules are the operations' own.
  const Tensor col = make_tensor<TypeParam>({10.0f, 20.0f}, Shape{2, 1});
  EXPECT_EQ((a + col).shape(), (Shape{2, 3}));
  EXPECT_THROW_EXACTLY(a + make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2}), ValueError);
}

TYPED_TEST(Operators, ComparisonsGiveBoolTensors) {
  const Tensor a = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor b = make_tensor<TypeParam>({3.0f, 2.0f, 1.0f}, Shape{3});
  EXPECT_EQ(&(a == b).dtype(), &DType::Bool());
  EXPECT_EQ(bools(a == b), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(a != b), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bools(a < b), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bools(a <= b), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(a > b), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(bools(a >= b), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bools(a > 1.5f), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bools(2.0f >= a), (std::vector<bool>{true, true, false}));
  // The comparisons admit Float32 operands only; an integer literal is an
  // Int32 operand, refused as an Int32 tensor would be.
  EXPECT_THROW_EXACTLY(a > 0, TypeError);
}

TYPED_TEST(Operators, WeakScalarsWhereThePolicyHasThem) {
  const Tensor i = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1, 2, 3}, Shape{3});
  // mul(tensor, weak_scalar): an integer keeps Int32, a float or bool gives Float32.
  EXPECT_EQ(&(i * 2).dtype(), &DType::Int32());
  EXPECT_EQ(ints(2 * i), (std::vector<std::int32_t>{2, 4, 6}));
  EXPECT_EQ(&(i * 0.5).dtype(), &DType::Float32());
  EXPECT_EQ(floats(i * 0.5), (std::vector<float>{0.5f, 1.0f, 1.5f}));
  EXPECT_EQ(&(i * true).dtype(), &DType::Float32());
  EXPECT_EQ(ints(pow(i, 2)), (std::vector<std::int32_t>{1, 4, 9}));
}

TYPED_TEST(Operators, OtherScalarsAreRankZeroTensorsOfTheirCppType) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  const Tensor i = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{1, 2, INT32_MAX_VALUE}, Shape{3});
  const Tensor f = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  // add(x, 1.0f) compiles and is add(x, <rank-0 Float32 tensor>).
  EXPECT_EQ(floats(add(f, 1.0f)), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(floats(f + 1), (std::vector<float>{2, 3, 4}));  // Int32 rank-0 + Float32 -> Float32, as for tensors
  EXPECT_EQ(floats(10.0 - f), (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(floats(f / 2), (std::vector<float>{0.5f, 1.0f, 1.5f}));
  EXPECT_EQ(&(i + 1.5f).dtype(), &DType::Float32());
  // An integer literal next to an Int32 tensor is checked Int32 arithmetic.
  EXPECT_EQ(&(i - 1).dtype(), &DType::Int32());
  EXPECT_THROW_EXACTLY(i + 1, OverflowError);
  EXPECT_THROW_EXACTLY(f + (std::int64_t{1} << 40), OverflowError);  // the scalar itself leaves Int32
  const Tensor s = scalar_like(f, 2.5);
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(&s.dtype(), &DType::Float32());
  EXPECT_TRUE(s.carrier_type() == f.carrier_type());
  EXPECT_EQ(&scalar_like(f, true).dtype(), &DType::Bool());
  // A caller-provided output works as for the tensor form.
  const Tensor out = make_tensor<TypeParam>({0.0f, 0.0f, 0.0f}, Shape{3});
  add(f, 1.0f, into(out));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 3, 4}));
}

TYPED_TEST(Operators, OperatorsRecordAutograd) {
  Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const Tensor y = reduce_sum(x * x + 3.0f * x);
  y.backward();
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{5, 7}));  // 2x + 3
}

}  // namespace
