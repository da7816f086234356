// Per-class kernel tables. See include/strideweave/execution.h.
#include <strideweave/errors.h>
#include <strideweave/execution.h>

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <shared_mutex>
#include <typeindex>

#include "capability/registry.h"
#include "carriers/carrier_list.h"

namespace strideweave {

void KernelTable::add(const OperationPlan& plan, KernelFn kernel, ExecutionAxes axes) {
  if (!kernel) throw TypeError(fmt::format("KernelTable.add: the kernel for {} is empty", plan.to_string()));
  if (kernels_.count(plan)) throw ValueError(fmt::format("KernelTable.add: duplicate plan {}", plan.to_string()));
  kernels_.emplace(plan, Entry{std::move(kernel), axes});
  order_.push_back(plan);
}

const KernelFn* KernelTable::find(const OperationPlan& plan) const noexcept {
  auto it = kernels_.find(plan);
  return it == kernels_.end() ? nullptr : &it->second.kernel;
}

namespace {

struct Entry {
  CarrierClass cls;
  std::string name;
  std::unique_ptr<const KernelTable> table;
  bool shipped;
};

// Set while the central carrier list registers (on the registering thread).
thread_local bool registering_shipped = false;

struct Registry {
  std::shared_mutex mutex;
  std::vector<Entry> entries;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    return reg;
  }();
  return *r;
}

void ensure_shipped() { carriers::ensure_registered(); }



}  // namespace

void register_kernel_table(CarrierClass cls, std::string class_name, KernelTable table) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.cls == cls)
      throw RuntimeError(fmt::format("register_kernel_table: {} already has a kernel table", class_name));
  // The class's capability declaration is derived from the table: one entry
  // per registered plan, with the axes its kernel registered.
  std::vector<OperationCapability> caps;
  for (const OperationPlan& plan : table.plans()) caps.push_back(OperationCapability::from_plan(plan, table.axes(plan)));
  capability_registry::declare_kernel_backed(cls, class_name, std::move(caps));
  r.entries.push_back(
      Entry{cls, std::move(class_name), std::make_unique<const KernelTable>(std::move(table)), registering_shipped});
}

const KernelTable* kernel_table(CarrierClass cls) {
  // A table, once registered, is never replaced or freed: the last class a
  // thread asked about is answered again without the lock (a class without
  // a table is never remembered, as it may register one later).
  thread_local std::optional<std::type_index> last_class;
  thread_local const KernelTable* last_table = nullptr;
  if (last_class && *last_class == cls.type_index()) return last_table;
  ensure_shipped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.cls == cls) {
      last_class = cls.type_index();
      last_table = e.table.get();
      return last_table;
    }
  return nullptr;
}

std::vector<std::pair<CarrierClass, std::string>> shipped_kernel_classes() {
  ensure_shipped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::pair<CarrierClass, std::string>> out;
  for (const Entry& e : r.entries)
    if (e.shipped) out.emplace_back(e.cls, e.name);
  return out;
}

namespace detail {
void mark_shipped_registration(bool on) { registering_shipped = on; }
}  // namespace detail

std::vector<std::pair<CarrierClass, std::string>> registered_kernel_classes() {
  ensure_shipped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::pair<CarrierClass, std::string>> out;
  for (const Entry& e : r.entries) out.emplace_back(e.cls, e.name);
  return out;
}

}  // namespace strideweave
