// The backward engine: Tensor::backward, the functional grad() and
// Node::backward. See docs/autograd.md, "Backward".
//
// One run has three phases, so that a failure changes nothing:
//   1. collect every tensor reachable from the roots through grad_fn edges,
//      counting each one's consumers, and check every node (released ->
//      RuntimeError naming retain_graph=True; saved carrier modified ->
//      RuntimeError; no VJP -> NotImplementedError);
//   2. visit the tensors in topological order (a tensor once all of its
//      consumers have contributed; contributions are summed first), running
//      each node's VJP once;
//   3. commit: the new .grad values of leaves (and of non-leaves after
//      retain_grad) and the returned gradients are computed, then (nothing
//      left that can fail) assigned, and without retain_graph the visited
//      nodes are released.
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <type_traits>
#include <unordered_map>

#include "autograd/graph.h"
#include "autograd/vjp_support.h"

namespace strideweave {

using detail::TensorAccess;
using detail::TensorImpl;

namespace autograd {
namespace {

// The cotangent a root starts with: explicit (checked) or the implicit unit.
Tensor root_cotangent(const Tensor& root, const std::optional<Tensor>& gradient, const char* what) {
  if (!gradient) {
    // core-concepts 6.4: a single top-level extent-1 mode. A rank-0 tensor
    // (the C++ library's scalar, e.g. a full reduce_sum) is the same single
    // element and is accepted too (docs/autograd.md).
    const bool single = (root.rank() == 1 && root.shape().extent(0) == 1) || root.rank() == 0;
    if (!single)
      throw ValueError(fmt::format(
          "{}: an implicit unit cotangent needs a single top-level mode of extent 1 (or rank 0), but the tensor has "
          "shape {}; pass the gradient explicitly",
          what, root.shape().to_string()));
    root.carrier()->require_live(what);
    const Value one[] = {Value::from_float32(1.0f)};
    return Tensor(root.carrier()->new_like(one, true, &DType::Float32()), root.shape());
  }
  const Tensor& g = *gradient;
  if (!g.is_differentiable())
    throw TypeError(fmt::format("{}: the cotangent must have dtype Float32, got {}", what, g.dtype().name()));
  if (!(g.shape() == root.shape()))
    throw ValueError(fmt::format("{}: the cotangent has shape {} but the tensor has shape {}", what,
                                 g.shape().to_string(), root.shape().to_string()));
  if (!(g.carrier_type() == root.carrier_type()))
    throw TypeError(fmt::format("{}: the cotangent lives on {} but the tensor on {}", what,
                                g.carrier()->class_name(), root.carrier()->class_name()));
  g.carrier()->require_live(what);
  return g.detach();
}

void require_tracked(const Tensor& t, const char* what, const char* role) {
  if (!t.is_differentiable())
    throw RuntimeError(fmt::format("{}: {} has dtype {}; only Float32 tensors are differentiable", what, role,
                                   t.dtype().name()));
  if (!t.requires_grad())
    throw RuntimeError(fmt::format("{}: {} does not require grad and has no grad_fn", what, role));
}

struct Visit {
  ImplPtr impl;
  std::int64_t consumers = 0;  // edges from visited nodes not yet processed
  std::optional<Tensor> cotangent;
};

// a + b for accumulation. A definition-free class runs its `add` kernel; a
// definition-backed class (whose typed functions do not reach it) gets the
// binary32 sums in fresh storage of its own class through its storage
// provider: accumulation is the framework's, and needs no `add` pattern.
Tensor sum(const Tensor& a, const Tensor& b) {
  if (!(a.carrier_type() == b.carrier_type()) || !extension::carrier_definition(a.carrier()->exact_class()))
    return add(a, b);  // (two classes: add's TypeError)
  if (!std::ranges::equal(a.shape().extents(), b.shape().extents()))
    throw ValueError(fmt::format("backward: gradients of shapes {} and {} cannot be summed", a.shape().to_string(),
                                 b.shape().to_string()));
  std::vector<Value> values = a.values();
  const std::vector<Value> more = b.values();
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = Value::from_float32(values[k].f + more[k].f);
  return Tensor(a.carrier()->new_like(values, true, &DType::Float32()), Shape::of(a.shape().extents()));
}

// Adds `g` into `slot` (the first contribution is kept as is).
void contribute(std::optional<Tensor>& slot, const Tensor& g) { slot = slot ? sum(*slot, g) : g; }

// A definition node's cotangents, one slot per result, filled as its
// results become ready; it runs once all of its reached results are.
struct PendingDefinition {
  std::vector<std::optional<Tensor>> cotangents;
  std::int64_t waiting = 0;  // reached results not yet ready
};

// Runs phases 1-3. `captures`: tensors whose total cotangent is returned
// (functional grad); `accumulate`: write .grad (Tensor::backward).
std::vector<std::optional<Tensor>> run(std::span<const Tensor> roots, std::span<const Tensor> cotangents,
                                       std::span<const Tensor> captures, bool accumulate, bool retain_graph) {
  NoGradGuard no_grad_during_backward;

  // 1. collect and check.
  std::unordered_map<const TensorImpl*, Visit> visits;
  std::vector<const TensorImpl*> order;  // discovery order, for a deterministic commit
  // A definition node runs once for all of its results: its edges count
  // once, and it waits for every result the traversal reached.
  std::unordered_map<const Node*, PendingDefinition> definitions;
  std::vector<ImplPtr> stack;
  for (const Tensor& r : roots) stack.push_back(TensorAccess::shared(r));
  while (!stack.empty()) {
    ImplPtr impl = std::move(stack.back());
    stack.pop_back();
    if (visits.count(impl.get())) continue;
    visits.emplace(impl.get(), Visit{impl, 0, std::nullopt});
    order.push_back(impl.get());
    if (!impl->grad_fn) continue;
    const Node& fn = *impl->grad_fn;
    if (NodeAccess::is_definition(fn)) {
      auto [it, first] = definitions.try_emplace(&fn);
      ++it->second.waiting;
      if (!first) continue;
      it->second.cotangents.resize(NodeAccess::result_count(fn));
    }
    NodeAccess::check_ready(fn);
    for (const ImplPtr& e : NodeAccess::edges(fn))
      if (e) stack.push_back(e);
  }
  {
    std::unordered_map<const Node*, bool> counted;
    for (const TensorImpl* i : order)
      if (const auto& fn = visits.at(i).impl->grad_fn) {
        if (NodeAccess::is_definition(*fn) && !counted.emplace(fn.get(), true).second) continue;
        for (const ImplPtr& e : NodeAccess::edges(*fn))
          if (e) ++visits.at(e.get()).consumers;
      }
  }

  // 2. topological traversal (Kahn): a tensor is ready once every consumer
  // has run.
  for (std::size_t k = 0; k < roots.size(); ++k)
    contribute(visits.at(&TensorAccess::impl(roots[k])).cotangent, cotangents[k]);
  std::deque<const TensorImpl*> ready;
  for (const TensorImpl* i : order)
    if (visits.at(i).consumers == 0) ready.push_back(i);
  std::vector<std::pair<ImplPtr, Tensor>> to_accumulate;
  std::vector<Node*> visited_nodes;
  std::unordered_map<const TensorImpl*, std::optional<Tensor>> captured;
  for (const Tensor& c : captures) captured.emplace(&TensorAccess::impl(c), std::nullopt);
  std::size_t processed = 0;
  while (!ready.empty()) {
    Visit& v = visits.at(ready.front());
    ready.pop_front();
    ++processed;
    if (auto it = captured.find(v.impl.get()); it != captured.end()) it->second = v.cotangent;
    if (accumulate && v.cotangent && (v.impl->retains_grad || (v.impl->requires_grad && !v.impl->grad_fn)))
      to_accumulate.emplace_back(v.impl, *v.cotangent);
    Node* node = v.impl->grad_fn.get();
    if (!node) continue;
    const std::vector<ImplPtr>& edges = NodeAccess::edges(*node);
    std::vector<std::optional<Tensor>> grads(edges.size());
    if (NodeAccess::is_definition(*node)) {
      PendingDefinition& p = definitions.at(node);
      const std::size_t slot = v.impl->grad_output < p.cotangents.size() ? v.impl->grad_output : 0;
      if (v.cotangent) contribute(p.cotangents[slot], *v.cotangent);
      v.cotangent.reset();
      if (--p.waiting > 0) continue;  // the node runs with its last reached result
      visited_nodes.push_back(node);
      if (std::any_of(p.cotangents.begin(), p.cotangents.end(), [](const auto& c) { return c.has_value(); })) {
        NodeAccess::check_ready(*node);  // again, immediately before this node's VJP
        grads = NodeAccess::apply_definition(*node, p.cotangents);
      }
      p.cotangents.clear();
    } else {
      visited_nodes.push_back(node);
      if (v.cotangent) {
        NodeAccess::check_ready(*node);  // again, immediately before this node's VJP
        grads = NodeAccess::apply(*node, *v.cotangent);
      }
      v.cotangent.reset();  // no longer needed: release memory early
    }
    for (std::size_t i = 0; i < edges.size(); ++i) {
      if (!edges[i]) continue;
      Visit& input = visits.at(edges[i].get());
      if (grads[i]) contribute(input.cotangent, *grads[i]);
      if (--input.consumers == 0) ready.push_back(edges[i].get());
    }
  }

  // A tensor never ready lies on a cycle (only set_autograd_ctx can close
  // one): its consumers include itself, so part of the graph got no
  // gradient.
  if (processed != order.size())
    throw RuntimeError(fmt::format(
        "backward: the graph has a cycle (a node attached with set_autograd_ctx to a tensor it consumes, directly "
        "or not): {} of its {} tensors lie on or below it; no gradient was computed",
        order.size() - processed, order.size()));

  // 3. commit. Everything that can fail (the new .grad values, the returned
  // gradients) is computed first; only then are the .grad slots assigned and
  // the nodes released, neither of which can fail.
  std::vector<Tensor> new_grads;
  new_grads.reserve(to_accumulate.size());
  for (const auto& [impl, g] : to_accumulate) {
    const Shape& shape = impl->layout.shape();
    if (impl->grad) impl->grad->carrier()->require_live("backward: accumulating into the existing .grad");
    new_grads.push_back(impl->grad ? reshape_to(sum(*impl->grad, g), shape) : fresh_copy(g, *impl->carrier, shape));
  }
  std::vector<std::optional<Tensor>> out;
  out.reserve(captures.size());
  for (const Tensor& c : captures) {
    const std::optional<Tensor>& g = captured.at(&TensorAccess::impl(c));
    out.push_back(g ? std::optional<Tensor>(fresh_copy(*g, *c.carrier(), c.shape())) : std::nullopt);
  }
  static_assert(std::is_nothrow_move_assignable_v<std::optional<Tensor>>);
  for (std::size_t k = 0; k < new_grads.size(); ++k) to_accumulate[k].first->grad = std::move(new_grads[k]);
  if (!retain_graph)
    for (Node* n : visited_nodes) NodeAccess::release(*n);
  return out;
}

}  // namespace

namespace {
void check_node_cotangent(const Node& node, const Tensor& cotangent, const Tensor& result) {
  if (!cotangent.is_differentiable())
    throw TypeError(fmt::format("{}.backward: the cotangent must have dtype Float32, got {}", node.name(),
                                cotangent.dtype().name()));
  if (!std::ranges::equal(cotangent.shape().extents(), result.shape().extents()))
    throw ValueError(fmt::format("{}.backward: the cotangent has shape {} but the result has shape {}", node.name(),
                                 cotangent.shape().to_string(), result.shape().to_string()));
  if (!(cotangent.carrier_type() == result.carrier_type()))
    throw TypeError(fmt::format("{}.backward: the cotangent lives on {} but the result on {}", node.name(),
                                cotangent.carrier()->class_name(), result.carrier()->class_name()));
}
}  // namespace

std::vector<std::optional<Tensor>> Node::backward(const Tensor& cotangent) const {
  if (definition_) {
    std::vector<std::optional<Tensor>> cotangents(std::max<std::size_t>(result_count_, 1));
    cotangents[0] = cotangent;
    return backward(std::span<const std::optional<Tensor>>(cotangents));
  }
  NodeAccess::check_ready(*this);
  check_node_cotangent(*this, cotangent, *output_);
  NoGradGuard no_grad_during_backward;
  return NodeAccess::apply(*this, cotangent.detach());
}

std::vector<std::optional<Tensor>> Node::backward(std::span<const std::optional<Tensor>> cotangents) const {
  if (!definition_) {
    if (cotangents.size() != 1 || !cotangents[0])
      throw ValueError(fmt::format("{}.backward: this node has one result and takes one cotangent", name_));
    return backward(*cotangents[0]);
  }
  NodeAccess::check_ready(*this);
  if (cotangents.size() != result_count_)
    throw ValueError(fmt::format("{}.backward: {} cotangents for {} results", name_, cotangents.size(), result_count_));
  std::vector<std::optional<Tensor>> detached(cotangents.size());
  for (std::size_t r = 0; r < cotangents.size(); ++r)
    if (cotangents[r]) {
      check_node_cotangent(*this, *cotangents[r], outputs_[r]);
      detached[r] = cotangents[r]->detach();
    }
  NoGradGuard no_grad_during_backward;
  return NodeAccess::apply_definition(*this, detached);
}

}  // namespace autograd

std::vector<std::optional<Tensor>> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                                        std::span<const std::optional<Tensor>> cotangents, bool retain_graph) {
  if (outputs.empty()) throw ValueError("grad: at least one output is needed");
  if (!cotangents.empty() && cotangents.size() != outputs.size())
    throw ValueError(fmt::format("grad: {} cotangents for {} outputs", cotangents.size(), outputs.size()));
  for (const Tensor& o : outputs) autograd::require_tracked(o, "grad", "an output");
  for (const Tensor& i : inputs) autograd::require_tracked(i, "grad", "an input");
  std::vector<Tensor> seeds;
  for (std::size_t k = 0; k < outputs.size(); ++k)
    seeds.push_back(autograd::root_cotangent(outputs[k], cotangents.empty() ? std::nullopt : cotangents[k], "grad"));
  return autograd::run(outputs, seeds, inputs, false, retain_graph);
}

