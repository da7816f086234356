// Internal: the definition-backed half of the one dispatch pipeline
// (operation-semantics.md, carrier-extension R4, R6, R9, R11; docs/extension.md
// "The pipeline").
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/explain.h>
#include <strideweave/operation.h>
#include <strideweave/output.h>

#include <vector>

namespace strideweave::storage {
struct Admission;  // storage/gate.h
}

namespace strideweave::frontend {

// Executes an admitted invocation (bound, resolved, live, alias rule
// checked) on the definition-backed carrier `prototype`: capability gate ->
// static pattern match -> candidates in preference order with runtime
// fallback -> prepare -> submit (once) -> wait -> publication validation
// (ProviderContractError naming the field) -> publication. A dependent
// carrier runs through its CompositeProvider instead of patterns. Nothing is
// published and no version advances on any failure.
//
// Every provider callback runs with graph construction disabled, and from
// the first one until publication the operands' carriers are guarded
// (docs/extension.md, "Providers run without a graph", "Provider writes to
// operands"): a public write to a carrier no declared mutation covers is
// refused (ProviderContractError "mutation"), one to a declared mutated
// carrier is logged un-versioned and written back if the call fails; a
// declared mutation advances the version exactly once, at publication.
//
// `trace` (explain()): when given, receives the route, every matched
// candidate with its outcome, and what ran.
struct PipelineTrace {
  std::string route;
  std::vector<CandidateTrace> candidates;
  std::optional<std::string> ran;
};
//
// Autograd (operation-semantics.md, "Automatic differentiation belongs to
// the semantic definition"): when graph_would_attach holds at entry, one
// node for the call is built after publication validation and attached to
// every Float32 result after publication (src/autograd/record_definition.cpp,
// through the bootstrap's hooks); a failure anywhere attaches nothing.
std::vector<Tensor> run_definition_backed(const std::shared_ptr<const operation::ResolvedInvocation>& invocation,
                                          const Carrier& prototype, PipelineTrace* trace = nullptr);

// Internal, for opcheck (docs/opcheck.md) and tests only: while a
// PinnedKernelPattern lives on the current thread, an independent
// definition-backed call considers only the candidate whose kernel id is
// `kernel_id` (kernel ids are unique within a class's set, R10.2): the
// others are skipped as if absent, so one pattern runs alone, with the
// static match, prepare, submit, wait and publication validation unchanged.
// When the pinned pattern does not match the plan statically, the call is
// UnsupportedOperationPlan before any prepare; when it declines, the combined
// reason names only it. Scopes nest (the innermost wins); other threads are
// unaffected. Not part of the public API.
class PinnedKernelPattern {
 public:
  explicit PinnedKernelPattern(const std::string& kernel_id) noexcept;
  ~PinnedKernelPattern();
  PinnedKernelPattern(const PinnedKernelPattern&) = delete;
  PinnedKernelPattern& operator=(const PinnedKernelPattern&) = delete;
  // The pinned kernel id of this thread, or null.
  static const std::string* current() noexcept;

 private:
  const std::string* previous_;
};

// Whether the call would attach a graph node (core-concepts 6.2): graph
// construction on, a callable VJP, some result of dtype exactly Float32, and
// a schema-differentiable operand that is a differentiable Tensor.
bool graph_would_attach(const operation::ResolvedInvocation& invocation);

// The gate, then the pipeline as run_definition_backed. With a
// caller-provided output (definition_output.h): the output is admitted
// before any provider callback, the call builds no graph, and after
// publication validation the result is written into `out`, which is the
// one result returned.
std::vector<Tensor> execute_definition_backed(const std::shared_ptr<const operation::ResolvedInvocation>& invocation,
                                              const Carrier& prototype, const Output& out,
                                              PipelineTrace* trace = nullptr,
                                              const std::shared_ptr<Operation>& target = nullptr);
// A user-defined operation on a custom definition-free class
// (carrier-extension R13.1): the gate, then the result storage allocated on
// the class (an aliased result is the operand), then the class's dispatch
// hook computes it (Operation::_forward; `target` when dispatch_op already
// asked the hook), then the same publication validation and publication as
// a kernel pattern's result. The hook's Operation is the call's node. A
// hook without an implementation is UnsupportedOperationPlan.
std::vector<Tensor> execute_by_dispatch_hook(const std::shared_ptr<const operation::ResolvedInvocation>& invocation,
                                             const Carrier& prototype, const std::shared_ptr<Operation>& target);

// The resolved invocation of a built-in call from its lowering (the
// built-in definitions' resolve step, src/builtins/definitions.cpp): the
// call's plan in its operand order, one compact result of the plan's output
// dtype and the published shape, every Tensor operand saved when the
// schema has a differentiable operand, kernel id = the name.
operation::ResolvedInvocation builtin_invocation(const operation::BoundOperationCall& call,
                                                 const OperationPlan& invocation_plan, const Shape& published);

// A built-in call whose lowering the gate admitted on a definition-backed
// carrier (its dispatch record's executor: kernel patterns or a composite
// provider): builtin_invocation, then the pipeline as
// execute_definition_backed without a second gate.
Tensor run_builtin_on_definition(const operation::BoundOperationCall& call, const OperationPlan& invocation_plan,
                                 const Shape& published, const Carrier& prototype, const storage::Admission& admission,
                                 const Output& out, const std::shared_ptr<Operation>& target);

// The built-in VJPs' forward re-run (src/builtins/definitions.cpp) on a
// definition-backed carrier: the built-in's definition through the pipeline
// WITHOUT its definition node (that node's VJP is what is running); the
// caller records the kernel-level node, as execute() does on a kernel table.
std::vector<Tensor> run_definition_backed_without_node(
    const std::shared_ptr<const operation::ResolvedInvocation>& invocation, const Carrier& prototype);

}  // namespace strideweave::frontend
