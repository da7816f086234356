// The built-in OperationDefinitions: one per registered operation name, each
// assembled from the operation's one front-end record (schema, traits,
// lowering) with the fields the front end cannot hold because they sit
// above it: the VJP (autograd) and the reference (the Generic carrier).
//
//   resolve    the record's lowering up to the kernel: the central plan (in
//              the call's operand order), the published result's dtype and
//              shape (compact), every Tensor operand saved when the
//              operation is differentiable.
//   VJP        the operation differentiated through the same lowering, from
//              the saved context alone: the lowering (resolution and views,
//              no kernel) over the saved operands gives the kernel operands,
//              autograd's kernel-level VJP differentiates them against the
//              published result, and the lowering's views (broadcasts,
//              matmul's vector promotion) carry each gradient back to its
//              operand's shape. No forward provider runs again; typed calls
//              and definition calls share one gradient mathematics.
//   reference  the same lowering executed on Generic, the executable
//              reference carrier, from copies of the operands.
#include "builtins/definitions.h"

#include <strideweave/autograd.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"
#include "frontend/call_support.h"
#include "frontend/pipeline.h"
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
  return [e](const BoundOperationCall& call) {
    const frontend::Lowered lowered = e->lower(call);
    return frontend::builtin_invocation(call, lowered.invocation_plan(), lowered.published_shape());
  };
}

// Runs the lowering of `definition` on `operands` (rebound with the
// invocation's options) and returns the published result.
Tensor rerun(const BuiltinEntry& e, const ResolvedInvocation& invocation, std::vector<CallOperand> operands) {
  const std::shared_ptr<const BoundOperationCall> call =
      operation::bind(invocation.definition(), std::move(operands), invocation.options());
  return frontend::run_builtin(e, *call);
}

// `t`'s values in fresh compact storage of `like`'s class.
Tensor relocated(const Tensor& t, const Tensor& like) {
  return Tensor(like.carrier()->new_like(t.values(), true, &t.dtype()), 0,
                Layout::compact(Shape::of(t.shape().extents())));
}

// The VJP of a built-in definition, computed from the saved context alone
// (operation-semantics.md: the VJP receives the saved operands and the
// published outputs; nothing of the forward runs again, so no provider is
// asked twice). The call is lowered once more over the saved operands -
// resolution and views only, no kernel, no allocation - which gives the
// kernel operands the forward's kernel received; autograd's kernel-level
// VJP then differentiates them against the published result, and the
// views the lowering made (broadcasts, matmul's vector promotion) carry each
// gradient back to its operand's shape. When the results live on another
// class than the operands (a composite's result_carriers), the saved
// operands are first copied to the results' class, where the VJP computes;
// the gradients go back to the operands' class in apply_definition.
operation::VjpFn vjp_of(const BuiltinEntry* e) {
  return [e](const operation::VJPContext& context, std::span<const std::optional<Tensor>> cotangents) {
    const ResolvedInvocation& invocation = context.invocation();
    const std::span<const OperandSpec> specs = invocation.definition().schema().operands();
    std::vector<std::size_t> differentiable_operands;
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].differentiable()) differentiable_operands.push_back(i);
    std::vector<std::optional<Tensor>> out(differentiable_operands.size());
    if (cotangents.empty() || !cotangents[0]) return out;
    const Tensor& published = context.outputs()[0];

    // The operands as saved (resolve saves every Tensor operand of a
    // differentiable built-in), in schema order.
    std::vector<CallOperand> operands(invocation.operands().begin(), invocation.operands().end());
    std::size_t saved = 0;
    for (CallOperand& o : operands)
      if (std::holds_alternative<Tensor>(o)) {
        const Tensor& t = context.saved_operands()[saved++];
        o = t.carrier_type() == published.carrier_type() ? t : relocated(t, published);
      }
    std::vector<bool> wanted;  // per Tensor operand (the lowering's inputs)
    for (std::size_t i = 0; i < operands.size(); ++i)
      if (std::holds_alternative<Tensor>(operands[i])) wanted.push_back(context.needs_grad(i));
    const std::shared_ptr<const BoundOperationCall> call =
        operation::bind(invocation.definition(), operands, invocation.options());
    // With grad mode on, the lowering's views record their own Operations,
    // which is how each kernel operand is traced back to its operand.
    frontend::Lowered lowered = [&] {
      GradModeGuard views_record(true);
      return e->lower(*call);
    }();
    const frontend::CallInputs inputs(call->operands());
    std::vector<std::int32_t> operand_input;
    std::vector<std::vector<std::shared_ptr<Operation>>> operand_views;
    autograd::OperationAccess::map_operands_to_inputs(lowered.operands, inputs.span(), operand_input, operand_views);
    const autograd::VjpFn* vjp = autograd::find_vjp(e->name);
    if (!vjp) throw NotImplementedError(fmt::format("backward: the derivative of '{}' is not implemented", e->name));
    const bool squeezed = !lowered.squeeze.empty();
    const Tensor kernel_output = squeezed ? autograd::reshape_to(published, lowered.kernel_shape) : published;
    const Tensor cotangent = squeezed ? autograd::reshape_to(*cotangents[0], lowered.kernel_shape) : *cotangents[0];
    const std::vector<std::optional<Tensor>> grads =
        autograd::kernel_backward(*vjp, e->name, lowered.plan, lowered.attributes, lowered.operands, operand_input,
                                  operand_views, kernel_output, cotangent, wanted.size(), wanted);
    // Per Tensor operand -> per differentiable schema operand.
    std::size_t input = 0;
    for (std::size_t i = 0, d = 0; i < operands.size(); ++i) {
      const bool is_tensor = std::holds_alternative<Tensor>(operands[i]);
      if (specs[i].differentiable()) {
        if (is_tensor) out[d] = grads[input];
        ++d;
      }
      if (is_tensor) ++input;
    }
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
