// Internal: CPU's strict Float32 matmul (BINARY32 compute, FLOATING
// accumulation in Float32): every product is rounded to binary32 before it
// is added, and every result element sums its products in ascending k from
// +0.0 — Generic's order, so the results agree with Generic bit for bit,
// whichever micro-kernel runs, at every thread count and for any strides.
#pragma once

#include <strideweave/export.h>

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

// Computes every matrix of `batch` (they share `shape`) with the active
// micro-kernel (below). Threads: one large matrix is split across
// num_threads() by result columns (whole groups of the kernel's tile
// columns), or by row tiles when it has few columns; many small matrices
// are split across threads by batch entry; small work stays on the calling
// thread. Raises ValueError only when the first choice of a kernel does
// (STRIDEWEAVE_MATMUL_KERNEL, below).
void strict_f32_gemm(std::span<const StrictGemmOperands> batch, const StrictGemmShape& shape);

// The micro-kernels this build contains, one per instruction set, best
// first (x86-64: "avx512", "avx2", "sse2"; another architecture: "portable").
// Each keeps rows x cols sums of the result in vector registers of `lanes`
// floats, a tile shaped for its instruction set's register file, and has
// its own cache blocking: k is taken `kc` steps per pass, A is packed `mc`
// rows at a time, and a packed B panel holds at most `nc` columns (the
// edges that tests of the kernel's bits must cross).
// `supported`: the running processor (and operating system) can execute it.
// The last is the architecture's baseline and always supported.
struct StrictKernelInfo {
  const char* name;
  int rows, cols, lanes;
  std::int64_t kc, mc, nc;
  bool supported;
};
STRIDEWEAVE_TEST_API std::span<const StrictKernelInfo> strict_f32_kernels();

// The kernel strict_f32_gemm uses. Chosen on first use: the kernel named by
// the environment variable STRIDEWEAVE_MATMUL_KERNEL when it is set and not
// empty (a name of this build that the processor supports; anything else
// raises ValueError then, and again on every call until the choice
// succeeds), otherwise the first supported kernel. Every kernel gives the
// same bits, so the choice changes only speed.
STRIDEWEAVE_TEST_API const char* strict_f32_kernel();

// Makes `name` the kernel of every later call, from any thread (a call in
// progress finishes with the kernel it started with); nullptr or "" returns
// to the automatic choice (made again on next use). Raises ValueError, and
// changes nothing, for a name this build lacks or a kernel the processor
// cannot run. For tests and benchmarks.
STRIDEWEAVE_TEST_API void set_strict_f32_kernel(const char* name);

}  // namespace strideweave::carriers::cpu
