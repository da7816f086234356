// Internal: the class-level capability registry's entry for kernel-backed
// classes (execution/kernel_table.cpp declares through it).
#pragma once

#include <strideweave/capability.h>

#include <optional>
#include <string>
#include <vector>

namespace strideweave::capability_registry {

// Declares the sealed set of a kernel-backed class (shipped carriers). A
// class already declared or observed -> RuntimeError.
void declare_kernel_backed(CarrierClass cls, std::string name, std::vector<OperationCapability> capabilities);

// The instance queries of an independent carrier: its exact class's sealed
// answer (observing it), with the sentence naming the carrier by its public
// class_name(), as the dependent-instance queries do.
std::optional<std::string> instance_reason(const Carrier& carrier, const OperationPlan& plan);
// The sealed answer of the carrier's class for `plan`, by reference: class entries are
// immutable and every published snapshot is retained, so the reference is
// valid for the life of the process.
const OperationCapability& instance_require_ref(const Carrier& carrier, const OperationPlan& plan);
// Carrier::require_operation_plan by reference (dependent.cpp): the gate of
// the dispatch path. The reference lives as long as `carrier`.
const OperationCapability& gate(const Carrier& carrier, const OperationPlan& plan);

}  // namespace strideweave::capability_registry
