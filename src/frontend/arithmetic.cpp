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
using frontend::execute;
using frontend::flat;
using frontend::materialize;
using frontend::tensor_scalar;

namespace {

// Weak-scalar/tensor elementwise (the scalar is operand 0 of the plan); the
// result has the tensor's (flat) shape.
Tensor scalar_tensor(std::string_view op, const WeakScalar& s, const Tensor& b, const Output& out) {
  const OperationPlan plan = resolve_operation_plan(op, {s, b.dtype()});
  const Carrier& prototype = common_carrier(op, {&b});
  return execute(plan, {materialize(s, plan.operands()[0], op), b}, Attributes{}, flat(b.shape()), prototype, out);
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
Tensor ternary(std::string_view op, const Ternary& x, const Ternary& y, const Ternary& z, const Output& out) {
  const std::array<const Ternary*, 3> ops{&x, &y, &z};
  const OperationPlan plan = resolve_operation_plan(op, {plan_operand_of(x), plan_operand_of(y), plan_operand_of(z)});
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
  std::vector<KernelOperand> operands;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (const Tensor* const* t = std::get_if<const Tensor*>(ops[i])) operands.emplace_back((*t)->broadcast_to(*shape));
    else operands.emplace_back(materialize(std::get<WeakScalar>(*ops[i]), plan.operands()[i], op));
  }
  return execute(plan, std::move(operands), Attributes{}, *shape, prototype, out);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Output& out) { return binary("add", a, b, out); }
Tensor sub(const Tensor& a, const Tensor& b, const Output& out) { return binary("sub", a, b, out); }
Tensor elementwise_mul(const Tensor& a, const Tensor& b, const Output& out) {
  return binary("elementwise_mul", a, b, out);
}
Tensor mul(const Tensor& a, const Tensor& b, const Output& out) { return binary("mul", a, b, out); }
Tensor mul(const Tensor& a, WeakScalar b, const Output& out) { return tensor_scalar("mul", a, b, out); }
Tensor mul(WeakScalar a, const Tensor& b, const Output& out) { return tensor_scalar("mul", b, a, out); }
Tensor div(const Tensor& a, const Tensor& b, const Output& out) { return binary("div", a, b, out); }
Tensor pow(const Tensor& base, const Tensor& exponent, const Output& out) { return binary("pow", base, exponent, out); }
Tensor pow(const Tensor& base, WeakScalar exponent, const Output& out) {
  return tensor_scalar("pow", base, exponent, out);
}
Tensor pow(WeakScalar base, const Tensor& exponent, const Output& out) {
  return scalar_tensor("pow", base, exponent, out);
}
Tensor rem(const Tensor& a, const Tensor& b, const Output& out) { return binary("rem", a, b, out); }
Tensor maximum(const Tensor& a, const Tensor& b, const Output& out) { return binary("maximum", a, b, out); }
Tensor minimum(const Tensor& a, const Tensor& b, const Output& out) { return binary("minimum", a, b, out); }
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, const Output& out) {
  return ternary("clamp", &x, &lo, &hi, out);
}
Tensor clamp(const Tensor& x, const Tensor& lo, WeakScalar hi, const Output& out) {
  return ternary("clamp", &x, &lo, hi, out);
}
Tensor clamp(const Tensor& x, WeakScalar lo, const Tensor& hi, const Output& out) {
  return ternary("clamp", &x, lo, &hi, out);
}
Tensor clamp(const Tensor& x, WeakScalar lo, WeakScalar hi, const Output& out) {
  return ternary("clamp", &x, lo, hi, out);
}
Tensor eq(const Tensor& a, const Tensor& b, const Output& out) { return binary("eq", a, b, out); }
Tensor ne(const Tensor& a, const Tensor& b, const Output& out) { return binary("ne", a, b, out); }
Tensor lt(const Tensor& a, const Tensor& b, const Output& out) { return binary("lt", a, b, out); }
Tensor le(const Tensor& a, const Tensor& b, const Output& out) { return binary("le", a, b, out); }

Tensor logical_not(const Tensor& x, const Output& out) {
  const OperationPlan plan = resolve_operation_plan("logical_not", {x.dtype()});
  const Carrier& prototype = common_carrier("logical_not", {&x});
  return execute(plan, {x}, Attributes{}, flat(x.shape()), prototype, out);
}

Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b, const Output& out) {
  return ternary("select", &cond, &a, &b, out);
}

