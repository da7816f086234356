// Generic reference kernels: elementwise arithmetic, comparisons, clamp and
// select.
#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

// ---- elementwise

using FloatBinary = float (*)(float, float);
using ExactBinary = int128 (*)(int128, int128);
struct BinaryMath {
  FloatBinary f;
  ExactBinary exact;
};

void elementwise_binary(const KernelCall& call, BinaryMath math) {
  const std::string& op = call.plan.operation();
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> c) {
    const Value a = operand(call, 0, c), b = operand(call, 1, c);
    if (call.plan.compute() == Arithmetic::BINARY32) {
      store(call.output, c, Value::from_float32(math.f(a.f, b.f)));
    } else {
      store(call.output, c, Value::from_int32(narrow_int32(math.exact(a.i, b.i), op)));
    }
  });
}

}  // namespace

void add_arithmetic_kernels(ReferenceKernels& kernels) {
  kernels["add"] = [](const KernelCall& c) {
    elementwise_binary(c, {[](float x, float y) { return x + y; }, [](int128 x, int128 y) { return x + y; }});
  };
  const KernelFn product = [](const KernelCall& c) {
    elementwise_binary(c, {[](float x, float y) { return x * y; }, [](int128 x, int128 y) { return x * y; }});
  };
  kernels["elementwise_mul"] = product;
  kernels["mul"] = product;
}

}  // namespace strideweave::carriers::generic
