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
#include "carriers/cpu/matmul_batch.h"
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
  const MatmulBatch<A, B, float> mm(call);
  if (mm.M == 0 || mm.N == 0) return;
  std::vector<float> pa, pb;
  mm.for_each([&](float* po, const A* qa, const B* qb) {
    Mat ma, mb;
    if constexpr (std::is_same_v<A, float>) ma = {qa, mm.M, mm.K, mm.sam, mm.sak};
    else ma = packed(qa, mm.M, mm.K, mm.sam, mm.sak, pa);
    if constexpr (std::is_same_v<B, float>) mb = {qb, mm.K, mm.N, mm.sbk, mm.sbn};
    else mb = packed(qb, mm.K, mm.N, mm.sbk, mm.sbn, pb);
    gemm_into(ma, mb, po, mm.som, mm.son);
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
