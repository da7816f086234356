// The CPU carrier's determinism rule for FLOATING reduce_sum (issue 10;
// docs/numerics.md, "The CPU summation order"): the same bits for the same
// logical values whatever the operand's layout (strided, permuted,
// broadcast, hierarchical), the thread count and the Highway target the
// dispatcher picks, in the documented order (pieces of 4096, 64 or 32
// partial sums, halving, pairwise pieces). The vector binary kernels are
// checked on every target too.
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
#include <limits>
#include <random>
#include <string>
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
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " (0x" << std::hex << bits(got[i])
                                           << ") vs " << want[i] << " (0x" << bits(want[i]) << ")" << std::dec;
  }
  return ::testing::AssertionSuccess();
}

// Operands with the edges of exp's branches and ranges, then random bit
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
                          88.72283172607421875f, std::nextafter(88.72283172607421875f, kInf),
                          std::nextafter(88.72283172607421875f, 0.0f), 88.0f, 88.5f, 88.7f, 88.72f, 88.8f, 89.0f,
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
  return values_of(wide ? reduce_sum(x, ReduceOptions{}, kWide) : reduce_sum(x)).at(0);
}

// Block lengths around every boundary of the order: the short scalar path
// (<= 16), one group of partials (32, 64), one piece (4096), several pieces
// (with a ragged last one), more than a thread's grain (2 ranges).
const std::int64_t kSumLengths[] = {0, 1, 2, 3, 7, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4095, 4096, 4097,
                                    8193, 12289, 70001, 600001};

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
          const Tensor r = wide ? reduce_sum(x, ReduceOptions{axes, false}, kWide) : reduce_sum(x, axes);
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

// ---------------------------------------------------------------- targets

// Every Highway target this CPU can run gives the bits of the default one:
// reduce_sum at every boundary length (both accumulators), and the
// elementwise binary kernels on operands with infinities, signed zeros and
// NaN payloads in both positions.
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

  auto run_all = [&] {
    std::vector<std::vector<float>> r = {values_of(add(tx, ty)), values_of(sub(tx, ty)), values_of(mul(tx, ty)),
                                         values_of(div(tx, ty)), values_of(mul(tx, 0.5))};
    std::vector<float> sums;
    for (const std::vector<float>& t : sum_inputs) {
      sums.push_back(cpu_sum(cpu_vector(t), false));
      sums.push_back(cpu_sum(cpu_vector(t), true));
    }
    r.push_back(sums);
    return r;
  };
  const std::string default_target = simd::dispatched_target();
  const std::vector<std::vector<float>> want = run_all();
  const char* names[] = {"add", "sub", "mul", "div", "mul scalar", "reduce_sum"};
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
