// Range operations on carriers and the framework copies built on them. See
// carrier.h ("Range operations", "Range hooks") and storage/ranges.h.
#include "storage/ranges.h"

#include <strideweave/errors.h>
#include <strideweave/policy.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>

#include "storage/provider_writes.h"

namespace strideweave {

namespace detail {

std::size_t host_element_bytes(const SimpleDType& dtype) noexcept {
  return &dtype == &DType::Bool() ? sizeof(bool) : 4;
}

void host_to_values(const HostSpan& host, std::int64_t first, std::int64_t count, Value* out) noexcept {
  if (host.dtype == &DType::Float32()) {
    const float* p = static_cast<const float*>(host.data) + first;
    for (std::int64_t k = 0; k < count; ++k) out[k] = Value::from_float32(p[k]);
  } else if (host.dtype == &DType::Int32()) {
    const std::int32_t* p = static_cast<const std::int32_t*>(host.data) + first;
    for (std::int64_t k = 0; k < count; ++k) out[k] = Value::from_int32(p[k]);
  } else {
    const bool* p = static_cast<const bool*>(host.data) + first;
    for (std::int64_t k = 0; k < count; ++k) out[k] = Value::from_bool(p[k]);
  }
}

void values_to_host(const HostSpan& host, std::int64_t first, std::span<const Value> values) noexcept {
  const auto n = static_cast<std::int64_t>(values.size());
  if (host.dtype == &DType::Float32()) {
    float* p = static_cast<float*>(host.data) + first;
    for (std::int64_t k = 0; k < n; ++k) p[k] = values[static_cast<std::size_t>(k)].f;
  } else if (host.dtype == &DType::Int32()) {
    std::int32_t* p = static_cast<std::int32_t*>(host.data) + first;
    for (std::int64_t k = 0; k < n; ++k) p[k] = values[static_cast<std::size_t>(k)].i;
  } else {
    bool* p = static_cast<bool*>(host.data) + first;
    for (std::int64_t k = 0; k < n; ++k) p[k] = values[static_cast<std::size_t>(k)].b;
  }
}

void RangeAccess::read(const Carrier& carrier, std::int64_t first, std::int64_t count, Value* out) {
  if (count <= 0) return;
  if (const HostSpan h = host(carrier)) return host_to_values(h, first, count, out);
  carrier.read_range(first, count, out);
}

void RangeAccess::write(Carrier& carrier, std::int64_t first, std::span<const Value> values) {
  if (values.empty()) return;
  if (const HostSpan h = host(carrier)) return values_to_host(h, first, values);
  carrier.write_range(first, values);
}

void normalize_hook_bytes(const SimpleDType& dtype, std::byte* bytes, std::int64_t count) noexcept {
  if (&dtype != &DType::Bool()) return;
  for (std::int64_t k = 0; k < count; ++k) bytes[k] = bytes[k] != std::byte{0} ? std::byte{1} : std::byte{0};
}

void RangeAccess::read_bytes(const Carrier& carrier, std::int64_t first, std::int64_t count, std::byte* out,
                             const char* what) {
  if (count <= 0) return;
  const SimpleDType& dtype = carrier.dtype();
  const std::size_t element = host_element_bytes(dtype);
  if (const HostSpan h = host(carrier)) {
    std::memcpy(out, static_cast<const std::byte*>(h.data) + static_cast<std::size_t>(first) * element,
                static_cast<std::size_t>(count) * element);
    return;
  }
  if (carrier.read_range_bytes(first, count, out)) {
    normalize_hook_bytes(dtype, out, count);
    return;
  }
  std::vector<Value> values(static_cast<std::size_t>(count));
  carrier.read_range(first, count, values.data());
  for (std::size_t k = 0; k < values.size(); ++k)
    if (&dtype_of(values[k].kind) != &dtype)
      throw TypeError(fmt::format("{}: the {} carrier's read_range gave a {} value for slot {} of dtype {}", what,
                                  carrier.class_name(), element_kind_name(values[k].kind),
                                  first + static_cast<std::int64_t>(k), dtype.name()));
  values_to_host(HostSpan{out, &dtype, count}, 0, values);
}

namespace {

// Host representation -> Values (the element kind is the dtype's).
std::vector<Value> bytes_to_values(const SimpleDType& dtype, std::int64_t count, const std::byte* data) {
  std::vector<Value> values(static_cast<std::size_t>(count));
  host_to_values(HostSpan{const_cast<std::byte*>(data), &dtype, count}, 0, count, values.data());
  return values;
}

// A failure-atomic, un-versioned run write: a hook write that fails part way
// is undone from the before-image taken first (best effort: a failing
// restore cannot replace the original error).
void write_run_atomic(Carrier& carrier, std::int64_t first, std::span<const Value> values) {
  if (values.empty()) return;
  if (const HostSpan h = RangeAccess::host(carrier)) return values_to_host(h, first, values);
  std::vector<Value> before(values.size());
  RangeAccess::read(carrier, first, static_cast<std::int64_t>(values.size()), before.data());
  try {
    RangeAccess::write(carrier, first, values);
  } catch (...) {
    try {
      RangeAccess::write(carrier, first, before);
    } catch (...) {
    }
    throw;
  }
}

// The bytes form of write_run_atomic: RangeAccess::write_bytes, undone from
// a before-image in bytes when it fails part way (host memory cannot fail).
void write_bytes_atomic(Carrier& carrier, std::int64_t first, std::int64_t count, const std::byte* data,
                        const char* what) {
  if (count <= 0) return;
  if (RangeAccess::host(carrier)) return RangeAccess::write_bytes(carrier, first, count, data);
  std::vector<std::byte> before(static_cast<std::size_t>(count) * host_element_bytes(carrier.dtype()));
  RangeAccess::read_bytes(carrier, first, count, before.data(), what);
  try {
    RangeAccess::write_bytes(carrier, first, count, data);
  } catch (...) {
    try {
      RangeAccess::write_bytes(carrier, first, count, before.data());
    } catch (...) {
    }
    throw;
  }
}

// The indices of a run (the guarded path goes through write_slots).
std::vector<std::int64_t> run_indices(std::int64_t first, std::size_t count) {
  std::vector<std::int64_t> indices(count);
  for (std::size_t k = 0; k < count; ++k) indices[k] = first + static_cast<std::int64_t>(k);
  return indices;
}

}  // namespace

void RangeAccess::write_bytes(Carrier& carrier, std::int64_t first, std::int64_t count, const std::byte* data) {
  if (count <= 0) return;
  const SimpleDType& dtype = carrier.dtype();
  if (const HostSpan h = host(carrier)) {
    const std::size_t element = host_element_bytes(dtype);
    std::memcpy(static_cast<std::byte*>(h.data) + static_cast<std::size_t>(first) * element, data,
                static_cast<std::size_t>(count) * element);
    return;
  }
  if (write_bytes_hook(carrier, first, count, data)) return;
  write(carrier, first, bytes_to_values(dtype, count, data));
}

std::vector<Value> logical_values(const Tensor& tensor) {
  const Carrier& carrier = *tensor.carrier();
  carrier.require_live("Tensor.values");
  std::vector<Value> out(static_cast<std::size_t>(tensor.size()));
  const std::int64_t base = tensor.offset();
  for_each_run(tensor.layout(), [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
    RangeAccess::read(carrier, base + index, length, out.data() + ordinal);
  });
  return out;
}

Tensor compact_copy(const Tensor& tensor, const Shape& shape) {
  const Carrier& source = *tensor.carrier();
  source.require_live("copy");
  std::shared_ptr<Carrier> fresh = source.allocate_like(tensor.size(), true, nullptr, true);
  const HostSpan from = RangeAccess::host(source), to = RangeAccess::host(*fresh);
  if (from && to && from.dtype == to.dtype) {
    const std::size_t bytes = host_element_bytes(*from.dtype);
    const auto* src = static_cast<const std::byte*>(from.data);
    auto* dst = static_cast<std::byte*>(to.data);
    const std::int64_t base = tensor.offset();
    for_each_run(tensor.layout(), [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      std::memcpy(dst + static_cast<std::size_t>(ordinal) * bytes, src + static_cast<std::size_t>(base + index) * bytes,
                  static_cast<std::size_t>(length) * bytes);
    });
  } else {
    const std::vector<Value> values = logical_values(tensor);
    RangeAccess::write(*fresh, 0, values);  // construction: a fresh carrier, no version
  }
  return Tensor(std::move(fresh), 0, Layout::compact(shape));
}

namespace {

[[noreturn]] void accumulation_overflow(std::string_view operation, std::int64_t element) {
  throw OverflowError(fmt::format("{}: accumulating into the Int32 output: element {} (in logical order) would be "
                                  "outside [{}, {}]",
                                  operation, element, INT32_MIN_VALUE, INT32_MAX_VALUE));
}

// values[k] = old[k] + values[k] in the output arithmetic; Int32 checked
// first for every element (nothing is changed when one overflows).
void accumulate_values(std::span<const Value> old, std::span<Value> values, std::string_view operation) {
  if (values.empty()) return;
  if (values[0].kind == ElementKind::Int32) {
    for (std::size_t k = 0; k < values.size(); ++k) {
      const std::int64_t r = static_cast<std::int64_t>(old[k].i) + values[k].i;
      if (r < INT32_MIN_VALUE || r > INT32_MAX_VALUE) accumulation_overflow(operation, static_cast<std::int64_t>(k));
    }
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = Value::from_int32(old[k].i + values[k].i);
    return;
  }
  // binary32 add with the library's NaN rule (docs/numerics.md): a NaN old
  // element is kept, quieted (the first NaN operand), whatever operand order
  // the compiler gives the add instruction. CPU's native accumulation
  // (simd.cpp AddOp) gives the same bits.
  for (std::size_t k = 0; k < values.size(); ++k) {
    const float a = old[k].f;
    values[k] = Value::from_float32(a != a ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) | 0x00400000u)
                                           : a + values[k].f);
  }
}

}  // namespace

