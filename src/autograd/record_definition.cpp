// Definition nodes: autograd through OperationDefinitions
// (operation-semantics.md, "Automatic differentiation belongs to the
// semantic definition"; docs/autograd.md, "Definition nodes").
//
// The definition-backed pipeline (src/frontend/pipeline.cpp) asks for a node
// after publication validation and before publication
// (prepare_definition_node: everything that can fail), publishes, and then
// attaches it (attach_definition_node: cannot fail). So a failure anywhere
// leaves no node attached, and the saved versions are the published ones.
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/record.h"
#include "storage/ranges.h"

namespace strideweave::autograd {

using operation::OperandSpec;
using operation::ResolvedInvocation;
using strideweave::detail::TensorAccess;

namespace {
// The exact class the call dispatched on: its first Tensor operand's (a
// call without one has none; its first result's class stands in).
CarrierClass dispatch_class_of(const ResolvedInvocation& invocation, std::span<const Tensor> results) {
  for (const operation::CallOperand& o : invocation.operands())
    if (const Tensor* t = std::get_if<Tensor>(&o)) return t->carrier_type();
  return results.front().carrier_type();
}

// A gradient copied onto its operand's exact class (from a result's class)
// keeps the operand's offset and Layout when the operand covers its whole
// carrier injectively (a TiledEvictable full Tensor, whose Layout fixes its
// tile footprints: carrier-composition B2, B5); otherwise (a view of part
// of a carrier) the compact layout of its shape, in just its own slots.
Tensor on_operand_class(const Tensor& operand, const Tensor& g) {
  const std::vector<Value> values = g.values();  // logical order
  const Layout& layout = operand.layout();
  if (layout.size() > 0 && operand.offset() + layout.cosize() == operand.carrier()->size() && layout.is_injective()) {
    std::vector<Value> slots(static_cast<std::size_t>(operand.offset() + layout.cosize()), Value::from_float32(0.0f));
    strideweave::detail::for_each_run(layout, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      std::copy_n(values.begin() + ordinal, length, slots.begin() + operand.offset() + index);
    });
    return Tensor(operand.carrier()->new_like(slots, true, &DType::Float32()), operand.offset(), layout);
  }
  return Tensor(operand.carrier()->new_like(values, true, &DType::Float32()), 0,
                Layout::compact(Shape::of(operand.shape().extents())));
}
}  // namespace

std::shared_ptr<Operation> prepare_definition_node(std::shared_ptr<const ResolvedInvocation> invocation,
                                                   std::span<const Tensor> results,
                                                   const std::shared_ptr<Operation>& target) {
  return OperationAccess::make_definition(std::move(invocation), results, target);
}

void attach_definition_node(const std::shared_ptr<Operation>& node, std::span<const Tensor> results) noexcept {
  OperationAccess::attach_definition(node, results);
}

std::shared_ptr<Operation> OperationAccess::make_definition(std::shared_ptr<const ResolvedInvocation> invocation,
                                                            std::span<const Tensor> results,
                                                            const std::shared_ptr<Operation>& target) {
  // Everything is built on a fresh Operation first and moved into `target`
  // only when nothing else can fail, so a failure leaves `target` as it was.
  auto node = std::make_shared<Operation>();
  const ResolvedInvocation& inv = *invocation;
  node->kind_ = Operation::Kind::definition;
  node->plan_ = inv.plan();
  node->result_count_ = results.size();
  // core-concepts 6.2: every positional Tensor argument, per occurrence;
  // their versions are taken at attach(), after publication. Each list is
  // reserved at its final length (the node's buffer is monotonic).
  const auto tensors = static_cast<std::size_t>(std::count_if(
      inv.operands().begin(), inv.operands().end(), [](const auto& o) { return std::holds_alternative<Tensor>(o); }));
  node->inputs_.reserve(tensors);
  node->versions_.reserve(tensors + results.size());
  node->outputs_.reserve(results.size());
  for (const operation::CallOperand& o : inv.operands())
    if (const Tensor* t = std::get_if<Tensor>(&o)) {
      node->inputs_.push_back(*t);
      node->versions_.push_back(CarrierVersion{t->carrier(), 0});
    }
  // operation-semantics: exactly the declared saved operands, for the VJP.
  for (std::size_t i : inv.saved_operands()) node->saved_operands_.push_back(std::get<Tensor>(inv.operands()[i]).detach());
  // The VJP reads the outputs too: a write into one after the call is
  // detected like a write into a saved input.
  for (const Tensor& r : results) {
    node->outputs_.push_back(r.detach());
    node->versions_.push_back(CarrierVersion{r.carrier(), 0});
  }
  node->invocation_ = std::move(invocation);
  if (!target) {
    set_metadata(*node, inv.operation(), dispatch_class_of(inv, results));
    return node;
  }
  // The target's lists use its own memory: moving into them copies the
  // elements, so they are reserved first (the one step that can fail), and
  // the moves below then neither allocate nor throw.
  Operation& t = *target;
  t.inputs_.reserve(node->inputs_.size());
  t.versions_.reserve(node->versions_.size());
  t.outputs_.reserve(node->outputs_.size());
  t.kind_ = node->kind_;
  t.plan_ = std::move(node->plan_);
  t.result_count_ = node->result_count_;
  t.inputs_ = std::move(node->inputs_);
  t.versions_ = std::move(node->versions_);
  t.saved_operands_ = std::move(node->saved_operands_);
  t.outputs_ = std::move(node->outputs_);
  t.invocation_ = std::move(node->invocation_);
  return target;
}

