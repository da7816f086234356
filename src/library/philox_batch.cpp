// The seeded generators' vector kernels with Highway (see philox_batch.h).
//
// Random123 (Debian's librandom123-dev) has no vector Philox; a compiler
// auto-vectorised batch was measured slower (docs/performance.md), because
// the 32x32->64 multiplies stayed scalar. Here each round's two products
// come from MulEven on the even lanes and on the odd lanes shifted down,
// so one vector of N counters costs a few instructions per round.
//
// normal's ln, sin and cos are written here rather than taken from a
// library: the C library's are scalar (they were 90% of normal's time), and
// Highway's (hwy/contrib/math) evaluate their polynomials with MulAdd, one
// rounding on AVX2/AVX-512 and two elsewhere, so their bits would depend on
// the target the dispatcher picks (the reason simd.cpp's exp is its own,
// too). The polynomials are fdlibm's (e_log.c, k_sin.c, k_cos.c: Sun's
// freely distributable originals, which glibc and musl descend from),
// evaluated with separate Mul and Add.
// foreach_target re-includes this file once per x86 target (as
// src/carriers/cpu/simd.cpp does); HWY_DYNAMIC_DISPATCH picks the machine's.
#ifndef STRIDEWEAVE_PHILOX_BATCH_ONCE
#define STRIDEWEAVE_PHILOX_BATCH_ONCE
#include "library/philox_batch.h"

#include <algorithm>
#include <cstring>
#include <limits>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "library/philox_batch.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace strideweave::random::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// (hi, lo) of a * m for every u32 lane.
template <class D, class V>
HWY_INLINE void MulHiLo(D d, V a, V m, V& hi, V& lo) {
#if HWY_TARGET == HWY_SCALAR
  // One lane: no 64-bit repartition of it; the product in plain integers.
  const std::uint64_t p = static_cast<std::uint64_t>(hn::GetLane(a)) * hn::GetLane(m);
  hi = hn::Set(d, static_cast<std::uint32_t>(p >> 32));
  lo = hn::Set(d, static_cast<std::uint32_t>(p));
#else
  const hn::Repartition<std::uint64_t, D> d64;
  const auto even = hn::MulEven(a, m);  // lanes 0, 2, ...: full 64-bit products
  const auto odd = hn::MulEven(hn::BitCast(d, hn::ShiftRight<32>(hn::BitCast(d64, a))),
                               hn::BitCast(d, hn::ShiftRight<32>(hn::BitCast(d64, m))));  // lanes 1, 3, ...
  lo = hn::OddEven(hn::BitCast(d, hn::ShiftLeft<32>(odd)), hn::BitCast(d, even));
  hi = hn::OddEven(hn::BitCast(d, odd), hn::BitCast(d, hn::ShiftRight<32>(even)));
#endif
}

// One vector of draws: r0..r3 are the words of counters c, c + 1, ... (the
// lanes of `lo`/`hi`, the counters' low and high halves).
template <class D, class V>
HWY_INLINE void PhiloxVec(D d, std::uint64_t seed, V lo, V hi, V& r0, V& r1, V& r2, V& r3) {
  const auto m0 = hn::Set(d, 0xD2511F53u), m1 = hn::Set(d, 0xCD9E8D57u);
  std::uint32_t key0 = static_cast<std::uint32_t>(seed), key1 = static_cast<std::uint32_t>(seed >> 32);
  r0 = lo;
  r1 = hi;
  r2 = hn::Zero(d);
  r3 = hn::Zero(d);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    V hi0, lo0, hi1, lo1;
    MulHiLo(d, r0, m0, hi0, lo0);
    MulHiLo(d, r2, m1, hi1, lo1);
    r0 = hn::Xor(hn::Xor(hi1, r1), hn::Set(d, key0));
    r1 = lo1;
    r2 = hn::Xor(hn::Xor(hi0, r3), hn::Set(d, key1));
    r3 = lo0;
  }
}

// The counters first + i .. first + i + N - 1 as low and high halves.
template <class D>
HWY_INLINE void Counters(D d, std::uint64_t first, hn::Vec<D>& lo, hn::Vec<D>& hi) {
  HWY_ALIGN std::uint32_t lo_words[hn::MaxLanes(d)], hi_words[hn::MaxLanes(d)];
  const std::size_t N = hn::Lanes(d);
  for (std::size_t l = 0; l < N; ++l) {
    const std::uint64_t c = first + l;
    lo_words[l] = static_cast<std::uint32_t>(c);
    hi_words[l] = static_cast<std::uint32_t>(c >> 32);
  }
  lo = hn::Load(d, lo_words);
  hi = hn::Load(d, hi_words);
}

