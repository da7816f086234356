// Fresh tensors from a shape (include/strideweave/creation.h,
// docs/creation.md).
#include <strideweave/creation.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/shipped.h>
#include <strideweave/errors.h>
#include <strideweave/literal.h>

#include "carriers/cpu/parallel.h"
#include "storage/ranges.h"

namespace strideweave {

namespace {

const ShippedCarrier* shipped_of(CarrierClass cls) noexcept {
  for (const ShippedCarrier& s : shipped_carriers())
    if (s.cls == cls) return &s;
  return nullptr;
}

// The dtype's one / zero, through the literal conversion (so a dtype that
// is not stored is the literal rule's ValueError).
Value one_of(const char* what, const SimpleDType& dtype) {
  return detail::creation_value(what, &dtype == &DType::Bool() ? WeakScalar(true) : WeakScalar(1), dtype);
}

// The chunk of Values a fill converts at a time (bounded memory whatever
// the tensor's size).
constexpr std::int64_t kFillChunk = 4096;
// The fewest elements one thread fills in place.
constexpr std::int64_t kParallelGrain = 1 << 16;

// Every element `value` (a Float32, Int32 or Bool value of `dtype`).
Tensor constant(const Shape& shape, const Value& value, const SimpleDType& dtype, const CarrierChoice& carrier) {
  switch (value.kind) {
    case ElementKind::Bool:
      return detail::fill_tensor<bool>(shape, dtype, carrier,
                                       [&](std::int64_t, std::int64_t count, bool* out) { std::fill_n(out, count, value.b); });
    case ElementKind::Int32:
      return detail::fill_tensor<std::int32_t>(
          shape, dtype, carrier, [&](std::int64_t, std::int64_t count, std::int32_t* out) { std::fill_n(out, count, value.i); });
    default:
      return detail::fill_tensor<float>(shape, dtype, carrier,
                                        [&](std::int64_t, std::int64_t count, float* out) { std::fill_n(out, count, value.f); });
  }
}

CarrierChoice like_carrier(const Tensor& like, const std::optional<CarrierChoice>& carrier) {
  return carrier ? *carrier : CarrierChoice(*like.carrier());
}

bool is_bool(const WeakScalar& s) noexcept { return s.is_bool(); }

}  // namespace

CarrierChoice::CarrierChoice() : cls_(strideweave::carrier_class<CPU>()) {}

CarrierChoice::CarrierChoice(CarrierClass cls) : cls_(cls) {
  if (!shipped_of(cls))
    throw TypeError("carrier: " + cls.name() +
                    " cannot be built from nothing; give a carrier instance of that class as the prototype (the "
                    "classes that can: Generic, CPU)");
}

CarrierChoice::CarrierChoice(const Carrier& prototype)
    : cls_(prototype.exact_class()), prototype_(prototype.shared_from_this()) {}

std::shared_ptr<Carrier> CarrierChoice::allocate(std::int64_t size, const SimpleDType& dtype, bool empty) const {
  // Bool storage must hold false or true; never leave it unspecified.
  const bool skip_zero = empty && &dtype != &DType::Bool();
  if (prototype_) return prototype_->allocate_like(size, true, &dtype, skip_zero);
  // A shipped class: an empty instance (which checks the dtype) is the prototype.
  const std::shared_ptr<Carrier> prototype = shipped_of(cls_)->make({}, dtype);
  return prototype->allocate_like(size, true, &dtype, skip_zero);
}

namespace detail {

float round_to_float32(double value) noexcept {
  // Beyond FLT_MAX + half an ulp (2^128 - 2^103) binary32 rounding overflows
  // to infinity; converting such a double with a cast is undefined.
  constexpr double kOverflow = 3.4028235677973366e38;
  if (std::fabs(value) >= kOverflow) return value > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

Value creation_value(const char* what, const WeakScalar& number, const SimpleDType& dtype) {
  LiteralBuilder builder(what);
  builder.number(number);
  return builder.values(dtype).front();
}

Tensor fill_tensor_erased(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier,
                          ProduceChunk produce, void* context) {
  const std::int64_t n = shape.size();
  const std::shared_ptr<Carrier> storage = carrier.allocate(n, dtype, /*empty=*/true);
  // The storage is fresh and no one else sees it: the writes are the
  // framework's un-versioned writes.
  if (const HostSpan host = RangeAccess::host(*storage)) {
    // In place, over the CPU carrier's thread pool in static ranges (the
    // values never depend on the split: produce is a function of the index).
    auto* bytes = static_cast<unsigned char*>(host.data);
    const std::size_t element = host_element_bytes(dtype);
    carriers::cpu::parallel_for(n, kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
      produce(context, begin, end - begin, bytes + static_cast<std::size_t>(begin) * element);
    });
  } else {
    const std::size_t bytes = host_element_bytes(dtype);
    std::vector<unsigned char> typed(static_cast<std::size_t>(std::min(n, kFillChunk)) * bytes);
    std::vector<Value> values(static_cast<std::size_t>(std::min(n, kFillChunk)));
    for (std::int64_t first = 0; first < n; first += kFillChunk) {
      const std::int64_t count = std::min(kFillChunk, n - first);
      produce(context, first, count, typed.data());
      // The buffer is host memory in dtype's host representation.
      host_to_values(HostSpan{typed.data(), &dtype, count}, 0, count, values.data());
      RangeAccess::write(*storage, first, std::span<const Value>(values.data(), static_cast<std::size_t>(count)));
    }
  }
  return Tensor(storage, 0, Layout::compact(shape));
}

}  // namespace detail

Tensor empty(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier) {
  return Tensor(carrier.allocate(shape.size(), dtype, /*empty=*/true), 0, Layout::compact(shape));
}

Tensor zeros(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier) {
  return Tensor(carrier.allocate(shape.size(), dtype, /*empty=*/false), 0, Layout::compact(shape));
}

Tensor ones(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier) {
  return constant(shape, one_of("ones", dtype), dtype, carrier);
}

Tensor full(const Shape& shape, const WeakScalar& value, const SimpleDType* dtype, const CarrierChoice& carrier) {
  LiteralBuilder builder("full");
  builder.number(value);
  const SimpleDType& d = dtype ? *dtype : builder.inferred_dtype();
  const Value v = builder.values(d).front();
  return constant(shape, v, d, carrier);
}

Tensor empty_like(const Tensor& like, const SimpleDType* dtype, const std::optional<CarrierChoice>& carrier) {
  return empty(like.shape(), dtype ? *dtype : like.dtype(), like_carrier(like, carrier));
}
Tensor zeros_like(const Tensor& like, const SimpleDType* dtype, const std::optional<CarrierChoice>& carrier) {
  return zeros(like.shape(), dtype ? *dtype : like.dtype(), like_carrier(like, carrier));
}
Tensor ones_like(const Tensor& like, const SimpleDType* dtype, const std::optional<CarrierChoice>& carrier) {
  return ones(like.shape(), dtype ? *dtype : like.dtype(), like_carrier(like, carrier));
}
Tensor full_like(const Tensor& like, const WeakScalar& value, const SimpleDType* dtype,
                 const std::optional<CarrierChoice>& carrier) {
  return full(like.shape(), value, dtype ? dtype : &like.dtype(), like_carrier(like, carrier));
}

namespace {

// out[k] = round_to_float32(start + double(first + k) * step) for k < count.
// When every value lies well inside the Float32 range (`bounded`: the
// caller checked both ends), the loop is plain arithmetic the compiler
// vectorises at the baseline instruction set: the index converts from an
// int32 offset (a packed conversion) added to the chunk's base, which is
// exactly double(first + k) below 2**53.
void affine_floats(double start, double step, std::int64_t first, std::int64_t count, float* out, bool bounded) {
  if (!bounded) {
    for (std::int64_t k = 0; k < count; ++k) out[k] = detail::round_to_float32(start + static_cast<double>(first + k) * step);
    return;
  }
  constexpr std::int64_t kBlock = std::int64_t{1} << 30;
  for (std::int64_t done = 0; done < count; done += kBlock) {
    const auto n = static_cast<std::int32_t>(std::min(kBlock, count - done));
    const auto base = static_cast<double>(first + done);
    float* o = out + done;
    for (std::int32_t k = 0; k < n; ++k) o[k] = static_cast<float>(start + (base + static_cast<double>(k)) * step);
  }
}

// True when values between a and b (and a rounding past them) stay well
// inside the Float32 range, so a plain cast is defined and exact rounding.
bool inside_float32(double a, double b) { return std::fabs(a) < 1.0e38 && std::fabs(b) < 1.0e38; }

}  // namespace

Tensor arange(const WeakScalar& stop) { return arange(0, stop, 1); }

Tensor arange(const WeakScalar& start, const WeakScalar& stop, const WeakScalar& step, const SimpleDType* dtype,
              const CarrierChoice& carrier) {
  if (is_bool(start) || is_bool(stop) || is_bool(step))
    throw TypeError("arange: a bound or step is a bool; give numbers");
  const bool integral = start.kind() == WeakScalarKind::INTEGER && stop.kind() == WeakScalarKind::INTEGER &&
                        step.kind() == WeakScalarKind::INTEGER;
  const SimpleDType& d = dtype ? *dtype : (integral ? DType::Int32() : DType::Float32());
  if (&d != &DType::Int32() && &d != &DType::Float32())
    throw TypeError("arange: dtype must be Int32 or Float32, not " + d.name());
  if (&d == &DType::Int32() && !integral)
    throw TypeError("arange: Int32 elements need integer start, stop and step (a float would be truncated)");
  constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max();
  if (integral) {
    const int128 a = start.integer_value(), b = stop.integer_value(), s = step.integer_value();
    // Within 64 bits, every product and difference below is exact in int128.
    constexpr int128 kBound = int128{1} << 64;
    for (int128 v : {a, b, s})
      if (v <= -kBound || v >= kBound)
        throw OverflowError("arange: " + WeakScalar::integer(v).to_string() + " is beyond 64 bits");
    if (s == 0) throw ValueError("arange: step must not be zero");
    const int128 diff = b - a;
    int128 count = 0;
    if (s > 0 && diff > 0) count = (diff + s - 1) / s;
    if (s < 0 && diff < 0) count = (-diff + (-s) - 1) / (-s);
    if (count > kMaxCount) throw ValueError("arange: more elements than a shape holds");
    const auto n = static_cast<std::int64_t>(count);
    if (&d == &DType::Int32() && n > 0) {
      const int128 last = a + (count - 1) * s;
      for (int128 v : {a, last})
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
          throw OverflowError("arange: the value " + WeakScalar::integer(v).to_string() + " is outside Int32");
    }
    if (&d == &DType::Int32())
      return detail::fill_tensor<std::int32_t>(Shape::of({n}), d, carrier,
                                               [&](std::int64_t first, std::int64_t count_, std::int32_t* out) {
                                                 for (std::int64_t k = 0; k < count_; ++k)
                                                   out[k] = static_cast<std::int32_t>(a + (first + k) * s);
                                               });
    return detail::fill_tensor<float>(Shape::of({n}), d, carrier, [&](std::int64_t first, std::int64_t count_, float* out) {
      for (std::int64_t k = 0; k < count_; ++k) out[k] = WeakScalar::integer(a + (first + k) * s).to_float32();
    });
  }
  const double a = start.real_value(), b = stop.real_value(), s = step.real_value();
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(s))
    throw ValueError("arange: start, stop and step must be finite");
  if (s == 0.0) throw ValueError("arange: step must not be zero");
  const double exact = std::ceil((b - a) / s);
  if (!(exact < 9.0e18)) throw ValueError("arange: more elements than a shape holds");
  const std::int64_t n = exact > 0.0 ? static_cast<std::int64_t>(exact) : 0;
  const bool bounded = n == 0 || inside_float32(a, a + static_cast<double>(n - 1) * s);
  return detail::fill_tensor<float>(Shape::of({n}), d, carrier, [&](std::int64_t first, std::int64_t count, float* out) {
    affine_floats(a, s, first, count, out, bounded);
  });
}

