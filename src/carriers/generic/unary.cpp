// Generic reference kernels: unary math and activations.
//
// Each Float32 function below is the reference meaning of its operation
// (docs/operations/unary.md): one binary32 operation per named step, in the
// order written, with the C library's float functions for the
// transcendentals. The operand arrives already converted to the plan's
// convert_to (an Int32 activation operand is rounded to Float32 by operand()).
#include <cmath>
#include <limits>

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

// The options of one call, already rounded to binary32 by the front end.
struct Options {
  float alpha = 1.0f, slope = 0.01f, beta = 1.0f, threshold = 20.0f;
  bool approximate = false;

  explicit Options(const Attributes& a) {
    if (a.has("alpha")) alpha = static_cast<float>(a.get<double>("alpha"));
    if (a.has("negative_slope")) slope = static_cast<float>(a.get<double>("negative_slope"));
    if (a.has("beta")) beta = static_cast<float>(a.get<double>("beta"));
    if (a.has("threshold")) threshold = static_cast<float>(a.get<double>("threshold"));
    if (a.has("approximate")) approximate = a.get<bool>("approximate");
  }
};

using Reference = float (*)(float, const Options&);

// One Float32 result per element, in logical order.
void elementwise(const KernelCall& call, Reference f) {
  const Options options(call.attributes);
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> c) {
    store(call.output, c, Value::from_float32(f(operand(call, 0, c).f, options)));
  });
}

float sigmoid_of(float x) {
  const float e = std::exp(-x);  // expf
  const float d = 1.0f + e;
  return 1.0f / d;
}

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// gelu and silu at -inf: the limit -0 (the formulas would give -inf * 0 = NaN).
float gelu_of(float x, bool approximate) {
  if (x == kMinusInf) return -0.0f;
  if (!approximate) {
    const float t = x * 0.70710678118654752f;  // 1/sqrt(2) as binary32: 0.70710677f
    const float e = std::erf(t);
    const float s = 1.0f + e;
    const float h = 0.5f * x;
    return h * s;
  }
  const float x2 = x * x;
  const float x3 = x2 * x;
  const float k = 0.044715f * x3;
  const float u = x + k;
  const float v = 0.79788456080286536f * u;  // sqrt(2/pi) as binary32: 0.7978846f
  const float th = std::tanh(v);
  const float s = 1.0f + th;
  const float h = 0.5f * x;
  return h * s;
}

}  // namespace

void add_unary_kernels(ReferenceKernels& kernels) {
  using Op = policy::OperationId;
  kernels[Op::relu] = relu;
  auto define = [&](Op id, Reference f) {
    kernels[id] = [f](const KernelCall& call) { elementwise(call, f); };
  };
  // ---- activations
  define(Op::elu, [](float x, const Options& o) { return x > 0.0f ? x : o.alpha * std::expm1(x); });
  define(Op::exp, [](float x, const Options&) { return std::exp(x); });
  define(Op::gelu, [](float x, const Options& o) { return gelu_of(x, o.approximate); });
  define(Op::leaky_relu, [](float x, const Options& o) { return x > 0.0f ? x : x * o.slope; });
  define(Op::sigmoid, [](float x, const Options&) { return sigmoid_of(x); });
  define(Op::silu, [](float x, const Options&) { return x == kMinusInf ? -0.0f : x * sigmoid_of(x); });
  define(Op::softplus, [](float x, const Options& o) {
    const float p = x * o.beta;
    if (p > o.threshold) return x;
    const float e = std::exp(p);
    const float l = std::log1p(e);
    return l / o.beta;
  });
  define(Op::tanh, [](float x, const Options&) { return std::tanh(x); });
  // ---- math
  define(Op::neg, [](float x, const Options&) { return -x; });
  define(Op::abs, [](float x, const Options&) { return std::fabs(x); });
  define(Op::sign, [](float x, const Options&) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; });
  define(Op::recip, [](float x, const Options&) { return 1.0f / x; });
  define(Op::sqrt, [](float x, const Options&) { return std::sqrt(x); });
  define(Op::rsqrt, [](float x, const Options&) {
    const float r = std::sqrt(x);
    return 1.0f / r;
  });
  define(Op::exp2, [](float x, const Options&) { return std::exp2(x); });
  define(Op::log, [](float x, const Options&) { return std::log(x); });
  define(Op::log2, [](float x, const Options&) { return std::log2(x); });
  define(Op::sin, [](float x, const Options&) { return std::sin(x); });
  define(Op::cos, [](float x, const Options&) { return std::cos(x); });
  define(Op::erf, [](float x, const Options&) { return std::erf(x); });
  define(Op::floor, [](float x, const Options&) { return std::floor(x); });
  define(Op::ceil, [](float x, const Options&) { return std::ceil(x); });
  // Ties to even under the default rounding mode (never changed here).
  define(Op::round, [](float x, const Options&) { return std::nearbyint(x); });
}

}  // namespace strideweave::carriers::generic
