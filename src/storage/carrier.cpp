// The Carrier base: validation around the storage hooks. See carrier.h.
#include <strideweave/carrier.h>
#include <strideweave/errors.h>
#include <strideweave/layout.h>
#include <strideweave/tensor.h>

#include <fmt/format.h>

#include <new>

#include <typeindex>

#include "storage/ownership.h"
#include "core/carrier_class_internal.h"
#include "storage/provider_writes.h"
#include "storage/ranges.h"

namespace strideweave {

namespace {
const detail::CarrierClassRecord& checked_runtime_class(const CarrierClass& cls, bool dependent) {
  if (!cls.is_runtime_defined())
    throw TypeError(fmt::format("Carrier: {} is not a run-time class identity (CarrierClass.define_runtime_class "
                                "mints one); a C++ class's identity is its type's",
                                cls.name()));
  if (cls.traits().is_dependent != dependent)
    throw TypeError(fmt::format("Carrier: the run-time class {} has a {} host; construct it through {}", cls.name(),
                                dependent ? "non-dependent" : "dependent",
                                dependent ? "the Carrier constructor" : "the DependentCarrier constructor"));
  return detail::CarrierClassAccess::record(cls);
}
}  // namespace

Carrier::Carrier(const SimpleDType& dtype, bool mutable_, CarrierClass runtime_class)
    : dtype_(&dtype), intrinsic_mutable_(mutable_), runtime_class_(&checked_runtime_class(runtime_class, false)) {}

Carrier::Carrier(const SimpleDType& dtype, bool mutable_, DependentTag, CarrierClass runtime_class)
    : dtype_(&dtype),
      intrinsic_mutable_(mutable_),
      dependent_instance_(true),
      runtime_class_(&checked_runtime_class(runtime_class, true)) {}

Carrier::Carrier(const SimpleDType& dtype, bool mutable_, const std::optional<CarrierClass>& runtime_class)
    : dtype_(&dtype),
      intrinsic_mutable_(mutable_),
      runtime_class_(runtime_class ? &checked_runtime_class(*runtime_class, false) : nullptr) {}

Carrier::Carrier(const SimpleDType& dtype, bool mutable_, DependentTag,
                 const std::optional<CarrierClass>& runtime_class)
    : dtype_(&dtype),
      intrinsic_mutable_(mutable_),
      dependent_instance_(true),
      runtime_class_(runtime_class ? &checked_runtime_class(*runtime_class, true) : nullptr) {}

CarrierClass Carrier::exact_class() const {
  const std::type_info& type = typeid(*this);
  // Resolved once per type the object has had (a base constructor sees a
  // base type); later calls compare one pointer. The record is stored before
  // the type it belongs to, and for one type it is always the same record.
  if (class_type_.load(std::memory_order_acquire) == &type)
    return detail::CarrierClassAccess::from_record(*class_record_.load(std::memory_order_relaxed));
  const detail::CarrierClassRecord* resolved;
  if (runtime_class_) {
    if (runtime_class_->type_key != std::type_index(type))
      throw TypeError(fmt::format("Carrier: an instance of {} claims the run-time class {}, whose instances are {}",
                                  detail::CarrierClassAccess::of_type(type, {true, false, dependent_instance_}).name(),
                                  runtime_class_->name, runtime_class_->cpp_name));
    resolved = runtime_class_;
  } else {
    resolved = &detail::CarrierClassAccess::record(
        detail::CarrierClassAccess::of_type(type, CarrierClass::Traits{true, false, dependent_instance_}));
  }
  class_record_.store(resolved, std::memory_order_relaxed);
  class_type_.store(&type, std::memory_order_release);
  return detail::CarrierClassAccess::from_record(*resolved);
}

const SimpleDType& Carrier::check_storage_dtype(const DType& dtype, const char* class_name,
                                                bool (*supports)(const DType&) noexcept) {
  if (!dtype.is_simple() || !supports(dtype))
    throw ValueError(fmt::format("{}: dtype '{}' is not a supported storage dtype", class_name, dtype.name()));
  return static_cast<const SimpleDType&>(dtype);
}

void Carrier::require_live(const char* what) const {
  if (is_released()) throw RuntimeError(fmt::format("{}: the {} carrier has been released", what, class_name()));
}

void Carrier::require_writable(const char* what) const {
  require_live(what);
  if (!detail::Ownership::writable_here(*this))
    throw RuntimeError(fmt::format("{}: the {} carrier is not publicly mutable{}", what, class_name(),
                                   is_owned() ? " (it is owned by a composite)" : ""));
}

bool Carrier::is_owner_acting_here() const noexcept { return detail::Ownership::acting_owner_owns(*this); }

std::int64_t Carrier::size() const {
  if (is_released() && released_size_is_zero()) return 0;
  require_live("Carrier.size");
  return storage_size();
}

Value Carrier::get_value(std::int64_t index) const {
  require_live("Carrier.get_value");
  const std::int64_t n = storage_size();
  if (index < 0 || index >= n)
    throw IndexError(fmt::format("Carrier.get_value: index {} is outside [0, {}) of the {} carrier", index, n,
                                 class_name()));
  return read_slot(index);
}

void Carrier::set_value(std::int64_t index, const Value& value) {
  require_writable("Carrier.set_value");
  const std::int64_t n = storage_size();
  if (index < 0 || index >= n)
    throw IndexError(fmt::format("Carrier.set_value: index {} is outside [0, {}) of the {} carrier", index, n,
                                 class_name()));
  if (&dtype_of(value.kind) != dtype_)
    throw TypeError(fmt::format("Carrier.set_value: a {} value cannot be stored in a {} carrier of dtype {}",
                                element_kind_name(value.kind), class_name(), dtype_->name()));
  if (provider_guard_.load(std::memory_order_acquire) != 0 &&
      detail::ProviderWrites::write(*this, std::span(&index, 1), std::span(&value, 1), "Carrier.set_value"))
    return;
  write_slot(index, value);
  version_.fetch_add(1);
}

void Carrier::write_slots(std::span<const std::int64_t> indices, std::span<const Value> values) {
  require_writable("Carrier.write_slots");
  if (indices.size() != values.size())
    throw ValueError(fmt::format("Carrier.write_slots: {} indices for {} values", indices.size(), values.size()));
  const std::int64_t n = storage_size();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= n)
      throw IndexError(fmt::format("Carrier.write_slots: index {} is outside [0, {}) of the {} carrier", indices[k], n,
                                   class_name()));
    if (&dtype_of(values[k].kind) != dtype_)
      throw TypeError(fmt::format("Carrier.write_slots: a {} value cannot be stored in a {} carrier of dtype {}",
                                  element_kind_name(values[k].kind), class_name(), dtype_->name()));
  }
  if (provider_guard_.load(std::memory_order_acquire) != 0 &&
      detail::ProviderWrites::write(*this, indices, values, "Carrier.write_slots"))
    return;
  for (std::size_t k = 0; k < indices.size(); ++k) write_slot(indices[k], values[k]);
  version_.fetch_add(1);
}

