// Philox4x32-10 vectorised across counters with Highway (see philox_batch.h).
//
// Random123 (Debian's librandom123-dev) has no vector Philox; a compiler
// auto-vectorised batch was measured slower (docs/performance.md), because
// the 32x32->64 multiplies stayed scalar. Here each round's two products
// come from MulEven on the even lanes and on the odd lanes shifted down,
// so one vector of N counters costs a few instructions per round.
// foreach_target re-includes this file once per x86 target (as
// src/carriers/cpu/simd.cpp does); HWY_DYNAMIC_DISPATCH picks the machine's.
#ifndef STRIDEWEAVE_PHILOX_BATCH_ONCE
#define STRIDEWEAVE_PHILOX_BATCH_ONCE
#include "library/philox_batch.h"
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

void PhiloxDraws(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* w0,
                 std::uint32_t* w1, std::uint32_t* w2, std::uint32_t* w3) {
  const hn::ScalableTag<std::uint32_t> d;
  const std::size_t N = hn::Lanes(d);
  const auto m0 = hn::Set(d, 0xD2511F53u), m1 = hn::Set(d, 0xCD9E8D57u);
  const std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  HWY_ALIGN std::uint32_t lo_words[hn::MaxLanes(d)], hi_words[hn::MaxLanes(d)];
  HWY_ALIGN std::uint32_t o0[hn::MaxLanes(d)], o1[hn::MaxLanes(d)], o2[hn::MaxLanes(d)], o3[hn::MaxLanes(d)];
  for (std::size_t i = 0; i < count; i += N) {
    for (std::size_t l = 0; l < N; ++l) {
      const std::uint64_t c = first_counter + i + l;
      lo_words[l] = static_cast<std::uint32_t>(c);
      hi_words[l] = static_cast<std::uint32_t>(c >> 32);
    }
    auto r0 = hn::Load(d, lo_words), r1 = hn::Load(d, hi_words), r2 = hn::Zero(d), r3 = hn::Zero(d);
    std::uint32_t key0 = k0, key1 = k1;
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
      }
      decltype(r0) hi0, lo0, hi1, lo1;
      MulHiLo(d, r0, m0, hi0, lo0);
      MulHiLo(d, r2, m1, hi1, lo1);
      r0 = hn::Xor(hn::Xor(hi1, r1), hn::Set(d, key0));
      r1 = lo1;
      r2 = hn::Xor(hn::Xor(hi0, r3), hn::Set(d, key1));
      r3 = lo0;
    }
    hn::Store(r0, d, o0);
    hn::Store(r1, d, o1);
    hn::Store(r2, d, o2);
    hn::Store(r3, d, o3);
    const std::size_t n = count - i < N ? count - i : N;
    for (std::size_t l = 0; l < n; ++l) {
      w0[i + l] = o0[l];
      w1[i + l] = o1[l];
      w2[i + l] = o2[l];
      w3[i + l] = o3[l];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace strideweave::random::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strideweave::random::simd {

HWY_EXPORT(PhiloxDraws);

void philox_draws(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* w0,
                  std::uint32_t* w1, std::uint32_t* w2, std::uint32_t* w3) noexcept {
  HWY_DYNAMIC_DISPATCH(PhiloxDraws)(seed, first_counter, count, w0, w1, w2, w3);
}

}  // namespace strideweave::random::simd
#endif
