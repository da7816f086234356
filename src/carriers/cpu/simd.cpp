// CPU's vectorised Float32 kernels: Highway with runtime dynamic dispatch.
// Contracts, the choice of Highway and the determinism rule: simd.h.
//
// hwy/foreach_target.h re-includes this file once per x86 target Highway can
// build (HWY_TARGET_INCLUDE below); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target in its own namespace
// (HWY_NAMESPACE), and the HWY_ONCE part, compiled once, exports a table of
// the per-target functions and dispatches through it (HWY_DYNAMIC_DISPATCH
// picks the best target of the running CPU on the first call). Threading
// stays in the HWY_ONCE part: the per-target code only handles one range.
//
// Why the bits cannot depend on the target: each kernel below is written
// only with operations that every target computes as the same correctly
// rounded IEEE operation (Add, Sub, Mul, Div, Min/Max on non-NaN lanes,
// float <-> double conversion, integer and bit operations). MulAdd is never
// used: it is one fused rounding on AVX2/AVX-512 and two roundings on
// SSE4/SCALAR. The library is built with -ffp-contract=off, so the compiler
// does not fuse a Mul and an Add either (GCC's x86 intrinsics are plain
// vector expressions that it would otherwise contract on FMA targets).

// Non-target part, processed once (this file is included once per target).
#ifndef STRIDEWEAVE_CPU_SIMD_ONCE
#define STRIDEWEAVE_CPU_SIMD_ONCE

#include "carriers/cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "carriers/cpu/parallel.h"

namespace strideweave::carriers::cpu::simd::detail {

// ---- exp's constants (binary64). See ExpVec for how they are used.
//
// The reduction x = k ln2 + r, |r| <= ln2/2 (1 + 2**-9), k = round(x / ln2):
// kLn2Hi is ln 2 rounded to 42 significant bits, so k * kLn2Hi is exact for
// |k| < 2**11 (x is clamped so that |k| <= 160), and x - k * kLn2Hi is exact
// (Sterbenz: the two are within a factor 2 of each other when k != 0);
// kLn2Lo = ln 2 - kLn2Hi rounded to binary64. kShifter = 1.5 * 2**52: adding
// it to |v| < 2**51 rounds v to the nearest integer (ties to even) and leaves
// that integer in the low mantissa bits.
constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kLn2Hi = 0x1.62e42fefa3800p-1;
constexpr double kLn2Lo = 0x1.ef35793c76730p-45;
constexpr double kShifter = 0x1.8p52;
// e**r ~ 1 + r + r**2 (c2 + c3 r + ... + c9 r**7): a Chebyshev fit of
// (e**r - 1) / r on [-ln2/2, ln2/2] (1 + 2**-9) computed with mpmath,
// coefficients rounded to binary64. Relative error of the polynomial,
// coefficients as rounded: 3.8e-14 (2**-44.6). Degree 8 would give 2**-38.8,
// enough for about 1 wrong rounding in 2**14 inputs; degree 9 makes the
// binary32 result the correctly rounded one in all but a few of the 2**32
// inputs (docs/numerics.md gives the measured count).
constexpr double kExpC2 = 0x1.fffffffff6f84p-2;
constexpr double kExpC3 = 0x1.5555555553b12p-3;
constexpr double kExpC4 = 0x1.5555557488158p-5;
constexpr double kExpC5 = 0x1.1111111c6873cp-7;
constexpr double kExpC6 = 0x1.6c164d06dc973p-10;
constexpr double kExpC7 = 0x1.a019acff659b9p-13;
constexpr double kExpC8 = 0x1.a15b985e064c9p-16;
constexpr double kExpC9 = 0x1.72c80fb41e594p-19;
// x is clamped to [kExpClampLow, kExpClampHigh] before the reduction, which
// keeps k in [-159, 130] and so 2**k a normal binary64. Nothing is lost:
// e**-110 is far below half the smallest binary32 subnormal (2**-150 ~
// e**-103.97), so every x below it rounds to +0 as e**x does, and every
// x > kExpMaxFinite (< 90) is set to +inf afterwards.
constexpr double kExpClampLow = -110.0;
constexpr double kExpClampHigh = 90.0;

static_assert(kSumPiece % kSumPartialsF32 == 0 && kSumPiece % kSumPartialsF64 == 0);

// A piece of at most kShortSum terms is summed by ShortSum below instead of
// the vector kernel, whose fixed cost (the dispatch, P partials, the tree)
// dominates a handful of terms, e.g. the many 3-element blocks of a
// reduction over a short axis. Both give the same bits.
constexpr std::int64_t kShortSum = 16;

// The summation order of simd.h for n <= P terms in scalar code. The
// partials are p[j] = +0 + x[j] for j < n and +0 for j >= n. A partial is
// never -0 (an IEEE sum is -0 only when both operands are -0, and every
// partial starts from +0), so adding a +0 partial to it changes nothing: the
// halving over P partials equals the halving over the smallest power of two
// w >= n of them, which is what is computed.
template <class T>
T ShortSum(const float* x, std::int64_t n) {
  T p[kShortSum];
  std::size_t w = 1;
  while (static_cast<std::int64_t>(w) < n) w *= 2;
  for (std::size_t j = 0; j < w; ++j)
    p[j] = static_cast<std::int64_t>(j) < n ? T(0) + static_cast<T>(x[j]) : T(0);
  for (std::size_t h = w / 2; h >= 1; h /= 2)
    for (std::size_t j = 0; j < h; ++j) p[j] = p[j] + p[j + h];
  return p[0];
}

}  // namespace strideweave::carriers::cpu::simd::detail

