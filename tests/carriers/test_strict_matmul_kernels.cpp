// The strict Float32 matmul's micro-kernels (issue 10, item 12): the build
// contains one per instruction set (src/carriers/cpu/matmul_strict.h), the
// dispatcher picks one at run time, and whichever runs, CPU's result equals
// Generic's bit for bit (every product rounded to binary32, then added in
// ascending k from +0.0). Each kernel the running processor supports is
// forced here in turn; a kernel it lacks is skipped with the reason. Speed
// is measured in bench/, never here.
#include <gtest/gtest.h>

#include <strideweave/strideweave.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "carriers/cpu/matmul_strict.h"
#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace cpu = strideweave::carriers::cpu;

// Forces one kernel for the guard's lifetime, then returns to the automatic
// choice; also restores the thread setting.
struct KernelGuard {
  explicit KernelGuard(const char* name) { cpu::set_strict_f32_kernel(name); }
  ~KernelGuard() {
    cpu::set_strict_f32_kernel(nullptr);
    set_num_threads(threads);
  }
  int threads = num_threads();
};

std::optional<cpu::StrictKernelInfo> kernel_info(const std::string& name) {
  for (const cpu::StrictKernelInfo& k : cpu::strict_f32_kernels())
    if (name == k.name) return k;
  return std::nullopt;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const cpu::StrictKernelInfo& k : cpu::strict_f32_kernels()) names.emplace_back(k.name);
  return names;
}

// Random values in [-2, 2], with a few exact zeros, negative zeros and tiny
// (subnormal-product) values mixed in.
std::vector<float> random_values(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = d(rng);
    if (i % 37 == 5) v[i] = -0.0f;
    if (i % 41 == 7) v[i] = 0.0f;
    if (i % 43 == 11) v[i] = std::ldexp(v[i], -70);
  }
  return v;
}

// Bit-for-bit equality, every NaN equal to every NaN (docs/numerics.md, the
// agreement rule); -0.0 and +0.0 differ.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = (std::isnan(got[i]) && std::isnan(want[i])) ||
                      std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want[i]);
    if (!same && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " (0x" << std::hex
                    << std::bit_cast<std::uint32_t>(got[i]) << "), Generic has " << want[i] << " (0x"
                    << std::bit_cast<std::uint32_t>(want[i]) << std::dec << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": elements that differ from Generic";
}

std::vector<float> values_of(const Tensor& t) { return TypedTensor<float>(t).values(); }

// The same logical matrix on both carriers, and on CPU also stored the other
// way round (its transposed view).
struct Operand {
  Tensor generic, cpu, cpu_transposed_storage;
};
Operand operand(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  const std::vector<float> v = random_values(rows * cols, seed);
  std::vector<float> t(v.size());  // logical order is first mode fastest
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[static_cast<std::size_t>(c + r * cols)] = v[static_cast<std::size_t>(r + c * rows)];
  return {make_tensor<Generic>(v, Shape{rows, cols}), make_tensor<CPU>(v, Shape{rows, cols}),
          make_tensor<CPU>(t, Shape{cols, rows}).permute({1, 0})};
}

class StrictMatmulKernel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    info_ = kernel_info(GetParam());
    ASSERT_TRUE(info_.has_value());
    if (!info_->supported) GTEST_SKIP() << "this processor cannot run the '" << GetParam() << "' kernel";
    guard_.emplace(info_->name);
    ASSERT_EQ(std::string(cpu::strict_f32_kernel()), GetParam());  // the kernel under test is the one that runs
  }
  std::optional<cpu::StrictKernelInfo> info_;
  std::optional<KernelGuard> guard_;
};

