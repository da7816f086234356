// Internal: CPU op math as small functors (STYLE.md habit 4). Each takes
// already-converted operands; the loops that apply them live in the family
// files (arithmetic.cpp, unary.cpp) over the layout cases of strided.h.
//
// BINARY32 functors are plain float expressions: the library is compiled with
// -ffp-contract=off and without -ffast-math, so each step rounds to binary32.
// Checked Int32 functors compute exactly in 64 bits and report overflow
// through a flag the loop tests once per call (OverflowError afterwards), so
// the loop body stays branch-free.
#pragma once

#include <bit>
#include <cstdint>

namespace strideweave::carriers::cpu {

// add and mul give the first NaN operand, quieted, when both are NaN, as
// x86's instructions and simd.h's vector kernels do. The compiler may swap
// the operands of a commutative scalar `a + b` (it does, in the strided
// loops), which would return the second NaN there and make the payload
// depend on the operands' strides; the first operand's NaN is therefore
// taken explicitly. (Sub and div are never swapped.)
inline float first_nan(float a, float r) noexcept {
  return a != a ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) | 0x00400000u) : r;
}
struct AddF32 {
  float operator()(float a, float b) const noexcept { return first_nan(a, a + b); }
};
struct MulF32 {
  float operator()(float a, float b) const noexcept { return first_nan(a, a * b); }
};
struct AddI32Checked {
  std::int64_t operator()(std::int32_t a, std::int32_t b) const noexcept {
    return static_cast<std::int64_t>(a) + b;
  }
};
struct MulI32Checked {
  std::int64_t operator()(std::int32_t a, std::int32_t b) const noexcept {
    return static_cast<std::int64_t>(a) * b;
  }
};
struct ReluF32 {
  // NaN propagates; negatives and -0 become +0.
  float operator()(float x) const noexcept { return x > 0.0f || x != x ? x : 0.0f; }
};
struct ReluI32 {
  std::int32_t operator()(std::int32_t x) const noexcept { return x > 0 ? x : 0; }
};

// Operand materialisation to the plan's convert_to type.
template <class To, class From>
inline To convert(From v) noexcept {
  return static_cast<To>(v);  // int32 -> float rounds to nearest even
}

}  // namespace strideweave::carriers::cpu
