// CPU kernel of the contracted matmul plans (Arithmetic::BINARY32_FUSED,
// beyond the specification: docs/policy.md, "Contracted arithmetic"),
// executed by oneDNN's SGEMM.
//
// Why oneDNN rather than OpenBLAS: measured side by side on this machine
// (bench/run, docs/performance.md), Debian's oneDNN 2.6 SGEMM runs at about
// twice Debian's OpenBLAS 0.3.21 (whose kernels for this processor are its
// AVX2 ones), and it threads through the OpenMP runtime that strideweave's
// own kernels use, so both share one team and one thread count
// (parallel.h: with_library_threads) instead of oversubscribing the cores.
//
// Each matrix of a batch is handed to dnnl_sgemm (row-major API) without a
// copy when its layout is expressible as a row-major or transposed operand
// with a valid leading dimension; otherwise it is packed first. The result
// is written in place when it has a unit stride along m or n, otherwise
// into a compact temporary that is then scattered. Int32 operands of the
// mixed plans are converted to binary32 (exactly as the plan's conversion
// says) while packing.
#include <oneapi/dnnl/dnnl.h>

#include <cstring>

#include "carriers/cpu/kernels.h"
#include "carriers/cpu/parallel.h"

namespace strideweave::carriers::cpu {
namespace {

// A rows x cols matrix: element (r, c) at p[r * rs + c * cs].
struct Mat {
  const float* p;
  std::int64_t rows, cols, rs, cs;
  Mat transposed() const { return {p, cols, rows, cs, rs}; }
};

// The operand as (transpose flag, leading dimension) for dnnl's row-major
// API, or false when it needs packing.
bool as_gemm_operand(const Mat& m, char& trans, std::int64_t& ld) {
  if ((m.cs == 1 || m.cols == 1) && (m.rows == 1 || m.rs >= std::max<std::int64_t>(m.cols, 1))) {
    trans = 'N';
    ld = m.rows == 1 ? std::max<std::int64_t>(m.cols, 1) : m.rs;
    return true;
  }
  if ((m.rs == 1 || m.rows == 1) && (m.cols == 1 || m.cs >= std::max<std::int64_t>(m.rows, 1))) {
    trans = 'T';
    ld = m.cols == 1 ? std::max<std::int64_t>(m.rows, 1) : m.cs;
    return true;
  }
  return false;
}

template <class T>
Mat packed(const T* p, std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs,
           std::vector<float>& buffer) {
  buffer.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      buffer[static_cast<std::size_t>(r * cols + c)] = convert<float>(p[r * rs + c * cs]);
  return {buffer.data(), rows, cols, cols, 1};
}

void sgemm(const Mat& a, const Mat& b, float* c, std::int64_t ldc) {
  char ta = 'N', tb = 'N';
  std::int64_t lda = 1, ldb = 1;
  std::vector<float> pa, pb;
  Mat A = a, B = b;
  if (!as_gemm_operand(A, ta, lda)) {
    A = packed(a.p, a.rows, a.cols, a.rs, a.cs, pa);
    as_gemm_operand(A, ta, lda);
  }
  if (!as_gemm_operand(B, tb, ldb)) {
    B = packed(b.p, b.rows, b.cols, b.rs, b.cs, pb);
    as_gemm_operand(B, tb, ldb);
  }
  dnnl_status_t status = dnnl_success;
  with_library_threads([&] {
    status = dnnl_sgemm(ta, tb, A.rows, B.cols, A.cols, 1.0f, A.p, lda, B.p, ldb, 0.0f, c, ldc);
  });
  if (status != dnnl_success)
    throw RuntimeError(fmt::format("matmul (binary32_fused): oneDNN sgemm failed with status {}",
                                   static_cast<int>(status)));
}

// C (M x N, element (m, n) at c[m * som + n * son]) = A (M x K) B (K x N).
void gemm_into(const Mat& a, const Mat& b, float* c, std::int64_t som, std::int64_t son) {
  const std::int64_t M = a.rows, N = b.cols;
  if (a.cols == 0) {  // an empty contraction sums nothing: +0.0
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) c[m * som + n * son] = 0.0f;
    return;
  }
  if ((son == 1 || N == 1) && (M == 1 || som >= N)) {
    sgemm(a, b, c, M == 1 ? std::max<std::int64_t>(N, 1) : som);
  } else if ((som == 1 || M == 1) && (N == 1 || son >= M)) {
    // C^T = B^T A^T, C^T row-major with leading dimension son.
    sgemm(b.transposed(), a.transposed(), c, N == 1 ? std::max<std::int64_t>(M, 1) : son);
  } else {
    std::vector<float> tmp(static_cast<std::size_t>(M * N));
    sgemm(a, b, tmp.data(), N);
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) c[m * som + n * son] = tmp[static_cast<std::size_t>(m * N + n)];
  }
}

