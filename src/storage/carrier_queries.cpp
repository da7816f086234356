// The carrier-instance capability queries (backend-capabilities.md, "Carrier
// queries select the correct ownership model") and the dispatch gate. An
// independent carrier answers from its exact class's sealed declaration, a
// dependent one from its own frozen snapshot.
#include <strideweave/dependent_carrier.h>

#include <fmt/format.h>

#include "capability/registry.h"
#include "storage/gate.h"

namespace strideweave {
namespace {

// A dependent instance's snapshot. The dependent trait is set only by
// DependentCarrier's constructors (Carrier keeps it private), so the cast is
// exact.
const DependentCarrier* as_dependent(const Carrier& c) {
  return c.exact_class().traits().is_dependent ? static_cast<const DependentCarrier*>(&c) : nullptr;
}

std::optional<std::string> snapshot_reason(const Carrier& c, std::span<const OperationCapability> caps,
                                           const OperationPlan& plan) {
  bool has_operation = false;
  for (const OperationCapability& x : caps) {
    if (x.matches(plan)) return std::nullopt;
    has_operation = has_operation || x.operation() == plan.operation();
  }
  if (!has_operation) return fmt::format("{} has no capability for operation '{}'.", c.class_name(), plan.operation());
  return fmt::format("{} has capabilities for operation '{}' but none matches the plan {}.", c.class_name(),
                     plan.operation(), plan.to_string());
}

}  // namespace

std::vector<OperationCapability> Carrier::operation_capabilities(std::optional<std::string_view> operation_name) const {
  std::vector<OperationCapability> all;
  if (const DependentCarrier* d = as_dependent(*this)) {
    auto s = d->capability_snapshot();
    all.assign(s.begin(), s.end());
  } else {
    all = capabilities_for_carrier_class(exact_class());
  }
  if (!operation_name) return all;
  std::vector<OperationCapability> out;
  for (const OperationCapability& x : all)
    if (x.operation() == *operation_name) out.push_back(x);
  return out;
}

bool Carrier::supports_operation_plan(const OperationPlan& plan) const { return !unsupported_plan_reason(plan); }

std::optional<std::string> Carrier::unsupported_plan_reason(const OperationPlan& plan) const {
  if (const DependentCarrier* d = as_dependent(*this)) return snapshot_reason(*this, d->capability_snapshot(), plan);
  return strideweave::unsupported_plan_reason(exact_class(), plan);
}

OperationCapability Carrier::require_operation_plan(const OperationPlan& plan) const {
  return storage::gate(*this, plan).capability;  // the public query hands back a copy
}

ExecutionAxes Carrier::execution_axes(const OperationCapability& capability) const {
  if (as_dependent(*this)) return storage::gate(*this, capability.to_plan()).axes;
  return strideweave::execution_axes(exact_class(), capability);
}

namespace storage {
namespace {
thread_local std::uint64_t gate_lookups = 0;
}  // namespace

std::uint64_t gate_lookups_on_this_thread() noexcept { return gate_lookups; }

Admission gate(const Carrier& carrier, const OperationPlan& plan) { return gate(carrier, plan, nullptr); }

Admission gate(const Carrier& carrier, const OperationPlan& plan, GateMemo* memo) {
  ++gate_lookups;
  // A dependent snapshot records plan shapes only: its entries answer the
  // default axes.
  static const ExecutionAxes dependent_axes{};
  static const capability_registry::Executor composite{capability_registry::ExecutorKind::CompositeProvider};
  static const capability_registry::Executor hook{capability_registry::ExecutorKind::DispatchHook};
  const CarrierClass cls = carrier.exact_class();
  if (cls.traits().is_dependent) {
    const auto& d = static_cast<const DependentCarrier&>(carrier);
    // A class whose instances forward to a storage provider holds a carrier
    // definition (its constructors require one): its composite provider runs.
    const capability_registry::Executor& executor = cls.traits().storage_provider ? composite : hook;
    for (const OperationCapability& x : d.capability_snapshot())  // lives as long as the instance
      if (x.matches(plan)) return Admission{x, dependent_axes, executor};
    throw UnsupportedOperationPlan(*snapshot_reason(carrier, d.capability_snapshot(), plan), plan);
  }
  if (memo && memo->cls == cls) return Admission{*memo->entry.capability, *memo->entry.axes, *memo->entry.executor};
  const capability_registry::Entry entry = capability_registry::require_entry(cls, plan);
  if (memo) {
    memo->cls = cls;
    memo->entry = entry;
  }
  return Admission{*entry.capability, *entry.axes, *entry.executor};
}
}  // namespace storage

}  // namespace strideweave
