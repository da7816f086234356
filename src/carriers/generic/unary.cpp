// Generic reference kernels: unary math and activations.
#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

void relu(const KernelCall& call) {
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> c) {
    const Value x = operand(call, 0, c);
    if (call.plan.compute() == Arithmetic::BINARY32) {
      // NaN propagates; -0 and negatives become +0.
      store(call.output, c, Value::from_float32(x.f > 0.0f || x.f != x.f ? x.f : 0.0f));
    } else {
      store(call.output, c, Value::from_int32(x.i > 0 ? x.i : 0));
    }
  });
}

}  // namespace

void add_unary_kernels(ReferenceKernels& kernels) {
  kernels["relu"] = relu;
}

}  // namespace strideweave::carriers::generic
