// strideweave/ops/arithmetic.h — elementwise arithmetic, comparisons, clamp, select.
// Every function follows the front-end contract of <strideweave/ops.h>:
// resolve the plan (operation-dtype-policy.md), broadcast the tensor operands
// (numpy rules, docs/broadcasting.md), gate, allocate a fresh result with the
// broadcast (flat) shape, run the kernel. A failed call changes no operand.
// Exact semantics: docs/operations/arithmetic.md.
//
// Errors common to every function below:
//   TypeError            an operand dtype outside the operation's domain
//                        (e.g. Int32 into maximum), operands on different
//                        carrier classes
//   NotImplementedError  a dtype that is not implemented in that slot (Bool
//                        outside select's condition, Float64, ...);
//                        UnsupportedOperationPlan when the carrier class has
//                        no kernel for the plan
//   ValueError           shapes that do not broadcast
//   RuntimeError         a released carrier
//   OverflowError        a checked Int32 plan (INT32_EXACT_CHECKED) whose
//                        exact result leaves [-2**31, 2**31-1]; a weak integer
//                        scalar outside Int32 that an integer plan converts
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

// ---- arithmetic (Int32 x Int32 stays Int32, checked; otherwise Float32)

// add(a, b): elementwise sum with broadcasting.
Tensor add(const Tensor& a, const Tensor& b, const Output& out = {});
// sub(a, b): a - b with broadcasting. Int32 x Int32 -> Int32 (checked:
// OverflowError when the exact difference leaves Int32); otherwise both
// operands convert to Float32 and the difference is one binary32 step.
Tensor sub(const Tensor& a, const Tensor& b, const Output& out = {});
// elementwise_mul(a, b): elementwise product with broadcasting.
Tensor elementwise_mul(const Tensor& a, const Tensor& b, const Output& out = {});
// mul: tensor/tensor, tensor/weak-scalar and weak-scalar/tensor. The
// weak-scalar/tensor form resolves the registry's (tensor, weak_scalar) plan:
// multiplication is commutative in every plan's arithmetic, so the result is
// identical (docs/policy.md).
Tensor mul(const Tensor& a, const Tensor& b, const Output& out = {});
Tensor mul(const Tensor& a, WeakScalar b, const Output& out = {});
Tensor mul(WeakScalar a, const Tensor& b, const Output& out = {});
// div(a, b): true division, always Float32 (both operands convert first):
// x/0 = +-inf, 0/0 = NaN, one binary32 division.
Tensor div(const Tensor& a, const Tensor& b, const Output& out = {});
// pow(base, exponent):
//   pow(Tensor, Tensor)      Float32: both convert, powf per element.
//   pow(Tensor, WeakScalar)  Int32 base with an integer exponent in
//                            [0, 2**31-1]: exact Int32 power (OverflowError
//                            when it leaves Int32; 0**0 = 1). Any other
//                            combination: Float32 powf.
//   pow(WeakScalar, Tensor)  Float32: the scalar base rounds to binary32,
//                            the tensor converts, powf per element. The
//                            result has the tensor's shape.
// powf follows C/IEEE: pow(x, +-0) = 1 (also for NaN x), pow(1, y) = 1 (also
// for NaN y), pow(-1, +-inf) = 1, a negative finite base with a non-integer
// exponent gives NaN.
Tensor pow(const Tensor& base, const Tensor& exponent, const Output& out = {});
Tensor pow(const Tensor& base, WeakScalar exponent, const Output& out = {});
Tensor pow(WeakScalar base, const Tensor& exponent, const Output& out = {});
// rem(a, b): Float32 only. The truncated remainder of C fmodf (torch.fmod,
// not Python's %): sign of the dividend, exact in binary32; rem(x, 0) = NaN,
// rem(+-inf, y) = NaN, rem(x, +-inf) = x for finite x.
Tensor rem(const Tensor& a, const Tensor& b, const Output& out = {});
// maximum(a, b) / minimum(a, b): Float32 only. A NaN in either operand gives
// a quiet NaN (the first NaN operand, quieted); maximum(-0, +0) = +0 and
// minimum(-0, +0) = -0 in either order.
Tensor maximum(const Tensor& a, const Tensor& b, const Output& out = {});
Tensor minimum(const Tensor& a, const Tensor& b, const Output& out = {});
// clamp(x, lo, hi) = minimum(maximum(x, lo), hi), Float32 only, with the NaN
// and signed-zero rules of maximum/minimum (a NaN anywhere -> NaN; lo > hi ->
// hi). Tensor operands broadcast together (three-way); a weak bound is any
// real number rounded to binary32 without a range check (1e40 -> +inf).
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, const Output& out = {});
Tensor clamp(const Tensor& x, const Tensor& lo, WeakScalar hi, const Output& out = {});
Tensor clamp(const Tensor& x, WeakScalar lo, const Tensor& hi, const Output& out = {});
Tensor clamp(const Tensor& x, WeakScalar lo, WeakScalar hi, const Output& out = {});

// ---- comparisons (Float32 operands, Bool result; IEEE: NaN compares
// unequal and unordered, -0 == +0)

// eq: a == b; ne: a != b (true with a NaN); lt: a < b; le: a <= b.
Tensor eq(const Tensor& a, const Tensor& b, const Output& out = {});
Tensor ne(const Tensor& a, const Tensor& b, const Output& out = {});
Tensor lt(const Tensor& a, const Tensor& b, const Output& out = {});
Tensor le(const Tensor& a, const Tensor& b, const Output& out = {});
// logical_not(x): Float32 only; x == 0 (so -0 -> true, NaN -> false). Bool
// result with x's shape.
Tensor logical_not(const Tensor& x, const Output& out = {});

// ---- selection

// select(cond, a, b): cond ? a : b elementwise, with cond, a and b broadcast
// together (three-way). cond must be Bool (Float32 -> TypeError; Int32 ->
// TypeError), a and b Float32 (Int32 -> TypeError). The chosen element is
// copied bit for bit (NaN payloads and signed zeros kept).
Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b, const Output& out = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
