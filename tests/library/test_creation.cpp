// Issue 21, step 1: creation (<strideweave/creation.h>, <strideweave/random.h>;
// docs/creation.md): constant fills, ranges, the identity and seeded random
// tensors, with dtype and carrier choices, checked before anything is made.
#include <gtest/gtest.h>

#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/creation.h>
#include <strideweave/errors.h>
#include <strideweave/factory.h>
#include <strideweave/random.h>
#include <strideweave/threading.h>

#include <Random123/philox.h>
#include <hwy/targets.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <string>
#include <utility>
#include <cmath>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "support/logical_values.h"

namespace sw = strideweave;
using sw::testing::floats;
using sw::testing::ints;
using sw::DType;
using sw::Shape;
using sw::Tensor;

namespace {


// Every created tensor is fresh, mutable, compact and at offset 0.
void expect_fresh(const Tensor& t, const Shape& shape) {
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.layout(), sw::Layout::compact(shape));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_TRUE(t.carrier()->is_mutable());
  EXPECT_EQ(t.carrier()->size(), shape.size());
}

}  // namespace

TEST(Creation_Issue21Step1, ConstantFillsHaveTheirShapeDtypeAndCarrier) {
  const Shape s = Shape::of({2, 3});
  const Tensor z = sw::zeros(s);
  expect_fresh(z, s);
  EXPECT_EQ(&z.dtype(), &DType::Float32());
  EXPECT_EQ(z.carrier_type(), sw::carrier_class<sw::CPU>());
  EXPECT_EQ(floats(z), std::vector<float>(6, 0.0f));

  const Tensor o = sw::ones(s, DType::Int32(), sw::carrier_class<sw::Generic>());
  expect_fresh(o, s);
  EXPECT_EQ(o.carrier_type(), sw::carrier_class<sw::Generic>());
  EXPECT_EQ(ints(o), std::vector<std::int32_t>(6, 1));

  const Tensor b = sw::ones(Shape::of({4}), DType::Bool());
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_TRUE(b.at_ordinal(i).b);
  // Bool storage is never left unspecified, even by empty().
  const Tensor e = sw::empty(Shape::of({100}), DType::Bool());
  for (std::int64_t i = 0; i < 100; ++i) EXPECT_FALSE(e.at_ordinal(i).b);
  expect_fresh(sw::empty(s), s);

  // Zero extents and rank 0.
  EXPECT_EQ(sw::zeros(Shape::of({0, 3})).size(), 0);
  EXPECT_EQ(sw::full(Shape(), 2.5).at_ordinal(0).f, 2.5f);
}

TEST(Creation_Issue21Step1, FullInfersAndConvertsAsLiteralsDo) {
  const Shape s = Shape::of({3});
  EXPECT_EQ(&sw::full(s, 7).dtype(), &DType::Int32());
  EXPECT_EQ(&sw::full(s, 7.5).dtype(), &DType::Float32());
  EXPECT_EQ(&sw::full(s, true).dtype(), &DType::Bool());
  EXPECT_EQ(floats(sw::full(s, 7, &DType::Float32())), std::vector<float>(3, 7.0f));
  // A float is never truncated to Int32; an integer outside Int32 is refused;
  // a dtype no carrier stores is the literal rule's ValueError.
  EXPECT_THROW(sw::full(s, 0.5, &DType::Int32()), sw::TypeError);
  EXPECT_THROW(sw::full(s, std::int64_t{1} << 40, &DType::Int32()), sw::OverflowError);
  EXPECT_THROW(sw::full(s, 1.0, &DType::Float64()), sw::ValueError);
  EXPECT_THROW(sw::ones(s, DType::Float64()), sw::ValueError);
  EXPECT_THROW(sw::zeros(s, DType::Float64()), sw::ValueError);
}

TEST(Creation_Issue21Step1, LikeFunctionsFollowTheirPrototype) {
  const Tensor g = sw::make_tensor<sw::Generic, float>({1, 2, 3, 4, 5, 6}, Shape::of({3, 2}));
  const Tensor view = g.permute({1, 0});
  const Tensor z = sw::zeros_like(view);
  expect_fresh(z, view.shape());
  EXPECT_EQ(z.carrier_type(), sw::carrier_class<sw::Generic>());
  EXPECT_NE(z.carrier(), g.carrier());
  const Tensor f = sw::full_like(view, 3, &DType::Int32(), sw::CarrierChoice::of<sw::CPU>());
  EXPECT_EQ(f.carrier_type(), sw::carrier_class<sw::CPU>());
  EXPECT_EQ(ints(f), std::vector<std::int32_t>(6, 3));
  EXPECT_EQ(&sw::ones_like(view).dtype(), &DType::Float32());
  EXPECT_EQ(sw::empty_like(view).shape(), view.shape());
  // A released prototype still makes storage of its class.
  g.carrier()->release();
  EXPECT_EQ(sw::CarrierChoice(*g.carrier()).allocate(2, DType::Float32())->size(), 2);
}

