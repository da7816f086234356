// Internal: the kernels' views of a lowered built-in call's operands
// (kernels.h), built from public types only.
//
// merged_grid() describes an elementwise call's result grid and each
// operand over it with the fewest modes: the top-level modes of the kernel
// shape (first mode fastest), extent-1 modes dropped, and two adjacent modes
// merged when every tensor operand continues across them (the compact
// result always does); an operand's mode is its leaves coalesced to one
// stride, and an operand whose mode does not coalesce is reported so that
// the caller copies it compact first. The lowering gave every tensor operand the result's
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

#include <algorithm>
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
  // >= 0: that operand has a hierarchical mode whose leaves do not coalesce
  // to one stride; it must be copied compact first (launch_copy), and
  // `grid` and `operands` are not set.
  int nested = -1;
};

// A CUDA tensor's device memory (null for another class: the host tests of
// these views use CPU tensors).
inline const void* device_base(const Tensor& t) {
  const auto* c = dynamic_cast<const CUDA*>(t.carrier().get());
  return c ? c->device_data() : nullptr;
}

// The one element stride of top-level mode k of `layout` (its leaves, first
// fastest, coalesced: extent-1 leaves dropped, a leaf continuing the run
// merged), 0 for a mode of extent <= 1, or nullopt when the mode's leaves do
// not coalesce to one stride.
inline std::optional<std::int64_t> mode_stride(const Layout& layout, std::size_t k) {
  const std::vector<std::int64_t> extents = layout.shape().modes()[k].leaves();
  const std::vector<std::int64_t> strides = layout.stride().modes()[k].leaves();
  std::int64_t stride = 0, span = 0;
  for (std::size_t l = 0; l < extents.size(); ++l) {
    if (extents[l] == 1) continue;
    if (span == 0) {
      stride = strides[l];
      span = extents[l];
    } else if (strides[l] == stride * span) {
      span *= extents[l];
    } else {
      return std::nullopt;
    }
  }
  return stride;
}

// nullopt when more than kMaxModes modes remain after merging (the caller
// declines the call: Unsupported). `shape` is the kernel shape, whose
// top-level modes every tensor operand shares (the lowering broadcast it).
template <std::size_t N>
std::optional<MergedCall<N>> merged_grid(const Shape& shape, std::span<const KernelOperand> operands) {
  const std::size_t rank = shape.rank();
  std::array<std::vector<std::int64_t>, N> strides;
  MergedCall<N> call;
  for (std::size_t j = 0; j < N; ++j) {
    if (const Value* v = std::get_if<Value>(&operands[j])) {
      call.operands[j].scalar = true;
      call.operands[j].value = v->f;
      strides[j].assign(rank, 0);
      continue;
    }
    const Tensor& t = std::get<Tensor>(operands[j]);
    const Tensor view = std::ranges::equal(t.shape().extents(), shape.extents()) ? t : t.broadcast_to(shape);
    for (std::size_t k = 0; k < rank; ++k) {
      const std::optional<std::int64_t> s = mode_stride(view.layout(), k);
      if (!s) {
        call.nested = static_cast<int>(j);
        return call;
      }
      strides[j].push_back(*s);
    }
    call.operands[j].base = device_base(t);
    call.operands[j].offset = view.offset();
  }
  std::int64_t count = 1;
  for (std::size_t k = 0; k < rank; ++k) count *= shape.extent(k);
  call.grid.count = count;
  int modes = 0;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t e = shape.extent(k);
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