void PhiloxWords(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* out) {
  const hn::ScalableTag<std::uint32_t> d;
  const std::size_t N = hn::Lanes(d);
  HWY_ALIGN std::uint32_t tail[4 * hn::MaxLanes(d)];
  for (std::size_t i = 0; i < count; i += N) {
    hn::Vec<decltype(d)> lo, hi, r0, r1, r2, r3;
    Counters(d, first_counter + i, lo, hi);
    PhiloxVec(d, seed, lo, hi, r0, r1, r2, r3);
    if (count - i >= N) {
      hn::StoreInterleaved4(r0, r1, r2, r3, d, out + 4 * i);
    } else {
      hn::StoreInterleaved4(r0, r1, r2, r3, d, tail);
      std::memcpy(out + 4 * i, tail, 4 * (count - i) * sizeof(std::uint32_t));
    }
  }
}

void UniformFromWords(const std::uint32_t* words, std::size_t n, float lo, double width, float below_hi,
                      float* out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<std::int32_t, decltype(dd)> di;
  const hn::Rebind<std::uint32_t, decltype(dd)> du;
  const std::size_t N = hn::Lanes(dd);
  const auto scale = hn::Set(dd, 0x1p-24), w = hn::Set(dd, width), low = hn::Set(dd, static_cast<double>(lo));
  const auto flo = hn::Set(df, lo), fhi = hn::Set(df, below_hi);
  HWY_ALIGN std::uint32_t pad[hn::MaxLanes(dd)];
  HWY_ALIGN float result[hn::MaxLanes(dd)];
  for (std::size_t i = 0; i < n; i += N) {
    const bool full = n - i >= N;
    if (!full) {
      std::memset(pad, 0, sizeof pad);
      std::memcpy(pad, words + i, (n - i) * sizeof(std::uint32_t));
    }
    const auto word = full ? hn::LoadU(du, words + i) : hn::Load(du, pad);
    // The top 24 bits, exact in int32 and in binary64.
    const auto u = hn::Mul(hn::PromoteTo(dd, hn::BitCast(di, hn::ShiftRight<8>(word))), scale);
    const auto v = hn::DemoteTo(df, hn::Add(low, hn::Mul(w, u)));
    const auto clamped = hn::Min(hn::Max(v, flo), fhi);
    if (full) {
      hn::StoreU(clamped, df, out + i);
    } else {
      hn::Store(clamped, df, result);
      std::memcpy(out + i, result, (n - i) * sizeof(float));
    }
  }
}

bool BoundedFromWords(const std::uint32_t* words, std::size_t n, std::uint64_t range, std::uint32_t threshold,
                      std::int32_t low, std::int32_t* out) {
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t N = hn::Lanes(d);
  const auto base = hn::Set(d, static_cast<std::uint32_t>(low));
  HWY_ALIGN std::uint32_t pad[hn::MaxLanes(d)];
  HWY_ALIGN std::int32_t result[hn::MaxLanes(d)];
  if (range == (std::uint64_t{1} << 32)) {  // every word is a value
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(low) + words[i]);
    return false;
  }
  const auto r = hn::Set(d, static_cast<std::uint32_t>(range));
  // The sign flip makes the unsigned comparison a signed one (every target
  // has those): lo < threshold as unsigned.
  const auto flip = hn::Set(d, 0x80000000u);
  const auto limit = hn::BitCast(di, hn::Xor(hn::Set(d, threshold), flip));
  auto rejected = hn::Zero(d);
  for (std::size_t i = 0; i < n; i += N) {
    const bool full = n - i >= N;
    if (!full) {
      // Padding words of ~0 are never below any threshold.
      std::fill(pad, pad + N, 0xFFFFFFFFu);
      std::memcpy(pad, words + i, (n - i) * sizeof(std::uint32_t));
    }
    const auto word = full ? hn::LoadU(d, words + i) : hn::Load(d, pad);
    hn::Vec<decltype(d)> hi, lo;
    MulHiLo(d, word, r, hi, lo);
    rejected = hn::Or(rejected, hn::VecFromMask(d, hn::RebindMask(d, hn::Lt(hn::BitCast(di, hn::Xor(lo, flip)), limit))));
    const auto value = hn::BitCast(di, hn::Add(base, hi));  // low + (word * range >> 32), in Int32 by the caller's bounds
    if (full) {
      hn::StoreU(value, di, out + i);
    } else {
      hn::Store(value, di, result);
      std::memcpy(out + i, result, (n - i) * sizeof(std::int32_t));
    }
  }
  return !hn::AllTrue(d, hn::Eq(rejected, hn::Zero(d)));
}

