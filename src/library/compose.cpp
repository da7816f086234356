// Everyday functions composed from the registered operations and views
// (include/strideweave/compose.h, docs/composition.md).
#include <strideweave/compose.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <strideweave/autograd.h>
#include <strideweave/creation.h>
#include <strideweave/errors.h>
#include <strideweave/move.h>
#include <strideweave/ops.h>

#include "storage/ranges.h"

namespace strideweave {

namespace {

bool recording(const Tensor& x) { return is_grad_enabled() && x.is_differentiable(); }

std::vector<std::int64_t> extents_of(const Shape& s) { return {s.extents().begin(), s.extents().end()}; }

// The reversed axis order of a rank-`rank` tensor.
std::vector<std::int64_t> reversed_axes(std::size_t rank) {
  std::vector<std::int64_t> p(rank);
  for (std::size_t i = 0; i < rank; ++i) p[i] = static_cast<std::int64_t>(rank - 1 - i);
  return p;
}

// Copies src's elements (logical order) into dst, a view of the same shape
// over FRESH storage no one else sees (un-versioned: construction). Host
// memory on both sides: memcpy run by run; otherwise through the classes'
// range access.
void write_into(const Tensor& src, const Tensor& dst) {
  if (src.size() == 0) return;
  const Tensor s = src.layout().is_compact() ? src : detail::compact_copy(src, src.shape());
  const Carrier& from = *s.carrier();
  Carrier& to = *dst.carrier();
  const HostSpan hf = detail::RangeAccess::host(from), ht = detail::RangeAccess::host(to);
  const std::int64_t base = s.offset(), target = dst.offset();
  if (hf && ht && hf.dtype == ht.dtype) {
    const std::size_t bytes = detail::host_element_bytes(*hf.dtype);
    const auto* in = static_cast<const std::byte*>(hf.data);
    auto* out = static_cast<std::byte*>(ht.data);
    detail::for_each_run(dst.layout(), [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      std::memcpy(out + static_cast<std::size_t>(target + index) * bytes,
                  in + static_cast<std::size_t>(base + ordinal) * bytes, static_cast<std::size_t>(length) * bytes);
    });
    return;
  }
  std::vector<Value> buffer;
  detail::for_each_run(dst.layout(), [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
    buffer.resize(static_cast<std::size_t>(length));
    detail::RangeAccess::read(from, base + ordinal, length, buffer.data());
    detail::RangeAccess::write(to, target + index, buffer);
  });
}

// Float32 -> Int32 by truncation toward zero, Bool -> Int32 as 0 and 1: the
// storage conversions of compose.h (no operation converts to Int32), every
// value checked first.
Tensor storage_to_int32(const Tensor& x) {
  const std::vector<Value> values = detail::logical_values(x);
  const bool from_bool = &x.dtype() == &DType::Bool();
  constexpr double kLow = -2147483648.0, kHigh = 2147483648.0;  // the range is [kLow, kHigh)
  if (!from_bool)
    for (std::size_t k = 0; k < values.size(); ++k) {
      const double v = std::trunc(static_cast<double>(values[k].f));
      if (!(v >= kLow && v < kHigh))
        throw ValueError(fmt::format("astype: element {} (in logical order) is {}, which has no Int32 value", k,
                                     values[k].f));
    }
  return detail::fill_tensor<std::int32_t>(x.shape(), DType::Int32(), CarrierChoice(*x.carrier()),
                                           [&](std::int64_t first, std::int64_t count, std::int32_t* out) {
                                             for (std::int64_t k = 0; k < count; ++k) {
                                               const Value& v = values[static_cast<std::size_t>(first + k)];
                                               out[k] = from_bool ? std::int32_t{v.b}
                                                                  : static_cast<std::int32_t>(std::trunc(v.f));
                                             }
                                           });
}

// An Int32 tensor of `shape` holding, at each element, offset + its
// coordinate along `axis` (the scatter indices of one concatenated block).
Tensor block_indices(const Shape& shape, std::int64_t axis, std::int64_t offset, const CarrierChoice& on) {
  const std::vector<std::int64_t> e = extents_of(shape);
  std::int64_t inner = 1;  // logical order: the axes before `axis` are faster
  for (std::int64_t a = 0; a < axis; ++a) inner *= e[static_cast<std::size_t>(a)];
  const std::int64_t extent = e[static_cast<std::size_t>(axis)];
  return detail::fill_tensor<std::int32_t>(
      shape, DType::Int32(), on, [&](std::int64_t first, std::int64_t count, std::int32_t* out) {
        // Counters, not a division per element: r runs through the faster
        // axes' block, c along the axis.
        std::int64_t r = first % inner, c = (first / inner) % extent;
        for (std::int64_t k = 0; k < count; ++k) {
          out[k] = static_cast<std::int32_t>(offset + c);
          if (++r == inner) {
            r = 0;
            if (++c == extent) c = 0;
          }
        }
      });
}

// The number of elements `axes` reduce in x.
std::int64_t reduced_count(const char* what, const Tensor& x, const Axes& axes) {
  if (!axes.list()) return x.size();
  std::int64_t n = 1;
  for (std::int64_t a : *axes.list())
    n *= x.shape().extent(static_cast<std::size_t>(normalize_axis(a, x.rank(), what)));
  return n;
}

Tensor as_float32(const Tensor& x) { return &x.dtype() == &DType::Float32() ? x : astype(x, DType::Float32()); }

}  // namespace

// ---------------------------------------------------------------- copies

Tensor clone(const Tensor& x) {
  if (recording(x)) return add(x, scalar_like(x, -0.0f));
  return detail::compact_copy(x, x.shape());
}

Tensor astype(const Tensor& x, const SimpleDType& dtype) {
  const SimpleDType& from = x.dtype();
  if (&dtype == &from) return clone(x);
  const bool to_f = &dtype == &DType::Float32(), to_i = &dtype == &DType::Int32(), to_b = &dtype == &DType::Bool();
  if (!to_f && !to_i && !to_b)
    throw ValueError("astype: " + dtype.name() + " is not a stored dtype (Float32, Int32, Bool)");
  if (&from == &DType::Bool()) {
    if (to_f) return select(x, scalar_like(x, 1.0f), scalar_like(x, 0.0f));
    return storage_to_int32(x);
  }
  if (&from == &DType::Int32()) {
    const Tensor f = add(x, scalar_like(x, 0.0f));
    return to_f ? f : ne(f, scalar_like(f, 0.0f));
  }
  if (&from == &DType::Float32()) {
    if (to_b) return ne(x, scalar_like(x, 0.0f));
    return storage_to_int32(x);
  }
  throw TypeError("astype: no conversion from " + from.name() + " to " + dtype.name());
}

Tensor copy_to(const Tensor& x, const std::shared_ptr<Carrier>& destination) {
  if (!destination) throw TypeError("copy_to: destination must be a carrier");
  // A storage copy, never recorded: a recorded clone's result is saved by
  // its node, and the move would release it (compose.h).
  const Tensor copy = detail::compact_copy(x, x.shape());
  NoGradGuard no_grad;
  return move(copy, destination);
}

Tensor copy_to(const Tensor& x, CarrierClass cls) {
  const CarrierChoice choice(cls);  // TypeError for a class that cannot be built from nothing
  return copy_to(x, choice.allocate(x.size(), x.dtype(), /*empty=*/true));
}

// ---------------------------------------------------------------- views

Tensor transpose(const Tensor& x) {
  const std::vector<std::int64_t> p = reversed_axes(x.rank());
  return x.permute(p);
}

Tensor reshape(const Tensor& x, const Shape& shape, ReshapeOrder order) {
  if (order == ReshapeOrder::first_mode_fastest) return x.reshape(shape);
  if (shape.size() != x.size())
    throw ValueError(fmt::format("reshape: cannot reshape {} elements into {}", x.size(), shape.to_string()));
  const auto m = shape.modes();
  const Shape reversed_shape(std::vector<IntTuple>(m.rbegin(), m.rend()));
  const Tensor t = transpose(x);
  try {
    // A view only when it has the asked-for shape: Layout::reshape may keep
    // a target leaf as a tuple of source pieces, which is a view of another
    // (nested) shape that cannot be sliced or exported like the flat one.
    Tensor v = t.reshape(reversed_shape);
    if (v.shape() == reversed_shape) return transpose(v);
  } catch (const ValueError&) {
  }
  // Not viewable so in that order: a compact copy (recorded when recording) is.
  return transpose(clone(t).reshape(reversed_shape));
}

// ---------------------------------------------------------------- joining

Tensor concatenate(std::span<const Tensor> tensors, std::int64_t axis) {
  if (tensors.empty()) throw ValueError("concatenate: needs at least one tensor");
  const Tensor& first = tensors.front();
  const auto rank = static_cast<std::int64_t>(first.rank());
  if (rank == 0) throw ValueError("concatenate: a rank-0 tensor has no axis to join along");
  const std::int64_t a = normalize_axis(axis, static_cast<std::size_t>(rank), "concatenate");
  std::vector<std::int64_t> out = extents_of(first.shape());
  out[static_cast<std::size_t>(a)] = 0;
  bool record = false;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (&t.dtype() != &first.dtype())
      throw TypeError(fmt::format("concatenate: tensor {} is {}, tensor 0 is {} (no promotion: astype first)", i,
                                  t.dtype().name(), first.dtype().name()));
    if (t.carrier_type() != first.carrier_type() || t.carrier()->placement() != first.carrier()->placement())
      throw TypeError(fmt::format("concatenate: tensor {} is on {}, tensor 0 on {} (copy_to first)", i,
                                  t.carrier()->class_name(), first.carrier()->class_name()));
    if (static_cast<std::int64_t>(t.rank()) != rank)
      throw ValueError(fmt::format("concatenate: tensor {} has rank {}, tensor 0 rank {}", i, t.rank(), rank));
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != a && t.shape().extent(static_cast<std::size_t>(d)) != out[static_cast<std::size_t>(d)])
        throw ValueError(fmt::format("concatenate: tensor {} has shape {}, which differs from tensor 0's {} off axis {}",
                                     i, t.shape().to_string(), first.shape().to_string(), a));
    out[static_cast<std::size_t>(a)] += t.shape().extent(static_cast<std::size_t>(a));
    record = record || recording(t);
  }
  const Shape shape = Shape::of(out);
  const CarrierChoice on(*first.carrier());
  std::int64_t offset = 0;
  if (record) {
    // scatter's indices are Int32: a longer join cannot be recorded.
    if (out[static_cast<std::size_t>(a)] > std::numeric_limits<std::int32_t>::max())
      throw OverflowError(fmt::format("concatenate: a recorded join of {} elements along axis {} needs scatter indices "
                                      "beyond Int32; run it under no_grad (a storage copy) or join fewer",
                                      out[static_cast<std::size_t>(a)], a));
    Tensor result = zeros(shape, first.dtype(), on);
    for (const Tensor& t : tensors) {
      const std::int64_t length = t.shape().extent(static_cast<std::size_t>(a));
      if (length > 0) result = scatter(result, block_indices(Shape::of(extents_of(t.shape())), a, offset, on), t, a);
      offset += length;
    }
    return result;
  }
  Tensor result = empty(shape, first.dtype(), on);
  for (const Tensor& t : tensors) {
    const std::int64_t length = t.shape().extent(static_cast<std::size_t>(a));
    write_into(t.reshape(Shape::of(extents_of(t.shape()))), result.slice(a, offset, offset + length));
    offset += length;
  }
  return result;
}