// Shapes around the kernel's register tile (rows R x cols C) and its cache
// blocking, as the kernel table states it (k passes of KC steps, packed A
// blocks of MC rows, packed B panels of at most NC columns): one row or
// column, partial tiles, exact multiples, one pass and one block exactly,
// one step or row past them, several k passes, several A blocks ending in a
// partial tile, several B panels (the columns split evenly into panels that
// are not whole multiples of C), K = 1.
TEST_P(StrictMatmulKernel, MatchesGenericBitForBitOnEdgeTilesAndLayouts) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  const std::int64_t R = info_->rows, C = info_->cols, KC = info_->kc, MC = info_->mc, NC = info_->nc;
  ASSERT_GT(KC, 0);
  ASSERT_EQ(MC % R, 0);
  ASSERT_EQ(NC % C, 0);
  struct Case {
    std::int64_t M, N, K;
  };
  const Case cases[] = {
      {1, 1, 1},          {1, 2 * C + 1, 9},        {R + 3, 1, 17},           {R, C, KC},
      {R - 1, C - 1, KC + 1}, {R + 1, C + 1, 3},     {2 * R + 5, 3 * C - 2, 2 * KC + 88},
      {MC, C, 40},        {MC + R + 3, 2 * C, 40},  {2 * MC + 1, C + 2, KC + 3}, {3, 5, 1},
      {3, NC + C + 1, KC + 1}, {R + 2, 2 * NC + 3, 5},
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    const std::string shape =
        GetParam() + " " + std::to_string(c.M) + "x" + std::to_string(c.K) + " @ " + std::to_string(c.K) + "x" + std::to_string(c.N);
    const Operand a = operand(c.M, c.K, ++seed), b = operand(c.K, c.N, ++seed);
    const std::vector<float> want = values_of(matmul(a.generic, b.generic));
    expect_same_bits(values_of(matmul(a.cpu, b.cpu)), want, shape);
    expect_same_bits(values_of(matmul(a.cpu_transposed_storage, b.cpu)), want, shape + " (A transposed storage)");
    expect_same_bits(values_of(matmul(a.cpu, b.cpu_transposed_storage)), want, shape + " (B transposed storage)");
    expect_same_bits(values_of(matmul(a.cpu_transposed_storage, b.cpu_transposed_storage)), want,
                     shape + " (both transposed storage)");
    // A strided caller-provided result: every other column of a wider one,
    // and the transposed result storage.
    const Tensor wide = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(c.M * 2 * c.N), 7.0f),
                                         Shape{c.M, 2 * c.N});
    const Tensor every_other = wide.slice(1, 0, 2 * c.N, 2);
    matmul(a.cpu, b.cpu, std::nullopt, into(every_other));
    expect_same_bits(values_of(every_other), want, shape + " (strided result)");
    const Tensor rt = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(c.M * c.N), 7.0f), Shape{c.N, c.M})
                          .permute({1, 0});
    matmul(a.cpu, b.cpu, std::nullopt, into(rt));
    expect_same_bits(values_of(rt), want, shape + " (transposed result storage)");
  }
}

// Enough work to be split across threads (just above the 2^21
// multiply-adds a thread must get; by result columns, and by row tiles when
// there are too few column groups): the same bits at 1, 2 and 3 threads.
TEST_P(StrictMatmulKernel, MatchesGenericBitForBitAtEveryThreadCount) {
  struct Case {
    std::int64_t M, N, K;
  };
  for (const Case& c : {Case{130, 40, 420}, Case{1000, 3, 700}}) {
    const Operand a = operand(c.M, c.K, 7), b = operand(c.K, c.N, 8);
    const std::vector<float> want = values_of(matmul(a.generic, b.generic));
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      expect_same_bits(values_of(matmul(a.cpu_transposed_storage, b.cpu)), want,
                       GetParam() + " " + std::to_string(c.M) + "x" + std::to_string(c.N) + " threads " +
                           std::to_string(threads));
    }
  }
}

