// The CPU carrier's determinism rule (issue 10; docs/numerics.md, "One
// answer per input"): exp and FLOATING reduce_sum give the same bits for the
// same logical values whatever the operand's layout (strided, permuted,
// broadcast, hierarchical), the operand dtype, the thread count and the
// Highway target the dispatcher picks; exp is within its documented error
// (0.5 ulp plus 2**-20 ulp) of e**x; reduce_sum follows the documented order
// (pieces of 4096, 64 or 32 partial sums, halving, pairwise pieces).
//
// Targets are forced with Highway's test mechanism (hwy/targets.h):
// SetSupportedTargetsForTest(target) mocks the CPU's supported set, and
// GetChosenTarget().Update re-makes the choice that HWY_DYNAMIC_DISPATCH
// caches; simd::dispatched_target() confirms which target ran. Every target
// compiled into the library that this CPU can run is checked (an AVX2-only
// machine checks AVX2, SSE4, SSSE3 and SCALAR, the baseline that Highway
// 1.0.3 builds for x86-64 without -m flags; an AVX-512 one also AVX3).
#include <gtest/gtest.h>

#include <hwy/targets.h>
#include <strideweave/strideweave.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "carriers/cpu/simd.h"

namespace {

using namespace strideweave;
namespace simd = strideweave::carriers::cpu::simd;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct ThreadGuard {
  int saved = num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

// Makes Highway's dispatcher use `target` for the guard's lifetime.
class ForcedTarget {
 public:
  explicit ForcedTarget(std::int64_t target) { choose(target); }
  ~ForcedTarget() { choose(0); }
  ForcedTarget(const ForcedTarget&) = delete;
  ForcedTarget& operator=(const ForcedTarget&) = delete;

 private:
  static void choose(std::int64_t target) {
    hwy::SetSupportedTargetsForTest(target);  // 0: the real CPU again
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
};

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

std::string hex(std::uint32_t u) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", u);
  return text;
}

std::vector<float> values_of(const Tensor& t) { return TypedTensor<float>(t).values(); }

// Bit-for-bit equality of two result vectors; `nan_any` lets any NaN match
// any NaN (a sum's NaN payload is not specified).
::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& want,
                                     bool nan_any = false) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (nan_any && std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (bits(got[i]) != bits(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " (" << hex(bits(got[i])) << ") vs "
                                           << want[i] << " (" << hex(bits(want[i])) << ")";
  }
  return ::testing::AssertionSuccess();
}

// exp's inputs: the edges of every branch and range, then random bit
// patterns (all of binary32: NaNs, infinities, huge and tiny values) and
// random values in [-110, 90]. The odd count leaves a ragged tail for every
// vector width.
std::vector<float> exp_inputs() {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(),
                          from_bits(0x7F800001u),  // signalling NaN, payload 1
                          from_bits(0xFFC01234u),  // negative quiet NaN with a payload
                          from_bits(0x7FBFFFFFu),  // signalling NaN, full payload
                          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          simd::kExpMaxFinite, std::nextafter(simd::kExpMaxFinite, kInf),
                          std::nextafter(simd::kExpMaxFinite, 0.0f), 88.0f, 88.5f, 88.7f, 88.72f, 88.8f, 89.0f,
                          90.0f, 100.0f, -87.0f, -87.3f, -87.33654f, -88.0f, -88.7f, -88.72f, -100.0f, -103.0f,
                          -103.27893f, -103.97208f, -103.972084f, -104.0f, -105.0f, -110.0f, -150.0f, 1e-8f, -1e-8f,
                          0.5f, 1.0f, -1.0f, 2.0f, 10.0f, -10.0f, 0.34657359f, -0.34657359f, 0.6931472f, -0.6931472f};
  // Around x = (m + 1/2) ln 2, where the reduction's k changes.
  for (int m = -150; m <= 128; m += 7) {
    const float x = static_cast<float>((m + 0.5) * 0.69314718055994530942);
    for (float y : {std::nextafter(x, -kInf), x, std::nextafter(x, kInf)}) v.push_back(y);
  }
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < 100000; ++i) v.push_back(from_bits(any_bits(rng)));
  std::uniform_real_distribution<float> range(-110.0f, 90.0f);
  for (int i = 0; i < 200001; ++i) v.push_back(range(rng));
  return v;
}

Tensor cpu_vector(const std::vector<float>& v) {
  return make_tensor<CPU>(v, Shape{static_cast<std::int64_t>(v.size())});
}

// Sum terms with a wide dynamic range and both signs, so that almost every
// order of addition rounds differently.
std::vector<float> sum_terms(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 12), sign(0, 1);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng)) * (sign(rng) ? -1.0f : 1.0f);
  return v;
}