template <class A, class B>
void fused_matmul(const KernelCall& call) {
  const Tensor& ta = call.tensor(0);
  const Tensor& tb = call.tensor(1);
  const Strided<A> a = strided<A>(ta);
  const Strided<B> b = strided<B>(tb);
  const std::size_t r = ta.rank();
  const std::int64_t M = ta.shape().extent(r - 2), K = ta.shape().extent(r - 1), N = tb.shape().extent(r - 1);
  const std::int64_t sam = a.strides[r - 2], sak = a.strides[r - 1], sbk = b.strides[r - 2], sbn = b.strides[r - 1];
  const auto o_strides = *call.output.layout().flat_strides();
  const std::int64_t som = o_strides[r - 2], son = o_strides[r - 1];
  std::vector<std::int64_t> batch(ta.shape().extents().begin(), ta.shape().extents().end() - 2);
  std::vector<std::int64_t> ab = byte_strides<A>({a.strides.begin(), a.strides.end() - 2});
  std::vector<std::int64_t> bb = byte_strides<B>({b.strides.begin(), b.strides.end() - 2});
  std::vector<std::int64_t> obs = byte_strides<float>({o_strides.begin(), o_strides.end() - 2});
  if (batch.empty()) {
    batch.push_back(1);
    ab.push_back(0);
    bb.push_back(0);
    obs.push_back(0);
  }
  if (M == 0 || N == 0) return;
  float* o = out_data<float>(call.output);
  std::vector<float> pa, pb;
  walk<3>(batch, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base), reinterpret_cast<char*>(b.base)},
          {obs.data(), ab.data(), bb.data()},
          [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t count) {
            for (std::int64_t i = 0; i < count; ++i) {
              float* po = reinterpret_cast<float*>(p[0] + i * st[0]);
              const A* qa = reinterpret_cast<const A*>(p[1] + i * st[1]);
              const B* qb = reinterpret_cast<const B*>(p[2] + i * st[2]);
              Mat ma, mb;
              if constexpr (std::is_same_v<A, float>) ma = {qa, M, K, sam, sak};
              else ma = packed(qa, M, K, sam, sak, pa);
              if constexpr (std::is_same_v<B, float>) mb = {qb, K, N, sbk, sbn};
              else mb = packed(qb, K, N, sbk, sbn, pb);
              gemm_into(ma, mb, po, som, son);
            }
          });
}

}  // namespace

KernelFn fused_matmul_kernel(const OperationPlan& p) {
  if (p.compute() != Arithmetic::BINARY32_FUSED || p.accumulator_dtype() != &DType::Float32()) return nullptr;
  const SimpleDType &F = DType::Float32(), &I = DType::Int32();
  if (src_is(p, 0, F) && src_is(p, 1, F)) return fused_matmul<float, float>;
  if (src_is(p, 0, F) && src_is(p, 1, I)) return fused_matmul<float, std::int32_t>;
  if (src_is(p, 0, I) && src_is(p, 1, F)) return fused_matmul<std::int32_t, float>;
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
