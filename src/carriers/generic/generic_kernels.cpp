// Generic's kernels: the reference execution of the central plans. Each
// kernel walks the result in logical order (first mode fastest), reads every
// operand through Tensor::at and computes exactly what the plan says, one
// element at a time. Slow and obvious on purpose (STYLE.md habit 6).
#include "carriers/generic/generic_kernels.h"

#include <strideweave/carriers/generic.h>
#include <strideweave/execution.h>

#include <functional>
#include <map>

#include "carriers/generic/reference_math.h"

namespace strideweave::carriers::generic {
namespace {

// Calls f(coordinate) for every coordinate of `extents` in logical order.
template <class F>
void for_each_coordinate(std::span<const std::int64_t> extents, F&& f) {
  std::int64_t total = 1;
  for (std::int64_t e : extents) total *= e;
  std::vector<std::int64_t> c(extents.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t rest = k;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      c[i] = rest % extents[i];
      rest /= extents[i];
    }
    f(std::span<const std::int64_t>(c));
  }
}

void store(const Tensor& out, std::span<const std::int64_t> coordinate, const Value& v) {
  static_cast<Generic&>(*out.carrier()).slot(out.offset() + out.layout()(coordinate)) = v;
}

Value operand(const KernelCall& call, std::size_t i, std::span<const std::int64_t> coordinate) {
  const OperandPlan& p = call.plan.operands()[i];
  if (p.role() == OperandRole::WEAK_SCALAR) return call.scalar(i);
  return convert(call.tensor(i).at(coordinate), p.convert_to());
}

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

// The operations Generic executes, each for every plan the registry resolves
// for it.
const std::map<std::string, KernelFn>& kernels_by_operation() {
  static const std::map<std::string, KernelFn> table = {
      {"add", [](const KernelCall& c) {
         elementwise_binary(c, {[](float x, float y) { return x + y; }, [](int128 x, int128 y) { return x + y; }});
       }},
      {"elementwise_mul", [](const KernelCall& c) {
         elementwise_binary(c, {[](float x, float y) { return x * y; }, [](int128 x, int128 y) { return x * y; }});
       }},
      {"mul", [](const KernelCall& c) {
         elementwise_binary(c, {[](float x, float y) { return x * y; }, [](int128 x, int128 y) { return x * y; }});
       }},
      {"relu", relu},
      {"reduce_sum", reduce_sum},
      {"matmul", matmul},
  };
  return table;
}

}  // namespace

void register_generic() {
  KernelTable table;
  const auto& kernels = kernels_by_operation();
  for (const OperationPlan& plan : resolvable_plans()) {
    auto it = kernels.find(plan.operation());
    if (it != kernels.end()) table.add(plan, it->second);
  }
  register_kernel_table(carrier_class<Generic>(), "Generic", std::move(table));
}

}  // namespace strideweave::carriers::generic