// The summation order of docs/numerics.md, written out independently in
// scalar code: pieces of 4096 terms; in a piece, partial j (of P) adds the
// terms i == j (mod P) from +0 in ascending i; the partials halve (p[j] +=
// p[j + h]); the piece sums combine pairwise, an odd last one moving up.
template <class Acc>
Acc documented_sum(const std::vector<float>& t) {
  constexpr std::size_t P = sizeof(Acc) == sizeof(float) ? 64 : 32, kPiece = 4096;
  std::vector<Acc> sums;
  for (std::size_t at = 0; at == 0 || at < t.size(); at += kPiece) {
    Acc p[P] = {};
    for (std::size_t i = at; i < std::min(at + kPiece, t.size()); ++i) p[(i - at) % P] += static_cast<Acc>(t[i]);
    for (std::size_t h = P / 2; h >= 1; h /= 2)
      for (std::size_t j = 0; j < h; ++j) p[j] += p[j + h];
    sums.push_back(p[0]);
  }
  for (std::size_t m = sums.size(); m > 1;) {
    const std::size_t half = m / 2;
    for (std::size_t j = 0; j < half; ++j) sums[j] = sums[2 * j] + sums[2 * j + 1];
    if (m % 2 != 0) sums[half] = sums[m - 1];
    m = half + m % 2;
  }
  return sums[0];
}

const OperationExecutionOptions kWide("reduce_sum", &DType::Float64());

float cpu_sum(const Tensor& x, bool wide) {
  return values_of(wide ? reduce_sum(x, Axes::all(), false, kWide) : reduce_sum(x)).at(0);
}

// Block lengths around every boundary of the order: the short scalar path
// (<= 16), one group of partials (32, 64), one piece (4096), several pieces
// (with a ragged last one), more than a thread's grain (2 ranges).
const std::int64_t kSumLengths[] = {0, 1, 2, 3, 7, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4095, 4096, 4097,
                                    8193, 12289, 70001, 600001};

// ---------------------------------------------------------------- exp

// |y - e| in units of the binary32 ulp at e (2**-149 below the normal range).
double ulps_from(float y, long double e) {
  if (std::isinf(y) || std::isinf(e)) return (std::isinf(y) && std::isinf(e)) ? 0.0 : 1e30;
  int q = 0;
  std::frexp(e, &q);
  return static_cast<double>(std::fabs(static_cast<long double>(y) - e) / std::ldexp(1.0L, std::max(q - 24, -149)));
}


// The documented error: 0.5 ulp of e**x plus the kernel's 2**-44 relative
// (2**-20 ulp), bounded here by 2**-16 ulp. The reference is expl (64-bit
// mantissa, within about 1 ulp of long double: 2**-63 relative) rounded once
// to binary32. Highway's Exp, which CPU used before, is up to about 1 ulp
// off and fails this.
TEST(CpuExp, IsWithinHalfAnUlpOfTheExactValuePlusTheDocumentedMargin) {
  const std::vector<float> x = exp_inputs();
  const std::vector<float> y = values_of(exp(cpu_vector(x)));
  double worst = 0;
  float worst_x = 0;
  std::int64_t not_correctly_rounded = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;  // checked by NanKeepsItsPayloadQuieted
    const long double e = std::exp(static_cast<long double>(x[i]));
    const float correctly_rounded = static_cast<float>(e);
    if (bits(y[i]) == bits(correctly_rounded)) continue;
    ++not_correctly_rounded;
    // Zeros and infinities must be exactly e**x's.
    ASSERT_TRUE(std::isfinite(y[i]) && std::isfinite(correctly_rounded) && y[i] != 0.0f)
        << "x = " << x[i] << ": " << y[i] << " where e**x rounds to " << correctly_rounded;
    const double err = ulps_from(y[i], e);
    if (err > worst) {
      worst = err;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, 0.5 + std::ldexp(1.0, -16))
      << "at x = " << worst_x << " (" << hex(bits(worst_x)) << "); " << not_correctly_rounded
      << " of " << x.size() << " results are not correctly rounded";
  // Correct rounding fails only within 2**-20 ulp of a midpoint: about one
  // input in 2**19, so hardly ever in this sweep.
  EXPECT_LE(not_correctly_rounded, 3);
}

TEST(CpuExp, SpecialValuesAndRangeBoundaries) {
  const std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, simd::kExpMaxFinite,
                                std::nextafter(simd::kExpMaxFinite, kInf), -103.97208f, -104.0f, -87.5f,
                                std::numeric_limits<float>::denorm_min()};
  const std::vector<float> y = values_of(exp(cpu_vector(x)));
  EXPECT_EQ(bits(y[0]), bits(1.0f));
  EXPECT_EQ(bits(y[1]), bits(1.0f));
  EXPECT_EQ(bits(y[2]), bits(kInf));
  EXPECT_EQ(bits(y[3]), bits(0.0f));  // +0, never -0
  // The last finite result: e**88.72283172 is about 120 ulps below FLT_MAX.
  EXPECT_TRUE(std::isfinite(y[4]));
  EXPECT_EQ(bits(y[4]), bits(static_cast<float>(std::exp(static_cast<long double>(simd::kExpMaxFinite)))));
  EXPECT_EQ(bits(y[5]), bits(kInf));
  EXPECT_EQ(bits(y[6]), bits(std::numeric_limits<float>::denorm_min()));  // subnormal results are kept
  EXPECT_EQ(bits(y[7]), bits(0.0f));
  EXPECT_GT(y[8], 0.0f);
  EXPECT_LT(y[8], std::numeric_limits<float>::min());  // e**-87.5: a subnormal
  EXPECT_EQ(bits(y[8]), bits(static_cast<float>(std::exp(-87.5L))));
  EXPECT_EQ(bits(y[9]), bits(1.0f));
}

