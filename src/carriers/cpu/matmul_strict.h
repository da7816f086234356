// Internal: CPU's strict Float32 matmul (BINARY32 compute, FLOATING
// accumulation in Float32): every product is rounded to binary32 before it
// is added, and every result element sums its products in ascending k from
// +0.0 — Generic's order, so the results agree with Generic bit for bit.
#pragma once

#include <cstdint>
#include <span>

namespace strideweave::carriers::cpu {

// One matrix of a batch: A (M x K) element (m, k) at a[m * sam + k * sak],
// B (K x N) element (k, n) at b[k * sbk + n * sbn], the result element (m, n)
// at c[m * som + n * son]. Any strides (transposed, broadcast, negative).
struct StrictGemmOperands {
  const float* a;
  const float* b;
  float* c;
};
struct StrictGemmShape {
  std::int64_t M, N, K;
  std::int64_t sam, sak, sbk, sbn, som, son;
};

// Computes every matrix of `batch` (they share `shape`). Threads: one large
// matrix is split across num_threads() by result columns (or row tiles when
// it has few columns); many small matrices are split across threads by
// batch entry; small work stays on the calling thread.
void strict_f32_gemm(std::span<const StrictGemmOperands> batch, const StrictGemmShape& shape);

}  // namespace strideweave::carriers::cpu
