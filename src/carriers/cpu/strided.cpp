// CPU operand views. See strided.h.
#include "carriers/cpu/strided.h"

namespace strideweave::carriers::cpu {

bool has_plain_strides(const Layout& layout) {
  for (std::size_t i = 0; i < layout.rank(); ++i)
    if (!layout.mode_stride(i)) return false;
  return true;
}

template <class T>
Strided<T> strided(const Tensor& t) {
  Strided<T> out;
  const auto& cpu = static_cast<const CPU&>(*t.carrier());
  if (has_plain_strides(t.layout())) {
    out.base = cpu.data<T>() + t.offset();
    for (std::size_t i = 0; i < t.rank(); ++i) out.strides.push_back(*t.layout().mode_stride(i));
    return out;
  }
  // FallbackCopy: gather the hierarchical view into a compact temporary.
  auto tmp = CPU::create(t.size(), t.dtype(), true, true);
  T* dst = tmp->data<T>();
  const T* src = cpu.data<T>() + t.offset();
  for (std::int64_t k = 0; k < t.size(); ++k) dst[k] = src[t.layout()(k)];
  out.base = dst;
  const Layout compact = Layout::compact(Shape::of(t.shape().extents()));
  out.strides = *compact.flat_strides();
  out.keep_alive = std::move(tmp);
  return out;
}

template Strided<float> strided<float>(const Tensor&);
template Strided<std::int32_t> strided<std::int32_t>(const Tensor&);
template Strided<bool> strided<bool>(const Tensor&);

}  // namespace strideweave::carriers::cpu