Tensor stack(std::span<const Tensor> tensors, std::int64_t axis) {
  if (tensors.empty()) throw ValueError("stack: needs at least one tensor");
  const auto rank = static_cast<std::int64_t>(tensors.front().rank());
  if (axis < -(rank + 1) || axis > rank)
    throw ValueError(fmt::format("stack: axis {} is out of range for a new axis of rank {}", axis, rank + 1));
  for (std::size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].shape() != tensors.front().shape())
      throw ValueError(fmt::format("stack: tensor {} has shape {}, tensor 0 {}", i, tensors[i].shape().to_string(),
                                   tensors.front().shape().to_string()));
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(axis));
  return concatenate(expanded, axis < 0 ? axis + rank + 1 : axis);
}

std::vector<Tensor> split(const Tensor& x, std::int64_t sections, std::int64_t axis) {
  const std::int64_t a = normalize_axis(axis, x.rank(), "split");
  const std::int64_t extent = x.shape().extent(static_cast<std::size_t>(a));
  if (sections <= 0) throw ValueError(fmt::format("split: sections must be >= 1, got {}", sections));
  if (extent % sections != 0)
    throw ValueError(fmt::format("split: axis {} of extent {} does not divide into {} equal sections", a, extent,
                                 sections));
  std::vector<std::int64_t> indices;
  for (std::int64_t k = 1; k < sections; ++k) indices.push_back(k * (extent / sections));
  return split(x, std::span<const std::int64_t>(indices), a);
}

