// Internal: the class-level capability registry's entries for the layers
// above it (the kernel registry declares kernel-backed classes through it;
// the storage layer's capability gate reads it).
#pragma once

#include <strideweave/capability.h>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strideweave::capability_registry {

// Declares the sealed set of a kernel-backed class, with the execution axes
// of each capability beside it (`axes` parallel to `capabilities`).
// TypeError when the class already has an answer (declared or observed);
// ValueError for a duplicate shape or a count mismatch. All or nothing.
void declare_kernel_backed(CarrierClass cls, std::vector<OperationCapability> capabilities,
                           std::vector<ExecutionAxes> axes);

// TypeError naming `who` and the entry's position unless every entry is a
// whole record (a name and at least one operand). A constructed
// OperationCapability always is; a moved-from one is not, and it is the one
// invalid entry a C++ declaration or dependent generator can hand over
// (backend-capabilities.md: invalid entries fail with TypeError).
void reject_invalid_entries(std::span<const OperationCapability> capabilities, const std::string& who);

// Why `cls` can no longer declare ("is a kernel-backed (shipped) class",
// "has already declared its capabilities", "was already observed (sealed
// empty)"), or nullopt while it is open. Observes nothing.
std::optional<std::string> closed_reason(CarrierClass cls);

// A definition-backed class's sealing step: returns the class's complete
// capability set (already validated: whole records, no conflicting shapes).
using SealStep = std::function<std::vector<OperationCapability>()>;

// Claims `cls` for a carrier definition (carrier-extension R2.3): from now on
// it answers "definition-backed" to every declaration, and its first
// observation runs `seal` (under the registry's write lock, so it must not
// call back into this registry) and publishes the result. TypeError naming
// `who` when the class is not queryable (not a carrier, dependent) or
// already has an answer (declared, observed, kernel-backed or claimed).
void declare_definition_backed(CarrierClass cls, SealStep seal, const std::string& who);

// True once `cls` has a published answer (declared, kernel-backed, observed
// or sealed). Observes nothing.
bool is_observed(CarrierClass cls);

// The kernel-backed classes, in declaration order.
std::vector<CarrierClass> kernel_backed_classes();

// One sealed entry of a class: its capability and the execution axes kept
// beside it.
struct Entry {
  const OperationCapability* capability;
  const ExecutionAxes* axes;
};

// The sealed entry of `cls` for `plan`, by reference (observing an
// undeclared class), or UnsupportedOperationPlan with the stable sentence.
// Class entries are immutable and retained for the life of the process, so
// the references stay valid. Precondition: `cls` is a queryable class (a
// Carrier class that is not dependent).
Entry require_entry(CarrierClass cls, const OperationPlan& plan);

}  // namespace strideweave::capability_registry