TEST(CpuExp, NanKeepsItsPayloadQuieted) {
  const std::vector<float> x = {from_bits(0x7FC00000u), from_bits(0x7F800001u), from_bits(0xFFC01234u),
                                from_bits(0x7FBFFFFFu), from_bits(0xFF812345u)};
  const std::vector<float> y = values_of(exp(cpu_vector(x)));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(bits(y[i]), bits(x[i]) | 0x00400000u) << i;
}

// The failure: one call, two answers depending on strides. Every
// layout, the Int32 operand dtype and a strided caller output give the bits
// of the compact Float32 call.
TEST(CpuExp, EveryLayoutAndDtypeGivesTheBitsOfTheCompactPath) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  ThreadGuard guard;
  const std::int64_t R = 37, C = 1001;  // logical [R, C], first axis fastest
  std::vector<float> v = exp_inputs();
  v.resize(static_cast<std::size_t>(R * C));
  const Tensor compact = make_tensor<CPU>(v, Shape{R, C});
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    SCOPED_TRACE("threads " + std::to_string(threads));
    const std::vector<float> want = values_of(exp(compact));
    // Strided: every other slot of a larger carrier, from offset 1.
    {
      std::vector<float> storage(static_cast<std::size_t>(2 * R * C + 1), 1234.5f);
      for (std::size_t k = 0; k < v.size(); ++k) storage[1 + 2 * k] = v[k];
      const Tensor wide = make_tensor<CPU>(storage, Shape{2 * R * C + 1});
      const Tensor strided = wide.as_strided(Layout(Shape{R, C}, Stride{2, 2 * R}), 1);
      ASSERT_TRUE(same_bits(values_of(strided), v));
      EXPECT_TRUE(same_bits(values_of(exp(strided)), want)) << "strided";
    }
    // Permuted: the same logical tensor stored the other way round.
    {
      std::vector<float> t(v.size());
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t c = 0; c < C; ++c) t[static_cast<std::size_t>(c + r * C)] = v[static_cast<std::size_t>(r + c * R)];
      const Tensor permuted = make_tensor<CPU>(t, Shape{C, R}).permute({1, 0});
      ASSERT_TRUE(same_bits(values_of(permuted), v));
      EXPECT_TRUE(same_bits(values_of(exp(permuted)), want)) << "permuted";
      // A column slice of it (stride C in the fast axis).
      EXPECT_TRUE(same_bits(values_of(exp(permuted.slice(1, 3, 4))), values_of(exp(compact.slice(1, 3, 4)))))
          << "permuted slice";
    }
    // Hierarchical: axis 1 is the nested mode (C/7, 7):(R, R*C/7), which does
    // not coalesce to one stride.
    {
      const std::int64_t c1 = C / 7;
      std::vector<float> t(v.size());
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t a = 0; a < c1; ++a)
          for (std::int64_t b = 0; b < 7; ++b)
            t[static_cast<std::size_t>(r + a * R + b * R * c1)] = v[static_cast<std::size_t>(r + (a + c1 * b) * R)];
      const Tensor storage = make_tensor<CPU>(t, Shape{R * C});
      const Tensor h = storage.as_strided(
          Layout(Shape(std::vector<IntTuple>{IntTuple(R), IntTuple{c1, 7}}),
                 Stride(std::vector<IntTuple>{IntTuple(1), IntTuple{R, R * c1}})),
          0);
      ASSERT_TRUE(same_bits(values_of(h), v));
      EXPECT_TRUE(same_bits(values_of(exp(h)), want)) << "hierarchical";
    }
    // Broadcast along each axis: every copy has the bits of the compact call
    // on the one row or column.
    {
      const std::vector<float> row(v.begin(), v.begin() + C);
      const std::vector<float> row_exp = values_of(exp(make_tensor<CPU>(row, Shape{C})));
      const Tensor along0 = make_tensor<CPU>(row, Shape{1, C}).broadcast_to(Shape{R, C});
      const std::vector<float> got0 = values_of(exp(along0));
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t c = 0; c < C; ++c)
          ASSERT_EQ(bits(got0[static_cast<std::size_t>(r + c * R)]), bits(row_exp[static_cast<std::size_t>(c)]))
              << r << "," << c;
      const std::vector<float> col(v.begin(), v.begin() + R);
      const std::vector<float> col_exp = values_of(exp(make_tensor<CPU>(col, Shape{R})));
      const std::vector<float> got1 = values_of(exp(make_tensor<CPU>(col, Shape{R, 1}).broadcast_to(Shape{R, C})));
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t c = 0; c < C; ++c)
          ASSERT_EQ(bits(got1[static_cast<std::size_t>(r + c * R)]), bits(col_exp[static_cast<std::size_t>(r)]))
              << r << "," << c;
    }
    // A strided caller-provided output.
    {
      const Tensor wide = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(2 * R * C), 7.0f), Shape{2 * R, C});
      const Tensor out = wide.slice(0, 0, 2 * R, 2);
      exp(compact, into(out));
      EXPECT_TRUE(same_bits(values_of(out), want)) << "strided output";
    }
    // Int32 operands: exp of the converted value (compact and strided).
    {
      std::vector<std::int32_t> ints;
      std::vector<float> as_float;
      for (std::int32_t k = -120; k <= 100; ++k) {
        ints.push_back(k);
        as_float.push_back(static_cast<float>(k));
      }
      ints.push_back(2147483647);
      as_float.push_back(2147483648.0f);
      const std::int64_t n = static_cast<std::int64_t>(ints.size());
      const std::vector<float> float_exp = values_of(exp(make_tensor<CPU>(as_float, Shape{n})));
      const Tensor i32 = make_tensor<CPU>(ints, Shape{n});
      EXPECT_TRUE(same_bits(values_of(exp(i32)), float_exp)) << "Int32";
      EXPECT_TRUE(same_bits(values_of(exp(i32.slice(0, 0, n, 3))), values_of(exp(make_tensor<CPU>(as_float, Shape{n}).slice(0, 0, n, 3)))))
          << "strided Int32";
    }
  }
}