// ---- normal's binary64 kernels (fdlibm's polynomials, separate Mul/Add).

// ln x for x in [2**-53, 1] (positive normal numbers; fdlibm e_log.c without
// its special cases, which this range never reaches): x = 2**k (1 + f) with
// 1 + f in [sqrt(2)/2, sqrt(2)), ln x = k ln2_hi - ((hfsq - (s (hfsq + R) +
// k ln2_lo)) - f), s = f / (2 + f).
template <class DD>
HWY_INLINE hn::Vec<DD> LnVec(DD dd, hn::Vec<DD> x) {
  const hn::RebindToUnsigned<DD> du;
  const auto bits = hn::BitCast(du, x);
  const auto top = hn::ShiftRight<32>(bits);
  const auto hx = hn::And(top, hn::Set(du, 0x000FFFFFu));
  const auto i = hn::And(hn::Add(hx, hn::Set(du, 0x95F64u)), hn::Set(du, 0x100000u));
  // The mantissa scaled into [sqrt(2)/2, sqrt(2)); k the exponent that goes with it.
  const auto m_top = hn::Or(hx, hn::Xor(i, hn::Set(du, 0x3FF00000u)));
  const auto m = hn::BitCast(dd, hn::Or(hn::ShiftLeft<32>(m_top), hn::And(bits, hn::Set(du, 0xFFFFFFFFu))));
  const auto biased = hn::Add(hn::ShiftRight<20>(top), hn::ShiftRight<20>(i));  // e + (i >> 20), e <= 1023
  // k as a double: 2**52 + biased, exactly, minus 2**52 + 1023.
  const auto k = hn::Sub(hn::BitCast(dd, hn::Or(biased, hn::Set(du, 0x4330000000000000ull))),
                         hn::Set(dd, 0x1p52 + 1023.0));
  const auto f = hn::Sub(m, hn::Set(dd, 1.0));
  const auto s = hn::Div(f, hn::Add(hn::Set(dd, 2.0), f));
  const auto z = hn::Mul(s, s);
  const auto w = hn::Mul(z, z);
  const auto t1 = hn::Mul(w, hn::Add(hn::Set(dd, 3.999999999940941908e-01),
                                     hn::Mul(w, hn::Add(hn::Set(dd, 2.222219843214978396e-01),
                                                        hn::Mul(w, hn::Set(dd, 1.531383769920937332e-01))))));
  const auto t2 = hn::Mul(
      z, hn::Add(hn::Set(dd, 6.666666666666735130e-01),
                 hn::Mul(w, hn::Add(hn::Set(dd, 2.857142874366239149e-01),
                                    hn::Mul(w, hn::Add(hn::Set(dd, 1.818357216161805012e-01),
                                                       hn::Mul(w, hn::Set(dd, 1.479819860511658591e-01))))))));
  const auto R = hn::Add(t2, t1);
  const auto hfsq = hn::Mul(hn::Mul(hn::Set(dd, 0.5), f), f);
  const auto inner = hn::Add(hn::Mul(s, hn::Add(hfsq, R)), hn::Mul(k, hn::Set(dd, 1.90821492927058770002e-10)));
  return hn::Sub(hn::Mul(k, hn::Set(dd, 6.93147180369123816490e-01)), hn::Sub(hn::Sub(hfsq, inner), f));
}

