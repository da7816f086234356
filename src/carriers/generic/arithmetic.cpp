// Generic reference kernels: elementwise arithmetic, comparisons, clamp and
// select. Semantics: docs/operations/arithmetic.md.
#include <bit>
#include <type_traits>
#include <cmath>
#include <vector>

#include "carriers/generic/reference.h"

namespace strideweave::carriers::generic {
namespace {

// ---- the element loop: every operand converted to its plan's convert_to
// (weak scalars arrive materialised), the result stored at the same
// coordinate, in logical order.

// f(values) or f(values, ordinal): the ordinal is the result element's
// logical ordinal (for the OverflowError of a checked plan).
template <class F>
void elementwise(const KernelCall& call, F f) {
  const std::size_t n = call.plan.operands().size();
  std::vector<Value> v(n);
  std::int64_t ordinal = 0;
  for_each_coordinate(call.output.shape().extents(), [&](std::span<const std::int64_t> c) {
    for (std::size_t i = 0; i < n; ++i) v[i] = operand(call, i, c);
    if constexpr (std::is_invocable_v<F, const std::vector<Value>&, std::int64_t>) store(call.output, c, f(v, ordinal));
    else store(call.output, c, f(v));
    ++ordinal;
  });
}

// A numeric binary operation: binary32 on Float32 plans, exact (checked at the
// narrowing) on Int32 plans.
using FloatBinary = float (*)(float, float);
using ExactBinary = int128 (*)(int128, int128);

KernelFn numeric_binary(FloatBinary f, ExactBinary exact) {
  return [f, exact](const KernelCall& call) {
    const bool binary32 = call.plan.compute() == Arithmetic::BINARY32;
    const std::string& op = call.plan.operation();
    elementwise(call, [&](const std::vector<Value>& v, std::int64_t ordinal) {
      if (binary32) return Value::from_float32(f(v[0].f, v[1].f));
      return Value::from_int32(narrow_int32(exact(v[0].i, v[1].i), op, ordinal));
    });
  };
}

KernelFn float_binary(FloatBinary f) {
  return [f](const KernelCall& call) {
    elementwise(call, [&](const std::vector<Value>& v) { return Value::from_float32(f(v[0].f, v[1].f)); });
  };
}

using Comparison = bool (*)(float, float);
KernelFn comparison(Comparison f) {
  return [f](const KernelCall& call) {
    elementwise(call, [&](const std::vector<Value>& v) { return Value::from_bool(f(v[0].f, v[1].f)); });
  };
}

// ---- element semantics

// A NaN with its quiet bit set (payload and sign kept).
float quieted(float nan) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(nan) | 0x00400000u); }

// NaN: the first NaN operand, quieted. Equal operands are +-0 or equal
// numbers: maximum prefers +0, minimum -0.
float maximum_f32(float x, float y) {
  if (std::isnan(x)) return quieted(x);
  if (std::isnan(y)) return quieted(y);
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}
float minimum_f32(float x, float y) {
  if (std::isnan(x)) return quieted(x);
  if (std::isnan(y)) return quieted(y);
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

// The exact integer power base**e for 0 <= e <= 2**31-1. Bases -1, 0, 1 are
// answered directly; for |base| >= 2 every multiplication at least doubles
// the magnitude, so the loop leaves Int32 (and stops) within 32 steps. An
// out-of-range return value makes narrow_int32 raise.
int128 exact_pow(int128 base, int128 e) {
  if (e == 0) return 1;
  if (base == 0 || base == 1) return base;
  if (base == -1) return e % 2 == 0 ? 1 : -1;
  int128 r = 1;
  for (int128 k = 0; k < e; ++k) {
    r *= base;
    if (r < INT32_MIN_VALUE || r > INT32_MAX_VALUE) break;
  }
  return r;
}

}  // namespace

void add_arithmetic_kernels(ReferenceKernels& kernels) {
  using Op = policy::OperationId;
  kernels[Op::add] = numeric_binary([](float x, float y) { return x + y; }, [](int128 x, int128 y) { return x + y; });
  kernels[Op::sub] = numeric_binary([](float x, float y) { return x - y; }, [](int128 x, int128 y) { return x - y; });
  const KernelFn product =
      numeric_binary([](float x, float y) { return x * y; }, [](int128 x, int128 y) { return x * y; });
  kernels[Op::elementwise_mul] = product;
  kernels[Op::mul] = product;
  kernels[Op::div] = float_binary([](float x, float y) { return x / y; });
  // Float32 plans: C powf; the Int32 plan (Int32 base, exponent 0..2**31-1).
  kernels[Op::pow] = numeric_binary([](float x, float y) { return std::pow(x, y); }, exact_pow);
  kernels[Op::rem] = float_binary([](float x, float y) { return std::fmod(x, y); });
  kernels[Op::maximum] = float_binary(maximum_f32);
  kernels[Op::minimum] = float_binary(minimum_f32);
  kernels[Op::eq] = comparison([](float x, float y) { return x == y; });
  kernels[Op::ne] = comparison([](float x, float y) { return x != y; });
  kernels[Op::lt] = comparison([](float x, float y) { return x < y; });
  kernels[Op::le] = comparison([](float x, float y) { return x <= y; });
  kernels[Op::logical_not] = [](const KernelCall& call) {
    elementwise(call, [](const std::vector<Value>& v) { return Value::from_bool(v[0].f == 0.0f); });
  };
  kernels[Op::clamp] = [](const KernelCall& call) {
    elementwise(call, [](const std::vector<Value>& v) {
      return Value::from_float32(minimum_f32(maximum_f32(v[0].f, v[1].f), v[2].f));
    });
  };
  kernels[Op::select] = [](const KernelCall& call) {
    elementwise(call, [](const std::vector<Value>& v) { return v[0].b ? v[1] : v[2]; });
  };
}

}  // namespace strideweave::carriers::generic
