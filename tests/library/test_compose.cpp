// Issue 21, step 2: everyday functions composed from the registered
// operations and views (<strideweave/compose.h>, docs/composition.md): the
// same values on the recorded and the storage paths, gradients through the
// operations they use, and errors before anything is made.
#include <gtest/gtest.h>

#include <strideweave/autograd.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/compose.h>
#include <strideweave/creation.h>
#include <strideweave/errors.h>
#include <strideweave/factory.h>
#include <strideweave/ops.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "support/logical_values.h"

namespace sw = strideweave;
using sw::testing::floats;
using sw::testing::ints;
using sw::testing::bools;
using sw::DType;
using sw::Shape;
using sw::Tensor;

namespace {

// The gradient of sum(y * w) with respect to x (w: 1, 2, 3, ... in logical order).
std::vector<float> weighted_gradient(const Tensor& y, const Tensor& x) {
  const sw::CarrierChoice on(*y.carrier());
  const Tensor w = sw::arange(1, y.size() + 1, 1, &DType::Float32(), on).reshape(y.shape());
  y.backward(w);
  return floats(*x.grad());
}

}  // namespace

TEST(Compose_Issue21Step2, CloneIsBitForBitOnBothPaths) {
  const Tensor x = sw::tensor<sw::CPU>({0.0f, -0.0f, 1.5f, -INFINITY});
  const Tensor recorded = sw::clone(x);
  EXPECT_FALSE(recorded.is_leaf());
  Tensor stored = x;
  {
    sw::NoGradGuard no_grad;
    stored = sw::clone(x);
  }
  EXPECT_TRUE(stored.is_leaf());
  for (const Tensor& c : {recorded, stored}) {
    EXPECT_NE(c.carrier(), x.carrier());
    for (std::int64_t i = 0; i < 4; ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(c.at_ordinal(i).f), std::bit_cast<std::uint32_t>(x.at_ordinal(i).f));
  }
  const Tensor v = sw::tensor<sw::CPU>({1.0f, 2.0f});
  EXPECT_EQ(weighted_gradient(sw::clone(v), v), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(ints(sw::clone(sw::tensor<sw::Generic>({1, 2}))), (std::vector<std::int32_t>{1, 2}));
}

TEST(Compose_Issue21Step2, AstypeConvertsThroughTheOperations) {
  const Tensor i = sw::tensor<sw::CPU>({-3, 0, 16777217});
  EXPECT_EQ(floats(sw::astype(i, DType::Float32())), (std::vector<float>{-3.0f, 0.0f, 16777216.0f}));
  EXPECT_EQ(bools(sw::astype(i, DType::Bool())), (std::vector<bool>{true, false, true}));
  const Tensor b = sw::tensor<sw::Generic>({true, false});
  EXPECT_EQ(floats(sw::astype(b, DType::Float32())), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(ints(sw::astype(b, DType::Int32())), (std::vector<std::int32_t>{1, 0}));
  const Tensor f = sw::tensor<sw::CPU>({2.7f, -2.7f, -0.0f, NAN});
  EXPECT_EQ(bools(sw::astype(f, DType::Bool())), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(ints(sw::astype(f.slice(0, 0, 3), DType::Int32())), (std::vector<std::int32_t>{2, -2, 0}));
  EXPECT_THROW(sw::astype(f, DType::Int32()), sw::ValueError);  // NaN has no Int32 value
  EXPECT_THROW(sw::astype(sw::tensor<sw::CPU>({3.0e9f}), DType::Int32()), sw::ValueError);
  EXPECT_EQ(ints(sw::astype(sw::tensor<sw::CPU>({-2147483648.0f}), DType::Int32())),
            (std::vector<std::int32_t>{INT32_MIN}));
  EXPECT_THROW(sw::astype(f, DType::Float64()), sw::ValueError);
  // The Float32 -> Float32 copy keeps the graph.
  const Tensor v = sw::tensor<sw::CPU>({1.0f, 2.0f});
  EXPECT_EQ(weighted_gradient(sw::astype(v, DType::Float32()), v), (std::vector<float>{1.0f, 2.0f}));
}

TEST(Compose_Issue21Step2, CopyToLeavesTheSourceAndCarriesTheGradient) {
  const Tensor x = sw::tensor<sw::CPU>({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}}).permute({1, 0});
  const std::uint64_t version = x.carrier()->version();
  const Tensor g = sw::copy_to(x, sw::carrier_class<sw::Generic>());
  EXPECT_EQ(g.carrier_type(), sw::carrier_class<sw::Generic>());
  EXPECT_EQ(floats(g), floats(x));
  EXPECT_TRUE(g.layout().is_compact());
  EXPECT_FALSE(x.carrier()->is_released());
  EXPECT_EQ(x.carrier()->version(), version);
  const Tensor base = sw::tensor<sw::CPU>({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(sw::copy_to(base, sw::carrier_class<sw::Generic>()).is_leaf());  // records nothing
  // Into a given carrier (an empty FileBacked, sized by the move).
  const auto file = sw::FileBacked::create(std::nullopt, DType::Float32());
  const Tensor on_file = sw::copy_to(base, file);
  EXPECT_EQ(on_file.carrier(), file);
  EXPECT_EQ(floats(on_file), (std::vector<float>{1.0f, 2.0f, 3.0f}));
  EXPECT_THROW(sw::copy_to(base, sw::carrier_class<sw::FileBacked>()), sw::TypeError);
}

TEST(Compose_Issue21Step2, ReshapeInNumpysOrder) {
  const Tensor x = sw::arange(6);
  const Tensor c = sw::reshape(x, Shape::of({2, 3}), sw::ReshapeOrder::row_major);
  const Tensor f = sw::reshape(x, Shape::of({2, 3}), sw::ReshapeOrder::first_mode_fastest);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(c.at({i, j}).i, 3 * i + j);  // numpy.arange(6).reshape(2, 3)
      EXPECT_EQ(f.at({i, j}).i, i + 2 * j);  // the logical order
    }
  EXPECT_EQ(c.carrier(), x.carrier());  // a view
  // (2, 3) -> (3, 2) in row-major order cannot be a view of a compact
  // first-mode-fastest tensor: a view of a copy, with the same elements.
  const Tensor back = sw::reshape(c, Shape::of({3, 2}), sw::ReshapeOrder::row_major);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) EXPECT_EQ(back.at({i, j}).i, 2 * i + j);
  EXPECT_THROW(sw::reshape(x, Shape::of({4}), sw::ReshapeOrder::row_major), sw::ValueError);
  EXPECT_EQ(sw::transpose(c).shape(), Shape::of({3, 2}));
  EXPECT_EQ(sw::transpose(c).at({2, 1}).i, c.at({1, 2}).i);
}

TEST(Compose_Issue21Step2, ConcatenateOnBothPathsAndItsGradient) {
  const Tensor a = sw::tensor<sw::CPU>({{1.0f, 2.0f}, {3.0f, 4.0f}});
  const Tensor b = sw::tensor<sw::CPU>({{5.0f, 6.0f}});
  const std::vector<Tensor> ab{a, b};
  const Tensor recorded = sw::concatenate(ab, 0);
  EXPECT_FALSE(recorded.is_leaf());
  Tensor stored = recorded;
  {
    sw::NoGradGuard no_grad;
    stored = sw::concatenate(ab, 0);
  }
  for (const Tensor& r : {recorded, stored}) {
    EXPECT_EQ(r.shape(), Shape::of({3, 2}));
    EXPECT_EQ(r.at({2, 1}).f, 6.0f);
    EXPECT_EQ(r.at({1, 0}).f, 3.0f);
    EXPECT_TRUE(r.layout().is_compact());
  }
  // Along axis 1, with a transposed (non-compact) input.
  const std::vector<Tensor> side{a, sw::transpose(b)};  // (2, 2) beside (2, 1) along 0: extents differ off the axis
  EXPECT_THROW(sw::concatenate(side, 0), sw::ValueError);
  const std::vector<Tensor> cols{a, sw::transpose(sw::tensor<sw::CPU>({{9.0f, 8.0f}}))};  // a non-compact input
  const Tensor joined = sw::concatenate(cols, -1);
  EXPECT_EQ(joined.shape(), Shape::of({2, 3}));
  EXPECT_EQ(joined.at({1, 2}).f, 8.0f);
  EXPECT_EQ(joined.at({0, 1}).f, 2.0f);
  // The gradient of each input is its block of the cotangent.
  const Tensor y = sw::concatenate(ab, 0);
  const Tensor w = sw::add(sw::arange(1, 7, 1, &DType::Float32()).reshape(Shape::of({3, 2})), sw::zeros(Shape::of({3, 2})));
  y.backward(w);
  EXPECT_EQ(floats(*a.grad()), (std::vector<float>{1.0f, 2.0f, 4.0f, 5.0f}));
  EXPECT_EQ(floats(*b.grad()), (std::vector<float>{3.0f, 6.0f}));
  // Int32 and Generic take the storage path whatever the grad mode.
  const std::vector<Tensor> is{sw::tensor<sw::Generic>({1, 2}), sw::tensor<sw::Generic>({3})};
  EXPECT_EQ(ints(sw::concatenate(is)), (std::vector<std::int32_t>{1, 2, 3}));
  // Errors, before anything is made.
  const std::vector<Tensor> mixed{a, sw::tensor<sw::CPU>({{1, 2}})};
  EXPECT_THROW(sw::concatenate(mixed), sw::TypeError);
  const std::vector<Tensor> carriers{a, sw::tensor<sw::Generic>({{1.0f, 2.0f}})};
  EXPECT_THROW(sw::concatenate(carriers), sw::TypeError);
  EXPECT_THROW(sw::concatenate(std::vector<Tensor>{}), sw::ValueError);
  const std::vector<Tensor> scalars{sw::full(Shape(), 1.0)};
  EXPECT_THROW(sw::concatenate(scalars), sw::ValueError);
  EXPECT_THROW(sw::concatenate(ab, 2), sw::ValueError);
}

TEST(Compose_Issue21Step2, StackAndSplit) {
  const Tensor a = sw::tensor<sw::CPU>({1.0f, 2.0f}), b = sw::tensor<sw::CPU>({3.0f, 4.0f});
  const std::vector<Tensor> ab{a, b};
  const Tensor s0 = sw::stack(ab, 0), s1 = sw::stack(ab, -1);
  EXPECT_EQ(s0.shape(), Shape::of({2, 2}));
  EXPECT_EQ(s0.at({1, 0}).f, 3.0f);  // numpy.stack([a, b])[1, 0]
  EXPECT_EQ(s1.at({1, 0}).f, 2.0f);  // numpy.stack([a, b], -1)[1, 0]
  EXPECT_THROW(sw::stack(std::vector<Tensor>{a, sw::tensor<sw::CPU>({1.0f})}), sw::ValueError);
  EXPECT_THROW(sw::stack(ab, 2), sw::ValueError);

  const Tensor x = sw::arange(10);
  const std::vector<Tensor> halves = sw::split(x, 2);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(ints(halves[1]), (std::vector<std::int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(halves[1].carrier(), x.carrier());  // views
  EXPECT_THROW(sw::split(x, 3), sw::ValueError);
  const std::vector<std::int64_t> points{3, -2, 20};  // numpy.split(arange(10), [3, -2, 20])
  const std::vector<Tensor> parts = sw::split(x, std::span<const std::int64_t>(points));
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(ints(parts[0]), (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(ints(parts[1]), (std::vector<std::int32_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(ints(parts[2]), (std::vector<std::int32_t>{8, 9}));
  EXPECT_EQ(parts[3].size(), 0);
}

TEST(Compose_Issue21Step2, MeanVarStd) {
  const Tensor x = sw::tensor<sw::CPU>({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 9.0f}});
  EXPECT_EQ(floats(sw::mean(x)), (std::vector<float>{4.0f}));
  EXPECT_EQ(floats(sw::mean(x, 1)), (std::vector<float>{2.0f, 6.0f}));
  EXPECT_EQ(sw::mean(x, 0, true).shape(), Shape::of({1, 3}));
  EXPECT_EQ(floats(sw::var(x, 1)), (std::vector<float>{2.0f / 3.0f, 14.0f / 3.0f}));
  EXPECT_EQ(floats(sw::var(x, 1, 1)), (std::vector<float>{1.0f, 7.0f}));
  EXPECT_FLOAT_EQ(floats(sw::stddev(x, 1, 1))[1], std::sqrt(7.0f));
  EXPECT_EQ(floats(sw::mean(sw::tensor<sw::CPU>({1, 2}))), (std::vector<float>{1.5f}));  // Int32: converted first
  EXPECT_TRUE(std::isnan(floats(sw::mean(sw::zeros(Shape::of({0}))))[0]));
  EXPECT_TRUE(std::isinf(floats(sw::var(sw::tensor<sw::CPU>({1.0f}), sw::Axes::all(), 1))[0]) ||
              std::isnan(floats(sw::var(sw::tensor<sw::CPU>({1.0f}), sw::Axes::all(), 1))[0]));
  EXPECT_THROW(sw::var(x, 1, -1), sw::ValueError);
  const Tensor v = sw::tensor<sw::CPU>({1.0f, 3.0f});
  EXPECT_EQ(weighted_gradient(sw::mean(v), v), (std::vector<float>{0.5f, 0.5f}));
}

TEST(Compose_Issue21Step2, SoftmaxIsStableAndDifferentiable) {
  const Tensor x = sw::tensor<sw::CPU>({{1000.0f, 1001.0f}, {-5.0f, -5.0f}});
  const std::vector<float> s = floats(sw::softmax(x, 1));
  EXPECT_NEAR(s[0], 1.0f / (1.0f + std::exp(1.0f)), 1e-6f);  // logical order: (0,0), (1,0), (0,1), (1,1)
  EXPECT_FLOAT_EQ(s[1], 0.5f);
  const std::vector<float> l = floats(sw::log_softmax(x, 1));
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(std::exp(l[k]), s[k], 1e-6f);
  // sum(softmax) is 1 whatever x is: its gradient is zero.
  const Tensor v = sw::tensor<sw::CPU>({0.5f, -1.0f, 2.0f});
  sw::reduce_sum(sw::softmax(v, 0), sw::Axes::all(), true).backward();
  for (float g : floats(*v.grad())) EXPECT_NEAR(g, 0.0f, 1e-6f);
  EXPECT_THROW(sw::softmax(sw::tensor<sw::CPU>({1, 2}), 0), sw::TypeError);
}

TEST(Compose_Issue21Step2, ComparisonScalarsAreTheTensorsDtypeWhenExact) {
  const Tensor f = sw::tensor<sw::CPU>({-1.0f, 0.5f});
  EXPECT_EQ(&sw::comparison_scalar(f, 0).dtype(), &DType::Float32());
  EXPECT_EQ(bools(sw::lt(sw::comparison_scalar(f, 0), f)), (std::vector<bool>{false, true}));  // 0 < f
  EXPECT_THROW(sw::comparison_scalar(f, (1 << 24) + 1), sw::TypeError);
  EXPECT_THROW(sw::comparison_scalar(f, 0.1), sw::TypeError);
  EXPECT_EQ(sw::comparison_scalar(f, 0.5).at_ordinal(0).f, 0.5f);
  const Tensor i = sw::tensor<sw::CPU>({1, 2});
  EXPECT_EQ(sw::comparison_scalar(i, 2.0).at_ordinal(0).i, 2);
  EXPECT_THROW(sw::comparison_scalar(i, 0.5), sw::TypeError);
  EXPECT_THROW(sw::comparison_scalar(i, std::int64_t{1} << 40), sw::TypeError);
  const Tensor b = sw::tensor<sw::CPU>({true});
  EXPECT_EQ(sw::comparison_scalar(b, true).at_ordinal(0).b, true);
  EXPECT_THROW(sw::comparison_scalar(b, 1), sw::TypeError);
  EXPECT_THROW(sw::comparison_scalar(f, true), sw::TypeError);
}

// Review fixes: a row-major reshape is a view only when it has the asked-for
// (flat) shape; split follows numpy for unsorted and negative points; a
// recorded join whose scatter indices would leave Int32 says so.
TEST(Compose_Issue21Step2, ReviewFixes) {
  const Tensor a = sw::tensor<sw::CPU>({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}});
  const Tensor r = sw::reshape(a, Shape::of({6}), sw::ReshapeOrder::row_major);
  EXPECT_EQ(r.shape(), Shape::of({6}));  // not a nested view of another shape
  EXPECT_EQ(floats(r), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(floats(r.slice(0, 1, 3)), (std::vector<float>{2, 3}));

  const Tensor x = sw::arange(10);
  const std::vector<std::int64_t> inverted{5, 3}, negative{-3, 2};
  const std::vector<Tensor> p = sw::split(x, std::span<const std::int64_t>(inverted));
  ASSERT_EQ(p.size(), 3u);  // numpy: [0..4], [], [3..9]
  EXPECT_EQ(p[1].size(), 0);
  EXPECT_EQ(ints(p[2]), (std::vector<std::int32_t>{3, 4, 5, 6, 7, 8, 9}));
  const std::vector<Tensor> q = sw::split(x, std::span<const std::int64_t>(negative));
  ASSERT_EQ(q.size(), 3u);  // numpy: [0..6], [], [2..9]
  EXPECT_EQ(q[0].size(), 7);
  EXPECT_EQ(q[2].size(), 8);

  const Tensor huge = sw::zeros(Shape::of({std::int64_t{1} << 30, 0}));
  const std::vector<Tensor> three{huge, huge, huge};
  EXPECT_THROW(sw::concatenate(three, 0), sw::OverflowError);  // recording: scatter's Int32 indices
  sw::NoGradGuard no_grad;
  EXPECT_EQ(sw::concatenate(three, 0).shape(), Shape::of({3 * (std::int64_t{1} << 30), 0}));
}