// Batches: a broadcast operand (batch stride 0) on either side, a batch
// axis that is itself a strided view, many small matrices (split across
// threads by batch entry), and an A whose rows overlap in storage.
TEST_P(StrictMatmulKernel, MatchesGenericBitForBitOnBatchedAndBroadcastOperands) {
  const std::int64_t B = 5, M = info_->rows + 2, N = info_->cols + 3, K = 33;
  const std::vector<float> av = random_values(B * M * K, 21), bv = random_values(K * N, 22);
  const Tensor ga = make_tensor<Generic>(av, Shape{B, M, K}), gb = make_tensor<Generic>(bv, Shape{K, N});
  const Tensor ca = make_tensor<CPU>(av, Shape{B, M, K}), cb = make_tensor<CPU>(bv, Shape{K, N});
  expect_same_bits(values_of(matmul(ca, cb)), values_of(matmul(ga, gb)), GetParam() + " (B broadcast over the batch)");
  // (K, N)^T-shaped batch on the left: B x (N x K) @ (K x M) with the (K x M)
  // operand broadcast.
  const std::vector<float> lv = random_values(B * N * K, 23), rv = random_values(K * M, 24);
  const Tensor gl = make_tensor<Generic>(lv, Shape{B, N, K}), gr = make_tensor<Generic>(rv, Shape{K, M});
  const Tensor cl = make_tensor<CPU>(lv, Shape{B, N, K}), cr = make_tensor<CPU>(rv, Shape{K, M});
  expect_same_bits(values_of(matmul(cr.permute({1, 0}).broadcast_to(Shape{B, M, K}), cl.permute({0, 2, 1}))),
                   values_of(matmul(gr.permute({1, 0}).broadcast_to(Shape{B, M, K}), gl.permute({0, 2, 1}))),
                   GetParam() + " (A broadcast over the batch, B transposed per matrix)");
  // Every other batch entry.
  expect_same_bits(values_of(matmul(ca.slice(0, 0, B, 2), cb)), values_of(matmul(ga.slice(0, 0, B, 2), gb)),
                   GetParam() + " (strided batch axis)");
  // Many small matrices.
  const std::int64_t many = 300;
  const std::vector<float> sv = random_values(many * 3 * 4, 25), tv = random_values(many * 4 * 2, 26);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    expect_same_bits(values_of(matmul(make_tensor<CPU>(sv, Shape{many, 3, 4}), make_tensor<CPU>(tv, Shape{many, 4, 2}))),
                     values_of(matmul(make_tensor<Generic>(sv, Shape{many, 3, 4}),
                                      make_tensor<Generic>(tv, Shape{many, 4, 2}))),
                     GetParam() + " (300 small matrices, threads " + std::to_string(threads) + ")");
  }
  // Overlapping rows: A(m, k) = v[m + k] (a Toeplitz view of one vector).
  const std::int64_t TM = info_->rows + 1, TK = 40;
  const std::vector<float> w = random_values(TM + TK, 27), bw = random_values(TK * N, 28);
  const Layout toeplitz(Shape{TM, TK}, Stride{1, 1});
  expect_same_bits(
      values_of(matmul(make_tensor<CPU>(w, Shape{TM + TK}).as_strided(toeplitz, 0), make_tensor<CPU>(bw, Shape{TK, N}))),
      values_of(matmul(make_tensor<Generic>(w, Shape{TM + TK}).as_strided(toeplitz, 0),
                       make_tensor<Generic>(bw, Shape{TK, N}))),
      GetParam() + " (overlapping rows of A)");
}

