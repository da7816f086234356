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
// offset and one element stride per grid mode; or, when `scalar`, the weak
// scalar `value` (already materialised to Float32) at every element.
struct Strided {
  const void* base = nullptr;
  std::int64_t offset = 0;
  std::int64_t strides[kMaxModes] = {};
  bool scalar = false;
  float value = 0.0f;
};

// ---- general views (reductions, lines, matmul, conv, gather, scatter)
//
// A tensor operand as Tensor::at reads it: top-level mode k has extent
// extents[k]; its coordinate c_k is spread over the mode's leaves
// [leaf_begin[k], leaf_begin[k + 1]) first leaf fastest, and the element is
// base[offset + sum over leaves of leaf coordinate * leaf stride] (a
// hierarchical layout keeps its nesting).
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxLeaves = 16;
struct View {
  const void* base = nullptr;
  std::int64_t offset = 0;
  int rank = 0;
  std::int64_t extents[kMaxRank] = {};
  int leaf_begin[kMaxRank + 1] = {};
  std::int64_t leaf_extent[kMaxLeaves] = {};
  std::int64_t leaf_stride[kMaxLeaves] = {};
};
// A compact result's extents (first mode fastest), rank <= kMaxRank.
struct Extents {
  int rank = 0;
  std::int64_t extents[kMaxRank] = {};
  std::int64_t count = 1;
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

void launch_binary(int device, BinaryOp op, const Grid& grid, const Strided& a, const Strided& b, void* out);
void launch_unary(int device, UnaryOp op, const UnaryOptions& options, const Grid& grid, const Strided& x, float* out);
// A compact copy of `v` (logical order over `e`) of `element_bytes` (1 or 4)
// per element: how an elementwise kernel reads an operand whose
// hierarchical mode does not coalesce to one stride.
void launch_copy(int device, const View& v, const Extents& e, int element_bytes, void* out);
// Float32 -> Bool: x == 0.
void launch_logical_not(int device, const Grid& grid, const Strided& x, bool* out);
// min(max(x, lo), hi) with maximum's and minimum's NaN and signed-zero rules.
void launch_clamp(int device, const Grid& grid, const Strided& x, const Strided& lo, const Strided& hi, float* out);
// cond ? a : b (cond Bool, a and b Float32).
void launch_select(int device, const Grid& grid, const Strided& cond, const Strided& a, const Strided& b, float* out);

// ---- reductions (reductions.cu): Generic's order, one thread per result
// element, each block visited in logical order (first reduced axis
// fastest): sum from +0 (FLOATING's reference order), prod from 1, the
// extrema and arg-extrema with their NaN, signed-zero and first-winner
// rules. `reduced[k]`: axis k of x is reduced; `out` has `result`'s extents
// (keepdims keeps reduced axes with extent 1). arg results are Int32.
enum class ReduceOp : std::uint8_t { sum, prod, max, min, argmax, argmin };
struct ReduceArgs {
  bool reduced[kMaxRank] = {};
  bool keepdims = false;
};
void launch_reduce(int device, ReduceOp op, const View& x, const ReduceArgs& args, const Extents& result, void* out);
// cumsum along `axis`, sequential from +0 (out compact of x's shape).
void launch_cumsum(int device, const View& x, int axis, float* out);
// sort / topk along `axis`: per line the positions stably sorted (ascending
// by -inf < ... < -0 < +0 < ... < +inf < NaN, or descending with ties in
// their original order); the first `count` written as values (Float32) or
// positions (Int32) into the compact result of x's shape with `count` on
// the axis.
void launch_sort(int device, const View& x, int axis, bool descending, std::int64_t count, bool indices, void* out);

// ---- structured (structured.cu)
// matmul over aligned operands a (..., M, K) and b (..., K, N) (broadcast
// batch views of the result's batch): each element sums its products in
// ascending k from +0, each product rounded before the add (BINARY32), or
// one fmaf per step (BINARY32_FUSED).
void launch_matmul(int device, const View& a, const View& b, const Extents& result, bool fused, float* out);
// The contracted matmul through cuBLAS (cublas_cudart.cpp: loaded on first
// use, pedantic math mode, on the carrier's stream): false, with nothing
// queued, when cuBLAS cannot be loaded or the operands' layouts are not
// matrices it reads (each of the last two modes one leaf, one of them unit
// stride), or the result has more than one matrix (its compact layout puts
// the batch modes fastest, which a strided-batched GEMM does not write); the
// caller then runs launch_matmul's fmaf kernel.
bool matmul_cublas(int device, const View& a, const View& b, const Extents& result, float* out);
// conv_general (input (N, C_in, S...), weight (C_out, C_in/groups, K...)):
// each element sums from +0, in the weight slice's logical order (ci
// fastest), the rounded products x * w, a padded position reading +0.
struct ConvArgs {
  int spatial = 0;
  std::int64_t stride[kMaxRank] = {};
  std::int64_t padding_lo[kMaxRank] = {};
  std::int64_t dilation[kMaxRank] = {};
  std::int64_t groups = 1;
};
void launch_conv(int device, const View& input, const View& weight, const ConvArgs& args, const Extents& result,
                 float* out);
// The logical ordinal of the first element of `indices` (Int32) outside
// [0, extent), or -1, and its value in *value. Synchronous (the caller
// raises IndexError before anything is published).
std::int64_t first_bad_index(int device, const View& indices, std::int64_t extent, std::int32_t* value);
// gather: result element p = data at p with coordinate `axis` replaced by
// indices[p] (checked first).
void launch_gather(int device, const View& data, const View& indices, int axis, const Extents& result, float* out);
// scatter / scatter_add: the result is data, then for every position p of
// indices in logical order the element at p with coordinate `axis`
// replaced by indices[p] becomes src[p] (or that element + src[p], one
// binary32 rounding).
void launch_scatter(int device, const View& data, const View& indices, const View& src, int axis, bool add,
                    float* out);

}  // namespace strideweave::cuda_carrier
