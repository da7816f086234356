// The CPU carrier's fast paths (issue "A fast CPU carrier"): the blocked,
// vectorised, threaded strict matmul keeps Generic's per-element order (bit
// for bit) at every thread count and layout; the thread-count setting
// (docs/threading.md). Speed itself is measured in bench/, never here.
#include <gtest/gtest.h>

#include <strideweave/strideweave.h>

#include <bit>
#include <cmath>
#include <random>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

// Restores the thread setting a test changes.
struct ThreadGuard {
  int saved = num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

std::vector<float> random_values(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// The strict plan's meaning, written out: ascending k from +0.0, each product
// rounded to binary32 before the add (this file is built with
// -ffp-contract=off). Values in logical order (first mode fastest).
std::vector<float> strict_reference(const Tensor& a, const Tensor& b) {
  const std::vector<float> av = TypedTensor<float>(a).values(), bv = TypedTensor<float>(b).values();
  const std::int64_t M = a.shape().extent(0), K = a.shape().extent(1), N = b.shape().extent(1);
  std::vector<float> out(static_cast<std::size_t>(M * N));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t m = 0; m < M; ++m) {
      float s = 0.0f;
      for (std::int64_t k = 0; k < K; ++k) {
        const float p = av[static_cast<std::size_t>(m + k * M)] * bv[static_cast<std::size_t>(k + n * K)];
        s += p;
      }
      out[static_cast<std::size_t>(m + n * M)] = s;
    }
  return out;
}

// The same logical matrix stored the other way round (a transposed view).
Tensor other_storage(const Tensor& x) {
  const std::vector<float> v = TypedTensor<float>(x).values();
  const std::int64_t R = x.shape().extent(0), C = x.shape().extent(1);
  std::vector<float> t(v.size());
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) t[static_cast<std::size_t>(c + r * C)] = v[static_cast<std::size_t>(r + c * R)];
  return make_tensor<CPU>(t, Shape{C, R}).permute({1, 0});
}

TEST(CpuFastPaths, StrictMatmulIsBitExactAtEveryThreadCountAndLayout) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  ThreadGuard guard;
  // Several k passes (K > 256), row and column tails, enough work to split.
  const std::int64_t M = 203, N = 70, K = 601;
  const Tensor a = make_tensor<CPU>(random_values(M * K, 1), Shape{M, K});
  const Tensor b = make_tensor<CPU>(random_values(K * N, 2), Shape{K, N});
  const std::vector<float> expected = strict_reference(a, b);
  const Tensor a_rowmajor = other_storage(a), b_rowmajor = other_storage(b);
  ASSERT_EQ(TypedTensor<float>(a_rowmajor).values(), TypedTensor<float>(a).values());
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(TypedTensor<float>(matmul(a, b)).values(), expected) << threads;
    EXPECT_EQ(TypedTensor<float>(matmul(a_rowmajor, b)).values(), expected) << threads;
    EXPECT_EQ(TypedTensor<float>(matmul(a, b_rowmajor)).values(), expected) << threads;
    EXPECT_EQ(TypedTensor<float>(matmul(a_rowmajor, b_rowmajor)).values(), expected) << threads;
    // A strided caller-provided output (every other column of a wider one).
    const Tensor wide = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(M * 2 * N), 7.0f), Shape{M, 2 * N});
    const Tensor out = wide.slice(1, 0, 2 * N, 2);
    matmul(a, b, std::nullopt, into(out));
    EXPECT_EQ(TypedTensor<float>(out).values(), expected) << threads;
  }
}

TEST(CpuFastPaths, StrictBatchedMatmulIsBitExactAtEveryThreadCount) {
  ThreadGuard guard;
  // Many small matrices (split by batch entry) and a broadcast operand.
  const std::int64_t B = 9, M = 33, N = 17, K = 40;
  const Tensor a = make_tensor<CPU>(random_values(B * M * K, 3), Shape{B, M, K});
  const Tensor b = make_tensor<CPU>(random_values(K * N, 4), Shape{K, N});
  const Tensor g_a = make_tensor<Generic>(TypedTensor<float>(a).values(), Shape{B, M, K});
  const Tensor g_b = make_tensor<Generic>(TypedTensor<float>(b).values(), Shape{K, N});
  const std::vector<float> expected = TypedTensor<float>(matmul(g_a, g_b)).values();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    EXPECT_EQ(TypedTensor<float>(matmul(a, b)).values(), expected) << threads;
  }
}

TEST(CpuFastPaths, ContractedMatmulAgreesWithItsReferenceAcrossThreadCounts) {
  ThreadGuard guard;
  const std::int64_t M = 150, N = 90, K = 300;
  const Tensor a = make_tensor<CPU>(random_values(M * K, 5), Shape{M, K});
  const Tensor b = make_tensor<CPU>(random_values(K * N, 6), Shape{K, N});
  const std::vector<float> av = TypedTensor<float>(a).values(), bv = TypedTensor<float>(b).values();
  const OperationExecutionOptions fused("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const std::vector<float> got = TypedTensor<float>(matmul(a, b, fused)).values();
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t m = 0; m < M; ++m) {
        double exact = 0.0, magnitude = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(av[static_cast<std::size_t>(m + k * M)]) * bv[static_cast<std::size_t>(k + n * K)];
          exact += p;
          magnitude += std::fabs(p);
        }
        // FLOATING agreement (docs/numerics.md): n * eps * sum|t| per side.
        EXPECT_NEAR(got[static_cast<std::size_t>(m + n * M)], exact, K * std::ldexp(1.0, -24) * magnitude + 1e-30)
            << m << "," << n << " threads " << threads;
      }
  }
}

