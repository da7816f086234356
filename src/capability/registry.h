// Internal: the class-level capability registry's entries for the layers
// above it (the kernel registry declares kernel-backed classes through it;
// the storage layer's capability gate reads it).
#pragma once

#include <strideweave/capability.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strideweave::capability_registry {

// What executes one sealed entry: the other half of the dispatch record
// (docs/design.md, "One dispatch record"). The capability layer keeps it
// beside the entry's capability and axes and never interprets it; the layer
// that registered the class does. `target` and `owner` live as long as the
// process (class answers are never replaced):
//   Kernel           target: the KernelFn, owner: its KernelTable (execution)
//   KernelPatterns   target: the entry's matching candidates in preference
//                    order, owner: the class's definition record (extension)
//   CompositeProvider  a dependent definition-backed instance (owner null:
//                    the record is found by class)
//   DispatchHook     a declared (custom definition-free) class, or a
//                    dependent class without a definition: its
//                    Carrier::_dispatch_op computes the call
enum class ExecutorKind : std::uint8_t { DispatchHook, Kernel, KernelPatterns, CompositeProvider };
struct Executor {
  ExecutorKind kind = ExecutorKind::DispatchHook;
  const void* target = nullptr;
  const void* owner = nullptr;
};

// Declares the sealed set of a kernel-backed class, with the execution axes
// and the executor of each capability beside it (`axes` and `executors`
// parallel to `capabilities`). TypeError when the class already has an
// answer (declared or observed); ValueError for a duplicate shape or a count
// mismatch. All or nothing.
void declare_kernel_backed(CarrierClass cls, std::vector<OperationCapability> capabilities,
                           std::vector<ExecutionAxes> axes, std::vector<Executor> executors);

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
// capability set (already validated: whole records, no conflicting shapes)
// and, parallel to it, each capability's executor.
struct Sealed {
  std::vector<OperationCapability> capabilities;
  std::vector<Executor> executors;
};
using SealStep = std::function<Sealed()>;

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
// The classes claimed by declare_definition_backed (independent
// definition-backed classes: the shipped CUDA carrier, user classes), in
// claim order.
std::vector<CarrierClass> definition_backed_classes();

// One sealed entry of a class: its capability, and the execution axes and
// executor kept beside it.
struct Entry {
  const OperationCapability* capability;
  const ExecutionAxes* axes;
  const Executor* executor;
};

// The sealed entry of `cls` for `plan`, by reference (observing an
// undeclared class), or UnsupportedOperationPlan with the stable sentence.
// Class entries are immutable and retained for the life of the process, so
// the references stay valid. Precondition: `cls` is a queryable class (a
// Carrier class that is not dependent).
Entry require_entry(CarrierClass cls, const OperationPlan& plan);

}  // namespace strideweave::capability_registry