void publish_result(const Tensor& fresh, const Tensor& target, const Layout& aligned, bool accumulate,
                    std::string_view operation) {
  Carrier& out = *target.carrier();
  const std::string what(operation);
  out.require_writable(what.c_str());
  const std::int64_t base = target.offset();
  std::vector<Value> values = logical_values(fresh);
  if (accumulate) {
    std::vector<Value> old(values.size());
    for_each_run(aligned, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      RangeAccess::read(out, base + index, length, old.data() + ordinal);
    });
    accumulate_values(old, values, operation);
  }
  if (RangeAccess::guarded(out)) {
    // A guarded carrier (a provider's operand): write_slots honours the guard.
    std::vector<std::int64_t> indices(values.size());
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(values.size()); ++k)
      indices[static_cast<std::size_t>(k)] = base + aligned(k);
    out.write_slots(indices, values);
    return;
  }
  if (!RangeAccess::host(out)) {
    // Hook writes may fail part way: the runs written so far are restored
    // from their before-image, newest first.
    std::vector<std::pair<std::int64_t, std::vector<Value>>> written;
    try {
      for_each_run(aligned, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
        std::vector<Value> before(static_cast<std::size_t>(length));
        RangeAccess::read(out, base + index, length, before.data());
        written.emplace_back(base + index, std::move(before));
        RangeAccess::write(out, base + index,
                           std::span<const Value>(values).subspan(static_cast<std::size_t>(ordinal),
                                                                  static_cast<std::size_t>(length)));
      });
    } catch (...) {
      for (auto it = written.rbegin(); it != written.rend(); ++it) {
        try {
          RangeAccess::write(out, it->first, it->second);
        } catch (...) {
        }
      }
      throw;
    }
  } else {
    for_each_run(aligned, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      RangeAccess::write(out, base + index,
                         std::span<const Value>(values).subspan(static_cast<std::size_t>(ordinal),
                                                                static_cast<std::size_t>(length)));
    });
  }
  RangeAccess::step_version(out);
}

}  // namespace detail

