// strideweave/explain.h — what one call does, step by step (issue 11 step 8;
// `strideweave explain`, docs/cli.md).
//
// explain() runs one call of an OperationDefinition the way the dispatch
// pipeline does and records each step: the bound call, the resolved plan and
// result specs, the carrier class and the capability entry that admitted
// the plan, the route (a definition-free kernel table, kernel patterns, or a
// composite provider), every candidate kernel pattern in preference order
// with its outcome and rejection reason, and what ran. A failing step ends
// the record with the error's type and message instead of throwing; the
// steps before it stay filled in. The call's effects are the call's own (it
// really runs); nothing else is changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/operation.h>
#include <strideweave/placement.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

struct CandidateTrace {
  enum class Outcome : std::uint8_t { Ran, Declined, NotReached };
  std::string kernel_id;
  std::string source;  // "built-in" or a pack's "namespace@version"
  std::int64_t preference = 0;
  Outcome outcome = Outcome::NotReached;
  std::string reason;  // the Unsupported reason of a declined candidate
};
const char* name_of(CandidateTrace::Outcome outcome) noexcept;  // "ran", "declined", "not reached"

struct Explanation {
  std::string operation;
  std::string bound_call;                        // "add(a=tensor float32 (2) on CPU, b=...; option=value)"
  std::optional<OperationPlan> plan;             // after resolve
  std::vector<operation::ResultSpec> results;    // after resolve
  std::string carrier;                           // the dispatch carrier's class
  std::optional<Placement> placement;            // the dispatch carrier's placement (its operands share it)
  std::optional<OperationCapability> admitted_by;  // the capability entry that admitted the plan
  std::optional<ExecutionAxes> admitted_axes;      // the axes the carrier keeps beside that entry
  std::string route;                             // "kernel table", "kernel patterns", "composite provider"
  std::vector<CandidateTrace> candidates;        // kernel patterns, in preference order
  std::optional<std::string> ran;                // what executed: a kernel id, "kernel table", "composite provider"
  std::vector<Tensor> outputs;
  std::optional<std::string> error_type;         // "UnsupportedOperationPlan", "TypeError", ...
  std::optional<std::string> error_message;
};

// Explains (and runs) one call; see above. Never throws a strideweave::Error
// (it is recorded); std::bad_alloc and non-library exceptions propagate.
Explanation explain(const operation::OperationDefinition& definition, std::vector<operation::CallOperand> operands,
                    operation::OptionMap options = {});

// The record as text, one step per line (what `strideweave explain` prints).
std::string to_text(const Explanation& explanation);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
