// Internal: the seeded generators' vector kernels (Highway, run-time
// instruction-set dispatch; src/library/philox_batch.cpp): Philox4x32-10 on
// many consecutive counters at once, and the conversions of its words into
// the values random.cpp documents (docs/creation.md). The words equal
// Random123's scalar Philox4x32 for key (seed low, seed high) and counter
// (counter low, counter high, 0, 0), which random.cpp keeps as the reference
// (draw_words) and the tests compare against. Every function gives the same
// bits on every Highway target: each value is a fixed sequence of correctly
// rounded IEEE operations (the library is built with -ffp-contract=off; no
// MulAdd, no estimate, no target-specific library routine).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strideweave::random::simd {

// The words of draws first_counter .. first_counter + count - 1 in element
// order: out[4 i + s] is word s of draw
// first_counter + i (4 * count words).
void philox_words(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, std::uint32_t* out) noexcept;

// uniform's values from their words: out[k] = min(max(f, lo), below_hi) with
// f = (float)(lo + width * ((words[k] >> 8) / 2**24)) in binary64, rounded
// once to binary32.
void uniform_from_words(const std::uint32_t* words, std::size_t n, float lo, double width, float below_hi,
                        float* out) noexcept;

// integers' values from their words, Lemire's multiply for a range in
// [1, 2**32]: out[k] = low + ((words[k] * range) >> 32) (Int32; the caller
// bounded low and range). True when some word's low product half is below
// `threshold` (2**32 mod range): those elements are rejected and the caller
// redraws them; their out[k] is unspecified.
bool bounded_from_words(const std::uint32_t* words, std::size_t n, std::uint64_t range, std::uint32_t threshold,
                        std::int32_t low, std::int32_t* out) noexcept;

// normal's values of draws first_counter .. first_counter + count - 1:
// out[2 i] and out[2 i + 1] are draw first_counter + i's cosine and sine
// halves of Box-Muller, mean + stddev * r cos t and mean + stddev * r sin t,
// r = sqrt(-2 ln u1), t = 2 pi u2, u1 = (a + 1) / 2**53 from words 0:1 and
// u2 = b / 2**53 from words 2:3 (a, b the top 53 bits of each pair), in
// binary64, rounded once to binary32 (beyond FLT_MAX + half an ulp: +-inf).
// ln, sin and cos are this file's own binary64 kernels (fdlibm's
// polynomials, pi/2 in three parts), the same on every target; each is
// within about 1 binary64 ulp.
void normal_pairs(std::uint64_t seed, std::uint64_t first_counter, std::size_t count, double mean, double stddev,
                  float* out) noexcept;

}  // namespace strideweave::random::simd
