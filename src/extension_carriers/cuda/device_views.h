// Internal, device code only (included by the *.cu files): reading a View
// by top-level coordinates, and the element rules the kernels share with
// Generic (src/carriers/generic/*.cpp).
#pragma once

#ifndef __CUDACC__
#error "device_views.h is device code: include it from a .cu file"
#endif

#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace strideweave::cuda_carrier {

// The element offset of top-level coordinate `c` (rank entries) of `v`.
__device__ __forceinline__ std::int64_t offset_of(const View& v, const std::int64_t* c) {
  std::int64_t at = v.offset;
  for (int k = 0; k < v.rank; ++k) {
    std::int64_t ck = c[k];
    for (int l = v.leaf_begin[k]; l < v.leaf_begin[k + 1]; ++l) {
      const std::int64_t e = v.leaf_extent[l];
      at += (ck % e) * v.leaf_stride[l];
      ck /= e;
    }
  }
  return at;
}
template <class T>
__device__ __forceinline__ T read(const View& v, const std::int64_t* c) {
  return static_cast<const T*>(v.base)[offset_of(v, c)];
}

// The coordinates of logical ordinal `i` over `e` (first mode fastest).
__device__ __forceinline__ void coordinates_of(std::int64_t i, const Extents& e, std::int64_t* c) {
  for (int k = 0; k < e.rank; ++k) {
    c[k] = i % e.extents[k];
    i /= e.extents[k];
  }
}

// A NaN with its quiet bit set (payload and sign kept).
__device__ __forceinline__ float quieted(float nan) { return __uint_as_float(__float_as_uint(nan) | 0x00400000u); }

// Does the later element v replace the current winner w? NaN is the
// extreme of both orders and the first NaN stays; +0 is above -0.
__device__ __forceinline__ bool max_replaces(float w, float v) {
  if (isnan(w)) return false;
  if (isnan(v)) return true;
  if (v > w) return true;
  return v == 0.0f && w == 0.0f && signbit(w) && !signbit(v);
}
__device__ __forceinline__ bool min_replaces(float w, float v) {
  if (isnan(w)) return false;
  if (isnan(v)) return true;
  if (v < w) return true;
  return v == 0.0f && w == 0.0f && !signbit(w) && signbit(v);
}

// The ascending order of sort and topk: -inf < ... < -0 < +0 < ... < +inf <
// NaN, every NaN equivalent to every other.
__device__ __forceinline__ bool sorts_before(float a, float b) {
  if (isnan(a)) return false;
  if (isnan(b)) return true;
  if (a == b) return signbit(a) && !signbit(b);
  return a < b;
}

// The stream of `device`, made current on this thread, for a launch.
inline cudaStream_t on(int device) { return static_cast<cudaStream_t>(launch_stream(device)); }

constexpr int kThreads = 256;
// Blocks for `count` threads' work, at most 65535 (grid-stride loops cover
// the rest).
inline unsigned blocks_for(std::int64_t count) {
  const std::int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define SW_CUDA_FOR_EACH(i, count)                                                                       \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

}  // namespace strideweave::cuda_carrier