TEST(Creation_Issue21Step1, ArangeCountsAndValuesAsNumpyDoes) {
  EXPECT_EQ(ints(sw::arange(5)), (std::vector<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ints(sw::arange(5, 0, -2)), (std::vector<std::int32_t>{5, 3, 1}));
  EXPECT_EQ(sw::arange(3, 3).size(), 0);
  EXPECT_EQ(sw::arange(3, 0).size(), 0);
  const Tensor f = sw::arange(0.0, 1.0, 0.25);
  EXPECT_EQ(&f.dtype(), &DType::Float32());
  EXPECT_EQ(floats(f), (std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(sw::arange(0.0, 1.0, 0.1).size(), 10);  // numpy.arange(0, 1, 0.1) has 10
  EXPECT_EQ(floats(sw::arange(1, 4, 1, &DType::Float32())), (std::vector<float>{1, 2, 3}));
  // Element i is start + i * step, exactly for integers.
  EXPECT_EQ(sw::arange(2147483640, 2147483647, 3).at_ordinal(2).i, 2147483646);
  EXPECT_THROW(sw::arange(0, 5, 0), sw::ValueError);
  EXPECT_THROW(sw::arange(0.0, 5.0, 0.0), sw::ValueError);
  EXPECT_THROW(sw::arange(0.0, INFINITY, 1.0), sw::ValueError);
  EXPECT_THROW(sw::arange(0, 3000000000LL), sw::OverflowError);
  EXPECT_THROW(sw::arange(0.0, 3.0, 1.0, &DType::Int32()), sw::TypeError);
  EXPECT_THROW(sw::arange(false, true, 1), sw::TypeError);
  EXPECT_THROW(sw::arange(0, 3, 1, &DType::Bool()), sw::TypeError);
}

TEST(Creation_Issue21Step1, LinspaceEndsExactlyAtStop) {
  EXPECT_EQ(floats(sw::linspace(0.0, 1.0, 5)), (std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f, 1.0f}));
  EXPECT_EQ(floats(sw::linspace(0.0, 1.0, 4, false)), (std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(floats(sw::linspace(0.1, 0.7, 7)).back(), 0.7f);
  EXPECT_EQ(floats(sw::linspace(3.0, 9.0, 1)), (std::vector<float>{3.0f}));
  EXPECT_EQ(sw::linspace(0.0, 1.0, 0).size(), 0);
  EXPECT_EQ(sw::linspace(0.0, 1.0).size(), 50);
  EXPECT_THROW(sw::linspace(0.0, 1.0, -1), sw::ValueError);
  EXPECT_THROW(sw::linspace(0.0, NAN, 3), sw::ValueError);
  EXPECT_THROW(sw::linspace(0.0, 4.0, 5, true, DType::Int32()), sw::TypeError);
}

TEST(Creation_Issue21Step1, EyeHasOnesOnTheKthDiagonal) {
  const Tensor i3 = sw::eye(3);
  expect_fresh(i3, Shape::of({3, 3}));
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t c = 0; c < 3; ++c) EXPECT_EQ(i3.at({r, c}).f, r == c ? 1.0f : 0.0f);
  const Tensor k = sw::eye(2, 3, 1, DType::Int32(), sw::carrier_class<sw::Generic>());
  EXPECT_EQ(k.shape(), Shape::of({2, 3}));
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t c = 0; c < 3; ++c) EXPECT_EQ(k.at({r, c}).i, c - r == 1 ? 1 : 0);
  EXPECT_EQ(sw::eye(0).size(), 0);
  EXPECT_THROW(sw::eye(-1), sw::ValueError);
}

TEST(Creation_Issue21Step1, ClassesThatCannotBeBuiltFromNothingAskForAPrototype) {
  EXPECT_THROW((void)sw::CarrierChoice(sw::carrier_class<sw::FileBacked>()), sw::TypeError);
  // A prototype instance of any class makes storage of that class.
  const Tensor g = sw::make_tensor<sw::Generic, float>({1}, Shape::of({1}));
  EXPECT_EQ(sw::zeros(Shape::of({2}), DType::Float32(), *g.carrier()).carrier_type(),
            sw::carrier_class<sw::Generic>());
}

TEST(Creation_Issue21Step1, PhiloxKnownAnswers) {
  // Random123's known-answer vector for Philox4x32-10 at key 0, counter 0.
  const sw::random::DrawWords zero = sw::random::draw_words(0, 0, 0);
  EXPECT_EQ(zero.w[0], 0x6627e8d5u);
  EXPECT_EQ(zero.w[1], 0xe169c58du);
  EXPECT_EQ(zero.w[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.w[3], 0x9b00dbd8u);
  // The documented layout: key (seed low, seed high), counter (counter low,
  // counter high, 0, attempt), checked against Random123's own class.
  for (const auto& [seed, counter, attempt] :
       {std::tuple{0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 7u}, std::tuple{~0ull, ~0ull, ~0u}}) {
    const r123::Philox4x32::ctr_type c = {{static_cast<std::uint32_t>(counter),
                                           static_cast<std::uint32_t>(counter >> 32), 0u, attempt}};
    const r123::Philox4x32::key_type k = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const r123::Philox4x32::ctr_type r = r123::Philox4x32()(c, k);
    const sw::random::DrawWords d = sw::random::draw_words(seed, counter, attempt);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(d.w[w], r.v[w]);
  }
}

TEST(Creation_Issue21Step1, EveryElementIsItsDocumentedWord) {
  // Every element is the documented word of Random123's draw, across the
  // ranges the threads fill, from unaligned positions and past the
  // counter's low word, whichever Highway target runs the vectorised Philox
  // (every target compiled in that this CPU runs, forced as
  // test_cpu_determinism.cpp does).
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    for (const std::uint64_t seed : {0ull, 0x243f6a8885a308d3ull, ~0ull})
      for (const std::uint64_t position : {0ull, 13ull, 0xfffffff3ull}) {
        sw::random::Generator g(seed, position);
        const std::vector<float> u = floats(g.uniform(Shape::of({203})));
        for (std::size_t k = 0; k < u.size(); ++k) {
          const sw::random::DrawWords d = sw::random::draw_words(seed, position + k / 4);
          ASSERT_EQ(u[k], static_cast<float>(d.w[k % 4] >> 8) / 16777216.0f)
              << hwy::TargetName(target) << " " << seed << " " << position << " " << k;
        }
      }
  }
  hwy::SetSupportedTargetsForTest(0);  // the real CPU again
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

namespace {

// The documented integer of element i (word i % 4 of draw position + i / 4,
// Lemire's rejection redrawing the same slot of attempt 1, 2, ...).
std::int32_t documented_integer(std::uint64_t seed, std::uint64_t position, std::uint64_t i, std::int64_t low,
                                std::uint64_t range) {
  const std::uint32_t threshold = range == (1ull << 32) ? 0 : static_cast<std::uint32_t>((1ull << 32) % range);
  for (std::uint32_t attempt = 0;; ++attempt) {
    const std::uint64_t m =
        static_cast<std::uint64_t>(sw::random::draw_words(seed, position + i / 4, attempt).w[i % 4]) * range;
    if (static_cast<std::uint32_t>(m) >= threshold) return static_cast<std::int32_t>(low + static_cast<std::int64_t>(m >> 32));
  }
}

// Box-Muller of element i (half i % 2 of draw position + i / 2) in long
// double: the value the binary64 kernels approximate.
long double documented_normal(std::uint64_t seed, std::uint64_t position, std::uint64_t i, double mean,
                              double stddev) {
  const sw::random::DrawWords d = sw::random::draw_words(seed, position + i / 2);
  const std::uint64_t a = (static_cast<std::uint64_t>(d.w[0]) << 32 | d.w[1]) >> 11;
  const std::uint64_t b = (static_cast<std::uint64_t>(d.w[2]) << 32 | d.w[3]) >> 11;
  const long double u1 = (static_cast<long double>(a) + 1) / 9007199254740992.0L;
  const long double t = 2 * 3.14159265358979323846264338327950288L * (static_cast<long double>(b) / 9007199254740992.0L);
  const long double r = std::sqrt(-2 * std::log(u1));
  return mean + stddev * r * (i % 2 == 0 ? std::cos(t) : std::sin(t));
}

}  // namespace

// normal and integers through their vector kernels (philox_batch.h), on
// every Highway target this CPU runs: integers are exactly the documented
// Lemire draw (a range that rejects about half its words included), normal
// values are within one binary32 ulp of the long-double Box-Muller and the
// same bits on every target (the kernels use no fused or target-specific
// operation), overflow past FLT_MAX included.
TEST(Creation_Issue21Step1, IntegersAndNormalsAreTheirDocumentedValuesOnEveryTarget) {
  std::vector<std::vector<float>> normals_by_target;
  std::vector<std::string> names;
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    names.push_back(hwy::TargetName(target));
    std::vector<float> all;
    for (const std::uint64_t position : {0ull, 13ull, 0xfffffff3ull}) {
      const std::uint64_t seed = 0x243f6a8885a308d3ull ^ position;
      for (const auto& [low, range] : {std::pair<std::int64_t, std::uint64_t>{-3, 7},
                                       std::pair<std::int64_t, std::uint64_t>{INT32_MIN, (1ull << 31) + 1},
                                       std::pair<std::int64_t, std::uint64_t>{INT32_MIN, 1ull << 32}}) {
        sw::random::Generator g(seed, position);
        const std::vector<std::int32_t> k = ints(g.integers(low, low + static_cast<std::int64_t>(range), Shape::of({1031})));
        for (std::size_t i = 0; i < k.size(); ++i)
          ASSERT_EQ(k[i], documented_integer(seed, position, i, low, range))
              << names.back() << " range " << range << " element " << i;
      }
      for (const auto& [mean, stddev] : {std::pair{0.0, 1.0}, std::pair{-2.5, 0.125}, std::pair{3.0e38, 1.0e38}}) {
        sw::random::Generator g(seed, position);
        const std::vector<float> n = floats(g.normal(Shape::of({1031}), mean, stddev));
        std::size_t exact = 0;
        for (std::size_t i = 0; i < n.size(); ++i) {
          const long double want = documented_normal(seed, position, i, mean, stddev);
          const float rounded = std::fabs(want) >= 3.4028235677973366e38L
                                    ? std::copysign(std::numeric_limits<float>::infinity(), static_cast<float>(want))
                                    : static_cast<float>(want);
          exact += n[i] == rounded;
          if (std::isinf(rounded) || std::isinf(n[i])) {
            // At the overflow boundary one ulp of binary32 is the step to infinity.
            EXPECT_TRUE(n[i] == rounded || n[i] == std::nextafter(rounded, 0.0f) ||
                        rounded == std::nextafter(n[i], 0.0f))
                << names.back() << " element " << i;
          } else {
            EXPECT_LE(std::fabs(static_cast<long double>(n[i]) - rounded),
                      std::fabs(static_cast<long double>(std::nextafter(rounded, INFINITY)) - rounded))
                << names.back() << " element " << i << " mean " << mean;
          }
        }
        EXPECT_GE(exact, n.size() * 99 / 100) << names.back() << " mean " << mean;
        all.insert(all.end(), n.begin(), n.end());
      }
    }
    normals_by_target.push_back(std::move(all));
  }
  hwy::SetSupportedTargetsForTest(0);  // the real CPU again
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  ASSERT_GE(normals_by_target.size(), 2u);
  for (std::size_t t = 1; t < normals_by_target.size(); ++t) {
    ASSERT_EQ(normals_by_target[t].size(), normals_by_target[0].size());
    for (std::size_t i = 0; i < normals_by_target[t].size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(normals_by_target[t][i]), std::bit_cast<std::uint32_t>(normals_by_target[0][i]))
          << names[t] << " vs " << names[0] << " value " << i;
  }
}

TEST(Creation_Issue21Step1, SameSeedSameValuesOnEveryCarrierAndThreadCount) {
  const Shape s = Shape::of({37, 29});
  const int threads = sw::num_threads();
  sw::set_num_threads(1);
  sw::random::Generator a(42);
  const std::vector<float> u1 = floats(a.uniform(s));
  const std::vector<float> n1 = floats(a.normal(s, 1.0, 2.0));
  const std::vector<std::int32_t> i1 = ints(a.integers(-5, 5, s));
  sw::set_num_threads(std::max(2, threads));
  sw::random::Generator b(42);
  EXPECT_EQ(floats(b.uniform(s, 0.0, 1.0, DType::Float32(), sw::carrier_class<sw::Generic>())), u1);
  EXPECT_EQ(floats(b.normal(s, 1.0, 2.0, DType::Float32(), sw::carrier_class<sw::Generic>())), n1);
  EXPECT_EQ(ints(b.integers(-5, 5, s, DType::Int32(), sw::carrier_class<sw::Generic>())), i1);
  sw::set_num_threads(threads);
  EXPECT_EQ(a.position(), b.position());
  // 1073 elements: 269 draws at four a draw (uniform, integers), 537 at two (normal).
  EXPECT_EQ(a.position(), 269u + 537u + 269u);
  // A generator resumed at a position continues the sequence.
  sw::random::Generator c(42, 269);
  EXPECT_EQ(floats(c.normal(s, 1.0, 2.0)), n1);
  // Element i takes word i % 4 of draw position + i / 4.
  sw::random::Generator d(42);
  const std::vector<float> four = floats(d.uniform(Shape::of({5})));
  const sw::random::DrawWords w0 = sw::random::draw_words(42, 0), w1 = sw::random::draw_words(42, 1);
  EXPECT_EQ(four[2], static_cast<float>(w0.w[2] >> 8) / 16777216.0f);
  EXPECT_EQ(four[4], static_cast<float>(w1.w[0] >> 8) / 16777216.0f);
  EXPECT_EQ(d.position(), 2u);
  // Another seed, other values; the next call, other values.
  EXPECT_NE(floats(sw::random::Generator(43).uniform(s)), u1);
  EXPECT_NE(floats(a.uniform(s)), u1);
}

// The CPU pool splits a fill into static ranges: at three threads a
// 3 * 2**16 + 5 element tensor starts its second and third ranges at
// elements 65537 and 131075, in the middle of a draw (four elements a draw:
// 65537 % 4 == 1; two a draw: 65537 is odd). Every value is the one a
// single thread writes.
TEST(Creation_Issue21Step1, RangesThatStartInsideADrawGiveTheSingleThreadValues) {
  const int threads = sw::num_threads();
  const Shape s = Shape::of({3 * 65536 + 5});
  sw::set_num_threads(1);
  sw::random::Generator one(11);
  const std::vector<float> u1 = floats(one.uniform(s)), n1 = floats(one.normal(s, 0.5, 3.0));
  const std::vector<std::int32_t> i1 = ints(one.integers(-7, 1000, s));
  sw::set_num_threads(3);
  sw::random::Generator three(11);
  EXPECT_EQ(floats(three.uniform(s)), u1);
  EXPECT_EQ(floats(three.normal(s, 0.5, 3.0)), n1);
  EXPECT_EQ(ints(three.integers(-7, 1000, s)), i1);
  sw::set_num_threads(threads);
}

TEST(Creation_Issue21Step1, DistributionsHaveTheirRangeAndMoments) {
  sw::random::Generator g(7);
  const std::vector<float> u = floats(g.uniform(Shape::of({100000}), -2.0, 3.0));
  EXPECT_TRUE(std::all_of(u.begin(), u.end(), [](float v) { return v >= -2.0f && v < 3.0f; }));
  EXPECT_NEAR(std::accumulate(u.begin(), u.end(), 0.0) / u.size(), 0.5, 0.03);
  const std::vector<float> n = floats(g.normal(Shape::of({100000}), 3.0, 2.0));
  const double mean = std::accumulate(n.begin(), n.end(), 0.0) / n.size();
  double var = 0;
  for (float v : n) var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 3.0, 0.03);
  EXPECT_NEAR(std::sqrt(var / n.size()), 2.0, 0.03);
  const std::vector<std::int32_t> k = ints(g.integers(-3, 4, Shape::of({10000})));
  EXPECT_EQ(std::set<std::int32_t>(k.begin(), k.end()), (std::set<std::int32_t>{-3, -2, -1, 0, 1, 2, 3}));
  // The whole Int32 range, and a one-value range.
  const std::vector<std::int32_t> wide = ints(g.integers(INT32_MIN, std::int64_t{INT32_MAX} + 1, Shape::of({64})));
  EXPECT_GT(std::set<std::int32_t>(wide.begin(), wide.end()).size(), 60u);
  EXPECT_EQ(ints(g.integers(9, 10, Shape::of({3}))), (std::vector<std::int32_t>{9, 9, 9}));
  // A narrow Float32 interval never yields high.
  const std::vector<float> narrow = floats(g.uniform(Shape::of({1000}), 1.0, std::nextafter(1.0f, 2.0f)));
  EXPECT_TRUE(std::all_of(narrow.begin(), narrow.end(), [](float v) { return v == 1.0f; }));
}

TEST(Creation_Issue21Step1, PermutationsArePermutations) {
  sw::random::Generator g(3);
  std::vector<std::int32_t> p = ints(g.permutation(1000));
  EXPECT_EQ(g.position(), 250u);  // 999 steps, four a draw
  std::vector<std::int32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int32_t> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(p, expected);
  EXPECT_EQ(g.permutation(0).size(), 0);
  EXPECT_EQ(ints(g.permutation(1)), std::vector<std::int32_t>{0});

  // permutation(x) permutes axis 0 with the same draws as permutation(n).
  const Tensor x = sw::tensor<sw::CPU>({{1.0f, 10.0f}, {2.0f, 20.0f}, {3.0f, 30.0f}, {4.0f, 40.0f}});
  sw::random::Generator h(11), h2(11);
  const Tensor px = h.permutation(x);
  const std::vector<std::int32_t> order = ints(h2.permutation(4));
  for (std::int64_t i = 0; i < 4; ++i) {
    const std::int64_t from = order[static_cast<std::size_t>(i)];
    EXPECT_EQ(px.at({i, 0}).f, x.at({from, 0}).f);
    EXPECT_EQ(px.at({i, 1}).f, x.at({from, 1}).f);
  }
  EXPECT_THROW(g.permutation(-1), sw::ValueError);
  EXPECT_THROW(g.permutation((std::int64_t{1} << 31) + 1), sw::ValueError);
}

TEST(Creation_Issue21Step1, AFailedCallTakesNoDraws) {
  sw::random::Generator g(5);
  (void)g.uniform(Shape::of({4}));
  const std::uint64_t before = g.position();
  EXPECT_THROW(g.uniform(Shape::of({4}), 1.0, 1.0), sw::ValueError);
  EXPECT_THROW(g.uniform(Shape::of({4}), 0.0, 1.0, DType::Int32()), sw::TypeError);
  EXPECT_THROW(g.normal(Shape::of({4}), 0.0, -1.0), sw::ValueError);
  EXPECT_THROW(g.integers(0, 0, Shape::of({4})), sw::ValueError);
  EXPECT_THROW(g.integers(0, std::int64_t{1} << 32, Shape::of({4})), sw::OverflowError);
  // Failing after the draws were reserved (gather refuses Int32 data) gives them back.
  const Tensor ints_x = sw::make_tensor<sw::CPU, std::int32_t>({1, 2, 3}, Shape::of({3}));
  EXPECT_ANY_THROW(g.permutation(ints_x));
  EXPECT_EQ(g.position(), before);
}

TEST(Creation_Issue21Step1, ConcurrentCallsTakeDisjointDraws) {
  sw::random::Generator g(9);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) (void)g.uniform(Shape::of({10}));
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(g.position(), 4u * 50u * 3u);  // 10 elements: 3 draws
}

