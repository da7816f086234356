// The CUDA carrier's matmul, conv_general, gather and scatter (kernels.h):
// Generic's references (src/carriers/generic/structured.cpp), one result
// element per thread, in the same order of operations, so the results are
// Generic's bit for bit.
#include "extension_carriers/cuda/device_views.h"
#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace strideweave::cuda_carrier {
namespace {


__global__ void matmul_kernel(View a, View b, Extents result, bool fused, float* out) {
  const int r = result.rank;
  const std::int64_t k_extent = a.extents[r - 1];
  SW_CUDA_FOR_EACH(o, result.count) {
    std::int64_t ca[kMaxRank], cb[kMaxRank];
    coordinates_of(o, result, ca);
    for (int k = 0; k < r; ++k) cb[k] = ca[k];
    float sum = 0.0f;
    for (std::int64_t k = 0; k < k_extent; ++k) {
      ca[r - 1] = k;
      cb[r - 2] = k;
      const float x = read<float>(a, ca), y = read<float>(b, cb);
      if (fused) sum = fmaf(x, y, sum);                 // one rounding per multiply-add
      else sum = __fadd_rn(sum, __fmul_rn(x, y));       // the product rounded, then the sum
    }
    out[o] = sum;
  }
}

__global__ void conv_kernel(View input, View weight, ConvArgs args, Extents result, float* out) {
  const int d = args.spatial;
  const std::int64_t c_out_per_group = weight.extents[0] / args.groups;
  // The weight slice of one output channel: (C_in/groups, K_1..K_d).
  Extents slice;
  slice.rank = d + 1;
  slice.count = 1;
  for (int k = 0; k <= d; ++k) {
    slice.extents[k] = weight.extents[1 + k];
    slice.count *= slice.extents[k];
  }
  SW_CUDA_FOR_EACH(o, result.count) {
    std::int64_t oc[kMaxRank], xc[kMaxRank], wc[kMaxRank], sc[kMaxRank];
    coordinates_of(o, result, oc);
    const std::int64_t co = oc[1];
    const std::int64_t group = co / c_out_per_group;
    xc[0] = oc[0];
    wc[0] = co;
    float sum = 0.0f;
    for (std::int64_t s = 0; s < slice.count; ++s) {
      coordinates_of(s, slice, sc);
      const std::int64_t ci = sc[0];
      xc[1] = group * slice.extents[0] + ci;
      wc[1] = ci;
      bool inside = true;
      for (int i = 0; i < d; ++i) {
        const std::int64_t pos = oc[2 + i] * args.stride[i] - args.padding_lo[i] + sc[1 + i] * args.dilation[i];
        inside = inside && pos >= 0 && pos < input.extents[2 + i];
        xc[2 + i] = pos;
        wc[2 + i] = sc[1 + i];
      }
      const float x = inside ? read<float>(input, xc) : 0.0f;  // padding is +0.0
      const float w = read<float>(weight, wc);
      sum = __fadd_rn(sum, __fmul_rn(x, w));
    }
    out[o] = sum;
  }
}

Extents extents_of(const View& v) {
  Extents e;
  e.rank = v.rank;
  for (int k = 0; k < v.rank; ++k) {
    e.extents[k] = v.extents[k];
    e.count *= v.extents[k];
  }
  return e;
}

// The first (smallest logical ordinal) out-of-range index: atomicMin over
// the ordinals of the bad ones.
__global__ void check_indices_kernel(View indices, Extents shape, std::int64_t extent, unsigned long long* first) {
  SW_CUDA_FOR_EACH(p, shape.count) {
    std::int64_t c[kMaxRank];
    coordinates_of(p, shape, c);
    const std::int32_t i = read<std::int32_t>(indices, c);
    if (i < 0 || i >= extent) atomicMin(first, static_cast<unsigned long long>(p));
  }
}

__global__ void gather_kernel(View data, View indices, int axis, Extents result, float* out) {
  SW_CUDA_FOR_EACH(p, result.count) {
    std::int64_t c[kMaxRank];
    coordinates_of(p, result, c);
    const std::int32_t index = read<std::int32_t>(indices, c);
    c[axis] = index;
    out[p] = read<float>(data, c);
  }
}

// One result element per thread: data's element, then every position of
// indices that targets it, in logical order (the positions sharing its
// other coordinates, by ascending coordinate on the axis).
__global__ void scatter_kernel(View data, View indices, View src, int axis, bool add, Extents result, float* out) {
  SW_CUDA_FOR_EACH(o, result.count) {
    std::int64_t c[kMaxRank];
    coordinates_of(o, result, c);
    float v = read<float>(data, c);
    const std::int64_t target = c[axis];
    bool covered = true;
    for (int k = 0; k < indices.rank; ++k)
      if (k != axis && c[k] >= indices.extents[k]) covered = false;
    if (covered) {
      for (std::int64_t j = 0; j < indices.extents[axis]; ++j) {
        c[axis] = j;
        if (read<std::int32_t>(indices, c) != target) continue;
        const float s = read<float>(src, c);
        v = add ? __fadd_rn(v, s) : s;
      }
    }
    out[o] = v;
  }
}

}  // namespace