// The measurement behind docs/numerics.md's accuracy figures (disabled: it
// takes minutes; run it with --gtest_also_run_disabled_tests
// --gtest_filter='*ExhaustiveAccuracy*'). Every binary32 input: CPU's exp and
// glibc's expf against the correctly rounded e**x (expl rounded once), the
// count of results that are not the correctly rounded one, and the largest
// error in ulps of e**x; then the same counts on the 65,536 random inputs in
// [-80, 80] of the issue.
struct ExpTally {
  std::int64_t inputs = 0, ours_wrong = 0, libc_wrong = 0;
  double ours_worst = 0, libc_worst = 0;
  void add(const ExpTally& o) {
    inputs += o.inputs;
    ours_wrong += o.ours_wrong;
    libc_wrong += o.libc_wrong;
    ours_worst = std::max(ours_worst, o.ours_worst);
    libc_worst = std::max(libc_worst, o.libc_worst);
  }
};

void tally(const float* x, std::size_t n, ExpTally& t) {
  std::vector<float> ours(n);
  simd::exp_f32(x, ours.data(), static_cast<std::int64_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    const long double e = std::exp(static_cast<long double>(x[i]));
    const float cr = static_cast<float>(e);
    const float libc = std::exp(x[i]);
    ++t.inputs;
    if (bits(ours[i]) != bits(cr)) {
      ++t.ours_wrong;
      t.ours_worst = std::max(t.ours_worst, ulps_from(ours[i], e));
    }
    if (bits(libc) != bits(cr)) {
      ++t.libc_wrong;
      t.libc_worst = std::max(t.libc_worst, ulps_from(libc, e));
    }
  }
}

TEST(CpuExpMeasurement, DISABLED_ExhaustiveAccuracyAgainstCorrectRounding) {
  ExpTally all[2];
  std::thread workers[2];
  for (int w = 0; w < 2; ++w)
    workers[w] = std::thread([w, &all] {
      std::vector<float> chunk(1 << 16);
      for (std::uint64_t start = static_cast<std::uint64_t>(w) << 16; start < (std::uint64_t{1} << 32);
           start += std::uint64_t{2} << 16) {
        for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = from_bits(static_cast<std::uint32_t>(start + i));
        tally(chunk.data(), chunk.size(), all[w]);
      }
    });
  for (std::thread& t : workers) t.join();
  all[0].add(all[1]);
  std::printf("exhaustive (%lld non-NaN inputs, target %s): CPU exp %lld not correctly rounded (worst %.9f ulp); "
              "glibc expf %lld (worst %.9f ulp)\n",
              static_cast<long long>(all[0].inputs), simd::dispatched_target(),
              static_cast<long long>(all[0].ours_wrong), all[0].ours_worst, static_cast<long long>(all[0].libc_wrong),
              all[0].libc_worst);
  EXPECT_LE(all[0].ours_worst, 0.5 + std::ldexp(1.0, -16));

  std::mt19937 rng(10);
  std::uniform_real_distribution<float> range(-80.0f, 80.0f);
  std::vector<float> sample(65536);
  for (float& x : sample) x = range(rng);
  ExpTally s;
  tally(sample.data(), sample.size(), s);
  std::printf("65536 random in [-80, 80]: CPU exp %lld not correctly rounded (worst %.9f ulp); glibc expf %lld "
              "(worst %.9f ulp)\n",
              static_cast<long long>(s.ours_wrong), s.ours_worst, static_cast<long long>(s.libc_wrong), s.libc_worst);
}

// ---------------------------------------------------------------- reduce_sum

