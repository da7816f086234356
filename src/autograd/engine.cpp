// The backward engine: Tensor::backward, the functional grad() and
// Operation::backward. See docs/autograd.md, "Backward".
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
#include "storage/ranges.h"

namespace strideweave {

using detail::TensorAccess;
using detail::TensorImpl;

namespace autograd {
namespace {

// ---- gradient layouts (core-concepts 6.4-6.5; upstream autograd, "Cotangent
// layouts must address the target tensor exactly" and "Gradient buffers use
// injective layouts and aggregate broadcast aliases")

// `tuple` with every leaf whose stride is 0 narrowed to extent 1.
IntTuple without_broadcast(const IntTuple& shape, const IntTuple& stride) {
  if (shape.is_leaf()) return IntTuple(stride.value() == 0 ? std::int64_t{1} : shape.value());
  std::vector<IntTuple> children;
  for (std::size_t i = 0; i < shape.rank(); ++i) children.push_back(without_broadcast(shape[i], stride[i]));
  return IntTuple::tuple(std::move(children));
}

// Broadcast aliasing: the collisions that remain come only from stride-0
// modes (the layout without them is injective).
bool is_broadcast_aliasing(const Layout& layout) {
  std::vector<IntTuple> modes;
  for (std::size_t i = 0; i < layout.rank(); ++i)
    modes.push_back(without_broadcast(layout.shape().mode(i), layout.stride().mode(i)));
  return Layout(Shape(std::move(modes)), layout.stride()).is_injective();
}

// The one gradient buffer rule (every .grad and every tensor grad()
// returns): fresh Float32 storage of `carrier`'s exact class holding the
// logical values `values` of a gradient for a tensor laid out as `layout`.
// An injective layout is kept exactly (holes are zero); a broadcast-aliased
// one becomes the canonical injective layout of its shape, every position
// holding the sum (in logical order) of the contributions that address its
// storage slot; any other aliasing is a ValueError.
Tensor gradient_buffer(std::vector<Value> values, const Carrier& carrier, const Layout& layout, const char* what) {
  if (layout.is_injective()) {
    // Run by run along the layout; new_like fills the buffer with one range
    // write (storage/ranges.h).
    std::vector<Value> slots(static_cast<std::size_t>(layout.cosize()), Value::from_float32(0.0f));
    detail::for_each_run(layout, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      std::copy_n(values.begin() + ordinal, length, slots.begin() + index);
    });
    return Tensor(carrier.new_like(slots, true, &DType::Float32()), 0, layout);
  }
  if (!is_broadcast_aliasing(layout))
    throw ValueError(fmt::format("{}: the layout {} maps several coordinates to one slot other than through "
                                 "stride-0 (broadcast) modes; no gradient layout addresses it exactly",
                                 what, layout.to_string()));
  std::unordered_map<std::int64_t, float> sums;
  for (std::int64_t k = 0; k < layout.size(); ++k) sums[layout(k)] += values[static_cast<std::size_t>(k)].f;
  for (std::int64_t k = 0; k < layout.size(); ++k) values[static_cast<std::size_t>(k)] = Value::from_float32(sums[layout(k)]);
  return Tensor(carrier.new_like(values, true, &DType::Float32()), 0, Layout::compact(layout.shape()));
}

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
    // The unit cotangent has the tensor's layout, in fresh storage.
    std::vector<Value> slots(static_cast<std::size_t>(std::max<std::int64_t>(root.layout().cosize(), 1)),
                             Value::from_float32(0.0f));
    slots[static_cast<std::size_t>(root.layout()(std::int64_t{0}))] = Value::from_float32(1.0f);
    return Tensor(root.carrier()->new_like(slots, true, &DType::Float32()), 0, root.layout());
  }
  const Tensor& g = *gradient;
  if (!g.is_differentiable())
    throw TypeError(fmt::format("{}: the cotangent must have dtype Float32, got {}", what, g.dtype().name()));
  if (!(g.shape() == root.shape()))
    throw ValueError(fmt::format("{}: the cotangent has shape {} but the tensor has shape {}", what,
                                 g.shape().to_string(), root.shape().to_string()));
  // The cotangent addresses the tensor exactly: an injective tensor's own
  // layout; for a broadcast tensor, any injective layout of its shape.
  if (root.layout().is_injective()) {
    if (!(g.layout() == root.layout()))
      throw ValueError(fmt::format("{}: the cotangent's layout {} differs from the tensor's layout {}; a cotangent "
                                   "of an injective tensor has exactly its layout",
                                   what, g.layout().to_string(), root.layout().to_string()));
  } else if (!is_broadcast_aliasing(root.layout())) {
    throw ValueError(fmt::format("{}: the tensor's layout {} aliases slots other than through stride-0 (broadcast) "
                                 "modes; no cotangent addresses it exactly",
                                 what, root.layout().to_string()));
  } else if (!g.layout().is_injective()) {
    throw ValueError(fmt::format("{}: the cotangent of a broadcast tensor needs an injective layout, got {}", what,
                                 g.layout().to_string()));
  }
  if (!(g.carrier_type() == root.carrier_type()))
    throw TypeError(fmt::format("{}: the cotangent lives on {} but the tensor on {}", what,
                                g.carrier()->class_name(), root.carrier()->class_name()));
  g.carrier()->require_live(what);
  return g.detach();
}

