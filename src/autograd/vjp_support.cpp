// Building blocks of the VJPs. See vjp_support.h.
#include "autograd/vjp_support.h"

#include <algorithm>

namespace strideweave::autograd {
namespace {

// Calls f(coordinate) for every coordinate of `extents` in logical order.
template <class F>
std::vector<Value> generate(std::span<const std::int64_t> extents, F&& f) {
  std::int64_t size = 1;
  for (std::int64_t e : extents) size *= e;
  std::vector<Value> out;
  out.reserve(static_cast<std::size_t>(size));
  std::vector<std::int64_t> coord(extents.size(), 0);
  for (std::int64_t k = 0; k < size; ++k) {
    out.push_back(f(std::span<const std::int64_t>(coord)));
    for (std::size_t a = 0; a < coord.size(); ++a) {  // first axis fastest
      if (++coord[a] < extents[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

Tensor from_values(const Tensor& like, std::span<const std::int64_t> extents, const std::vector<Value>& values,
                   const DType& dtype) {
  return Tensor(like.carrier()->new_like(values, true, &dtype), Shape::of(extents));
}

}  // namespace

Tensor zeros_like(const Tensor& like) { return zeros(like, like.shape().extents()); }

Tensor zeros(const Tensor& like, std::span<const std::int64_t> extents) {
  const Shape shape = Shape::of(extents);
  return Tensor(like.carrier()->allocate_like(shape.size(), true, &DType::Float32()), shape);
}

Tensor scalar_like(const Tensor& like, float value) {
  const Value v[] = {Value::from_float32(value)};
  return Tensor(like.carrier()->new_like(v, true, &DType::Float32()), Shape{});
}

Tensor float_tensor(const Tensor& like, std::span<const std::int64_t> extents,
                    const std::function<float(std::span<const std::int64_t>)>& f) {
  return from_values(like, extents, generate(extents, [&](auto c) { return Value::from_float32(f(c)); }),
                     DType::Float32());
}

Tensor int_tensor(const Tensor& like, std::span<const std::int64_t> extents,
                  const std::function<std::int32_t(std::span<const std::int64_t>)>& f) {
  return from_values(like, extents, generate(extents, [&](auto c) { return Value::from_int32(f(c)); }),
                     DType::Int32());
}

Tensor fresh_copy(const Tensor& values, const Carrier& carrier, const Shape& shape) {
  return Tensor(carrier.new_like(values.values(), true, &DType::Float32()), shape);
}

Tensor as_float(const Tensor& t) { return t.is_differentiable() ? t : mul(t, 1.0); }

Tensor contiguous(const Tensor& t) {
  if (t.offset() == 0 && t.layout().is_compact()) return t;
  return mul(t, 1.0);
}

Tensor reshape_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  return contiguous(t).reshape(shape);
}

Tensor expand_reduced(const Tensor& g, std::span<const std::int64_t> extents, std::span<const std::int64_t> axes,
                      bool keepdims) {
  Tensor kept = g;
  if (!keepdims)
    for (std::int64_t a : axes) kept = kept.unsqueeze(a);  // ascending: each lands at its own position
  return kept.broadcast_to(Shape::of(extents));
}

Tensor flip(const Tensor& t, std::int64_t axis) {
  const std::int64_t n = t.shape().extent(static_cast<std::size_t>(axis));
  if (n <= 1) return t;
  const auto extents = t.shape().extents();
  const Tensor idx = int_tensor(t, extents, [&](std::span<const std::int64_t> c) {
    return static_cast<std::int32_t>(n - 1 - c[static_cast<std::size_t>(axis)]);
  });
  return gather(t, idx, axis);
}

}  // namespace strideweave::autograd
