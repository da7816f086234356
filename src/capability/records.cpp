// Capability records, axis names and the structured error. See
// include/strideweave/capability.h.
#include <strideweave/capability.h>

#include <fmt/format.h>

#include <tuple>

namespace strideweave {

const char* name_of(SupportLevel level) noexcept {
  switch (level) {
    case SupportLevel::Unsupported: return "Unsupported";
    case SupportLevel::FallbackCopy: return "FallbackCopy";
    case SupportLevel::Native: return "Native";
  }
  return "?";
}

const char* name_of(ExecutionAxis axis) noexcept {
  switch (axis) {
    case ExecutionAxis::owned_result: return "owned_result";
    case ExecutionAxis::borrowed_input: return "borrowed_input";
    case ExecutionAxis::caller_output: return "caller_output";
    case ExecutionAxis::strided_output: return "strided_output";
    case ExecutionAxis::accumulation: return "accumulation";
  }
  return "?";
}

std::span<const ExecutionAxis> all_execution_axes() noexcept {
  static constexpr ExecutionAxis all[] = {ExecutionAxis::owned_result, ExecutionAxis::borrowed_input,
                                          ExecutionAxis::caller_output, ExecutionAxis::strided_output,
                                          ExecutionAxis::accumulation};
  return all;
}

SupportLevel ExecutionAxes::level(ExecutionAxis axis) const noexcept {
  switch (axis) {
    case ExecutionAxis::owned_result: return owned_result;
    case ExecutionAxis::borrowed_input: return borrowed_input;
    case ExecutionAxis::caller_output: return caller_output;
    case ExecutionAxis::strided_output: return strided_output;
    case ExecutionAxis::accumulation: return accumulation;
  }
  return SupportLevel::Unsupported;
}

namespace {

std::size_t mix(std::size_t seed, std::size_t v) noexcept {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

const SimpleDType* simple_or_throw(const DType* d, const char* what, const char* field) {
  if (!d) throw TypeError(fmt::format("{}: {} must be a SimpleDType, got None", what, field));
  if (!d->is_simple()) throw TypeError(fmt::format("{}: {} must be a SimpleDType, got '{}'", what, field, d->name()));
  return static_cast<const SimpleDType*>(d);
}

}  // namespace

OperandCapability::OperandCapability(OperandRole role, const DType* dtype, const DType* convert_to)
    : role_(role), dtype_(nullptr), convert_to_(simple_or_throw(convert_to, "OperandCapability", "convert_to")) {
  if (role == OperandRole::WEAK_SCALAR) {
    if (dtype)
      throw TypeError(fmt::format("OperandCapability: a weak-scalar operand has no storage dtype (got '{}')", dtype->name()));
  } else {
    dtype_ = simple_or_throw(dtype, "OperandCapability", "a tensor operand's dtype");
  }
}

OperandCapability OperandCapability::from_plan(const OperandPlan& plan) {
  return OperandCapability(plan.role(), plan.dtype(), &plan.convert_to());
}

std::size_t OperandCapability::hash() const noexcept {
  return mix(mix(static_cast<std::size_t>(role_), std::hash<const void*>()(dtype_)), std::hash<const void*>()(convert_to_));
}

OperationCapability::OperationCapability(std::string operation, std::vector<OperandCapability> operands,
                                         Arithmetic compute, std::optional<Accumulation> accumulation,
                                         const DType* accumulator_dtype, const DType* output)
    : operation_(std::move(operation)),
      operands_(std::move(operands)),
      compute_(compute),
      accumulation_(accumulation),
      accumulator_dtype_(nullptr),
      output_(simple_or_throw(output, "OperationCapability", "output")) {
  if (operation_.empty()) throw TypeError("OperationCapability: operation must be a non-empty name");
  if (accumulator_dtype) accumulator_dtype_ = simple_or_throw(accumulator_dtype, "OperationCapability", "accumulator_dtype");
  if (operands_.empty())
    throw ValueError(fmt::format("OperationCapability '{}': operands must be non-empty", operation_));
}

OperationCapability OperationCapability::from_plan(const OperationPlan& plan) {
  std::vector<OperandCapability> operands;
  for (const OperandPlan& o : plan.operands()) operands.push_back(OperandCapability::from_plan(o));
  return OperationCapability(plan.operation(), std::move(operands), plan.compute(), plan.accumulation(),
                             plan.accumulator_dtype(), &plan.output());
}

bool OperationCapability::matches(const OperationPlan& plan) const noexcept {
  // The scalar fields first, the operation name (a string comparison) last.
  const std::span<const OperandPlan> ops = plan.operands();
  if (operands_.size() != ops.size() || compute_ != plan.compute() || output_ != &plan.output() ||
      accumulator_dtype_ != plan.accumulator_dtype() || accumulation_ != plan.accumulation())
    return false;
  for (std::size_t i = 0; i < operands_.size(); ++i) {
    const OperandPlan& p = ops[i];
    if (operands_[i].role() != p.role() || operands_[i].dtype() != p.dtype() || &operands_[i].convert_to() != &p.convert_to())
      return false;
  }
  return operation_ == plan.operation();
}

OperationPlan OperationCapability::to_plan() const {
  std::vector<OperandPlan> operands;
  for (const OperandCapability& o : operands_) operands.emplace_back(o.role(), o.dtype(), o.convert_to());
  return OperationPlan(operation_, std::move(operands), compute_, accumulation_, accumulator_dtype_, *output_);
}

namespace {
std::string name_or_empty(const SimpleDType* d) { return d ? d->name() : std::string(); }
}  // namespace

bool operator<(const OperationCapability& a, const OperationCapability& b) {
  auto operand_keys = [](const OperationCapability& c) {
    std::vector<std::tuple<std::string, std::string, std::string>> keys;
    for (const OperandCapability& o : c.operands())
      keys.emplace_back(value_of(o.role()), name_or_empty(o.dtype()), o.convert_to().name());
    return keys;
  };
  auto key = [&](const OperationCapability& c) {
    return std::make_tuple(c.operation(), operand_keys(c), std::string(value_of(c.compute())),
                           c.accumulation() ? std::string(value_of(*c.accumulation())) : std::string(),
                           name_or_empty(c.accumulator_dtype()), c.output().name());
  };
  return key(a) < key(b);
}

std::size_t OperationCapability::hash() const noexcept {
  std::size_t h = std::hash<std::string>()(operation_);
  for (const OperandCapability& o : operands_) h = mix(h, o.hash());
  h = mix(h, static_cast<std::size_t>(compute_));
  h = mix(h, accumulation_ ? static_cast<std::size_t>(*accumulation_) + 1 : 0);
  h = mix(h, std::hash<const void*>()(accumulator_dtype_));
  return mix(h, std::hash<const void*>()(output_));
}

UnsupportedOpDType::UnsupportedOpDType(std::string backend, std::string operation, const SimpleDType* dtype,
                                       std::optional<ExecutionAxis> axis, std::string reason,
                                       std::optional<OperationPlan> plan)
    : UnsupportedOperationPlan(std::move(reason), std::move(plan)),
      backend_(std::move(backend)),
      operation_(std::move(operation)),
      dtype_(dtype),
      axis_(axis) {}

}  // namespace strideweave
