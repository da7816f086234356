// Carrier class identities: one interned record per C++ type, plus the
// records minted for run-time classes. See <strideweave/carrier_class.h>.
#include <strideweave/carrier_class.h>
#include <strideweave/errors.h>

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/bootstrap.h"
#include "core/carrier_class_internal.h"

namespace strideweave {
namespace {

std::string demangle(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  return out;
}

// Records are never freed: identities are compared by address for the life
// of the process, and registries keyed by them outlive every static.
struct Interned {
  std::mutex mutex;
  std::unordered_map<std::type_index, std::unique_ptr<detail::CarrierClassRecord>> by_type;
  std::vector<std::unique_ptr<detail::CarrierClassRecord>> runtime;
};

Interned& interned() {
  static Interned* table = new Interned();
  return *table;
}

}  // namespace

CarrierClass CarrierClass::of_type(const std::type_info& type, Traits traits) {
  // Every fresh instance resolves its type once (Carrier::exact_class): the
  // last type a thread interned is answered again without the lock. Records
  // are never freed, so the pointer stays valid.
  thread_local const std::type_info* last_type = nullptr;
  thread_local const detail::CarrierClassRecord* last_record = nullptr;
  if (last_type == &type) return CarrierClass(last_record);
  Interned& t = interned();
  std::lock_guard lock(t.mutex);
  auto it = t.by_type.find(std::type_index(type));
  if (it == t.by_type.end()) {
    std::string cpp = demangle(type);
    auto record = std::make_unique<detail::CarrierClassRecord>(
        detail::CarrierClassRecord{&type, std::type_index(type), traits, false, cpp, cpp});
    it = t.by_type.emplace(std::type_index(type), std::move(record)).first;
  }
  last_type = &type;
  last_record = it->second.get();
  return CarrierClass(it->second.get());
}

CarrierClass CarrierClass::define_runtime_class(std::string name, CarrierClass host) {
  const char* what = "CarrierClass.define_runtime_class";
  if (name.empty()) throw ValueError(fmt::format("{}: the class name is empty", what));
  const Traits& h = host.traits();
  if (host.is_runtime_defined())
    throw TypeError(fmt::format("{}: the host {} is itself a run-time class; name the C++ class its instances are",
                                what, host.name()));
  if (!h.derives_carrier) throw TypeError(fmt::format("{}: the host {} is not a Carrier class", what, host.name()));
  if (h.is_root) throw TypeError(fmt::format("{}: the host cannot be the Carrier root", what));
  Interned& t = interned();
  std::lock_guard lock(t.mutex);
  const detail::CarrierClassRecord& hr = *host.record_;
  t.runtime.push_back(std::make_unique<detail::CarrierClassRecord>(
      detail::CarrierClassRecord{hr.type, hr.type_key, hr.traits, true, hr.cpp_name, std::move(name)}));
  return CarrierClass(t.runtime.back().get());
}

const std::string& CarrierClass::name() const {
  // Shipped classes receive their public names in the bootstrap: run it
  // first so that a name read before and after it never differ.
  detail::ensure_bootstrapped();
  return record_->name;
}

const std::string& CarrierClass::cpp_name() const noexcept { return record_->cpp_name; }
const CarrierClass::Traits& CarrierClass::traits() const noexcept { return record_->traits; }
bool CarrierClass::is_runtime_defined() const noexcept { return record_->runtime; }

namespace detail {

void CarrierClassAccess::name_shipped_class(const CarrierClass& c, std::string name) {
  if (!bootstrapping())
    throw RuntimeError(fmt::format("name_shipped_class: {} can be named only by the library bootstrap", c.cpp_name()));
  // Records are created non-const (carrier_class.cpp owns them mutably).
  auto& record = const_cast<CarrierClassRecord&>(*c.record_);
  if (record.runtime || record.name != record.cpp_name)
    throw RuntimeError(fmt::format("name_shipped_class: {} already has the name '{}'", c.cpp_name(), record.name));
  record.name = std::move(name);
}

}  // namespace detail
}  // namespace strideweave
