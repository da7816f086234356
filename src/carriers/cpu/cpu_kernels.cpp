// CPU's kernels. Registration below maps each resolvable plan of an executed
// operation to one typed instantiation: that is the dtype-stripping seam, done
// once at registration, so no kernel branches on dtype at run time. Each
// kernel chooses its layout case once per call (strided.h).
#include "carriers/cpu/cpu_kernels.h"

#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>
#include <strideweave/execution.h>
#include <strideweave/int128.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "carriers/cpu/functors.h"
#include "carriers/cpu/strided.h"

namespace strideweave::carriers::cpu {
namespace {

template <class T>
T* out_data(const Tensor& out) {
  return static_cast<const CPU&>(*out.carrier()).data<T>() + out.offset();
}

[[noreturn]] void overflow(const std::string& op) {
  throw OverflowError(fmt::format("{}: an Int32 result is outside [{}, {}] (INT32_EXACT_CHECKED)", op,
                                  INT32_MIN_VALUE, INT32_MAX_VALUE));
}

template <class T>
std::vector<std::int64_t> byte_strides(const std::vector<std::int64_t>& elements) {
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

// ---- reduce_sum. The input is viewed with the reduced axes first (in
// ascending order) and the kept axes after; each result element sums its
// reduced block. Exact Int32 sums accumulate in 64 (or 128) bits and narrow
// once. FLOATING sums may use any association: contiguous blocks use eight
// interleaved partial sums (a blocked order), others the sequential order.

template <class Acc>
Acc sum_contiguous(const float* x, std::int64_t n) {
  Acc lanes[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += static_cast<Acc>(x[i + l]);
  Acc tail = 0;
  for (; i < n; ++i) tail += static_cast<Acc>(x[i]);
  // Pairwise combination of the lanes.
  const Acc s01 = lanes[0] + lanes[1], s23 = lanes[2] + lanes[3], s45 = lanes[4] + lanes[5], s67 = lanes[6] + lanes[7];
  return ((s01 + s23) + (s45 + s67)) + tail;
}

template <class T, class Acc, class O>
void reduce_sum(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  const auto& axes = call.attributes.get<std::vector<std::int64_t>>("axes");
  std::vector<std::int64_t> order(axes.begin(), axes.end());
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i)))
      order.push_back(static_cast<std::int64_t>(i));
  const Tensor xp = x.permute(order);
  const Strided<T> s = strided<T>(xp);
  const std::size_t nr = axes.size();
  std::vector<std::int64_t> red_ext(xp.shape().extents().begin(), xp.shape().extents().begin() + nr);
  std::vector<std::int64_t> kept_ext(xp.shape().extents().begin() + nr, xp.shape().extents().end());
  std::vector<std::int64_t> red_str(s.strides.begin(), s.strides.begin() + nr);
  std::vector<std::int64_t> kept_str(s.strides.begin() + nr, s.strides.end());
  const std::int64_t reduced = std::accumulate(red_ext.begin(), red_ext.end(), std::int64_t{1}, std::multiplies<>());
  // Is the reduced block one contiguous run (compact over the reduced axes)?
  bool contiguous = true;
  std::int64_t expect = 1;
  for (std::size_t i = 0; i < nr; ++i) {
    if (red_ext[i] != 1 && red_str[i] != expect) contiguous = false;
    expect *= red_ext[i];
  }
  O* o = out_data<O>(call.output);
  std::int64_t j = 0;
  std::vector<std::int64_t> kb = byte_strides<T>(kept_str), ob{0};
  ob.assign(kept_ext.size(), 0);
  std::vector<std::int64_t> rb = byte_strides<T>(red_str);
  auto block_sum = [&](const T* base) -> Acc {
    if constexpr (std::is_floating_point_v<Acc>) {
      if (contiguous) return sum_contiguous<Acc>(base, reduced);
    }
    Acc acc = 0;
    walk<1>(red_ext, {reinterpret_cast<char*>(const_cast<T*>(base))}, {rb.data()},
            [&](const std::array<char*, 1>& p, const std::array<std::int64_t, 1>& st, std::int64_t n) {
              const T* q = reinterpret_cast<const T*>(p[0]);
              const std::int64_t step = st[0] / std::int64_t{sizeof(T)};
              for (std::int64_t i = 0; i < n; ++i) acc += static_cast<Acc>(q[i * step]);
            });
    return acc;
  };
  auto emit = [&](Acc total) {
    if constexpr (std::is_floating_point_v<Acc>) {
      o[j++] = static_cast<O>(total);
    } else {
      if (total < INT32_MIN_VALUE || total > INT32_MAX_VALUE)
        throw OverflowError(fmt::format("reduce_sum: the exact Int32 sum is outside [{}, {}]", INT32_MIN_VALUE,
                                        INT32_MAX_VALUE));
      o[j++] = static_cast<O>(total);
    }
  };
  if (kept_ext.empty()) {
    emit(block_sum(s.base));
    return;
  }
  walk<1>(kept_ext, {reinterpret_cast<char*>(s.base)}, {kb.data()},
          [&](const std::array<char*, 1>& p, const std::array<std::int64_t, 1>& st, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i) emit(block_sum(reinterpret_cast<const T*>(p[0] + i * st[0])));
          });
}

// Int32 sums: 64-bit accumulation is exact below 2**32 terms; beyond, 128.
void reduce_sum_int32(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  std::int64_t reduced = 1;
  for (std::int64_t a : call.attributes.get<std::vector<std::int64_t>>("axes")) reduced *= x.shape().extent(static_cast<std::size_t>(a));
  if (reduced < (std::int64_t{1} << 32)) reduce_sum<std::int32_t, std::int64_t, std::int32_t>(call);
  else reduce_sum<std::int32_t, int128, std::int32_t>(call);
}

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

// ---- registration: the seam where dtypes become types.

bool src_is(const OperationPlan& p, std::size_t i, const SimpleDType& d) { return p.operands()[i].dtype() == &d; }

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

KernelFn kernel_for(const OperationPlan& p) {
  const std::string& op = p.operation();
  if (op == "add") return elementwise_kernel(p, false);
  if (op == "mul" || op == "elementwise_mul") return elementwise_kernel(p, true);
  if (op == "relu") return p.compute() == Arithmetic::BINARY32 ? KernelFn(unary<float, ReluF32>) : KernelFn(unary<std::int32_t, ReluI32>);
  if (op == "reduce_sum") {
    if (p.accumulation() == Accumulation::EXACT_INTEGER) return reduce_sum_int32;
    return p.accumulator_dtype() == &DType::Float64() ? KernelFn(reduce_sum<float, double, float>)
                                                       : KernelFn(reduce_sum<float, float, float>);
  }
  if (op == "matmul") return matmul_kernel(p);
  return nullptr;
}

}  // namespace

void register_cpu() {
  KernelTable table;
  for (const OperationPlan& plan : resolvable_plans())
    if (KernelFn k = kernel_for(plan)) table.add(plan, std::move(k));
  register_kernel_table(carrier_class<CPU>(), "CPU", std::move(table));
}

}  // namespace strideweave::carriers::cpu
