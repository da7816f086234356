// Internal: CPU's vectorised Float32 kernels (simd.cpp), plain functions over
// contiguous arrays for the kernel families to call on their compact fast
// paths.
//
// Built with Highway (Debian libhwy-dev) and its runtime dynamic dispatch:
// simd.cpp is compiled once per x86 target (SSSE3/SSE4, AVX2, AVX-512 ...)
// through hwy/foreach_target.h, and the first call picks the best target the
// running CPU supports, so one binary uses AVX-512 where it exists and still
// runs on a baseline x86-64. Why Highway: that dispatch comes from one source
// file with no per-target build flags, it ships a vetted vector math library
// (hwy/contrib/math, with documented ulp bounds and ranges) for exp, and it is
// a Debian package. (xsimd 8.1, also in Debian, has a runtime dispatcher,
// xsimd::dispatch, but every architecture's instantiation has to live in its
// own translation unit compiled with its own -m flags, i.e. per-target build
// system work; Highway's dispatch needs none.)
//
// Threading: every function below splits its own work with parallel_for
// (parallel.h) and returns when all of it is done; callers pass the whole
// array. The grains (simd.cpp) keep small arrays on the calling thread.
// Results never depend on the thread count (see each function).
//
// Arrays may alias exactly (out == a or out == b: an in-place update), never
// partially.
#pragma once

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

// out[i] = e**x[i], within 4 ulp of the C library's expf (Highway's Exp is
// documented at 1 ulp with FMA). A vector whose lanes all lie in
// [kExpLow, kExpHigh] (simd.cpp: normal, finite results well inside
// Highway's valid range) goes through Highway's Exp; any other vector (a NaN,
// an infinity, a result that would be subnormal, zero or overflow) and the
// tail are computed by std::exp lane by lane, so those results equal expf
// exactly.
void exp_f32(const float* x, float* out, std::int64_t n);

// The sum of x[0..n) in FLOATING order: fixed blocks of kSumBlock elements
// (simd.cpp), each summed by several independent vector accumulators in the
// accumulator type (lanes combined pairwise, the block's tail added last),
// then the block sums combined pairwise (a balanced tree in a fixed order) on
// the calling thread. Blocks are summed in parallel, but the block boundaries
// and the combination order depend only on n and the Highway target, never on
// the thread count. The error stays within n * eps_acc * sum|x| (the
// documented bound is twice that). IEEE addition throughout: any NaN term
// gives NaN, +inf and -inf together give NaN. An empty sum is +0.
float sum_f32(const float* x, std::int64_t n);
// As sum_f32, accumulating in Float64: each element is widened exactly
// (PromoteTo) before it is added.
double sum_f32_wide(const float* x, std::int64_t n);

}  // namespace strideweave::carriers::cpu::simd