// ---- Carrier: the range hooks' defaults and the public range operations

void Carrier::read_range(std::int64_t first, std::int64_t count, Value* out) const {
  for (std::int64_t k = 0; k < count; ++k) out[k] = read_slot(first + k);
}

void Carrier::write_range(std::int64_t first, std::span<const Value> values) {
  for (std::size_t k = 0; k < values.size(); ++k) write_slot(first + static_cast<std::int64_t>(k), values[k]);
}

namespace {

void check_run(const Carrier& carrier, std::int64_t first, std::int64_t count, std::int64_t size, const char* what) {
  if (count < 0) throw ValueError(fmt::format("{}: count must be >= 0, got {}", what, count));
  if (first < 0 || first > size || count > size - first)
    throw IndexError(fmt::format("{}: the run [{}, {} + {}) is outside [0, {}) of the {} carrier", what, first, first,
                                 count, size, carrier.class_name()));
}

}  // namespace

std::vector<Value> Carrier::read_values(std::int64_t first, std::int64_t count) const {
  constexpr const char* what = "Carrier.read_values";
  require_live(what);
  check_run(*this, first, count, storage_size(), what);
  std::vector<Value> out(static_cast<std::size_t>(count));
  detail::RangeAccess::read(*this, first, count, out.data());
  for (std::size_t k = 0; k < out.size(); ++k)
    if (&dtype_of(out[k].kind) != dtype_)
      throw TypeError(fmt::format("{}: the {} carrier's read_range gave a {} value for slot {} of dtype {}", what,
                                  class_name(), element_kind_name(out[k].kind), first + static_cast<std::int64_t>(k),
                                  dtype_->name()));
  return out;
}

