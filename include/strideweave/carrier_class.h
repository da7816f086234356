// strideweave/carrier_class.h — the identity of one exact carrier class
// (core-concepts.md 1.8, backend-capabilities.md "Independent capabilities
// belong to one exact class", cpp-mapping.md "Values and identities").
//
// Every registry (capabilities, kernels, carrier definitions, movement
// routes) is keyed by a CarrierClass and never walks base classes. An
// identity can be obtained in exactly three ways, so none can be forged:
//   - from a C++ type: carrier_class<T>() (<strideweave/carrier.h>), for any
//     T, so that registries can reject a type that is not a carrier;
//   - from an instance: carrier.exact_class(), its most-derived type;
//   - from the run-time class registry: CarrierClass::define_runtime_class,
//     which mints a NEW identity for a class that exists only at run time
//     (a Python subclass of Carrier), whose instances are all of one C++
//     host type. A minted identity never equals any other identity.
// There is no public constructor; the traits are computed from the type, never
// supplied by a caller.
//
// Names: every class has ONE public name, used by every message that names
// it, class-level and instance-level alike: a shipped class's registered name
// ("Generic", "CPU"), a run-time class's defined name, otherwise the
// demangled C++ name of the type ("acme::Accelerator").
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <typeinfo>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class Carrier;
class CarrierClass;
namespace detail {
struct CarrierClassRecord;
struct CarrierClassAccess;
}  // namespace detail

template <class T>
CarrierClass carrier_class();

class CarrierClass {
 public:
  struct Traits {
    bool derives_carrier = false;  // the type is Carrier or derives from it
    bool is_root = false;          // the type is Carrier itself
    bool is_dependent = false;     // the type is DependentCarrier or derives from it
    // The type's instances forward their storage to a StorageProvider
    // (extension::DefinedCarrier / DefinedDependentCarrier): the only
    // classes that can hold a CarrierDefinition (carrier-extension R2.3).
    bool storage_provider = false;
  };

  // The class's one public name (see above).
  const std::string& name() const;
  // The demangled name of the C++ type the class's instances are (for a
  // run-time class: its host type).
  const std::string& cpp_name() const noexcept;
  const Traits& traits() const noexcept;
  // True for an identity minted by define_runtime_class.
  bool is_runtime_defined() const noexcept;

  // Mints a new identity for a carrier class defined at run time. `name` is
  // its public name (non-empty: ValueError); `host` is the C++ class every
  // instance of it is (a concrete Carrier subclass obtained from
  // carrier_class<Host>(): TypeError for a non-carrier, the Carrier root or
  // another run-time class). Instances bind to the identity through the
  // protected run-time constructors of Carrier and DependentCarrier; an
  // instance whose most-derived type is not `host` is refused (TypeError).
  // Thread-safe; identities live for the whole process.
  static CarrierClass define_runtime_class(std::string name, CarrierClass host);

  friend bool operator==(const CarrierClass& a, const CarrierClass& b) noexcept { return a.record_ == b.record_; }
  std::size_t hash() const noexcept { return std::hash<const void*>{}(record_); }

 private:
  explicit CarrierClass(const detail::CarrierClassRecord* record) noexcept : record_(record) {}
  // The interned identity of a C++ type (one per type for the process).
  static CarrierClass of_type(const std::type_info& type, Traits traits);

  const detail::CarrierClassRecord* record_;

  template <class T>
  friend CarrierClass carrier_class();
  friend class Carrier;
  friend struct detail::CarrierClassAccess;
};

}  // namespace strideweave

template <>
struct std::hash<strideweave::CarrierClass> {
  std::size_t operator()(const strideweave::CarrierClass& c) const noexcept { return c.hash(); }
};

STRIDEWEAVE_PUBLIC_END
