// Issue 10, item 15: to_string() prints values (numpy-like, abbreviated for
// large tensors), and a row-major factory from nested initializer lists sits
// beside the logical-order make_tensor.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "support/expect_exactly.h"
#include "support/shipped_types.h"

namespace {

using namespace strideweave;

template <class C>
class PrintingAndFactories : public ::testing::Test {};
TYPED_TEST_SUITE(PrintingAndFactories, sw_support::ShippedCarrierTypes, sw_support::ShippedCarrierName);

TYPED_TEST(PrintingAndFactories, ToStringPrintsTheValuesNestedByAxisZero) {
  const std::string carrier(TypeParam::public_name);
  // Logical order (first axis fastest): element (i, j) = values[i + 2j].
  const Tensor t = make_tensor<TypeParam>({1.0f, 3.0f, 2.0f, 4.5f}, Shape{2, 2});
  EXPECT_EQ(t.to_string(), "tensor([[1.0, 2.0], [3.0, 4.5]], dtype=float32, carrier=" + carrier + ")");
  EXPECT_EQ(make_tensor<TypeParam>(std::initializer_list<std::int32_t>{-7}, Shape{}).to_string(),
            "tensor(-7, dtype=int32, carrier=" + carrier + ")");
  EXPECT_EQ(make_tensor<TypeParam>(std::initializer_list<bool>{true, false}, Shape{2}).to_string(),
            "tensor([true, false], dtype=bool, carrier=" + carrier + ")");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(make_tensor<TypeParam>({-0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-45f, 0.1f}, Shape{6}).to_string(),
            "tensor([-0.0, inf, -inf, nan, 1e-45, 0.1], dtype=float32, carrier=" + carrier + ")");
  // A view prints its own values, not the storage's.
  EXPECT_EQ(t.permute({1, 0}).to_string(), "tensor([[1.0, 3.0], [2.0, 4.5]], dtype=float32, carrier=" + carrier + ")");
  EXPECT_EQ(make_tensor<TypeParam>(std::vector<float>{}, Shape{0, 3}).to_string(),
            "tensor([], dtype=float32, carrier=" + carrier + ")");
}

TYPED_TEST(PrintingAndFactories, LargeTensorsAreAbbreviatedLikeNumpy) {
  std::vector<float> v(2000);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k);
  const Tensor t = make_tensor<TypeParam>(v, Shape{2000});
  EXPECT_EQ(t.to_string(), "tensor([0.0, 1.0, 2.0, ..., 1997.0, 1998.0, 1999.0], dtype=float32, carrier=" +
                               std::string(TypeParam::public_name) + ")");
  EXPECT_EQ(format_values(t, -1).size() > 10000, true) << "summarize_above < 0 prints every value";
  // Every long axis is cut; a short one is printed whole.
  const Tensor m = make_tensor<TypeParam>(std::vector<float>(2 * 1000, 1.0f), Shape{2, 1000});
  EXPECT_EQ(format_values(m), "[[1.0, 1.0, 1.0, ..., 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, ..., 1.0, 1.0, 1.0]]");
  EXPECT_EQ(format_values(make_tensor<TypeParam>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{4}), 2, 1), "[1.0, ..., 4.0]");
}

TYPED_TEST(PrintingAndFactories, ReleasedTensorsPrintWithoutValues) {
  const Tensor t = make_tensor<TypeParam>({1.0f}, Shape{1});
  t.carrier()->release();
  EXPECT_EQ(t.to_string(), "tensor(<released>, dtype=float32, carrier=" + std::string(TypeParam::public_name) + ")");
}

TYPED_TEST(PrintingAndFactories, NestedListsAreReadRowMajor) {
  const Tensor m = tensor<TypeParam>({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}});
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.at({0, 2}).f, 3.0f);
  EXPECT_EQ(m.at({1, 0}).f, 4.0f);
  // The same tensor through the logical-order factory.
  const Tensor same = make_tensor<TypeParam>({1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}, Shape{2, 3});
  EXPECT_EQ(m.values(), same.values());
  EXPECT_EQ(format_values(m), "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]");
  const Tensor r3 = tensor<TypeParam>({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}});
  EXPECT_EQ(&r3.dtype(), &DType::Int32());
  EXPECT_EQ(r3.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(r3.at({1, 0, 1}).i, 6);
  EXPECT_EQ(tensor<TypeParam>({true, false}).shape(), (Shape{2}));
  EXPECT_EQ(tensor<TypeParam>({{{{1.5f}}}}).shape(), (Shape{1, 1, 1, 1}));
  EXPECT_THROW_EXACTLY(tensor<TypeParam>({{1.0f, 2.0f}, {3.0f}}), ValueError);  // ragged
}

}  // namespace
