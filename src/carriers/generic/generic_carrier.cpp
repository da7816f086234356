// Generic storage. See include/strideweave/carriers/generic.h.
#include <strideweave/carriers/generic.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <cstdint>
#include <new>
#include <stdexcept>

namespace strideweave {

bool Generic::supports(const DType& dtype) noexcept { return stored_element_kind(dtype).has_value(); }

Generic::Generic(Token, const SimpleDType& dtype, bool mutable_, std::vector<Value> values)
    : Carrier(dtype, mutable_), values_(std::move(values)) {}

std::shared_ptr<Generic> Generic::create(std::span<const Value> values, const DType& dtype, bool mutable_) {
  const SimpleDType& d = check_storage_dtype(dtype, "Generic", &Generic::supports);
  for (const Value& v : values)
    if (&dtype_of(v.kind) != &d)
      throw TypeError(fmt::format("Generic: a {} value cannot be stored as {}", element_kind_name(v.kind), d.name()));
  try {
    return std::make_shared<Generic>(Token{}, d, mutable_, std::vector<Value>(values.begin(), values.end()));
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("Generic: cannot allocate {} {} slots", values.size(), d.name()));
  }
}

std::shared_ptr<Generic> Generic::zeros(std::int64_t size, const DType& dtype, bool mutable_) {
  const SimpleDType& d = check_storage_dtype(dtype, "Generic", &Generic::supports);
  if (size < 0) throw ValueError(fmt::format("Generic: size must be >= 0, got {}", size));
  // A request past the user address space of every 64-bit platform we build
  // for (2^47 bytes) can never succeed: say so before asking the allocator,
  // whose failure mode for absurd sizes differs (a sanitizer aborts instead
  // of throwing std::bad_alloc).
  constexpr std::uint64_t kAddressSpaceBytes = std::uint64_t{1} << 47;
  if (static_cast<std::uint64_t>(size) > kAddressSpaceBytes / sizeof(Value))
    throw MemoryError(fmt::format("Generic: cannot allocate {} {} slots: {} x {} bytes exceeds the 2^47-byte address space",
                                  size, d.name(), size, sizeof(Value)));
  try {
    return std::make_shared<Generic>(Token{}, d, mutable_,
                                     std::vector<Value>(static_cast<std::size_t>(size), *storage_zero(d)));
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("Generic: cannot allocate {} {} slots", size, d.name()));
  } catch (const std::length_error&) {
    throw MemoryError(fmt::format("Generic: cannot allocate {} {} slots (beyond the largest vector)", size, d.name()));
  }
}

void Generic::release_storage() noexcept {
  values_.clear();
  values_.shrink_to_fit();
}

std::shared_ptr<Carrier> Generic::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype, bool) const {
  // Generic always initialises: its reference kernels read nothing they did
  // not write, but a zeroed slot keeps the reference obvious.
  return zeros(size, dtype, mutable_);
}

}  // namespace strideweave