// ---- the Tensor surface defined here (tensor.h)

void Tensor::backward(std::optional<Tensor> gradient, bool retain_graph) const {
  autograd::require_tracked(*this, "backward", "the tensor");
  const Tensor seed[] = {autograd::root_cotangent(*this, gradient, "backward")};
  autograd::run(std::span<const Tensor>(this, 1), seed, {}, true, retain_graph);
}

void Tensor::set_requires_grad(bool requires_grad) {
  if (requires_grad && !is_differentiable())
    throw RuntimeError(fmt::format("set_requires_grad: a {} tensor is not differentiable (only Float32 is)",
                                   dtype().name()));
  if (!requires_grad && !is_leaf())
    throw RuntimeError("set_requires_grad: only a leaf's flag can be changed (this tensor has a grad_fn); use "
                       "detach()");
  if (requires_grad) autograd::install_view_hook();
  impl_->requires_grad = requires_grad;
}

void Tensor::set_autograd_ctx(std::shared_ptr<autograd::Node> node) {
  if (node && !is_differentiable())
    throw RuntimeError(fmt::format("set_autograd_ctx: a {} tensor is not differentiable (only Float32 is)",
                                   dtype().name()));
  if (node) {
    autograd::install_view_hook();
    impl_->requires_grad = false;
  }
  impl_->grad_fn = std::move(node);
  impl_->grad_output = 0;
}