void OperationAccess::attach_definition(const std::shared_ptr<Operation>& node, std::span<const Tensor> results) noexcept {
  for (CarrierVersion& v : node->versions_) v.version = v.carrier->version();
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].is_differentiable()) continue;  // Int32/Bool results never carry a node
    strideweave::detail::TensorImpl& impl = TensorAccess::impl(results[r]);
    impl.grad_fn = node;
    impl.grad_output = static_cast<std::uint32_t>(r);
  }
}

std::vector<std::optional<Tensor>> OperationAccess::apply_definition(
    const Operation& node, std::span<const std::optional<Tensor>> cotangents) {
  const ResolvedInvocation& inv = *node.invocation_;
  const std::string& name = node.name();
  const auto& vjp = std::get<operation::VjpFn>(inv.definition().vjp());
  const std::span<const OperandSpec> specs = inv.definition().schema().operands();
  // A gradient is wanted for a schema-differentiable operand that is a
  // differentiable Tensor (every such operand is an edge).
  std::vector<bool> needs_grad(specs.size(), false);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&inv.operands()[i]);
    needs_grad[i] = specs[i].differentiable() && t && t->is_differentiable();
  }
  const operation::VJPContext context(node.invocation_, std::vector<Tensor>(node.outputs_.begin(), node.outputs_.end()),
                                      node.saved_operands_, {}, {}, needs_grad);
  // A composite that executed the call may run its backward its own way
  // (CompositeProvider::backward: the same VJP, decomposed as the forward
  // was); its return is validated below like the VJP's.
  const Tensor* dispatch_operand = nullptr;  // the first Tensor operand: its class dispatched the call
  for (const operation::CallOperand& o : inv.operands())
    if ((dispatch_operand = std::get_if<Tensor>(&o))) break;
  const std::shared_ptr<const extension::CarrierDefinition> definition =
      dispatch_operand ? extension::carrier_definition(dispatch_operand->carrier_type()) : nullptr;
  const bool composite_backward = definition && definition->composite() && definition->composite()->backward();
  const std::vector<std::optional<Tensor>> returned =
      composite_backward ? definition->composite()->backward()(*dispatch_operand->carrier(), context, cotangents)
                         : vjp(context, cotangents);

  // Validation, all before any gradient is used (operation-semantics.md):
  // one entry per differentiable schema operand, in operand order.
  std::vector<std::size_t> differentiable;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].differentiable()) differentiable.push_back(i);
  if (returned.size() != differentiable.size())
    throw ValueError(fmt::format("backward: the VJP of '{}' returned {} gradients; it must return one Tensor or None "
                                 "for each of its {} differentiable operands, in operand order",
                                 name, returned.size(), differentiable.size()));
  // The result is one entry per input (positional Tensor operand).
  std::vector<std::size_t> input_of(specs.size(), 0);
  for (std::size_t i = 0, k = 0; i < specs.size(); ++i)
    if (std::holds_alternative<Tensor>(inv.operands()[i])) input_of[i] = k++;
  std::vector<std::optional<Tensor>> out(node.inputs_.size());
  for (std::size_t d = 0; d < returned.size(); ++d) {
    if (!returned[d]) continue;
    const std::size_t i = differentiable[d];
    const Tensor& g = *returned[d];
    const Tensor* operand = std::get_if<Tensor>(&inv.operands()[i]);
    if (!operand)
      throw ValueError(fmt::format("backward: the VJP of '{}' returned a gradient for operand '{}', which this call "
                                   "passed as a weak scalar (its gradient must be None)",
                                   name, specs[i].name()));
    if (!g.is_differentiable())
      throw TypeError(fmt::format("backward: the VJP of '{}' returned a {} gradient for operand '{}'; gradients are "
                                  "Float32",
                                  name, g.dtype().name(), specs[i].name()));
    if (!std::ranges::equal(g.shape().extents(), operand->shape().extents()))
      throw ValueError(fmt::format("backward: the VJP of '{}' returned a gradient of shape {} for operand '{}' of "
                                   "shape {}",
                                   name, g.shape().to_string(), specs[i].name(), operand->shape().to_string()));
    g.carrier()->require_live("backward: a gradient returned by a VJP");
    if (g.carrier_type() == operand->carrier_type()) {
      if (needs_grad[i]) out[input_of[i]] = g.detach();  // a gradient nobody wants is dropped
      continue;
    }
    // A composite call publishes its results on other classes than its
    // operands' (CompositeProvider::result_carriers), so a VJP computing from
    // the cotangents naturally returns gradients there: a gradient on the
    // class of one of the call's results is copied into fresh storage of the
    // operand's class. Any other class is a TypeError.
    const bool result_class = std::any_of(node.outputs_.begin(), node.outputs_.end(),
                                          [&](const Tensor& r) { return r.carrier_type() == g.carrier_type(); });
    if (!result_class)
      throw TypeError(fmt::format("backward: the VJP of '{}' returned a gradient on {} for operand '{}' on {}; a "
                                  "gradient lives on its operand's exact carrier class (or on a result's class)",
                                  name, g.carrier()->class_name(), specs[i].name(), operand->carrier()->class_name()));
    if (needs_grad[i]) out[input_of[i]] = on_operand_class(*operand, g);
  }
  return out;
}

}  // namespace strideweave::autograd
