// Recording: grad mode, kernel-level calls (the dispatch hook), views (the
// core view hook), and the checks and VJP runs of recorded Operations. See
// docs/autograd.md, "Recording".
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/graph.h"
#include "autograd/record.h"
#include "autograd/vjp_support.h"

namespace strideweave {

namespace {
thread_local bool grad_enabled = true;
}  // namespace

bool is_grad_enabled() noexcept { return grad_enabled; }
void set_grad_enabled(bool enabled) noexcept { grad_enabled = enabled; }

namespace autograd {
namespace {

using strideweave::detail::TensorAccess;

// How many views may lie between a call's input and the kernel operand the
// front end made of it (unsqueeze then broadcast_to is the longest today).
constexpr int kLoweringViews = 8;

void attach(const Tensor& result, const std::shared_ptr<Operation>& op, std::uint32_t position = 0) {
  strideweave::detail::TensorImpl& impl = TensorAccess::impl(result);
  impl.grad_fn = op;
  impl.grad_output = position;
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

// The core view hook: a view of a differentiable source made while grad
// mode is on is an Operation with the source as its one input.
void on_view(const Tensor& source, const Tensor& view, strideweave::detail::ViewKind kind,
             std::span<const std::int64_t> params) {
  if (!grad_enabled || !source.is_differentiable()) return;
  OperationAccess::record_view(source, view, kind, params, nullptr);
}

}  // namespace


void install_view_hook() noexcept { strideweave::detail::view_hook.store(&on_view, std::memory_order_release); }

// ---- recording

bool OperationAccess::saves_inputs(CallTensors inputs) noexcept {
  if (!grad_enabled) return false;
  return std::any_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return t && t->is_differentiable(); });
}

void OperationAccess::map_operands_to_inputs(std::span<const KernelOperand> kernel_operands, CallTensors inputs,
                            std::vector<std::int32_t>& operand_input,
                            std::vector<std::vector<std::shared_ptr<Operation>>>& operand_views) {
  operand_input.assign(kernel_operands.size(), -1);
  operand_views.assign(kernel_operands.size(), {});
  std::size_t tensor_ordinal = 0;
  for (std::size_t j = 0; j < kernel_operands.size(); ++j) {
    const Tensor* k = std::get_if<Tensor>(&kernel_operands[j]);
    if (!k) continue;
    const std::size_t preferred = tensor_ordinal++;
    const strideweave::detail::TensorImpl* impl = &TensorAccess::impl(*k);
    std::vector<std::shared_ptr<Operation>> chain;
    for (int depth = 0; depth <= kLoweringViews; ++depth) {
      std::int32_t found = -1;
      if (preferred < inputs.size() && &TensorAccess::impl(*inputs[preferred]) == impl)
        found = static_cast<std::int32_t>(preferred);
      for (std::size_t i = 0; found < 0 && i < inputs.size(); ++i)
        if (&TensorAccess::impl(*inputs[i]) == impl) found = static_cast<std::int32_t>(i);
      if (found >= 0) {
        operand_input[j] = found;
        operand_views[j] = std::move(chain);
        break;
      }
      const std::shared_ptr<Operation>& fn = impl->grad_fn;
      if (!fn || fn->kind_ != Operation::Kind::view || fn->inputs_.empty()) break;
      chain.push_back(fn);
      impl = &TensorAccess::impl(fn->inputs_[0]);
    }
  }
}

void OperationAccess::record_kernel(std::string name, std::optional<OperationPlan> plan, Attributes attributes,
                                    std::span<const KernelOperand> kernel_operands, const Tensor& published,
                                    CallTensors inputs, const std::optional<Shape>& kernel_shape,
                                    const std::shared_ptr<Operation>& target) {
  if (!saves_inputs(inputs) || !published.is_differentiable()) return;
  // A node keeps its kernel operands: a lent handle (frontend::
  // KernelOperands::lend, never under grad mode) would outlive its owner.
  for (const KernelOperand& o : kernel_operands)
    if (const Tensor* t = std::get_if<Tensor>(&o); t && TensorAccess::is_lent(*t))
      throw RuntimeError(fmt::format("strideweave: internal error: '{}' would record a lent operand", name));
  std::shared_ptr<Operation> op = target ? target : std::make_shared<Operation>();
  Operation& o = *op;
  const bool view = !plan && name != "move";
  o.kind_ = view ? Operation::Kind::view : name == "move" ? Operation::Kind::move : Operation::Kind::kernel;
  if (!o.dispatched_) set_metadata(o, name, published.carrier_type());
  o.inputs_.reserve(inputs.size());
  o.versions_.reserve(inputs.size() + 1);
  for (const Tensor* t : inputs) {
    o.inputs_.push_back(*t);
    o.versions_.push_back(CarrierVersion{t->carrier(), t->carrier()->version()});
  }
  o.versions_.push_back(CarrierVersion{published.carrier(), published.carrier()->version()});
  o.kernel_operands_.assign(kernel_operands.begin(), kernel_operands.end());
  o.vjp_ = find_vjp(name);
  o.plan_ = std::move(plan);
  o.attributes_ = std::move(attributes);
  o.outputs_.push_back(published.detach());
  o.kernel_shape_ = kernel_shape;
  o.result_count_ = 1;
  attach(published, op);
}

void OperationAccess::record_view(const Tensor& source, const Tensor& view, strideweave::detail::ViewKind kind,
                                  std::span<const std::int64_t> params, const std::shared_ptr<Operation>& target) {
  // Parameters become Attributes: permute -> "perm"; slice -> "axis",
  // "start" (normalised as the Layout did) and "step" (the view's extent
  // gives the length); as_strided -> "ordinals".
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
  bool has_vjp = true;
  if (kind == K::as_strided) {
    std::optional<std::vector<std::int64_t>> ordinals = source_ordinals(source, view);
    if (ordinals) attributes.set("ordinals", std::move(*ordinals));
    else has_vjp = false;  // beyond its source's elements: backward raises NotImplementedError
  }
  const KernelOperand operands[] = {source};
  const Tensor* inputs[] = {&source};
  record_kernel(view_name(kind), std::nullopt, std::move(attributes), operands, view, inputs, std::nullopt, target);
  if (!has_vjp && view.autograd_ctx()) view.autograd_ctx()->vjp_ = nullptr;
}

void OperationAccess::begin_forward(Operation& op) {
  if (op.forwarded_)
    throw RuntimeError(fmt::format("Operation.forward: this '{}' operation was already run; dispatch a fresh one "
                                   "(carrier.dispatch_op) for every call",
                                   op.name()));
  op.forwarded_ = true;
}

void record_call(const OperationPlan& plan, std::span<const KernelOperand> kernel_operands,
                 const Attributes& attributes, const Tensor& published, std::span<const Tensor* const> inputs,
                 const std::optional<Shape>& kernel_shape, const std::shared_ptr<Operation>& target) {
  if (!grad_enabled) return;
  OperationAccess::record_kernel(plan.operation(), plan, attributes, kernel_operands, published, inputs, kernel_shape,
                                 target);
}

void refuse_caller_output(const OperationPlan& plan, std::span<const Tensor* const> inputs) {
  if (plan.output_differentiable() && OperationAccess::saves_inputs(inputs))
    throw RuntimeError(fmt::format(
        "{}: accumulating into a caller-provided output cannot be recorded for autograd (grad mode is on and a "
        "Float32 operand takes part in differentiation); accumulate under no_grad(), or compute into fresh storage",
        plan.operation()));
}

// ---- traversal support

const ImplPtr* OperationAccess::edge(const Operation& op, std::size_t i) noexcept {
  if (i >= op.inputs_.size() || !op.inputs_[i].is_differentiable()) return nullptr;
  return &TensorAccess::shared(op.inputs_[i]);
}

void OperationAccess::release(Operation& op) noexcept {
  op.released_ = true;
  op.inputs_.clear();
  op.versions_.clear();
  op.kernel_operands_.clear();
  op.outputs_.clear();
  op.saved_operands_.clear();
  op.invocation_.reset();
}

namespace {

// Which saved values of `op` use `carrier`, for an error message:
// "input 1 of 'mul'", "inputs 0 and 1 of 'mul'", "the result of 'exp'",
// each with the first one's dtype and shape.
std::string saved_users(const Operation& op, const Carrier& carrier) {
  std::vector<std::size_t> positions;
  const Tensor* first = nullptr;
  const std::span<const Tensor> inputs = op.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].carrier().get() == &carrier) {
      positions.push_back(i);
      if (!first) first = &inputs[i];
    }
  std::vector<std::size_t> results;
  for (std::size_t r = 0; r < op.outputs().size(); ++r)
    if (op.outputs()[r].carrier().get() == &carrier) {
      results.push_back(r);
      if (!first) first = &op.outputs()[r];
    }
  std::string who;
  const auto list = [](std::span<const std::size_t> v) {
    std::string out;
    for (std::size_t k = 0; k < v.size(); ++k)
      out += fmt::format("{}{}", k == 0 ? "" : (k + 1 == v.size() ? " and " : ", "), v[k]);
    return out;
  };
  if (!positions.empty()) {
    const operation::ResolvedInvocation* inv = op.invocation().get();
    if (inv && positions.size() == 1) {
      // A definition call: name the schema operand.
      std::size_t tensor_ordinal = 0;
      for (std::size_t s = 0; s < inv->operands().size(); ++s)
        if (std::holds_alternative<Tensor>(inv->operands()[s]) && tensor_ordinal++ == positions[0])
          who = fmt::format("input '{}' (operand {})", inv->definition().schema().operands()[s].name(), s);
    }
    if (who.empty()) who = fmt::format("{} {}", positions.size() == 1 ? "input" : "inputs", list(positions));
  }
  if (!results.empty()) {
    if (!who.empty()) who += " and ";
    who += op.result_count() == 1 ? "the result" : fmt::format("result {}", list(results));
  }
  who += fmt::format(" of '{}'", op.name());
  if (first) who += fmt::format(" ({} tensor of shape {})", first->dtype().name(), first->shape().to_string());
  return who;
}

