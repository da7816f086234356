// VJPs of the elementwise arithmetic family (ops/arithmetic.h). Operands
// arrive broadcast to the result's shape (the broadcast views' own nodes sum
// the gradients back to the inputs' shapes). Conventions at
// non-differentiable points: docs/autograd.md.
#include <cmath>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave::autograd {
namespace {

bool is_scalar(const VjpContext& c, std::size_t i) { return std::holds_alternative<Value>(c.operands[i]); }
// Operand i as a tensor: itself, or its materialised scalar as a rank-0 tensor.
Tensor operand_tensor(const VjpContext& c, std::size_t i, const Tensor& like) {
  return is_scalar(c, i) ? scalar_like(like, c.scalar(i)) : as_float(c.tensor(i));
}

Grads add_vjp(const VjpContext&, const Tensor& g) { return {g, g}; }

Grads sub_vjp(const VjpContext& c, const Tensor& g) {
  return {g, c.needs_grad[1] ? std::optional<Tensor>(neg(g)) : std::nullopt};
}

// mul and elementwise_mul: tensor/tensor, or tensor/scalar (mul).
Grads mul_vjp(const VjpContext& c, const Tensor& g) {
  Grads out(2);
  if (is_scalar(c, 1)) {
    out[0] = mul(g, static_cast<double>(c.scalar(1)));
    return out;
  }
  if (c.needs_grad[0]) out[0] = mul(g, c.tensor(1));
  if (c.needs_grad[1]) out[1] = mul(g, c.tensor(0));
  return out;
}

Grads div_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& a = c.tensor(0);
  const Tensor& b = c.tensor(1);
  const Tensor ga = div(g, b);
  Grads out(2);
  if (c.needs_grad[0]) out[0] = ga;
  if (c.needs_grad[1]) out[1] = neg(mul(ga, div(a, b)));  // -g a / b^2
  return out;
}

// pow(x, y) = x^y. d/dx = y x^(y-1) (0 where y == 0); d/dy = x^y ln x (0
// where x == 0 and y >= 0). Overloads: (T, T), (T, scalar), (scalar, T).
Grads pow_vjp(const VjpContext& c, const Tensor& g) {
  Grads out(2);
  const Tensor& ref = is_scalar(c, 0) ? c.tensor(1) : c.tensor(0);
  const Tensor zero = scalar_like(ref, 0.0f);
  if (c.needs_grad[0]) {
    const Tensor x = as_float(c.tensor(0));
    if (is_scalar(c, 1)) {
      const double y = c.scalar(1);
      out[0] = y == 0.0 ? zeros_like(g) : mul(g, mul(pow(x, y - 1.0), y));
    } else {
      const Tensor y = as_float(c.tensor(1));
      const Tensor d = mul(y, pow(x, sub(y, scalar_like(ref, 1.0f))));
      out[0] = mul(g, select(eq(y, zero), zero, d));
    }
  }
  if (c.needs_grad[1]) {
    const Tensor y = as_float(c.tensor(1));
    Tensor d = is_scalar(c, 0) ? mul(pow(static_cast<double>(c.scalar(0)), y), std::log(static_cast<double>(c.scalar(0))))
                               : mul(pow(as_float(c.tensor(0)), y), log(as_float(c.tensor(0))));
    const Tensor x = operand_tensor(c, 0, ref);
    d = select(eq(x, zero), select(le(zero, y), zero, d), d);
    out[1] = mul(g, d);
  }
  return out;
}

// rem(a, b) = a - trunc(a / b) b: d/da = 1, d/db = -trunc(a / b), where the
// integer quotient is recovered exactly as round((a - rem(a, b)) / b).
Grads rem_vjp(const VjpContext& c, const Tensor& g) {
  Grads out(2);
  if (c.needs_grad[0]) out[0] = g;
  if (c.needs_grad[1]) {
    const Tensor& a = c.tensor(0);
    const Tensor& b = c.tensor(1);
    out[1] = neg(mul(g, round(div(sub(a, rem(a, b)), b))));
  }
  return out;
}

// maximum / minimum: the gradient goes to the winner; on a tie (and with a
// NaN) to the first operand.
template <bool Max>
Grads extremum_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& a = c.tensor(0);
  const Tensor& b = c.tensor(1);
  const Tensor second_wins = Max ? lt(a, b) : lt(b, a);
  const Tensor zero = scalar_like(g, 0.0f);
  Grads out(2);
  if (c.needs_grad[0]) out[0] = select(second_wins, zero, g);
  if (c.needs_grad[1]) out[1] = select(second_wins, g, zero);
  return out;
}

// clamp(x, lo, hi) = minimum(maximum(x, lo), hi), with the tie rule of
// maximum/minimum: x keeps the gradient at x == lo and at x == hi.
Grads clamp_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& x = c.tensor(0);
  const Tensor lo = operand_tensor(c, 1, x);
  const Tensor hi = operand_tensor(c, 2, x);
  const Tensor zero = scalar_like(g, 0.0f);
  const Tensor upper = lt(hi, maximum(x, lo));  // hi wins
  const Tensor lower = lt(x, lo);               // lo wins the inner maximum
  const Tensor inner = select(upper, zero, g);  // what reaches maximum(x, lo)
  Grads out(3);
  if (c.needs_grad[0]) out[0] = select(lower, zero, inner);
  if (c.needs_grad[1]) out[1] = select(lower, inner, zero);
  if (c.needs_grad[2]) out[2] = select(upper, g, zero);
  return out;
}

// select(cond, a, b): the gradient follows the chosen operand; cond is Bool.
Grads select_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& cond = c.tensor(0);
  const Tensor zero = scalar_like(g, 0.0f);
  Grads out(3);
  if (c.needs_grad[1]) out[1] = select(cond, g, zero);
  if (c.needs_grad[2]) out[2] = select(cond, zero, g);
  return out;
}

}  // namespace

void add_arithmetic_vjps(VjpTable& t) {
  using Op = policy::OperationId;
  vjp_slot(t, Op::add) = add_vjp;
  vjp_slot(t, Op::sub) = sub_vjp;
  vjp_slot(t, Op::mul) = mul_vjp;
  vjp_slot(t, Op::elementwise_mul) = mul_vjp;
  vjp_slot(t, Op::div) = div_vjp;
  vjp_slot(t, Op::pow) = pow_vjp;
  vjp_slot(t, Op::rem) = rem_vjp;
  vjp_slot(t, Op::maximum) = extremum_vjp<true>;
  vjp_slot(t, Op::minimum) = extremum_vjp<false>;
  vjp_slot(t, Op::clamp) = clamp_vjp;
  vjp_slot(t, Op::select) = select_vjp;
}

}  // namespace strideweave::autograd
