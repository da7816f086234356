// Internal: Philox4x32-10 on many consecutive counters at once (Highway,
// run-time instruction-set dispatch; src/library/philox_batch.cpp). The
// words equal Random123's scalar Philox4x32 for key (seed low, seed high)
// and counter (counter low, counter high, 0, 0), which random.cpp keeps as
// the reference (draw_words) and the tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strideweave::random::simd {

// The four words of draws first_counter .. first_counter + count - 1:
// w0[i] .. w3[i] are draw first_counter + i's.
void philox_draws(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* w0,
                  std::uint32_t* w1, std::uint32_t* w2, std::uint32_t* w3) noexcept;

}  // namespace strideweave::random::simd
