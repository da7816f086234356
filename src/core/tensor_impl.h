// Internal: the shared state behind a Tensor handle. Autograd (src/autograd)
// attaches its per-tensor state here.
#pragma once

#include <strideweave/tensor.h>

namespace strideweave::detail {

struct TensorImpl {
  std::shared_ptr<Carrier> carrier;
  std::int64_t offset = 0;
  Layout layout;
};

}  // namespace strideweave::detail
