// The CUDA carrier's reductions, cumsum, sort and topk (kernels.h): each
// is Generic's reference (src/carriers/generic/reductions.cpp) for one
// result element or one line per thread, in the same order, so results are
// Generic's bit for bit and do not depend on the launch configuration.
#include "extension_carriers/cuda/device_views.h"
#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace strideweave::cuda_carrier {
namespace {


// One result element: its block of x visited in logical order (first reduced
// axis fastest).
__global__ void reduce_kernel(ReduceOp op, View x, ReduceArgs args, Extents result, void* out) {
  const bool maximum = op == ReduceOp::max || op == ReduceOp::argmax;
  SW_CUDA_FOR_EACH(o, result.count) {
    std::int64_t oc[kMaxRank];
    coordinates_of(o, result, oc);
    // The full coordinate: kept axes from the result coordinate (at the same
    // position with keepdims, else in order), reduced axes from 0.
    std::int64_t full[kMaxRank];
    std::int64_t block = 1;
    int j = 0;
    for (int k = 0; k < x.rank; ++k) {
      if (args.reduced[k]) {
        full[k] = 0;
        block *= x.extents[k];
      } else {
        full[k] = oc[args.keepdims ? k : j];
        ++j;
      }
    }
    float sum = 0.0f, product = 1.0f, winner = 0.0f;
    std::int64_t at = 0;
    for (std::int64_t ordinal = 0; ordinal < block; ++ordinal) {
      const float v = read<float>(x, full);
      switch (op) {
        case ReduceOp::sum: sum = __fadd_rn(sum, v); break;
        case ReduceOp::prod: product = __fmul_rn(product, v); break;
        default:  // the extrema and arg-extrema: the first winner stays
          if (ordinal == 0 || (maximum ? max_replaces(winner, v) : min_replaces(winner, v))) {
            winner = v;
            at = ordinal;
          }
          break;
      }
      // The next coordinate of the block (first reduced axis fastest).
      for (int k = 0; k < x.rank; ++k) {
        if (!args.reduced[k]) continue;
        if (++full[k] < x.extents[k]) break;
        full[k] = 0;
      }
    }
    switch (op) {
      case ReduceOp::sum: static_cast<float*>(out)[o] = sum; break;
      case ReduceOp::prod: static_cast<float*>(out)[o] = product; break;
      case ReduceOp::max:
      case ReduceOp::min: static_cast<float*>(out)[o] = winner; break;
      case ReduceOp::argmax:
      case ReduceOp::argmin: static_cast<std::int32_t*>(out)[o] = static_cast<std::int32_t>(at); break;
    }
  }
}

// The lines along `axis`: line l is the l-th coordinate (logical order) of
// x's extents with the axis extent set to 1.
__device__ __forceinline__ void line_start(const View& x, int axis, std::int64_t l, std::int64_t* c) {
  for (int k = 0; k < x.rank; ++k) {
    if (k == axis) {
      c[k] = 0;
      continue;
    }
    c[k] = l % x.extents[k];
    l /= x.extents[k];
  }
}
// The compact offset of coordinate c over `extents` (first mode fastest).
__device__ __forceinline__ std::int64_t compact_offset(const std::int64_t* extents, int rank, const std::int64_t* c) {
  std::int64_t at = 0, stride = 1;
  for (int k = 0; k < rank; ++k) {
    at += c[k] * stride;
    stride *= extents[k];
  }
  return at;
}

__global__ void cumsum_kernel(View x, int axis, std::int64_t lines, float* out) {
  SW_CUDA_FOR_EACH(l, lines) {
    std::int64_t c[kMaxRank];
    line_start(x, axis, l, c);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < x.extents[axis]; ++j) {
      c[axis] = j;
      sum = __fadd_rn(sum, read<float>(x, c));
      out[compact_offset(x.extents, x.rank, c)] = sum;
    }
  }
}

