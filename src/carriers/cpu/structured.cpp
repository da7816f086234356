// CPU kernels: matmul, conv_general, gather, scatter.
#include "carriers/cpu/kernels.h"

namespace strideweave::carriers::cpu {
namespace {

// ---- matmul over aligned operands (..., M, K) x (..., K, N). For each batch
// and each result column n the kernel accumulates a column of M partial sums
// over ascending k (the result is compact: batch axes fastest, then m, n); every product is rounded to binary32
// before it is added in Acc (BINARY32 compute, no fused contraction). The
// per-element order equals Generic's, so Float32 results agree bit for bit.

template <class A, class B, class CA, class Acc, class O>
void matmul(const KernelCall& call) {
  const Tensor& ta = call.tensor(0);
  const Tensor& tb = call.tensor(1);
  const Strided<A> a = strided<A>(ta);
  const Strided<B> b = strided<B>(tb);
  const std::size_t r = ta.rank();
  const std::int64_t M = ta.shape().extent(r - 2), K = ta.shape().extent(r - 1), N = tb.shape().extent(r - 1);
  const std::int64_t sam = a.strides[r - 2], sak = a.strides[r - 1], sbk = b.strides[r - 2], sbn = b.strides[r - 1];
  const auto o_strides = *call.output.layout().flat_strides();
  const std::int64_t som = o_strides[r - 2], son = o_strides[r - 1];
  std::vector<std::int64_t> batch(ta.shape().extents().begin(), ta.shape().extents().end() - 2);
  std::vector<std::int64_t> ab = byte_strides<A>({a.strides.begin(), a.strides.end() - 2});
  std::vector<std::int64_t> bb = byte_strides<B>({b.strides.begin(), b.strides.end() - 2});
  std::vector<std::int64_t> obs = byte_strides<O>({o_strides.begin(), o_strides.end() - 2});
  // The walk needs an axis 0; a batch-free call walks one step.
  if (batch.empty()) {
    batch.push_back(1);
    ab.push_back(0);
    bb.push_back(0);
    obs.push_back(0);
  }
  std::vector<Acc> acc(static_cast<std::size_t>(M));
  bool bad = false;
  O* o = out_data<O>(call.output);
  if (M == 0 || N == 0) return;
  walk<3>(batch, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(a.base), reinterpret_cast<char*>(b.base)},
          {obs.data(), ab.data(), bb.data()},
          [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t count) {
            for (std::int64_t batch_i = 0; batch_i < count; ++batch_i) {
              O* po = reinterpret_cast<O*>(p[0] + batch_i * st[0]);
              const A* pa = reinterpret_cast<const A*>(p[1] + batch_i * st[1]);
              const B* pb = reinterpret_cast<const B*>(p[2] + batch_i * st[2]);
              for (std::int64_t n = 0; n < N; ++n) {
                std::fill(acc.begin(), acc.end(), Acc{0});
                for (std::int64_t k = 0; k < K; ++k) {
                  const CA y = convert<CA>(pb[k * sbk + n * sbn]);
                  const A* col = pa + k * sak;
                  if constexpr (std::is_floating_point_v<Acc>) {
                    for (std::int64_t m = 0; m < M; ++m) {
                      const float product = convert<CA>(col[m * sam]) * y;  // rounded to binary32
                      acc[static_cast<std::size_t>(m)] += static_cast<Acc>(product);
                    }
                  } else {
                    for (std::int64_t m = 0; m < M; ++m)
                      acc[static_cast<std::size_t>(m)] += static_cast<Acc>(static_cast<std::int64_t>(col[m * sam]) * y);
                  }
                }
                O* column = po + n * son;
                for (std::int64_t m = 0; m < M; ++m) {
                  const Acc v = acc[static_cast<std::size_t>(m)];
                  if constexpr (!std::is_floating_point_v<Acc>) bad |= v < INT32_MIN_VALUE || v > INT32_MAX_VALUE;
                  column[m * som] = static_cast<O>(v);
                }
              }
            }
          });
  if (bad)
    throw OverflowError(fmt::format("matmul: the exact Int32 result is outside [{}, {}]", INT32_MIN_VALUE, INT32_MAX_VALUE));
}

}  // namespace

KernelFn matmul_kernel(const OperationPlan& p) {
  const SimpleDType &F = DType::Float32(), &I = DType::Int32();
  if (p.accumulation() == Accumulation::EXACT_INTEGER) return matmul<std::int32_t, std::int32_t, std::int64_t, int128, std::int32_t>;
  const bool wide = p.accumulator_dtype() == &DType::Float64();
#define SW_MM(TA, TB) (wide ? KernelFn(matmul<TA, TB, float, double, float>) : KernelFn(matmul<TA, TB, float, float, float>))
  if (src_is(p, 0, F) && src_is(p, 1, F)) return SW_MM(float, float);
  if (src_is(p, 0, F) && src_is(p, 1, I)) return SW_MM(float, std::int32_t);
  if (src_is(p, 0, I) && src_is(p, 1, F)) return SW_MM(std::int32_t, float);
#undef SW_MM
  return nullptr;
}

KernelFn structured_kernel(const OperationPlan& p) {
  if (p.operation() == "matmul") return matmul_kernel(p);
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
