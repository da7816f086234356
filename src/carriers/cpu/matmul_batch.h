// Internal: the matrices of one matmul kernel call over operands the front
// end aligned to (..., M, K) x (..., K, N) -> (..., M, N): per-matrix extents
// and element strides, and a walk over the batch axes that hands each
// matrix's base pointers to a function. Shared by the strict, exact and
// contracted matmul kernels.
#pragma once

#include "carriers/cpu/kernels.h"

namespace strideweave::carriers::cpu {

template <class A, class B, class O>
struct MatmulBatch {
  Strided<A> a;
  Strided<B> b;
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t sam = 0, sak = 0, sbk = 0, sbn = 0, som = 0, son = 0;
  O* out = nullptr;

  explicit MatmulBatch(const KernelCall& call)
      : a(strided<A>(call.tensor(0))), b(strided<B>(call.tensor(1))), out(out_data<O>(call.output)) {
    const Tensor& ta = call.tensor(0);
    const Tensor& tb = call.tensor(1);
    const std::size_t r = ta.rank();
    M = ta.shape().extent(r - 2);
    K = ta.shape().extent(r - 1);
    N = tb.shape().extent(r - 1);
    sam = a.strides[r - 2];
    sak = a.strides[r - 1];
    sbk = b.strides[r - 2];
    sbn = b.strides[r - 1];
    const std::vector<std::int64_t> os = *call.output.layout().flat_strides();
    som = os[r - 2];
    son = os[r - 1];
    batch_.assign(ta.shape().extents().begin(), ta.shape().extents().end() - 2);
    ab_ = byte_strides<A>({a.strides.begin(), a.strides.end() - 2});
    bb_ = byte_strides<B>({b.strides.begin(), b.strides.end() - 2});
    ob_ = byte_strides<O>({os.begin(), os.end() - 2});
    if (batch_.empty()) {  // the walk needs an axis 0: a batch-free call walks one step
      batch_.push_back(1);
      ab_.push_back(0);
      bb_.push_back(0);
      ob_.push_back(0);
    }
  }

  // f(O* result, const A* a, const B* b) for every matrix, in the batch's
  // logical order.
  template <class F>
  void for_each(F&& f) const {
    walk<3>(batch_, {reinterpret_cast<char*>(out), reinterpret_cast<char*>(a.base), reinterpret_cast<char*>(b.base)},
            {ob_.data(), ab_.data(), bb_.data()},
            [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t count) {
              for (std::int64_t i = 0; i < count; ++i)
                f(reinterpret_cast<O*>(p[0] + i * st[0]), reinterpret_cast<const A*>(p[1] + i * st[1]),
                  reinterpret_cast<const B*>(p[2] + i * st[2]));
            });
  }

 private:
  std::vector<std::int64_t> batch_, ab_, bb_, ob_;
};

}  // namespace strideweave::carriers::cpu
