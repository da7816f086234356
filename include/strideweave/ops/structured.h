// strideweave/ops/structured.h — matmul, conv_general, gather, scatter.
// Every function follows the front-end contract of <strideweave/ops.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// matmul(a, b): numpy matmul semantics: rank >= 1; a 1-D operand is treated
// as a row (a) or column (b) vector and its axis removed from the result;
// leading batch axes broadcast. Mismatched contraction extents -> ValueError.
Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options = std::nullopt);

}  // namespace strideweave
