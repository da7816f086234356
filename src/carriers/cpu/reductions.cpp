// CPU kernels: reductions, arg reductions, cumsum, sort, topk.
#include "carriers/cpu/kernels.h"

namespace strideweave::carriers::cpu {
namespace {

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

}  // namespace

KernelFn reduction_kernel(const OperationPlan& p) {
  if (p.operation() == "reduce_sum") {
    if (p.accumulation() == Accumulation::EXACT_INTEGER) return reduce_sum_int32;
    return p.accumulator_dtype() == &DType::Float64() ? KernelFn(reduce_sum<float, double, float>)
                                                       : KernelFn(reduce_sum<float, float, float>);
  }
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