void launch_matmul(int device, const View& a, const View& b, const Extents& result, bool fused, float* out) {
  if (result.count == 0) return;
  matmul_kernel<<<blocks_for(result.count), kThreads, 0, on(device)>>>(a, b, result, fused, out);
  check_launch("matmul");
}

void launch_conv(int device, const View& input, const View& weight, const ConvArgs& args, const Extents& result,
                 float* out) {
  if (result.count == 0) return;
  conv_kernel<<<blocks_for(result.count), kThreads, 0, on(device)>>>(input, weight, args, result, out);
  check_launch("conv_general");
}

std::int64_t first_bad_index(int device, const View& indices, std::int64_t extent, std::int32_t* value) {
  const Extents shape = extents_of(indices);
  if (shape.count == 0) return -1;
  auto* first = static_cast<unsigned long long*>(allocate(device, sizeof(unsigned long long), /*empty=*/true));
  unsigned long long found = ~0ull;
  try {
    copy_to_device(device, first, &found, sizeof found);
    check_indices_kernel<<<blocks_for(shape.count), kThreads, 0, on(device)>>>(indices, shape, extent, first);
    check_launch("an index check");
    copy_to_host(device, &found, first, sizeof found);
  } catch (...) {
    release(device, first);
    throw;
  }
  release(device, first);
  if (found == ~0ull) return -1;
  // The offending value, read back from the device.
  std::int64_t c[kMaxRank];
  std::int64_t p = static_cast<std::int64_t>(found);
  for (int k = 0; k < shape.rank; ++k) {
    c[k] = p % shape.extents[k];
    p /= shape.extents[k];
  }
  std::int64_t at = indices.offset;
  for (int k = 0; k < indices.rank; ++k) {
    std::int64_t ck = c[k];
    for (int l = indices.leaf_begin[k]; l < indices.leaf_begin[k + 1]; ++l) {
      at += (ck % indices.leaf_extent[l]) * indices.leaf_stride[l];
      ck /= indices.leaf_extent[l];
    }
  }
  copy_to_host(device, value, static_cast<const std::int32_t*>(indices.base) + at, sizeof(std::int32_t));
  return static_cast<std::int64_t>(found);
}

void launch_gather(int device, const View& data, const View& indices, int axis, const Extents& result, float* out) {
  if (result.count == 0) return;
  gather_kernel<<<blocks_for(result.count), kThreads, 0, on(device)>>>(data, indices, axis, result, out);
  check_launch("gather");
}

void launch_scatter(int device, const View& data, const View& indices, const View& src, int axis, bool add,
                    float* out) {
  const Extents result = extents_of(data);
  if (result.count == 0) return;
  scatter_kernel<<<blocks_for(result.count), kThreads, 0, on(device)>>>(data, indices, src, axis, add, result, out);
  check_launch(add ? "scatter_add" : "scatter");
}

}  // namespace strideweave::cuda_carrier