TEST(CpuReduceSum, FollowsTheDocumentedOrderBitForBit) {
  for (std::int64_t n : kSumLengths) {
    const std::vector<float> t = sum_terms(n, static_cast<std::uint32_t>(n) + 11);
    const Tensor x = cpu_vector(t);
    EXPECT_EQ(bits(cpu_sum(x, false)), bits(documented_sum<float>(t))) << "n " << n;
    EXPECT_EQ(bits(cpu_sum(x, true)), bits(static_cast<float>(documented_sum<double>(t)))) << "n " << n << " (Float64)";
  }
}

TEST(CpuReduceSum, SignedZerosInfinitiesAndNaN) {
  EXPECT_EQ(bits(cpu_sum(cpu_vector({}), false)), bits(0.0f));
  EXPECT_EQ(bits(cpu_sum(cpu_vector({-0.0f}), false)), bits(0.0f));
  EXPECT_EQ(bits(cpu_sum(cpu_vector(std::vector<float>(100, -0.0f)), false)), bits(0.0f));
  EXPECT_EQ(bits(cpu_sum(cpu_vector(std::vector<float>(100, -0.0f)), true)), bits(0.0f));
  std::vector<float> t = sum_terms(5000, 3);
  t[4321] = kInf;
  EXPECT_EQ(cpu_sum(cpu_vector(t), false), kInf);
  t[17] = -kInf;
  EXPECT_TRUE(std::isnan(cpu_sum(cpu_vector(t), false)));
  t[17] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(cpu_sum(cpu_vector(t), true)));
}

// The values of one block in logical order (first reduced axis fastest) of a
// compact [A, B, C] tensor with first axis fastest.
std::vector<float> block_values(const std::vector<float>& v, const std::int64_t (&e)[3],
                                const std::vector<std::int64_t>& axes, const std::int64_t (&kept_at)[3]) {
  std::vector<std::int64_t> ext;
  for (std::int64_t a : axes) ext.push_back(e[a]);
  std::vector<float> out;
  std::vector<std::int64_t> c(axes.size(), 0);
  const std::int64_t total = [&] {
    std::int64_t n = 1;
    for (std::int64_t x : ext) n *= x;
    return n;
  }();
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t at[3] = {kept_at[0], kept_at[1], kept_at[2]};
    for (std::size_t i = 0; i < axes.size(); ++i) at[axes[i]] = c[i];
    out.push_back(v[static_cast<std::size_t>(at[0] + e[0] * (at[1] + e[1] * at[2]))]);
    for (std::size_t i = 0; i < c.size() && ++c[i] == ext[i]; ++i) c[i] = 0;
  }
  return out;
}

// The same logical block gives the same bits whatever the layout: every
// subset of axes of a [A, B, C] tensor held compact, permuted, strided and
// hierarchically; each result element equals the sum of its block's values
// handed over as one compact vector.
TEST(CpuReduceSum, EveryLayoutGivesTheBitsOfTheSameValuesCompact) {
  ThreadGuard guard;
  const std::int64_t e[3] = {70, 130, 3};
  const std::int64_t n = e[0] * e[1] * e[2];
  const std::vector<float> v = sum_terms(n, 5);
  const Tensor compact = make_tensor<CPU>(v, Shape{e[0], e[1], e[2]});
  // Stored with axis 2 fastest, then axis 0, then axis 1; permuted back.
  std::vector<float> t(v.size());
  for (std::int64_t i = 0; i < e[0]; ++i)
    for (std::int64_t j = 0; j < e[1]; ++j)
      for (std::int64_t k = 0; k < e[2]; ++k)
        t[static_cast<std::size_t>(k + e[2] * (i + e[0] * j))] = v[static_cast<std::size_t>(i + e[0] * (j + e[1] * k))];
  const Tensor permuted = make_tensor<CPU>(t, Shape{e[2], e[0], e[1]}).permute({1, 2, 0});
  // Every other slot of a larger carrier.
  std::vector<float> s(static_cast<std::size_t>(2 * n), 99.0f);
  for (std::size_t k = 0; k < v.size(); ++k) s[2 * k] = v[k];
  const Tensor strided = make_tensor<CPU>(s, Shape{2 * n}).as_strided(Layout(Shape{e[0], e[1], e[2]}, Stride{2, 2 * e[0], 2 * e[0] * e[1]}), 0);
  // Axis 0 as the nested mode (10, 7):(7, 1) over storage where axis 0's
  // halves are swapped in order: logical i = a + 10 b sits at 7 a + b.
  std::vector<float> hs(v.size());
  for (std::int64_t i = 0; i < e[0]; ++i)
    for (std::int64_t jk = 0; jk < e[1] * e[2]; ++jk)
      hs[static_cast<std::size_t>(7 * (i % 10) + i / 10 + e[0] * jk)] = v[static_cast<std::size_t>(i + e[0] * jk)];
  const Tensor hierarchical = make_tensor<CPU>(hs, Shape{n}).as_strided(
      Layout(Shape(std::vector<IntTuple>{IntTuple{10, 7}, IntTuple(e[1]), IntTuple(e[2])}),
             Stride(std::vector<IntTuple>{IntTuple{7, 1}, IntTuple(e[0]), IntTuple(e[0] * e[1])})),
      0);
  const std::pair<const char*, Tensor> views[] = {
      {"compact", compact}, {"permuted", permuted}, {"strided", strided}, {"hierarchical", hierarchical}};
  for (const auto& [name, x] : views) ASSERT_TRUE(same_bits(values_of(x), v)) << name;
  const std::vector<std::vector<std::int64_t>> subsets = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (bool wide : {false, true})
      for (const std::vector<std::int64_t>& axes : subsets) {
        const std::string what = "threads " + std::to_string(threads) + (wide ? " Float64" : " Float32") + " axes " +
                                 ::testing::PrintToString(axes);
        // The expected bits: each block's values as one compact vector.
        std::vector<float> want;
        std::int64_t kept_ext[3];
        for (int a = 0; a < 3; ++a)
          kept_ext[a] = std::find(axes.begin(), axes.end(), a) == axes.end() ? e[a] : 1;
        for (std::int64_t k = 0; k < kept_ext[2]; ++k)
          for (std::int64_t j = 0; j < kept_ext[1]; ++j)
            for (std::int64_t i = 0; i < kept_ext[0]; ++i)
              want.push_back(cpu_sum(cpu_vector(block_values(v, e, axes, {i, j, k})), wide));
        for (const auto& [name, x] : views) {
          const Tensor r = wide ? reduce_sum(x, axes, false, kWide) : reduce_sum(x, axes);
          EXPECT_TRUE(same_bits(values_of(r), want)) << what << " " << name;
        }
      }
  }
}

