// Generic reference kernels: matmul, conv_general, gather, scatter.
#include "carriers/generic/reference.h"

#include <cmath>

namespace strideweave::carriers::generic {
namespace {

// ---- matmul over aligned operands (..., M, K) x (..., K, N): each result
// element sums its products in ascending k, each product rounded to binary32
// (BINARY32) before it is added in the accumulator dtype. The contracted
// plan (BINARY32_FUSED, Float32 accumulator) instead rounds once per step:
// sum = fma(x, y, sum), still in ascending k.

void matmul(const KernelCall& call) {
  const Tensor& a = call.tensor(0);
  const Tensor& b = call.tensor(1);
  const std::size_t r = a.rank();
  const std::int64_t k_extent = a.shape().extent(r - 1);
  const bool exact = call.plan.accumulation() == Accumulation::EXACT_INTEGER;
  const bool wide = call.plan.accumulator_dtype() == &DType::Float64();
  const bool fused = call.plan.compute() == Arithmetic::BINARY32_FUSED;
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
      } else if (fused) {
        f32_sum = std::fma(x.f, y.f, f32_sum);  // fmaf: one rounding per multiply-add
      } else {
        const float product = x.f * y.f;
        if (wide) f64_sum += static_cast<double>(product);
        else f32_sum += product;
      }
    }
    if (exact)
      store(call.output, oc,
            Value::from_int32(narrow_int32(exact_sum, "matmul", logical_ordinal(call.output.shape().extents(), oc))));
    else store(call.output, oc, Value::from_float32(wide ? static_cast<float>(f64_sum) : f32_sum));
  });
}

// ---- conv_general over input (N, C_in, S...) and weight (C_out, C_in/g, K...):
// each result element (n, co, o...) sums from +0.0, in the logical order of
// the weight slice (ci, k_1..k_d) (ci fastest), the binary32 products
// x * w, rounding after each add. A padded position contributes x = +0.0.

void conv_general(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  const auto& stride = call.attributes.get<std::vector<std::int64_t>>("stride");
  const auto& lo = call.attributes.get<std::vector<std::int64_t>>("padding_lo");
  const auto& dilation = call.attributes.get<std::vector<std::int64_t>>("dilation");
  const std::int64_t groups = call.attributes.get<std::int64_t>("groups");
  const std::size_t d = input.rank() - 2;
  const std::int64_t c_out_per_group = weight.shape().extent(0) / groups;
  // The weight slice of one output channel: (C_in/groups, K_1..K_d).
  std::vector<std::int64_t> slice(weight.shape().extents().begin() + 1, weight.shape().extents().end());
  std::vector<std::int64_t> xc(input.rank()), wc(weight.rank());
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> oc) {
    const std::int64_t co = oc[1];
    const std::int64_t group = co / c_out_per_group;
    xc[0] = oc[0];
    wc[0] = co;
    float sum = 0.0f;
    for_each_coordinate(slice, [&](std::span<const std::int64_t> sc) {
      const std::int64_t ci = sc[0];
      xc[1] = group * slice[0] + ci;
      wc[1] = ci;
      bool inside = true;
      for (std::size_t i = 0; i < d; ++i) {
        const std::int64_t pos = oc[2 + i] * stride[i] - lo[i] + sc[1 + i] * dilation[i];
        inside = inside && pos >= 0 && pos < input.shape().extent(2 + i);
        xc[2 + i] = pos;
        wc[2 + i] = sc[1 + i];
      }
      const float x = inside ? operand(call, 0, xc).f : 0.0f;  // padding is +0.0
      const float w = operand(call, 1, wc).f;
      const float product = x * w;  // rounded to binary32
      sum = sum + product;          // rounded to binary32
    });
    store(call.output, oc, Value::from_float32(sum));
  });
}

// ---- gather / scatter / scatter_add: the axis coordinate of position p is
// replaced by indices[p]; an index outside [0, extent) is an IndexError
// (the first one in logical order is reported).

std::int64_t checked_index(std::string_view op, std::int32_t index, std::int64_t axis, std::int64_t extent) {
  if (index < 0 || index >= extent)
    throw IndexError(fmt::format("{}: index {} is out of range for axis {} of extent {}", op, index, axis, extent));
  return index;
}

void gather(const KernelCall& call) {
  const Tensor& data = call.tensor(0);
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  const std::int64_t extent = data.shape().extent(axis);
  std::vector<std::int64_t> dc(data.rank());
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> p) {
    std::copy(p.begin(), p.end(), dc.begin());
    dc[axis] = checked_index("gather", operand(call, 1, p).i, static_cast<std::int64_t>(axis), extent);
    store(call.output, p, operand(call, 0, dc));
  });
}

void scatter_into(const KernelCall& call, bool add) {
  const Tensor& data = call.tensor(0);
  const Tensor& indices = call.tensor(1);
  const std::string_view op = add ? "scatter_add" : "scatter";
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  const std::int64_t extent = data.shape().extent(axis);
  // The result starts as a copy of data.
  for_each_coordinate(data.shape().extents(), [&](std::span<const std::int64_t> c) {
    store(call.output, c, operand(call, 0, c));
  });
  std::vector<std::int64_t> rc(data.rank());
  for_each_coordinate(indices.shape().extents(), [&](std::span<const std::int64_t> p) {
    std::copy(p.begin(), p.end(), rc.begin());
    rc[axis] = checked_index(op, operand(call, 1, p).i, static_cast<std::int64_t>(axis), extent);
    const float v = operand(call, 2, p).f;
    if (add) store(call.output, rc, Value::from_float32(call.output.at(rc).f + v));  // one binary32 rounding
    else store(call.output, rc, Value::from_float32(v));
  });
}

void scatter(const KernelCall& call) { scatter_into(call, false); }
void scatter_add(const KernelCall& call) { scatter_into(call, true); }

}  // namespace

void add_structured_kernels(ReferenceKernels& kernels) {
  using Op = policy::OperationId;
  kernels[Op::matmul] = matmul;
  kernels[Op::conv_general] = conv_general;
  kernels[Op::gather] = gather;
  kernels[Op::scatter] = scatter;
  kernels[Op::scatter_add] = scatter_add;
}

}  // namespace strideweave::carriers::generic