// Elementwise, analytic and FLOATING reduction kernels split their work
// across threads (above a grain); their bits must not depend on the count.
TEST(CpuFastPaths, ThreadedKernelsGiveTheSameBitsAtEveryThreadCount) {
  ThreadGuard guard;
  const std::int64_t n = 300001;  // several ranges and a ragged tail
  const Tensor x = make_tensor<CPU>(random_values(n, 7), Shape{n});
  const Tensor y = make_tensor<CPU>(random_values(n, 8), Shape{n});
  std::vector<std::vector<float>> first;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    std::vector<std::vector<float>> got = {
        TypedTensor<float>(add(x, y)).values(),         TypedTensor<float>(mul(x, 0.5)).values(),
        TypedTensor<float>(div(x, y)).values(),         TypedTensor<float>(exp(x)).values(),
        TypedTensor<float>(tanh(x)).values(),           TypedTensor<float>(maximum(x, y)).values(),
        TypedTensor<float>(reduce_sum(x)).values(),
        TypedTensor<float>(reduce_sum(x, Axes::all(), false, OperationExecutionOptions("reduce_sum", &DType::Float64())))
            .values(),
    };
    if (first.empty()) first = got;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].size(), first[k].size());
      for (std::size_t i = 0; i < got[k].size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[k][i]), std::bit_cast<std::uint32_t>(first[k][i]))
            << "kernel " << k << " element " << i << " threads " << threads;
    }
  }
}

// A checked Int32 overflow found by any thread's range raises, and a
// caller-provided output is left as it was.
TEST(CpuFastPaths, Int32OverflowInAnyRangeRaisesAndChangesNothing) {
  ThreadGuard guard;
  set_num_threads(2);
  const std::int64_t n = 300000;
  std::vector<std::int32_t> big(static_cast<std::size_t>(n), 1);
  big.back() = 2147483647;  // the last range overflows
  const Tensor a = make_tensor<CPU>(big, Shape{n});
  const Tensor out = make_tensor<CPU>(std::vector<std::int32_t>(static_cast<std::size_t>(n), -5), Shape{n});
  EXPECT_THROW_EXACTLY(add(a, a), OverflowError);
  EXPECT_THROW_EXACTLY(add(a, a, into(out)), OverflowError);
  EXPECT_EQ(TypedTensor<std::int32_t>(out).values(), std::vector<std::int32_t>(static_cast<std::size_t>(n), -5));
}

TEST(CpuFastPaths, ThreadSettingValidatesAndPersists) {
  ThreadGuard guard;
  EXPECT_GE(num_threads(), 1);
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  EXPECT_THROW_EXACTLY(set_num_threads(0), ValueError);
  EXPECT_THROW_EXACTLY(set_num_threads(-2), ValueError);
  EXPECT_EQ(num_threads(), 3);  // unchanged by the refused calls
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
}

}  // namespace

// The vectorised extremum of a contiguous block (reduce_max / reduce_min)
// gives MaxFold's / MinFold's bits exactly: the first NaN with its payload,
// +0 over -0 (max) and -0 under +0 (min), at every block length and NaN
// position, the same as Generic's reference.
TEST(CpuFastPaths, VectorisedExtremumKeepsTheFirstNanAndTheSignedZeroRule) {
  std::mt19937 rng(7);
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  for (std::int64_t length : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33}) {
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> v(static_cast<std::size_t>(length * 3));
      std::uniform_int_distribution<int> kind(0, 9);
      for (float& x : v) {
        const int k = kind(rng);
        x = k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 && trial % 3 == 0 ? (rng() % 2 ? nan_a : nan_b)
                                                                     : static_cast<float>(static_cast<int>(rng() % 5) - 2);
      }
      const Shape shape = Shape::of({length, 3});
      const Tensor cpu = make_tensor<CPU, float>(v, shape), generic = make_tensor<Generic, float>(v, shape);
      for (bool max : {true, false}) {
        const Tensor c = max ? reduce_max(cpu, Axes(0)) : reduce_min(cpu, Axes(0));
        const Tensor g = max ? reduce_max(generic, Axes(0)) : reduce_min(generic, Axes(0));
        for (std::int64_t j = 0; j < 3; ++j)
          EXPECT_EQ(std::bit_cast<std::uint32_t>(c.at_ordinal(j).f), std::bit_cast<std::uint32_t>(g.at_ordinal(j).f))
              << (max ? "max" : "min") << " length " << length << " trial " << trial << " column " << j;
      }
    }
  }
}
