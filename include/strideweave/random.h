// strideweave/random.h — seeded random tensors (docs/creation.md, "Random
// tensors").
//
// A Generator is a seed and a position. Draw k is four 32-bit words, a pure
// function of (seed, k): the Philox4x32-10 counter-based generator (Salmon
// et al., SC'11, through Random123) keyed by the seed, at counter k. A call
// that makes n elements takes the next draws, element i (logical ordinal i,
// first mode fastest, docs/layout.md) taking word i % 4 of draw
// position + i / 4 (uniform, integers, permutation's steps) or half i % 2
// of draw position + i / 2 (normal). So the values depend only on the seed,
// the calls made before and the shape: never on the carrier, the thread
// count or the machine's instruction set. `normal` computes in double with
// the C library's log, sqrt, cos and sin, so its values may differ in the
// last Float32 bit between C libraries (never between carriers or thread
// counts).
//
// A call reserves its draws atomically: calls from several threads are safe
// and each gets draws no other call gets (which call gets which block then
// depends on the threads' order). Every argument is checked before a draw
// is reserved, and a call that fails after reserving (the carrier's dtype
// check, memory, gather) gives its draws back unless another call took draws
// meanwhile: alone, a failed call leaves the position where it was.
//
// Every result is a fresh compact tensor made by a CarrierChoice
// (<strideweave/creation.h>).
#pragma once

#include <atomic>
#include <cstdint>

#include <strideweave/creation.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave::random {

class Generator {
 public:
  explicit Generator(std::uint64_t seed) noexcept : seed_(seed) {}
  // A generator at `position` (resuming a sequence: position() of another).
  Generator(std::uint64_t seed, std::uint64_t position) noexcept : seed_(seed), position_(position) {}
  Generator(const Generator& other) noexcept : seed_(other.seed_), position_(other.position()) {}
  Generator& operator=(const Generator& other) noexcept {
    seed_ = other.seed_;
    position_.store(other.position());
    return *this;
  }

  std::uint64_t seed() const noexcept { return seed_; }
  // The number of draws taken so far.
  std::uint64_t position() const noexcept { return position_.load(); }

  // Uniform on [low, high): Float32 only (TypeError otherwise); four
  // elements a draw. From 24 random bits (one word) u in [0, 1): low + (high - low) * u in double, rounded once;
  // a result that rounds up to high is the largest Float32 below it.
  // ValueError unless low < high, both finite.
  Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0,
                 const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});
  // Normal with mean `mean` and standard deviation `stddev`: Float32 only;
  // two elements a draw (Box-Muller's cosine and sine of one pair of 53-bit
  // uniforms). ValueError for stddev < 0
  // or a non-finite argument.
  Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0,
                const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});
  // Integers uniform on [low, high), exactly: four elements a draw
  // (Lemire's bounded method on the element's word; a rejected word is
  // replaced by the same word of the draw's next attempt: no modulo bias). Int32 only, and the range
  // must lie in Int32 (ValueError unless low < high; OverflowError outside).
  Tensor integers(std::int64_t low, std::int64_t high, const Shape& shape,
                  const SimpleDType& dtype = DType::Int32(), const CarrierChoice& carrier = {});
  // A uniformly random permutation of 0 .. n-1 (Fisher-Yates, exact), as a
  // rank-1 Int32 tensor; its n - 1 steps take four a draw. ValueError for n < 0
  // or n > 2**31.
  Tensor permutation(std::int64_t n, const CarrierChoice& carrier = {});
  // `x` with its first axis permuted: gather(x, p, 0) with p a permutation
  // of x.shape[0] broadcast to x's shape, on x's carrier. What gather
  // executes (its dtypes, carriers and gradient) is what this offers.
  // ValueError for a rank-0 x.
  Tensor permutation(const Tensor& x);

 private:
  // Reserves `count` draws and returns the first (OverflowError, reserving
  // nothing, when the position would pass 2**64).
  std::uint64_t reserve(std::uint64_t count);
  // Gives back draws [base, base + count) when no other call took draws
  // since (a failed call); otherwise the draws stay taken.
  void unreserve(std::uint64_t base, std::uint64_t count) noexcept;
  // make(base) with `count` draws reserved, given back if make throws.
  template <class Make>
  Tensor drawing(std::uint64_t count, Make&& make);

  std::uint64_t seed_;
  std::atomic<std::uint64_t> position_{0};
};

// The four 32-bit words of draw `counter` of `seed` (Philox4x32-10 with key
// (seed low, seed high) and counter (counter low, counter high, 0, attempt)):
// the one function every draw comes from, public so that a test, or another
// implementation, can check values word for word.
struct DrawWords {
  std::uint32_t w[4];
};
DrawWords draw_words(std::uint64_t seed, std::uint64_t counter, std::uint32_t attempt = 0) noexcept;

}  // namespace strideweave::random

STRIDEWEAVE_PUBLIC_END