void Carrier::scatter(const Tensor& to_scatter, const Tensor& scatter_onto, const Layout& mapping,
                      std::int64_t mapping_offset) {
  const char* what = "Carrier.scatter";
  if (!implements_carrier_scatter())
    throw NotImplementedError(fmt::format("{}: the {} carrier does not support carrier scatter", what, class_name()));
  require_writable(what);
  if (scatter_onto.carrier().get() != this)
    throw ValueError(fmt::format("{}: scatter_onto is backed by another carrier than this {} carrier", what,
                                 class_name()));
  if (!(mapping.shape() == to_scatter.shape()))
    throw ValueError(fmt::format("{}: the mapping's shape {} differs from the source's shape {}", what,
                                 mapping.shape().to_string(), to_scatter.shape().to_string()));
  if (mapping_offset < 0) throw ValueError(fmt::format("{}: mapping_offset must be >= 0, got {}", what, mapping_offset));
  if (&to_scatter.dtype() != dtype_)
    throw TypeError(fmt::format("{}: a {} source cannot be scattered into a {} carrier of dtype {}", what,
                                to_scatter.dtype().name(), class_name(), dtype_->name()));
  // Destinations first, then the source values: the source may alias this
  // carrier, and is read completely before anything is written.
  const std::int64_t n = mapping.size();
  const std::int64_t slots = storage_size();
  std::vector<std::int64_t> destinations(static_cast<std::size_t>(n));
  std::int64_t base = 0;
  if (__builtin_add_overflow(scatter_onto.offset(), mapping_offset, &base))
    throw IndexError(fmt::format("{}: mapping_offset {} passes the largest slot index", what, mapping_offset));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t at = 0;
    if (__builtin_add_overflow(base, mapping(i), &at) || at >= slots)
      throw IndexError(fmt::format("{}: source value {} maps to slot {} + {}, outside [0, {}) of the {} carrier", what,
                                   i, base, mapping(i), slots, class_name()));
    destinations[static_cast<std::size_t>(i)] = at;
  }
  const std::vector<Value> values = to_scatter.values();
  write_slots(destinations, values);
}

