// Front end: elementwise arithmetic, comparisons, clamp, select.
// Semantics: docs/operations/arithmetic.md.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <variant>

#include "frontend/call_support.h"
#include "frontend/dispatch.h"

namespace strideweave {

using frontend::binary;
using frontend::common_carrier;
using frontend::Execute;
using frontend::Lower;
using frontend::Lowered;
using frontend::flat;
using frontend::materialize;
using frontend::tensor_scalar;

namespace {

// Weak-scalar/tensor elementwise (the scalar is operand 0 of the plan); the
// result has the tensor's (flat) shape.
template <class Finish>
auto scalar_tensor(std::string_view op, const WeakScalar& s, const Tensor& b, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {s, b.dtype()}, scratch);
  const Carrier& prototype = common_carrier(op, {&b});
  return finish(plan, {materialize(s, plan.operands()[0], op), b}, Attributes{}, flat(b.shape()), prototype);
}

// A three-operand elementwise operand: a tensor or a weak scalar.
using Ternary = std::variant<const Tensor*, WeakScalar>;

PlanOperand plan_operand_of(const Ternary& o) {
  if (const Tensor* const* t = std::get_if<const Tensor*>(&o)) return PlanOperand((*t)->dtype());
  return PlanOperand(std::get<WeakScalar>(o));
}

// Three operands broadcast together (every tensor operand takes part; weak
// scalars are materialised to their plan's convert_to). Order: resolve ->
// shapes -> carrier -> execute.
template <class Finish>
auto ternary(std::string_view op, const Ternary& x, const Ternary& y, const Ternary& z, Finish&& finish) {
  const std::array<const Ternary*, 3> ops{&x, &y, &z};
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {plan_operand_of(x), plan_operand_of(y), plan_operand_of(z)}, scratch);
  std::optional<Shape> shape;
  std::vector<const Tensor*> tensors;
  for (const Ternary* o : ops) {
    if (const Tensor* const* t = std::get_if<const Tensor*>(o)) {
      shape = shape ? broadcast_shapes(*shape, (*t)->shape(), op) : flat((*t)->shape());
      tensors.push_back(*t);
    }
  }
  // Every overload has a tensor first, so `shape` is set.
  const Carrier& prototype =
      tensors.size() == 3   ? common_carrier(op, {tensors[0], tensors[1], tensors[2]})
      : tensors.size() == 2 ? common_carrier(op, {tensors[0], tensors[1]})
                            : common_carrier(op, {tensors[0]});
  frontend::KernelOperands operands;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (const Tensor* const* t = std::get_if<const Tensor*>(ops[i])) operands.emplace_back((*t)->broadcast_to(*shape));
    else operands.emplace_back(materialize(std::get<WeakScalar>(*ops[i]), plan.operands()[i], op));
  }
  return finish(plan, operands, Attributes{}, *shape, prototype);
}

template <class Finish>
auto logical_not_call(const Tensor& x, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("logical_not", {x.dtype()}, scratch);
  const Carrier& prototype = common_carrier("logical_not", {&x});
  return finish(plan, {x}, Attributes{}, flat(x.shape()), prototype);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Output& out) { return binary("add", a, b, out); }
Tensor sub(const Tensor& a, const Tensor& b, const Output& out) { return binary("sub", a, b, out); }
Tensor elementwise_mul(const Tensor& a, const Tensor& b, const Output& out) {
  return binary("elementwise_mul", a, b, out);
}
Tensor mul(const Tensor& a, const Tensor& b, const Output& out) { return binary("mul", a, b, out); }
Tensor mul(const Tensor& a, WeakScalar b, const Output& out) { return tensor_scalar("mul", a, b, out); }
Tensor mul(WeakScalar a, const Tensor& b, const Output& out) {
  // mul's registry has no (scalar, tensor) overload: a kernel table runs the
  // registry's (tensor, scalar) plan with the operands swapped; a
  // definition-backed carrier runs the definition as written, whose
  // invocation lists its plan in the call's order (docs/policy.md), so it is
  // gated on that plan, never on the swapped one.
  if (frontend::definition_backed(b)) return frontend::call_builtin_definition("mul", {a, b}, {}, out);
  return tensor_scalar("mul", b, a, Execute{out, {}, {&b}});
}
Tensor div(const Tensor& a, const Tensor& b, const Output& out) { return binary("div", a, b, out); }
Tensor pow(const Tensor& base, const Tensor& exponent, const Output& out) { return binary("pow", base, exponent, out); }
Tensor pow(const Tensor& base, WeakScalar exponent, const Output& out) {
  return tensor_scalar("pow", base, exponent, out);
}
Tensor pow(WeakScalar base, const Tensor& exponent, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("pow", {base, exponent}, {});
  };
  return scalar_tensor("pow", base, exponent, Execute{out, frontend::by_definition(by_name), {&exponent}});
}
Tensor rem(const Tensor& a, const Tensor& b, const Output& out) { return binary("rem", a, b, out); }
Tensor maximum(const Tensor& a, const Tensor& b, const Output& out) { return binary("maximum", a, b, out); }
Tensor minimum(const Tensor& a, const Tensor& b, const Output& out) { return binary("minimum", a, b, out); }
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("clamp", {x, lo, hi}, {}); };
  return ternary("clamp", &x, &lo, &hi, Execute{out, frontend::by_definition(by_name), {&x, &lo, &hi}});
}
Tensor clamp(const Tensor& x, const Tensor& lo, WeakScalar hi, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("clamp", {x, lo, hi}, {}); };
  return ternary("clamp", &x, &lo, hi, Execute{out, frontend::by_definition(by_name), {&x, &lo}});
}
Tensor clamp(const Tensor& x, WeakScalar lo, const Tensor& hi, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("clamp", {x, lo, hi}, {}); };
  return ternary("clamp", &x, lo, &hi, Execute{out, frontend::by_definition(by_name), {&x, &hi}});
}
Tensor clamp(const Tensor& x, WeakScalar lo, WeakScalar hi, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("clamp", {x, lo, hi}, {}); };
  return ternary("clamp", &x, lo, hi, Execute{out, frontend::by_definition(by_name), {&x}});
}
Tensor eq(const Tensor& a, const Tensor& b, const Output& out) { return binary("eq", a, b, out); }
Tensor ne(const Tensor& a, const Tensor& b, const Output& out) { return binary("ne", a, b, out); }
Tensor lt(const Tensor& a, const Tensor& b, const Output& out) { return binary("lt", a, b, out); }
Tensor le(const Tensor& a, const Tensor& b, const Output& out) { return binary("le", a, b, out); }