void Carrier::write_values(std::int64_t first, std::span<const Value> values) {
  constexpr const char* what = "Carrier.write_values";
  require_writable(what);
  const auto count = static_cast<std::int64_t>(values.size());
  check_run(*this, first, count, storage_size(), what);
  for (const Value& v : values)
    if (&dtype_of(v.kind) != dtype_)
      throw TypeError(fmt::format("{}: a {} value cannot be stored in a {} carrier of dtype {}", what,
                                  element_kind_name(v.kind), class_name(), dtype_->name()));
  if (provider_guard_.load(std::memory_order_acquire) != 0) {
    const std::vector<std::int64_t> indices = detail::run_indices(first, values.size());
    if (detail::ProviderWrites::write(*this, indices, values, what)) return;
  }
  detail::write_run_atomic(*this, first, values);
  version_.fetch_add(1);
}

void Carrier::copy_range(const Carrier& source, std::int64_t source_first, std::int64_t first, std::int64_t count) {
  constexpr const char* what = "Carrier.copy_range";
  require_writable(what);
  source.require_live(what);
  if (count < 0) throw ValueError(fmt::format("{}: count must be >= 0, got {}", what, count));
  check_run(source, source_first, count, source.storage_size(), what);
  check_run(*this, first, count, storage_size(), what);
  if (&source.dtype() != dtype_)
    throw TypeError(fmt::format("{}: a {} source of dtype {} cannot be copied into a {} carrier of dtype {}", what,
                                source.class_name(), source.dtype().name(), class_name(), dtype_->name()));
  const HostSpan from = detail::RangeAccess::host(source), to = detail::RangeAccess::host(*this);
  if (from && to && provider_guard_.load(std::memory_order_acquire) == 0) {
    const std::size_t bytes = detail::host_element_bytes(*dtype_);
    std::memmove(static_cast<std::byte*>(to.data) + static_cast<std::size_t>(first) * bytes,
                 static_cast<const std::byte*>(from.data) + static_cast<std::size_t>(source_first) * bytes,
                 static_cast<std::size_t>(count) * bytes);
    version_.fetch_add(1);
    return;
  }
  if (provider_guard_.load(std::memory_order_acquire) == 0 && (from || to) && count > 0) {
    // One side is host memory: the run travels as bytes, so a class with
    // byte hooks (a file tier) never builds a Value per element. Into host
    // memory the bytes are read into a staging buffer first: a read failing
    // part way must leave the destination as it was.
    const std::size_t bytes = detail::host_element_bytes(*dtype_) * static_cast<std::size_t>(count);
    if (to) {
      const std::unique_ptr<std::byte[]> staging(new std::byte[bytes]);
      detail::RangeAccess::read_bytes(source, source_first, count, staging.get(), what);
      std::memcpy(static_cast<std::byte*>(to.data) + static_cast<std::size_t>(first) * detail::host_element_bytes(*dtype_),
                  staging.get(), bytes);
    } else {
      detail::write_bytes_atomic(*this, first, count,
                                 static_cast<const std::byte*>(from.data) +
                                     static_cast<std::size_t>(source_first) * detail::host_element_bytes(*dtype_),
                                 what);
    }
    version_.fetch_add(1);
    return;
  }
  std::vector<Value> values(static_cast<std::size_t>(count));
  detail::RangeAccess::read(source, source_first, count, values.data());
  for (std::size_t k = 0; k < values.size(); ++k)
    if (&dtype_of(values[k].kind) != dtype_)
      throw TypeError(fmt::format("{}: the {} source's read_range gave a {} value for slot {} of dtype {}", what,
                                  source.class_name(), element_kind_name(values[k].kind),
                                  source_first + static_cast<std::int64_t>(k), dtype_->name()));
  if (provider_guard_.load(std::memory_order_acquire) != 0) {
    const std::vector<std::int64_t> indices = detail::run_indices(first, values.size());
    if (detail::ProviderWrites::write(*this, indices, values, what)) return;
  }
  detail::write_run_atomic(*this, first, values);
  version_.fetch_add(1);
}

}  // namespace strideweave

