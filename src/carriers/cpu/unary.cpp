// CPU kernels: unary math and activations.
//
// One typed instantiation per plan: In = the operand's storage type, C = the
// plan's convert_to type, Op = the element functor. The layout case is chosen
// once per call: an operand and a result that are both compact run one flat
// loop; anything else (strided, broadcast, permuted, hierarchical) goes
// through the strided walk, row by row.
//
// The Float32 functors are the binary32 step sequences documented in
// docs/operations/unary.md, written as separate statements so that each step
// rounds to binary32 (the library is built with -ffp-contract=off and without
// -ffast-math; nothing is fused, widened or reassociated). They call the C
// library's float functions (erff, tanhf, expf inside sigmoid, ...), like
// Generic, on every layout, so they agree with Generic bit for bit.
//
// `exp` is the exception: it is CPU's own vector kernel (simd.h's exp_f32,
// correctly rounded in all but a few inputs, the same bits on every Highway
// target), not expf. So that its result depends only on the value, never on
// the operand's layout or dtype, every exp call reaches that kernel: a
// compact Float32 operand directly, anything else (strided, broadcast,
// permuted, hierarchical, Int32) through a buffer of converted values
// (exp_kernel below). The conformance rule allows CPU's exp 4 ulps from
// Generic's expf (docs/numerics.md); the measured difference is at most 1.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "carriers/cpu/kernels.h"
#include "carriers/cpu/parallel.h"
#include "carriers/cpu/simd.h"
#include "policy/operation_ids.h"