// sin t and cos t for t in [0, 2 pi]: t = n pi/2 + r, |r| <= pi/4 (plus a
// rounding), with pi/2 in three parts as fdlibm's e_rem_pio2 (pio2_1 and
// pio2_2 have 33 bits, so their products with n <= 4 are exact, and each
// subtraction is exact by Sterbenz where r is small; the third part keeps r
// accurate near the multiples of pi/2, where sin or cos is r itself), then
// fdlibm's k_sin and k_cos on r and the quadrant's swap and signs.
template <class DD>
HWY_INLINE void SinCosVec(DD dd, hn::Vec<DD> t, hn::Vec<DD>& sin_t, hn::Vec<DD>& cos_t) {
  const hn::RebindToUnsigned<DD> du;
  const auto shifter = hn::Set(dd, 0x1.8p52);
  const auto nd = hn::Add(hn::Mul(t, hn::Set(dd, 6.36619772367581382433e-01)), shifter);  // round(t 2/pi) in the low bits
  const auto n = hn::Sub(nd, shifter);
  const auto r = hn::Sub(hn::Sub(hn::Sub(t, hn::Mul(n, hn::Set(dd, 1.57079632673412561417e+00))),
                                 hn::Mul(n, hn::Set(dd, 6.07710050630396597660e-11))),
                         hn::Mul(n, hn::Set(dd, 2.02226624879595063154e-21)));
  const auto z = hn::Mul(r, r);
  // k_sin (y = 0): r + r z (S1 + z (S2 + z (S3 + z (S4 + z (S5 + z S6))))).
  const auto sr = hn::Add(hn::Set(dd, 8.33333333332248946124e-03),
                          hn::Mul(z, hn::Add(hn::Set(dd, -1.98412698298579493134e-04),
                                             hn::Mul(z, hn::Add(hn::Set(dd, 2.75573137070700676789e-06),
                                                                hn::Mul(z, hn::Add(hn::Set(dd, -2.50507602534068634195e-08),
                                                                                   hn::Mul(z, hn::Set(dd, 1.58969099521155010221e-10)))))))));
  const auto s = hn::Add(r, hn::Mul(hn::Mul(z, r), hn::Add(hn::Set(dd, -1.66666666666666324348e-01), hn::Mul(z, sr))));
  // k_cos (y = 0): w + (((1 - w) - hz) + z R), hz = z / 2, w = 1 - hz.
  const auto w = hn::Mul(z, z);
  const auto cr = hn::Add(
      hn::Mul(z, hn::Add(hn::Set(dd, 4.16666666666666019037e-02),
                         hn::Mul(z, hn::Add(hn::Set(dd, -1.38888888888741095749e-03),
                                            hn::Mul(z, hn::Set(dd, 2.48015872894767294178e-05)))))),
      hn::Mul(hn::Mul(w, w), hn::Add(hn::Set(dd, -2.75573143513906633035e-07),
                                     hn::Mul(z, hn::Add(hn::Set(dd, 2.08757232129817482790e-09),
                                                        hn::Mul(z, hn::Set(dd, -1.13596475577881948265e-11)))))));
  const auto hz = hn::Mul(hn::Set(dd, 0.5), z);
  const auto one = hn::Set(dd, 1.0);
  const auto ww = hn::Sub(one, hz);
  const auto c = hn::Add(ww, hn::Add(hn::Sub(hn::Sub(one, ww), hz), hn::Mul(z, cr)));
  // Quadrant q = n mod 4: sin = (s, c, -s, -c), cos = (c, -s, -c, s).
  const auto q = hn::And(hn::BitCast(du, nd), hn::Set(du, 3));
  const auto swap = hn::RebindMask(dd, hn::Eq(hn::And(q, hn::Set(du, 1)), hn::Set(du, 1)));
  const auto sin_sign = hn::BitCast(dd, hn::ShiftLeft<62>(hn::And(q, hn::Set(du, 2))));
  const auto cos_sign = hn::BitCast(dd, hn::ShiftLeft<62>(hn::And(hn::Add(q, hn::Set(du, 1)), hn::Set(du, 2))));
  sin_t = hn::Xor(hn::IfThenElse(swap, c, s), sin_sign);
  cos_t = hn::Xor(hn::IfThenElse(swap, s, c), cos_sign);
}

// mean + stddev * z rounded to binary32, +-inf beyond FLT_MAX + half an ulp
// (SCALAR/EMU128's DemoteTo clamps to FLT_MAX there; x86 rounds to inf).
template <class DD, class DF>
HWY_INLINE hn::Vec<DF> ScaledToFloat(DD dd, DF df, hn::Vec<DD> v) {
  const auto over = hn::Ge(hn::Abs(v), hn::Set(dd, 3.4028235677973366e38));
  const auto flag = hn::DemoteTo(df, hn::IfThenElseZero(over, hn::Set(dd, 1.0)));
  const auto f = hn::DemoteTo(df, v);
  const auto inf = hn::CopySign(hn::Set(df, std::numeric_limits<float>::infinity()), f);
  return hn::IfThenElse(hn::Eq(flag, hn::Set(df, 1.0f)), inf, f);
}

// A full 32-bit word as a binary64, exactly: promoted as a signed int32,
// plus 2**32 where that was negative (no unsigned promotion to binary64 on
// every target).
template <class DD, class VU>
HWY_INLINE hn::Vec<DD> WordToDouble(DD dd, VU word) {
  const hn::Rebind<std::int32_t, DD> di;
  const auto d = hn::PromoteTo(dd, hn::BitCast(di, word));
  return hn::Add(d, hn::IfThenElseZero(hn::Lt(d, hn::Zero(dd)), hn::Set(dd, 0x1p32)));
}
// A word shifted right by 11 (below 2**21, so a non-negative int32) as a binary64.
template <class DD, class VU>
HWY_INLINE hn::Vec<DD> LowBitsToDouble(DD dd, VU word) {
  const hn::Rebind<std::int32_t, DD> di;
  return hn::PromoteTo(dd, hn::BitCast(di, hn::ShiftRight<11>(word)));
}

