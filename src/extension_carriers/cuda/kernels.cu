// The CUDA carrier's device kernels (kernels.h). Each function below is
// the Generic reference of its operation (src/carriers/generic/*.cpp,
// docs/operations/*.md) written for one element, step for step; the build
// passes -fmad=false so that no product and sum fuse (BINARY32), and keeps
// IEEE division and square root (-prec-div, -prec-sqrt: nvcc's defaults).
#include "extension_carriers/cuda/device_views.h"
#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace strideweave::cuda_carrier {
namespace {

// The physical element of ordinal i of an operand (first mode fastest).
__device__ __forceinline__ std::int64_t element_of(const Grid& g, const Strided& s, std::int64_t i) {
  std::int64_t at = s.offset;
  for (int k = 0; k < g.modes; ++k) {
    const std::int64_t e = g.extents[k];
    const std::int64_t c = i % e;
    i /= e;
    at += c * s.strides[k];
  }
  return at;
}
template <class T>
__device__ __forceinline__ T load(const Grid& g, const Strided& s, std::int64_t i) {
  if (s.scalar) return static_cast<T>(s.value);
  return static_cast<const T*>(s.base)[element_of(g, s, i)];
}

__device__ __forceinline__ float maximum_f32(float x, float y) {
  if (isnan(x)) return quieted(x);
  if (isnan(y)) return quieted(y);
  if (x == y) return signbit(x) ? y : x;
  return x > y ? x : y;
}
__device__ __forceinline__ float minimum_f32(float x, float y) {
  if (isnan(x)) return quieted(x);
  if (isnan(y)) return quieted(y);
  if (x == y) return signbit(x) ? x : y;
  return x < y ? x : y;
}

__device__ __forceinline__ float sigmoid_of(float x) {
  const float e = expf(-x);
  const float d = __fadd_rn(1.0f, e);
  return __fdiv_rn(1.0f, d);
}

__device__ __forceinline__ float gelu_of(float x, bool approximate) {
  if (x == -INFINITY) return -0.0f;
  if (!approximate) {
    const float t = __fmul_rn(x, 0.70710678118654752f);
    const float e = erff(t);
    const float s = __fadd_rn(1.0f, e);
    const float h = __fmul_rn(0.5f, x);
    return __fmul_rn(h, s);
  }
  const float x2 = __fmul_rn(x, x);
  const float x3 = __fmul_rn(x2, x);
  const float k = __fmul_rn(0.044715f, x3);
  const float u = __fadd_rn(x, k);
  const float v = __fmul_rn(0.79788456080286536f, u);
  const float th = tanhf(v);
  const float s = __fadd_rn(1.0f, th);
  const float h = __fmul_rn(0.5f, x);
  return __fmul_rn(h, s);
}

__device__ __forceinline__ float binary_f32(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::add: return __fadd_rn(x, y);
    case BinaryOp::sub: return __fsub_rn(x, y);
    case BinaryOp::mul: return __fmul_rn(x, y);
    case BinaryOp::div: return __fdiv_rn(x, y);
    case BinaryOp::pow: return powf(x, y);
    case BinaryOp::rem: return fmodf(x, y);
    case BinaryOp::maximum: return maximum_f32(x, y);
    case BinaryOp::minimum: return minimum_f32(x, y);
    default: return 0.0f;  // comparisons: compare_f32
  }
}
__device__ __forceinline__ bool compare_f32(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::eq: return x == y;
    case BinaryOp::ne: return x != y;
    case BinaryOp::lt: return x < y;
    default: return x <= y;  // le
  }
}