#endif  // STRIDEWEAVE_CPU_SIMD_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "carriers/cpu/simd.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace strideweave::carriers::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- elementwise binary

// x86 returns the first NaN operand (quieted) when both are NaN, and so
// does the scalar `a op b` (docs/operations/arithmetic.md). The compiler
// treats a vector add or multiply as commutative and may swap the operands
// of the instruction, so for those two a lane whose `a` is NaN takes a,
// quieted, explicitly. (sub and div cannot be swapped.)
template <class V>
HWY_INLINE V FirstNaN(V a, V r) {
  const hn::DFromV<V> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const V quiet_a = hn::BitCast(d, hn::Or(hn::BitCast(du, a), hn::Set(du, 0x00400000u)));
  return hn::IfThenElse(hn::IsNaN(a), quiet_a, r);
}

struct AddOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return FirstNaN(a, hn::Add(a, b));
  }
};
struct SubOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return hn::Sub(a, b);
  }
};
struct MulOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return FirstNaN(a, hn::Mul(a, b));
  }
};
struct DivOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return hn::Div(a, b);
  }
};

// Operand sources: a contiguous array, or one value in every lane.
struct ArrayIn {
  const float* p;
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, std::int64_t i) const {
    return hn::LoadU(d, p + i);
  }
  // The r < Lanes(d) elements from i, zero-padded.
  template <class D>
  HWY_INLINE hn::Vec<D> load_tail(D d, std::int64_t i, std::size_t r) const {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(buf, p + i, r * sizeof(float));
    return hn::Load(d, buf);
  }
};
struct ScalarIn {
  float v;
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, std::int64_t) const {
    return hn::Set(d, v);
  }
  template <class D>
  HWY_INLINE hn::Vec<D> load_tail(D d, std::int64_t, std::size_t) const {
    return hn::Set(d, v);
  }
};

// out[i] = op(a[i], b[i]). The tail goes through the same vector
// instruction on zero-padded copies, so every element gets the same
// instruction (the padding lanes are discarded).
//
// The elements before the output's first vector-aligned address are peeled
// off: a full-width store that straddles two cache lines costs more than a
// straddling load, so a long loop aligns its stores and lets the loads fall
// where the operands sit (numpy's arrays sit at 16 bytes past a line; ours
// at a line). Measured on a 1M Float32 add over numpy-aligned operands
// (AVX-512, one thread): aligning the loads instead ran about 4% slower. The
// peeled elements take the tail's path (the same instruction on a padded
// copy), so no value changes. Short arrays are not peeled (they are not
// memory-bound).
HWY_INLINE std::int64_t AlignmentPeel(std::size_t vector_bytes, const float* out, std::int64_t n) {
  constexpr std::int64_t kPeelFrom = 4096;
  if (n < kPeelFrom) return 0;
  const auto address = reinterpret_cast<std::uintptr_t>(out);
  if (address % sizeof(float) != 0) return 0;
  return static_cast<std::int64_t>(((vector_bytes - address % vector_bytes) % vector_bytes) / sizeof(float));
}

