// strideweave/ops/structured.h — matmul, conv_general, gather, scatter.
// Every function follows the front-end contract of <strideweave/ops.h>.
// Exact semantics, errors and accumulation orders: docs/operations/structured.md.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/output.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>
#include <strideweave/ops/option_defaults.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// matmul(a, b): numpy matmul semantics: rank >= 1; a 1-D operand is treated
// as a row (a) or column (b) vector and its axis removed from the result;
// leading batch axes broadcast. Mismatched contraction extents -> ValueError.
Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options = std::nullopt,
              const Output& out = {});

// Options of conv_general for d spatial axes. nullopt = the default.
//   stride:   d positive integers (default all 1);
//   padding:  d non-negative integers (symmetric) or 2d non-negative integers
//             (lo_1, hi_1, ..., lo_d, hi_d) (default all 0);
//   dilation: d positive integers (default all 1);
//   groups:   a positive integer dividing C_in and C_out (default 1).
// A list of another length or a value out of range is a ValueError.
struct ConvOptions {
  std::optional<std::vector<std::int64_t>> stride;
  std::optional<std::vector<std::int64_t>> padding;
  std::optional<std::vector<std::int64_t>> dilation;
  std::int64_t groups = detail::option_defaults::conv_general_groups;
};

// conv_general(input, weight, options): N-d cross-correlation like torch's
// convNd. input (N, C_in, S_1..S_d), weight (C_out, C_in/groups, K_1..K_d),
// d >= 1, every K_i >= 1. Result (N, C_out, O_1..O_d) with
//   O_i = floor((S_i + lo_i + hi_i - dilation_i*(K_i-1) - 1) / stride_i) + 1,
// which must be >= 0 (ValueError otherwise). Plan SEQUENTIAL_BINARY32: each
// result element sums, from +0.0, the binary32 products input*weight in the
// logical order of the weight slice (C_in/groups, K_1..K_d) (input channel
// fastest), rounding after each add. Padded positions are +0.0 inputs and
// take part in the products. Float32 operands only (TypeError otherwise).
Tensor conv_general(const Tensor& input, const Tensor& weight, const ConvOptions& options = {},
                    const Output& out = {});

// gather(data, indices, axis): torch.gather. data Float32, indices Int32, of
// equal rank; indices.extent(d) <= data.extent(d) for d != axis. The result
// has the indices' shape and out[p] = data[p with its axis coordinate replaced
// by indices[p]]. axis in [-rank, rank) (ValueError otherwise; rank 0 takes
// axis 0 or -1). An index outside [0, data.extent(axis)) -> IndexError,
// raised by the kernel (nothing is published).
Tensor gather(const Tensor& data, const Tensor& indices, std::int64_t axis, const Output& out = {});

// scatter(data, indices, src, axis): torch.scatter (fresh result; data is not
// modified). The result starts as a copy of data; then for every position p
// of indices in ascending logical order, result[p with axis := indices[p]] =
// src[p] (the last duplicate wins). data, indices and src have equal rank;
// indices.extent(d) <= src.extent(d) for every d and <= data.extent(d) for
// d != axis (ValueError otherwise); an out-of-range index -> IndexError.
Tensor scatter(const Tensor& data, const Tensor& indices, const Tensor& src, std::int64_t axis,
               const Output& out = {});

// scatter_add(data, indices, src, axis): as scatter, but result[...] +=
// src[p], each add one binary32 rounding, in ascending logical order of p,
// starting from the data element itself (SEQUENTIAL_BINARY32).
Tensor scatter_add(const Tensor& data, const Tensor& indices, const Tensor& src, std::int64_t axis,
                   const Output& out = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