void NormalPairs(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, double mean, double stddev,
                 float* out) {
  const hn::ScalableTag<std::uint32_t> d;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<std::uint32_t, decltype(dd)> dh;  // half the u32 lanes, one per double
  const std::size_t N = hn::Lanes(d), H = hn::Lanes(dd);
  HWY_ALIGN std::uint32_t w[4][hn::MaxLanes(d)];
  HWY_ALIGN float cos_out[hn::MaxLanes(d)], sin_out[hn::MaxLanes(d)];
  const auto two_pi = hn::Set(dd, 2.0 * 3.141592653589793), tiny = hn::Set(dd, 0x1p-53);
  const auto m = hn::Set(dd, mean), sd = hn::Set(dd, stddev);
  for (std::size_t i = 0; i < count; i += N) {
    hn::Vec<decltype(d)> lo, hi, r0, r1, r2, r3;
    Counters(d, first_counter + i, lo, hi);
    PhiloxVec(d, seed, lo, hi, r0, r1, r2, r3);
    hn::Store(r0, d, w[0]);
    hn::Store(r1, d, w[1]);
    hn::Store(r2, d, w[2]);
    hn::Store(r3, d, w[3]);
    for (std::size_t h = 0; h < N; h += H) {
      // a = w0 * 2**21 + (w1 >> 11) and b likewise: the top 53 bits of each
      // word pair, exact in binary64.
      const auto a = hn::Add(hn::Mul(WordToDouble(dd, hn::Load(dh, w[0] + h)), hn::Set(dd, 0x1p21)),
                             LowBitsToDouble(dd, hn::Load(dh, w[1] + h)));
      const auto b = hn::Add(hn::Mul(WordToDouble(dd, hn::Load(dh, w[2] + h)), hn::Set(dd, 0x1p21)),
                             LowBitsToDouble(dd, hn::Load(dh, w[3] + h)));
      const auto u1 = hn::Mul(hn::Add(a, hn::Set(dd, 1.0)), tiny);  // (0, 1]
      const auto radius = hn::Sqrt(hn::Mul(hn::Set(dd, -2.0), LnVec(dd, u1)));
      hn::Vec<decltype(dd)> sin_t, cos_t;
      SinCosVec(dd, hn::Mul(two_pi, hn::Mul(b, tiny)), sin_t, cos_t);
      hn::Store(ScaledToFloat(dd, df, hn::Add(m, hn::Mul(sd, hn::Mul(radius, cos_t)))), df, cos_out + h);
      hn::Store(ScaledToFloat(dd, df, hn::Add(m, hn::Mul(sd, hn::Mul(radius, sin_t)))), df, sin_out + h);
    }
    const std::size_t n = count - i < N ? count - i : N;
    float* o = out + 2 * i;
    for (std::size_t l = 0; l < n; ++l) {
      o[2 * l] = cos_out[l];
      o[2 * l + 1] = sin_out[l];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace strideweave::random::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strideweave::random::simd {

HWY_EXPORT(PhiloxWords);
HWY_EXPORT(UniformFromWords);
HWY_EXPORT(BoundedFromWords);
HWY_EXPORT(NormalPairs);

void philox_words(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* out) noexcept {
  HWY_DYNAMIC_DISPATCH(PhiloxWords)(seed, first_counter, count, out);
}

void uniform_from_words(const std::uint32_t* words, std::size_t n, float lo, double width, float below_hi,
                        float* out) noexcept {
  HWY_DYNAMIC_DISPATCH(UniformFromWords)(words, n, lo, width, below_hi, out);
}

bool bounded_from_words(const std::uint32_t* words, std::size_t n, std::uint64_t range, std::uint32_t threshold,
                        std::int32_t low, std::int32_t* out) noexcept {
  return HWY_DYNAMIC_DISPATCH(BoundedFromWords)(words, n, range, threshold, low, out);
}

void normal_pairs(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, double mean, double stddev,
                  float* out) noexcept {
  HWY_DYNAMIC_DISPATCH(NormalPairs)(seed, first_counter, count, mean, stddev, out);
}

}  // namespace strideweave::random::simd
#endif
