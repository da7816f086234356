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

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/record.h"

namespace strideweave::autograd {

using operation::OperandSpec;
using operation::ResolvedInvocation;
using strideweave::detail::TensorAccess;

std::shared_ptr<Node> prepare_definition_node(std::shared_ptr<const ResolvedInvocation> invocation,
                                              std::span<const Tensor> results) {
  return NodeAccess::make_definition(std::move(invocation), results);
}

void attach_definition_node(const std::shared_ptr<Node>& node, std::span<const Tensor> results) noexcept {
  NodeAccess::attach_definition(node, results);
}

std::shared_ptr<Node> NodeAccess::make_definition(std::shared_ptr<const ResolvedInvocation> invocation,
                                                  std::span<const Tensor> results) {
  auto node = std::make_shared<Node>();
  const ResolvedInvocation& inv = *invocation;
  node->definition_ = true;
  node->name_ = inv.operation();
  node->plan_ = inv.plan();
  node->result_count_ = results.size();
  auto save = [&](const std::shared_ptr<Carrier>& c) {
    for (const Node::Saved& s : node->saved_)
      if (s.carrier == c) return;
    node->saved_.push_back(Node::Saved{c, 0});  // the version is taken at attach()
  };
  for (std::size_t i : inv.saved_operands()) {
    const Tensor& t = std::get<Tensor>(inv.operands()[i]);
    node->operands_.emplace_back(t.detach());
    save(t.carrier());
  }
  // The VJP reads the outputs too: a write into one after the call is
  // detected like a write into a saved operand.
  for (const Tensor& r : results) {
    node->outputs_.push_back(r.detach());
    save(r.carrier());
  }
  node->output_ = node->outputs_.front();
  const std::span<const OperandSpec> specs = inv.definition().schema().operands();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&inv.operands()[i]);
    const bool edge = specs[i].differentiable() && t && t->is_differentiable() && TensorAccess::impl(*t).tracks_grad();
    node->edges_.push_back(edge ? TensorAccess::shared(*t) : nullptr);
    node->needs_grad_.push_back(edge);
  }
  node->invocation_ = std::move(invocation);
  return node;
}

void NodeAccess::attach_definition(const std::shared_ptr<Node>& node, std::span<const Tensor> results) noexcept {
  for (Node::Saved& s : node->saved_) s.version = s.carrier->version();
  for (std::size_t r = 0; r < results.size(); ++r) {
    if (!results[r].is_differentiable()) continue;  // Int32/Bool results never carry a node
    strideweave::detail::TensorImpl& impl = TensorAccess::impl(results[r]);
    impl.grad_fn = node;
    impl.grad_output = static_cast<std::uint32_t>(r);
    impl.requires_grad = false;
  }
}

std::vector<std::optional<Tensor>> NodeAccess::apply_definition(const Node& node,
                                                                std::span<const std::optional<Tensor>> cotangents) {
  const ResolvedInvocation& inv = *node.invocation_;
  const std::string& name = node.name_;
  const auto& vjp = std::get<operation::VjpFn>(inv.definition().vjp());
  std::vector<Tensor> saved;
  saved.reserve(node.operands_.size());
  for (const KernelOperand& o : node.operands_) saved.push_back(std::get<Tensor>(o));
  const operation::VJPContext context(node.invocation_, node.outputs_, std::move(saved), {}, {}, node.needs_grad_);
  const std::vector<std::optional<Tensor>> returned = vjp(context, cotangents);

  // Validation, all before any gradient is used (operation-semantics.md):
  // one entry per differentiable schema operand, in operand order.
  const std::span<const OperandSpec> specs = inv.definition().schema().operands();
  std::vector<std::size_t> differentiable;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].differentiable()) differentiable.push_back(i);
  if (returned.size() != differentiable.size())
    throw ValueError(fmt::format("backward: the VJP of '{}' returned {} gradients; it must return one Tensor or None "
                                 "for each of its {} differentiable operands, in operand order",
                                 name, returned.size(), differentiable.size()));
  std::vector<std::optional<Tensor>> out(specs.size());
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
      if (node.needs_grad_[i]) out[i] = g.detach();  // a gradient nobody wants is dropped
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
    if (node.needs_grad_[i])
      out[i] = Tensor(operand->carrier()->new_like(g.values(), true, &DType::Float32()), 0,
                      Layout::compact(Shape::of(operand->shape().extents())));
  }
  return out;
}

}  // namespace strideweave::autograd
