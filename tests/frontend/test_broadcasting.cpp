// Broadcasting refusals (docs/broadcasting.md, rule 2): two aligned extents
// that are neither equal nor 1 are a ValueError naming the operation, both
// shapes and the axis, raised by the front end's broadcast_shapes before any
// broadcast view is built (a refusal from Layout::broadcast_to names no
// operation). Checked in both orders, 3 against 2 and 2 against 3, for every
// operation that broadcasts, on every shipped carrier.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

std::string refusal(const std::string& op, const std::string& a, const std::string& b, int axis, int ea, int eb) {
  return op + ": shapes " + a + " and " + b + " do not broadcast (axis " + std::to_string(axis) + ": " +
         std::to_string(ea) + " vs " + std::to_string(eb) + ")";
}

TEST(Broadcasting, BroadcastShapesRefusesIncompatibleExtentsInBothOrders) {
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{3}, Shape{2}, "add"), ValueError,
                                    refusal("add", "(3)", "(2)", 0, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{2}, Shape{3}, "add"), ValueError,
                                    refusal("add", "(2)", "(3)", 0, 2, 3));
  // Right-aligned: the axis is counted in the result's rank.
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{2, 3}, Shape{2}, "sub"), ValueError,
                                    refusal("sub", "(2,3)", "(2)", 1, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{2}, Shape{4, 3}, "sub"), ValueError,
                                    refusal("sub", "(2)", "(4,3)", 1, 2, 3));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{3, 1, 5}, Shape{2, 4}, "mul"), ValueError,
                                    refusal("mul", "(3,1,5)", "(2,4)", 2, 5, 4));
  // Extent 0 is an ordinary extent: it broadcasts with 1 only.
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(broadcast_shapes(Shape{0}, Shape{2}, "add"), ValueError,
                                    refusal("add", "(0)", "(2)", 0, 0, 2));
  // Compatible shapes, both orders.
  EXPECT_EQ(broadcast_shapes(Shape{3}, Shape{1}, "add"), (Shape{3}));
  EXPECT_EQ(broadcast_shapes(Shape{1}, Shape{3}, "add"), (Shape{3}));
  EXPECT_EQ(broadcast_shapes(Shape{2, 1}, Shape{3}, "add"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{3}, Shape{2, 1}, "add"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{0, 3}, Shape{1, 3}, "add"), (Shape{0, 3}));
}

class BroadcastRefusal : public ::testing::TestWithParam<std::size_t> {
 protected:
  const ShippedCarrier& carrier() const { return shipped_carriers()[GetParam()]; }
  Tensor filled(const Shape& shape, const Value& v, const SimpleDType& dtype) const {
    return Tensor(carrier().make(std::vector<Value>(static_cast<std::size_t>(shape.size()), v), dtype), shape);
  }
  Tensor f32(std::int64_t n) const { return filled(Shape{n}, Value::from_float32(1.0f), DType::Float32()); }
  Tensor f32(const Shape& shape) const { return filled(shape, Value::from_float32(1.0f), DType::Float32()); }
  Tensor boolean(std::int64_t n) const { return filled(Shape{n}, Value::from_bool(true), DType::Bool()); }
};

std::string carrier_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return std::string(shipped_carriers()[info.param].name);
}

INSTANTIATE_TEST_SUITE_P(EveryShippedCarrier, BroadcastRefusal,
                         ::testing::Range<std::size_t>(0, shipped_carriers().size()), carrier_name);

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST_P(BroadcastRefusal, ElementwiseOperationsRefuseThreeAgainstTwoAndTwoAgainstThree) {
  const std::vector<std::pair<std::string, Binary>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"elementwise_mul", [](const Tensor& a, const Tensor& b) { return elementwise_mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"rem", [](const Tensor& a, const Tensor& b) { return rem(a, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
  };
  const Tensor three = f32(3), two = f32(2);
  const auto v3 = three.carrier()->version(), v2 = two.carrier()->version();
  for (const auto& [name, fn] : ops) {
    EXPECT_THROW_EXACTLY_WITH_MESSAGE(fn(three, two), ValueError, refusal(name, "(3)", "(2)", 0, 3, 2));
    EXPECT_THROW_EXACTLY_WITH_MESSAGE(fn(two, three), ValueError, refusal(name, "(2)", "(3)", 0, 2, 3));
    // Ranks differ: the refusal is at the aligned axis.
    EXPECT_THROW_EXACTLY_WITH_MESSAGE(fn(f32(Shape{4, 3}), two), ValueError, refusal(name, "(4,3)", "(2)", 1, 3, 2));
    EXPECT_THROW_EXACTLY_WITH_MESSAGE(fn(two, f32(Shape{4, 3})), ValueError, refusal(name, "(2)", "(4,3)", 1, 2, 3));
    // The by-name entry point (tools, the later Python binding) refuses alike.
    const std::vector<CallOperand> operands{three, two};
    EXPECT_THROW_EXACTLY_WITH_MESSAGE(call_operation(name, operands), ValueError, refusal(name, "(3)", "(2)", 0, 3, 2));
  }
  EXPECT_EQ(three.carrier()->version(), v3);
  EXPECT_EQ(two.carrier()->version(), v2);
}

TEST_P(BroadcastRefusal, ThreeOperandOperationsRefuseAtTheOperandThatDoesNotFit) {
  const Tensor three = f32(3), two = f32(2);
  // The first two operands broadcast to (3); the third does not fit it.
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(clamp(three, f32(1), two), ValueError, refusal("clamp", "(3)", "(2)", 0, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(clamp(two, three, f32(1)), ValueError, refusal("clamp", "(2)", "(3)", 0, 2, 3));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(clamp(three, two, 1.0), ValueError, refusal("clamp", "(3)", "(2)", 0, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(select(boolean(3), two, three), ValueError,
                                    refusal("select", "(3)", "(2)", 0, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(select(boolean(2), three, two), ValueError,
                                    refusal("select", "(2)", "(3)", 0, 2, 3));
}

TEST_P(BroadcastRefusal, MatmulRefusesBatchExtentsThreeAgainstTwo) {
  // The batch axes broadcast; the matrix axes (2, 2) x (2, 2) agree.
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(matmul(f32(Shape{3, 2, 2}), f32(Shape{2, 2, 2})), ValueError,
                                    refusal("matmul", "(3)", "(2)", 0, 3, 2));
  EXPECT_THROW_EXACTLY_WITH_MESSAGE(matmul(f32(Shape{2, 2, 2}), f32(Shape{3, 2, 2})), ValueError,
                                    refusal("matmul", "(2)", "(3)", 0, 2, 3));
}

}  // namespace
