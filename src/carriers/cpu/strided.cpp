// CPU operand views. See strided.h.
#include "carriers/cpu/strided.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

namespace strideweave::carriers::cpu {

bool has_plain_strides(const Layout& layout) {
  if (layout.is_flat()) return true;  // every mode a leaf: one plain stride each
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
  // The framework copies every operand has_plain_strides refuses before a
  // CPU kernel runs (borrowed_input = FallbackCopy; cpu_kernels.cpp), so
  // this is a broken invariant, not a user error.
  throw RuntimeError(fmt::format("CPU kernel: operand layout {} has a mode without one plain stride (the framework "
                                 "should have copied it)",
                                 t.layout().to_string()));
}

template Strided<float> strided<float>(const Tensor&);
template Strided<std::int32_t> strided<std::int32_t>(const Tensor&);
template Strided<bool> strided<bool>(const Tensor&);

}  // namespace strideweave::carriers::cpu
