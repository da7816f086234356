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
#include "execution/kernel_table.h"
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
// construction on, a callable VJP and a schema-differentiable operand that
// is a differentiable Tensor, no result that would receive the node may
// alias an operand. Atomic across results: checked before anything runs.
//
// Beyond the specification, with the same condition: a declared mutated
// operand that is differentiable is a RuntimeError, like a caller-provided
// output under grad mode: the node cannot record the overwrite, so the
// operand's history would be wrong.
void check_alias_rule(const ResolvedInvocation& invocation) {
  if (!graph_would_attach(invocation)) return;
  const OperationDefinition& d = invocation.definition();
  const std::span<const OperandSpec> specs = d.schema().operands();
  for (std::size_t r = 0; r < invocation.results().size(); ++r)
    if (const auto& alias = invocation.results()[r].alias_of();
        alias && &invocation.results()[r].dtype() == &DType::Float32())  // a result that would receive the node
      throw ValueError(fmt::format("{}: result {} aliases operand '{}' (alias_of={}) while grad mode is on and a "
                                   "differentiable operand takes part; a differentiable result must be fresh storage "
                                   "(run under no_grad(), or declare the operation NON_DIFFERENTIABLE)",
                                   d.name(), r, specs[*alias].name(), *alias));
  for (std::size_t i : invocation.mutated_operands())
    if (std::get<Tensor>(invocation.operands()[i]).is_differentiable())
      throw RuntimeError(fmt::format("{}: operand '{}' is declared mutated but is differentiable and grad mode is on; "
                                     "an in-place update cannot be recorded for autograd (run under no_grad())",
                                     d.name(), specs[i].name()));
}

}  // namespace

namespace {
// Beyond the one-class rule (docs/extension.md, "Operands of a composite's
// own operations"): for a user-defined operation, a definition-backed
// composite (a dependent class with a CompositeProvider) also takes operands
// on the exact class of a carrier it composes (one of its owned children, at
// the same placement), so a composite's own operation can take a Tensor of
// its compute tier beside its own (TiledEvictable's scatter). Built-in
// operations keep the one-class rule.
bool composed_by(const Carrier& composite, const Carrier& other) {
  const auto* dependent = dynamic_cast<const DependentCarrier*>(&composite);
  if (!dependent || !extension::carrier_definition(composite.exact_class())) return false;
  for (const std::shared_ptr<Carrier>& child : dependent->owned_children())
    if (child->exact_class() == other.exact_class() && child->placement() == other.placement()) return true;
  return false;
}
}  // namespace

const Carrier& dispatch_carrier(const ResolvedInvocation& invocation) {
  const Carrier* first = nullptr;
  for (const CallOperand& o : invocation.operands()) {
    const Tensor* t = std::get_if<Tensor>(&o);
    if (!t) continue;
    if (!first) {
      first = t->carrier().get();
    } else if (t->carrier().get() != first) {
      if (!invocation.definition().is_builtin() && composed_by(*first, *t->carrier())) continue;
      if (!(first->exact_class() == t->carrier()->exact_class()))
        throw TypeError(fmt::format("{}: operands live on different carrier classes ({} and {}); move one first",
                                    invocation.operation(), first->class_name(), t->carrier()->class_name()));
      require_same_placement(invocation.operation(), *first, *t->carrier());
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
                                        operation::OptionMap options, const Output& out,
                                        const std::shared_ptr<Operation>& target) {
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
    return {run(entry->lower(*call), out, CallRecord{CallInputs(call->operands()), target}, call.get())};
  }
  const std::shared_ptr<const ResolvedInvocation> invocation =
      admit(definition, std::move(operands), std::move(options));
  const Carrier& prototype = dispatch_carrier(*invocation);
  if (extension::detail::find_definition_fast(prototype.exact_class()))
    return execute_definition_backed(invocation, prototype, out, nullptr, target);
  if (kernel_table(prototype.exact_class())) {
    // Generic and CPU execute the built-in operations through their kernel
    // tables only (carrier-extension R13.2; operation-semantics: definition-free
    // Generic acquires no custom-operation patterns).
    storage::gate(prototype, invocation->plan());  // UnsupportedOperationPlan before any work
    throw UnsupportedOperationPlan(
        fmt::format("{} is a shipped definition-free carrier: it executes the built-in operations through its own "
                    "kernels and no user-defined operation such as '{}' (call it on a carrier whose kernel pattern or "
                    "dispatch hook implements it).",
                    prototype.class_name(), definition.name()),
        invocation->plan());
  }
  // A custom definition-free class computes through its dispatch hook
  // (carrier-extension R13.1), gated like any carrier.
  if (out)
    throw TypeError(fmt::format("{}: a caller-provided output is not supported for a user-defined operation on the "
                                "definition-free class {}",
                                definition.name(), prototype.class_name()));
  return execute_by_dispatch_hook(invocation, prototype, target);
}

std::shared_ptr<const operation::BoundOperationCall> bind_builtin(std::string_view name,
                                                                  std::vector<CallOperand> operands,
                                                                  operation::OptionMap options) {
  // A built-in name's definition is registered at bootstrap and never
  // replaced, so each thread keeps the last one it looked up (a typed
  // function called in a loop looks up one name) instead of hashing the
  // name under the registry's lock on every call.
  thread_local std::string last_name;
  thread_local const operation::OperationDefinition* last = nullptr;
  if (!last || name != last_name) {
    const std::shared_ptr<const OperationDefinition> found = operation::get_definition(name);
    if (!found->is_builtin())
      throw RuntimeError(fmt::format("bind_builtin: '{}' is not a built-in operation", name));
    last_name.assign(name);
    last = found.get();  // built-in records live as long as the registry (the process)
  }
  return operation::bind(*last, std::move(operands), std::move(options));
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

}  // namespace strideweave::frontend

namespace strideweave {

BuiltinKernelCall lower_builtin(const operation::ResolvedInvocation& invocation) {
  const OperationDefinition& definition = invocation.definition();
  const frontend::BuiltinEntry* entry = definition.is_builtin() ? frontend::find_builtin(definition.name()) : nullptr;
  if (!entry || !entry->lower)
    throw TypeError(fmt::format("lower_builtin: '{}' is not a built-in definition with one kernel plan",
                                definition.name()));
  frontend::Lowered lowered = entry->lower(invocation.call());
  OperationPlan plan = std::move(lowered.plan);
  return BuiltinKernelCall{std::move(plan), std::move(lowered.operands), std::move(lowered.attributes),
                           std::move(lowered.kernel_shape), std::move(lowered.squeeze)};
}

}  // namespace strideweave

namespace strideweave::frontend {

Tensor run_builtin(const BuiltinEntry& entry, const BoundCall& call) {
  Lowered lowered = entry.lower(call);
  const Carrier& prototype = *lowered.prototype;
  if (!prototype.exact_class().traits().storage_provider)
    return run(std::move(lowered), Output{}, CallRecord{CallInputs(call.operands()), nullptr}, &call);
  const auto invocation = std::make_shared<const ResolvedInvocation>(
      builtin_invocation(call, lowered.invocation_plan(), lowered.published_shape()));
  return run_definition_backed_without_node(invocation, prototype).front();
}

}  // namespace strideweave::frontend