Tensor linspace(double start, double stop, std::int64_t num, bool endpoint, const SimpleDType& dtype,
                const CarrierChoice& carrier) {
  if (num < 0) throw ValueError("linspace: num must be >= 0, got " + std::to_string(num));
  if (&dtype != &DType::Float32())
    throw TypeError("linspace: dtype must be Float32 (the values are real; " + dtype.name() +
                    " would truncate them)");
  if (!std::isfinite(start) || !std::isfinite(stop)) throw ValueError("linspace: start and stop must be finite");
  const std::int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  return detail::fill_tensor<float>(Shape::of({num}), dtype, carrier, [&](std::int64_t first, std::int64_t count, float* out) {
    affine_floats(start, step, first, count, out, inside_float32(start, stop));
    // With the endpoint, the last element is stop itself.
    if (endpoint && num > 1 && first + count == num) out[count - 1] = detail::round_to_float32(stop);
  });
}

Tensor eye(std::int64_t n, std::optional<std::int64_t> m, std::int64_t k, const SimpleDType& dtype,
           const CarrierChoice& carrier) {
  const std::int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0)
    throw ValueError("eye: the extents must be >= 0, got (" + std::to_string(n) + ", " + std::to_string(cols) + ")");
  const Value one = one_of("eye", dtype);
  // Logical order: element (i, j) is ordinal i + n * j.
  const auto fill = [&]<class T>(T on) {
    return detail::fill_tensor<T>(Shape::of({n, cols}), dtype, carrier,
                                  [&](std::int64_t first, std::int64_t count, T* out) {
                                    for (std::int64_t o = 0; o < count; ++o) {
                                      const std::int64_t ordinal = first + o;
                                      out[o] = (ordinal / n) - (ordinal % n) == k ? on : T{};
                                    }
                                  });
  };
  if (one.kind == ElementKind::Bool) return fill(true);
  if (one.kind == ElementKind::Int32) return fill(std::int32_t{1});
  return fill(1.0f);
}

}  // namespace strideweave
