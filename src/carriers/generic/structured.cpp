// Generic reference kernels: matmul, conv_general, gather, scatter.
#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

// ---- matmul over aligned operands (..., M, K) x (..., K, N): each result
// element sums its products in ascending k, each product rounded to binary32
// (BINARY32) before it is added in the accumulator dtype.

void matmul(const KernelCall& call) {
  const Tensor& a = call.tensor(0);
  const Tensor& b = call.tensor(1);
  const std::size_t r = a.rank();
  const std::int64_t k_extent = a.shape().extent(r - 1);
  const bool exact = call.plan.accumulation() == Accumulation::EXACT_INTEGER;
  const bool wide = call.plan.accumulator_dtype() == &DType::Float64();
  std::vector<std::int64_t> ca(r), cb(r);
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> oc) {
    std::copy(oc.begin(), oc.end(), ca.begin());
    std::copy(oc.begin(), oc.end(), cb.begin());
    int128 exact_sum = 0;
    float f32_sum = 0.0f;
    double f64_sum = 0.0;
    for (std::int64_t k = 0; k < k_extent; ++k) {
      ca[r - 1] = k;
      cb[r - 2] = k;
      const Value x = convert(a.at(ca), call.plan.operands()[0].convert_to());
      const Value y = convert(b.at(cb), call.plan.operands()[1].convert_to());
      if (exact) {
        exact_sum += static_cast<int128>(x.i) * y.i;
      } else {
        const float product = x.f * y.f;
        if (wide) f64_sum += static_cast<double>(product);
        else f32_sum += product;
      }
    }
    if (exact) store(call.output, oc, Value::from_int32(narrow_int32(exact_sum, "matmul")));
    else store(call.output, oc, Value::from_float32(wide ? static_cast<float>(f64_sum) : f32_sum));
  });
}

}  // namespace

void add_structured_kernels(ReferenceKernels& kernels) {
  kernels["matmul"] = matmul;
}

}  // namespace strideweave::carriers::generic
