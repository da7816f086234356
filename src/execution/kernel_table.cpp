// Per-class kernel tables. See src/execution/kernel_table.h.
#include "execution/kernel_table.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "capability/registry.h"
#include "core/bootstrap.h"

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
  std::unique_ptr<const KernelTable> table;
};

struct Registry {
  std::shared_mutex mutex;
  std::vector<Entry> entries;
};

Registry& registry() {
  static Registry* r = new Registry();  // lives for the program (tables outlive statics)
  return *r;
}

}  // namespace

void register_kernel_table(CarrierClass cls, KernelTable table) {
  const char* what = "register_kernel_table";
  const CarrierClass::Traits& t = cls.traits();
  if (!t.derives_carrier) throw TypeError(fmt::format("{}: {} is not a Carrier class", what, cls.name()));
  if (t.is_root) throw TypeError(fmt::format("{}: the Carrier root cannot register kernels", what));
  if (t.is_dependent)
    throw TypeError(fmt::format("{}: {} is a DependentCarrier class; its capabilities belong to each instance", what,
                                cls.name()));
  // The class's capability declaration is derived from the table: one entry
  // per registered plan, and beside it the axes its kernel registered.
  // Each entry's executor is its kernel in the owned table (whose nodes
  // never move: the table is published once and never freed), so the gate's
  // one lookup also says what runs.
  auto owned = std::make_unique<const KernelTable>(std::move(table));
  std::vector<OperationCapability> caps;
  std::vector<ExecutionAxes> axes;
  std::vector<capability_registry::Executor> executors;
  caps.reserve(owned->plans().size());
  axes.reserve(owned->plans().size());
  executors.reserve(owned->plans().size());
  for (const OperationPlan& plan : owned->plans()) {
    caps.push_back(OperationCapability::from_plan(plan));
    axes.push_back(owned->axes(plan));
    executors.push_back({capability_registry::ExecutorKind::Kernel, owned->find(plan), owned.get()});
  }
  detail::ensure_bootstrapped();  // the shipped classes first (a no-op inside the bootstrap)
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.cls == cls) throw TypeError(fmt::format("{}: {} already has a kernel table", what, cls.name()));
  if (const std::optional<std::string> closed = capability_registry::closed_reason(cls))
    throw TypeError(fmt::format("{}: {} {}", what, cls.name(), *closed));
  r.entries.reserve(r.entries.size() + 1);  // nothing below throws once the capabilities are declared
  capability_registry::declare_kernel_backed(cls, std::move(caps), std::move(axes), std::move(executors));
  r.entries.push_back(Entry{cls, std::move(owned)});
}

const KernelTable* kernel_table(CarrierClass cls) {
  // A table, once registered, is never replaced or freed: the last class a
  // thread asked about is answered again without the lock (a class without
  // a table is never remembered, as it may register one later).
  thread_local std::optional<CarrierClass> last_class;
  thread_local const KernelTable* last_table = nullptr;
  if (last_class && *last_class == cls) return last_table;
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.cls == cls) {
      last_class = cls;
      last_table = e.table.get();
      return last_table;
    }
  return nullptr;
}

namespace {

struct FallbackCounts {
  std::mutex mutex;
  std::unordered_map<CarrierClass, std::array<std::uint64_t, 5>> counts;
};

FallbackCounts& fallback_counts() {
  static FallbackCounts* c = new FallbackCounts();  // lives for the program
  return *c;
}

}  // namespace

void record_fallback_copy(CarrierClass cls, ExecutionAxis axis) {
  FallbackCounts& c = fallback_counts();
  std::lock_guard lock(c.mutex);
  ++c.counts[cls][static_cast<std::size_t>(axis)];
}

std::uint64_t fallback_copy_count(CarrierClass cls, ExecutionAxis axis) {
  FallbackCounts& c = fallback_counts();
  std::lock_guard lock(c.mutex);
  auto it = c.counts.find(cls);
  return it == c.counts.end() ? 0 : it->second[static_cast<std::size_t>(axis)];
}

std::vector<CarrierClass> registered_kernel_classes() {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<CarrierClass> out;
  for (const Entry& e : r.entries) out.push_back(e.cls);
  return out;
}

}  // namespace strideweave
