// Internal: the capability gate of the dispatch path
// (backend-capabilities.md, "Unsupported plans fail before execution work").
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/capability.h>

namespace strideweave::storage {

// What the gate admitted: the exact capability and the execution axes the
// carrier keeps beside it.
struct Admission {
  const OperationCapability& capability;
  const ExecutionAxes& axes;
};

// Carrier::require_operation_plan by reference: the exact capability for
// `plan` from the carrier's class declaration (independent) or its frozen
// snapshot (dependent; RuntimeError before finalisation), else
// UnsupportedOperationPlan with the stable sentence, and its axes
// (Carrier::execution_axes). The references live as long as `carrier`.
Admission gate(const Carrier& carrier, const OperationPlan& plan);

}  // namespace strideweave::storage
