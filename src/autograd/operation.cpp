// Dispatch: Carrier::dispatch_op, Operation::forward and the custom classes'
// dispatch hook (core-concepts 1.8; upstream carrier-dispatch;
// carrier-extension R13.1). See docs/autograd.md, "Operation", and
// docs/extension.md, "Definition-free custom carriers".
#include <strideweave/autograd.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/graph.h"
#include "autograd/record.h"
#include "execution/kernel_table.h"
#include "frontend/definition_dispatch.h"

namespace strideweave {
namespace autograd {
namespace {

// The library's pure views reachable through dispatch_op, with the options
// that carry their parameters (the Tensor methods of the same names).
constexpr std::array<std::string_view, 6> kViewNames{"as_strided", "broadcast_to", "permute",
                                                     "reshape",    "squeeze",      "unsqueeze"};

// The registered definition of `name`, or null.
std::shared_ptr<const operation::OperationDefinition> definition_named(std::string_view name) {
  try {
    return operation::get_definition(name);
  } catch (const LookupError&) {
    return nullptr;
  }
}

bool is_view_name(std::string_view name) {
  return std::find(kViewNames.begin(), kViewNames.end(), name) != kViewNames.end();
}

// Whether `cls` computes with the library's own machinery: a kernel table
// with at least one plan (Generic, CPU), or a CarrierDefinition with
// kernels or a composite provider. Storage-only classes (FileBacked,
// BlockDeviceCarrier, a definition without either) and custom
// definition-free classes answer false.
bool framework_computes(CarrierClass cls) {
  if (const KernelTable* table = kernel_table(cls)) return !table->plans().empty();
  if (const auto definition = extension::carrier_definition(cls))
    return definition->kernels().has_value() || definition->composite().has_value();
  return false;
}

std::vector<std::int64_t> ints_option(const CallOptions& options, const char* view, const char* name, bool required) {
  const auto it = options.find(name);
  if (it == options.end() || std::holds_alternative<std::monostate>(it->second)) {
    if (required) throw TypeError(fmt::format("{}.forward: missing the option '{}'", view, name));
    return {};
  }
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&it->second)) return *list;
  if (const auto* one = std::get_if<std::int64_t>(&it->second)) return {*one};
  throw TypeError(fmt::format("{}.forward: the option '{}' must be a list of integers", view, name));
}

// A view through dispatch_op: the Tensor method of the same name, recorded
// as `self` (its one input is the source).
Tensor forward_view(const std::shared_ptr<Operation>& self, const std::string& name,
                    std::span<const operation::CallOperand> inputs, const CallOptions& options) {
  if (inputs.size() != 1 || !std::holds_alternative<Tensor>(inputs[0]))
    throw TypeError(fmt::format("{}.forward: a view takes exactly one Tensor operand", name));
  const std::array<std::string_view, 5> known{"perm", "shape", "axes", "axis", "stride"};
  for (const auto& [key, value] : options)
    if (std::find(known.begin(), known.end(), key) == known.end() && key != "offset")
      throw TypeError(fmt::format("{}.forward: unknown option '{}'", name, key));
  const Tensor& x = std::get<Tensor>(inputs[0]);
  x.carrier()->require_live(name.c_str());
  using detail::ViewKind;
  ViewKind kind{};
  std::vector<std::int64_t> params;
  Tensor view = [&] {
    NoGradGuard recorded_below;  // this Operation records the view, not the view hook
    if (name == "permute") {
      kind = ViewKind::permute;
      params = ints_option(options, "permute", "perm", true);
      return x.permute(params);
    }
    if (name == "reshape") {
      kind = ViewKind::reshape;
      return x.reshape(Shape::of(ints_option(options, "reshape", "shape", true)));
    }
    if (name == "squeeze") {
      kind = ViewKind::squeeze;
      const auto it = options.find("axes");
      if (it == options.end() || std::holds_alternative<std::monostate>(it->second)) return x.squeeze();
      return x.squeeze(ints_option(options, "squeeze", "axes", true));
    }
    if (name == "unsqueeze") {
      kind = ViewKind::unsqueeze;
      const std::vector<std::int64_t> axis = ints_option(options, "unsqueeze", "axis", true);
      if (axis.size() != 1) throw TypeError("unsqueeze.forward: the option 'axis' is one integer");
      return x.unsqueeze(axis[0]);
    }
    if (name == "broadcast_to") {
      kind = ViewKind::broadcast_to;
      return x.broadcast_to(Shape::of(ints_option(options, "broadcast_to", "shape", true)));
    }
    kind = ViewKind::as_strided;
    const std::vector<std::int64_t> shape = ints_option(options, "as_strided", "shape", true);
    const std::vector<std::int64_t> stride = ints_option(options, "as_strided", "stride", true);
    const std::vector<std::int64_t> offset = ints_option(options, "as_strided", "offset", false);
    if (offset.size() > 1) throw TypeError("as_strided.forward: the option 'offset' is one integer");
    return x.as_strided(Layout(Shape::of(shape), Stride::of(stride)), offset.empty() ? x.offset() : offset[0]);
  }();
  OperationAccess::record_view(x, view, kind, params, self);
  return view;
}

}  // namespace

