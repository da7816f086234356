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
__device__ __forceinline__ float load_f32(const Grid& g, const Strided& s, std::int64_t i) {
  if (s.scalar) return s.value;
  return static_cast<const float*>(s.base)[element_of(g, s, i)];
}
// A Bool slot is one byte; any non-zero byte is true (as the host decodes it).
__device__ __forceinline__ bool load_bool(const Grid& g, const Strided& s, std::int64_t i) {
  if (s.scalar) return s.value != 0.0f;
  return static_cast<const unsigned char*>(s.base)[element_of(g, s, i)] != 0;
}

// The C library's float functions, computed in binary64 and rounded once:
// correctly rounded except where the binary64 value (within an ulp or two of
// binary64) straddles a binary32 rounding boundary. CUDA's own float
// functions are up to 2 binary32 ulps away from the correctly rounded value;
// glibc's (Generic's) are within about one, so the two agree within the
// operations' ulps tolerances (docs/cuda.md, "How they compute").
__device__ __forceinline__ float exp_f(float x) { return __double2float_rn(exp(static_cast<double>(x))); }
__device__ __forceinline__ float expm1_f(float x) { return __double2float_rn(expm1(static_cast<double>(x))); }
__device__ __forceinline__ float log1p_f(float x) { return __double2float_rn(log1p(static_cast<double>(x))); }
__device__ __forceinline__ float erf_f(float x) { return __double2float_rn(erf(static_cast<double>(x))); }
__device__ __forceinline__ float tanh_f(float x) { return __double2float_rn(tanh(static_cast<double>(x))); }
// pow: C's special cases (pow(x, +-0) = 1, pow(1, y) = 1, ...) are those of
// the binary64 pow; the value is correctly rounded where glibc's powf is
// within 0.82 ulp, so the two differ by at most one ulp (operations.def:
// pow's tolerance is 1 ulp).
__device__ __forceinline__ float pow_f(float x, float y) {
  return __double2float_rn(pow(static_cast<double>(x), static_cast<double>(y)));
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
  const float e = exp_f(-x);
  const float d = __fadd_rn(1.0f, e);
  return __fdiv_rn(1.0f, d);
}

__device__ __forceinline__ float gelu_of(float x, bool approximate) {
  if (x == -INFINITY) return -0.0f;
  if (!approximate) {
    const float t = __fmul_rn(x, 0.70710678118654752f);
    const float e = erf_f(t);
    const float s = __fadd_rn(1.0f, e);
    const float h = __fmul_rn(0.5f, x);
    return __fmul_rn(h, s);
  }
  const float x2 = __fmul_rn(x, x);
  const float x3 = __fmul_rn(x2, x);
  const float k = __fmul_rn(0.044715f, x3);
  const float u = __fadd_rn(x, k);
  const float v = __fmul_rn(0.79788456080286536f, u);
  const float th = tanh_f(v);
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
    case BinaryOp::pow: return pow_f(x, y);
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
    case UnaryOp::elu: return x > 0.0f ? x : __fmul_rn(o.alpha, expm1_f(x));
    case UnaryOp::exp: return exp_f(x);
    case UnaryOp::gelu: return gelu_of(x, o.approximate);
    case UnaryOp::leaky_relu: return x > 0.0f ? x : __fmul_rn(x, o.slope);
    case UnaryOp::sigmoid: return sigmoid_of(x);
    case UnaryOp::silu: return x == -INFINITY ? -0.0f : __fmul_rn(x, sigmoid_of(x));
    case UnaryOp::softplus: {
      const float p = __fmul_rn(x, o.beta);
      if (p > o.threshold) return x;
      const float e = exp_f(p);
      const float l = log1p_f(e);
      return __fdiv_rn(l, o.beta);
    }
    case UnaryOp::tanh: return tanh_f(x);
    case UnaryOp::neg: return __uint_as_float(__float_as_uint(x) ^ 0x80000000u);  // the sign bit only (NaN payload kept)
    case UnaryOp::abs: return __uint_as_float(__float_as_uint(x) & 0x7fffffffu);
    case UnaryOp::sign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case UnaryOp::recip: return __fdiv_rn(1.0f, x);
    case UnaryOp::sqrt: return __fsqrt_rn(x);
    case UnaryOp::rsqrt: return __fdiv_rn(1.0f, __fsqrt_rn(x));
    case UnaryOp::exp2: return __double2float_rn(exp2(static_cast<double>(x)));
    case UnaryOp::log: return __double2float_rn(log(static_cast<double>(x)));
    case UnaryOp::log2: return __double2float_rn(log2(static_cast<double>(x)));
    case UnaryOp::sin: return __double2float_rn(sin(static_cast<double>(x)));
    case UnaryOp::cos: return __double2float_rn(cos(static_cast<double>(x)));
    case UnaryOp::erf: return erf_f(x);
    case UnaryOp::floor: return floorf(x);
    case UnaryOp::ceil: return ceilf(x);
    case UnaryOp::round: return rintf(x);  // ties to even
  }
  return x;
}

__global__ void copy_kernel(View v, Extents e, int element_bytes, void* out) {
  SW_CUDA_FOR_EACH(i, e.count) {
    std::int64_t c[kMaxRank];
    coordinates_of(i, e, c);
    const std::int64_t at = offset_of(v, c);
    if (element_bytes == 1) static_cast<unsigned char*>(out)[i] = static_cast<const unsigned char*>(v.base)[at];
    else static_cast<std::uint32_t*>(out)[i] = static_cast<const std::uint32_t*>(v.base)[at];
  }
}

// One thread per element, grid-stride.
__global__ void binary_kernel(BinaryOp op, Grid g, Strided a, Strided b, void* out) {
  const bool compare = op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = load_f32(g, a, i), y = load_f32(g, b, i);
    if (compare) static_cast<bool*>(out)[i] = compare_f32(op, x, y);
    else static_cast<float*>(out)[i] = binary_f32(op, x, y);
  }
}
__global__ void unary_kernel(UnaryOp op, UnaryOptions o, Grid g, Strided x, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = unary_f32(op, o, load_f32(g, x, i));
}
__global__ void logical_not_kernel(Grid g, Strided x, bool* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = load_f32(g, x, i) == 0.0f;
}
__global__ void clamp_kernel(Grid g, Strided x, Strided lo, Strided hi, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = minimum_f32(maximum_f32(load_f32(g, x, i), load_f32(g, lo, i)), load_f32(g, hi, i));
}
__global__ void select_kernel(Grid g, Strided c, Strided a, Strided b, float* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < g.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = load_bool(g, c, i) ? load_f32(g, a, i) : load_f32(g, b, i);
}


}  // namespace

void launch_copy(int device, const View& v, const Extents& e, int element_bytes, void* out) {
  if (e.count == 0) return;
  copy_kernel<<<blocks_for(e.count), kThreads, 0, on(device)>>>(v, e, element_bytes, out);
  check_launch("a compact copy");
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
