// The first front-end operations: add, elementwise_mul, mul, relu,
// reduce_sum, matmul. Each resolves its plan once, validates, and takes the
// one dispatch path (dispatch.h).
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>

#include "frontend/dispatch.h"

namespace strideweave {

using frontend::common_carrier;
using frontend::execute;
using frontend::materialize;

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t ea = i < rank - a.rank() ? 1 : a.extent(i - (rank - a.rank()));
    const std::int64_t eb = i < rank - b.rank() ? 1 : b.extent(i - (rank - b.rank()));
    if (ea != eb && ea != 1 && eb != 1)
      throw ValueError(fmt::format("{}: shapes {} and {} do not broadcast (axis {}: {} vs {})", operation,
                                   a.to_string(), b.to_string(), i, ea, eb));
    out[i] = ea == 1 ? eb : ea;
  }
  return Shape::of(out);
}

namespace {

Tensor binary(std::string_view op, const Tensor& a, const Tensor& b) {
  const OperationPlan plan = resolve_operation_plan(op, {a.dtype(), b.dtype()});
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const Carrier& prototype = common_carrier(op, {&a, &b});
  return execute(plan, {a.broadcast_to(shape), b.broadcast_to(shape)}, Attributes{}, shape, prototype);
}

Tensor tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s) {
  const OperationPlan plan = resolve_operation_plan(op, {a.dtype(), s});
  const Carrier& prototype = common_carrier(op, {&a});
  return execute(plan, {a, materialize(s, plan.operands()[1], op)}, Attributes{}, Shape::of(a.shape().extents()),
                 prototype);
}

// Normalised, sorted, duplicate-free axes (ValueError otherwise).
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::optional<std::vector<std::int64_t>>& axes,
                                         std::size_t rank) {
  std::vector<std::int64_t> out;
  if (!axes) {
    for (std::size_t i = 0; i < rank; ++i) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  const std::string what = fmt::format("{} axes", op);
  for (std::int64_t a : *axes) out.push_back(normalize_axis(a, rank, what.c_str()));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ValueError(fmt::format("{}: axes contain a duplicate axis", op));
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", a, b); }
Tensor elementwise_mul(const Tensor& a, const Tensor& b) { return binary("elementwise_mul", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", a, b); }
Tensor mul(const Tensor& a, WeakScalar b) { return tensor_scalar("mul", a, b); }
Tensor mul(WeakScalar a, const Tensor& b) { return tensor_scalar("mul", b, a); }

Tensor relu(const Tensor& x) {
  const OperationPlan plan = resolve_operation_plan("relu", {x.dtype()});
  const Carrier& prototype = common_carrier("relu", {&x});
  return execute(plan, {x}, Attributes{}, Shape::of(x.shape().extents()), prototype);
}

Tensor reduce_sum(const Tensor& x, ReduceOptions reduce, const std::optional<OperationExecutionOptions>& options) {
  const OperationPlan plan =
      resolve_operation_plan("reduce_sum", {x.dtype()}, nullptr, options ? &*options : nullptr);
  const std::vector<std::int64_t> axes = normalize_axes("reduce_sum", reduce.axes, x.rank());
  std::vector<std::int64_t> out_extents;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i));
    if (!reduced) out_extents.push_back(x.shape().extent(i));
    else if (reduce.keepdims) out_extents.push_back(1);
  }
  const Carrier& prototype = common_carrier("reduce_sum", {&x});
  Attributes attributes;
  attributes.set("axes", axes);
  attributes.set("keepdims", reduce.keepdims);
  return execute(plan, {x}, attributes, Shape::of(out_extents), prototype);
}

Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options) {
  const OperationPlan plan =
      resolve_operation_plan("matmul", {a.dtype(), b.dtype()}, nullptr, options ? &*options : nullptr);
  if (a.rank() == 0 || b.rank() == 0)
    throw ValueError(fmt::format("matmul: operands must have rank >= 1 (got {} and {})", a.shape().to_string(),
                                 b.shape().to_string()));
  const Carrier& prototype = common_carrier("matmul", {&a, &b});
  // numpy promotion of vectors: a (K) -> (1, K), b (K) -> (K, 1).
  const Tensor a2 = a.rank() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.rank() == 1 ? b.unsqueeze(1) : b;
  const std::int64_t m = a2.shape().extent(a2.rank() - 2), k = a2.shape().extent(a2.rank() - 1);
  const std::int64_t kb = b2.shape().extent(b2.rank() - 2), n = b2.shape().extent(b2.rank() - 1);
  if (k != kb)
    throw ValueError(fmt::format("matmul: contraction extents differ ({} in {} vs {} in {})", k, a.shape().to_string(),
                                 kb, b.shape().to_string()));
  std::vector<std::int64_t> batch_a(a2.shape().extents().begin(), a2.shape().extents().end() - 2);
  std::vector<std::int64_t> batch_b(b2.shape().extents().begin(), b2.shape().extents().end() - 2);
  const Shape batch = broadcast_shapes(Shape::of(batch_a), Shape::of(batch_b), "matmul");
  std::vector<std::int64_t> ea(batch.extents().begin(), batch.extents().end()), eb = ea, eo = ea;
  ea.insert(ea.end(), {m, k});
  eb.insert(eb.end(), {k, n});
  eo.insert(eo.end(), {m, n});
  Tensor result = execute(plan, {a2.broadcast_to(Shape::of(ea)), b2.broadcast_to(Shape::of(eb))}, Attributes{},
                          Shape::of(eo), prototype);
  // Remove the axes the vector promotion introduced.
  const auto rank = static_cast<std::int64_t>(eo.size());
  if (a.rank() == 1 && b.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 2, rank - 1});
  if (a.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 2});
  if (b.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 1});
  return result;
}

}  // namespace strideweave
