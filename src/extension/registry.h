// Internal: the carrier-definition registry's records, for the layers above
// (the dispatch pipeline reads a class's sealed kernels). See
// <strideweave/extension.h>.
#pragma once

#include <strideweave/extension.h>

#include "capability/registry.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace strideweave::extension::detail {

// One kernel pattern in a sealed class's candidate order (R11.4), with where
// it came from ("built-in", or the pack's "namespace@version").
struct Candidate {
  const KernelPattern* pattern;
  std::string source;
  std::shared_ptr<const KernelExecutionInterface> interface;  // the provider's exact interface
};

// What sealing freezes (R7.2, R11.4, R11.6): the deduplicated capability
// union, sorted, every pattern in preference order, and for each capability
// (parallel to `capabilities`) the candidates whose pattern matches its plan
// statically (R11.3), in that order: the executor of the class's dispatch
// record for that plan.
struct SealedKernels {
  std::vector<OperationCapability> capabilities;
  std::vector<Candidate> candidates;
  std::vector<std::vector<const Candidate*>> by_capability;
};

// The registry's record of one definition-backed class.
struct ClassDefinition {
  explicit ClassDefinition(CarrierClass c) : cls(c) {}
  CarrierClass cls;
  std::shared_ptr<const CarrierDefinition> definition;
  bool dependent = false;

  // Packs accepted before sealing, and the sealed result. `mutex` guards
  // `packs` and `sealed`; `kernels` is written once under it, then read
  // without it.
  mutable std::mutex mutex;
  std::vector<std::shared_ptr<const KernelPack>> packs;
  std::shared_ptr<const SealedKernels> sealed;
  std::atomic<const SealedKernels*> kernels{nullptr};

  // Freezes the built-in patterns and the packs (idempotent) and returns the
  // capability set with each capability's executor (its matching candidates):
  // the capability registry's sealing step.
  capability_registry::Sealed seal();
};

// Publication's access to a validated ProviderResult: its outputs are moved
// out (the result is spent afterwards; nothing reads it again) instead of
// copied.
struct ProviderResultAccess {
  static std::vector<Tensor> take_outputs(ProviderResult& result) noexcept { return std::move(result.outputs_); }
};

// DependentCarrier, DefinedCarrier and DefinedDependentCarrier themselves:
// bases to derive from, never a concrete carrier class (R2.3).
bool is_framework_base(CarrierClass cls);

// The record of exactly `cls`, or null. Observes nothing.
std::shared_ptr<const ClassDefinition> find_definition(CarrierClass cls);

// Every class that holds a definition, sorted by class name (opcheck's
// discovery). Observes nothing.
std::vector<std::shared_ptr<const ClassDefinition>> all_definitions();

// The same by raw pointer, without the registry's lock on a repeated class
// (the dispatch path). Records are retained for the life of the process.
const ClassDefinition* find_definition_fast(CarrierClass cls);

// The TransferRoute for exactly (source_class, destination_class), declared
// by the source class's definition (R2.3: a definition's routes start at its
// class), or null. Records live for the process, so the pointer stays valid.
const TransferRoute* transfer_route_for(CarrierClass source_class, CarrierClass destination_class);

// The sealed kernels of an independent definition-backed class, observing
// (sealing) it first if needed.
const SealedKernels& sealed_kernels(const ClassDefinition& record);

}  // namespace strideweave::extension::detail
