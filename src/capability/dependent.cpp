// DependentCarrier's per-instance snapshots and the carrier-instance
// capability queries. See include/strideweave/capability.h.
#include <strideweave/capability.h>

#include <fmt/format.h>

#include <algorithm>

#include "capability/registry.h"

namespace strideweave {


std::vector<OperationCapability> DependentCarrier::_generate_operation_capabilities() const {
  throw NotImplementedError(fmt::format(
      "{}: a definition-free DependentCarrier must implement _generate_operation_capabilities()", class_name()));
}

bool DependentCarrier::is_capability_finalized() const noexcept { return snapshot_.load() != nullptr; }

std::span<const OperationCapability> DependentCarrier::capability_snapshot() const {
  const auto* s = snapshot_.load();
  if (!s)
    throw RuntimeError(fmt::format("{}: capabilities are queried before the instance finalised them", class_name()));
  return *s;
}

void DependentCarrier::finalize_operation_capabilities() {
  std::lock_guard lock(finalize_mutex_);
  if (snapshot_.load())
    throw RuntimeError(fmt::format("{}: operation capabilities are already finalised", class_name()));
  // Generation may throw: nothing is published then.
  std::vector<OperationCapability> caps = _generate_operation_capabilities();
  for (std::size_t i = 0; i < caps.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (caps[i].same_shape(caps[j]))
        throw ValueError(fmt::format("{}: the generated capability shape {} appears twice", class_name(),
                                     caps[i].to_plan().to_string()));
  std::sort(caps.begin(), caps.end());
  owned_snapshot_ = std::make_shared<const std::vector<OperationCapability>>(std::move(caps));
  snapshot_.store(owned_snapshot_.get());
}

// ---- carrier-instance queries

namespace {

std::optional<std::string> instance_reason(const Carrier& c, std::span<const OperationCapability> caps,
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
  if (const auto* d = dynamic_cast<const DependentCarrier*>(this)) {
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
  if (const auto* d = dynamic_cast<const DependentCarrier*>(this)) return instance_reason(*this, d->capability_snapshot(), plan);
  return capability_registry::instance_reason(*this, plan);
}

namespace capability_registry {
const OperationCapability& gate(const Carrier& carrier, const OperationPlan& plan) {
  if (carrier.exact_class().traits().is_dependent) {
    const auto& d = static_cast<const DependentCarrier&>(carrier);
    for (const OperationCapability& x : d.capability_snapshot())  // lives as long as the instance
      if (x.matches(plan)) return x;
    throw UnsupportedOperationPlan(*strideweave::instance_reason(carrier, d.capability_snapshot(), plan), plan);
  }
  return instance_require_ref(carrier, plan);
}
}  // namespace capability_registry

OperationCapability Carrier::require_operation_plan(const OperationPlan& plan) const {
  return capability_registry::gate(*this, plan);  // the public query hands back a copy
}

}  // namespace strideweave