template <class Op, class A, class B>
HWY_INLINE void BinaryLoop(Op op, A a, B b, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = AlignmentPeel(hn::Lanes(d) * sizeof(float), out, n);
  if (i > 0) {
    const auto r = static_cast<std::size_t>(i);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(op(a.load_tail(d, 0, r), b.load_tail(d, 0, r)), d, buf);
    std::memcpy(out, buf, r * sizeof(float));
  }
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto r0 = op(a.load(d, i), b.load(d, i));
    const auto r1 = op(a.load(d, i + N), b.load(d, i + N));
    const auto r2 = op(a.load(d, i + 2 * N), b.load(d, i + 2 * N));
    const auto r3 = op(a.load(d, i + 3 * N), b.load(d, i + 3 * N));
    hn::StoreU(r0, d, out + i);
    hn::StoreU(r1, d, out + i + N);
    hn::StoreU(r2, d, out + i + 2 * N);
    hn::StoreU(r3, d, out + i + 3 * N);
  }
  for (; i + N <= n; i += N) hn::StoreU(op(a.load(d, i), b.load(d, i)), d, out + i);
  if (i < n) {
    const auto r = static_cast<std::size_t>(n - i);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(op(a.load_tail(d, i, r), b.load_tail(d, i, r)), d, buf);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

template <class A, class B>
HWY_INLINE void BinaryAny(int op, A a, B b, float* out, std::int64_t n) {
  switch (static_cast<Binary>(op)) {
    case Binary::Add: return BinaryLoop(AddOp{}, a, b, out, n);
    case Binary::Sub: return BinaryLoop(SubOp{}, a, b, out, n);
    case Binary::Mul: return BinaryLoop(MulOp{}, a, b, out, n);
    case Binary::Div: return BinaryLoop(DivOp{}, a, b, out, n);
  }
}

void BinaryF32(int op, const float* a, const float* b, float* out, std::int64_t n) {
  BinaryAny(op, ArrayIn{a}, ArrayIn{b}, out, n);
}

// out[i] = out[i] + op(a[i], b[i]): two rounded operations (never fused),
// the add being AddOp, so each element is bit for bit the scalar
// `out + (a op b)`.
template <class Op, class A, class B>
HWY_INLINE void BinaryAccumulateLoop(Op op, A a, B b, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const AddOp add{};
  std::int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto r0 = add(hn::LoadU(d, out + i), op(a.load(d, i), b.load(d, i)));
    const auto r1 = add(hn::LoadU(d, out + i + N), op(a.load(d, i + N), b.load(d, i + N)));
    hn::StoreU(r0, d, out + i);
    hn::StoreU(r1, d, out + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(add(hn::LoadU(d, out + i), op(a.load(d, i), b.load(d, i))), d, out + i);
  if (i < n) {
    const auto r = static_cast<std::size_t>(n - i);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(add(ArrayIn{out}.load_tail(d, i, r), op(a.load_tail(d, i, r), b.load_tail(d, i, r))), d, buf);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

template <class A, class B>
HWY_INLINE void BinaryAccumulateAny(int op, A a, B b, float* out, std::int64_t n) {
  switch (static_cast<Binary>(op)) {
    case Binary::Add: return BinaryAccumulateLoop(AddOp{}, a, b, out, n);
    case Binary::Sub: return BinaryAccumulateLoop(SubOp{}, a, b, out, n);
    case Binary::Mul: return BinaryAccumulateLoop(MulOp{}, a, b, out, n);
    case Binary::Div: return BinaryAccumulateLoop(DivOp{}, a, b, out, n);
  }
}

void BinaryAccumulateF32(int op, const float* a, const float* b, float* out, std::int64_t n) {
  BinaryAccumulateAny(op, ArrayIn{a}, ArrayIn{b}, out, n);
}

void BinaryAccumulateScalarF32(int op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  if (scalar_left) BinaryAccumulateAny(op, ScalarIn{b}, ArrayIn{a}, out, n);
  else BinaryAccumulateAny(op, ArrayIn{a}, ScalarIn{b}, out, n);
}

void BinaryScalarF32(int op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  if (scalar_left) BinaryAny(op, ScalarIn{b}, ArrayIn{a}, out, n);
  else BinaryAny(op, ArrayIn{a}, ScalarIn{b}, out, n);
}

// ---- exp
//
// Hand-written rather than Highway's hn::Exp (hwy/contrib/math): that one
// evaluates its polynomial with MulAdd, one rounding on AVX2/AVX-512 and two
// on SSE4 and the scalar targets, so its bits depend on the target the
// dispatcher picks (and it is within about 1 ulp, not correctly rounded: 9%
// of random inputs in [-80, 80] differ from the correctly rounded value). This kernel works in
// binary64, where a short Cody-Waite reduction and a degree-9 polynomial
// leave a relative error near 2**-44, so rounding the binary64 value once to
// binary32 gives the correctly rounded e**x except when e**x lies within
// about 2**-44 (relative) of a binary32 rounding boundary. Every step is a
// correctly rounded binary64 operation (Mul, Add, Sub, float<->double
// conversions, integer add and shift), so every target computes the same bits.

// e**v for the binary32 lanes of `v` (D = a float descriptor half as wide as
// the double one, e.g. 8 floats on AVX-512), as specified in simd.h.
template <class DF>
HWY_INLINE hn::Vec<DF> ExpVec(DF df, hn::Vec<DF> v) {
  const hn::Rebind<double, DF> dd;
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::RebindToUnsigned<DF> duf;
  // NaN lanes (Min/Max would treat them differently per target) are
  // replaced at the end; the clamp is exact on every other lane.
  const auto x = hn::Min(hn::Max(hn::PromoteTo(dd, v), hn::Set(dd, detail::kExpClampLow)),
                         hn::Set(dd, detail::kExpClampHigh));
  // k = round(x / ln2) as a binary64 integer, and in the low bits of kd.
  const auto shifter = hn::Set(dd, detail::kShifter);
  const auto kd = hn::Add(hn::Mul(x, hn::Set(dd, detail::kInvLn2)), shifter);
  const auto k = hn::Sub(kd, shifter);
  // r = x - k ln2 in two steps (the first exact).
  const auto r = hn::Sub(hn::Sub(x, hn::Mul(k, hn::Set(dd, detail::kLn2Hi))), hn::Mul(k, hn::Set(dd, detail::kLn2Lo)));
  // p = 1 + (r + r**2 q(r)), q(r) = c2 + c3 r + ... + c9 r**7 evaluated by
  // Estrin's scheme (pairs, then pairs of pairs): one operation fewer than
  // Horner's and a dependency chain of 9 instead of 20 (8% faster here).
  // One rounding per Mul and per Add (never MulAdd).
  const auto r2 = hn::Mul(r, r);
  const auto r4 = hn::Mul(r2, r2);
  const auto a0 = hn::Add(hn::Mul(hn::Set(dd, detail::kExpC3), r), hn::Set(dd, detail::kExpC2));
  const auto a1 = hn::Add(hn::Mul(hn::Set(dd, detail::kExpC5), r), hn::Set(dd, detail::kExpC4));
  const auto a2 = hn::Add(hn::Mul(hn::Set(dd, detail::kExpC7), r), hn::Set(dd, detail::kExpC6));
  const auto a3 = hn::Add(hn::Mul(hn::Set(dd, detail::kExpC9), r), hn::Set(dd, detail::kExpC8));
  const auto b0 = hn::Add(hn::Mul(a1, r2), a0);
  const auto b1 = hn::Add(hn::Mul(a3, r2), a2);
  const auto q = hn::Add(hn::Mul(b1, r4), b0);
  const auto p = hn::Add(hn::Set(dd, 1.0), hn::Add(r, hn::Mul(r2, q)));
  // 2**k: the biased exponent k + 1023 (in [864, 1153]) shifted into place.
  // kd's bits are kShifter's plus k (two's complement) in the low bits, and
  // the shift drops everything above the low 12 bits.
  const auto two_k = hn::BitCast(dd, hn::ShiftLeft<52>(hn::Add(hn::BitCast(du, kd), hn::Set(du, 1023))));
  // p * 2**k is exact (binary64 has the range); the one rounding to
  // binary32 is the demotion, which rounds to nearest even and produces
  // subnormals and zeros below the normal range. (SCALAR/EMU128 DemoteTo clamps
  // values above FLT_MAX to FLT_MAX where x86 rounds them to +inf: the
  // overflowing lanes are set to +inf below, so both agree.)
  auto result = hn::DemoteTo(df, hn::Mul(p, two_k));
  result = hn::IfThenElse(hn::Gt(v, hn::Set(df, kExpMaxFinite)), hn::Set(df, std::numeric_limits<float>::infinity()),
                          result);
  const auto quiet = hn::BitCast(df, hn::Or(hn::BitCast(duf, v), hn::Set(duf, 0x00400000u)));
  return hn::IfThenElse(hn::IsNaN(v), quiet, result);
}

void ExpF32(const float* x, float* out, std::int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto r0 = ExpVec(df, hn::LoadU(df, x + i));
    const auto r1 = ExpVec(df, hn::LoadU(df, x + i + N));
    hn::StoreU(r0, df, out + i);
    hn::StoreU(r1, df, out + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(ExpVec(df, hn::LoadU(df, x + i)), df, out + i);
  if (i < n) {
    // The tail through the same vector code on a zero-padded copy.
    const auto r = static_cast<std::size_t>(n - i);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(buf, x + i, r * sizeof(float));
    hn::Store(ExpVec(df, hn::Load(df, buf)), df, buf);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

// ---- sum (the order: simd.h)

// Loads N terms of the accumulator type T from floats (widened exactly for
// T = double).
template <class D>
HWY_INLINE hn::Vec<D> LoadTerms(D d, const float* p) {
  if constexpr (sizeof(hn::TFromD<D>) == sizeof(float)) {
    return hn::LoadU(d, p);
  } else {
    const hn::Rebind<float, D> df;
    return hn::PromoteTo(d, hn::LoadU(df, p));
  }
}

// One piece (n <= kSumPiece) with P partials of type T. The partials live
// in P / N vectors (vector k, lane l holds partial k * N + l); a group of P
// consecutive terms adds to them with one vector Add per vector. The last,
// incomplete group is padded with -0, the identity of IEEE addition (x + -0
// is x for every x, -0 and NaN included), so it adds exactly the missing
// terms' nothing. The halving tree then adds vector k + h to vector k while
// more than one vector is left, which is p[j] + p[j + h] for the partials,
// and finishes on the N lanes of the last vector in memory.
template <class T, int P>
HWY_INLINE T PieceSum(const float* x, std::int64_t n) {
  const hn::CappedTag<T, P> d;
  HWY_ALIGN float pad[P];
  std::int64_t full = n - n % P;
#if HWY_HAVE_SCALABLE
  // Sizeless vectors cannot form an array: the partials stay in memory
  // (the same additions, slower; no shipped x86 target takes this branch).
  const std::size_t N = hn::Lanes(d);
  HWY_ALIGN T part[P] = {};
  auto add_group = [&](const float* g) {
    for (std::size_t k = 0; k < P; k += N) hn::Store(hn::Add(hn::Load(d, part + k), LoadTerms(d, g + k)), d, part + k);
  };
  for (std::int64_t i = 0; i < full; i += P) add_group(x + i);
  if (full < n) {
    std::fill(pad, pad + P, -0.0f);
    std::memcpy(pad, x + full, static_cast<std::size_t>(n - full) * sizeof(float));
    add_group(pad);
  }
  T* lanes = part;
  std::size_t count = P;
#else
  constexpr std::size_t N = hn::MaxLanes(d);
  constexpr std::size_t K = P / N;
  static_assert(P % N == 0 && K >= 1);
  hn::Vec<decltype(d)> acc[K];
  for (std::size_t k = 0; k < K; ++k) acc[k] = hn::Zero(d);
  for (std::int64_t i = 0; i < full; i += P) {
    for (std::size_t k = 0; k < K; ++k) acc[k] = hn::Add(acc[k], LoadTerms(d, x + i + k * N));
  }
  if (full < n) {
    std::fill(pad, pad + P, -0.0f);
    std::memcpy(pad, x + full, static_cast<std::size_t>(n - full) * sizeof(float));
    for (std::size_t k = 0; k < K; ++k) acc[k] = hn::Add(acc[k], LoadTerms(d, pad + k * N));
  }
  for (std::size_t h = K / 2; h >= 1; h /= 2) {
    for (std::size_t k = 0; k < h; ++k) acc[k] = hn::Add(acc[k], acc[k + h]);
  }
  HWY_ALIGN T lanes[N];
  hn::Store(acc[0], d, lanes);
  std::size_t count = N;
#endif
  for (std::size_t h = count / 2; h >= 1; h /= 2) {
    for (std::size_t j = 0; j < h; ++j) lanes[j] = lanes[j] + lanes[j + h];
  }
  return lanes[0];
}

float PieceSumF32(const float* x, std::int64_t n) { return PieceSum<float, kSumPartialsF32>(x, n); }
double PieceSumWide(const float* x, std::int64_t n) { return PieceSum<double, kSumPartialsF64>(x, n); }

// sums[b] = the sum of piece b of x (n elements in all), b in [first, last).
void PieceSumsF32(const float* x, std::int64_t n, std::int64_t first, std::int64_t last, float* sums) {
  for (std::int64_t b = first; b < last; ++b) {
    const std::int64_t at = b * kSumPiece;
    sums[b] = PieceSumF32(x + at, std::min(kSumPiece, n - at));
  }
}
void PieceSumsWide(const float* x, std::int64_t n, std::int64_t first, std::int64_t last, double* sums) {
  for (std::int64_t b = first; b < last; ++b) {
    const std::int64_t at = b * kSumPiece;
    sums[b] = PieceSumWide(x + at, std::min(kSumPiece, n - at));
  }
}

// ---- extremum (simd.h): lanes keep the ordered-compare select (a NaN
// element leaves its lane as it was); the NaNs and preferred zeros seen are
// tracked apart and settled at the end.
template <bool Max>
HWY_INLINE float ExtremumRun(const float* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  constexpr std::uint32_t kPreferredZero = Max ? 0x00000000u : 0x80000000u;
  auto w = hn::Set(d, x[0]);
  auto nan = hn::Zero(du), zero = hn::Zero(du);
  const auto preferred = hn::Set(du, kPreferredZero);
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    w = hn::IfThenElse(Max ? hn::Gt(v, w) : hn::Lt(v, w), v, w);
    nan = hn::Or(nan, hn::VecFromMask(du, hn::RebindMask(du, hn::IsNaN(v))));
    zero = hn::Or(zero, hn::VecFromMask(du, hn::Eq(hn::BitCast(du, v), preferred)));
  }
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  HWY_ALIGN std::uint32_t nan_lanes[hn::MaxLanes(d)], zero_lanes[hn::MaxLanes(d)];
  hn::Store(w, d, lanes);
  hn::Store(nan, du, nan_lanes);
  hn::Store(zero, du, zero_lanes);
  float best = lanes[0];
  bool any_nan = false, any_zero = false;
  for (std::int64_t l = 0; l < N; ++l) {
    best = (Max ? lanes[l] > best : lanes[l] < best) ? lanes[l] : best;
    any_nan |= nan_lanes[l] != 0;
    any_zero |= zero_lanes[l] != 0;
  }
  for (; i < n; ++i) {
    const float v = x[i];
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    best = (Max ? v > best : v < best) ? v : best;
    any_nan |= v != v;
    any_zero |= bits == kPreferredZero;
  }
  if (any_nan)
    for (std::int64_t k = 0; k < n; ++k)
      if (x[k] != x[k]) return x[k];
  if (best == 0.0f) return any_zero ? (Max ? 0.0f : -0.0f) : (Max ? -0.0f : 0.0f);
  return best;
}

float ExtremumF32(const float* x, std::int64_t n, bool max) {
  return max ? ExtremumRun<true>(x, n) : ExtremumRun<false>(x, n);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace strideweave::carriers::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strideweave::carriers::cpu::simd {

HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryScalarF32);
HWY_EXPORT(BinaryAccumulateF32);
HWY_EXPORT(BinaryAccumulateScalarF32);
HWY_EXPORT(ExpF32);
HWY_EXPORT(PieceSumF32);
HWY_EXPORT(PieceSumWide);
HWY_EXPORT(PieceSumsF32);
HWY_EXPORT(PieceSumsWide);
HWY_EXPORT(ExtremumF32);
HWY_EXPORT(TargetName);

namespace {

// parallel_for grains (elements): an array shorter than twice the grain runs
// on the calling thread, where a thread team's start-up (a few microseconds)
// would cost more than it saves. Elementwise binary ops are memory-bound
// (~12 bytes per element), so they need large ranges to pay for a team;
// exp does ~40 vector instructions per vector and pays sooner; a sum reads 4
// bytes per element and is the cheapest per element.
constexpr std::int64_t kElementwiseGrain = std::int64_t{64} * 1024;
constexpr std::int64_t kExpGrain = std::int64_t{16} * 1024;
constexpr std::int64_t kSumGrain = std::int64_t{256} * 1024;
// kSumGrain in whole pieces.
constexpr std::int64_t kSumGrainPieces = kSumGrain / kSumPiece;

// Piece sums into a buffer (in parallel over pieces), then the pairwise
// combination on the calling thread: the same bits for every thread count.
template <class Acc, class One, class Many>
Acc pieced_sum(const float* x, std::int64_t n, One one, Many many) {
  if (n <= kSumPiece) return one(x, n);
  const std::int64_t pieces = (n + kSumPiece - 1) / kSumPiece;
  constexpr std::int64_t kOnStack = 256;
  Acc stack[kOnStack];
  std::vector<Acc> heap;
  Acc* sums = stack;
  if (pieces > kOnStack) {
    heap.resize(static_cast<std::size_t>(pieces));
    sums = heap.data();
  }
  parallel_for(pieces, kSumGrainPieces, [&](std::int64_t first, std::int64_t last) { many(x, n, first, last, sums); });
  return combine_pieces(sums, static_cast<std::size_t>(pieces));
}

}  // namespace

void binary_f32(Binary op, const float* a, const float* b, float* out, std::int64_t n) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryF32)(static_cast<int>(op), a + first, b + first, out + first, last - first);
  });
}

void binary_f32_scalar(Binary op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryScalarF32)(static_cast<int>(op), a + first, b, out + first, last - first, scalar_left);
  });
}