// Review fixes: bounds beyond the Float32 range are refused (a cast would be
// undefined), and a generator never passes 2**64 draws (it would repeat).
TEST(Creation_Issue21Step1, ReviewFixes) {
  sw::random::Generator g(1);
  EXPECT_THROW(g.uniform(Shape::of({8}), 0.0, 1e39), sw::ValueError);
  EXPECT_THROW(g.uniform(Shape::of({8}), -1e39, 0.0), sw::ValueError);
  EXPECT_THROW(g.normal(Shape::of({8}), 1e300, 1.0), sw::ValueError);
  EXPECT_EQ(g.position(), 0u);
  sw::random::Generator end(1, ~std::uint64_t{0} - 1);
  EXPECT_THROW(end.uniform(Shape::of({8})), sw::OverflowError);  // two draws: past 2**64
  EXPECT_EQ(end.position(), ~std::uint64_t{0} - 1);
  EXPECT_EQ(end.uniform(Shape()).size(), 1);  // one draw still fits
  EXPECT_EQ(end.position(), ~std::uint64_t{0});
  // Values past the Float32 range round to infinity, as binary32 does.
  EXPECT_TRUE(std::isinf(floats(sw::arange(0.0, 2e39, 1e39))[1]));
  EXPECT_EQ(sw::detail::round_to_float32(3.4028235677973366e38), INFINITY);
  EXPECT_EQ(sw::detail::round_to_float32(3.4028235677973362e38), 3.4028234663852886e38f);
}
