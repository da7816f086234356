// CPU storage. See include/strideweave/carriers/cpu.h.
#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include "carriers/cpu/block_cache.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace strideweave {
namespace {

std::size_t bytes_of(const SimpleDType& d) noexcept { return d.element_kind() == ElementKind::Bool ? sizeof(bool) : 4; }

// Owned storage comes from the caching allocator (block_cache.h).
// A byte count that does not fit in 64 bits is an impossible request
// (ValueError); memory the system cannot give is a MemoryError (docs/errors.md).
void* allocate_storage(std::int64_t count, const SimpleDType& dtype, bool zero) {
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<std::int64_t>(bytes_of(dtype)), &bytes))
    throw ValueError(fmt::format("CPU: {} elements overflow the addressable size", count));
  try {
    return carriers::cpu::cache_allocate(static_cast<std::size_t>(bytes), zero);
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("CPU: cannot allocate {} {} slots ({} bytes)", count, dtype.name(), bytes));
  }
}

}  // namespace

bool CPU::supports(const DType& dtype) noexcept { return stored_element_kind(dtype).has_value(); }

CPU::CPU(Token, const SimpleDType& dtype, bool mutable_, std::int64_t size, void* data, bool owns)
    : Carrier(dtype, mutable_), size_(size), data_(data ? data : inline_), owns_(owns) {}

CPU::~CPU() {
  if (owns_) carriers::cpu::cache_release(data_, static_cast<std::size_t>(size_) * element_bytes());
}

std::size_t CPU::element_bytes() const noexcept { return bytes_of(dtype()); }

namespace {
// A fresh carrier of `size` slots of the stored dtype `d` (both already
// checked): inline storage for a few elements (the constructor points at it
// when given no buffer), else the caching allocator. `token` is CPU's
// private constructor token, passed by a member.
template <class Token>
std::shared_ptr<CPU> fresh_cpu(std::int64_t size, const SimpleDType& d, bool mutable_, bool empty,
                               std::size_t inline_bytes, Token token) {
  // Bool storage is always zeroed: a bool object must hold 0 or 1.
  const bool zero = !empty || d.element_kind() == ElementKind::Bool;
  const std::size_t bytes = static_cast<std::size_t>(size) * bytes_of(d);
  if (static_cast<std::size_t>(size) <= inline_bytes / bytes_of(d)) {
    auto out = std::make_shared<CPU>(token, d, mutable_, size, nullptr, false);
    if (zero && bytes) std::memset(out->template data<unsigned char>(), 0, bytes);
    return out;
  }
  void* p = allocate_storage(size, d, zero);
  try {
    return std::make_shared<CPU>(token, d, mutable_, size, p, true);
  } catch (...) {
    carriers::cpu::cache_release(p, bytes);
    throw;
  }
}
}  // namespace

std::shared_ptr<CPU> CPU::create(std::int64_t size, const DType& dtype, bool mutable_, bool empty) {
  const SimpleDType& d = check_storage_dtype(dtype, "CPU", &CPU::supports);
  if (size < 0) throw ValueError(fmt::format("CPU: size must be >= 0, got {}", size));
  return fresh_cpu(size, d, mutable_, empty, kInlineBytes, Token{});
}

std::shared_ptr<CPU> CPU::wrap(void* pointer, std::int64_t size, const DType& dtype, bool mutable_) {
  const SimpleDType& d = check_storage_dtype(dtype, "CPU", &CPU::supports);
  if (!pointer) throw ValueError("CPU.wrap: pointer must not be null");
  if (size < 0) throw ValueError(fmt::format("CPU.wrap: size must be >= 0, got {}", size));
  if (reinterpret_cast<std::uintptr_t>(pointer) % bytes_of(d) != 0)
    throw ValueError(fmt::format("CPU.wrap: pointer is not aligned for {}", d.name()));
  return std::make_shared<CPU>(Token{}, d, mutable_, size, pointer, false);
}

std::shared_ptr<CPU> CPU::from_values(std::span<const Value> values, const DType& dtype, bool mutable_) {
  auto out = create(static_cast<std::int64_t>(values.size()), dtype, mutable_, true);
  const SimpleDType& d = out->dtype();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (&dtype_of(values[i].kind) != &d)
      throw TypeError(
          fmt::format("CPU: a {} value cannot be stored as {}", element_kind_name(values[i].kind), d.name()));
    // Construction, not a versioned public write: fill through the hook.
    out->write_slot(static_cast<std::int64_t>(i), values[i]);
  }
  return out;
}

Value CPU::read_slot(std::int64_t i) const {
  switch (*stored_element_kind(dtype())) {
    case ElementKind::Bool: return Value::from_bool(data<bool>()[i]);
    case ElementKind::Int32: return Value::from_int32(data<std::int32_t>()[i]);
    default: return Value::from_float32(data<float>()[i]);
  }
}

void CPU::write_slot(std::int64_t i, const Value& v) {
  switch (v.kind) {
    case ElementKind::Bool: data<bool>()[i] = v.b; break;
    case ElementKind::Int32: data<std::int32_t>()[i] = v.i; break;
    default: data<float>()[i] = v.f; break;
  }
}

void CPU::release_storage() noexcept {
  if (owns_) carriers::cpu::cache_release(data_, static_cast<std::size_t>(size_) * element_bytes());
  data_ = nullptr;
  owns_ = false;
  size_ = 0;
}

// Carrier::allocate_like and new_like (this hook's only callers) have
// checked the dtype (supports_storage_dtype) and the size.
std::shared_ptr<Carrier> CPU::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype, bool empty) const {
  return fresh_cpu(size, dtype, mutable_, empty, kInlineBytes, Token{});
}

}  // namespace strideweave