namespace strideweave {

// ---- Carrier: bytes

std::size_t Carrier::element_bytes() const noexcept { return detail::host_element_bytes(*dtype_); }

namespace {

std::int64_t byte_run_count(const Carrier& carrier, std::size_t bytes, const char* what) {
  const std::size_t element = carrier.element_bytes();
  if (bytes % element != 0)
    throw ValueError(fmt::format("{}: {} bytes is not a whole number of {}-byte {} elements", what, bytes, element,
                                 carrier.dtype().name()));
  return static_cast<std::int64_t>(bytes / element);
}

}  // namespace

void Carrier::read_bytes(std::int64_t first, std::span<std::byte> out) const {
  constexpr const char* what = "Carrier.read_bytes";
  require_live(what);
  const std::int64_t count = byte_run_count(*this, out.size(), what);
  check_run(*this, first, count, storage_size(), what);
  detail::RangeAccess::read_bytes(*this, first, count, out.data(), what);
}

void Carrier::write_bytes(std::int64_t first, std::span<const std::byte> data) {
  constexpr const char* what = "Carrier.write_bytes";
  require_writable(what);
  const std::int64_t count = byte_run_count(*this, data.size(), what);
  check_run(*this, first, count, storage_size(), what);
  if (dtype_ == &DType::Bool())
    for (std::size_t k = 0; k < data.size(); ++k)
      if (data[k] != std::byte{0} && data[k] != std::byte{1})
        throw ValueError(fmt::format("{}: byte {} is {}, not a Bool (0 or 1)", what, k,
                                     std::to_integer<int>(data[k])));
  if (provider_guard_.load(std::memory_order_acquire) != 0) {
    const std::vector<Value> values = detail::bytes_to_values(*dtype_, count, data.data());
    const std::vector<std::int64_t> indices = detail::run_indices(first, values.size());
    if (detail::ProviderWrites::write(*this, indices, values, what)) return;
    detail::write_run_atomic(*this, first, values);
  } else {
    detail::write_bytes_atomic(*this, first, count, data.data(), what);
  }
  version_.fetch_add(1);
}

}  // namespace strideweave
