// The built-in OperationDefinitions: one per registered operation name, each
// assembled from the operation's one front-end record (schema, traits,
// lowering) with the fields the front end cannot hold because they sit
// above it: the VJP (autograd) and the reference (the Generic carrier).
//
//   resolve    the record's lowering up to the kernel: the central plan (in
//              the call's operand order), the published result's dtype and
//              shape (compact), every Tensor operand saved when the
//              operation is differentiable.
//   VJP        the operation differentiated through the same lowering: the
//              forward is re-run under grad mode from detached operands, so
//              the kernel-level VJP (autograd's table) and the views the
//              lowering inserted (broadcasts, matmul's vector promotion)
//              carry the cotangent back to each operand's own shape. This
//              recomputes the forward once per backward; it is what keeps
//              one gradient mathematics for typed calls and definition calls.
//   reference  the same lowering executed on Generic, the executable
//              reference carrier, from copies of the operands.
#include "builtins/definitions.h"

#include <strideweave/autograd.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include "frontend/call_support.h"
#include "operation/registry.h"

namespace strideweave::builtins {
namespace {

using frontend::BuiltinEntry;
using operation::BoundOperationCall;
using operation::CallOperand;
using operation::OperandSpec;
using operation::ResolvedInvocation;

bool differentiable(const BuiltinEntry& e) {
  for (const OperandSpec& o : e.schema.operands())
    if (o.differentiable()) return true;
  return false;
}

operation::ResolveFn resolve_of(const BuiltinEntry* e) {
  const bool saves = differentiable(*e);
  return [e, saves](const BoundOperationCall& call) {
    const frontend::Lowered lowered = e->lower(call);
    std::vector<std::size_t> saved;
    if (saves)
      for (std::size_t i = 0; i < call.operands().size(); ++i)
        if (std::holds_alternative<Tensor>(call.operands()[i])) saved.push_back(i);
    std::vector<operation::ResultSpec> results{
        operation::ResultSpec::compact(lowered.plan.output(), lowered.published_shape())};
    return ResolvedInvocation(call, lowered.invocation_plan(), std::move(results), {}, std::move(saved), e->name);
  };
}

// Runs the lowering of `definition` on `operands` (rebound with the
// invocation's options) and returns the published result.
Tensor rerun(const BuiltinEntry& e, const ResolvedInvocation& invocation, std::vector<CallOperand> operands) {
  const std::shared_ptr<const BoundOperationCall> call =
      operation::bind(invocation.definition(), std::move(operands), invocation.options());
  return frontend::run_builtin_recorded(e, *call);
}

operation::VjpFn vjp_of(const BuiltinEntry* e) {
  return [e](const operation::VJPContext& context, std::span<const std::optional<Tensor>> cotangents) {
    const ResolvedInvocation& invocation = context.invocation();
    const std::span<const OperandSpec> specs = invocation.definition().schema().operands();
    std::vector<std::size_t> differentiable_operands;
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].differentiable()) differentiable_operands.push_back(i);
    std::vector<std::optional<Tensor>> out(differentiable_operands.size());
    if (cotangents.empty() || !cotangents[0]) return out;

    GradModeGuard recording(true);
    std::vector<CallOperand> operands(invocation.operands().begin(), invocation.operands().end());
    std::vector<Tensor> inputs;
    std::vector<std::size_t> slot_of_input;
    for (std::size_t d = 0; d < differentiable_operands.size(); ++d) {
      const std::size_t i = differentiable_operands[d];
      const Tensor* t = std::get_if<Tensor>(&operands[i]);
      if (!t || !context.needs_grad(i) || &t->dtype() != &DType::Float32()) continue;
      Tensor leaf = t->detach();
      leaf.set_requires_grad(true);
      operands[i] = leaf;
      inputs.push_back(std::move(leaf));
      slot_of_input.push_back(d);
    }
    if (inputs.empty()) return out;
    // On a definition-backed carrier the re-run goes through the built-in's
    // definition without its node and records the kernel-level node; the
    // kernel-level VJPs' typed calls reach the carrier through their
    // definitions (docs/extension.md).
    const Tensor y = rerun(*e, invocation, std::move(operands));
    std::vector<std::optional<Tensor>> grads = grad(y, inputs, cotangents[0]);
    for (std::size_t k = 0; k < grads.size(); ++k) out[slot_of_input[k]] = std::move(grads[k]);
    return out;
  };
}

operation::ReferenceFn reference_of(const BuiltinEntry* e) {
  return [e](const ResolvedInvocation& invocation) -> operation::ReferenceResult {
    NoGradGuard no_recording;
    std::vector<CallOperand> operands;
    for (const CallOperand& o : invocation.operands()) {
      const Tensor* t = std::get_if<Tensor>(&o);
      if (!t) {
        operands.push_back(o);
        continue;
      }
      const std::vector<Value> values = t->values();
      operands.emplace_back(Tensor(Generic::create(values, t->dtype()), 0,
                                   Layout::compact(Shape::of(t->shape().extents()))));
    }
    return rerun(*e, invocation, std::move(operands));
  };
}

}  // namespace

void register_builtin_definitions() {
  std::vector<std::shared_ptr<operation::OperationDefinition>> definitions;
  std::vector<std::string> reserved;
  for (const BuiltinEntry& e : frontend::builtin_entries()) {
    if (e.composite) {
      reserved.push_back(e.name);  // sort, topk: typed functions of two plans
      continue;
    }
    operation::VjpChoice vjp = operation::NON_DIFFERENTIABLE;
    if (differentiable(e)) {
      if (!autograd::find_vjp(e.name))
        throw RuntimeError(fmt::format("built-in '{}' declares differentiable operands but autograd has no VJP for it",
                                       e.name));
      vjp = vjp_of(&e);
    }
    definitions.push_back(operation::DefinitionAccess::make_builtin(e.name, e.schema, resolve_of(&e), reference_of(&e),
                                                                    std::move(vjp), e.traits));
  }
  operation::register_builtin_definitions(std::move(definitions), std::move(reserved));
}

}  // namespace strideweave::builtins
