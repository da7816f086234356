// CPU's vectorised Float32 kernels: Highway with runtime dynamic dispatch.
// Contracts and the choice of Highway: simd.h.
//
// hwy/foreach_target.h re-includes this file once per x86 target Highway can
// build (HWY_TARGET_INCLUDE below); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target in its own namespace
// (HWY_NAMESPACE), and the HWY_ONCE part, compiled once, exports a table of
// the per-target functions and dispatches through it (HWY_DYNAMIC_DISPATCH
// picks the best target of the running CPU on the first call). Threading
// stays in the HWY_ONCE part: the per-target code only handles one range.
//
// Nothing here fuses or reassociates a binary32 step of a result that has to
// match the scalar code bit for bit: Add/Sub/Mul/Div are the plain IEEE vector
// instructions, and the library is built with -ffp-contract=off. (Highway's
// Exp uses MulAdd internally; exp is allowed 4 ulp.)

// Non-target part, processed once (this file is included once per target).
#ifndef STRIDEWEAVE_CPU_SIMD_ONCE
#define STRIDEWEAVE_CPU_SIMD_ONCE

#include "carriers/cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "carriers/cpu/parallel.h"

namespace strideweave::carriers::cpu::simd::detail {

// exp's vector range. Highway 1.0.3 documents Exp for float32 on
// [-FLT_MAX, +104] with 1 ulp (hwy/contrib/math/math-inl.h), but it flushes
// results below e**-104 to zero and builds 2**q from two normal powers of
// two, so subnormal results and overflow are not expf's. Inside [-87, 88]
// every result is a normal, finite binary32 (e**-87 ~ 1.6e-38 > FLT_MIN,
// e**88 ~ 1.7e38 < FLT_MAX); every other input (NaN, +-inf, huge, tiny) goes
// to std::exp.
constexpr float kExpLow = -87.0f;
constexpr float kExpHigh = 88.0f;

// sum's fixed block length (elements): a block is summed by one thread with
// vector accumulators; the block sums are then combined pairwise.
constexpr std::int64_t kSumBlock = 4096;

// v[0] + ... + v[m-1] combined pairwise, level by level, in a fixed order
// (an odd last element moves up a level unchanged). Overwrites v. m >= 1.
template <class T>
T pairwise(T* v, std::size_t m) {
  while (m > 1) {
    const std::size_t half = m / 2;
    for (std::size_t j = 0; j < half; ++j) v[j] = v[2 * j] + v[2 * j + 1];
    if (m % 2 != 0) v[half] = v[m - 1];
    m = half + m % 2;
  }
  return v[0];
}

}  // namespace strideweave::carriers::cpu::simd::detail

#endif  // STRIDEWEAVE_CPU_SIMD_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "carriers/cpu/simd.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace strideweave::carriers::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- elementwise binary

// x86 returns the first NaN operand (quieted) when both are NaN, and so
// does the scalar `a op b` (docs/operations/arithmetic.md). The compiler
// treats a vector add or multiply as commutative and may swap the operands
// of the instruction, so for those two a lane whose `a` is NaN takes a,
// quieted, explicitly. (sub and div cannot be swapped.)
template <class V>
HWY_INLINE V FirstNaN(V a, V r) {
  const hn::DFromV<V> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const V quiet_a = hn::BitCast(d, hn::Or(hn::BitCast(du, a), hn::Set(du, 0x00400000u)));
  return hn::IfThenElse(hn::IsNaN(a), quiet_a, r);
}

struct AddOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return FirstNaN(a, hn::Add(a, b));
  }
};
struct SubOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return hn::Sub(a, b);
  }
};
struct MulOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return FirstNaN(a, hn::Mul(a, b));
  }
};
struct DivOp {
  template <class V>
  HWY_INLINE V operator()(V a, V b) const {
    return hn::Div(a, b);
  }
};

// Operand sources: a contiguous array, or one value in every lane.
struct ArrayIn {
  const float* p;
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, std::int64_t i) const {
    return hn::LoadU(d, p + i);
  }
  // The r < Lanes(d) elements from i, zero-padded.
  template <class D>
  HWY_INLINE hn::Vec<D> load_tail(D d, std::int64_t i, std::size_t r) const {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(buf, p + i, r * sizeof(float));
    return hn::Load(d, buf);
  }
};
struct ScalarIn {
  float v;
  template <class D>
  HWY_INLINE hn::Vec<D> load(D d, std::int64_t) const {
    return hn::Set(d, v);
  }
  template <class D>
  HWY_INLINE hn::Vec<D> load_tail(D d, std::int64_t, std::size_t) const {
    return hn::Set(d, v);
  }
};

