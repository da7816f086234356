// Issue 20, step 9: basic indexing in C++ (<strideweave/indexing.h>), the
// semantics Python's Tensor.__getitem__ now only converts to. Each case is
// checked against numpy's basic-indexing result written out by hand.
#include <gtest/gtest.h>

#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>
#include <strideweave/indexing.h>

#include <numeric>
#include <vector>

namespace sw = strideweave;
using sw::IndexItem;

namespace {

// A (2, 3, 4) Float32 tensor on CPU holding 0 .. 23 in row-major order
// (numpy's np.arange(24).reshape(2, 3, 4)): element (i, j, k) = 12i + 4j + k.
sw::Tensor arange_234() {
  std::vector<sw::Value> values(24);
  // Storage is first-mode-fastest: slot i + 2j + 6k holds 12i + 4j + k.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) values[i + 2 * j + 6 * k] = sw::Value::from_float32(static_cast<float>(12 * i + 4 * j + k));
  return sw::Tensor(sw::CPU::from_values(values, sw::DType::Float32()), sw::Shape::of({2, 3, 4}));
}

float at(const sw::Tensor& t, std::initializer_list<std::int64_t> c) {
  return t.at(std::vector<std::int64_t>(c)).f;
}

std::vector<std::int64_t> extents(const sw::Tensor& t) {
  const auto e = t.shape().extents();
  return {e.begin(), e.end()};
}

TEST(Indexing_Issue20Step9, AnIntegerSelectsAndRemovesItsAxis) {
  const sw::Tensor x = arange_234();
  const sw::Tensor r = sw::index(x, {IndexItem::at(1), IndexItem::at(-1)});  // x[1, -1]
  EXPECT_EQ(extents(r), (std::vector<std::int64_t>{4}));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(at(r, {k}), static_cast<float>(12 + 8 + k));
  EXPECT_EQ(r.carrier(), x.carrier());  // a view, no copy
}

TEST(Indexing_Issue20Step9, SlicesClampAndCountFromTheEndAsPythonsDo) {
  const sw::Tensor x = arange_234();
  // x[:, 1:, ::2]
  const sw::Tensor a = sw::index(x, {IndexItem::slice(), IndexItem::slice(1), IndexItem::slice({}, {}, 2)});
  EXPECT_EQ(extents(a), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(at(a, {1, 1, 1}), 12.0f + 8.0f + 2.0f);
  // x[0, -2:100, -3:-1]: stop 100 clamps to 3, -3:-1 is 1:3.
  const sw::Tensor b = sw::index(x, {IndexItem::at(0), IndexItem::slice(-2, 100), IndexItem::slice(-3, -1)});
  EXPECT_EQ(extents(b), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(at(b, {0, 0}), 4.0f + 1.0f);
  EXPECT_EQ(at(b, {1, 1}), 8.0f + 2.0f);
  // x[:, 2:1] is empty; x[:, -100:1] is x[:, 0:1].
  EXPECT_EQ(extents(sw::index(x, {IndexItem::slice(), IndexItem::slice(2, 1)})), (std::vector<std::int64_t>{2, 0, 4}));
  EXPECT_EQ(extents(sw::index(x, {IndexItem::slice(), IndexItem::slice(-100, 1)})),
            (std::vector<std::int64_t>{2, 1, 4}));
}

TEST(Indexing_Issue20Step9, NewAxesAndOneEllipsis) {
  const sw::Tensor x = arange_234();
  // x[None, ..., 3] -> (1, 2, 3)
  const sw::Tensor a = sw::index(x, {IndexItem::new_axis(), IndexItem::ellipsis(), IndexItem::at(3)});
  EXPECT_EQ(extents(a), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(at(a, {0, 1, 2}), 12.0f + 8.0f + 3.0f);
  // x[..., None] -> (2, 3, 4, 1); x[1] keeps the untouched axes whole.
  EXPECT_EQ(extents(sw::index(x, {IndexItem::ellipsis(), IndexItem::new_axis()})),
            (std::vector<std::int64_t>{2, 3, 4, 1}));
  EXPECT_EQ(extents(sw::index(x, {IndexItem::at(1)})), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(extents(sw::index(x, {})), (std::vector<std::int64_t>{2, 3, 4}));
}

TEST(Indexing_Issue20Step9, BadIndicesAreTypedErrorsBeforeAnyView) {
  const sw::Tensor x = arange_234();
  EXPECT_THROW(sw::index(x, {IndexItem::at(2)}), sw::IndexError);
  EXPECT_THROW(sw::index(x, {IndexItem::slice(), IndexItem::at(-4)}), sw::IndexError);
  EXPECT_THROW(sw::index(x, {IndexItem::at(0), IndexItem::at(0), IndexItem::at(0), IndexItem::at(0)}),
               sw::IndexError);
  EXPECT_THROW(sw::index(x, {IndexItem::ellipsis(), IndexItem::ellipsis()}), sw::IndexError);
  EXPECT_THROW(sw::index(x, {IndexItem::slice({}, {}, 0)}), sw::ValueError);
  EXPECT_THROW(sw::index(x, {IndexItem::slice({}, {}, -1)}), sw::ValueError);
  // The out-of-bounds item comes after a valid one: still nothing is made.
  EXPECT_THROW(sw::index(x, {IndexItem::new_axis(), IndexItem::at(0), IndexItem::at(5)}), sw::IndexError);
}

}  // namespace