void check_versions(const Operation& op, const Carrier& carrier, std::uint64_t saved) {
  if (carrier.is_released())
    throw RuntimeError(fmt::format("backward: the {} carrier of {}, saved for its gradient, was released",
                                   carrier.class_name(), saved_users(op, carrier)));
  if (carrier.version() != saved)
    throw RuntimeError(fmt::format(
        "backward: one of the variables needed for gradient computation has been modified by an inplace "
        "operation: {} is at version {} of its {} carrier; expected version {} (a write after the call, e.g. "
        "Tensor::set, changed a value its gradient reads)",
        saved_users(op, carrier), carrier.version(), carrier.class_name(), saved));
}

}  // namespace

void OperationAccess::check_ready(const Operation& op) {
  if (op.released_)
    throw RuntimeError(fmt::format(
        "backward: the graph through '{}' was already released by an earlier backward; pass retain_graph=True to "
        "the first backward to traverse it again",
        op.name()));
  if (op.kind_ == Operation::Kind::none)
    throw RuntimeError(fmt::format("backward: the '{}' operation recorded no graph (grad mode was off, or no "
                                   "differentiable input took part)",
                                   op.name()));
  // A view reads no values; a move's source is released by the move itself
  // and its result is new storage: neither has saved values to protect.
  if (op.kind_ != Operation::Kind::view && op.kind_ != Operation::Kind::move)
    for (const CarrierVersion& v : op.versions_) check_versions(op, *v.carrier, v.version);
  if (!op.vjp_ && op.kind_ != Operation::Kind::definition)
    throw NotImplementedError(fmt::format("backward: the derivative of '{}' is not implemented", op.name()));
}

