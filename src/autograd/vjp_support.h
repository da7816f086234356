// Internal: small building blocks of the VJPs. Everything here is either a
// public operation or a fresh tensor made through the public Carrier API
// (new_like / allocate_like on the operand's carrier), so every VJP runs on
// any carrier class that executes the operations it uses.
#pragma once

#include <strideweave/autograd.h>
#include <strideweave/ops.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace strideweave::autograd {

using Grads = std::vector<std::optional<Tensor>>;

// The top-level extents of `t` as a flat Shape.
inline Shape flat_shape(const Tensor& t) { return Shape::of(t.shape().extents()); }

// Fresh Float32 tensors on `like`'s carrier class.
Tensor zeros_like(const Tensor& like);                  // like's extents, +0.0
Tensor zeros(const Tensor& like, std::span<const std::int64_t> extents);
Tensor scalar_like(const Tensor& like, float value);    // rank 0 (broadcasts against anything)
// A tensor of `extents` whose element at coordinate c is f(c) (logical
// order, first axis fastest), Float32 or Int32.
Tensor float_tensor(const Tensor& like, std::span<const std::int64_t> extents,
                    const std::function<float(std::span<const std::int64_t>)>& f);
Tensor int_tensor(const Tensor& like, std::span<const std::int64_t> extents,
                  const std::function<std::int32_t(std::span<const std::int64_t>)>& f);
// A fresh copy of `values`' elements (logical order) with `shape`, on
// `carrier`'s exact class, compact.
Tensor fresh_copy(const Tensor& values, const Carrier& carrier, const Shape& shape);

// An Int32 operand as Float32 (the policy's conversion, through mul by 1.0);
// a Float32 one unchanged.
Tensor as_float(const Tensor& t);
// `t` itself when compact at offset 0, else an exact copy (mul by 1.0, which
// is the identity on every binary32 value).
Tensor contiguous(const Tensor& t);
// `t` viewed with `shape` (same size), copying first when the view is not
// expressible.
Tensor reshape_to(const Tensor& t, const Shape& shape);
// The cotangent of a reduction over sorted `axes` broadcast back to
// `extents` (a view: keepdims axes re-inserted, then broadcast_to).
Tensor expand_reduced(const Tensor& g, std::span<const std::int64_t> extents, std::span<const std::int64_t> axes,
                      bool keepdims);
// Reverses the ordering along `axis` (a gather with reversed indices).
Tensor flip(const Tensor& t, std::int64_t axis);

// The common attribute reads.
inline std::int64_t attr_int(const VjpContext& c, const char* name) { return c.attributes.get<std::int64_t>(name); }
inline bool attr_bool(const VjpContext& c, const char* name) { return c.attributes.get<bool>(name); }
inline double attr_real(const VjpContext& c, const char* name) { return c.attributes.get<double>(name); }
inline const std::vector<std::int64_t>& attr_ints(const VjpContext& c, const char* name) {
  return c.attributes.get<std::vector<std::int64_t>>(name);
}

}  // namespace strideweave::autograd
