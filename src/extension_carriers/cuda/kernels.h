// Internal: the CUDA carrier's device kernels as the host calls them
// (kernels.cu; docs/cuda.md, "Kernels").
//
// Every kernel writes a compact result (slot i = the result element of
// logical ordinal i, first mode fastest) and reads each operand through a
// strided view of the result's grid: element i of an operand is
// base[offset + sum_k c_k * stride_k], with c the coordinates of ordinal i
// over `extents` (first mode fastest; a broadcast mode has stride 0). The
// host merges modes before the launch (strided.h), so at most kMaxModes
// remain. Each launch is queued on the device's stream (runtime.h) and
// returns without waiting; a launch that cannot start is a RuntimeError.
//
// Semantics are Generic's Float32 plans exactly (docs/operations/*.md):
// built with -fmad=false (no contraction: every product and sum rounded on
// its own, as Arithmetic::BINARY32 requires), IEEE division and square
// root; the transcendentals are CUDA's float functions (their documented
// error bounds are within the operations' ulps tolerances).
#pragma once

#include <cstdint>

namespace strideweave::cuda_carrier {

inline constexpr int kMaxModes = 8;

// The result's grid: `modes` extents (first fastest), `count` elements.
struct Grid {
  int modes = 0;
  std::int64_t extents[kMaxModes] = {};
  std::int64_t count = 0;
};

// One operand over the grid: device base address (of slot 0), element
// offset and one element stride per grid mode.
struct Strided {
  const void* base = nullptr;
  std::int64_t offset = 0;
  std::int64_t strides[kMaxModes] = {};
};

// Float32 x Float32 -> Float32 (add .. minimum) or Bool (eq .. le).
enum class BinaryOp : std::uint8_t { add, sub, mul, div, pow, rem, maximum, minimum, eq, ne, lt, le };
// Float32 -> Float32.
enum class UnaryOp : std::uint8_t {
  relu, elu, exp, gelu, leaky_relu, sigmoid, silu, softplus, tanh,
  neg, abs, sign, recip, sqrt, rsqrt, exp2, log, log2, sin, cos, erf, floor, ceil, round
};
// The options of elu, gelu, leaky_relu and softplus, rounded to binary32.
struct UnaryOptions {
  float alpha = 1.0f, slope = 0.01f, beta = 1.0f, threshold = 20.0f;
  bool approximate = false;
};

bool is_comparison(BinaryOp op) noexcept;

void launch_binary(int device, BinaryOp op, const Grid& grid, const Strided& a, const Strided& b, void* out);
void launch_unary(int device, UnaryOp op, const UnaryOptions& options, const Grid& grid, const Strided& x, float* out);
// Float32 -> Bool: x == 0.
void launch_logical_not(int device, const Grid& grid, const Strided& x, bool* out);
// min(max(x, lo), hi) with maximum's and minimum's NaN and signed-zero rules.
void launch_clamp(int device, const Grid& grid, const Strided& x, const Strided& lo, const Strided& hi, float* out);
// cond ? a : b (cond Bool, a and b Float32).
void launch_select(int device, const Grid& grid, const Strided& cond, const Strided& a, const Strided& b, float* out);

}  // namespace strideweave::cuda_carrier