void Carrier::bump_version() {
  require_writable("Carrier.bump_version");
  if (provider_guard_.load(std::memory_order_acquire) != 0 && detail::ProviderWrites::bump(*this, "Carrier.bump_version"))
    return;
  version_.fetch_add(1);
}

void Carrier::allocate_empty_storage(std::int64_t) {
  throw NotImplementedError(fmt::format("{}: this carrier class does not allocate storage for an empty instance",
                                        class_name()));
}

void Carrier::release() {
  if (is_owned() && !detail::Ownership::acting_owner_owns(*this))
    throw RuntimeError(fmt::format("Carrier.release: the {} carrier is owned by a composite", class_name()));
  bool expected = false;
  if (!released_.compare_exchange_strong(expected, true)) return;
  try {
    release_storage();
  } catch (...) {
    released_.store(false);  // the storage was not relinquished: the carrier stays live
    throw;
  }
}

// make_like through which std::bad_alloc never escapes: a carrier whose hook
// lets it through (a third-party carrier) still reports a MemoryError.
std::shared_ptr<Carrier> Carrier::make_like_mapped(const Carrier& self, std::int64_t size, bool mutable_,
                                                   const SimpleDType& dtype, bool empty) {
  try {
    return self.make_like(size, mutable_, dtype, empty);
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("{}: cannot allocate {} {} slots", self.class_name(), size, dtype.name()));
  }
}

static const SimpleDType& resolve_like_dtype(const Carrier& self, const DType* dtype, const char* what) {
  if (!dtype) return self.dtype();
  if (!dtype->is_simple() || !self.supports_storage_dtype(*dtype))
    throw ValueError(fmt::format("{}: dtype '{}' is not a supported storage dtype of {}", what, dtype->name(),
                                 self.class_name()));
  return static_cast<const SimpleDType&>(*dtype);
}

std::shared_ptr<Carrier> Carrier::new_like(std::span<const Value> values, bool mutable_, const DType* dtype) const {
  const SimpleDType& d = resolve_like_dtype(*this, dtype, "Carrier.new_like");
  for (const Value& v : values)
    if (&dtype_of(v.kind) != &d)
      throw TypeError(fmt::format("Carrier.new_like: a {} value cannot be stored as {}", element_kind_name(v.kind),
                                  d.name()));
  // Fill through the hook (not set_value): construction is not a versioned
  // write, and an immutable result must still receive its values.
  std::shared_ptr<Carrier> out = make_like_mapped(*this, static_cast<std::int64_t>(values.size()), mutable_, d, true);
  detail::RangeAccess::write(*out, 0, values);  // one run: host memory, or the class's write_range
  return out;
}

std::shared_ptr<Carrier> Carrier::allocate_like(std::int64_t size, bool mutable_, const DType* dtype,
                                                bool empty) const {
  const SimpleDType& d = resolve_like_dtype(*this, dtype, "Carrier.allocate_like");
  if (size < 0) throw ValueError(fmt::format("Carrier.allocate_like: size must be >= 0, got {}", size));
  return make_like_mapped(*this, size, mutable_, d, empty);
}

std::shared_ptr<Operation> Carrier::_dispatch_op(std::string_view operation_name) const {
  throw NotImplementedError(
      fmt::format("{} does not dispatch operation '{}' (its dispatch hook _dispatch_op supplies no implementation)",
                  class_name(), operation_name));
}

}  // namespace strideweave
