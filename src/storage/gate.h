// Internal: the capability gate of the dispatch path
// (backend-capabilities.md, "Unsupported plans fail before execution work").
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/capability.h>

namespace strideweave::storage {

// Carrier::require_operation_plan by reference: the exact capability for
// `plan` from the carrier's class declaration (independent) or its frozen
// snapshot (dependent; RuntimeError before finalisation), else
// UnsupportedOperationPlan with the stable sentence. The reference lives as
// long as `carrier`.
const OperationCapability& gate(const Carrier& carrier, const OperationPlan& plan);

}  // namespace strideweave::storage