// out[i] = op(a[i], b[i]). The tail goes through the same vector
// instruction on zero-padded copies, so every element gets the same
// instruction (the padding lanes are discarded).
template <class Op, class A, class B>
HWY_INLINE void BinaryLoop(Op op, A a, B b, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto r0 = op(a.load(d, i), b.load(d, i));
    const auto r1 = op(a.load(d, i + N), b.load(d, i + N));
    const auto r2 = op(a.load(d, i + 2 * N), b.load(d, i + 2 * N));
    const auto r3 = op(a.load(d, i + 3 * N), b.load(d, i + 3 * N));
    hn::StoreU(r0, d, out + i);
    hn::StoreU(r1, d, out + i + N);
    hn::StoreU(r2, d, out + i + 2 * N);
    hn::StoreU(r3, d, out + i + 3 * N);
  }
  for (; i + N <= n; i += N) hn::StoreU(op(a.load(d, i), b.load(d, i)), d, out + i);
  if (i < n) {
    const auto r = static_cast<std::size_t>(n - i);
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(op(a.load_tail(d, i, r), b.load_tail(d, i, r)), d, buf);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

template <class A, class B>
HWY_INLINE void BinaryAny(int op, A a, B b, float* out, std::int64_t n) {
  switch (static_cast<Binary>(op)) {
    case Binary::Add: return BinaryLoop(AddOp{}, a, b, out, n);
    case Binary::Sub: return BinaryLoop(SubOp{}, a, b, out, n);
    case Binary::Mul: return BinaryLoop(MulOp{}, a, b, out, n);
    case Binary::Div: return BinaryLoop(DivOp{}, a, b, out, n);
  }
}

void BinaryF32(int op, const float* a, const float* b, float* out, std::int64_t n) {
  BinaryAny(op, ArrayIn{a}, ArrayIn{b}, out, n);
}

void BinaryScalarF32(int op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  if (scalar_left) BinaryAny(op, ScalarIn{b}, ArrayIn{a}, out, n);
  else BinaryAny(op, ArrayIn{a}, ScalarIn{b}, out, n);
}

// ---- exp

void ExpF32(const float* x, float* out, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  const auto lo = hn::Set(d, detail::kExpLow), hi = hn::Set(d, detail::kExpHigh);
  std::int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    // NaN compares false: a NaN lane sends its vector to std::exp.
    if (hn::AllTrue(d, hn::And(hn::Ge(v, lo), hn::Le(v, hi)))) {
      hn::StoreU(hn::Exp(d, v), d, out + i);
    } else {
      for (std::int64_t k = i; k < i + N; ++k) out[k] = std::exp(x[k]);
    }
  }
  for (; i < n; ++i) out[i] = std::exp(x[i]);
}

// ---- sum

// One block (n <= kSumBlock) in Float32: four vector accumulators, combined
// (0+1)+(2+3), their lanes pairwise, then the scalar tail.
float BlockSumF32(const float* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto N = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::LoadU(d, x + i));
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  HWY_ALIGN float lanes[HWY_MAX_BYTES / sizeof(float)];
  hn::Store(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, lanes);
  return detail::pairwise(lanes, static_cast<std::size_t>(N)) + tail;
}

// As BlockSumF32 in Float64: half-width float loads widened exactly.
double BlockSumWide(const float* x, std::int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const auto N = static_cast<std::int64_t>(hn::Lanes(dd));
  auto a0 = hn::Zero(dd), a1 = hn::Zero(dd), a2 = hn::Zero(dd), a3 = hn::Zero(dd);
  std::int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::PromoteTo(dd, hn::LoadU(df, x + i)));
    a1 = hn::Add(a1, hn::PromoteTo(dd, hn::LoadU(df, x + i + N)));
    a2 = hn::Add(a2, hn::PromoteTo(dd, hn::LoadU(df, x + i + 2 * N)));
    a3 = hn::Add(a3, hn::PromoteTo(dd, hn::LoadU(df, x + i + 3 * N)));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::PromoteTo(dd, hn::LoadU(df, x + i)));
  double tail = 0.0;
  for (; i < n; ++i) tail += static_cast<double>(x[i]);
  HWY_ALIGN double lanes[HWY_MAX_BYTES / sizeof(double)];
  hn::Store(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), dd, lanes);
  return detail::pairwise(lanes, static_cast<std::size_t>(N)) + tail;
}