// Per line: a stable bottom-up merge sort of the positions 0..n-1 (scratch:
// two runs of n positions per line), then the first `count` written.
__global__ void sort_kernel(View x, int axis, bool descending, std::int64_t count, bool indices, std::int64_t lines,
                            std::int64_t* scratch, void* out) {
  const std::int64_t n = x.extents[axis];
  std::int64_t out_extents[kMaxRank];
  for (int k = 0; k < x.rank; ++k) out_extents[k] = k == axis ? count : x.extents[k];
  SW_CUDA_FOR_EACH(l, lines) {
    std::int64_t c[kMaxRank];
    line_start(x, axis, l, c);
    std::int64_t* a = scratch + 2 * n * l;
    std::int64_t* b = a + n;
    for (std::int64_t j = 0; j < n; ++j) a[j] = j;
    const auto value_at = [&](std::int64_t j) {
      c[axis] = j;
      return read<float>(x, c);
    };
    // before(p, q): p's element sorts strictly before q's.
    const auto before = [&](std::int64_t p, std::int64_t q) {
      const float vp = value_at(p), vq = value_at(q);
      return descending ? sorts_before(vq, vp) : sorts_before(vp, vq);
    };
    for (std::int64_t width = 1; width < n; width *= 2) {
      for (std::int64_t lo = 0; lo < n; lo += 2 * width) {
        const std::int64_t mid = lo + width < n ? lo + width : n;
        const std::int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
        std::int64_t i = lo, k = mid, w = lo;
        // Stable: the right run's element goes first only when strictly before.
        while (i < mid && k < hi) b[w++] = before(a[k], a[i]) ? a[k++] : a[i++];
        while (i < mid) b[w++] = a[i++];
        while (k < hi) b[w++] = a[k++];
      }
      std::int64_t* t = a;
      a = b;
      b = t;
    }
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int64_t from = a[j];
      c[axis] = j;
      const std::int64_t to = compact_offset(out_extents, x.rank, c);
      if (indices) {
        static_cast<std::int32_t*>(out)[to] = static_cast<std::int32_t>(from);
      } else {
        c[axis] = from;
        static_cast<float*>(out)[to] = read<float>(x, c);
      }
    }
  }
}

std::int64_t lines_of(const View& x, int axis) {
  std::int64_t lines = 1;
  for (int k = 0; k < x.rank; ++k)
    if (k != axis) lines *= x.extents[k];
  return lines;
}

}  // namespace

void launch_reduce(int device, ReduceOp op, const View& x, const ReduceArgs& args, const Extents& result, void* out) {
  if (result.count == 0) return;
  reduce_kernel<<<blocks_for(result.count), kThreads, 0, on(device)>>>(op, x, args, result, out);
  check_launch("a reduction");
}

void launch_cumsum(int device, const View& x, int axis, float* out) {
  const std::int64_t lines = lines_of(x, axis);
  if (lines == 0 || x.extents[axis] == 0) return;
  cumsum_kernel<<<blocks_for(lines), kThreads, 0, on(device)>>>(x, axis, lines, out);
  check_launch("cumsum");
}

void launch_sort(int device, const View& x, int axis, bool descending, std::int64_t count, bool indices, void* out) {
  const std::int64_t lines = lines_of(x, axis);
  const std::int64_t n = x.extents[axis];
  if (lines == 0 || count == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(2 * n * lines) * sizeof(std::int64_t);
  void* scratch = allocate(device, bytes, /*empty=*/true);
  try {
    sort_kernel<<<blocks_for(lines), kThreads, 0, on(device)>>>(x, axis, descending, count, indices, lines,
                                                              static_cast<std::int64_t*>(scratch), out);
    check_launch("sort");
  } catch (...) {
    release(device, scratch);
    throw;
  }
  release(device, scratch);  // cudaFree waits for the kernel
}

}  // namespace strideweave::cuda_carrier
