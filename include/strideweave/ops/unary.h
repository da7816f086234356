// strideweave/ops/unary.h — unary math and activations.
// Every function follows the front-end contract of <strideweave/ops.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// relu(x) = x > 0 ? x : +0 (NaN propagates; -0 becomes +0); Int32 stays Int32.
Tensor relu(const Tensor& x);

}  // namespace strideweave
