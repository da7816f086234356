// CPU kernels: unary math and activations.
#include "carriers/cpu/kernels.h"

namespace strideweave::carriers::cpu {
namespace {

template <class T, class Op>
void unary(const KernelCall& call) {
  const Tensor& out = call.output;
  T* o = out_data<T>(out);
  Op op;
  const Strided<T> a = strided<T>(call.tensor(0));
  std::vector<std::int64_t> os = byte_strides<T>(*out.layout().flat_strides()), as = byte_strides<T>(a.strides);
  walk<2>(out.shape().extents(), {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base)}, {os.data(), as.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            T* po = reinterpret_cast<T*>(p[0]);
            const T* pa = reinterpret_cast<const T*>(p[1]);
            const std::int64_t so = st[0] / std::int64_t{sizeof(T)}, sa = st[1] / std::int64_t{sizeof(T)};
            if (so == 1 && sa == 1) {
              for (std::int64_t i = 0; i < n; ++i) po[i] = op(pa[i]);
            } else {
              for (std::int64_t i = 0; i < n; ++i) po[i * so] = op(pa[i * sa]);
            }
          });
}

}  // namespace

KernelFn unary_kernel(const OperationPlan& p) {
  if (p.operation() == "relu")
    return p.compute() == Arithmetic::BINARY32 ? KernelFn(unary<float, ReluF32>) : KernelFn(unary<std::int32_t, ReluI32>);
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
