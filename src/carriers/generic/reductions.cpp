// Generic reference kernels: reductions, arg reductions, cumsum, sort, topk.
// Semantics: docs/operations/reductions.md.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

// ---- The reduced block of each result element: for every result coordinate
// (in logical order), visit(f) calls f(value, ordinal) for the reduced
// coordinates in logical order (first reduced axis fastest), ordinal counting
// from 0 within the block. Values are converted to the plan's convert_to.

template <class PerResult>
void for_each_block(const KernelCall& call, PerResult&& per_result) {
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
  std::vector<std::int64_t> full(x.rank());
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> oc) {
    for (std::size_t j = 0; j < kept_axes.size(); ++j)
      full[static_cast<std::size_t>(kept_axes[j])] = oc[keepdims ? static_cast<std::size_t>(kept_axes[j]) : j];
    auto visit = [&](auto&& f) {
      std::int64_t ordinal = 0;
      for_each_coordinate(reduced_extents, [&](std::span<const std::int64_t> rc) {
        for (std::size_t j = 0; j < axes.size(); ++j) full[static_cast<std::size_t>(axes[j])] = rc[j];
        f(operand(call, 0, full), ordinal++);
      });
    };
    per_result(oc, visit);
  });
}

// ---- reduce_sum: sequentially from +0 in the block's logical order (the
// reference order of FLOATING), exactly for Int32.

void reduce_sum(const KernelCall& call) {
  const bool exact = call.plan.accumulation() == Accumulation::EXACT_INTEGER;
  const bool wide = call.plan.accumulator_dtype() == &DType::Float64();
  for_each_block(call, [&](std::span<const std::int64_t> oc, auto&& visit) {
    int128 exact_sum = 0;
    float f32_sum = 0.0f;
    double f64_sum = 0.0;
    visit([&](const Value& v, std::int64_t) {
      if (exact) exact_sum += v.i;
      else if (wide) f64_sum += static_cast<double>(v.f);
      else f32_sum += v.f;
    });
    if (exact)
      store(call.output, oc,
            Value::from_int32(narrow_int32(exact_sum, "reduce_sum", logical_ordinal(call.output.shape().extents(), oc))));
    else store(call.output, oc, Value::from_float32(wide ? static_cast<float>(f64_sum) : f32_sum));
  });
}

// ---- reduce_prod: SEQUENTIAL_BINARY32_PRODUCT, from 1.0f, one binary32
// multiply per element in logical order.

void reduce_prod(const KernelCall& call) {
  for_each_block(call, [&](std::span<const std::int64_t> oc, auto&& visit) {
    float product = 1.0f;
    visit([&](const Value& v, std::int64_t) { product = product * v.f; });
    store(call.output, oc, Value::from_float32(product));
  });
}

// ---- Extrema. "Does the later element v replace the current winner w?"
// NaN is the extreme of both orders and the first NaN stays; +0 is above -0.

bool max_replaces(float w, float v) {
  if (std::isnan(w)) return false;
  if (std::isnan(v)) return true;
  if (v > w) return true;
  return v == 0.0f && w == 0.0f && std::signbit(w) && !std::signbit(v);
}

bool min_replaces(float w, float v) {
  if (std::isnan(w)) return false;
  if (std::isnan(v)) return true;
  if (v < w) return true;
  return v == 0.0f && w == 0.0f && !std::signbit(w) && std::signbit(v);
}

// MAXIMUM / MINIMUM: the winner's value (the front end rejected empty blocks).
template <bool (*Replaces)(float, float)>
void reduce_extremum(const KernelCall& call) {
  for_each_block(call, [&](std::span<const std::int64_t> oc, auto&& visit) {
    std::optional<float> winner;
    visit([&](const Value& v, std::int64_t) {
      if (!winner || Replaces(*winner, v.f)) winner = v.f;
    });
    store(call.output, oc, Value::from_float32(*winner));
  });
}

