// VJPs of the unary family (ops/unary.h): g * f'(x), with f' written with
// the library's own operations. Conventions at non-differentiable points
// (relu/leaky_relu/elu at 0, abs at 0, sign/floor/ceil/round):
// docs/autograd.md.
#include <cmath>
#include <numbers>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave::autograd {
namespace {

// f'(x) for one operand; the VJP is g * f'(x).
using Derivative = Tensor (*)(const VjpContext& c, const Tensor& x);

template <Derivative D>
Grads chain(const VjpContext& c, const Tensor& g) {
  return {mul(g, D(c, c.tensor(0)))};
}

Tensor one(const Tensor& x) { return scalar_like(x, 1.0f); }
Tensor zero(const Tensor& x) { return scalar_like(x, 0.0f); }
Tensor positive(const Tensor& x) { return lt(zero(x), x); }  // x > 0 (false at 0 and NaN)

Tensor d_leaky_relu(const VjpContext& c, const Tensor& x) {
  return select(positive(x), one(x), scalar_like(x, static_cast<float>(attr_real(c, "negative_slope"))));
}
Tensor d_elu(const VjpContext& c, const Tensor& x) {  // d/dx alpha * expm1(x) = alpha * exp(x)
  return select(positive(x), one(x), mul(exp(x), attr_real(c, "alpha")));
}

Tensor d_gelu(const VjpContext& c, const Tensor& x) {
  if (!attr_bool(c, "approximate")) {
    // Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
    const Tensor cdf = mul(add(one(x), erf(mul(x, std::numbers::sqrt2 / 2))), 0.5);
    const Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
    return add(cdf, mul(x, pdf));
  }
  // y = x (1 + t) / 2, t = tanh(k (x + a x^3)):
  // y' = (1 + t) / 2 + x (1 - t^2) k (1 + 3 a x^2) / 2.
  const double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, a = 0.044715;
  const Tensor x2 = mul(x, x);
  const Tensor t = tanh(mul(add(x, mul(mul(x2, x), a)), k));
  const Tensor left = mul(add(one(x), t), 0.5);
  const Tensor slope = mul(add(one(x), mul(x2, 3.0 * a)), 0.5 * k);
  return add(left, mul(mul(x, sub(one(x), mul(t, t))), slope));
}

Tensor d_sigmoid(const VjpContext&, const Tensor& x) { return mul(sigmoid(x), sigmoid(neg(x))); }  // s (1 - s)
Tensor d_silu(const VjpContext&, const Tensor& x) {  // s + x s (1 - s)
  const Tensor s = sigmoid(x);
  return add(s, mul(x, mul(s, sigmoid(neg(x)))));
}
Tensor d_softplus(const VjpContext& c, const Tensor& x) {  // 1 above the threshold, else sigmoid(beta x)
  const Tensor bx = mul(x, attr_real(c, "beta"));
  return select(lt(scalar_like(x, static_cast<float>(attr_real(c, "threshold"))), bx), one(x), sigmoid(bx));
}
Tensor d_tanh(const VjpContext&, const Tensor& x) {
  const Tensor t = tanh(x);
  return sub(one(x), mul(t, t));
}

Tensor d_exp(const VjpContext&, const Tensor& x) { return exp(x); }
Tensor d_exp2(const VjpContext&, const Tensor& x) { return mul(exp2(x), std::numbers::ln2); }
Tensor d_log(const VjpContext&, const Tensor& x) { return recip(x); }
Tensor d_log2(const VjpContext&, const Tensor& x) { return recip(mul(x, std::numbers::ln2)); }
Tensor d_abs(const VjpContext&, const Tensor& x) { return sign(x); }  // 0 at +-0
Tensor d_recip(const VjpContext&, const Tensor& x) {                   // -1 / x^2
  const Tensor r = recip(x);
  return neg(mul(r, r));
}
Tensor d_sqrt(const VjpContext&, const Tensor& x) { return div(scalar_like(x, 0.5f), sqrt(x)); }
Tensor d_rsqrt(const VjpContext&, const Tensor& x) { return mul(div(rsqrt(x), x), -0.5); }  // -x^(-3/2) / 2
Tensor d_sin(const VjpContext&, const Tensor& x) { return cos(x); }
Tensor d_cos(const VjpContext&, const Tensor& x) { return neg(sin(x)); }
Tensor d_erf(const VjpContext&, const Tensor& x) {  // 2 / sqrt(pi) exp(-x^2)
  return mul(exp(neg(mul(x, x))), 2.0 * std::numbers::inv_sqrtpi);
}

// relu: the cotangent passes where x > 0 (a select, so an infinite cotangent
// elsewhere still gives 0).
Grads relu_vjp(const VjpContext& c, const Tensor& g) {
  const Tensor& x = c.tensor(0);
  return {select(positive(x), g, zero(x))};
}
Grads neg_vjp(const VjpContext&, const Tensor& g) { return {neg(g)}; }
// Piecewise constant: the derivative is zero wherever it exists.
Grads zero_vjp(const VjpContext& c, const Tensor&) { return {zeros_like(c.tensor(0))}; }

}  // namespace

void add_unary_vjps(VjpTable& t) {
  using Op = policy::OperationId;
  vjp_slot(t, Op::relu) = relu_vjp;
  vjp_slot(t, Op::leaky_relu) = chain<d_leaky_relu>;
  vjp_slot(t, Op::elu) = chain<d_elu>;
  vjp_slot(t, Op::gelu) = chain<d_gelu>;
  vjp_slot(t, Op::sigmoid) = chain<d_sigmoid>;
  vjp_slot(t, Op::silu) = chain<d_silu>;
  vjp_slot(t, Op::softplus) = chain<d_softplus>;
  vjp_slot(t, Op::tanh) = chain<d_tanh>;
  vjp_slot(t, Op::exp) = chain<d_exp>;
  vjp_slot(t, Op::exp2) = chain<d_exp2>;
  vjp_slot(t, Op::log) = chain<d_log>;
  vjp_slot(t, Op::log2) = chain<d_log2>;
  vjp_slot(t, Op::abs) = chain<d_abs>;
  vjp_slot(t, Op::recip) = chain<d_recip>;
  vjp_slot(t, Op::sqrt) = chain<d_sqrt>;
  vjp_slot(t, Op::rsqrt) = chain<d_rsqrt>;
  vjp_slot(t, Op::sin) = chain<d_sin>;
  vjp_slot(t, Op::cos) = chain<d_cos>;
  vjp_slot(t, Op::erf) = chain<d_erf>;
  vjp_slot(t, Op::neg) = neg_vjp;
  for (const Op id : {Op::sign, Op::floor, Op::ceil, Op::round}) vjp_slot(t, id) = zero_vjp;
}

}  // namespace strideweave::autograd
