// strideweave/ops/arithmetic.h — elementwise arithmetic, comparisons, clamp, select.
// Every function follows the front-end contract of <strideweave/ops.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// add(a, b): elementwise sum with broadcasting.
Tensor add(const Tensor& a, const Tensor& b);
// elementwise_mul(a, b): elementwise product with broadcasting.
Tensor elementwise_mul(const Tensor& a, const Tensor& b);
// mul: tensor/tensor, tensor/weak-scalar and weak-scalar/tensor. The
// weak-scalar/tensor form resolves the registry's (tensor, weak_scalar) plan:
// multiplication is commutative in every plan's arithmetic, so the result is
// identical (docs/policy.md).
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, WeakScalar b);
Tensor mul(WeakScalar a, const Tensor& b);

}  // namespace strideweave
