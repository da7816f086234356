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

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---- activations (Float32 or Int32 -> Float32; relu keeps Int32)

// relu(x) = x > 0 ? x : +0 (NaN propagates; -0 becomes +0); Int32 stays Int32.
Tensor relu(const Tensor& x, const Output& out = {});
// elu(x, alpha) = x > 0 ? x : alpha_f * expm1f(x), alpha_f = alpha rounded to
// binary32. NaN propagates. ValueError when alpha_f is not finite.
Tensor elu(const Tensor& x, double alpha = 1.0, const Output& out = {});
// exp(x) = expf(x).
Tensor exp(const Tensor& x, const Output& out = {});
// gelu(x, approximate): approximate=false: 0.5f*x * (1 + erff(x * 0.70710677f));
// approximate=true: the tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
// Step orders in docs/operations/unary.md; gelu(-inf) = -0 (the limit).
Tensor gelu(const Tensor& x, bool approximate = false, const Output& out = {});
// leaky_relu(x, negative_slope) = x > 0 ? x : x * slope_f (NaN propagates,
// -0 * slope keeps the product's sign). ValueError when slope_f is not finite.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01, const Output& out = {});
// sigmoid(x) = 1 / (1 + expf(-x)).
Tensor sigmoid(const Tensor& x, const Output& out = {});
// silu(x) = x * sigmoid(x) (the product of x and the rounded sigmoid);
// silu(-inf) = -0 (the limit).
Tensor silu(const Tensor& x, const Output& out = {});
// softplus(x, beta, threshold) = x * beta_f > threshold_f ? x
//                                : log1pf(expf(x * beta_f)) / beta_f.
// ValueError when beta_f is zero or not finite, or threshold is NaN.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0,
                const Output& out = {});
// tanh(x) = tanhf(x).
Tensor tanh(const Tensor& x, const Output& out = {});

// ---- math (Float32 only)

// neg(x) = -x (flips the sign of zeros, infinities and NaN).
Tensor neg(const Tensor& x, const Output& out = {});
// abs(x) = fabsf(x) (clears the sign bit; abs(-0) = +0, abs(NaN) is NaN).
Tensor abs(const Tensor& x, const Output& out = {});
// sign(x) = x > 0 ? 1 : x < 0 ? -1 : x (so +-0 keep their sign, NaN stays NaN).
Tensor sign(const Tensor& x, const Output& out = {});
// recip(x) = 1.0f / x.
Tensor recip(const Tensor& x, const Output& out = {});
// sqrt(x) = sqrtf(x) (correctly rounded; sqrt(-0) = -0, negatives -> NaN).
Tensor sqrt(const Tensor& x, const Output& out = {});
// rsqrt(x) = 1.0f / sqrtf(x): two roundings, never an approximation.
Tensor rsqrt(const Tensor& x, const Output& out = {});
// exp2(x) = exp2f(x); log(x) = logf(x); log2(x) = log2f(x); sin, cos, erf:
// sinf, cosf, erff.
Tensor exp2(const Tensor& x, const Output& out = {});
Tensor log(const Tensor& x, const Output& out = {});
Tensor log2(const Tensor& x, const Output& out = {});
Tensor sin(const Tensor& x, const Output& out = {});
Tensor cos(const Tensor& x, const Output& out = {});
Tensor erf(const Tensor& x, const Output& out = {});
// floor(x) = floorf(x); ceil(x) = ceilf(x) (exact; keep the sign of zero).
Tensor floor(const Tensor& x, const Output& out = {});
Tensor ceil(const Tensor& x, const Output& out = {});
// round(x): to the nearest integer, ties to even (round(0.5) = 0,
// round(2.5) = 2, round(-0.5) = -0).
Tensor round(const Tensor& x, const Output& out = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