void require_differentiable(const Tensor& t, const char* what, const char* role) {
  if (!t.is_differentiable())
    throw RuntimeError(fmt::format("{}: {} has dtype {}; only Float32 tensors are differentiable", what, role,
                                   t.dtype().name()));
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
  // The sum keeps a's offset and Layout when a covers its whole carrier
  // injectively (a TiledEvictable gradient's tile footprints,
  // carrier-composition B5: overlapping projections sum into one
  // full-shaped gradient).
  const Layout& layout = a.layout();
  if (layout.size() > 0 && a.offset() + layout.cosize() == a.carrier()->size() && layout.is_injective()) {
    std::vector<Value> slots(static_cast<std::size_t>(a.offset() + layout.cosize()), Value::from_float32(0.0f));
    detail::for_each_run(layout, [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
      std::copy_n(values.begin() + ordinal, length, slots.begin() + a.offset() + index);
    });
    return Tensor(a.carrier()->new_like(slots, true, &DType::Float32()), a.offset(), layout);
  }
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
  // An Operation runs once for all of its results: its edges count once,
  // and it waits for every result the traversal reached.
  std::unordered_map<const Operation*, PendingDefinition> definitions;
  std::vector<ImplPtr> stack;
  for (const Tensor& r : roots) stack.push_back(TensorAccess::shared(r));
  while (!stack.empty()) {
    ImplPtr impl = std::move(stack.back());
    stack.pop_back();
    if (visits.count(impl.get())) continue;
    // Upstream autograd, "Refuse aliasing that broadcast modes do not
    // explain": a reached tensor whose slots collide other than through
    // stride-0 modes has no exact gradient; refused before any work.
    if (!impl->layout.is_injective() && !is_broadcast_aliasing(impl->layout))
      throw ValueError(fmt::format("backward: the traversal reaches a tensor of layout {}, which maps several "
                                   "coordinates to one slot other than through stride-0 (broadcast) modes; its "
                                   "gradient would be under-counted",
                                   impl->layout.to_string()));
    visits.emplace(impl.get(), Visit{impl, 0, std::nullopt});
    order.push_back(impl.get());
    if (!impl->grad_fn) continue;
    const Operation& fn = *impl->grad_fn;
    if (OperationAccess::result_count(fn) > 1) {
      auto [it, first] = definitions.try_emplace(&fn);
      ++it->second.waiting;
      if (!first) continue;
      it->second.cotangents.resize(OperationAccess::result_count(fn));
    }
    OperationAccess::check_ready(fn);
    for (std::size_t k = 0; k < OperationAccess::input_count(fn); ++k)
      if (const ImplPtr* e = OperationAccess::edge(fn, k)) stack.push_back(*e);
  }
  {
    std::unordered_map<const Operation*, bool> counted;
    for (const TensorImpl* i : order)
      if (const auto& fn = visits.at(i).impl->grad_fn) {
        if (OperationAccess::result_count(*fn) > 1 && !counted.emplace(fn.get(), true).second) continue;
        for (std::size_t k = 0; k < OperationAccess::input_count(*fn); ++k)
          if (const ImplPtr* e = OperationAccess::edge(*fn, k)) ++visits.at(e->get()).consumers;
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
  std::vector<Operation*> visited_nodes;
  std::unordered_map<const TensorImpl*, std::optional<Tensor>> captured;
  for (const Tensor& c : captures) captured.emplace(&TensorAccess::impl(c), std::nullopt);
  std::size_t processed = 0;
  while (!ready.empty()) {
    Visit& v = visits.at(ready.front());
    ready.pop_front();
    ++processed;
    if (auto it = captured.find(v.impl.get()); it != captured.end()) it->second = v.cotangent;
    // Every differentiable leaf reached receives .grad (core-concepts 6.5),
    // and a non-leaf after retain_grad().
    if (accumulate && v.cotangent && (v.impl->retains_grad || (!v.impl->grad_fn && v.impl->carrier &&
                                                               &v.impl->carrier->dtype() == &DType::Float32())))
      to_accumulate.emplace_back(v.impl, *v.cotangent);
    Operation* node = v.impl->grad_fn.get();
    if (!node) continue;
    const std::size_t inputs = OperationAccess::input_count(*node);
    std::vector<std::optional<Tensor>> grads(inputs);
    if (OperationAccess::result_count(*node) > 1) {
      PendingDefinition& p = definitions.at(node);
      const std::size_t slot = v.impl->grad_output < p.cotangents.size() ? v.impl->grad_output : 0;
      if (v.cotangent) contribute(p.cotangents[slot], *v.cotangent);
      v.cotangent.reset();
      if (--p.waiting > 0) continue;  // the node runs with its last reached result
      visited_nodes.push_back(node);
      if (std::any_of(p.cotangents.begin(), p.cotangents.end(), [](const auto& c) { return c.has_value(); })) {
        OperationAccess::check_ready(*node);  // again, immediately before this node's VJP
        grads = OperationAccess::apply(*node, p.cotangents);
      }
      p.cotangents.clear();
    } else {
      visited_nodes.push_back(node);
      if (v.cotangent) {
        OperationAccess::check_ready(*node);  // again, immediately before this node's VJP
        const std::optional<Tensor> one[] = {std::move(v.cotangent)};
        grads = OperationAccess::apply(*node, one);
      }
      v.cotangent.reset();  // no longer needed: release memory early
    }
    for (std::size_t i = 0; i < inputs; ++i) {
      const ImplPtr* e = OperationAccess::edge(*node, i);
      if (!e) continue;
      Visit& input = visits.at(e->get());
      if (grads[i]) contribute(input.cotangent, *grads[i]);
      if (--input.consumers == 0) ready.push_back(e->get());
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
  // Accumulation into an existing .grad reads it and the contribution run by
  // run through the carriers' range access (Tensor::values) and writes the
  // new buffer with one range write (new_like): no slot-by-slot hook calls
  // where a class offers ranges.
  for (const auto& [impl, g] : to_accumulate) {
    std::vector<Value> values = g.values();
    if (impl->grad) {
      impl->grad->carrier()->require_live("backward: accumulating into the existing .grad");
      const std::vector<Value> old = impl->grad->values();
      if (old.size() != values.size())
        throw ValueError("backward: the existing .grad does not have the tensor's shape");
      // Broadcast tensors: the new contribution is summed per slot first,
      // then added (the old .grad already holds per-slot sums).
      if (!impl->layout.is_injective())
        values = gradient_buffer(std::move(values), *impl->carrier, impl->layout, "backward").values();
      for (std::size_t k = 0; k < values.size(); ++k) values[k] = Value::from_float32(old[k].f + values[k].f);
      new_grads.push_back(impl->layout.is_injective()
                              ? gradient_buffer(std::move(values), *impl->carrier, impl->layout, "backward")
                              : Tensor(impl->carrier->new_like(values, true, &DType::Float32()), 0,
                                       Layout::compact(impl->layout.shape())));
    } else {
      new_grads.push_back(gradient_buffer(std::move(values), *impl->carrier, impl->layout, "backward"));
    }
  }
  std::vector<std::optional<Tensor>> out;
  out.reserve(captures.size());
  for (const Tensor& c : captures) {
    const std::optional<Tensor>& g = captured.at(&TensorAccess::impl(c));
    out.push_back(g ? std::optional<Tensor>(gradient_buffer(g->values(), *c.carrier(), c.layout(), "grad"))
                    : std::nullopt);
  }
  static_assert(std::is_nothrow_move_assignable_v<std::optional<Tensor>>);
  for (std::size_t k = 0; k < new_grads.size(); ++k) to_accumulate[k].first->grad = std::move(new_grads[k]);
  if (!retain_graph)
    for (Operation* n : visited_nodes) OperationAccess::release(*n);
  return out;
}

}  // namespace

namespace {
void check_node_cotangent_value(const Operation& node, const Tensor& cotangent, const Tensor& result) {
  if (!cotangent.is_differentiable())
    throw TypeError(fmt::format("{}.backward: the cotangent must have dtype Float32, got {}", node.name(),
                                cotangent.dtype().name()));
  if (!std::ranges::equal(cotangent.shape().extents(), result.shape().extents()))
    throw ValueError(fmt::format("{}.backward: the cotangent has shape {} but the result has shape {}", node.name(),
                                 cotangent.shape().to_string(), result.shape().to_string()));
}
void check_node_cotangent_class(const Operation& node, const Tensor& cotangent, const Tensor& result) {
  if (!(cotangent.carrier_type() == result.carrier_type()))
    throw TypeError(fmt::format("{}.backward: the cotangent lives on {} but the result on {}", node.name(),
                                cotangent.carrier()->class_name(), result.carrier()->class_name()));
}
}  // namespace

}  // namespace autograd

std::vector<std::optional<Tensor>> Operation::backward(const Tensor& cotangent) const {
  std::vector<std::optional<Tensor>> cotangents(std::max<std::size_t>(result_count_, 1));
  cotangents[0] = cotangent;
  return backward(std::span<const std::optional<Tensor>>(cotangents));
}

std::vector<std::optional<Tensor>> Operation::backward(std::span<const std::optional<Tensor>> cotangents) const {
  autograd::OperationAccess::check_ready(*this);
  if (cotangents.size() != result_count_)
    throw ValueError(fmt::format("{}.backward: {} cotangents for {} results", name(), cotangents.size(), result_count_));
  std::vector<std::optional<Tensor>> detached(cotangents.size());
  NoGradGuard no_grad_during_backward;
  for (std::size_t r = 0; r < cotangents.size(); ++r)
    if (cotangents[r]) {
      autograd::check_node_cotangent_value(*this, *cotangents[r], outputs_[r]);
      const std::optional<Tensor> adapted = _adapt_cotangent(*cotangents[r], r);  // a composite's adapter
      const Tensor& cotangent = adapted ? *adapted : *cotangents[r];
      autograd::check_node_cotangent_class(*this, cotangent, outputs_[r]);
      detached[r] = cotangent.detach();
    }
  return autograd::OperationAccess::apply(*this, detached);
}

namespace autograd {
}  // namespace autograd

std::vector<std::optional<Tensor>> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                                        std::span<const std::optional<Tensor>> cotangents, bool retain_graph) {
  if (outputs.empty()) throw ValueError("grad: at least one output is needed");
  if (!cotangents.empty() && cotangents.size() != outputs.size())
    throw ValueError(fmt::format("grad: {} cotangents for {} outputs", cotangents.size(), outputs.size()));
  for (const Tensor& o : outputs) autograd::require_differentiable(o, "grad", "an output");
  for (const Tensor& i : inputs)
    if (!i.is_differentiable())
      throw ValueError(fmt::format("grad: an input has dtype {}; gradients are requested only for differentiable "
                                   "(Float32) tensors",
                                   i.dtype().name()));
  std::vector<Tensor> seeds;
  for (std::size_t k = 0; k < outputs.size(); ++k)
    seeds.push_back(autograd::root_cotangent(outputs[k], cotangents.empty() ? std::nullopt : cotangents[k], "grad"));
  return autograd::run(outputs, seeds, inputs, false, retain_graph);
}

std::vector<std::optional<Tensor>> batched_grad(const Tensor& output, std::span<const Tensor> inputs,
                                                const Tensor& cotangents, bool retain_graph) {
  autograd::require_differentiable(output, "grad", "the output");
  const Layout& single = output.layout();
  const Layout& batch = cotangents.layout();
  const bool shaped = batch.rank() == single.rank() + 1 && batch.shape().mode(0).is_leaf() &&
                      batch.stride().mode(0).is_leaf() && [&] {
                        for (std::size_t i = 0; i < single.rank(); ++i)
                          if (!(batch.shape().mode(i + 1) == single.shape().mode(i)) ||
                              !(batch.stride().mode(i + 1) == single.stride().mode(i)))
                            return false;
                        return true;
                      }();
  if (!shaped)
    throw ValueError(fmt::format("grad: a batched cotangent's layout is one prepended leaf batch mode followed by the "
                                 "output's layout {}; got {}",
                                 single.to_string(), batch.to_string()));
  const std::int64_t k_count = batch.shape().extent(0);
  const std::int64_t k_stride = batch.stride().mode(0).value();
  std::vector<std::vector<std::optional<Tensor>>> per_k;
  for (std::int64_t k = 0; k < k_count; ++k) {
    const Tensor cotangent(cotangents.carrier(), cotangents.offset() + k * k_stride, single);
    per_k.push_back(grad(output, inputs, cotangent, retain_graph || k + 1 < k_count));
  }
  std::vector<std::optional<Tensor>> out(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* first = nullptr;
    for (const auto& g : per_k)
      if (g[i]) first = &*g[i];
    if (!first) continue;
    const Layout& one = first->layout();
    const std::int64_t span = one.cosize();
    std::vector<Value> slots(static_cast<std::size_t>(span * k_count), Value::from_float32(0.0f));
    for (std::int64_t k = 0; k < k_count; ++k) {
      const std::optional<Tensor>& g = per_k[static_cast<std::size_t>(k)][i];
      if (!g) continue;  // unreachable for this cotangent: zeros
      const std::vector<Value> values = g->values();
      for (std::int64_t e = 0; e < one.size(); ++e)
        slots[static_cast<std::size_t>(k * span + one(e))] = values[static_cast<std::size_t>(e)];
    }
    std::vector<IntTuple> shape{IntTuple(k_count)}, stride{IntTuple(span)};
    shape.insert(shape.end(), one.shape().modes().begin(), one.shape().modes().end());
    stride.insert(stride.end(), one.stride().modes().begin(), one.stride().modes().end());
    out[i] = Tensor(inputs[i].carrier()->new_like(slots, true, &DType::Float32()), 0,
                    Layout(Shape(std::move(shape)), Stride(std::move(stride))));
  }
  return out;
}

// ---- the Tensor surface defined here (tensor.h)

void Tensor::backward(std::optional<Tensor> gradient, bool retain_graph) const {
  autograd::require_differentiable(*this, "backward", "the tensor");
  const Tensor seed[] = {autograd::root_cotangent(*this, gradient, "backward")};
  autograd::run(std::span<const Tensor>(this, 1), seed, {}, true, retain_graph);
}

void Tensor::set_autograd_ctx(std::shared_ptr<Operation> operation) {
  if (operation && !is_differentiable())
    throw RuntimeError(fmt::format("set_autograd_ctx: a {} tensor is not differentiable (only Float32 is)",
                                   dtype().name()));
  impl_->grad_fn = std::move(operation);
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

void Tensor::retain_grad(bool retain) {
  if (!is_differentiable())
    throw RuntimeError(fmt::format("retain_grad: a {} tensor is not differentiable", dtype().name()));
  impl_->retains_grad = retain;
}

}  // namespace strideweave
