// Generic reference kernels: reductions, arg reductions, cumsum, sort, topk.
#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

// ---- reduce_sum: for each result element, the reduced coordinates in
// logical order (first reduced axis fastest), sequentially from +0.

void reduce_sum(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  const auto& axes = call.attributes.get<std::vector<std::int64_t>>("axes");
  const bool keepdims = call.attributes.get<bool>("keepdims");
  std::vector<std::int64_t> reduced_extents, kept_axes;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end())
      reduced_extents.push_back(x.shape().extent(i));
    else
      kept_axes.push_back(static_cast<std::int64_t>(i));
  }
  const bool exact = call.plan.accumulation() == Accumulation::EXACT_INTEGER;
  const bool wide = call.plan.accumulator_dtype() == &DType::Float64();
  std::vector<std::int64_t> full(x.rank());
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> oc) {
    // Place the kept coordinates.
    for (std::size_t j = 0; j < kept_axes.size(); ++j)
      full[static_cast<std::size_t>(kept_axes[j])] = oc[keepdims ? static_cast<std::size_t>(kept_axes[j]) : j];
    int128 exact_sum = 0;
    float f32_sum = 0.0f;
    double f64_sum = 0.0;
    for_each_coordinate(reduced_extents, [&](std::span<const std::int64_t> rc) {
      for (std::size_t j = 0; j < axes.size(); ++j) full[static_cast<std::size_t>(axes[j])] = rc[j];
      const Value v = convert(x.at(full), call.plan.operands()[0].convert_to());
      if (exact) exact_sum += v.i;
      else if (wide) f64_sum += static_cast<double>(v.f);
      else f32_sum += v.f;
    });
    if (exact) store(call.output, oc, Value::from_int32(narrow_int32(exact_sum, "reduce_sum")));
    else store(call.output, oc, Value::from_float32(wide ? static_cast<float>(f64_sum) : f32_sum));
  });
}

}  // namespace

void add_reduction_kernels(ReferenceKernels& kernels) {
  kernels["reduce_sum"] = reduce_sum;
}

}  // namespace strideweave::carriers::generic
