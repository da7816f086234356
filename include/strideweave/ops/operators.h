// strideweave/ops/operators.h — C++ operators on Tensor, and C++ scalars as
// operands of the operations that have no weak-scalar form.
//
// Operators are the operations of ops/arithmetic.h and ops/unary.h, nothing
// else (the same plans, errors and broadcasting):
//
//   a + b  add        a - b  sub        a * b  mul        a / b  div
//   -a     neg        a == b eq         a != b ne
//   a < b  lt         a <= b le         a > b  lt(b, a)   a >= b le(b, a)
//
// Comparisons give Bool tensors (policy: Float32 operands only). Tensor
// identity is Tensor::is(), never ==.
//
// A C++ scalar next to a tensor:
// - mul and pow (and clamp's bounds) have a weak-scalar form in the central
//   policy (operation-dtype-policy R7): `x * 2`, `mul(x, 2)`, `pow(x, 3)`
//   resolve the (tensor, weak_scalar) plan: the scalar picks a branch but
//   has no dtype.
// - Every other binary operation has only a tensor/tensor form, so a C++
//   scalar becomes a rank-0 tensor on the other operand's carrier class
//   (scalar_like below) whose dtype is the C++ type's, never the other
//   operand's: float or double -> Float32 (rounded to nearest even),
//   integral types -> Int32 (OverflowError outside Int32), bool -> Bool.
//   So `x + 1` on an Int32 x is checked Int32 arithmetic, `x + 1.5f` on an
//   Int32 x is Float32, and `x > 0` on a Float32 x is a TypeError (the
//   comparisons admit Float32 operands only: write `x > 0.0f`). Nothing is
//   promoted that the policy would not promote for two tensors.
#pragma once

#include <type_traits>

#include <strideweave/ops/arithmetic.h>
#include <strideweave/ops/unary.h>
#include <strideweave/output.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// A C++ arithmetic value (bool, integral or floating).
template <class S>
concept CppScalar = std::is_arithmetic_v<S>;

// A rank-0 tensor on the exact carrier class of `like` (fresh storage)
// holding `value` as the dtype of its C++ type (see above). OverflowError for
// an integer outside Int32; ValueError when the class cannot store that
// dtype; RuntimeError when `like`'s carrier is released.
Tensor scalar_like(const Tensor& like, WeakScalar value);
template <CppScalar S>
Tensor scalar_like(const Tensor& like, S value) {
  return scalar_like(like, WeakScalar(value));
}

// The tensor/tensor operations with a C++ scalar on either side.
#define STRIDEWEAVE_SCALAR_OPERANDS(op)                                        \
  template <CppScalar S>                                                       \
  Tensor op(const Tensor& a, S b, const Output& out = {}) {                    \
    return op(a, scalar_like(a, b), out);                                      \
  }                                                                            \
  template <CppScalar S>                                                       \
  Tensor op(S a, const Tensor& b, const Output& out = {}) {                    \
    return op(scalar_like(b, a), b, out);                                      \
  }
// The operations with these overloads are listed in operations.def.
#define SW_SCALAR_OPERANDS(op) STRIDEWEAVE_SCALAR_OPERANDS(op)
#include <strideweave/operations.def>
#undef STRIDEWEAVE_SCALAR_OPERANDS

// ---- operators

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
template <CppScalar S>
Tensor operator+(const Tensor& a, S b) { return add(a, b); }
template <CppScalar S>
Tensor operator+(S a, const Tensor& b) { return add(a, b); }

inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
template <CppScalar S>
Tensor operator-(const Tensor& a, S b) { return sub(a, b); }
template <CppScalar S>
Tensor operator-(S a, const Tensor& b) { return sub(a, b); }

inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
template <CppScalar S>
Tensor operator*(const Tensor& a, S b) { return mul(a, WeakScalar(b)); }
template <CppScalar S>
Tensor operator*(S a, const Tensor& b) { return mul(WeakScalar(a), b); }

inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
template <CppScalar S>
Tensor operator/(const Tensor& a, S b) { return div(a, b); }
template <CppScalar S>
Tensor operator/(S a, const Tensor& b) { return div(a, b); }

inline Tensor operator-(const Tensor& a) { return neg(a); }

inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
template <CppScalar S>
Tensor operator==(const Tensor& a, S b) { return eq(a, b); }
template <CppScalar S>
Tensor operator==(S a, const Tensor& b) { return eq(a, b); }

inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
template <CppScalar S>
Tensor operator!=(const Tensor& a, S b) { return ne(a, b); }
template <CppScalar S>
Tensor operator!=(S a, const Tensor& b) { return ne(a, b); }

inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
template <CppScalar S>
Tensor operator<(const Tensor& a, S b) { return lt(a, b); }
template <CppScalar S>
Tensor operator<(S a, const Tensor& b) { return lt(a, b); }

inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
template <CppScalar S>
Tensor operator<=(const Tensor& a, S b) { return le(a, b); }
template <CppScalar S>
Tensor operator<=(S a, const Tensor& b) { return le(a, b); }

inline Tensor operator>(const Tensor& a, const Tensor& b) { return lt(b, a); }
template <CppScalar S>
Tensor operator>(const Tensor& a, S b) { return lt(b, a); }
template <CppScalar S>
Tensor operator>(S a, const Tensor& b) { return lt(b, a); }

inline Tensor operator>=(const Tensor& a, const Tensor& b) { return le(b, a); }
template <CppScalar S>
Tensor operator>=(const Tensor& a, S b) { return le(b, a); }
template <CppScalar S>
Tensor operator>=(S a, const Tensor& b) { return le(b, a); }

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