namespace frontend {

namespace {

// A tensor/tensor operation callable by name.
CallableOperation binary_call(std::string name, Tensor (*fn)(const Tensor&, const Tensor&, const Output&)) {
  CallableOperation c;
  c.name = name;
  c.signature = name + "(a: tensor, b: tensor)";
  c.call = [name, fn](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
    no_accumulator(name, acc);
    OptionReader(name, options).finish();
    expect_arity(name, ops, 2);
    const Tensor& a = tensor_arg(name, ops, 0);
    const Tensor& b = tensor_arg(name, ops, 1);
    return CallResult{{resolve_operation_plan(name, {a.dtype(), b.dtype()})}, {fn(a, b, acc.out)}};
  };
  return c;
}

// A two-operand operation whose operands may each be a tensor or a weak
// scalar (at least one tensor): mul and pow. `commuted`: the registry has no
// (scalar, tensor) overload and the front end resolves the (tensor, scalar)
// plan with the operands swapped (mul, docs/policy.md).
template <class TT, class TS, class ST>
CallableOperation mixed_binary_call(std::string name, bool commuted, TT tt, TS ts, ST st) {
  CallableOperation c;
  c.name = name;
  c.signature = name + "(a: tensor | scalar, b: tensor | scalar) (at least one tensor)";
  c.call = [name, commuted, tt, ts, st](std::span<const CallOperand> ops, const CallOptions& options,
                                        const ExecutionRequest& acc) {
    no_accumulator(name, acc);
    OptionReader(name, options).finish();
    expect_arity(name, ops, 2);
    const Tensor* a = std::get_if<Tensor>(&ops[0]);
    const Tensor* b = std::get_if<Tensor>(&ops[1]);
    if (!a && !b) throw TypeError(fmt::format("{}: at least one operand must be a tensor", name));
    if (a && b) return CallResult{{resolve_operation_plan(name, {a->dtype(), b->dtype()})}, {tt(*a, *b, acc.out)}};
    if (a) {
      const WeakScalar& s = std::get<WeakScalar>(ops[1]);
      return CallResult{{resolve_operation_plan(name, {a->dtype(), s})}, {ts(*a, s, acc.out)}};
    }
    const WeakScalar& s = std::get<WeakScalar>(ops[0]);
    const OperationPlan plan =
        commuted ? resolve_operation_plan(name, {b->dtype(), s}) : resolve_operation_plan(name, {s, b->dtype()});
    return CallResult{{plan}, {st(s, *b, acc.out)}};
  };
  return c;
}

}  // namespace

void add_arithmetic_calls(std::vector<CallableOperation>& out) {
  for (const auto& [name, fn] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&, const Output&)>>{
           {"add", add},
           {"sub", sub},
           {"elementwise_mul", elementwise_mul},
           {"div", div},
           {"rem", rem},
           {"maximum", maximum},
           {"minimum", minimum},
           {"eq", eq},
           {"ne", ne},
           {"lt", lt},
           {"le", le}})
    out.push_back(binary_call(name, fn));

  out.push_back(mixed_binary_call(
      "mul", true, [](const Tensor& a, const Tensor& b, const Output& o) { return mul(a, b, o); },
      [](const Tensor& a, const WeakScalar& s, const Output& o) { return mul(a, s, o); },
      [](const WeakScalar& s, const Tensor& b, const Output& o) { return mul(s, b, o); }));
  out.push_back(mixed_binary_call(
      "pow", false, [](const Tensor& a, const Tensor& b, const Output& o) { return pow(a, b, o); },
      [](const Tensor& a, const WeakScalar& s, const Output& o) { return pow(a, s, o); },
      [](const WeakScalar& s, const Tensor& b, const Output& o) { return pow(s, b, o); }));

  CallableOperation c;
  c.name = "clamp";
  c.signature = "clamp(x: tensor, lo: tensor | scalar, hi: tensor | scalar)";
  c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
    no_accumulator("clamp", acc);
    OptionReader("clamp", options).finish();
    expect_arity("clamp", ops, 3);
    const Tensor& x = tensor_arg("clamp", ops, 0);
    const OperationPlan plan = resolve_operation_plan("clamp", plan_operands(ops));
    const Tensor* lo = std::get_if<Tensor>(&ops[1]);
    const Tensor* hi = std::get_if<Tensor>(&ops[2]);
    if (lo && hi) return CallResult{{plan}, {clamp(x, *lo, *hi, acc.out)}};
    if (lo) return CallResult{{plan}, {clamp(x, *lo, std::get<WeakScalar>(ops[2]), acc.out)}};
    if (hi) return CallResult{{plan}, {clamp(x, std::get<WeakScalar>(ops[1]), *hi, acc.out)}};
    return CallResult{{plan}, {clamp(x, std::get<WeakScalar>(ops[1]), std::get<WeakScalar>(ops[2]), acc.out)}};
  };
  out.push_back(std::move(c));

  CallableOperation n;
  n.name = "logical_not";
  n.signature = "logical_not(x: tensor)";
  n.call = [](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
    no_accumulator("logical_not", acc);
    OptionReader("logical_not", options).finish();
    expect_arity("logical_not", ops, 1);
    const Tensor& x = tensor_arg("logical_not", ops, 0);
    return CallResult{{resolve_operation_plan("logical_not", {x.dtype()})}, {logical_not(x, acc.out)}};
  };
  out.push_back(std::move(n));

  CallableOperation s;
  s.name = "select";
  s.signature = "select(cond: tensor, a: tensor, b: tensor)";
  s.call = [](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
    no_accumulator("select", acc);
    OptionReader("select", options).finish();
    expect_arity("select", ops, 3);
    const Tensor& cond = tensor_arg("select", ops, 0);
    const Tensor& a = tensor_arg("select", ops, 1);
    const Tensor& b = tensor_arg("select", ops, 2);
    return CallResult{{resolve_operation_plan("select", {cond.dtype(), a.dtype(), b.dtype()})}, {select(cond, a, b, acc.out)}};
  };
  out.push_back(std::move(s));
}

}  // namespace frontend
}  // namespace strideweave