std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> indices, std::int64_t axis) {
  const std::int64_t a = normalize_axis(axis, x.rank(), "split");
  const std::int64_t extent = x.shape().extent(static_cast<std::size_t>(a));
  // numpy.split: part k is x[points[k-1]:points[k]] along the axis, with 0
  // and the extent at the ends, each point normalised on its own as a Python
  // slice bound is (negative from the end, clamped), an inverted pair empty.
  const auto bound = [extent](std::int64_t p) { return std::clamp<std::int64_t>(p < 0 ? p + extent : p, 0, extent); };
  std::vector<Tensor> parts;
  std::int64_t start = 0;
  for (std::size_t k = 0; k <= indices.size(); ++k) {
    const std::int64_t stop = k < indices.size() ? bound(indices[k]) : extent;
    parts.push_back(x.slice(a, start, std::max(start, stop)));
    start = stop;
  }
  return parts;
}

// ---------------------------------------------------------------- statistics

Tensor mean(const Tensor& x, Axes axes, bool keepdims) {
  const Tensor f = as_float32(x);
  const std::int64_t n = reduced_count("mean", f, axes);
  const Tensor sum = reduce_sum(f, axes, keepdims);
  return div(sum, scalar_like(sum, static_cast<float>(n)));
}

Tensor var(const Tensor& x, Axes axes, std::int64_t ddof, bool keepdims) {
  if (ddof < 0) throw ValueError(fmt::format("var: ddof must be >= 0, got {}", ddof));
  const Tensor f = as_float32(x);
  const std::int64_t n = reduced_count("var", f, axes);
  const Tensor centred = sub(f, mean(f, axes, /*keepdims=*/true));
  const Tensor sum = reduce_sum(elementwise_mul(centred, centred), axes, keepdims);
  return div(sum, scalar_like(sum, static_cast<float>(std::max<std::int64_t>(n - ddof, 0))));
}

