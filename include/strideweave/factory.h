// strideweave/factory.h — building tensors from C++ values.
//
// Two factories, each stating the order of its values (docs/layout.md):
//
// make_tensor<C>(values, shape) stores `values` in a fresh carrier of class C
// (Generic or CPU) and views it with the canonical compact layout of `shape`.
// Values are given in LOGICAL order, which is first-mode-fastest: for
// Shape{2, 3}, values[i + 2*j] is element (i, j). A size mismatch is a
// ValueError.
//
// tensor<C>(nested) reads nested initializer lists the way they are written,
// ROW-MAJOR like torch::tensor and numpy.array: the outer list is axis 0, so
// tensor<CPU>({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}}) is the (2, 3) tensor
// whose element (i, j) is the j-th value of row i. Ranks 1 to 4; lists of
// unequal length at one depth (ragged) are a ValueError; an empty list
// gives extent 0.
//
// The element type T is float, std::int32_t or bool (a clear compile-time
// error otherwise, e.g. for double literals).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <strideweave/errors.h>
#include <strideweave/literal.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

template <class T>
Value to_value(T v) {
  if constexpr (std::is_same_v<T, bool>) return Value::from_bool(v);
  else if constexpr (std::is_same_v<T, std::int32_t>) return Value::from_int32(v);
  else return Value::from_float32(static_cast<float>(v));
}

template <class C, class T>
Tensor make_tensor(std::span<const T> values, const Shape& shape) {
  static_assert(is_element_type_v<T>,
                "make_tensor: a tensor stores float (Float32), std::int32_t (Int32) or bool (Bool) elements; "
                "write float literals with an f suffix (1.0f) and convert double or 64-bit values first");
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

namespace detail {

// Nested initializer lists read into a LiteralBuilder (strideweave/literal.h:
// the one home of the shape, raggedness and ordering rules).
template <class T>
void read_nested(const T& value, LiteralBuilder& builder) {
  builder.number(WeakScalar(value));
}
template <class T, class Item>
void read_nested(std::initializer_list<Item> list, LiteralBuilder& builder) {
  builder.open(static_cast<std::int64_t>(list.size()));
  for (const Item& item : list) read_nested<T>(item, builder);
  builder.close();
}

template <class C, class T, class Nested>
Tensor tensor_from_nested(Nested nested, std::size_t rank) {
  static_assert(is_element_type_v<T>,
                "tensor: a tensor stores float (Float32), std::int32_t (Int32) or bool (Bool) elements; "
                "write float literals with an f suffix (1.0f) and convert double or 64-bit values first");
  LiteralBuilder builder;
  builder.fixed_rank(rank);  // an empty list leaves the inner extents 0
  read_nested<T>(nested, builder);
  const SimpleDType& dtype = dtype_traits<T>::dtype();
  return Tensor(C::from_values(builder.values(dtype), dtype), builder.shape());
}

}  // namespace detail

template <class C, class T>
Tensor tensor(std::initializer_list<T> values) {
  return detail::tensor_from_nested<C, T>(values, 1);
}
template <class C, class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows) {
  return detail::tensor_from_nested<C, T>(rows, 2);
}
template <class C, class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> planes) {
  return detail::tensor_from_nested<C, T>(planes, 3);
}
template <class C, class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> blocks) {
  return detail::tensor_from_nested<C, T>(blocks, 4);
}

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