namespace strideweave::carriers::cpu {
namespace {

// ---- element functors (Float32 unless noted; relu's are in functors.h)

struct NegF32 {
  float operator()(float x) const noexcept { return -x; }
};
struct AbsF32 {
  float operator()(float x) const noexcept { return std::fabs(x); }
};
struct SignF32 {
  // +-0 and NaN are returned unchanged.
  float operator()(float x) const noexcept { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }
};
struct RecipF32 {
  float operator()(float x) const noexcept { return 1.0f / x; }
};
struct SqrtF32 {
  float operator()(float x) const noexcept { return std::sqrt(x); }
};
struct RsqrtF32 {
  // Two correctly rounded steps, never a hardware reciprocal estimate.
  float operator()(float x) const noexcept {
    const float r = std::sqrt(x);
    return 1.0f / r;
  }
};
struct Exp2F32 {
  float operator()(float x) const noexcept { return std::exp2(x); }
};
struct LogF32 {
  float operator()(float x) const noexcept { return std::log(x); }
};
struct Log2F32 {
  float operator()(float x) const noexcept { return std::log2(x); }
};
struct SinF32 {
  float operator()(float x) const noexcept { return std::sin(x); }
};
struct CosF32 {
  float operator()(float x) const noexcept { return std::cos(x); }
};
struct ErfF32 {
  float operator()(float x) const noexcept { return std::erf(x); }
};
struct TanhF32 {
  float operator()(float x) const noexcept { return std::tanh(x); }
};
struct FloorF32 {
  float operator()(float x) const noexcept { return std::floor(x); }
};
struct CeilF32 {
  float operator()(float x) const noexcept { return std::ceil(x); }
};
struct RoundF32 {
  // Ties to even: nearbyint under the default rounding mode.
  float operator()(float x) const noexcept { return std::nearbyint(x); }
};

struct SigmoidF32 {
  float operator()(float x) const noexcept {
    const float n = -x;
    const float e = std::exp(n);
    const float d = 1.0f + e;
    return 1.0f / d;
  }
};
// gelu and silu return their limit -0 at -inf, where the formulas would give
// -inf * 0 = NaN.
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

struct SiluF32 {
  float operator()(float x) const noexcept {
    if (x == kMinusInf) return -0.0f;
    const float s = SigmoidF32{}(x);
    return x * s;
  }
};
struct GeluErfF32 {
  float operator()(float x) const noexcept {
    if (x == kMinusInf) return -0.0f;
    const float t = x * 0.70710678118654752f;  // 1/sqrt(2) rounded to binary32
    const float e = std::erf(t);
    const float s = 1.0f + e;
    const float h = 0.5f * x;
    return h * s;
  }
};
struct GeluTanhF32 {
  float operator()(float x) const noexcept {
    if (x == kMinusInf) return -0.0f;
    const float x2 = x * x;
    const float x3 = x2 * x;
    const float k = 0.044715f * x3;
    const float u = x + k;
    const float v = 0.79788456080286536f * u;  // sqrt(2/pi) rounded to binary32
    const float th = std::tanh(v);
    const float s = 1.0f + th;
    const float h = 0.5f * x;
    return h * s;
  }
};

// Functors with options read them once per call from the normalised
// Attributes (already rounded to binary32 by the front end, so the casts are
// exact).
inline float option(const Attributes& a, const char* name) { return static_cast<float>(a.get<double>(name)); }

struct EluF32 {
  float alpha;
  explicit EluF32(const Attributes& a) : alpha(option(a, "alpha")) {}
  float operator()(float x) const noexcept {
    if (x > 0.0f) return x;
    const float m = std::expm1(x);
    return alpha * m;
  }
};
struct LeakyReluF32 {
  float slope;
  explicit LeakyReluF32(const Attributes& a) : slope(option(a, "negative_slope")) {}
  float operator()(float x) const noexcept { return x > 0.0f ? x : x * slope; }
};
struct SoftplusF32 {
  float beta, threshold;
  explicit SoftplusF32(const Attributes& a) : beta(option(a, "beta")), threshold(option(a, "threshold")) {}
  float operator()(float x) const noexcept {
    const float p = x * beta;
    if (p > threshold) return x;
    const float e = std::exp(p);
    const float l = std::log1p(e);
    return l / beta;
  }
};

template <class Op>
Op make_op(const Attributes& a) {
  if constexpr (std::is_constructible_v<Op, const Attributes&>) return Op(a);
  else return Op{};
}

// The compact case's parallel_for grain (elements): below twice this, the
// loop stays on the calling thread (a thread team costs a few microseconds;
// these ops take ~1-20 ns per element).
constexpr std::int64_t kUnaryGrain = std::int64_t{32} * 1024;

// out[k] = op(convert<C>(x[k])) over the result's index space.
template <class In, class C, class Op>
void unary(const KernelCall& call) {
  using Out = std::invoke_result_t<const Op&, C>;
  const Tensor& out = call.output;
  const Tensor& x = call.tensor(0);
  const Op op = make_op<Op>(call.attributes);
  Out* o = out_data<Out>(out);
  const std::span<const std::int64_t> ext = out.shape().extents();
  if (compact_over(x.layout(), ext) && compact_over(out.layout(), ext)) {
    // Both physical indices equal the logical key: one flat loop.
    const In* a = static_cast<const CPU&>(*x.carrier()).data<In>() + x.offset();
    const std::int64_t n = out.size();
    // Split across threads: every op here is one C-library call or a few
    // binary32 steps per element, none fails.
    parallel_for(n, kUnaryGrain, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t i = first; i < last; ++i) o[i] = op(convert<C>(a[i]));
    });
    return;
  }
  const Strided<In> a = strided<In>(x);
  std::vector<std::int64_t> os = byte_strides<Out>(*out.layout().flat_strides()), as = byte_strides<In>(a.strides);
  walk<2>(out.shape().extents(), {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base)}, {os.data(), as.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            Out* po = reinterpret_cast<Out*>(p[0]);
            const In* pa = reinterpret_cast<const In*>(p[1]);
            const std::int64_t so = st[0] / std::int64_t{sizeof(Out)}, sa = st[1] / std::int64_t{sizeof(In)};
            if (so == 1 && sa == 1) {
              for (std::int64_t i = 0; i < n; ++i) po[i] = op(convert<C>(pa[i]));
            } else if (so == 1 && sa == 0) {  // a broadcast row: one value
              const Out r = op(convert<C>(*pa));
              for (std::int64_t i = 0; i < n; ++i) po[i] = r;
            } else {
              for (std::int64_t i = 0; i < n; ++i) po[i * so] = op(convert<C>(pa[i * sa]));
            }
          });
}

// exp: out[k] = simd::exp_f32(convert<float>(x[k])) over the result's index
// space, for every layout (the rule above). A compact Float32 operand and
// result are one call. Otherwise the converted operand values are staged in
// the output itself when its row is contiguous (the output never shares
// storage with an operand: the front end refuses that), or in a small buffer,
// and the kernel runs on them in place. Staging costs one extra pass over
// the row in cache; it is what makes the bits independent of the layout.
constexpr std::int64_t kExpStage = 256;  // elements per staging buffer

