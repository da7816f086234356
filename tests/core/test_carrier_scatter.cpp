// Carrier scatter (core-concepts.md 1.7; carrier.h's Carrier::scatter) on
// every shipped carrier that computes (the central list), and its version
// step (2.1). FileBacked's NotImplementedError is in
// tests/carriers/test_filebacked.cpp.
#include <strideweave/carrier.h>
#include <strideweave/errors.h>
#include <strideweave/layout.h>
#include <strideweave/tensor.h>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "support/expect_exactly.h"
#include "support/shipped_types.h"

namespace sw = strideweave;
using sw::DType;
using sw::Layout;
using sw::Shape;
using sw::Stride;
using sw::Tensor;
using sw::Value;

namespace {

Value F(float v) { return Value::from_float32(v); }

std::vector<Value> values_of(const sw::Carrier& c) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i));
  return out;
}

template <class C>
class CoreConcepts_1_7_CarrierScatter : public ::testing::Test {
 protected:
  static std::shared_ptr<sw::Carrier> make(std::vector<Value> values, bool mutable_ = true) {
    return C::from_values(values, DType::Float32(), mutable_);
  }
};
TYPED_TEST_SUITE(CoreConcepts_1_7_CarrierScatter, sw_support::ShippedCarrierTypes, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_7_CarrierScatter, SourceValueIGoesToOffsetPlusMappingOffsetPlusMappingOfI) {
  auto dest = this->make(std::vector<Value>(10, F(0)));
  // The source read in logical order (first mode fastest): a transposed view.
  auto src_carrier = this->make({F(1), F(2), F(3), F(4)});
  const Tensor source = Tensor(src_carrier, Shape{2, 2}).permute({1, 0});  // logical 1, 3, 2, 4
  const Tensor onto(dest, 1, Layout(Shape{8}, Stride{1}));
  dest->scatter(source, onto, Layout(Shape{2, 2}, Stride{2, 4}), 1);
  // slot 1 + 1 + mapping(i): mapping = 0, 2, 4, 6 for i = 0..3
  EXPECT_EQ(values_of(*dest), (std::vector<Value>{F(0), F(0), F(1), F(0), F(3), F(0), F(2), F(0), F(4), F(0)}));
  EXPECT_EQ(dest->version(), 1u);  // one versioned mutation
  EXPECT_EQ(src_carrier->version(), 0u);
}

TYPED_TEST(CoreConcepts_1_7_CarrierScatter, BadArgumentsRaiseBeforeAnyWrite) {
  auto dest = this->make({F(0), F(0), F(0), F(0)});
  auto other = this->make({F(0), F(0), F(0), F(0)});
  const Tensor source(this->make({F(7), F(8)}), Shape{2});
  const Tensor onto(dest, Shape{4});
  const Layout two(Shape{2}, Stride{1});
  EXPECT_THROW_EXACTLY(dest->scatter(source, Tensor(other, Shape{4}), two), sw::ValueError);
  EXPECT_THROW_EXACTLY(dest->scatter(source, onto, Layout(Shape{3}, Stride{1})), sw::ValueError);
  EXPECT_THROW_EXACTLY(dest->scatter(source, onto, two, -1), sw::ValueError);
  EXPECT_THROW_EXACTLY(dest->scatter(source, onto, two, 3), sw::IndexError);  // slot 4 is outside
  EXPECT_THROW_EXACTLY(dest->scatter(source, onto, Layout(Shape{2}, Stride{5})), sw::IndexError);
  const Tensor ints(TypeParam::from_values(std::vector<Value>{Value::from_int32(1), Value::from_int32(2)},
                                           DType::Int32(), true),
                    Shape{2});
  EXPECT_THROW_EXACTLY(dest->scatter(ints, onto, two), sw::TypeError);
  EXPECT_EQ(values_of(*dest), std::vector<Value>(4, F(0)));
  EXPECT_EQ(dest->version(), 0u);
  dest->scatter(source, onto, two, 2);  // the last two slots: in range
  EXPECT_EQ(values_of(*dest), (std::vector<Value>{F(0), F(0), F(7), F(8)}));
}

TYPED_TEST(CoreConcepts_1_7_CarrierScatter, NotPubliclyMutableOrReleasedIsARuntimeError) {
  auto frozen = this->make({F(0), F(0)}, false);
  const Tensor source(this->make({F(1)}), Shape{1});
  EXPECT_THROW_EXACTLY(frozen->scatter(source, Tensor(frozen, Shape{2}), Layout(Shape{1}, Stride{1})),
                       sw::RuntimeError);
  EXPECT_EQ(frozen->version(), 0u);
  auto dest = this->make({F(0), F(0)});
  const Tensor onto(dest, Shape{2});
  dest->release();
  EXPECT_THROW_EXACTLY(dest->scatter(source, onto, Layout(Shape{1}, Stride{1})), sw::RuntimeError);
}

}  // namespace
