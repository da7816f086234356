// strideweave/ops/unary.h — unary math and activations.
// Every function follows the front-end contract of <strideweave/ops.h>.
//
// Exact semantics, step orders and errors: docs/operations/unary.md.
// - Activations (relu, elu, exp, gelu, leaky_relu, sigmoid, silu, softplus,
//   tanh) accept Float32 and Int32. relu keeps the dtype; the others convert
//   an Int32 operand to Float32 (round to nearest even) and return Float32.
// - Math functions (neg, abs, sign, recip, sqrt, rsqrt, exp2, log, log2, sin,
//   cos, erf, floor, ceil, round) accept Float32 only; Int32 is a TypeError
//   (the policy's domain check).
// Every step is one binary32 operation (round to nearest even); IEEE specials
// propagate and nothing raises for a value. The result has x's top-level
// extents in a flat, compact layout. Options are validated (ValueError)
// before anything is allocated; a failed call changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/output.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>
#include <strideweave/ops/option_defaults.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---- f(x) with no option: one declaration per UNARY row of operations.def,
//      Tensor <name>(const Tensor& x, const Output& out = {});
// (relu, exp, sigmoid, silu, tanh; neg, abs, sign, recip, sqrt, rsqrt, exp2,
// log, log2, sin, cos, erf, floor, ceil, round). Each row carries its
// formula; docs/operations/unary.md has the step orders.
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) SW_UNARY_DECLARATION_##form(id)
#define SW_UNARY_DECLARATION_OWN(id)
#define SW_UNARY_DECLARATION_UNARY(id) Tensor id(const Tensor& x, const Output& out = {});
#include <strideweave/operations.def>
#undef SW_UNARY_DECLARATION_OWN
#undef SW_UNARY_DECLARATION_UNARY

// ---- activations with options (Float32 or Int32 -> Float32)

// elu(x, alpha) = x > 0 ? x : alpha_f * expm1f(x), alpha_f = alpha rounded to
// binary32. NaN propagates. ValueError when alpha_f is not finite.
Tensor elu(const Tensor& x, double alpha = detail::option_defaults::elu_alpha, const Output& out = {});
// gelu(x, approximate): approximate=false: 0.5f*x * (1 + erff(x * 0.70710677f));
// approximate=true: the tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
// Step orders in docs/operations/unary.md; gelu(-inf) = -0 (the limit).
Tensor gelu(const Tensor& x, bool approximate = detail::option_defaults::gelu_approximate, const Output& out = {});
// leaky_relu(x, negative_slope) = x > 0 ? x : x * slope_f (NaN propagates,
// -0 * slope keeps the product's sign). ValueError when slope_f is not finite.
Tensor leaky_relu(const Tensor& x, double negative_slope = detail::option_defaults::leaky_relu_negative_slope,
                  const Output& out = {});
// softplus(x, beta, threshold) = x * beta_f > threshold_f ? x
//                                : log1pf(expf(x * beta_f)) / beta_f.
// ValueError when beta_f is zero or not finite, or threshold is NaN.
Tensor softplus(const Tensor& x, double beta = detail::option_defaults::softplus_beta,
                double threshold = detail::option_defaults::softplus_threshold, const Output& out = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
