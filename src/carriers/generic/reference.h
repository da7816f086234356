// Internal: the pieces every Generic reference kernel uses, and the family
// registration functions (one file per operation family).
#pragma once

#include <strideweave/carriers/generic.h>
#include <strideweave/execution.h>

#include <map>
#include <span>
#include <string>
#include <vector>

#include "carriers/generic/reference_math.h"
#include "policy/operation_ids.h"

namespace strideweave::carriers::generic {

// Reference kernels by operation id (operations.def): each handles every
// plan the registry resolves for its operation. Generic is the executable
// reference, so every listed operation has one (checked when the table is
// built).
using ReferenceKernels = std::map<policy::OperationId, KernelFn>;

void add_arithmetic_kernels(ReferenceKernels& kernels);   // arithmetic.cpp
void add_unary_kernels(ReferenceKernels& kernels);        // unary.cpp
void add_reduction_kernels(ReferenceKernels& kernels);    // reductions.cpp
void add_structured_kernels(ReferenceKernels& kernels);   // structured.cpp

// Calls f(coordinate) for every coordinate of `extents` in logical order.
template <class F>
inline void for_each_coordinate(std::span<const std::int64_t> extents, F&& f) {
  std::int64_t total = 1;
  for (std::int64_t e : extents) total *= e;
  std::vector<std::int64_t> c(extents.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t rest = k;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      c[i] = rest % extents[i];
      rest /= extents[i];
    }
    f(std::span<const std::int64_t>(c));
  }
}

// The logical ordinal (first axis fastest) of `coordinate` in `extents`.
inline std::int64_t logical_ordinal(std::span<const std::int64_t> extents, std::span<const std::int64_t> coordinate) {
  std::int64_t k = 0, stride = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    k += coordinate[i] * stride;
    stride *= extents[i];
  }
  return k;
}

inline void store(const Tensor& out, std::span<const std::int64_t> coordinate, const Value& v) {
  static_cast<Generic&>(*out.carrier()).slot(out.offset() + out.layout()(coordinate)) = v;
}

inline Value operand(const KernelCall& call, std::size_t i, std::span<const std::int64_t> coordinate) {
  const OperandPlan& p = call.plan.operands()[i];
  if (p.role() == OperandRole::WEAK_SCALAR) return call.scalar(i);
  return convert(call.tensor(i).at(coordinate), p.convert_to());
}

}  // namespace strideweave::carriers::generic
