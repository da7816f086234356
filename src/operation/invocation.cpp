// Binding, result contracts, resolved invocations and VJP contexts. See
// include/strideweave/operation.h.
#include <strideweave/operation.h>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace strideweave::operation {

namespace {

const char* kind_word(const CallOperand& o) {
  if (std::holds_alternative<Tensor>(o)) return "a Tensor";
  if (std::holds_alternative<WeakScalar>(o)) return "a weak scalar";
  return "a structural value";
}

}  // namespace

// ---------------------------------------------------------------- binding

struct BindAccess {
  // One allocation for the call and its control block (make_shared needs a
  // constructor it can reach; this member of the friend can).
  struct Made final : BoundOperationCall {};
  static std::shared_ptr<BoundOperationCall> make() { return std::make_shared<Made>(); }
  static void set(BoundOperationCall& c, std::shared_ptr<const OperationDefinition> d, std::vector<CallOperand> ops,
                  OptionMap options) {
    c.definition_ = std::move(d);
    c.operands_ = std::move(ops);
    c.options_ = std::move(options);
  }
};

std::shared_ptr<const BoundOperationCall> bind(const OperationDefinition& definition, std::vector<CallOperand> operands,
                                               OptionMap options) {
  const std::string& op = definition.name();
  const OperationSchema& schema = definition.schema();
  const std::span<const OperandSpec> specs = schema.operands();
  if (operands.size() < specs.size())
    throw TypeError(fmt::format("{}: missing operand '{}' (takes {} operand(s), got {})", op,
                                specs[operands.size()].name(), specs.size(), operands.size()));
  if (operands.size() > specs.size())
    throw TypeError(fmt::format("{}: takes {} operand(s), got {}", op, specs.size(), operands.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& s = specs[i];
    const CallOperand& o = operands[i];
    if (s.kind() == OperandKind::TENSOR && !std::holds_alternative<Tensor>(o) &&
        !(s.accepts_weak_scalar() && std::holds_alternative<WeakScalar>(o)))
      throw TypeError(fmt::format("{}: operand '{}' must be a Tensor, got {}", op, s.name(), kind_word(o)));
    if (s.kind() == OperandKind::WEAK_SCALAR && !std::holds_alternative<WeakScalar>(o))
      throw TypeError(fmt::format("{}: operand '{}' must be a weak scalar (a real number), got {}", op, s.name(),
                                  kind_word(o)));
  }
  for (const auto& [name, value] : options)
    if (!schema.option(name)) throw TypeError(fmt::format("{}: unknown option '{}'", op, name));
  OptionMap bound;
  for (const OptionSpec& s : schema.options()) {
    auto it = options.find(s.name());
    if (it != options.end()) {
      // Each given value against its declared kind, before resolve runs.
      bound.emplace(s.name(), s.admit(op, std::move(it->second)));
    } else if (s.required()) {
      throw TypeError(fmt::format("{}: missing required option '{}'", op, s.name()));
    } else {
      bound.emplace(s.name(), std::get<OptionValue>(s.default_value()));
    }
  }
  std::shared_ptr<BoundOperationCall> call = BindAccess::make();
  BindAccess::set(*call, definition.shared_from_this(), std::move(operands), std::move(bound));
  return call;
}

const OptionValue& BoundOperationCall::option(std::string_view name) const {
  auto it = options_.find(name);
  if (it == options_.end())
    throw LookupError(fmt::format("{}: no option '{}'", definition_->name(), name));
  return it->second;
}

const Tensor& BoundOperationCall::tensor(std::size_t i) const {
  if (i >= operands_.size())
    throw IndexError(fmt::format("{}: operand {} is out of range ({} operands)", definition_->name(), i,
                                 operands_.size()));
  if (const Tensor* t = std::get_if<Tensor>(&operands_[i])) return *t;
  throw TypeError(fmt::format("{}: operand {} is not a Tensor", definition_->name(), i));
}

// ---------------------------------------------------------------- ResultSpec

ResultSpec::ResultSpec(const DType& dtype, Shape shape, Layout layout, std::optional<std::size_t> alias_of, double atol,
                       double rtol)
    : dtype_(&dtype), shape_(std::move(shape)), layout_(std::move(layout)), alias_of_(alias_of), atol_(atol), rtol_(rtol) {
  if (!(layout_.shape() == shape_))
    throw ValueError(fmt::format("ResultSpec: layout {} does not have the shape {}", layout_.to_string(),
                                 shape_.to_string()));
  if (!std::isfinite(atol_) || atol_ < 0.0 || !std::isfinite(rtol_) || rtol_ < 0.0)
    throw ValueError(fmt::format("ResultSpec: atol and rtol must be finite and non-negative (got {}, {})", atol_, rtol_));
}

ResultSpec ResultSpec::compact(const DType& dtype, const Shape& shape, double atol, double rtol) {
  return ResultSpec(dtype, shape, Layout::compact(shape), std::nullopt, atol, rtol);
}

// ---------------------------------------------------------------- ResolvedInvocation

ResolvedInvocation::ResolvedInvocation(const BoundOperationCall& call, OperationPlan plan,
                                       std::vector<ResultSpec> results, std::vector<std::size_t> mutated_operands,
                                       std::vector<std::size_t> saved_operands, std::optional<std::string> kernel_id)
    : call_(call.shared_from_this()),
      plan_(std::move(plan)),
      results_(std::move(results)),
      mutated_(std::move(mutated_operands)),
      saved_(std::move(saved_operands)),
      kernel_id_(kernel_id ? std::move(*kernel_id) : call.definition().name()) {
  validate(call);
}

ResolvedInvocation::ResolvedInvocation(const BoundOperationCall& call, OperationPlan plan,
                                       std::initializer_list<ResultSpec> results,
                                       std::initializer_list<std::size_t> mutated_operands,
                                       std::initializer_list<std::size_t> saved_operands,
                                       std::optional<std::string> kernel_id)
    : call_(call.shared_from_this()),
      plan_(std::move(plan)),
      mutated_(mutated_operands),
      saved_(saved_operands),
      kernel_id_(kernel_id ? std::move(*kernel_id) : call.definition().name()) {
  if (results.size() == 1)
    single_.emplace(*results.begin());
  else
    results_.assign(results.begin(), results.end());
  validate(call);
}

void ResolvedInvocation::validate(const BoundOperationCall& call) const {
  const std::string& op = call.definition().name();
  const std::span<const OperandSpec> specs = call.definition().schema().operands();
  if (plan_.operation() != op)
    throw ValueError(fmt::format("ResolvedInvocation of {}: the plan names operation '{}'", op, plan_.operation()));
  // The plan has one operand per tensor / weak-scalar operand, in order,
  // each with the role of the bound value and a tensor's stored dtype.
  struct Slot {
    OperandRole role;
    const DType* dtype;  // a tensor's; nullptr for a weak scalar
    std::size_t operand;
  };
  // Small operand counts stay on the stack (no allocation per call).
  std::size_t slot_count = 0;
  for (const OperandSpec& s : specs) slot_count += s.kind() == OperandKind::STRUCTURAL ? 0 : 1;
  std::array<Slot, 8> inline_slots;  // left uninitialised: value-initialising zero-filled 192 bytes per call
  std::vector<Slot> heap_slots(slot_count > inline_slots.size() ? slot_count : 0);
  const std::span<Slot> slots(slot_count > inline_slots.size() ? heap_slots.data() : inline_slots.data(), slot_count);
  for (std::size_t i = 0, k = 0; i < specs.size(); ++i) {
    if (specs[i].kind() == OperandKind::STRUCTURAL) continue;
    const Tensor* t = std::get_if<Tensor>(&call.operands()[i]);
    slots[k++] = Slot{t ? OperandRole::TENSOR : OperandRole::WEAK_SCALAR, t ? &t->dtype() : nullptr, i};
  }
  if (slots.size() != plan_.operands().size())
    throw ValueError(fmt::format("ResolvedInvocation of {}: the plan has {} operand(s) but the call has {} tensor and "
                                 "weak-scalar operand(s)",
                                 op, plan_.operands().size(), slots.size()));
  auto conflict = [&](std::size_t p) -> std::optional<std::string> {
    const OperandPlan& o = plan_.operands()[p];
    const Slot& slot = slots[p];
    if (o.role() != slot.role)
      return fmt::format("plan operand {} is a {} but operand '{}' is a {}", p, name_of(o.role()),
                         specs[slot.operand].name(), name_of(slot.role));
    if (slot.dtype && o.dtype() != slot.dtype)
      return fmt::format("plan operand {} reads {} but operand '{}' stores {}", p,
                         o.dtype() ? o.dtype()->name() : "None", specs[slot.operand].name(), slot.dtype->name());
    return std::nullopt;
  };
  // Plan operand p describes call operand p (structural operands aside), so
  // the kernel reads the operands in the plan's role order (mul(weak,
  // tensor) included: its plan lists the weak scalar first). The common
  // case, every operand agreeing, is checked without building any message.
  for (std::size_t p = 0; p < slots.size(); ++p)
    if (std::optional<std::string> c = conflict(p))
      throw ValueError(fmt::format("ResolvedInvocation of {}: {}", op, *c));
  if (results().empty()) throw ValueError(fmt::format("ResolvedInvocation of {}: results must not be empty", op));
  auto tensor_index = [&](std::size_t i, const char* what) {
    if (i >= specs.size())
      throw ValueError(fmt::format("ResolvedInvocation of {}: {} index {} is out of range ({} operands)", op, what, i,
                                   specs.size()));
    if (!std::holds_alternative<Tensor>(call.operands()[i]))
      throw ValueError(fmt::format("ResolvedInvocation of {}: {} index {} names operand '{}', which is not a Tensor",
                                   op, what, i, specs[i].name()));
  };
  // The plan's output is the dtype of the operation's result: the first
  // result stores it. A multi-result operation's later results declare their
  // own dtypes (operation-semantics' alias rule speaks of results that would
  // not receive the differentiable node: an Int32 index beside Float32
  // values); docs/extension.md, "Result dtypes and aliased results".
  if (!results().empty() && &results()[0].dtype() != &plan_.output())
    throw ValueError(fmt::format("ResolvedInvocation of {}: result 0 has dtype {} but the plan's output is {}", op,
                                 results()[0].dtype().name(), plan_.output().name()));
  // An aliased result is the operand itself: its contract describes that
  // tensor exactly (dtype, shape, layout).
  for (std::size_t r = 0; r < results().size(); ++r) {
    const ResultSpec& spec = results()[r];
    if (!spec.alias_of()) continue;
    tensor_index(*spec.alias_of(), "alias_of");
    const Tensor& aliased = std::get<Tensor>(call.operands()[*spec.alias_of()]);
    const std::string& name = specs[*spec.alias_of()].name();
    if (&aliased.dtype() != &spec.dtype())
      throw ValueError(fmt::format("ResolvedInvocation of {}: result {} aliases operand '{}' of dtype {} but declares "
                                   "{}",
                                   op, r, name, aliased.dtype().name(), spec.dtype().name()));
    if (!(aliased.shape() == spec.shape()) || !(aliased.layout() == spec.layout()))
      throw ValueError(fmt::format("ResolvedInvocation of {}: result {} aliases operand '{}' of shape {} and layout {} "
                                   "but declares shape {} and layout {}",
                                   op, r, name, aliased.shape().to_string(), aliased.layout().to_string(),
                                   spec.shape().to_string(), spec.layout().to_string()));
  }
  // Indices are checked in range before the repeat check, so a bit per
  // schema operand suffices: a fixed array for up to 256 operands, a heap
  // bitmap beyond (no per-call allocation for ordinary schemas).
  for (const auto& [list, what] : {std::pair{&mutated_, "mutated operand"}, std::pair{&saved_, "saved operand"}}) {
    if (list->empty()) continue;
    std::array<std::uint64_t, 4> inline_bits{};
    std::vector<std::uint64_t> heap_bits(specs.size() > 256 ? (specs.size() + 63) / 64 : 0);
    std::uint64_t* bits = specs.size() > 256 ? heap_bits.data() : inline_bits.data();
    for (std::size_t i : *list) {
      tensor_index(i, what);
      const std::uint64_t bit = std::uint64_t{1} << (i % 64);
      if (bits[i / 64] & bit)
        throw ValueError(fmt::format("ResolvedInvocation of {}: {} index {} repeats", op, what, i));
      bits[i / 64] |= bit;
    }
  }
  if (kernel_id_.empty()) throw ValueError(fmt::format("ResolvedInvocation of {}: kernel_id must not be empty", op));
}

const std::string& ResolvedInvocation::operation() const noexcept { return call_->definition().name(); }

// ---------------------------------------------------------------- VJPContext

VJPContext::VJPContext(std::shared_ptr<const ResolvedInvocation> invocation, std::vector<Tensor> outputs,
                       std::vector<Tensor> saved_operands, std::vector<KernelOperand> kernel_operands,
                       Attributes attributes, std::vector<bool> needs_grad)
    : invocation_(std::move(invocation)),
      outputs_(std::move(outputs)),
      saved_(std::move(saved_operands)),
      kernel_operands_(std::move(kernel_operands)),
      attributes_(std::move(attributes)),
      needs_grad_(std::move(needs_grad)) {}

bool VJPContext::needs_grad(std::size_t operand) const noexcept {
  if (operand < needs_grad_.size()) return needs_grad_[operand];
  const std::span<const OperandSpec> specs = invocation_->definition().schema().operands();
  return operand < specs.size() && specs[operand].differentiable();
}

}  // namespace strideweave::operation