// sums[b] = the sum of block b of x (n elements in all), b in [first, last).
void BlockSumsF32(const float* x, std::int64_t n, std::int64_t first, std::int64_t last, float* sums) {
  for (std::int64_t b = first; b < last; ++b) {
    const std::int64_t at = b * detail::kSumBlock;
    sums[b] = BlockSumF32(x + at, std::min(detail::kSumBlock, n - at));
  }
}
void BlockSumsWide(const float* x, std::int64_t n, std::int64_t first, std::int64_t last, double* sums) {
  for (std::int64_t b = first; b < last; ++b) {
    const std::int64_t at = b * detail::kSumBlock;
    sums[b] = BlockSumWide(x + at, std::min(detail::kSumBlock, n - at));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace strideweave::carriers::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strideweave::carriers::cpu::simd {

HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryScalarF32);
HWY_EXPORT(ExpF32);
HWY_EXPORT(BlockSumF32);
HWY_EXPORT(BlockSumWide);
HWY_EXPORT(BlockSumsF32);
HWY_EXPORT(BlockSumsWide);

namespace {

// parallel_for grains (elements): an array shorter than twice the grain runs
// on the calling thread, where a thread team's start-up (a few microseconds)
// would cost more than it saves. Elementwise binary ops are memory-bound
// (~12 bytes per element), so they need large ranges to pay for a team;
// exp does ~20 vector instructions per vector and pays sooner; a sum reads 4
// bytes per element and is the cheapest per element.
constexpr std::int64_t kElementwiseGrain = std::int64_t{64} * 1024;
constexpr std::int64_t kExpGrain = std::int64_t{16} * 1024;
constexpr std::int64_t kSumGrain = std::int64_t{256} * 1024;
// kSumGrain in whole blocks.
constexpr std::int64_t kSumGrainBlocks = kSumGrain / detail::kSumBlock;

// Block sums into a buffer (in parallel over blocks), then the pairwise tree
// on the calling thread: the same bits for every thread count.
template <class Acc, class One, class Many>
Acc blocked_sum(const float* x, std::int64_t n, One one, Many many) {
  if (n <= detail::kSumBlock) return one(x, n);
  const std::int64_t blocks = (n + detail::kSumBlock - 1) / detail::kSumBlock;
  constexpr std::int64_t kOnStack = 256;
  Acc stack[kOnStack];
  std::vector<Acc> heap;
  Acc* sums = stack;
  if (blocks > kOnStack) {
    heap.resize(static_cast<std::size_t>(blocks));
    sums = heap.data();
  }
  parallel_for(blocks, kSumGrainBlocks, [&](std::int64_t first, std::int64_t last) { many(x, n, first, last, sums); });
  return detail::pairwise(sums, static_cast<std::size_t>(blocks));
}

}  // namespace

void binary_f32(Binary op, const float* a, const float* b, float* out, std::int64_t n) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryF32)(static_cast<int>(op), a + first, b + first, out + first, last - first);
  });
}

void binary_f32_scalar(Binary op, const float* a, float b, float* out, std::int64_t n, bool scalar_left) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(BinaryScalarF32)(static_cast<int>(op), a + first, b, out + first, last - first, scalar_left);
  });
}

void exp_f32(const float* x, float* out, std::int64_t n) {
  parallel_for(n, kExpGrain, [&](std::int64_t first, std::int64_t last) {
    HWY_DYNAMIC_DISPATCH(ExpF32)(x + first, out + first, last - first);
  });
}

float sum_f32(const float* x, std::int64_t n) {
  return blocked_sum<float>(
      x, n, [](const float* p, std::int64_t m) { return HWY_DYNAMIC_DISPATCH(BlockSumF32)(p, m); },
      [](const float* p, std::int64_t m, std::int64_t first, std::int64_t last, float* sums) {
        HWY_DYNAMIC_DISPATCH(BlockSumsF32)(p, m, first, last, sums);
      });
}

double sum_f32_wide(const float* x, std::int64_t n) {
  return blocked_sum<double>(
      x, n, [](const float* p, std::int64_t m) { return HWY_DYNAMIC_DISPATCH(BlockSumWide)(p, m); },
      [](const float* p, std::int64_t m, std::int64_t first, std::int64_t last, double* sums) {
        HWY_DYNAMIC_DISPATCH(BlockSumsWide)(p, m, first, last, sums);
      });
}

}  // namespace strideweave::carriers::cpu::simd
#endif  // HWY_ONCE