std::vector<std::optional<Tensor>> kernel_backward(const VjpFn& vjp, const std::string& name,
                                                   const std::optional<OperationPlan>& plan,
                                                   const Attributes& attributes,
                                                   std::span<const KernelOperand> kernel_operands,
                                                   std::span<const std::int32_t> operand_input,
                                                   std::span<const std::vector<std::shared_ptr<Operation>>> operand_views,
                                                   const Tensor& kernel_output, const Tensor& cotangent,
                                                   std::size_t input_count, const std::vector<bool>& wanted) {
  std::vector<bool> needs(kernel_operands.size(), false);
  bool any = false;
  for (std::size_t j = 0; j < kernel_operands.size(); ++j) {
    const std::int32_t i = operand_input[j];
    const Tensor* t = std::get_if<Tensor>(&kernel_operands[j]);
    needs[j] = i >= 0 && t && t->is_differentiable() && wanted[static_cast<std::size_t>(i)];
    any = any || needs[j];
  }
  std::vector<std::optional<Tensor>> out(input_count);
  if (!any) return out;
  const VjpContext ctx{name, plan, kernel_operands, attributes, kernel_output, needs};
  std::vector<std::optional<Tensor>> grads = vjp(ctx, cotangent);
  if (grads.size() != kernel_operands.size())
    throw RuntimeError(fmt::format("backward: the VJP of '{}' returned {} gradients for {} operands", name,
                                   grads.size(), kernel_operands.size()));
  for (std::size_t j = 0; j < grads.size(); ++j) {
    if (!grads[j] || !needs[j]) continue;
    const Tensor& operand = std::get<Tensor>(kernel_operands[j]);
    if (!std::ranges::equal(grads[j]->shape().extents(), operand.shape().extents()) || !grads[j]->is_differentiable())
      throw RuntimeError(fmt::format("backward: the VJP of '{}' returned a gradient {} {} for operand {} of shape {}",
                                     name, grads[j]->dtype().name(), grads[j]->shape().to_string(), j,
                                     operand.shape().to_string()));
    std::optional<Tensor> g = std::move(grads[j]);
    // Back through the views the front end made of the input (nearest first).
    for (const std::shared_ptr<Operation>& v : operand_views[j]) {
      if (!g) break;
      const std::optional<Tensor> one[] = {*g};
      g = std::move(OperationAccess::apply(*v, one).front());
    }
    if (!g) continue;
    std::optional<Tensor>& slot = out[static_cast<std::size_t>(operand_input[j])];
    slot = slot ? add(*slot, *g) : *g;
  }
  return out;
}

