// CPU kernels: elementwise arithmetic, comparisons, clamp and select.
#include "carriers/cpu/kernels.h"

namespace strideweave::carriers::cpu {
namespace {

// ---- elementwise: out = op(convert(a), convert(b)) with b a tensor or a
// materialised scalar.

template <class A, class B, class CA, class CB, class O, class Op, bool ScalarB>
void binary(const KernelCall& call) {
  const Tensor& out = call.output;
  O* o = out_data<O>(out);
  Op op;
  bool bad = false;
  const Strided<A> a = strided<A>(call.tensor(0));
  if constexpr (ScalarB) {
    const CB s = call.scalar(1).as<CB>();
    std::vector<std::int64_t> os = byte_strides<O>(*out.layout().flat_strides()), as = byte_strides<A>(a.strides);
    walk<2>(out.shape().extents(), {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base)},
            {os.data(), as.data()}, [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
              O* po = reinterpret_cast<O*>(p[0]);
              const A* pa = reinterpret_cast<const A*>(p[1]);
              const std::int64_t so = st[0] / std::int64_t{sizeof(O)}, sa = st[1] / std::int64_t{sizeof(A)};
              if (so == 1 && sa == 1) {
                for (std::int64_t i = 0; i < n; ++i) put(po + i, op(convert<CA>(pa[i]), s), bad);
              } else {
                for (std::int64_t i = 0; i < n; ++i) put(po + i * so, op(convert<CA>(pa[i * sa]), s), bad);
              }
            });
  } else {
    const Strided<B> b = strided<B>(call.tensor(1));
    std::vector<std::int64_t> os = byte_strides<O>(*out.layout().flat_strides()), as = byte_strides<A>(a.strides),
                              bs = byte_strides<B>(b.strides);
    walk<3>(out.shape().extents(),
            {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base), reinterpret_cast<char*>(b.base)},
            {os.data(), as.data(), bs.data()},
            [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t n) {
              O* po = reinterpret_cast<O*>(p[0]);
              const A* pa = reinterpret_cast<const A*>(p[1]);
              const B* pb = reinterpret_cast<const B*>(p[2]);
              const std::int64_t so = st[0] / std::int64_t{sizeof(O)}, sa = st[1] / std::int64_t{sizeof(A)},
                                 sb = st[2] / std::int64_t{sizeof(B)};
              if (so == 1 && sa == 1 && sb == 1) {
                for (std::int64_t i = 0; i < n; ++i) put(po + i, op(convert<CA>(pa[i]), convert<CB>(pb[i])), bad);
              } else if (so == 1 && sa == 1 && sb == 0) {
                const CB y = convert<CB>(*pb);
                for (std::int64_t i = 0; i < n; ++i) put(po + i, op(convert<CA>(pa[i]), y), bad);
              } else {
                for (std::int64_t i = 0; i < n; ++i)
                  put(po + i * so, op(convert<CA>(pa[i * sa]), convert<CB>(pb[i * sb])), bad);
              }
            });
  }
  if (bad) overflow(call.plan.operation());
}

}  // namespace

KernelFn elementwise_kernel(const OperationPlan& p, bool product) {
  const SimpleDType &F = DType::Float32(), &I = DType::Int32();
  const bool scalar = p.operands()[1].role() == OperandRole::WEAK_SCALAR;
  if (p.compute() == Arithmetic::INT32_EXACT_CHECKED) {
    if (scalar) return product ? binary<std::int32_t, std::int32_t, std::int32_t, std::int32_t, std::int32_t, MulI32Checked, true>
                               : binary<std::int32_t, std::int32_t, std::int32_t, std::int32_t, std::int32_t, AddI32Checked, true>;
    return product ? binary<std::int32_t, std::int32_t, std::int32_t, std::int32_t, std::int32_t, MulI32Checked, false>
                   : binary<std::int32_t, std::int32_t, std::int32_t, std::int32_t, std::int32_t, AddI32Checked, false>;
  }
  if (scalar) {
    if (src_is(p, 0, F)) return product ? binary<float, float, float, float, float, MulF32, true> : binary<float, float, float, float, float, AddF32, true>;
    return product ? binary<std::int32_t, float, float, float, float, MulF32, true> : binary<std::int32_t, float, float, float, float, AddF32, true>;
  }
#define SW_BIN(TA, TB) \
  (product ? KernelFn(binary<TA, TB, float, float, float, MulF32, false>) : KernelFn(binary<TA, TB, float, float, float, AddF32, false>))
  if (src_is(p, 0, F) && src_is(p, 1, F)) return SW_BIN(float, float);
  if (src_is(p, 0, F) && src_is(p, 1, I)) return SW_BIN(float, std::int32_t);
  if (src_is(p, 0, I) && src_is(p, 1, F)) return SW_BIN(std::int32_t, float);
#undef SW_BIN
  return nullptr;
}

KernelFn arithmetic_kernel(const OperationPlan& p) {
  const std::string& op = p.operation();
  if (op == "add") return elementwise_kernel(p, false);
  if (op == "mul" || op == "elementwise_mul") return elementwise_kernel(p, true);
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
