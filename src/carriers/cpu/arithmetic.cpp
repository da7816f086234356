// CPU kernels: elementwise arithmetic, comparisons, clamp and select.
// Semantics: docs/operations/arithmetic.md.
//
// One template, `elementwise<O, Op, Ins...>`, serves every plan of the
// family: each operand is a tensor (source type, converted type) or a weak
// scalar materialised by the front end (read through a stride-0 "pointer" to
// a local copy). The factory picks the instantiation once per plan. The
// layout case is chosen once per call: output and tensor operands all compact
// -> one flat run, split across threads with parallel_for (Float32
// add/sub/mul/div with Float32 operands take simd.h's vector kernels there);
// otherwise the strided walk of strided.h, whose rows take a unit-stride loop
// when every operand is unit-stride along axis 0.
#include <atomic>
#include <bit>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "carriers/cpu/kernels.h"
#include "carriers/cpu/parallel.h"
#include "carriers/cpu/simd.h"
#include "policy/operation_ids.h"

namespace strideweave::carriers::cpu {
namespace {

// ---- op math (BINARY32 functors are plain float steps; checked Int32
// functors return the exact 64-bit result, put() flags it when it leaves
// Int32).

struct SubF32 {
  float operator()(float a, float b) const noexcept { return a - b; }
};
struct SubI32Checked {
  std::int64_t operator()(std::int32_t a, std::int32_t b) const noexcept { return static_cast<std::int64_t>(a) - b; }
};
struct DivF32 {
  float operator()(float a, float b) const noexcept { return a / b; }
};
struct PowF32 {
  float operator()(float a, float b) const noexcept { return std::pow(a, b); }  // powf
};
// Exact base**e for 0 <= e <= 2**31-1 by repeated squaring; bases -1, 0, 1
// exit at once, larger bases leave Int32 within 31 squarings.
struct PowI32Checked {
  static constexpr std::int64_t kOutOfRange = std::int64_t{1} << 40;
  std::int64_t operator()(std::int32_t base, std::int32_t e) const noexcept {
    if (e == 0) return 1;  // 0**0 == 1
    if (base == 0 || base == 1) return base;
    if (base == -1) return (e & 1) != 0 ? -1 : 1;
    std::int64_t r = 1, p = base;
    auto k = static_cast<std::uint32_t>(e);
    for (;;) {
      if ((k & 1u) != 0) {
        r *= p;  // |r|, |p| <= 2**31: fits
        if (r < INT32_MIN_VALUE || r > INT32_MAX_VALUE) return kOutOfRange;
      }
      k >>= 1;
      if (k == 0) return r;
      p *= p;  // |p| <= 2**31: fits
      // The remaining exponent bits multiply r (|r| >= 1) by at least p.
      if (p > INT32_MAX_VALUE) return kOutOfRange;
    }
  }
};
struct RemF32 {
  float operator()(float a, float b) const noexcept { return std::fmod(a, b); }  // fmodf: exact
};

inline std::uint32_t bits(float x) noexcept { return std::bit_cast<std::uint32_t>(x); }
inline float from_bits(std::uint32_t u) noexcept { return std::bit_cast<float>(u); }
constexpr std::uint32_t kQuietBit = 0x00400000u;

// NaN: the first NaN operand, quieted. For equal operands (+-0, or the same
// number) the AND of the bit patterns keeps +0 unless both are -0; the OR
// keeps -0 unless both are +0.
struct MaximumF32 {
  float operator()(float a, float b) const noexcept {
    if (a != a) return from_bits(bits(a) | kQuietBit);
    if (b != b) return from_bits(bits(b) | kQuietBit);
    if (a == b) return from_bits(bits(a) & bits(b));
    return a < b ? b : a;
  }
};
struct MinimumF32 {
  float operator()(float a, float b) const noexcept {
    if (a != a) return from_bits(bits(a) | kQuietBit);
    if (b != b) return from_bits(bits(b) | kQuietBit);
    if (a == b) return from_bits(bits(a) | bits(b));
    return b < a ? b : a;
  }
};
struct ClampF32 {
  float operator()(float x, float lo, float hi) const noexcept { return MinimumF32{}(MaximumF32{}(x, lo), hi); }
};
struct EqF32 {
  bool operator()(float a, float b) const noexcept { return a == b; }
};
struct NeF32 {
  bool operator()(float a, float b) const noexcept { return a != b; }
};
struct LtF32 {
  bool operator()(float a, float b) const noexcept { return a < b; }
};
struct LeF32 {
  bool operator()(float a, float b) const noexcept { return a <= b; }
};
struct LogicalNotF32 {
  bool operator()(float x) const noexcept { return x == 0.0f; }
};
struct SelectF32 {
  float operator()(bool c, float a, float b) const noexcept { return c ? a : b; }
};

// ---- operand kinds

// A tensor operand stored as Src, computed as Conv.
template <class Src, class Conv>
struct Tn {
  using src = Src;
  using conv = Conv;
  static constexpr bool scalar = false;
};
// A weak scalar, materialised as Conv by the front end.
template <class Conv>
struct Sc {
  using src = Conv;
  using conv = Conv;
  static constexpr bool scalar = true;
};

template <class In>
struct Source {
  Strided<typename In::src> view;        // tensor operands
  typename In::conv value{};             // scalar operands
  std::vector<std::int64_t> byte_strides_;
};

template <class In>
void prepare(const KernelCall& call, std::size_t i, Source<In>& s, char*& base, const std::int64_t*& strides,
             const std::vector<std::int64_t>& zeros) {
  if constexpr (In::scalar) {
    s.value = call.scalar(i).as<typename In::conv>();
    base = reinterpret_cast<char*>(&s.value);
    strides = zeros.data();
  } else {
    s.view = strided<typename In::src>(call.tensor(i));
    s.byte_strides_ = byte_strides<typename In::src>(s.view.strides);
    base = reinterpret_cast<char*>(s.view.base);
    strides = s.byte_strides_.data();
  }
}

// The base pointer of an operand whose layout is one contiguous run (or of a
// scalar), without building its strided view.
template <class In>
void prepare_run(const KernelCall& call, std::size_t i, typename In::conv& value, char*& base) {
  if constexpr (In::scalar) {
    value = call.scalar(i).as<typename In::conv>();
    base = reinterpret_cast<char*>(&value);
  } else {
    const Tensor& t = call.tensor(i);
    base = reinterpret_cast<char*>(static_cast<const CPU&>(*t.carrier()).data<typename In::src>() + t.offset());
  }
}

template <class In>
inline typename In::conv load(const char* base, std::int64_t i) noexcept {
  if constexpr (In::scalar) {
    return *reinterpret_cast<const typename In::conv*>(base);
  } else {
    return convert<typename In::conv>(reinterpret_cast<const typename In::src*>(base)[i]);
  }
}

// The value of operand `i` at result ordinal `k`, read through the Tensor
// (the error path only: after a checked kernel flagged an overflow).
template <class In>
typename In::conv operand_at(const KernelCall& call, std::size_t i, std::int64_t k) {
  if constexpr (In::scalar) return call.scalar(i).as<typename In::conv>();
  else return convert<typename In::conv>(call.tensor(i).at_ordinal(k).as<typename In::src>());
}

// The first result ordinal, in logical order, whose exact value leaves
// Int32; the loops only flag that one did (branch-free), so the
// OverflowError looks for it again, as Generic reports it.
template <class Op, class... Ins, std::size_t... I>
std::int64_t first_out_of_range(const KernelCall& call, const Op& op, std::index_sequence<I...>) {
  for (std::int64_t k = 0; k < call.output.size(); ++k) {
    const std::int64_t exact = op(operand_at<Ins>(call, I, k)...);
    if (exact < INT32_MIN_VALUE || exact > INT32_MAX_VALUE) return k;
  }
  return -1;  // unreachable after a flagged overflow
}

// ---- the vectorised fast path (simd.h): Float32 add/sub/mul/div whose
// operands are Float32 tensors or a weak scalar, on the one-run layout case.
// SimdBinary<Op> maps an op functor to simd::Binary; every other functor has
// no fast path.

template <class Op>
struct SimdBinary {
  static constexpr bool exists = false;
};
template <simd::Binary B>
struct SimdBinaryIs {
  static constexpr bool exists = true;
  static constexpr simd::Binary op = B;
};
template <>
struct SimdBinary<AddF32> : SimdBinaryIs<simd::Binary::Add> {};
template <>
struct SimdBinary<SubF32> : SimdBinaryIs<simd::Binary::Sub> {};
template <>
struct SimdBinary<MulF32> : SimdBinaryIs<simd::Binary::Mul> {};
template <>
struct SimdBinary<DivF32> : SimdBinaryIs<simd::Binary::Div> {};

template <class In>
constexpr bool kFloat32Operand = std::is_same_v<typename In::src, float> && std::is_same_v<typename In::conv, float>;

template <class O, class Op, class... Ins>
constexpr bool kSimdPath = SimdBinary<Op>::exists && std::is_same_v<O, float> && sizeof...(Ins) == 2 &&
                           (kFloat32Operand<Ins> && ...) && !(Ins::scalar && ...);

// The one-run case's parallel_for grain (elements): a result shorter than
// twice this runs on the calling thread, where starting a thread team would
// cost more than it saves (the scalar loops here take ~1 ns per element or
// more; simd.cpp has the vectorised ops' own grains).
constexpr std::int64_t kElementwiseGrain = std::int64_t{64} * 1024;

// Stores one element: out = r, or under accumulation (Float32 only) out =
// out + r, two rounded operations as the framework's copy does, with add's
// NaN rule made explicit (a NaN old element is kept, quieted: the first NaN
// operand, whatever operand order the compiler picks; simd.cpp's AddOp).
template <bool Acc, class O, class R>
inline void store(O* dst, R r, bool& bad) {
  if constexpr (Acc) {
    const O old = *dst;
    *dst = old != old ? from_bits(bits(old) | kQuietBit) : old + static_cast<O>(r);
  } else {
    put(dst, r, bad);
  }
}

// out = op(load(operands)...) over the result's index space (Acc: out +=).
template <bool Acc, class O, class Op, class... Ins>
void elementwise_impl(const KernelCall& call) {
  constexpr std::size_t K = sizeof...(Ins);
  const Tensor& out = call.output;
  std::vector<std::int64_t> os, zeros;  // the strided case's output strides and scalar strides
  // The strided case's operand views, built only there (value-initialising
  // them zero-filled ~100 bytes of stack on every tiny call); the one-run
  // case needs only the scalars' values.
  std::optional<std::tuple<Source<Ins>...>> sources;
  std::tuple<typename Ins::conv...> run_scalars;
  std::array<char*, K + 1> bases{};
  std::array<const std::int64_t*, K + 1> strides{};
  bases[0] = reinterpret_cast<char*>(out_data<O>(out));
  const Op op{};
  bool bad = false;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    // The layout case, once per call: when the output and every tensor
    // operand are one contiguous run over the same extents, the index space
    // is one run (checked first without building any strided view, which is
    // most of a tiny operation's cost).
    const std::span<const std::int64_t> ext = out.shape().extents();
    const bool one_run =
        compact_over(out.layout(), ext) && ((Ins::scalar || compact_over(call.tensor(I).layout(), ext)) && ...);
    std::vector<std::int64_t> extents;
    if (one_run) {
      (prepare_run<Ins>(call, I, std::get<I>(run_scalars), bases[I + 1]), ...);
    } else {
      os = byte_strides<O>(*out.layout().flat_strides());
      zeros.assign(out.rank(), 0);
      strides[0] = os.data();
      sources.emplace();
      (prepare<Ins>(call, I, std::get<I>(*sources), bases[I + 1], strides[I + 1], zeros), ...);
      extents.assign(ext.begin(), ext.end());
    }
    if constexpr (kSimdPath<O, Op, Ins...>) {
      // A run shorter than one vector (a tiny call: most of its cost is
      // fixed) takes the scalar loop below, bit for bit the same (simd.h):
      // no thread split, no dispatch, no padded tail copy.
      constexpr std::int64_t kSimdRun = 16;
      if (one_run && out.size() >= kSimdRun) {
        // Vectorised and split across threads inside simd::.
        using A = std::tuple_element_t<0, std::tuple<Ins...>>;
        using B = std::tuple_element_t<1, std::tuple<Ins...>>;
        constexpr simd::Binary kOp = SimdBinary<Op>::op;
        const auto* a = reinterpret_cast<const float*>(bases[1]);
        const auto* b = reinterpret_cast<const float*>(bases[2]);
        float* o = reinterpret_cast<float*>(bases[0]);
        if constexpr (Acc) {
          if constexpr (A::scalar) simd::binary_f32_scalar_accumulate(kOp, b, *a, o, out.size(), true);
          else if constexpr (B::scalar) simd::binary_f32_scalar_accumulate(kOp, a, *b, o, out.size(), false);
          else simd::binary_f32_accumulate(kOp, a, b, o, out.size());
        } else {
          if constexpr (A::scalar) simd::binary_f32_scalar(kOp, b, *a, o, out.size(), true);
          else if constexpr (B::scalar) simd::binary_f32_scalar(kOp, a, *b, o, out.size(), false);
          else simd::binary_f32(kOp, a, b, o, out.size());
        }
        return;
      }
    }
    if (one_run) {
      // One flat run, split across threads; each range keeps its own
      // overflow flag, OR-ed once all ranges have finished.
      O* po = reinterpret_cast<O*>(bases[0]);
      std::atomic<bool> any_bad{false};
      parallel_for(out.size(), kElementwiseGrain, [&](std::int64_t first, std::int64_t last) {
        bool range_bad = false;
        for (std::int64_t i = first; i < last; ++i) store<Acc>(po + i, op(load<Ins>(bases[I + 1], i)...), range_bad);
        if (range_bad) any_bad.store(true, std::memory_order_relaxed);
      });
      bad = any_bad.load(std::memory_order_relaxed);
      return;
    }
    walk<K + 1>(extents, bases, strides,
                [&](const std::array<char*, K + 1>& p, const std::array<std::int64_t, K + 1>& st, std::int64_t n) {
                  O* po = reinterpret_cast<O*>(p[0]);
                  const std::int64_t so = st[0] / std::int64_t{sizeof(O)};
                  const std::array<std::int64_t, K> s{(st[I + 1] / std::int64_t{sizeof(typename Ins::src)})...};
                  if constexpr (kSimdPath<O, Op, Ins...>) {
                    // A contiguous output row whose operands are each a
                    // contiguous row or one broadcast value (a row of a
                    // matrix minus a per-column value, softmax's sub and
                    // div): the vectorised functions, bit for bit the loop
                    // below (simd.h). Short rows stay scalar, where a
                    // dispatched call would cost more than the row.
                    constexpr std::int64_t kSimdRow = 16;
                    const float* a = reinterpret_cast<const float*>(p[1]);
                    const float* b = reinterpret_cast<const float*>(p[2]);
                    if (so == 1 && n >= kSimdRow && (s[0] | s[1]) == 1 && (s[0] & ~1) == 0 && (s[1] & ~1) == 0) {
                      constexpr simd::Binary kOp = SimdBinary<Op>::op;
                      if constexpr (Acc) {
                        if (s[0] == 0) simd::binary_f32_scalar_accumulate(kOp, b, *a, po, n, true);
                        else if (s[1] == 0) simd::binary_f32_scalar_accumulate(kOp, a, *b, po, n, false);
                        else simd::binary_f32_accumulate(kOp, a, b, po, n);
                      } else {
                        if (s[0] == 0) simd::binary_f32_scalar(kOp, b, *a, po, n, true);
                        else if (s[1] == 0) simd::binary_f32_scalar(kOp, a, *b, po, n, false);
                        else simd::binary_f32(kOp, a, b, po, n);
                      }
                      return;
                    }
                  }
                  if (so == 1 && ((Ins::scalar || s[I] == 1) && ...)) {
                    for (std::int64_t i = 0; i < n; ++i) store<Acc>(po + i, op(load<Ins>(p[I + 1], i)...), bad);
                  } else {
                    for (std::int64_t i = 0; i < n; ++i)
                      store<Acc>(po + i * so, op(load<Ins>(p[I + 1], i * s[I])...), bad);
                  }
                });
  }(std::index_sequence_for<Ins...>{});
  if constexpr (std::is_same_v<O, std::int32_t>) {
    if (bad) raise_int32_overflow(call.plan.operation(), first_out_of_range<Op, Ins...>(call, op, std::index_sequence_for<Ins...>{}));
  }
}

// Accumulation into an Int32 output (checked plans): the exact result goes
// to a compact buffer first (its own OverflowError, as a fresh result
// raises it), then every sum out + r is checked before any is written, so a
// failing call leaves `out` unchanged; the first sum outside Int32 (in
// logical order) is the accumulation's OverflowError.
template <class Op, class... Ins>
void accumulate_int32(const KernelCall& call) {
  const Tensor& out = call.output;
  const std::shared_ptr<CPU> buffer = CPU::create(out.size(), DType::Int32(), true, true);
  const Tensor fresh(buffer, 0, Layout::compact(Shape::of(out.shape().extents())));
  elementwise_impl<false, std::int32_t, Op, Ins...>(KernelCall{call.plan, call.operands, call.attributes, fresh});
  const std::int32_t* r = buffer->data<std::int32_t>();
  std::int32_t* o = out_data<std::int32_t>(out);
  const std::int64_t n = out.size();
  const bool one_run = compact_over(out.layout(), out.shape().extents());
  std::vector<std::int64_t> at;
  if (!one_run) {
    at.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) at[static_cast<std::size_t>(k)] = out.layout()(k);
  }
  const auto index = [&](std::int64_t k) { return one_run ? k : at[static_cast<std::size_t>(k)]; };
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t sum = static_cast<std::int64_t>(o[index(k)]) + r[k];
    if (sum < INT32_MIN_VALUE || sum > INT32_MAX_VALUE) raise_int32_accumulation_overflow(call.plan.operation(), k);
  }
  for (std::int64_t k = 0; k < n; ++k) o[index(k)] = static_cast<std::int32_t>(o[index(k)] + r[k]);
}

