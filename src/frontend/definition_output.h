// Internal: a caller-provided output (`out`) for a call that the
// definition-backed pipeline executes (docs/extension.md, "Caller-provided
// outputs on definition-backed carriers").
#pragma once

#include <strideweave/operation.h>
#include <strideweave/output.h>

namespace strideweave::frontend {

// Before any provider callback: the invocation has one result; `out` lives
// on the prototype's exact class (TypeError), is writable, has the result's
// dtype (TypeError) and exactly its shape (ValueError), an injective layout
// (ValueError) and a carrier no Tensor operand uses (ValueError); a call that
// would build a graph (`graph`) is a RuntimeError, as for a built-in on CPU.
void admit_definition_output(const operation::ResolvedInvocation& invocation, const Carrier& prototype,
                             const Output& out, bool graph);

// After publication validation: the result's elements, in logical order,
// written into `out` (added to its elements under OutputMode::Accumulate,
// with Int32 overflow an OverflowError before anything is written) in one
// versioned bulk write. Returns `out`'s tensor. If the storage provider's
// write callback fails part way, the old elements are written back (one
// more version step) before the provider's error propagates.
Tensor write_definition_output(const operation::ResolvedInvocation& invocation, const Tensor& result,
                               const Output& out);

}  // namespace strideweave::frontend