// ARGMAX / ARGMIN: the winner's ordinal in the block (the first winner:
// only a strictly better element replaces it).
template <bool (*Replaces)(float, float)>
void arg_extremum(const KernelCall& call) {
  for_each_block(call, [&](std::span<const std::int64_t> oc, auto&& visit) {
    std::optional<float> winner;
    std::int64_t at = 0;
    visit([&](const Value& v, std::int64_t ordinal) {
      if (!winner || Replaces(*winner, v.f)) {
        winner = v.f;
        at = ordinal;
      }
    });
    store(call.output, oc, Value::from_int32(static_cast<std::int32_t>(at)));
  });
}

// ---- Lines along one axis (cumsum, sort, topk): for every coordinate of the
// other axes (logical order), line(coordinate) with coordinate[axis] free.

template <class Line>
void for_each_line(const Tensor& x, std::size_t axis, Line&& line) {
  std::vector<std::int64_t> extents(x.shape().extents().begin(), x.shape().extents().end());
  extents[axis] = 1;
  std::vector<std::int64_t> c(x.rank());
  for_each_coordinate(extents, [&](std::span<const std::int64_t> at) {
    std::copy(at.begin(), at.end(), c.begin());
    line(c);
  });
}

// cumsum: SEQUENTIAL_BINARY32 along the axis, from +0.0.
void cumsum(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  for_each_line(x, axis, [&](std::vector<std::int64_t>& c) {
    float sum = 0.0f;
    for (std::int64_t j = 0; j < x.shape().extent(axis); ++j) {
      c[axis] = j;
      sum = sum + operand(call, 0, c).f;
      store(call.output, c, Value::from_float32(sum));
    }
  });
}

// The ascending order of sort and topk: -inf < ... < -0 < +0 < ... < +inf <
// NaN, every NaN equivalent to every other.
bool sorts_before(float a, float b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  if (a == b) return std::signbit(a) && !std::signbit(b);
  return a < b;
}

// sort and topk: per line, the positions stably sorted (ascending, or
// descending with equal elements still in their original order); the first
// `count` of them are written as values (the elements, bit for bit) or as
// Int32 positions.
void sorted_line(const KernelCall& call, bool descending, std::int64_t count, bool indices) {
  const Tensor& x = call.tensor(0);
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  const std::int64_t n = x.shape().extent(axis);
  for_each_line(x, axis, [&](std::vector<std::int64_t>& c) {
    std::vector<Value> line;
    for (std::int64_t j = 0; j < n; ++j) {
      c[axis] = j;
      line.push_back(operand(call, 0, c));
    }
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const float fa = line[static_cast<std::size_t>(a)].f, fb = line[static_cast<std::size_t>(b)].f;
      return descending ? sorts_before(fb, fa) : sorts_before(fa, fb);
    });
    for (std::int64_t j = 0; j < count; ++j) {
      c[axis] = j;
      const std::int64_t from = order[static_cast<std::size_t>(j)];
      store(call.output, c,
            indices ? Value::from_int32(static_cast<std::int32_t>(from)) : line[static_cast<std::size_t>(from)]);
    }
  });
}

void sort_line(const KernelCall& call, bool indices) {
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  sorted_line(call, call.attributes.get<bool>("descending"), call.tensor(0).shape().extent(axis), indices);
}

void topk_line(const KernelCall& call, bool indices) {
  sorted_line(call, call.attributes.get<bool>("largest"), call.attributes.get<std::int64_t>("k"), indices);
}

}  // namespace

void add_reduction_kernels(ReferenceKernels& kernels) {
  using Op = policy::OperationId;
  kernels[Op::reduce_sum] = reduce_sum;
  kernels[Op::reduce_prod] = reduce_prod;
  kernels[Op::reduce_max] = reduce_extremum<max_replaces>;
  kernels[Op::reduce_min] = reduce_extremum<min_replaces>;
  kernels[Op::argmax] = arg_extremum<max_replaces>;
  kernels[Op::argmin] = arg_extremum<min_replaces>;
  kernels[Op::cumsum] = cumsum;
  kernels[Op::_sort_values] = [](const KernelCall& call) { sort_line(call, false); };
  kernels[Op::_sort_indices] = [](const KernelCall& call) { sort_line(call, true); };
  kernels[Op::_topk_values] = [](const KernelCall& call) { topk_line(call, false); };
  kernels[Op::_topk_indices] = [](const KernelCall& call) { topk_line(call, true); };
}

}  // namespace strideweave::carriers::generic
