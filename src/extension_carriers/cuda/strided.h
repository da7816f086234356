// Internal: the kernels' views of a lowered built-in call's operands
// (kernels.h), built from public types only.
//
// merged_grid() describes an elementwise call's result grid and each
// operand over it with the fewest modes: the leaves of the result shape
// (first mode fastest), extent-1 leaves dropped, and two adjacent leaves
// merged when every tensor operand continues across them (the compact
// result always does). The lowering gave every tensor operand the result's
// shape (a broadcast view where needed); a weak scalar is passed by value.
//
// view_of() describes one tensor for the kernels that index by top-level
// coordinates (reductions, lines, matmul, conv, gather, scatter), nesting
// kept.
#pragma once

#include <strideweave/carriers/cuda.h>
#include <strideweave/execution.h>
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

inline const void* device_base(const Tensor& t) { return static_cast<const CUDA&>(*t.carrier()).device_data(); }

// nullopt when more than kMaxModes modes remain after merging (the caller
// declines the call: Unsupported).
template <std::size_t N>
std::optional<MergedCall<N>> merged_grid(const Shape& shape, std::span<const KernelOperand> operands) {
  const std::vector<std::int64_t> extents = shape.as_tuple().leaves();
  std::array<std::vector<std::int64_t>, N> strides;
  MergedCall<N> call;
  for (std::size_t j = 0; j < N; ++j) {
    if (const Value* v = std::get_if<Value>(&operands[j])) {
      call.operands[j].scalar = true;
      call.operands[j].value = v->f;
      strides[j].assign(extents.size(), 0);
      continue;
    }
    const Tensor& t = std::get<Tensor>(operands[j]);
    const Tensor view = t.shape() == shape ? t : t.broadcast_to(shape);
    strides[j] = leaf_strides(view.layout());
    call.operands[j].base = device_base(t);
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

// nullopt when the tensor has more than kMaxRank modes or kMaxLeaves leaves.
inline std::optional<View> view_of(const Tensor& t) {
  View v;
  const Layout& layout = t.layout();
  if (layout.shape().rank() > static_cast<std::size_t>(kMaxRank)) return std::nullopt;
  v.base = device_base(t);
  v.offset = t.offset();
  v.rank = static_cast<int>(layout.shape().rank());
  int leaf = 0;
  for (int k = 0; k < v.rank; ++k) {
    v.extents[k] = layout.shape().extent(static_cast<std::size_t>(k));
    v.leaf_begin[k] = leaf;
    const std::vector<std::int64_t> extents = layout.shape().modes()[static_cast<std::size_t>(k)].leaves();
    const std::vector<std::int64_t> strides = layout.stride().modes()[static_cast<std::size_t>(k)].leaves();
    for (std::size_t l = 0; l < extents.size(); ++l) {
      if (leaf == kMaxLeaves) return std::nullopt;
      v.leaf_extent[leaf] = extents[l];
      v.leaf_stride[leaf] = strides[l];
      ++leaf;
    }
  }
  v.leaf_begin[v.rank] = leaf;
  return v;
}

// nullopt past kMaxRank.
inline std::optional<Extents> extents_of(const Shape& shape) {
  Extents e;
  if (shape.rank() > static_cast<std::size_t>(kMaxRank)) return std::nullopt;
  e.rank = static_cast<int>(shape.rank());
  for (int k = 0; k < e.rank; ++k) {
    e.extents[k] = shape.extent(static_cast<std::size_t>(k));
    e.count *= e.extents[k];
  }
  return e;
}

}  // namespace strideweave::cuda_carrier