// out = op(load(operands)...), or, under KernelCall::accumulate, out += it
// (Float32 in place; Int32 through accumulate_int32). Bool results are
// never accumulated (their accumulation axis is Unsupported).
template <class O, class Op, class... Ins>
void elementwise(const KernelCall& call) {
  if constexpr (std::is_same_v<O, float>) {
    if (call.accumulate) return elementwise_impl<true, O, Op, Ins...>(call);
  } else if constexpr (std::is_same_v<O, std::int32_t>) {
    if (call.accumulate) return accumulate_int32<Op, Ins...>(call);
  }
  elementwise_impl<false, O, Op, Ins...>(call);
}

using Flt = float;
using Int = std::int32_t;

// A numeric binary operation: the Int32 (checked) plan, or a Float32 plan
// whose operands are each a Float32/Int32 tensor or a weak scalar.
template <class OpF, class OpI>
KernelFn numeric_binary(const OperationPlan& p) {
  const SimpleDType &f32 = DType::Float32(), &i32 = DType::Int32();
  const auto& ops = p.operands();
  const bool s0 = ops[0].role() == OperandRole::WEAK_SCALAR, s1 = ops[1].role() == OperandRole::WEAK_SCALAR;
  if (p.compute() == Arithmetic::INT32_EXACT_CHECKED) {
    if constexpr (!std::is_void_v<OpI>) {
      if (s1) return elementwise<Int, OpI, Tn<Int, Int>, Sc<Int>>;
      return elementwise<Int, OpI, Tn<Int, Int>, Tn<Int, Int>>;
    }
    return nullptr;
  }
  if (s0) {
    if (src_is(p, 1, f32)) return elementwise<Flt, OpF, Sc<Flt>, Tn<Flt, Flt>>;
    if (src_is(p, 1, i32)) return elementwise<Flt, OpF, Sc<Flt>, Tn<Int, Flt>>;
    return nullptr;
  }
  if (s1) {
    if (src_is(p, 0, f32)) return elementwise<Flt, OpF, Tn<Flt, Flt>, Sc<Flt>>;
    if (src_is(p, 0, i32)) return elementwise<Flt, OpF, Tn<Int, Flt>, Sc<Flt>>;
    return nullptr;
  }
  if (src_is(p, 0, f32) && src_is(p, 1, f32)) return elementwise<Flt, OpF, Tn<Flt, Flt>, Tn<Flt, Flt>>;
  if (src_is(p, 0, f32) && src_is(p, 1, i32)) return elementwise<Flt, OpF, Tn<Flt, Flt>, Tn<Int, Flt>>;
  if (src_is(p, 0, i32) && src_is(p, 1, f32)) return elementwise<Flt, OpF, Tn<Int, Flt>, Tn<Flt, Flt>>;
  if (src_is(p, 0, i32) && src_is(p, 1, i32)) return elementwise<Flt, OpF, Tn<Int, Flt>, Tn<Int, Flt>>;
  return nullptr;
}