// A broadcast operand: the block of a sum over the broadcast axis repeats one
// value; it gives the bits of that many copies held compact.
TEST(CpuReduceSum, BroadcastBlocksGiveTheBitsOfTheirValuesCompact) {
  const std::vector<float> col = sum_terms(9, 8);
  const std::int64_t copies = 5000;
  const Tensor b = make_tensor<CPU>(col, Shape{9, 1}).broadcast_to(Shape{9, copies});
  const std::vector<float> got = values_of(reduce_sum(b, {1}));
  for (std::size_t i = 0; i < col.size(); ++i)
    EXPECT_EQ(bits(got[i]), bits(cpu_sum(cpu_vector(std::vector<float>(copies, col[i])), false))) << i;
}

// ---------------------------------------------------------------- add, sub, mul, div

// The elementwise binary ops give the compact (vector) path's bits on
// strided operands too, NaN payloads included: with two NaN operands, add
// and mul return the first one quieted on both paths (the strided loop's
// scalar `a + b` used to return the second: the compiler had swapped the
// operands). Generic gives the same bits.
// The four vectorised binary operations, by name.
// Each takes an optional caller output (Output{} for a fresh result).
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, const Output&);
const std::pair<const char*, BinaryFn> kBinaryOps[] = {
    {"add", [](const Tensor& x, const Tensor& y, const Output& out) { return add(x, y, out); }},
    {"sub", [](const Tensor& x, const Tensor& y, const Output& out) { return sub(x, y, out); }},
    {"mul", [](const Tensor& x, const Tensor& y, const Output& out) { return mul(x, y, out); }},
    {"div", [](const Tensor& x, const Tensor& y, const Output& out) { return div(x, y, out); }}};

TEST(CpuArithmetic, StridedOperandsGiveTheCompactBitsNanPayloadsIncluded) {
  const std::uint32_t specials[] = {0x7FC0ABCDu, 0xFFC00001u, 0x7F800001u, 0x7FC00000u,
                                    0x3F800000u, 0x7F800000u, 0xFF800000u, 0x80000000u};
  std::vector<float> a, b;
  for (std::uint32_t x : specials)
    for (std::uint32_t y : specials) {
      a.push_back(from_bits(x));
      b.push_back(from_bits(y ^ 0x00001000u));  // other payloads (and 1.0 -> 1.0004883)
    }
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  auto every_other = [&](const std::vector<float>& v) {
    std::vector<float> s(static_cast<std::size_t>(2 * n), 5.0f);
    for (std::size_t i = 0; i < v.size(); ++i) s[2 * i] = v[i];
    return make_tensor<CPU>(s, Shape{2 * n}).slice(0, 0, 2 * n, 2);
  };
  const Tensor ca = cpu_vector(a), cb = cpu_vector(b), sa = every_other(a), sb = every_other(b);
  const Tensor ga = make_tensor<Generic>(a, Shape{n}), gb = make_tensor<Generic>(b, Shape{n});
  for (const auto& [name, f] : kBinaryOps) {
    const std::vector<float> want = values_of(f(ca, cb, Output{}));
    EXPECT_TRUE(same_bits(values_of(f(sa, sb, Output{})), want)) << name << " strided";
    EXPECT_TRUE(same_bits(values_of(f(sa, cb, Output{})), want)) << name << " strided a";
    EXPECT_TRUE(same_bits(values_of(f(ga, gb, Output{})), want)) << name << " Generic";
  }
  // The first NaN, quieted.
  const std::vector<float> sum = values_of(add(sa, sb));
  EXPECT_EQ(bits(sum[0 * 8 + 1]), 0x7FC0ABCDu);  // 0x7FC0ABCD + 0xFFC01001
  EXPECT_EQ(bits(sum[1 * 8 + 0]), 0xFFC00001u);  // 0xFFC00001 + 0x7FC0BBCD
  EXPECT_EQ(bits(sum[2 * 8 + 0]), 0x7FC00001u);  // signalling 0x7F800001 + 0x7FC0BBCD
}

