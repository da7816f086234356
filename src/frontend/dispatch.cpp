// The single dispatch path. See dispatch.h and include/strideweave/ops.h.
#include "frontend/dispatch.h"

#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>

namespace strideweave {

namespace {

// The two stable sentences; `name` is the class's public name.
std::optional<std::string> reason_for(CarrierClass cls, const std::string& name, const OperationPlan& plan) {
  const KernelTable* table = kernel_table(cls);
  if (table && table->find(plan)) return std::nullopt;
  const bool has_operation = table && std::any_of(table->plans().begin(), table->plans().end(),
                                                  [&](const OperationPlan& p) { return p.operation() == plan.operation(); });
  if (!has_operation) return fmt::format("{} has no capability for operation '{}'.", name, plan.operation());
  return fmt::format("{} has capabilities for operation '{}' but none matches the plan {}.", name, plan.operation(),
                     plan.to_string());
}

}  // namespace

std::optional<std::string> unsupported_plan_reason(CarrierClass cls, const OperationPlan& plan) {
  std::string name = cls.cpp_name();
  for (const auto& [c, n] : registered_kernel_classes())
    if (c == cls) name = n;
  return reason_for(cls, name, plan);
}

namespace frontend {

const Carrier& common_carrier(std::string_view operation, std::initializer_list<const Tensor*> tensors) {
  const Carrier* first = nullptr;
  for (const Tensor* t : tensors) {
    t->carrier()->require_live(std::string(operation).c_str());
    if (!first) {
      first = t->carrier().get();
    } else if (!(first->exact_class() == t->carrier()->exact_class())) {
      throw TypeError(fmt::format("{}: operands live on different carrier classes ({} and {}); move one first",
                                  operation, first->class_name(), t->carrier()->class_name()));
    }
  }
  return *first;
}

Tensor execute(const OperationPlan& plan, std::vector<KernelOperand> operands, const Attributes& attributes,
               const Shape& result_shape, const Carrier& prototype) {
  const KernelTable* table = kernel_table(prototype.exact_class());
  const KernelFn* kernel = table ? table->find(plan) : nullptr;
  if (!kernel) throw UnsupportedOperationPlan(*reason_for(prototype.exact_class(), prototype.class_name(), plan), plan);
  std::shared_ptr<Carrier> storage = prototype.allocate_like(result_shape.size(), true, &plan.output(), true);
  Tensor result(std::move(storage), 0, Layout::compact(result_shape));
  (*kernel)(KernelCall{plan, operands, attributes, result});
  return result;
}

Value materialize(const WeakScalar& scalar, const OperandPlan& operand, std::string_view operation) {
  if (&operand.convert_to() == &DType::Int32()) return Value::from_int32(scalar.to_int32(operation));
  return Value::from_float32(scalar.to_float32());
}

Tensor binary(std::string_view op, const Tensor& a, const Tensor& b) {
  const OperationPlan plan = resolve_operation_plan(op, {a.dtype(), b.dtype()});
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const Carrier& prototype = common_carrier(op, {&a, &b});
  return execute(plan, {a.broadcast_to(shape), b.broadcast_to(shape)}, Attributes{}, shape, prototype);
}

Tensor tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s) {
  const OperationPlan plan = resolve_operation_plan(op, {a.dtype(), s});
  const Carrier& prototype = common_carrier(op, {&a});
  return execute(plan, {a, materialize(s, plan.operands()[1], op)}, Attributes{}, flat(a.shape()),
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

}  // namespace frontend

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

}  // namespace strideweave
