// DependentCarrier's per-instance snapshots. See
// include/strideweave/dependent_carrier.h.
#include <strideweave/dependent_carrier.h>

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
  capability_registry::reject_invalid_entries(caps, class_name() + " _generate_operation_capabilities()");
  for (std::size_t i = 0; i < caps.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (caps[i] == caps[j])
        throw ValueError(fmt::format("{}: the generated capability shape {} appears twice", class_name(),
                                     caps[i].to_plan().to_string()));
  std::sort(caps.begin(), caps.end());
  owned_snapshot_ = std::make_shared<const std::vector<OperationCapability>>(std::move(caps));
  snapshot_.store(owned_snapshot_.get());
}

}  // namespace strideweave