template <class In>
void exp_kernel(const KernelCall& call) {
  const Tensor& out = call.output;
  const Tensor& x = call.tensor(0);
  float* o = out_data<float>(out);
  const std::span<const std::int64_t> ext = out.shape().extents();
  if (compact_over(x.layout(), ext) && compact_over(out.layout(), ext)) {
    const In* a = static_cast<const CPU&>(*x.carrier()).data<In>() + x.offset();
    const std::int64_t n = out.size();
    if constexpr (std::is_same_v<In, float>) {
      simd::exp_f32(a, o, n);  // vectorised, split across threads (simd.h)
    } else {
      parallel_for(n, kUnaryGrain, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t i = first; i < last; ++i) o[i] = convert<float>(a[i]);
        simd::exp_f32(o + first, o + first, last - first);
      });
    }
    return;
  }
  const Strided<In> a = strided<In>(x);
  std::vector<std::int64_t> os = byte_strides<float>(*out.layout().flat_strides()), as = byte_strides<In>(a.strides);
  walk<2>(ext, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base)}, {os.data(), as.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            float* po = reinterpret_cast<float*>(p[0]);
            const In* pa = reinterpret_cast<const In*>(p[1]);
            const std::int64_t so = st[0] / std::int64_t{sizeof(float)}, sa = st[1] / std::int64_t{sizeof(In)};
            if (sa == 0) {  // a broadcast row: one value
              const float v = convert<float>(*pa);
              float r;
              simd::exp_f32(&v, &r, 1);
              for (std::int64_t i = 0; i < n; ++i) po[i * so] = r;
            } else if (so == 1) {
              if constexpr (std::is_same_v<In, float>) {
                if (sa == 1) {
                  simd::exp_f32(pa, po, n);
                  return;
                }
              }
              for (std::int64_t i = 0; i < n; ++i) po[i] = convert<float>(pa[i * sa]);
              simd::exp_f32(po, po, n);
            } else {
              float buf[kExpStage];
              for (std::int64_t at = 0; at < n; at += kExpStage) {
                const std::int64_t m = std::min(kExpStage, n - at);
                for (std::int64_t i = 0; i < m; ++i) buf[i] = convert<float>(pa[(at + i) * sa]);
                simd::exp_f32(buf, buf, m);
                for (std::int64_t i = 0; i < m; ++i) po[(at + i) * so] = buf[i];
              }
            }
          });
}

// gelu's form is an option of the call, chosen once per call.
template <class In>
void gelu(const KernelCall& call) {
  if (call.attributes.get<bool>("approximate")) unary<In, float, GeluTanhF32>(call);
  else unary<In, float, GeluErfF32>(call);
}

// The Float32-output kernel of `Op` for the plan's operand dtype (Float32, or
// Int32 converted to Float32 for the activations).
template <class Op>
KernelFn float_kernel(const OperationPlan& p) {
  if (src_is(p, 0, DType::Float32())) return unary<float, float, Op>;
  if (src_is(p, 0, DType::Int32())) return unary<std::int32_t, float, Op>;
  return nullptr;
}

}  // namespace

KernelFn unary_kernel(const OperationPlan& p) {
  using Op = policy::OperationId;
  const std::optional<Op> id = policy::find_operation_id(p.operation());
  if (!id) return nullptr;
  const Op op = *id;
  if (op == Op::relu) {
    if (p.compute() == Arithmetic::BINARY32) return float_kernel<ReluF32>(p);
    return unary<std::int32_t, std::int32_t, ReluI32>;
  }
  if (p.compute() != Arithmetic::BINARY32 || &p.output() != &DType::Float32()) return nullptr;
  // activations
  if (op == Op::elu) return float_kernel<EluF32>(p);
  if (op == Op::exp) {
    if (src_is(p, 0, DType::Float32())) return exp_kernel<float>;
    if (src_is(p, 0, DType::Int32())) return exp_kernel<std::int32_t>;
    return nullptr;
  }
  if (op == Op::gelu) {
    if (src_is(p, 0, DType::Float32())) return gelu<float>;
    if (src_is(p, 0, DType::Int32())) return gelu<std::int32_t>;
    return nullptr;
  }
  if (op == Op::leaky_relu) return float_kernel<LeakyReluF32>(p);
  if (op == Op::sigmoid) return float_kernel<SigmoidF32>(p);
  if (op == Op::silu) return float_kernel<SiluF32>(p);
  if (op == Op::softplus) return float_kernel<SoftplusF32>(p);
  if (op == Op::tanh) return float_kernel<TanhF32>(p);
  // math (the registry resolves Float32 operands only)
  if (op == Op::neg) return float_kernel<NegF32>(p);
  if (op == Op::abs) return float_kernel<AbsF32>(p);
  if (op == Op::sign) return float_kernel<SignF32>(p);
  if (op == Op::recip) return float_kernel<RecipF32>(p);
  if (op == Op::sqrt) return float_kernel<SqrtF32>(p);
  if (op == Op::rsqrt) return float_kernel<RsqrtF32>(p);
  if (op == Op::exp2) return float_kernel<Exp2F32>(p);
  if (op == Op::log) return float_kernel<LogF32>(p);
  if (op == Op::log2) return float_kernel<Log2F32>(p);
  if (op == Op::sin) return float_kernel<SinF32>(p);
  if (op == Op::cos) return float_kernel<CosF32>(p);
  if (op == Op::erf) return float_kernel<ErfF32>(p);
  if (op == Op::floor) return float_kernel<FloorF32>(p);
  if (op == Op::ceil) return float_kernel<CeilF32>(p);
  if (op == Op::round) return float_kernel<RoundF32>(p);
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
