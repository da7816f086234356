// Internal: helpers shared by CPU's kernel families, and the family
// factories. Each factory maps one plan to its typed kernel (or an empty
// KernelFn when the family does not execute that plan): the dtype-stripping
// seam, run once at registration.
#pragma once

#include "carriers/int32_overflow.h"

#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>
#include <strideweave/execution.h>
#include <strideweave/int128.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "carriers/cpu/functors.h"
#include "carriers/cpu/strided.h"

namespace strideweave::carriers::cpu {

KernelFn arithmetic_kernel(const OperationPlan& plan);   // arithmetic.cpp
KernelFn unary_kernel(const OperationPlan& plan);        // unary.cpp
KernelFn reduction_kernel(const OperationPlan& plan);    // reductions.cpp
KernelFn structured_kernel(const OperationPlan& plan);   // structured.cpp
KernelFn fused_matmul_kernel(const OperationPlan& plan);  // matmul_fused.cpp (BINARY32_FUSED)

template <class T>
inline T* out_data(const Tensor& out) {
  return static_cast<const CPU&>(*out.carrier()).data<T>() + out.offset();
}


template <class T>
inline std::vector<std::int64_t> byte_strides(const std::vector<std::int64_t>& elements) {
  std::vector<std::int64_t> out;
  for (std::int64_t s : elements) out.push_back(s * static_cast<std::int64_t>(sizeof(T)));
  return out;
}

// Writes an element result; for a checked Int32 plan records overflow.
template <class O, class R>
inline void put(O* dst, R r, bool& bad) {
  if constexpr (std::is_same_v<O, std::int32_t> && std::is_same_v<R, std::int64_t>) {
    bad |= r < INT32_MIN_VALUE || r > INT32_MAX_VALUE;
    *dst = static_cast<std::int32_t>(r);
  } else {
    *dst = r;
  }
}

inline bool src_is(const OperationPlan& p, std::size_t i, const SimpleDType& d) { return p.operands()[i].dtype() == &d; }

}  // namespace strideweave::carriers::cpu
