// Internal: CPU's vectorised Float32 kernels (simd.cpp), plain functions over
// contiguous arrays for the kernel families to call on their fast paths.
//
// Built with Highway (Debian libhwy-dev) and its runtime dynamic dispatch:
// simd.cpp is compiled once per x86 target (SCALAR, SSSE3, SSE4, AVX2,
// AVX-512 ...) through hwy/foreach_target.h, and the first call picks the best
// target the running CPU supports, so one binary uses AVX-512 where it exists
// and still runs on a baseline x86-64. Why Highway: that dispatch comes from
// one source file with no per-target build flags, and it is a Debian package.
// (xsimd 8.1, also in Debian, has a runtime dispatcher, xsimd::dispatch, but
// every architecture's instantiation has to live in its own translation unit
// compiled with its own -m flags, i.e. per-target build system work;
// Highway's dispatch needs none.)
//
// Determinism (docs/numerics.md): every function below gives the same bits
// on every Highway target, for every vector width, thread count and position
// of an element in the array. Each one is a fixed sequence of correctly
// rounded IEEE operations per element (or, for the sums, a fixed order of
// additions that does not depend on the vector width), never a fused
// multiply-add, an estimate or a target-specific library routine. The CPU
// kernels that read strided, broadcast or converted operands gather them into
// a buffer and call these same functions, so a result never depends on the
// operand's layout either.
//
// Threading: exp_f32, binary_f32(_scalar) and sum_f32(_wide) split their own
// work with parallel_for (parallel.h) and return when all of it is done;
// callers pass the whole array. The grains (simd.cpp) keep small arrays on
// the calling thread. The *_piece functions run on the calling thread.
//
// Arrays may alias exactly (out == a or out == b: an in-place update), never
// partially.
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>

namespace strideweave::carriers::cpu::simd {

enum class Binary { Add, Sub, Mul, Div };

// out[i] = a[i] op b[i] for i in [0, n). Each result is the single IEEE
// binary32 add/sub/mul/div (never fused, never an estimate), so it is bit for
// bit the scalar `a op b`, signed zeros included; a NaN operand gives the
// first NaN operand, quieted (as x86's scalar instructions do; add and mul
// enforce the operand order explicitly). The tail past the last full vector
// runs through the same vector instruction on a padded copy.
void binary_f32(Binary op, const float* a, const float* b, float* out, std::int64_t n);

// As binary_f32 with the scalar b: out[i] = a[i] op b, or, when scalar_left,
// out[i] = b op a[i].
void binary_f32_scalar(Binary op, const float* a, float b, float* out, std::int64_t n, bool scalar_left);

// Accumulation into out (KernelCall::accumulate): out[i] = out[i] + (a[i] op
// b[i]), each element the two correctly rounded operations in that order
// (never fused), bit for bit the scalar expression. out must not alias a or
// b (the front end refuses an output that shares an operand's carrier).
void binary_f32_accumulate(Binary op, const float* a, const float* b, float* out, std::int64_t n);
void binary_f32_scalar_accumulate(Binary op, const float* a, float b, float* out, std::int64_t n, bool scalar_left);

// ---- exp

// out[i] = e**x[i] rounded to binary32: the CPU carrier's exp (every layout
// and operand dtype of the `exp` plan ends here). One function of x, whatever
// the target, the position or the thread count:
// - NaN gives x quieted (its payload and sign kept, the quiet bit set);
// - x > kExpMaxFinite (88.72283f, including +inf) gives +inf;
// - every other x, -inf included, goes through one branch-free sequence of
//   correctly rounded binary64 operations (simd.cpp: Cody-Waite reduction
//   with a split ln 2, a degree-9 polynomial, scaling by 2**k) whose value
//   has a relative error below 2**-44, rounded once to binary32; results
//   below the normal range round to the correct subnormal or zero.
// So the error is at most 0.5 ulp + 2**-20 ulp. Measured over all 2**32
// inputs (docs/numerics.md): 24 results are not the correctly rounded one,
// the largest error is 0.50000034 ulp.
STRIDEWEAVE_TEST_API void exp_f32(const float* x, float* out, std::int64_t n);

// The largest binary32 x whose e**x rounds to a finite binary32 (0x42B17217);
// e**x for the next float up exceeds FLT_MAX by more than half an ulp.
inline constexpr float kExpMaxFinite = 88.72283172607421875f;

// ---- MAXIMUM / MINIMUM of a contiguous run (reduce_max, reduce_min)

// The largest (max) or smallest element of x[0..n), n >= 1, with exactly the
// sequential fold's result (reductions.cpp's MaxFold / MinFold): the first
// NaN in x, bit for bit, when there is one; +0 over -0 for the maximum, -0
// under +0 for the minimum; otherwise the extreme value. The extreme of a set
// does not depend on the order it is visited in once NaNs and zero signs are
// settled, so every target and lane count gives the same bits. Runs on the
// calling thread.
float extremum_f32(const float* x, std::int64_t n, bool max);

// ---- FLOATING sum (docs/numerics.md, "The CPU summation order")
//
// The order is defined on a fixed virtual width, not on the vector width:
// - the terms are cut into pieces of kSumPiece consecutive elements;
// - inside a piece, partial sum j (j in [0, P), P = kSumPartialsF32 for a
//   Float32 accumulator, kSumPartialsF64 for Float64) adds the piece's
//   elements i with i mod P == j, in ascending i, starting from +0;
// - the P partials are combined by halving: while more than one is left,
//   p[j] = p[j] + p[j + h] for j < h (h = half the count);
// - the piece sums are combined pairwise (combine_pieces below).
// A vector target keeps the P partials in P / lanes registers, so every lane
// count (4, 8, 16 floats) and the scalar code perform the same additions.
// IEEE addition throughout: any NaN term gives NaN (its payload is not
// specified), +inf and -inf together give NaN. An empty sum is +0; a sum of
// -0 terms is +0 (from +0).
inline constexpr std::int64_t kSumPiece = 4096;
inline constexpr int kSumPartialsF32 = 64;
inline constexpr int kSumPartialsF64 = 32;

// The sum of the contiguous x[0..n) in the order above, accumulated in
// Float32 (sum_f32) or in Float64 (sum_f32_wide: each element widened
// exactly). Pieces are summed in parallel above a grain; the combination
// runs on the calling thread.
float sum_f32(const float* x, std::int64_t n);
double sum_f32_wide(const float* x, std::int64_t n);

// The sum of one piece x[0..n), n <= kSumPiece, on the calling thread: for
// callers that gather a strided block into a buffer piece by piece.
float sum_piece_f32(const float* x, std::int64_t n);
double sum_piece_f32_wide(const float* x, std::int64_t n);

// v[0] + ... + v[m-1] combined pairwise, level by level, in a fixed order
// (v[2j] + v[2j+1]; an odd last element moves up a level unchanged).
// Overwrites v. m >= 1.
template <class T>
T combine_pieces(T* v, std::size_t m) {
  while (m > 1) {
    const std::size_t half = m / 2;
    for (std::size_t j = 0; j < half; ++j) v[j] = v[2 * j] + v[2 * j + 1];
    if (m % 2 != 0) v[half] = v[m - 1];
    m = half + m % 2;
  }
  return v[0];
}

// ---- introspection (tests, benchmarks)

// The Highway target the dispatcher uses now (e.g. "AVX3", "AVX2", "SSE4",
// "SCALAR"): the one that ran, or will run, the kernels above.
STRIDEWEAVE_TEST_API const char* dispatched_target();

}  // namespace strideweave::carriers::cpu::simd