Tensor logical_not(const Tensor& x, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("logical_not", {x}, {}); };
  return logical_not_call(x, Execute{out, frontend::by_definition(by_name), {&x}});
}

Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin("select", {cond, a, b}, {}); };
  return ternary("select", &cond, &a, &b, Execute{out, frontend::by_definition(by_name), {&cond, &a, &b}});
}

namespace frontend {

using namespace builtin_schema;

namespace {

// The lowering of a two-operand call whose operands may each be a tensor or
// a weak scalar (at least one tensor): mul and pow. mul's registry has no
// (scalar, tensor) overload: the kernel table runs its (tensor, scalar) plan
// with the operands swapped (multiplication commutes in every plan's
// arithmetic), and the definition's invocation carries that plan with its
// two operand plans in the call's order (Lowered::call_plan; docs/policy.md).
Lowered lower_mixed(std::string_view name, const BoundCall& call) {
  const Tensor* a = std::get_if<Tensor>(&call.operands()[0]);
  const Tensor* b = std::get_if<Tensor>(&call.operands()[1]);
  if (a && b) return binary(name, *a, *b, Lower{});
  if (a) return tensor_scalar(name, *a, std::get<WeakScalar>(call.operands()[1]), Lower{});
  if (!b) throw TypeError(fmt::format("{}: at least one operand must be a tensor", name));
  const WeakScalar& s = std::get<WeakScalar>(call.operands()[0]);
  if (name != "mul") return scalar_tensor(name, s, *b, Lower{});
  Lowered lowered = tensor_scalar(name, *b, s, Lower{});
  lowered.call_plan = scalar_first_mul_plan(lowered.plan);
  return lowered;
}

Ternary ternary_operand(const BoundCall& call, std::size_t i) {
  if (const Tensor* t = std::get_if<Tensor>(&call.operands()[i])) return t;
  return std::get<WeakScalar>(call.operands()[i]);
}

}  // namespace

void add_arithmetic_builtins(std::vector<BuiltinEntry>& out) {
  // Tensor/tensor elementwise with broadcasting. Comparisons have no
  // gradient (Bool results).
  for (const char* name : {"add", "sub", "elementwise_mul", "div", "rem", "maximum", "minimum"})
    out.push_back(entry(name, {tensor("a", true), tensor("b", true)}, {},
                        [name](const BoundCall& c) { return binary(name, c.tensor(0), c.tensor(1), Lower{}); }));
  for (const char* name : {"eq", "ne", "lt", "le"})
    out.push_back(entry(name, {tensor("a"), tensor("b")}, {},
                        [name](const BoundCall& c) { return binary(name, c.tensor(0), c.tensor(1), Lower{}); }));
  for (const char* name : {"mul", "pow"})
    out.push_back(entry(name, {tensor_or_scalar("a", true), tensor_or_scalar("b", true)}, {},
                        [name](const BoundCall& c) { return lower_mixed(name, c); }));
  out.push_back(entry("clamp", {tensor("x", true), tensor_or_scalar("lo", true), tensor_or_scalar("hi", true)}, {},
                      [](const BoundCall& c) {
                        return ternary("clamp", &c.tensor(0), ternary_operand(c, 1), ternary_operand(c, 2), Lower{});
                      }));
  out.push_back(entry("logical_not", {tensor("x")}, {},
                      [](const BoundCall& c) { return logical_not_call(c.tensor(0), Lower{}); }));
  out.push_back(entry("select", {tensor("cond"), tensor("a", true), tensor("b", true)}, {}, [](const BoundCall& c) {
    return ternary("select", &c.tensor(0), &c.tensor(1), &c.tensor(2), Lower{});
  }));
}

}  // namespace frontend
}  // namespace strideweave