namespace {
UnsupportedOperationPlan no_implementation(const Carrier& prototype, const OperationPlan& plan, std::string_view name,
                                           const std::exception& e) {
  return UnsupportedOperationPlan(
      fmt::format("{} has a capability for {} but its dispatch hook supplies no implementation of '{}' ({})",
                  prototype.class_name(), plan.to_string(), name, e.what()),
      plan);
}
}  // namespace

std::shared_ptr<Operation> dispatch_hook_operation(const Carrier& prototype, const OperationPlan& plan,
                                                   std::string_view name, const std::shared_ptr<Operation>& target) {
  if (target) return target;
  try {
    return prototype.dispatch_op(name);
  } catch (const UnsupportedOperationPlan&) {
    throw;
  } catch (const NotImplementedError& e) {
    throw no_implementation(prototype, plan, name, e);
  }
}

void run_dispatch_hook(Operation& op, const Carrier& prototype, const OperationPlan& plan, const DispatchedCall& call) {
  NoGradGuard provider_code_records_nothing;
  try {
    OperationAccess::run_forward(op, call);
  } catch (const UnsupportedOperationPlan&) {
    throw;
  } catch (const NotImplementedError& e) {
    throw no_implementation(prototype, plan, call.operation, e);
  }
}

}  // namespace autograd

std::shared_ptr<Operation> Carrier::dispatch_op(std::string_view operation_name) const {
  const CarrierClass cls = exact_class();
  std::shared_ptr<Operation> op;
  if (autograd::framework_computes(cls)) {
    // The library's own classes (and definition-backed ones): every
    // registered operation name, and the pure views.
    if (!autograd::is_view_name(operation_name) && !autograd::definition_named(operation_name))
      throw NotImplementedError(fmt::format("{}.dispatch_op: no operation named '{}'", class_name(), operation_name));
    op = std::make_shared<Operation>();
  } else if (kernel_table(cls) || extension::carrier_definition(cls)) {
    throw NotImplementedError(fmt::format("{}.dispatch_op: {} is storage only and computes no operation ('{}')",
                                          class_name(), class_name(), operation_name));
  } else {
    // A custom definition-free class: its dispatch hook.
    op = _dispatch_op(operation_name);
    if (!op)
      throw TypeError(fmt::format("{}.dispatch_op: the dispatch hook returned no Operation for '{}'", class_name(),
                                  operation_name));
    if (autograd::OperationAccess::dispatched(*op))
      throw TypeError(fmt::format("{}.dispatch_op: the dispatch hook returned an Operation that was already "
                                  "dispatched (as '{}'); every dispatch needs a fresh Operation",
                                  class_name(), op->name()));
  }
  autograd::OperationAccess::set_metadata(*op, std::string(operation_name), cls);
  return op;
}

std::vector<Tensor> Operation::forward(std::span<const operation::CallOperand> inputs, const CallOptions& options) {
  if (!dispatched_)
    throw NotImplementedError("Operation.forward: this Operation was never dispatched; get one from "
                              "carrier.dispatch_op(name)");
  autograd::OperationAccess::begin_forward(*this);
  const std::string& name = *operation_name_;
  for (const operation::CallOperand& o : inputs)
    if (const Tensor* t = std::get_if<Tensor>(&o); t && !(t->carrier_type() == *dispatch_class_))
      throw TypeError(fmt::format("{}.forward: an operand lives on {}, but this operation was dispatched by {}", name,
                                  t->carrier()->class_name(), dispatch_class_->name()));
  const std::shared_ptr<Operation> self = shared_from_this();
  if (autograd::is_view_name(name)) return {autograd::forward_view(self, name, inputs, options)};
  const std::shared_ptr<const operation::OperationDefinition> definition = autograd::definition_named(name);
  if (!definition)
    throw NotImplementedError(fmt::format("{}.forward: no operation named '{}'", dispatch_class_->name(), name));
  return frontend::dispatch_definition(*definition, std::vector<operation::CallOperand>(inputs.begin(), inputs.end()),
                                       options, Output{}, self);
}

std::vector<Tensor> Operation::forward(std::span<const operation::CallOperand> inputs, const OperationExecutionOptions& options) {
  if (operation_name_ && options.operation() != *operation_name_)
    throw ValueError(fmt::format("{}.forward: the execution options are bound to '{}'", *operation_name_,
                                 options.operation()));
  CallOptions map;
  if (const DType* accumulator = options.accumulator_dtype()) map.emplace("accumulator_dtype", accumulator);
  if (const std::optional<Arithmetic> arithmetic = options.arithmetic())
    map.emplace("arithmetic", std::string(value_of(*arithmetic)));
  return forward(inputs, map);
}

}  // namespace strideweave