// IEEE specials: +0.0 start (every product -0.0 gives +0.0), infinities,
// NaN and huge values in the last row and column (so the kernel's zero
// padding past M and N meets them too: 0 x inf there must not leak), and a
// partial sum that overflows.
TEST_P(StrictMatmulKernel, MatchesGenericOnSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const std::int64_t M = info_->rows + 1, N = info_->cols + 1, K = 6;
  std::vector<float> av(static_cast<std::size_t>(M * K), 1.0f), bv(static_cast<std::size_t>(K * N), -0.0f);
  for (std::int64_t k = 0; k < K; ++k) av[static_cast<std::size_t>(M - 1 + k * M)] = k == 2 ? inf : big;
  for (std::int64_t k = 0; k < K; ++k) bv[static_cast<std::size_t>(k + (N - 1) * K)] = k == 4 ? std::nanf("") : 2.0f;
  for (std::int64_t k = 0; k < K; ++k) bv[static_cast<std::size_t>(k + (N - 2) * K)] = 1.0f;  // big + big overflows
  bv[static_cast<std::size_t>(1 + 2 * K)] = -inf;
  const std::vector<float> want = values_of(matmul(make_tensor<Generic>(av, Shape{M, K}), make_tensor<Generic>(bv, Shape{K, N})));
  const std::vector<float> got = values_of(matmul(make_tensor<CPU>(av, Shape{M, K}), make_tensor<CPU>(bv, Shape{K, N})));
  expect_same_bits(got, want, GetParam() + " (special values)");
  EXPECT_FALSE(std::signbit(got[0]));  // sum of -0.0 products from +0.0
  EXPECT_EQ(got[0], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(EveryKernelOfThisBuild, StrictMatmulKernel, ::testing::ValuesIn(kernel_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The table: the architecture's baseline comes last and always runs, and the
// automatic choice is the first kernel the processor supports.
TEST(StrictMatmulKernels, AutomaticChoiceIsTheBestSupportedKernel) {
  const KernelGuard guard(nullptr);
  const auto kernels = cpu::strict_f32_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_TRUE(kernels.back().supported);
  const char* best = nullptr;
  for (const cpu::StrictKernelInfo& k : kernels) {
    EXPECT_GT(k.cols, 0);
    EXPECT_GT(k.lanes, 0);
    EXPECT_EQ(k.rows % k.lanes, 0) << k.name;  // whole vectors of rows
    if (k.supported && best == nullptr) best = k.name;
  }
  if (const char* env = std::getenv("STRIDEWEAVE_MATMUL_KERNEL"); env != nullptr && *env != '\0')
    GTEST_SKIP() << "STRIDEWEAVE_MATMUL_KERNEL is set in this test's environment";
  EXPECT_EQ(std::string(cpu::strict_f32_kernel()), std::string(best));
}

TEST(StrictMatmulKernels, ForcingAnUnknownOrUnsupportedKernelRaisesAndChangesNothing) {
  const KernelGuard guard(cpu::strict_f32_kernels().back().name);
  EXPECT_THROW_EXACTLY(cpu::set_strict_f32_kernel("avx1024"), ValueError);
  EXPECT_EQ(std::string(cpu::strict_f32_kernel()), cpu::strict_f32_kernels().back().name);
  for (const cpu::StrictKernelInfo& k : cpu::strict_f32_kernels()) {
    if (k.supported) continue;
    EXPECT_THROW_EXACTLY(cpu::set_strict_f32_kernel(k.name), ValueError) << k.name;
    EXPECT_EQ(std::string(cpu::strict_f32_kernel()), cpu::strict_f32_kernels().back().name);
  }
}

// STRIDEWEAVE_MATMUL_KERNEL names the first choice; a bad value raises
// ValueError from the matmul that would have made the choice.
TEST(StrictMatmulKernels, EnvironmentVariableChoosesTheKernelOnFirstUse) {
  const char* saved = std::getenv("STRIDEWEAVE_MATMUL_KERNEL");
  const std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  const KernelGuard guard(nullptr);
  const std::string baseline = cpu::strict_f32_kernels().back().name;
  ::setenv("STRIDEWEAVE_MATMUL_KERNEL", baseline.c_str(), 1);
  cpu::set_strict_f32_kernel(nullptr);  // choose again on next use
  EXPECT_EQ(std::string(cpu::strict_f32_kernel()), baseline);
  ::setenv("STRIDEWEAVE_MATMUL_KERNEL", "not-a-kernel", 1);
  cpu::set_strict_f32_kernel(nullptr);
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f}, Shape{1, 2}), b = make_tensor<CPU>({3.0f, 4.0f}, Shape{2, 1});
  EXPECT_THROW_EXACTLY(matmul(a, b), ValueError);
  EXPECT_THROW_EXACTLY(cpu::strict_f32_kernel(), ValueError);
  if (restore) ::setenv("STRIDEWEAVE_MATMUL_KERNEL", restore->c_str(), 1);
  else ::unsetenv("STRIDEWEAVE_MATMUL_KERNEL");
  cpu::set_strict_f32_kernel(nullptr);
  EXPECT_EQ(values_of(matmul(a, b)), std::vector<float>{11.0f});
}

}  // namespace