// Long operands and outputs at every offset from a vector boundary: the
// loop peels the elements before the output's first aligned address
// (simd.cpp, AlignmentPeel) and every element keeps Generic's bits, NaN
// payloads included, whether the result is fresh (aligned) or written into
// a caller's misaligned view.
TEST(CpuArithmetic, MisalignedLongOperandsGiveGenericsBits) {
  const std::int64_t n = 5003, room = n + 32;
  std::vector<float> a(static_cast<std::size_t>(room)), b(static_cast<std::size_t>(room));
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = i % 97 == 0 ? from_bits(0x7FC0ABCDu) : static_cast<float>(static_cast<int>(i % 13) - 6) * 0.731f;
    b[i] = i % 89 == 0 ? from_bits(0xFFC00001u) : static_cast<float>(static_cast<int>(i % 7) - 3) * 1.37f + 0.5f;
  }
  const Tensor ca = make_tensor<CPU>(a, Shape{room}), cb = make_tensor<CPU>(b, Shape{room});
  const Tensor ga = make_tensor<Generic>(a, Shape{room}), gb = make_tensor<Generic>(b, Shape{room});
  for (std::int64_t offset = 0; offset < 17; ++offset)
    for (const auto& [name, f] : kBinaryOps) {
      const Tensor x = ca.slice(0, offset, offset + n), y = cb.slice(0, offset + 1, offset + 1 + n);
      const Tensor gx = ga.slice(0, offset, offset + n), gy = gb.slice(0, offset + 1, offset + 1 + n);
      const std::vector<float> want = values_of(f(gx, gy, Output{}));
      EXPECT_TRUE(same_bits(values_of(f(x, y, Output{})), want)) << name << " at offset " << offset;
      const Tensor out = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(room)), Shape{room});
      const Tensor view = out.slice(0, offset + 2, offset + 2 + n);
      f(x, y, into(view));
      EXPECT_TRUE(same_bits(values_of(view), want)) << name << " into an output at offset " << offset + 2;
    }
}

// A contiguous row beside a broadcast value (stride 0 along the row: a
// matrix minus its per-column maximum, as softmax does) takes the vectorised
// row functions (arithmetic.cpp); the bits are those of the same values
// compact, NaN payloads and signed zeros included, on either side, and those
// of Generic. Rows shorter than the vector path's minimum stay scalar.
TEST(CpuArithmetic, BroadcastRowsGiveTheBitsOfTheSameValuesCompact) {
  const std::uint32_t specials[] = {0x7FC0ABCDu, 0xFFC00001u, 0x80000000u, 0x00000000u, 0x7F800000u, 0x3F800000u};
  for (std::int64_t rows : {3, 16, 37, 100}) {
    const std::int64_t cols = 6;
    std::vector<float> m(static_cast<std::size_t>(rows * cols)), c(static_cast<std::size_t>(cols));
    for (std::size_t i = 0; i < m.size(); ++i)
      m[i] = i % 11 == 0 ? from_bits(specials[i % 6]) : static_cast<float>(static_cast<int>(i % 9) - 4) * 0.37f;
    for (std::size_t j = 0; j < c.size(); ++j) c[j] = from_bits(specials[j]);
    const Tensor matrix = make_tensor<CPU>(m, Shape{rows, cols});  // axis 0 (rows) is contiguous
    const Tensor column = make_tensor<CPU>(c, Shape{1, cols});
    std::vector<float> full(m.size());  // column broadcast, compact
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) full[static_cast<std::size_t>(j * rows + i)] = c[static_cast<std::size_t>(j)];
    const Tensor spread = make_tensor<CPU>(full, Shape{rows, cols});
    const Tensor gm = make_tensor<Generic>(m, Shape{rows, cols}), gc = make_tensor<Generic>(c, Shape{1, cols});
    for (const auto& [name, f] : kBinaryOps) {
      EXPECT_TRUE(same_bits(values_of(f(matrix, column, Output{})), values_of(f(matrix, spread, Output{})))) << name << " rows " << rows;
      EXPECT_TRUE(same_bits(values_of(f(column, matrix, Output{})), values_of(f(spread, matrix, Output{})))) << name << " left, rows " << rows;
      EXPECT_TRUE(same_bits(values_of(f(matrix, column, Output{})), values_of(f(gm, gc, Output{})))) << name << " Generic, rows " << rows;
    }
    // And accumulated into an output (issue 20 step 2's native path).
    const NoGradGuard no_graph;
    const Tensor by_row = make_tensor<CPU>(m, Shape{rows, cols}), by_full = make_tensor<CPU>(m, Shape{rows, cols});
    (void)sub(matrix, column, accumulate_into(by_row));
    (void)sub(matrix, spread, accumulate_into(by_full));
    EXPECT_TRUE(same_bits(values_of(by_row), values_of(by_full))) << "accumulate, rows " << rows;
  }
}

