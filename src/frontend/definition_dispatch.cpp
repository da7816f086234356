// The dispatch of an OperationDefinition call (operation-semantics.md;
// docs/operations.md, "One dispatch pipeline"): bind -> resolve ->
// released-state check -> the exact-object alias rule -> capability gate ->
// execution. Nothing is allocated, published or recorded before the gate.
#include "frontend/definition_dispatch.h"

#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include "frontend/autograd_hooks.h"
#include "frontend/call_support.h"
#include "frontend/dispatch.h"
#include "extension/registry.h"
#include "frontend/pipeline.h"
#include "storage/gate.h"
#include "storage/tensor_impl.h"

namespace strideweave::frontend {

using operation::CallOperand;
using operation::OperandSpec;
using operation::OperationDefinition;
using operation::ResolvedInvocation;

namespace {

// The exact-object alias rule (operation-semantics.md, "Automatic
// differentiation belongs to the semantic definition"): with graph
// construction on, a callable VJP and a differentiable Tensor operand that
// requires grad, no result that would receive the node may alias an
// operand. Atomic across results: checked before anything runs.
//
// Beyond the specification, with the same condition: a declared mutated
// operand that tracks gradients (requires grad or has a grad_fn) is a
// RuntimeError, like a caller-provided output under grad mode: the node
// cannot record the overwrite, so the operand's history would be wrong.
void check_alias_rule(const ResolvedInvocation& invocation) {
  if (!graph_would_attach(invocation)) return;
  const OperationDefinition& d = invocation.definition();
  const std::span<const OperandSpec> specs = d.schema().operands();
  for (std::size_t r = 0; r < invocation.results().size(); ++r)
    if (const auto& alias = invocation.results()[r].alias_of();
        alias && &invocation.results()[r].dtype() == &DType::Float32())  // a result that would receive the node
      throw ValueError(fmt::format("{}: result {} aliases operand '{}' (alias_of={}) while a differentiable operand "
                                   "requires grad; a differentiable result must be fresh storage (run under no_grad(), "
                                   "or declare the operation NON_DIFFERENTIABLE)",
                                   d.name(), r, specs[*alias].name(), *alias));
  for (std::size_t i : invocation.mutated_operands())
    if (std::get<Tensor>(invocation.operands()[i]).requires_grad())
      throw RuntimeError(fmt::format("{}: operand '{}' is declared mutated but requires grad; an in-place update of a "
                                     "tensor that tracks gradients cannot be recorded (run under no_grad(), or "
                                     "detach() it first)",
                                     d.name(), specs[i].name()));
}

}  // namespace

const Carrier& dispatch_carrier(const ResolvedInvocation& invocation) {
  const Carrier* first = nullptr;
  for (const CallOperand& o : invocation.operands()) {
    const Tensor* t = std::get_if<Tensor>(&o);
    if (!t) continue;
    if (!first) {
      first = t->carrier().get();
    } else if (!(first->exact_class() == t->carrier()->exact_class())) {
      throw TypeError(fmt::format("{}: operands live on different carrier classes ({} and {}); move one first",
                                  invocation.operation(), first->class_name(), t->carrier()->class_name()));
    }
  }
  if (!first)
    throw TypeError(fmt::format("{}: a call without a Tensor operand has no carrier to dispatch on",
                                invocation.operation()));
  return *first;
}

std::shared_ptr<const ResolvedInvocation> admit(const OperationDefinition& definition,
                                                std::vector<CallOperand> operands, operation::OptionMap options) {
  std::shared_ptr<const ResolvedInvocation> invocation =
      operation::resolve_call(definition, std::move(operands), std::move(options));
  for (const CallOperand& o : invocation->operands())
    if (const Tensor* t = std::get_if<Tensor>(&o)) t->carrier()->require_live(definition.name().c_str());
  // A declared mutation needs a publicly mutable operand: refused before any
  // provider work, not after it wrote.
  for (std::size_t i : invocation->mutated_operands())
    std::get<Tensor>(invocation->operands()[i]).carrier()->require_writable(definition.name().c_str());
  check_alias_rule(*invocation);
  return invocation;
}

std::vector<Tensor> dispatch_definition(const OperationDefinition& definition, std::vector<CallOperand> operands,
                                        operation::OptionMap options, const Output& out) {
  // A built-in definition's resolve step is its record's lowering: bind,
  // then lower once and run that (the gate is execute()'s first step). The
  // lowering's carrier step refuses released operands, and a built-in
  // result is always fresh storage, so admit()'s two checks hold already.
  if (definition.is_builtin()) {
    const BuiltinEntry* entry = find_builtin(definition.name());
    if (!entry || !entry->lower)
      throw RuntimeError(fmt::format("{}: a built-in definition without a front-end record", definition.name()));
    const std::shared_ptr<const operation::BoundOperationCall> call =
        operation::bind(definition, std::move(operands), std::move(options));
    if (const Carrier* prototype = definition_backed_prototype(*call))
      return {run_builtin_definition_backed(*call, *prototype, out).result};
    return {run(entry->lower(*call), out)};
  }
  const std::shared_ptr<const ResolvedInvocation> invocation =
      admit(definition, std::move(operands), std::move(options));
  const Carrier& prototype = dispatch_carrier(*invocation);
  if (extension::detail::find_definition_fast(prototype.exact_class()))
    return execute_definition_backed(invocation, prototype, out);
  storage::gate(prototype, invocation->plan());  // UnsupportedOperationPlan before any work
  (void)out;
  // A definition-free carrier executes built-in operations through its
  // kernel table only (carrier-extension R13); a user-defined operation
  // needs a definition-backed carrier's kernel pattern.
  throw NotImplementedError(fmt::format("{}: {} is a definition-free carrier and runs no kernel for the user-defined "
                                        "operation '{}' (its capability declaration names the plan, but only a "
                                        "definition-backed carrier's kernel pattern can execute it)",
                                        definition.name(), prototype.class_name(), definition.name()));
}

Tensor call_builtin_definition(std::string_view name, std::vector<CallOperand> operands, operation::OptionMap options,
                               const Output& out) {
  const std::shared_ptr<const OperationDefinition> definition = operation::get_definition(name);
  return std::move(dispatch_definition(*definition, std::move(operands), std::move(options), out).front());
}

operation::OptionMap execution_option_map(const std::optional<OperationExecutionOptions>& options) {
  operation::OptionMap out;
  if (!options) return out;
  if (const DType* accumulator = options->accumulator_dtype()) out.emplace("accumulator_dtype", accumulator);
  if (const std::optional<Arithmetic> arithmetic = options->arithmetic())
    out.emplace("arithmetic", std::string(value_of(*arithmetic)));
  return out;
}

Tensor run_builtin_recorded(const BuiltinEntry& entry, const BoundCall& call) {
  Lowered lowered = entry.lower(call);
  const Carrier& prototype = *lowered.prototype;
  if (!prototype.exact_class().traits().storage_provider ||
      !extension::detail::find_definition_fast(prototype.exact_class()))
    return run(std::move(lowered), Output{});
  const auto invocation = std::make_shared<const ResolvedInvocation>(call.definition().resolve()(call));
  const Tensor published = run_definition_backed_without_node(invocation, prototype).front();
  // The published result is compact (the built-in's ResultSpec), so the
  // kernel-shaped result (extent-1 axes the lowering squeezes away) is the
  // same storage in its compact layout.
  const Tensor kernel_result =
      lowered.squeeze.empty() ? published
                              : Tensor(published.carrier(), published.offset(), Layout::compact(lowered.kernel_shape));
  autograd_hooks().record_operation(lowered.plan, lowered.operands, lowered.attributes, kernel_result);
  if (lowered.squeeze.empty()) return kernel_result;
  return kernel_result.squeeze(lowered.squeeze);
}

}  // namespace strideweave::frontend