// Float32-only tensor/tensor operations with output O.
template <class O, class Op>
KernelFn float_binary(const OperationPlan& p) {
  if (src_is(p, 0, DType::Float32()) && src_is(p, 1, DType::Float32()))
    return elementwise<O, Op, Tn<Flt, Flt>, Tn<Flt, Flt>>;
  return nullptr;
}

KernelFn clamp_kernel(const OperationPlan& p) {
  const auto& ops = p.operands();
  const bool lo_s = ops[1].role() == OperandRole::WEAK_SCALAR, hi_s = ops[2].role() == OperandRole::WEAK_SCALAR;
  if (lo_s && hi_s) return elementwise<Flt, ClampF32, Tn<Flt, Flt>, Sc<Flt>, Sc<Flt>>;
  if (lo_s) return elementwise<Flt, ClampF32, Tn<Flt, Flt>, Sc<Flt>, Tn<Flt, Flt>>;
  if (hi_s) return elementwise<Flt, ClampF32, Tn<Flt, Flt>, Tn<Flt, Flt>, Sc<Flt>>;
  return elementwise<Flt, ClampF32, Tn<Flt, Flt>, Tn<Flt, Flt>, Tn<Flt, Flt>>;
}

}  // namespace

KernelFn arithmetic_kernel(const OperationPlan& p) {
  using Op = policy::OperationId;
  const std::optional<Op> id = policy::find_operation_id(p.operation());
  if (!id) return nullptr;
  const Op op = *id;
  if (op == Op::add) return numeric_binary<AddF32, AddI32Checked>(p);
  if (op == Op::sub) return numeric_binary<SubF32, SubI32Checked>(p);
  if (op == Op::mul || op == Op::elementwise_mul) return numeric_binary<MulF32, MulI32Checked>(p);
  if (op == Op::div) return numeric_binary<DivF32, void>(p);
  if (op == Op::pow) return numeric_binary<PowF32, PowI32Checked>(p);
  if (op == Op::rem) return float_binary<Flt, RemF32>(p);
  if (op == Op::maximum) return float_binary<Flt, MaximumF32>(p);
  if (op == Op::minimum) return float_binary<Flt, MinimumF32>(p);
  if (op == Op::eq) return float_binary<bool, EqF32>(p);
  if (op == Op::ne) return float_binary<bool, NeF32>(p);
  if (op == Op::lt) return float_binary<bool, LtF32>(p);
  if (op == Op::le) return float_binary<bool, LeF32>(p);
  if (op == Op::logical_not && src_is(p, 0, DType::Float32())) return elementwise<bool, LogicalNotF32, Tn<Flt, Flt>>;
  if (op == Op::clamp) return clamp_kernel(p);
  if (op == Op::select && src_is(p, 0, DType::Bool()) && src_is(p, 1, DType::Float32()) && src_is(p, 2, DType::Float32()))
    return elementwise<Flt, SelectF32, Tn<bool, bool>, Tn<Flt, Flt>, Tn<Flt, Flt>>;
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
