// Internal: overflow-checked int64 arithmetic and little-endian decoding for
// the header parsers (pure functions: no I/O, no library state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace strideweave::formats {

// The largest .npy header text accepted (a ValueError beyond): 1 MiB, far
// above any real array's header (numpy's own reader stops at 10000 bytes
// unless told otherwise).
inline constexpr std::int64_t kMaxNpyHeaderBytes = std::int64_t{1} << 20;

inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The unsigned little-endian integer of `count` bytes at `at` (count <= 8).
inline std::uint64_t little_endian(std::span<const std::byte> bytes, std::size_t at, std::size_t count) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < count; ++i) v |= static_cast<std::uint64_t>(bytes[at + i]) << (8 * i);
  return v;
}

}  // namespace strideweave::formats
