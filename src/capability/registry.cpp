// The class-level capability registry. Every class's answer is an immutable
// ClassCapabilities published in a copy-on-write snapshot map: writers
// (declaration, observation) serialise on a mutex and publish a new map;
// readers load the current map atomically and never lock.
#include <strideweave/capability.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <cstdint>
#include <optional>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "capability/registry.h"
#include "core/bootstrap.h"

namespace strideweave {
namespace {

// The capabilities of one operation: a run of `sorted` (sorted by operation
// name first, so each operation's capabilities are contiguous).
struct OperationRun {
  std::string_view operation;  // views the first capability's name
  std::uint32_t begin;
  std::uint32_t count;
};

struct ClassCapabilities {
  enum class Origin { KernelBacked, Declared, ObservedEmpty, DefinitionBacked } origin;
  CarrierClass cls;
  std::vector<OperationCapability> sorted;
  // Beside sorted[i], not inside it: the execution axes and the executor of
  // that entry (the dispatch record is sorted[i], axes[i], executors[i]).
  std::vector<ExecutionAxes> axes;
  std::vector<capability_registry::Executor> executors;
  std::unordered_map<OperationPlan, std::size_t> by_plan;
  // One run per operation, in name order.
  std::vector<OperationRun> runs;
};

// A class with at most this many operations finds an operation's run by
// binary search, and an operation with at most kDirectCapabilities
// capabilities is matched field by field (no plan hash, no allocation); a
// larger class or run (the shipped CPU class) keeps the hash lookup, which
// is cheaper there.
constexpr std::size_t kDirectOperations = 16;
constexpr std::uint32_t kDirectCapabilities = 4;

using Snapshot = std::unordered_map<CarrierClass, std::shared_ptr<const ClassCapabilities>>;

// The current map is published through a plain atomic pointer (release
// store, acquire load). Every published map is immutable and kept for the
// life of the program, so a reader never needs a lock or a reference count
// to use the map it loaded. (std::atomic<std::shared_ptr> is not used: the
// libstdc++ 12 implementation releases its internal lock with a relaxed
// store in load(), a data race with a concurrent store() that
// ThreadSanitizer reports.) The registry is permanent and written only at
// declaration/observation time, so the retained maps stay small.
struct Registry {
  std::mutex write;
  std::vector<std::unique_ptr<const Snapshot>> published;  // guarded by `write`
  std::vector<CarrierClass> kernel_backed;                 // guarded by `write`, in declaration order
  std::vector<CarrierClass> definition_backed;             // guarded by `write`, in claim order
  // Definition-backed classes not yet observed: their sealing step
  // (carrier-extension R7.2), run once by the first observation.
  std::unordered_map<CarrierClass, capability_registry::SealStep> pending;  // guarded by `write`
  std::atomic<const Snapshot*> current{nullptr};
  Registry() {
    published.push_back(std::make_unique<const Snapshot>());
    current.store(published.back().get(), std::memory_order_release);
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // lives for the program (identities outlive statics)
  return *r;
}

// `axes` and `executors` are empty (the default axes, the dispatch hook) or
// parallel to `caps`.
std::shared_ptr<const ClassCapabilities> make_entry(ClassCapabilities::Origin origin, CarrierClass cls,
                                                    std::vector<OperationCapability> caps,
                                                    std::vector<ExecutionAxes> axes = {},
                                                    std::vector<capability_registry::Executor> executors = {}) {
  auto e = std::make_shared<ClassCapabilities>(ClassCapabilities{origin, cls, {}, {}, {}, {}, {}});
  if (axes.empty()) axes.resize(caps.size());
  if (executors.empty()) executors.resize(caps.size());
  std::vector<std::size_t> order(caps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return caps[a] < caps[b]; });
  e->sorted.reserve(caps.size());
  e->axes.reserve(caps.size());
  e->executors.reserve(caps.size());
  for (std::size_t i : order) {
    e->sorted.push_back(std::move(caps[i]));
    e->axes.push_back(axes[i]);
    e->executors.push_back(executors[i]);
  }
  for (std::size_t i = 0; i < e->sorted.size(); ++i) e->by_plan.emplace(e->sorted[i].to_plan(), i);
  for (std::size_t i = 0; i < e->sorted.size(); ++i) {
    const std::string_view op = e->sorted[i].operation();
    if (!e->runs.empty() && e->runs.back().operation == op)
      ++e->runs.back().count;
    else
      e->runs.push_back(OperationRun{op, static_cast<std::uint32_t>(i), 1});
  }
  return e;
}

void reject_duplicates(std::span<const OperationCapability> caps, const std::string& who) {
  for (std::size_t i = 0; i < caps.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (caps[i] == caps[j])
        throw ValueError(fmt::format("{}: the capability shape {} appears twice", who, caps[i].to_plan().to_string()));
}

// Precondition: the caller holds r.write.
void publish(Registry& r, CarrierClass key, std::shared_ptr<const ClassCapabilities> entry) {
  auto next = std::make_unique<Snapshot>(*r.current.load(std::memory_order_acquire));
  (*next)[key] = std::move(entry);
  r.published.push_back(std::move(next));  // may throw: then nothing is published
  r.current.store(r.published.back().get(), std::memory_order_release);
}

void check_queryable_class(CarrierClass cls, const char* what) {
  if (!cls.traits().derives_carrier) throw TypeError(fmt::format("{}: {} is not a Carrier class", what, cls.name()));
  if (cls.traits().is_dependent)
    throw TypeError(fmt::format("{}: {} is a DependentCarrier class; its capabilities belong to each instance", what,
                                cls.name()));
}

// The sealed answer of `cls`, observing (sealing empty) an undeclared class.
std::shared_ptr<const ClassCapabilities> observe(CarrierClass cls, const char* what) {
  check_queryable_class(cls, what);
  detail::ensure_bootstrapped();
  Registry& r = registry();
  {
    const auto snap = r.current.load();
    auto it = snap->find(cls);
    if (it != snap->end()) return it->second;
  }
  std::lock_guard lock(r.write);
  const auto snap = r.current.load();
  auto it = snap->find(cls);
  if (it != snap->end()) return it->second;
  auto pending = r.pending.find(cls);
  if (pending != r.pending.end()) {
    // The first observation of a definition-backed class seals it: its
    // built-in patterns and packs freeze into one sorted set, atomically
    // with publication (a pack registered concurrently lands before or is
    // refused after, never half).
    capability_registry::Sealed sealed = pending->second();
    auto entry = make_entry(ClassCapabilities::Origin::DefinitionBacked, cls, std::move(sealed.capabilities), {},
                            std::move(sealed.executors));
    publish(r, cls, entry);
    r.pending.erase(pending);
    return entry;
  }
  auto entry = make_entry(ClassCapabilities::Origin::ObservedEmpty, cls, {});
  publish(r, cls, entry);
  return entry;
}

const OperationCapability* find_plan(const ClassCapabilities& c, const OperationPlan& plan) {
  if (c.sorted.size() <= kDirectCapabilities) {  // a tiny class: its capabilities are the candidates
    for (const OperationCapability& x : c.sorted)
      if (x.matches(plan)) return &x;
    return nullptr;
  }
  if (c.runs.size() <= kDirectOperations) {
    const std::string_view op = plan.operation();
    const auto run = std::lower_bound(c.runs.begin(), c.runs.end(), op,
                                      [](const OperationRun& r, std::string_view name) { return r.operation < name; });
    if (run == c.runs.end() || run->operation != op) return nullptr;
    if (run->count <= kDirectCapabilities) {
      for (std::uint32_t i = run->begin; i < run->begin + run->count; ++i)
        if (c.sorted[i].matches(plan)) return &c.sorted[i];
      return nullptr;
    }
  }
  auto it = c.by_plan.find(plan);
  return it == c.by_plan.end() ? nullptr : &c.sorted[it->second];
}

// The stable sentence, naming the class by its one public name.
std::optional<std::string> reason(const ClassCapabilities& c, const OperationPlan& plan) {
  if (find_plan(c, plan)) return std::nullopt;
  const std::string& name = c.cls.name();
  const bool has_operation = std::any_of(c.sorted.begin(), c.sorted.end(),
                                         [&](const OperationCapability& x) { return x.operation() == plan.operation(); });
  if (!has_operation) return fmt::format("{} has no capability for operation '{}'.", name, plan.operation());
  return fmt::format("{} has capabilities for operation '{}' but none matches the plan {}.", name, plan.operation(),
                     plan.to_string());
}

// The entry for (operation, representative dtype): exactly the class's entry
// for the policy's representative plan (policy.h, representative_plan).
const OperationCapability* representative(const ClassCapabilities& c, std::string_view operation,
                                          const SimpleDType& dtype) {
  const std::optional<OperationPlan> plan = representative_plan(operation, dtype);
  return plan ? find_plan(c, *plan) : nullptr;
}

const char* origin_reason(ClassCapabilities::Origin origin) {
  switch (origin) {
    case ClassCapabilities::Origin::KernelBacked: return "is a kernel-backed (shipped) class";
    case ClassCapabilities::Origin::Declared: return "has already declared its capabilities";
    case ClassCapabilities::Origin::ObservedEmpty: return "was already observed (sealed empty)";
    case ClassCapabilities::Origin::DefinitionBacked:
      return "is definition-backed (its capabilities derive from its CarrierDefinition)";
  }
  return "is closed";
}
// Precondition: the caller holds r.write.
std::optional<std::string> closed_reason_locked(Registry& r, CarrierClass cls) {
  const auto snap = r.current.load();
  auto it = snap->find(cls);
  if (it != snap->end()) return origin_reason(it->second->origin);
  if (r.pending.count(cls)) return origin_reason(ClassCapabilities::Origin::DefinitionBacked);
  return std::nullopt;
}

}  // namespace

namespace capability_registry {

void reject_invalid_entries(std::span<const OperationCapability> caps, const std::string& who) {
  for (std::size_t i = 0; i < caps.size(); ++i)
    if (caps[i].operation().empty() || caps[i].operands().empty())
      throw TypeError(fmt::format("{}: entry {} is not a capability (no operation name or no operands: a moved-from "
                                  "OperationCapability)",
                                  who, i));
}

void declare_kernel_backed(CarrierClass cls, std::vector<OperationCapability> capabilities,
                           std::vector<ExecutionAxes> axes, std::vector<Executor> executors) {
  reject_duplicates(capabilities, "register_kernel_table(" + cls.name() + ")");
  if (axes.size() != capabilities.size() || executors.size() != capabilities.size())
    throw ValueError(fmt::format("register_kernel_table({}): {} execution axes and {} executors for {} capabilities",
                                 cls.name(), axes.size(), executors.size(), capabilities.size()));
  Registry& r = registry();
  std::lock_guard lock(r.write);
  if (closed_reason_locked(r, cls))
    throw TypeError(fmt::format("register_kernel_table: {} already has a capability answer", cls.name()));
  r.kernel_backed.reserve(r.kernel_backed.size() + 1);  // may throw: then nothing is published
  publish(r, cls,
          make_entry(ClassCapabilities::Origin::KernelBacked, cls, std::move(capabilities), std::move(axes),
                     std::move(executors)));
  r.kernel_backed.push_back(cls);
}


std::optional<std::string> closed_reason(CarrierClass cls) {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::lock_guard lock(r.write);
  return closed_reason_locked(r, cls);
}

void declare_definition_backed(CarrierClass cls, SealStep seal, const std::string& who) {
  check_queryable_class(cls, who.c_str());
  if (!seal) throw TypeError(fmt::format("{}: an empty sealing step", who));
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::lock_guard lock(r.write);
  if (auto why = closed_reason_locked(r, cls)) throw TypeError(fmt::format("{}: {} {}", who, cls.name(), *why));
  r.pending.emplace(cls, std::move(seal));
  r.definition_backed.push_back(cls);
}

bool is_observed(CarrierClass cls) {
  detail::ensure_bootstrapped();
  const auto snap = registry().current.load();
  return snap->count(cls) != 0;
}

std::vector<CarrierClass> kernel_backed_classes() {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::lock_guard lock(r.write);
  return r.kernel_backed;
}

std::vector<CarrierClass> definition_backed_classes() {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::lock_guard lock(r.write);
  return r.definition_backed;
}

Entry require_entry(CarrierClass cls, const OperationPlan& plan) {
  // A class's sealed answer never changes and every entry is retained for
  // the life of the process: the last class a thread gated is answered again
  // without hashing it or copying the entry's shared pointer.
  thread_local std::optional<CarrierClass> last_class;
  thread_local const ClassCapabilities* last_entry = nullptr;
  const ClassCapabilities* c = nullptr;
  if (last_class && *last_class == cls) {
    c = last_entry;
  } else {
    const std::shared_ptr<const ClassCapabilities> observed = observe(cls, "Carrier.require_operation_plan");
    c = observed.get();
    last_class = cls;
    last_entry = c;
  }
  // The capability this thread found last for that class, when it matches
  // this plan too (a capability mirrors exactly one plan, so a match is the
  // search's answer): a loop calling one operation skips the search.
  thread_local const ClassCapabilities* last_searched = nullptr;
  thread_local const OperationCapability* last_found = nullptr;
  const OperationCapability* m =
      last_searched == c && last_found->matches(plan) ? last_found : find_plan(*c, plan);
  if (m) {
    last_searched = c;
    last_found = m;
    const auto i = static_cast<std::size_t>(m - c->sorted.data());
    return Entry{m, &c->axes[i], &c->executors[i]};
  }
  throw UnsupportedOperationPlan(*reason(*c, plan), plan);
}

}  // namespace capability_registry

void register_operation_capabilities(CarrierClass cls, std::span<const OperationCapability> capabilities,
                                     std::span<const ExecutionAxes> execution_axes) {
  const char* what = "register_operation_capabilities";
  if (!cls.traits().derives_carrier) throw TypeError(fmt::format("{}: {} is not a Carrier class", what, cls.name()));
  if (cls.traits().is_root) throw TypeError(fmt::format("{}: the Carrier root cannot declare capabilities", what));
  if (cls.traits().is_dependent)
    throw TypeError(fmt::format("{}: {} is a DependentCarrier class; its capabilities belong to each instance", what,
                                cls.name()));
  detail::ensure_bootstrapped();
  capability_registry::reject_invalid_entries(capabilities, what);
  reject_duplicates(capabilities, what);
  if (!execution_axes.empty() && execution_axes.size() != capabilities.size())
    throw ValueError(fmt::format("{}: {} execution axes for {} capabilities (give none, or one per capability)", what,
                                 execution_axes.size(), capabilities.size()));
  Registry& r = registry();
  std::lock_guard lock(r.write);
  if (auto why = closed_reason_locked(r, cls)) throw TypeError(fmt::format("{}: {} {}", what, cls.name(), *why));
  publish(r, cls,
          make_entry(ClassCapabilities::Origin::Declared, cls,
                     std::vector<OperationCapability>(capabilities.begin(), capabilities.end()),
                     std::vector<ExecutionAxes>(execution_axes.begin(), execution_axes.end())));
}

std::vector<OperationCapability> capabilities_for_carrier_class(CarrierClass cls, std::optional<std::string_view> operation) {
  const auto c = observe(cls, "capabilities_for_carrier_class");
  if (!operation) return c->sorted;
  std::vector<OperationCapability> out;
  for (const OperationCapability& x : c->sorted)
    if (x.operation() == *operation) out.push_back(x);
  return out;
}

std::optional<OperationCapability> matching_capability(CarrierClass cls, const OperationPlan& plan) {
  const auto c = observe(cls, "matching_capability");
  const OperationCapability* m = find_plan(*c, plan);
  return m ? std::optional<OperationCapability>(*m) : std::nullopt;
}

bool supports_operation_plan(CarrierClass cls, const OperationPlan& plan) {
  return find_plan(*observe(cls, "supports_operation_plan"), plan) != nullptr;
}

std::optional<std::string> unsupported_plan_reason(CarrierClass cls, const OperationPlan& plan) {
  return reason(*observe(cls, "unsupported_plan_reason"), plan);
}

OperationCapability require_capability(CarrierClass cls, const OperationPlan& plan) {
  const auto c = observe(cls, "require_capability");
  if (const OperationCapability* m = find_plan(*c, plan)) return *m;
  throw UnsupportedOperationPlan(*reason(*c, plan), plan);
}

std::optional<OperationCapability> capability(CarrierClass cls, std::string_view operation, const SimpleDType& dtype) {
  const auto c = observe(cls, "capability");
  const OperationCapability* m = representative(*c, operation, dtype);
  return m ? std::optional<OperationCapability>(*m) : std::nullopt;
}

ExecutionAxes execution_axes(CarrierClass cls, const OperationCapability& capability) {
  const auto c = observe(cls, "execution_axes");
  const OperationPlan plan = capability.to_plan();
  const OperationCapability* m = find_plan(*c, plan);
  if (!m) throw UnsupportedOperationPlan(*reason(*c, plan), plan);
  return c->axes[static_cast<std::size_t>(m - c->sorted.data())];
}

namespace {
const ExecutionAxes& axes_of(const ClassCapabilities& c, const OperationCapability& m) {
  return c.axes[static_cast<std::size_t>(&m - c.sorted.data())];
}

OperationCapability require_axis(const ClassCapabilities& c, const OperationCapability& m, const SimpleDType& dtype,
                                 std::optional<ExecutionAxis> axis) {
  if (axis && axes_of(c, m).level(*axis) == SupportLevel::Unsupported)
    throw UnsupportedOpDType(c.cls.name(), m.operation(), &dtype, axis,
                             fmt::format("{} does not support the {} axis for operation '{}' with input dtype {}.",
                                         c.cls.name(), name_of(*axis), m.operation(), dtype.name()),
                             m.to_plan());
  return m;
}
}  // namespace

OperationCapability require_capability(CarrierClass cls, std::string_view operation, const SimpleDType& dtype,
                                       std::optional<ExecutionAxis> axis) {
  const auto c = observe(cls, "require_capability");
  const OperationCapability* m = representative(*c, operation, dtype);
  if (!m)
    throw UnsupportedOpDType(cls.name(), std::string(operation), &dtype, axis,
                             fmt::format("{} has no capability for operation '{}' with input dtype {}.", cls.name(),
                                         operation, dtype.name()),
                             std::nullopt);
  return require_axis(*c, *m, dtype, axis);
}

OperationCapability require_capability(CarrierClass cls, const OperationPlan& plan, ExecutionAxis axis) {
  const auto c = observe(cls, "require_capability");
  const OperationCapability* m = find_plan(*c, plan);
  if (!m) throw UnsupportedOperationPlan(*reason(*c, plan), plan);
  const SimpleDType* first = nullptr;
  for (const OperandPlan& o : plan.operands())
    if (o.role() == OperandRole::TENSOR && !first) first = o.dtype();
  return require_axis(*c, *m, *first, axis);
}

}  // namespace strideweave
