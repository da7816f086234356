// detail::all_zero (movement/host_image.h): whether a block of host memory
// reads as zero, vectorised with Highway and dispatched on the running CPU's
// instruction set (the library is built for the baseline x86-64, so a plain
// loop would scan 16 bytes per step even on an AVX-512 machine). The scan is
// the price of a move's before-image of a fresh destination, paid once per
// 64 KiB block just ahead of the copy (docs/performance.md, "Moves").
//
// hwy/foreach_target.h re-includes this file once per target (see
// carriers/cpu/simd.cpp for the pattern).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "movement/zero_scan.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace strideweave::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

bool AllZero(const std::byte* p, std::size_t n) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(p);
  std::size_t i = 0;
  // Four vectors per step, OR-ed together; one test per step.
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const auto a = hn::Or(hn::LoadU(d, bytes + i), hn::LoadU(d, bytes + i + lanes));
    const auto b = hn::Or(hn::LoadU(d, bytes + i + 2 * lanes), hn::LoadU(d, bytes + i + 3 * lanes));
    if (!hn::AllTrue(d, hn::Eq(hn::Or(a, b), hn::Zero(d)))) return false;
  }
  for (; i < n; ++i)
    if (bytes[i] != 0) return false;
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace strideweave::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "movement/host_image.h"

namespace strideweave::detail {

HWY_EXPORT(AllZero);

bool all_zero(const std::byte* p, std::size_t n) noexcept { return HWY_DYNAMIC_DISPATCH(AllZero)(p, n); }

}  // namespace strideweave::detail
#endif  // HWY_ONCE
