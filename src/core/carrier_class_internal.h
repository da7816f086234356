// Internal: the record behind a CarrierClass identity, and the access the
// storage layer and the central carrier list need. See
// <strideweave/carrier_class.h>.
#pragma once

#include <strideweave/carrier_class.h>

#include <string>
#include <typeindex>
#include <typeinfo>

namespace strideweave::detail {

// One per identity, never freed (identities outlive every static).
struct CarrierClassRecord {
  const std::type_info* type;  // the C++ type instances have (the host type of a run-time class)
  std::type_index type_key;    // the same type, comparable across shared objects
  CarrierClass::Traits traits;
  bool runtime;
  std::string cpp_name;
  // The public name. Written only by name_shipped_class during the library
  // bootstrap, which every reader runs first (CarrierClass::name()).
  std::string name;
};

struct CarrierClassAccess {
  static const CarrierClassRecord& record(const CarrierClass& c) noexcept { return *c.record_; }
  static CarrierClass from_record(const CarrierClassRecord& r) noexcept { return CarrierClass(&r); }
  static CarrierClass of_type(const std::type_info& type, CarrierClass::Traits traits) {
    return CarrierClass::of_type(type, traits);
  }
  // Gives a shipped class its public name. Only the central carrier list
  // calls it, from inside the bootstrap (RuntimeError elsewhere, or for a
  // run-time class, or for a second name).
  static void name_shipped_class(const CarrierClass& c, std::string name);
};

}  // namespace strideweave::detail