Tensor stddev(const Tensor& x, Axes axes, std::int64_t ddof, bool keepdims) {
  return sqrt(var(x, std::move(axes), ddof, keepdims));
}

Tensor softmax(const Tensor& x, std::int64_t axis) {
  const Tensor m = reduce_max(x, Axes(axis), /*keepdims=*/true).detach();
  const Tensor e = exp(sub(x, m));
  return div(e, reduce_sum(e, Axes(axis), /*keepdims=*/true));
}

Tensor log_softmax(const Tensor& x, std::int64_t axis) {
  const Tensor shifted = sub(x, reduce_max(x, Axes(axis), /*keepdims=*/true).detach());
  return sub(shifted, log(reduce_sum(exp(shifted), Axes(axis), /*keepdims=*/true)));
}

// ---------------------------------------------------------------- comparisons

Tensor comparison_scalar(const Tensor& like, const WeakScalar& value) {
  const SimpleDType& d = like.dtype();
  const std::string text = value.to_string();
  if (&d == &DType::Bool()) {
    if (!value.is_bool())
      throw TypeError("comparison: " + text + " beside a Bool tensor: compare with True or False");
    return scalar_like(like, value);
  }
  if (value.is_bool())
    throw TypeError("comparison: the bool " + text + " beside a " + d.name() + " tensor has no " + d.name() + " value");
  if (&d == &DType::Float32()) {
    const float f = value.to_float32();
    // An integer whose Float32 rounding is itself (below 2**127, where an
    // int128 holds every Float32 integer); a float that survives rounding.
    const bool exact = value.kind() == WeakScalarKind::INTEGER
                           ? std::fabs(f) < 1.0e38f && static_cast<int128>(f) == value.integer_value()
                           : (static_cast<double>(f) == value.real_value() || std::isnan(value.real_value()));
    if (!exact)
      throw TypeError("comparison: " + text + " is not exactly representable as Float32 (it would round to " +
                      fmt::format("{}", f) + "); compare with a Float32 value");
    return scalar_like(like, f);
  }
  if (&d == &DType::Int32()) {
    if (value.kind() == WeakScalarKind::INTEGER) {
      const int128 v = value.integer_value();
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        throw TypeError("comparison: " + text + " is outside Int32");
      return scalar_like(like, static_cast<std::int32_t>(v));
    }
    const double r = value.real_value();
    if (!(std::trunc(r) == r && r >= -2147483648.0 && r <= 2147483647.0))
      throw TypeError("comparison: " + text + " is not exactly representable as Int32");
    return scalar_like(like, static_cast<std::int32_t>(r));
  }
  throw TypeError("comparison: a number beside a " + d.name() + " tensor");
}

}  // namespace strideweave
