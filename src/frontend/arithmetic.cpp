// Front end: elementwise arithmetic, comparisons, clamp, select.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>

#include "frontend/call_support.h"
#include "frontend/dispatch.h"

namespace strideweave {

using frontend::binary;
using frontend::common_carrier;
using frontend::execute;
using frontend::flat;
using frontend::normalize_axes;
using frontend::tensor_scalar;

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", a, b); }
Tensor elementwise_mul(const Tensor& a, const Tensor& b) { return binary("elementwise_mul", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", a, b); }
Tensor mul(const Tensor& a, WeakScalar b) { return tensor_scalar("mul", a, b); }
Tensor mul(WeakScalar a, const Tensor& b) { return tensor_scalar("mul", b, a); }


namespace frontend {

namespace {

// A tensor/tensor operation callable by name.
CallableOperation binary_call(std::string name, Tensor (*fn)(const Tensor&, const Tensor&)) {
  CallableOperation c;
  c.name = name;
  c.signature = name + "(a: tensor, b: tensor)";
  c.call = [name, fn](std::span<const CallOperand> ops, const CallOptions& options, const DType* acc) {
    no_accumulator(name, acc);
    OptionReader(name, options).finish();
    expect_arity(name, ops, 2);
    const Tensor& a = tensor_arg(name, ops, 0);
    const Tensor& b = tensor_arg(name, ops, 1);
    return CallResult{{resolve_operation_plan(name, {a.dtype(), b.dtype()})}, {fn(a, b)}};
  };
  return c;
}

}  // namespace

void add_arithmetic_calls(std::vector<CallableOperation>& out) {
  out.push_back(binary_call("add", add));
  out.push_back(binary_call("elementwise_mul", elementwise_mul));
  CallableOperation m;
  m.name = "mul";
  m.signature = "mul(a: tensor | scalar, b: tensor | scalar) (at least one tensor)";
  m.call = [](std::span<const CallOperand> ops, const CallOptions& options, const DType* acc) {
    no_accumulator("mul", acc);
    OptionReader("mul", options).finish();
    expect_arity("mul", ops, 2);
    const Tensor* a = std::get_if<Tensor>(&ops[0]);
    const Tensor* b = std::get_if<Tensor>(&ops[1]);
    if (a && b) return CallResult{{resolve_operation_plan("mul", {a->dtype(), b->dtype()})}, {mul(*a, *b)}};
    if (a) {
      const WeakScalar& s = std::get<WeakScalar>(ops[1]);
      return CallResult{{resolve_operation_plan("mul", {a->dtype(), s})}, {mul(*a, s)}};
    }
    if (b) {
      const WeakScalar& s = std::get<WeakScalar>(ops[0]);
      return CallResult{{resolve_operation_plan("mul", {b->dtype(), s})}, {mul(s, *b)}};
    }
    throw TypeError("mul: at least one operand must be a tensor");
  };
  out.push_back(std::move(m));
}

}  // namespace frontend
}  // namespace strideweave