__device__ __forceinline__ float unary_f32(UnaryOp op, const UnaryOptions& o, float x) {
  switch (op) {
    case UnaryOp::relu: return x > 0.0f || x != x ? x : 0.0f;
    case UnaryOp::elu: return x > 0.0f ? x : __fmul_rn(o.alpha, expm1f(x));
    case UnaryOp::exp: return expf(x);
    case UnaryOp::gelu: return gelu_of(x, o.approximate);
    case UnaryOp::leaky_relu: return x > 0.0f ? x : __fmul_rn(x, o.slope);
    case UnaryOp::sigmoid: return sigmoid_of(x);
    case UnaryOp::silu: return x == -INFINITY ? -0.0f : __fmul_rn(x, sigmoid_of(x));
    case UnaryOp::softplus: {
      const float p = __fmul_rn(x, o.beta);
      if (p > o.threshold) return x;
      const float e = expf(p);
      const float l = log1pf(e);
      return __fdiv_rn(l, o.beta);
    }
    case UnaryOp::tanh: return tanhf(x);
    case UnaryOp::neg: return -x;
    case UnaryOp::abs: return fabsf(x);
    case UnaryOp::sign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case UnaryOp::recip: return __fdiv_rn(1.0f, x);
    case UnaryOp::sqrt: return __fsqrt_rn(x);
    case UnaryOp::rsqrt: return __fdiv_rn(1.0f, __fsqrt_rn(x));
    case UnaryOp::exp2: return exp2f(x);
    case UnaryOp::log: return logf(x);
    case UnaryOp::log2: return log2f(x);
    case UnaryOp::sin: return sinf(x);
    case UnaryOp::cos: return cosf(x);
    case UnaryOp::erf: return erff(x);
    case UnaryOp::floor: return floorf(x);
    case UnaryOp::ceil: return ceilf(x);
    case UnaryOp::round: return rintf(x);  // ties to even
  }
  return x;
}

// One thread per element, grid-stride.
__global__ void binary_kernel(BinaryOp op, Grid g, Strided a, Strided b, void* out) {
  const bool compare = op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = load<float>(g, a, i), y = load<float>(g, b, i);
    if (compare) static_cast<bool*>(out)[i] = compare_f32(op, x, y);
    else static_cast<float*>(out)[i] = binary_f32(op, x, y);
  }
}
__global__ void unary_kernel(UnaryOp op, UnaryOptions o, Grid g, Strided x, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = unary_f32(op, o, load<float>(g, x, i));
}
__global__ void logical_not_kernel(Grid g, Strided x, bool* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = load<float>(g, x, i) == 0.0f;
}
__global__ void clamp_kernel(Grid g, Strided x, Strided lo, Strided hi, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = minimum_f32(maximum_f32(load<float>(g, x, i), load<float>(g, lo, i)), load<float>(g, hi, i));
}
__global__ void select_kernel(Grid g, Strided c, Strided a, Strided b, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = load<bool>(g, c, i) ? load<float>(g, a, i) : load<float>(g, b, i);
}

cudaStream_t on(int device) { return static_cast<cudaStream_t>(stream(device)); }

}  // namespace

bool is_comparison(BinaryOp op) noexcept {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le;
}

void launch_binary(int device, BinaryOp op, const Grid& grid, const Strided& a, const Strided& b, void* out) {
  if (grid.count == 0) return;
  cudaStream_t s = on(device);
  binary_kernel<<<blocks_for(grid.count), kThreads, 0, s>>>(op, grid, a, b, out);
  check_launch("an elementwise binary kernel");
}
void launch_unary(int device, UnaryOp op, const UnaryOptions& options, const Grid& grid, const Strided& x, float* out) {
  if (grid.count == 0) return;
  cudaStream_t s = on(device);
  unary_kernel<<<blocks_for(grid.count), kThreads, 0, s>>>(op, options, grid, x, out);
  check_launch("a unary kernel");
}
void launch_logical_not(int device, const Grid& grid, const Strided& x, bool* out) {
  if (grid.count == 0) return;
  cudaStream_t s = on(device);
  logical_not_kernel<<<blocks_for(grid.count), kThreads, 0, s>>>(grid, x, out);
  check_launch("logical_not");
}
void launch_clamp(int device, const Grid& grid, const Strided& x, const Strided& lo, const Strided& hi, float* out) {
  if (grid.count == 0) return;
  cudaStream_t s = on(device);
  clamp_kernel<<<blocks_for(grid.count), kThreads, 0, s>>>(grid, x, lo, hi, out);
  check_launch("clamp");
}
void launch_select(int device, const Grid& grid, const Strided& cond, const Strided& a, const Strided& b, float* out) {
  if (grid.count == 0) return;
  cudaStream_t s = on(device);
  select_kernel<<<blocks_for(grid.count), kThreads, 0, s>>>(grid, cond, a, b, out);
  check_launch("select");
}

}  // namespace strideweave::cuda_carrier
