// Internal: the kernels' view of an elementwise call's operands (kernels.h).
//
// merged_grid() describes the result grid and each operand over it with
// the fewest modes: the leaves of the result shape (first mode fastest),
// extent-1 leaves dropped, and two adjacent leaves merged when every
// operand continues across them (the compact result always does) (stride of the
// next = extent * stride of this one). An operand whose shape is not the
// result's is read through its broadcast view (stride 0 on broadcast
// modes). Public headers only.
#pragma once

#include <strideweave/carriers/cuda.h>
#include <strideweave/tensor.h>

#include "extension_carriers/cuda/kernels.h"

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace strideweave::cuda_carrier {

template <std::size_t N>
struct MergedCall {
  Grid grid;
  std::array<Strided, N> operands;
};

// The strides of `layout`'s leaves, depth first.
inline std::vector<std::int64_t> leaf_strides(const Layout& layout) {
  std::vector<std::int64_t> out;
  for (const IntTuple& mode : layout.stride().modes()) {
    const std::vector<std::int64_t> leaves = mode.leaves();
    out.insert(out.end(), leaves.begin(), leaves.end());
  }
  return out;
}

// nullopt when more than kMaxModes modes remain after merging (the caller
// declines the call: Unsupported).
template <std::size_t N>
std::optional<MergedCall<N>> merged_grid(const Shape& shape, const std::array<const Tensor*, N>& tensors) {
  const std::vector<std::int64_t> extents = shape.as_tuple().leaves();
  std::array<std::vector<std::int64_t>, N> strides;
  MergedCall<N> call;
  for (std::size_t j = 0; j < N; ++j) {
    const Tensor& t = *tensors[j];
    const Tensor view = t.shape() == shape ? t : t.broadcast_to(shape);
    strides[j] = leaf_strides(view.layout());
    call.operands[j].base = static_cast<const CUDA&>(*t.carrier()).device_data();
    call.operands[j].offset = view.offset();
  }
  std::int64_t count = 1;
  for (std::int64_t e : extents) count *= e;
  call.grid.count = count;
  int modes = 0;
  for (std::size_t k = 0; k < extents.size(); ++k) {
    const std::int64_t e = extents[k];
    if (e == 1) continue;
    if (modes > 0) {
      const std::int64_t previous = call.grid.extents[modes - 1];
      bool merge = true;
      for (std::size_t j = 0; j < N && merge; ++j)
        merge = strides[j][k] == previous * call.operands[j].strides[modes - 1];
      if (merge) {
        call.grid.extents[modes - 1] = previous * e;
        continue;
      }
    }
    if (modes == kMaxModes) return std::nullopt;
    call.grid.extents[modes] = e;
    for (std::size_t j = 0; j < N; ++j) call.operands[j].strides[modes] = strides[j][k];
    ++modes;
  }
  call.grid.modes = modes;
  return call;
}

}  // namespace strideweave::cuda_carrier
