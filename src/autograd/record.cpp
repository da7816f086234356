// Recording: grad mode, operation nodes (the dispatch hook) and view nodes
// (the core view hook). See docs/autograd.md, "Recording".
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/graph.h"
#include "autograd/record.h"

namespace strideweave {

namespace {
thread_local bool grad_enabled = true;
}  // namespace

bool is_grad_enabled() noexcept { return grad_enabled; }
void set_grad_enabled(bool enabled) noexcept { grad_enabled = enabled; }

namespace autograd {
namespace {

using strideweave::detail::TensorAccess;

bool tracks(const Tensor& t) noexcept { return TensorAccess::impl(t).tracks_grad(); }

// Grad mode on, exactly Float32 out, and an operand that requires grad.
bool would_record(const OperationPlan& plan, std::span<const KernelOperand> operands) noexcept {
  if (!grad_enabled || !plan.output_differentiable()) return false;
  return std::any_of(operands.begin(), operands.end(), [](const KernelOperand& o) {
    const Tensor* t = std::get_if<Tensor>(&o);
    return t && tracks(*t);
  });
}

void attach(const Tensor& result, std::shared_ptr<Node> node) {
  strideweave::detail::TensorImpl& impl = TensorAccess::impl(result);
  impl.grad_fn = std::move(node);
  impl.requires_grad = false;
}

const char* view_name(strideweave::detail::ViewKind kind) noexcept {
  using K = strideweave::detail::ViewKind;
  switch (kind) {
    case K::permute: return "permute";
    case K::slice: return "slice";
    case K::reshape: return "reshape";
    case K::squeeze: return "squeeze";
    case K::unsqueeze: return "unsqueeze";
    case K::broadcast_to: return "broadcast_to";
    case K::as_strided: return "as_strided";
  }
  return "view";
}

// as_strided: for each element of `view` (logical order), the logical
// ordinal of the source element stored in the same carrier slot (the first
// one when the source aliases a slot); nullopt when a view element lies
// outside the source's elements or an ordinal does not fit Int32.
std::optional<std::vector<std::int64_t>> source_ordinals(const Tensor& source, const Tensor& view) {
  if (source.size() > INT32_MAX_VALUE) return std::nullopt;
  std::unordered_map<std::int64_t, std::int64_t> slot_to_ordinal;
  for (std::int64_t k = source.size() - 1; k >= 0; --k) slot_to_ordinal[source.offset() + source.layout()(k)] = k;
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(view.size()));
  for (std::int64_t j = 0; j < view.size(); ++j) {
    const auto it = slot_to_ordinal.find(view.offset() + view.layout()(j));
    if (it == slot_to_ordinal.end()) return std::nullopt;
    out.push_back(it->second);
  }
  return out;
}

// The core view hook: a view of a gradient-tracking source gets a view node
// whose only operand is the source. Parameters become Attributes: permute
// -> "perm"; slice -> "axis", "start" (normalised as the Layout did) and
// "step" (the view's extent gives the length); as_strided -> "ordinals".
void on_view(const Tensor& source, const Tensor& view, strideweave::detail::ViewKind kind,
             std::span<const std::int64_t> params) {
  if (!grad_enabled || !source.is_differentiable()) return;
  Attributes attributes;
  using K = strideweave::detail::ViewKind;
  if (kind == K::permute) {
    attributes.set("perm", std::vector<std::int64_t>(params.begin(), params.end()));
  } else if (kind == K::slice) {
    const std::int64_t axis = normalize_axis(params[0], source.rank(), "slice");
    const std::int64_t n = source.shape().extent(static_cast<std::size_t>(axis));
    auto clamp = [n](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + n : v, 0, n); };
    attributes.set("axis", axis);
    attributes.set("start", clamp(params[1]));
    attributes.set("step", params[3]);
  }
  std::string name = view_name(kind);
  if (kind == K::as_strided) {
    std::optional<std::vector<std::int64_t>> ordinals = source_ordinals(source, view);
    if (ordinals) attributes.set("ordinals", std::move(*ordinals));
    else name = "as_strided (beyond its source's elements)";  // has no VJP: backward raises NotImplementedError
  }
  const KernelOperand operands[] = {source};
  attach(view, NodeAccess::make(std::move(name), std::nullopt, std::move(attributes), operands, view, false));
}

}  // namespace

void install_view_hook() noexcept { strideweave::detail::view_hook.store(&on_view, std::memory_order_release); }

void record_operation(const OperationPlan& plan, std::span<const KernelOperand> operands,
                      const Attributes& attributes, const Tensor& result) {
  if (!would_record(plan, operands)) return;
  attach(result, NodeAccess::make(plan.operation(), plan, attributes, operands, result, true));
}

void refuse_caller_output(const OperationPlan& plan, std::span<const KernelOperand> operands) {
  if (would_record(plan, operands))
    throw RuntimeError(fmt::format(
        "{}: a caller-provided output cannot record the call for automatic differentiation (an operand "
        "requires grad); compute into fresh storage, or run under no_grad()",
        plan.operation()));
}

// ---- NodeAccess