void binary_f32_accumulate(Binary op, const float* a, const float* b, float* out, std::int64_t n) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryAccumulateF32)(static_cast<int>(op), a + first, b + first, out + first, last - first);
  });
}

void binary_f32_scalar_accumulate(Binary op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryAccumulateScalarF32)(static_cast<int>(op), a + first, b, out + first, last - first,
                                                    scalar_left);
  });
}

void exp_f32(const float* x, float* out, std::int64_t n) {
  parallel_for(n, kExpGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(ExpF32)(x + first, out + first, last - first);
  });
}

float sum_piece_f32(const float* x, std::int64_t n) {
  if (n <= detail::kShortSum) return detail::ShortSum<float>(x, n);
  return HWY_DYNAMIC_DISPATCH(PieceSumF32)(x, n);
}
double sum_piece_f32_wide(const float* x, std::int64_t n) {
  if (n <= detail::kShortSum) return detail::ShortSum<double>(x, n);
  return HWY_DYNAMIC_DISPATCH(PieceSumWide)(x, n);
}

float sum_f32(const float* x, std::int64_t n) {
  return pieced_sum<float>(x, n, sum_piece_f32,
                           [](const float* p, std::int64_t m, std::int64_t first, std::int64_t last, float* sums) {
                             HWY_DYNAMIC_DISPATCH(PieceSumsF32)(p, m, first, last, sums);
                           });
}

double sum_f32_wide(const float* x, std::int64_t n) {
  return pieced_sum<double>(x, n, sum_piece_f32_wide,
                            [](const float* p, std::int64_t m, std::int64_t first, std::int64_t last, double* sums) {
                              HWY_DYNAMIC_DISPATCH(PieceSumsWide)(p, m, first, last, sums);
                            });
}

float extremum_f32(const float* x, std::int64_t n, bool max) { return HWY_DYNAMIC_DISPATCH(ExtremumF32)(x, n, max); }

const char* dispatched_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace strideweave::carriers::cpu::simd
#endif  // HWY_ONCE
