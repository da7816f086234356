// Seeded random tensors (include/strideweave/random.h, docs/creation.md).
//
// The bit generator is Random123's Philox4x32-10 (a Debian package,
// librandom123-dev): counter-based, so draw k is computed from (seed, k)
// alone and a tensor's values cannot depend on how the work is split. What
// is written here (and, vectorised, in philox_batch.cpp) is only the mapping
// from words to values (uniform floats, Box-Muller normals, Lemire's
// bounded integers, Fisher-Yates), which no
// packaged library offers for a counter-based generator with these exact,
// documented formulas.
#include <strideweave/random.h>

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <strideweave/errors.h>
#include <strideweave/ops/structured.h>

#include "library/philox_batch.h"

namespace strideweave::random {

namespace {

// draw_words itself, inlined where the values are made (the exported
// function is interposable, so the compiler would not inline it).
inline DrawWords philox(std::uint64_t seed, std::uint64_t counter, std::uint32_t attempt = 0) noexcept {
  r123::Philox4x32 generator;
  const r123::Philox4x32::ctr_type c = {{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                                         0u, attempt}};
  const r123::Philox4x32::key_type k = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const r123::Philox4x32::ctr_type r = generator(c, k);
  return DrawWords{{r.v[0], r.v[1], r.v[2], r.v[3]}};
}

}  // namespace

DrawWords draw_words(std::uint64_t seed, std::uint64_t counter, std::uint32_t attempt) noexcept {
  return philox(seed, counter, attempt);
}

namespace {

void require_dtype(const char* what, const SimpleDType& dtype, const SimpleDType& only) {
  if (&dtype != &only)
    throw TypeError(std::string(what) + ": dtype must be " + only.name() + ", not " + dtype.name());
}

// How many draws `elements` elements take at `per_draw` elements a draw.
std::uint64_t draws_for(std::int64_t elements, std::uint64_t per_draw) {
  return (static_cast<std::uint64_t>(elements) + per_draw - 1) / per_draw;
}

// Lemire's rejection threshold for a range: 2**32 mod range (0 for 2**32).
std::uint32_t lemire_threshold(std::uint64_t range) noexcept {
  if (range == (std::uint64_t{1} << 32)) return 0;
  const auto r = static_cast<std::uint32_t>(range);
  return static_cast<std::uint32_t>(-r) % r;
}

// A uniform integer in [0, range) for 1 <= range <= 2**32, exactly, from
// word `slot` of draw `counter`: Lemire's multiply-and-reject, a rejected
// word replaced by the same slot of the next attempt's draw. `threshold` is
// lemire_threshold(range).
std::uint64_t bounded(std::uint64_t seed, std::uint64_t counter, unsigned slot, std::uint64_t range,
                      std::uint32_t threshold, const DrawWords& first_attempt) {
  if (range == (std::uint64_t{1} << 32)) return first_attempt.w[slot];
  std::uint32_t word = first_attempt.w[slot];
  for (std::uint32_t attempt = 1;; ++attempt) {
    const std::uint64_t m = static_cast<std::uint64_t>(word) * range;
    if (static_cast<std::uint32_t>(m) >= threshold) return m >> 32;
    word = philox(seed, counter, attempt).w[slot];
  }
}

// Fisher-Yates over 0 .. n-1: step s (swapping position n-1-s with one
// drawn below it) takes word s % 4 of draw base + s / 4.
std::vector<std::int32_t> shuffled(std::uint64_t seed, std::uint64_t base, std::int64_t n) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  DrawWords words{};
  for (std::int64_t step = 0; step + 1 < n; ++step) {
    const std::uint64_t counter = base + static_cast<std::uint64_t>(step) / 4;
    if (step % 4 == 0) words = philox(seed, counter);
    const std::int64_t i = n - 1 - step;
    const auto range = static_cast<std::uint64_t>(i) + 1;
    const auto j = static_cast<std::int64_t>(
        bounded(seed, counter, static_cast<unsigned>(step % 4), range, lemire_threshold(range), words));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

// The words of elements [first, first + count) of a four-a-draw call
// (element i: word i % 4 of draw base + i / 4), in element order, into
// `words` (count <= kWordChunk), from the vectorised draws.
constexpr std::int64_t kWordChunk = 1024;
void element_words(std::uint64_t seed, std::uint64_t base, std::int64_t first, std::int64_t count,
                   std::uint32_t* words) {
  std::uint32_t drawn[kWordChunk + 8];
  const auto first_draw = static_cast<std::uint64_t>(first) / 4;
  const auto last_draw = static_cast<std::uint64_t>(first + count - 1) / 4;
  simd::philox_words(seed, base + first_draw, static_cast<std::size_t>(last_draw - first_draw + 1), drawn);
  std::copy_n(drawn + first % 4, count, words);
}

void check_permutation_length(std::int64_t n) {
  if (n < 0) throw ValueError("permutation: n must be >= 0, got " + std::to_string(n));
  if (n > (std::int64_t{1} << 31))
    throw ValueError("permutation: n must be at most 2**31 (the values are Int32), got " + std::to_string(n));
}

}  // namespace

std::uint64_t Generator::reserve(std::uint64_t count) {
  // Never past 2**64 draws: a wrapped counter would repeat draw 0 on.
  std::uint64_t position = position_.load();
  do {
    if (count > std::numeric_limits<std::uint64_t>::max() - position)
      throw OverflowError("Generator: " + std::to_string(count) + " more draws would pass 2**64 from position " +
                          std::to_string(position) + "; make a generator with another seed");
  } while (!position_.compare_exchange_weak(position, position + count));
  return position;
}

void Generator::unreserve(std::uint64_t base, std::uint64_t count) noexcept {
  std::uint64_t expected = base + count;
  position_.compare_exchange_strong(expected, base);
}

template <class Make>
Tensor Generator::drawing(std::uint64_t count, Make&& make) {
  const std::uint64_t base = reserve(count);
  try {
    return make(base);
  } catch (...) {
    unreserve(base, count);
    throw;
  }
}

Tensor Generator::uniform(const Shape& shape, double low, double high, const SimpleDType& dtype,
                          const CarrierChoice& carrier) {
  require_dtype("uniform", dtype, DType::Float32());
  if (!std::isfinite(low) || !std::isfinite(high)) throw ValueError("uniform: low and high must be finite");
  // The bounds as the Float32 values the tensor can hold.
  const float lo = detail::round_to_float32(low), hi = detail::round_to_float32(high);
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw ValueError("uniform: low and high must be finite as Float32 values (|x| below about 3.4e38)");
  if (!(lo < hi))
    throw ValueError("uniform: low must be below high as Float32 values, got [" + std::to_string(low) + ", " +
                     std::to_string(high) + ")");
  const float below_hi = std::nextafter(hi, lo);
  const double width = static_cast<double>(hi) - static_cast<double>(lo);
  const std::uint64_t seed = seed_;
  return drawing(draws_for(shape.size(), 4), [&](std::uint64_t base) {
    return detail::fill_tensor<float>(shape, dtype, carrier, [&](std::int64_t first, std::int64_t count, float* out) {
      // The words first, then the vectorised conversion: the same formula
      // per element (philox_batch.h).
      std::uint32_t words[kWordChunk];
      for (std::int64_t done = 0; done < count; done += kWordChunk) {
        const std::int64_t n = std::min(kWordChunk, count - done);
        element_words(seed, base, first + done, n, words);
        simd::uniform_from_words(words, static_cast<std::size_t>(n), lo, width, below_hi, out + done);
      }
    });
  });
}

Tensor Generator::normal(const Shape& shape, double mean, double stddev, const SimpleDType& dtype,
                         const CarrierChoice& carrier) {
  require_dtype("normal", dtype, DType::Float32());
  if (!std::isfinite(detail::round_to_float32(mean)) || !std::isfinite(detail::round_to_float32(stddev)))
    throw ValueError("normal: mean and stddev must be finite as Float32 values (|x| below about 3.4e38)");
  if (stddev < 0.0) throw ValueError("normal: stddev must be >= 0, got " + std::to_string(stddev));
  const std::uint64_t seed = seed_;
  return drawing(draws_for(shape.size(), 2), [&](std::uint64_t base) {
    return detail::fill_tensor<float>(shape, dtype, carrier, [&](std::int64_t first, std::int64_t count, float* out) {
      // Element i is half i % 2 of draw base + i / 2: the pairs of the
      // draws this range touches, then its elements among them.
      constexpr std::int64_t kPairChunk = 512;  // draws
      float values[2 * kPairChunk + 2];
      for (std::int64_t done = 0; done < count;) {
        const std::int64_t at = first + done;
        const std::int64_t draws = std::min<std::int64_t>(kPairChunk, (first + count - 1) / 2 - at / 2 + 1);
        simd::normal_pairs(seed, base + static_cast<std::uint64_t>(at / 2), static_cast<std::size_t>(draws), mean,
                           stddev, values);
        const std::int64_t n = std::min(2 * draws - at % 2, count - done);
        std::copy_n(values + at % 2, n, out + done);
        done += n;
      }
    });
  });
}

Tensor Generator::integers(std::int64_t low, std::int64_t high, const Shape& shape, const SimpleDType& dtype,
                           const CarrierChoice& carrier) {
  require_dtype("integers", dtype, DType::Int32());
  if (!(low < high))
    throw ValueError("integers: low must be below high, got [" + std::to_string(low) + ", " + std::to_string(high) +
                     ")");
  constexpr std::int64_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t kEnd = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
  if (low < kMin || high > kEnd)
    throw OverflowError("integers: [" + std::to_string(low) + ", " + std::to_string(high) +
                        ") leaves Int32 (high is exclusive: at most 2**31)");
  const auto range = static_cast<std::uint64_t>(high - low);
  const std::uint32_t threshold = lemire_threshold(range);
  const std::uint64_t seed = seed_;
  return drawing(draws_for(shape.size(), 4), [&](std::uint64_t base) {
    return detail::fill_tensor<std::int32_t>(
        shape, dtype, carrier, [&](std::int64_t first, std::int64_t count, std::int32_t* out) {
          std::uint32_t words[kWordChunk];
          for (std::int64_t done = 0; done < count; done += kWordChunk) {
            const std::int64_t n = std::min(kWordChunk, count - done);
            element_words(seed, base, first + done, n, words);
            std::int32_t* o = out + done;
            if (!simd::bounded_from_words(words, static_cast<std::size_t>(n), range, threshold,
                                          static_cast<std::int32_t>(low), o))
              continue;
            // A rejected word (rare: threshold / 2**32 of them) is redrawn
            // from the same slot of the next attempts' draws.
            for (std::int64_t k = 0; k < n; ++k) {
              if (static_cast<std::uint32_t>(static_cast<std::uint64_t>(words[k]) * range) >= threshold) continue;
              const auto i = static_cast<std::uint64_t>(first + done + k);
              DrawWords first_attempt{};
              first_attempt.w[i % 4] = words[k];
              const std::uint64_t r =
                  bounded(seed, base + i / 4, static_cast<unsigned>(i % 4), range, threshold, first_attempt);
              o[k] = static_cast<std::int32_t>(low + static_cast<std::int64_t>(r));
            }
          }
        });
  });
}

Tensor Generator::permutation(std::int64_t n, const CarrierChoice& carrier) {
  check_permutation_length(n);
  return drawing(n > 1 ? draws_for(n - 1, 4) : 0, [&](std::uint64_t base) {
    const std::vector<std::int32_t> p = shuffled(seed_, base, n);
    return detail::fill_tensor<std::int32_t>(Shape::of({n}), DType::Int32(), carrier,
                                             [&](std::int64_t first, std::int64_t count, std::int32_t* out) {
                                               std::copy_n(p.begin() + first, count, out);
                                             });
  });
}

Tensor Generator::permutation(const Tensor& x) {
  if (x.shape().rank() == 0) throw ValueError("permutation: x must have at least one axis");
  const std::int64_t n = x.shape().extent(0);
  check_permutation_length(n);
  const CarrierChoice on_x(*x.carrier());
  return drawing(n > 1 ? draws_for(n - 1, 4) : 0, [&](std::uint64_t base) {
    const std::vector<std::int32_t> p = shuffled(seed_, base, n);
    // The indices have x's shape; axis 0 is the fastest mode (logical
    // order), so the element at ordinal o lies at axis-0 coordinate o % n.
    const Tensor indices = detail::fill_tensor<std::int32_t>(
        x.shape(), DType::Int32(), on_x, [&](std::int64_t first, std::int64_t count, std::int32_t* out) {
          for (std::int64_t k = 0; k < count; ++k) out[k] = p[static_cast<std::size_t>((first + k) % n)];
        });
    return gather(x, indices, 0);
  });
}

}  // namespace strideweave::random
