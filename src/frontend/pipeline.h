// Internal: the definition-backed half of the one dispatch pipeline
// (operation-semantics.md, carrier-extension R4, R6, R9, R11; docs/extension.md
// "The pipeline").
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/operation.h>

#include <vector>

namespace strideweave::frontend {

// Executes an admitted invocation (bound, resolved, live, alias rule
// checked) on the definition-backed carrier `prototype`: capability gate ->
// static pattern match -> candidates in preference order with runtime
// fallback -> prepare -> submit (once) -> wait -> publication validation
// (ProviderContractError naming the field) -> publication. A dependent
// carrier runs through its CompositeProvider instead of patterns. Nothing is
// published and no version advances on any failure.
std::vector<Tensor> run_definition_backed(const operation::ResolvedInvocation& invocation, const Carrier& prototype);

}  // namespace strideweave::frontend
