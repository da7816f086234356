// strideweave/ops/reductions.h — reductions, arg reductions, cumsum, sort, topk.
// Every function follows the front-end contract of <strideweave/ops.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// Options of the reductions. axes: nullopt = every axis; each axis in
// [-rank, rank), no duplicates (ValueError).
struct ReduceOptions {
  std::optional<std::vector<std::int64_t>> axes;
  bool keepdims = false;
};
// reduce_sum(x, axes, keepdims, options): options may select the Float64
// accumulator of the Float32 plan.
Tensor reduce_sum(const Tensor& x, ReduceOptions reduce = {},
                  const std::optional<OperationExecutionOptions>& options = std::nullopt);
inline Tensor reduce_sum(const Tensor& x, std::vector<std::int64_t> axes, bool keepdims = false,
                         const std::optional<OperationExecutionOptions>& options = std::nullopt) {
  return reduce_sum(x, ReduceOptions{std::move(axes), keepdims}, options);
}

}  // namespace strideweave