// ---------------------------------------------------------------- targets

// Every Highway target this CPU can run gives the bits of the default one:
// exp on the whole sweep, reduce_sum at every boundary length (both
// accumulators), and the elementwise binary kernels on operands with
// infinities, signed zeros and NaN payloads in both positions.
TEST(CpuSimdTargets, EveryTargetGivesTheBitsOfTheDefaultTarget) {
  const std::vector<float> x = exp_inputs();
  const Tensor tx = cpu_vector(x);
  std::vector<float> y = x;
  std::reverse(y.begin(), y.end());
  y[3] = from_bits(0x7FC0ABCDu);  // NaN against NaN, in both orders
  y[y.size() - 5] = from_bits(0xFFC00001u);
  const Tensor ty = cpu_vector(y);
  std::vector<std::vector<float>> sum_inputs;
  for (std::int64_t n : kSumLengths) sum_inputs.push_back(sum_terms(n, static_cast<std::uint32_t>(n) + 29));
  std::vector<float> long_values(5100);
  for (std::size_t i = 0; i < long_values.size(); ++i)
    long_values[i] = i % 101 == 0 ? from_bits(0x7FC0ABCDu) : static_cast<float>(static_cast<int>(i % 17) - 8) * 0.37f;
  const Tensor long_x = cpu_vector(long_values);
  std::reverse(long_values.begin(), long_values.end());
  const Tensor long_y = cpu_vector(long_values);

  auto run_all = [&] {
    std::vector<std::vector<float>> r = {values_of(exp(tx)), values_of(add(tx, ty)), values_of(sub(tx, ty)),
                                         values_of(mul(tx, ty)), values_of(div(tx, ty)), values_of(mul(tx, 0.5))};
    // The native accumulation kernels (out + (a op b), issue 20 step 2);
    // accumulation into an output is refused under grad mode.
    const NoGradGuard no_graph;
    const Tensor acc = cpu_vector(y);
    (void)sub(tx, ty, accumulate_into(acc));
    (void)mul(tx, 0.5, accumulate_into(acc));
    r.push_back(values_of(acc));
    std::vector<float> sums;
    for (const std::vector<float>& t : sum_inputs) {
      sums.push_back(cpu_sum(cpu_vector(t), false));
      sums.push_back(cpu_sum(cpu_vector(t), true));
    }
    r.push_back(sums);
    // Columns of (x, y) as a matrix: the vectorised extremum per column
    // (NaNs, infinities and signed zeros among them), and a broadcast row.
    const std::int64_t half = static_cast<std::int64_t>(x.size()) / 2;
    std::vector<float> xy(x.begin(), x.begin() + 2 * half);
    xy[7] = -0.0f;
    const Tensor matrix = make_tensor<CPU>(xy, Shape{half, 2});
    r.push_back(values_of(reduce_max(matrix, Axes(0))));
    r.push_back(values_of(reduce_min(matrix, Axes(0))));
    r.push_back(values_of(sub(matrix, reduce_max(matrix, Axes(0), true))));
    // Long operands and an output off the vector boundary: the peel's
    // length depends on the target's vector width (simd.cpp, AlignmentPeel).
    const Tensor misaligned_out = cpu_vector(std::vector<float>(5010)).slice(0, 5, 5 + 5000);
    add(long_x.slice(0, 3, 3 + 5000), long_y.slice(0, 1, 1 + 5000), into(misaligned_out));
    r.push_back(values_of(misaligned_out));
    return r;
  };
  const std::string default_target = simd::dispatched_target();
  const std::vector<std::vector<float>> want = run_all();
  const char* names[] = {"exp",        "add",        "sub",        "mul",       "div",
                         "mul scalar", "accumulate_into", "reduce_sum", "reduce_max", "reduce_min",
                         "broadcast sub", "misaligned add"};
  std::vector<std::string> checked;
  for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const ForcedTarget forced(target);
    ASSERT_STREQ(simd::dispatched_target(), hwy::TargetName(target));
    checked.push_back(hwy::TargetName(target));
    const std::vector<std::vector<float>> got = run_all();
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(same_bits(got[k], want[k])) << names[k] << " on " << hwy::TargetName(target) << " vs "
                                              << default_target;
  }
  EXPECT_EQ(simd::dispatched_target(), default_target);  // the guard restored the choice
  RecordProperty("targets", ::testing::PrintToString(checked));
  // At least one vector target and the emulated one.
  EXPECT_GE(checked.size(), 2u) << ::testing::PrintToString(checked);
}

}  // namespace