std::shared_ptr<Node> NodeAccess::make(std::string name, std::optional<OperationPlan> plan, Attributes attributes,
                                       std::span<const KernelOperand> operands, const Tensor& output,
                                       bool check_versions) {
  auto node = std::make_shared<Node>();
  node->name_ = std::move(name);
  node->plan_ = std::move(plan);
  node->attributes_ = std::move(attributes);
  node->vjp_ = find_vjp(node->name_);
  auto save = [&](const std::shared_ptr<Carrier>& c) {
    if (!check_versions) return;
    for (const Node::Saved& s : node->saved_)
      if (s.carrier == c) return;
    node->saved_.push_back(Node::Saved{c, c->version()});
  };
  for (const KernelOperand& o : operands) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) {
      node->operands_.emplace_back(t->detach());
      const bool edge = tracks(*t) && t->is_differentiable();
      node->edges_.push_back(edge ? TensorAccess::shared(*t) : nullptr);
      node->needs_grad_.push_back(edge);
      save(t->carrier());
    } else {
      node->operands_.push_back(o);
      node->edges_.push_back(nullptr);
      node->needs_grad_.push_back(false);
    }
  }
  node->output_ = output.detach();
  save(output.carrier());
  return node;
}

void NodeAccess::release(Node& node) noexcept {
  node.released_ = true;
  node.operands_.clear();
  node.output_.reset();
  node.saved_.clear();
  node.edges_.clear();  // frees the intermediate results only this graph kept alive
  node.outputs_.clear();
  node.invocation_.reset();
}

namespace {

// Which saved values of `node` use `carrier`, for an error message:
// "operand 1 of 'mul'", "operands 0 and 1 of 'mul'", "the result of 'exp'",
// each with the first one's dtype and shape.
std::string saved_users(const Node& node, const Carrier& carrier) {
  if (NodeAccess::is_definition(node)) {
    // "saved operand 'x' (operand 0) and result 1 of 'acme.op'"
    std::string who;
    const Tensor* first = nullptr;
    const operation::ResolvedInvocation& inv = *node.invocation();
    const auto specs = inv.definition().schema().operands();
    for (std::size_t i : inv.saved_operands())
      if (const Tensor& t = std::get<Tensor>(inv.operands()[i]); t.carrier().get() == &carrier) {
        who += fmt::format("{}saved operand '{}' (operand {})", who.empty() ? "" : " and ", specs[i].name(), i);
        if (!first) first = &t;
      }
    for (std::size_t r = 0; r < node.outputs().size(); ++r)
      if (node.outputs()[r].carrier().get() == &carrier) {
        who += fmt::format("{}result {}", who.empty() ? "" : " and ", r);
        if (!first) first = &node.outputs()[r];
      }
    who += fmt::format(" of '{}'", node.name());
    if (first) who += fmt::format(" ({} tensor of shape {})", first->dtype().name(), first->shape().to_string());
    return who;
  }
  std::vector<std::size_t> positions;
  const Tensor* first = nullptr;
  for (std::size_t i = 0; i < node.operands().size(); ++i)
    if (const Tensor* t = std::get_if<Tensor>(&node.operands()[i]); t && t->carrier().get() == &carrier) {
      positions.push_back(i);
      if (!first) first = t;
    }
  const bool result = node.output() && node.output()->carrier().get() == &carrier;
  if (!first && result) first = &*node.output();
  std::string who;
  if (!positions.empty()) {
    who = positions.size() == 1 ? "operand " : "operands ";
    for (std::size_t k = 0; k < positions.size(); ++k)
      who += fmt::format("{}{}", k == 0 ? "" : (k + 1 == positions.size() ? " and " : ", "), positions[k]);
  }
  if (result) who += who.empty() ? "the result" : " and the result";
  who += fmt::format(" of '{}'", node.name());
  if (first) who += fmt::format(" ({} tensor of shape {})", first->dtype().name(), first->shape().to_string());
  return who;
}

}  // namespace

void NodeAccess::check_ready(const Node& node) {
  if (node.released_)
    throw RuntimeError(fmt::format(
        "backward: the graph through '{}' was already released by an earlier backward; pass retain_graph=True to "
        "the first backward to traverse it again",
        node.name_));
  for (const Node::Saved& s : node.saved_) {
    if (s.carrier->is_released())
      throw RuntimeError(fmt::format("backward: the {} carrier of {}, saved for its gradient, was released",
                                     s.carrier->class_name(), saved_users(node, *s.carrier)));
    if (s.carrier->version() != s.version)
      throw RuntimeError(fmt::format(
          "backward: one of the variables needed for gradient computation has been modified by an inplace "
          "operation: {} is at version {} of its {} carrier; expected version {} (a write after the call, e.g. "
          "Tensor::set, changed a value its gradient reads)",
          saved_users(node, *s.carrier), s.carrier->version(), s.carrier->class_name(), s.version));
  }
  if (!node.vjp_ && !node.definition_)
    throw NotImplementedError(fmt::format("backward: the derivative of '{}' is not implemented", node.name_));
}

std::vector<std::optional<Tensor>> NodeAccess::apply(const Node& node, const Tensor& cotangent) {
  const VjpContext ctx{node.name_, node.plan_, node.operands_, node.attributes_, *node.output_, node.needs_grad_};
  std::vector<std::optional<Tensor>> grads = (*node.vjp_)(ctx, cotangent);
  if (grads.size() != node.operands_.size())
    throw RuntimeError(fmt::format("backward: the VJP of '{}' returned {} gradients for {} operands", node.name_,
                                   grads.size(), node.operands_.size()));
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) continue;
    if (!node.needs_grad_[i]) {
      grads[i].reset();
      continue;
    }
    const Tensor& operand = std::get<Tensor>(node.operands_[i]);
    if (!std::ranges::equal(grads[i]->shape().extents(), operand.shape().extents()) || !grads[i]->is_differentiable())
      throw RuntimeError(fmt::format("backward: the VJP of '{}' returned a gradient {} {} for operand {} of shape {}",
                                     node.name_, grads[i]->dtype().name(), grads[i]->shape().to_string(), i,
                                     operand.shape().to_string()));
  }
  return grads;
}

}  // namespace autograd
}  // namespace strideweave
