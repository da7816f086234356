// strideweave/factory.h — building tensors from C++ values.
//
// make_tensor<C>(values, shape) stores `values` in a fresh carrier of class C
// (Generic or CPU) and views it with the canonical compact layout of `shape`.
// Values are given in LOGICAL order, which is first-mode-fastest
// (docs/layout.md): for Shape{2, 3}, values[i + 2*j] is element (i, j).
// A size mismatch is a ValueError.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <strideweave/errors.h>
#include <strideweave/tensor.h>

namespace strideweave {

template <class T>
Value to_value(T v) {
  if constexpr (std::is_same_v<T, bool>) return Value::from_bool(v);
  else if constexpr (std::is_same_v<T, std::int32_t>) return Value::from_int32(v);
  else return Value::from_float32(static_cast<float>(v));
}

template <class C, class T>
Tensor make_tensor(std::span<const T> values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != shape.size())
    throw ValueError("make_tensor: " + std::to_string(values.size()) + " values for a shape of size " +
                     std::to_string(shape.size()));
  std::vector<Value> vs;
  vs.reserve(values.size());
  for (const T& v : values) vs.push_back(to_value(v));
  return Tensor(C::from_values(vs, dtype_traits<T>::dtype()), shape);
}

template <class C, class T>
Tensor make_tensor(std::initializer_list<T> values, const Shape& shape) {
  return make_tensor<C, T>(std::span<const T>(values.begin(), values.size()), shape);
}

template <class C, class T>
Tensor make_tensor(const std::vector<T>& values, const Shape& shape) {
  return make_tensor<C, T>(std::span<const T>(values.data(), values.size()), shape);
}

}  // namespace strideweave
