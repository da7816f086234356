// Internal: CPU's view of tensor operands as typed base pointers plus one
// plain stride per axis, and the N-operand strided walk.
//
// The layout case is chosen once per call (STYLE.md habit 3): operands whose
// layouts all equal one compact layout run one flat loop; otherwise the walk
// hands whole rows (axis 0, the fastest logical axis) to a row function with
// per-operand strides, never deciding anything per element. An operand with a
// hierarchical mode that does not coalesce to one stride never reaches a CPU
// kernel: the framework copies it first (borrowed_input = FallbackCopy, the
// in-place reader has_plain_strides; docs/capabilities.md).
#pragma once

#include <strideweave/carriers/cpu.h>
#include <strideweave/tensor.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace strideweave::carriers::cpu {

// A typed strided operand: base points at the tensor's offset.
template <class T>
struct Strided {
  T* base = nullptr;
  std::vector<std::int64_t> strides;  // one per axis, in elements
};

// True when `layout` is flat with exactly `extents` and each axis of extent
// > 1 has the compact stride (axes of extent <= 1 are never stepped), i.e. its
// elements are one contiguous run in logical order. Allocates nothing.
inline bool compact_over(const Layout& layout, std::span<const std::int64_t> extents) {
  if (layout.rank() != extents.size()) return false;
  const std::span<const std::int64_t> own = layout.shape().extents();
  const auto modes = layout.stride().modes();
  std::int64_t s = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (own[i] != extents[i] || !modes[i].is_leaf()) return false;
    if (extents[i] > 1) {
      if (modes[i].value() != s) return false;
      s *= extents[i];
    }
  }
  return true;
}

// True when every axis of `layout` has one plain stride.
bool has_plain_strides(const Layout& layout);

// The operand as base pointer + strides. Preconditions: T matches the dtype
// and has_plain_strides(t.layout()) (else RuntimeError: a broken invariant).
template <class T>
Strided<T> strided(const Tensor& t);

// Walk the index space `extents` in logical order over N strided operands;
// row(ptrs, strides0, count) is called for each run along axis 0 with the
// per-operand element pointers at the run's start and their axis-0 strides.
template <std::size_t N, class Row>
void walk(std::span<const std::int64_t> extents, const std::array<char*, N>& bases,
          const std::array<const std::int64_t*, N>& strides_in_bytes, Row&& row) {
  const std::size_t rank = extents.size();
  for (std::int64_t e : extents)
    if (e == 0) return;
  if (rank == 0) {
    std::array<std::int64_t, N> zero{};
    row(bases, zero, std::int64_t{1});
    return;
  }
  std::array<std::int64_t, N> inner{};
  for (std::size_t k = 0; k < N; ++k) inner[k] = strides_in_bytes[k][0];
  std::vector<std::int64_t> counter(rank, 0);
  std::array<char*, N> ptrs = bases;
  while (true) {
    row(ptrs, inner, extents[0]);
    // Odometer over axes 1..rank-1.
    std::size_t axis = 1;
    for (; axis < rank; ++axis) {
      if (++counter[axis] < extents[axis]) {
        for (std::size_t k = 0; k < N; ++k) ptrs[k] += strides_in_bytes[k][axis];
        break;
      }
      for (std::size_t k = 0; k < N; ++k) ptrs[k] -= strides_in_bytes[k][axis] * (extents[axis] - 1);
      counter[axis] = 0;
    }
    if (axis == rank) return;
  }
}

}  // namespace strideweave::carriers::cpu