std::vector<std::optional<Tensor>> OperationAccess::apply_kernel(const Operation& op, const Tensor& cotangent) {
  const Tensor& published = op.outputs_.front();
  const Tensor cot = op.kernel_shape_ ? reshape_to(cotangent, *op.kernel_shape_) : cotangent;
  const Tensor kernel_output = op.kernel_shape_ ? reshape_to(published, *op.kernel_shape_) : published;
  std::vector<bool> wanted(op.inputs_.size());
  for (std::size_t i = 0; i < op.inputs_.size(); ++i) wanted[i] = op.inputs_[i].is_differentiable();
  if (!op.vjp_) throw NotImplementedError(fmt::format("backward: the derivative of '{}' is not implemented", op.name()));
  std::vector<const Tensor*> inputs(op.inputs_.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = &op.inputs_[i];
  std::vector<std::int32_t> operand_input;
  std::vector<std::vector<std::shared_ptr<Operation>>> operand_views;
  map_operands_to_inputs(op.kernel_operands_, inputs, operand_input, operand_views);
  return kernel_backward(*op.vjp_, op.plan_ ? op.plan_->operation() : op.name(), op.plan_, op.attributes_,
                         op.kernel_operands_, operand_input, operand_views, kernel_output, cot, op.inputs_.size(),
                         wanted);
}

std::vector<std::optional<Tensor>> OperationAccess::apply(const Operation& op,
                                                          std::span<const std::optional<Tensor>> cotangents) {
  if (op.kind_ == Operation::Kind::definition) return apply_definition(op, cotangents);
  if (cotangents.empty() || !cotangents[0]) return std::vector<std::optional<Tensor>>(op.inputs_.size());
  return apply_kernel(op, *cotangents[0]);
}

}  // namespace autograd
}  // namespace strideweave
