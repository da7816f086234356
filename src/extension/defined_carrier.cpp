// Definition-backed carrier instances: construction through the framework's
// key and storage forwarded to the class's StorageProvider (carrier-extension
// R3, R6.2, R7.3). See <strideweave/extension.h>.
#include <fmt/format.h>

#include "capability/registry.h"
#include "core/bootstrap.h"
#include "extension/registry.h"
#include "storage/ranges.h"

namespace strideweave::extension {

Construction Construction::begin(CarrierClass cls, std::int64_t slots, const DType& dtype, bool mutable_,
                                 detail::LikeMaker maker, std::optional<CarrierClass> runtime_class) {
  // The shipped definition-backed classes (TiledEvictable) are registered by
  // the library bootstrap: it must have run before the first lookup.
  ::strideweave::detail::ensure_bootstrapped();
  const CarrierClass named = runtime_class ? *runtime_class : cls;
  const detail::ClassDefinition* record = detail::find_definition_fast(named);
  if (!record)
    throw TypeError(fmt::format("{}: the class has no carrier definition (register_carrier_definition first; a "
                                "subclass of a definition-backed class inherits none)",
                                named.name()));
  if (slots < 0) throw ValueError(fmt::format("{}: slots must be >= 0, got {}", named.name(), slots));
  // A storage dtype is simple and has an element representation (Float32,
  // Int32, Bool): a registered encoding without one (int8, e4m3) could be
  // neither read nor written.
  if (!dtype.is_simple() || !storage_zero(dtype))
    throw ValueError(fmt::format("{}: dtype '{}' is not a storage dtype", named.name(), dtype.name()));
  // R7.2: the first instance observes the class and seals its kernel set.
  if (!record->dependent) (void)detail::sealed_kernels(*record);
  Construction key;
  key.definition_ = record;
  key.slots_ = slots;
  key.dtype_ = &static_cast<const SimpleDType&>(dtype);
  key.mutable_ = mutable_;
  key.maker_ = maker;
  key.runtime_class_ = runtime_class;
  return key;
}

namespace detail {

const StorageProvider& ProvidedStorage::provider() const noexcept { return definition->definition->storage(); }

void ProvidedStorage::require_established(const char* what) const {
  if (!established.load(std::memory_order_acquire))
    throw RuntimeError(fmt::format("{}: the {} instance was not established (construct it with extension::create)",
                                   what, definition->cls.name()));
}

bool ProvidedStorage::supports(const Carrier& self, const DType& dtype) const noexcept {
  try {
    return provider().supports_dtype()(self, dtype);
  } catch (...) {
    return false;  // the query is noexcept (carrier.h); a throwing provider supports nothing
  }
}

Value ProvidedStorage::read(const Carrier& self, std::int64_t index) const {
  require_established("StorageProvider.read");
  Value v = provider().read()(self, index);
  if (&dtype_of(v.kind) != &self.dtype())
    throw TypeError(fmt::format("{}: StorageProvider.read returned a {} value for a {} carrier (slot {})",
                                definition->cls.name(), element_kind_name(v.kind), self.dtype().name(), index));
  return v;
}

void ProvidedStorage::write(Carrier& self, std::int64_t index, const Value& value) const {
  require_established("StorageProvider.write");
  provider().write()(self, index, value);
}

void ProvidedStorage::read_range(const Carrier& self, std::int64_t first, std::int64_t count, Value* out) const {
  require_established("StorageProvider.read_range");
  const StorageProvider& p = provider();
  if (!p.read_range()) {
    if (p.read_bytes()) {  // the byte callback, converted here: one call per run
      const SimpleDType& dtype = self.dtype();
      std::vector<std::byte> bytes(static_cast<std::size_t>(count) * strideweave::detail::host_element_bytes(dtype));
      p.read_bytes()(self, first, count, bytes.data());
      strideweave::detail::normalize_hook_bytes(dtype, bytes.data(), count);
      strideweave::detail::host_to_values(HostSpan{bytes.data(), &dtype, count}, 0, count, out);
      return;
    }
    for (std::int64_t k = 0; k < count; ++k) out[k] = read(self, first + k);
    return;
  }
  p.read_range()(self, first, std::span<Value>(out, static_cast<std::size_t>(count)));
  for (std::int64_t k = 0; k < count; ++k)
    if (&dtype_of(out[k].kind) != &self.dtype())
      throw TypeError(fmt::format("{}: StorageProvider.read_range gave a {} value for a {} carrier (slot {})",
                                  definition->cls.name(), element_kind_name(out[k].kind), self.dtype().name(),
                                  first + k));
}

void ProvidedStorage::write_range(Carrier& self, std::int64_t first, std::span<const Value> values) const {
  require_established("StorageProvider.write_range");
  const StorageProvider& p = provider();
  if (!p.write_range()) {
    if (p.write_bytes()) {  // the byte callback, converted here: one call per run
      const SimpleDType& dtype = self.dtype();
      const auto count = static_cast<std::int64_t>(values.size());
      std::vector<std::byte> bytes(values.size() * strideweave::detail::host_element_bytes(dtype));
      strideweave::detail::values_to_host(HostSpan{bytes.data(), &dtype, count}, 0, values);
      p.write_bytes()(self, first, count, bytes.data());
      return;
    }
    for (std::size_t k = 0; k < values.size(); ++k) write(self, first + static_cast<std::int64_t>(k), values[k]);
    return;
  }
  p.write_range()(self, first, values);
}

bool ProvidedStorage::read_bytes(const Carrier& self, std::int64_t first, std::int64_t count, std::byte* out) const {
  const StorageProvider& p = provider();
  if (!p.read_bytes()) return false;
  require_established("StorageProvider.read_bytes");
  p.read_bytes()(self, first, count, out);
  return true;
}

bool ProvidedStorage::write_bytes(Carrier& self, std::int64_t first, std::int64_t count, const std::byte* data) const {
  const StorageProvider& p = provider();
  if (!p.write_bytes()) return false;
  require_established("StorageProvider.write_bytes");
  p.write_bytes()(self, first, count, data);
  return true;
}

HostSpan ProvidedStorage::host(const Carrier& self) const noexcept {
  const StorageProvider& p = provider();
  if (!p.host_data() || !established.load(std::memory_order_acquire)) return {};
  try {
    return HostSpan{p.host_data()(self), &self.dtype(), slots};
  } catch (...) {
    return {};  // the query is noexcept: a throwing host_data offers no host memory
  }
}

void ProvidedStorage::release(Carrier& self) const {
  if (!established.load(std::memory_order_acquire)) return;  // nothing was allocated
  provider().release()(self);
}

std::shared_ptr<Carrier> ProvidedStorage::make_like(const Carrier& self, std::int64_t size, bool mutable_,
                                                    const SimpleDType& dtype) const {
  if (!maker)
    throw NotImplementedError(fmt::format("{}: new_like/allocate_like need a constructor taking the Construction key "
                                          "alone (or the key and a prototype)",
                                          self.class_name()));
  return maker(self, size, mutable_, dtype);
}

void ProvidedStorage::establish(Carrier& self, const SimpleDType& dtype) {
  if (established.load())
    throw RuntimeError(fmt::format("{}: the instance is already established", definition->cls.name()));
  if (!(self.exact_class() == definition->cls))
    throw TypeError(fmt::format("{}: the instance is a {}, not the class whose definition it was built with",
                                definition->cls.name(), self.class_name()));
  const StorageProvider& p = provider();
  // R3.2: supports_dtype sees the instance (whose configuration is complete)
  // before any allocation; False rejects construction.
  if (!p.supports_dtype()(self, dtype))
    throw TypeError(fmt::format("{}: dtype {} is not a supported storage dtype of the class (supports_dtype)",
                                definition->cls.name(), dtype.name()));
  p.allocate()(self, slots);
  // Cleanup after a failed establishment never replaces the original error.
  const auto release_quietly = [&] {
    try {
      p.release()(self);
    } catch (...) {
    }
  };
  std::int64_t physical = 0;
  try {
    physical = p.physical_size()(self);
  } catch (...) {
    release_quietly();
    throw;
  }
  if (physical != slots) {
    release_quietly();
    if (physical < 0)
      throw ValueError(fmt::format("{}: physical_size returned {} (a slot count is non-negative)",
                                   definition->cls.name(), physical));
    throw ValueError(fmt::format("{}: allocate established {} slots, not the {} requested (physical_size)",
                                 definition->cls.name(), physical, slots));
  }
  established.store(true, std::memory_order_release);
}

}  // namespace detail

DefinedCarrier::DefinedCarrier(Construction key) : Carrier(key.dtype(), key.is_mutable(), key.runtime_class()) {
  storage_.definition = key.definition_;
  storage_.slots = key.slots_;
  storage_.maker = key.maker_;
}

DefinedDependentCarrier::DefinedDependentCarrier(Construction key)
    : DependentCarrier(key.dtype(), key.is_mutable(), key.runtime_class()) {
  storage_.definition = key.definition_;
  storage_.slots = key.slots_;
  storage_.maker = key.maker_;
}

std::shared_ptr<Carrier> DefinedCarrier::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                                   bool /*empty: the provider's allocate decides*/) const {
  return storage_.make_like(*this, size, mutable_, dtype);
}

std::shared_ptr<Carrier> DefinedDependentCarrier::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                                            bool /*empty*/) const {
  return storage_.make_like(*this, size, mutable_, dtype);
}

// R6.2: the constructed instance's complete executable set, from its
// definition's CompositeProvider (DependentCarrier::finalize validates,
// sorts and freezes it).
std::vector<OperationCapability> DefinedDependentCarrier::_generate_operation_capabilities() const {
  return storage_.definition->definition->composite()->capabilities()(*this);
}

void establish(DefinedCarrier& instance) { instance.storage_.establish(instance, instance.dtype()); }

void establish(DefinedDependentCarrier& instance) {
  instance.storage_.establish(instance, instance.dtype());
  try {
    instance.finalize_operation_capabilities();  // R7.3: before the instance is exposed
  } catch (...) {
    instance.storage_.established.store(false);
    try {
      instance.storage_.definition->definition->storage().release()(instance);
    } catch (...) {  // the finalisation error is the one to report
    }
    throw;
  }
}

}  // namespace strideweave::extension