std::optional<Tensor> Tensor::grad() const {
  if (!is_differentiable())
    throw RuntimeError(fmt::format("grad: a {} tensor is not differentiable and has no gradient", dtype().name()));
  return impl_->grad;
}

void Tensor::set_grad(std::optional<Tensor> gradient) {
  if (gradient) {
    if (!is_differentiable())
      throw RuntimeError(fmt::format("set_grad: a {} tensor is not differentiable", dtype().name()));
    if (!gradient->is_differentiable())
      throw TypeError(fmt::format("set_grad: the gradient must have dtype Float32, got {}", gradient->dtype().name()));
    if (!(gradient->shape() == shape()))
      throw ValueError(fmt::format("set_grad: the gradient has shape {} but the tensor has shape {}",
                                   gradient->shape().to_string(), shape().to_string()));
    if (!(gradient->carrier_type() == carrier_type()))
      throw TypeError(fmt::format("set_grad: the gradient lives on {} but the tensor on {}",
                                  gradient->carrier()->class_name(), carrier()->class_name()));
    gradient = gradient->detach();
  }
  impl_->grad = std::move(gradient);
}

void Tensor::retain_grad() {
  if (!is_differentiable())
    throw RuntimeError(fmt::format("retain_grad: a {} tensor is not differentiable", dtype().name()));
  if (!requires_grad())
    throw RuntimeError("retain_grad: the tensor does not require grad and has no grad_fn");
  if (!is_leaf()) impl_->retains_grad = true;
}

}  // namespace strideweave
