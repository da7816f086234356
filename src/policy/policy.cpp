// Records, weak scalars, specifications and resolution of the central dtype
// policy. The table of registered operations is in operation_table.cpp.
#include <strideweave/errors.h>
#include <strideweave/policy.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <unordered_set>

#include "policy/operation_table.h"
#include "policy/resolution_probe.h"

// Header-only xxHash (XXH3-64 of operation names): no link dependency for
// this layer.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace strideweave {

// ---------------------------------------------------------------- enums

const char* name_of(OperandRole role) noexcept { return role == OperandRole::TENSOR ? "TENSOR" : "WEAK_SCALAR"; }
const char* value_of(OperandRole role) noexcept { return role == OperandRole::TENSOR ? "tensor" : "weak_scalar"; }

const char* name_of(Arithmetic a) noexcept {
  switch (a) {
#define SW_ARITHMETIC(member, value) \
  case Arithmetic::member: return #member;
#include <strideweave/policy_enums.def>
  }
  return "?";
}
const char* value_of(Arithmetic a) noexcept {
  switch (a) {
#define SW_ARITHMETIC(member, value) \
  case Arithmetic::member: return value;
#include <strideweave/policy_enums.def>
  }
  return "?";
}
const char* name_of(Accumulation a) noexcept {
  switch (a) {
#define SW_ACCUMULATION(member, value) \
  case Accumulation::member: return #member;
#include <strideweave/policy_enums.def>
  }
  return "?";
}
const char* value_of(Accumulation a) noexcept {
  switch (a) {
#define SW_ACCUMULATION(member, value) \
  case Accumulation::member: return value;
#include <strideweave/policy_enums.def>
  }
  return "?";
}
Arithmetic arithmetic_from_value(std::string_view value) {
  for (Arithmetic a : all_arithmetics())
    if (value == value_of(a)) return a;
  std::string known;
  for (Arithmetic a : all_arithmetics()) known += (known.empty() ? "" : ", ") + std::string(value_of(a));
  throw ValueError(fmt::format("'{}' is not a valid Arithmetic ({})", value, known));
}

std::span<const Arithmetic> all_arithmetics() noexcept {
  static constexpr Arithmetic all[] = {
#define SW_ARITHMETIC(member, value) Arithmetic::member,
#include <strideweave/policy_enums.def>
  };
  return all;
}
std::span<const Accumulation> all_accumulations() noexcept {
  static constexpr Accumulation all[] = {
#define SW_ACCUMULATION(member, value) Accumulation::member,
#include <strideweave/policy_enums.def>
  };
  return all;
}

// ---------------------------------------------------------------- weak scalars

double WeakScalar::real_value() const noexcept {
  return kind_ == WeakScalarKind::INTEGER ? static_cast<double>(integer_) : float_;
}

float WeakScalar::to_float32() const noexcept {
  // int128 -> float rounds to nearest even (every int128 is below FLT_MAX).
  if (kind_ == WeakScalarKind::INTEGER) return static_cast<float>(integer_);
  // double -> float rounds to nearest even inside the float range; outside it
  // the conversion is undefined in C++, so round by hand: magnitudes from
  // FLT_MAX + half an ulp (2^103) up overflow to infinity, smaller ones round
  // down to FLT_MAX.
  const double max = static_cast<double>(std::numeric_limits<float>::max());
  if (std::isfinite(float_) && std::fabs(float_) > max) {
    const bool to_inf = std::fabs(float_) >= max + std::ldexp(1.0, 103);
    const float magnitude = to_inf ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::max();
    return float_ < 0 ? -magnitude : magnitude;
  }
  return static_cast<float>(float_);
}

std::int32_t WeakScalar::to_int32(std::string_view operation) const {
  if (integer_ < INT32_MIN_VALUE || integer_ > INT32_MAX_VALUE)
    throw OverflowError(fmt::format("{}: weak scalar {} is outside the Int32 range [{}, {}]", operation, to_string(),
                                    INT32_MIN_VALUE, INT32_MAX_VALUE));
  return static_cast<std::int32_t>(integer_);
}

std::string WeakScalar::to_string() const {
  if (is_bool_) return float_ != 0.0 ? "true" : "false";
  if (kind_ == WeakScalarKind::FLOAT) {
    if (std::isnan(float_)) return "nan";
    if (std::isinf(float_)) return float_ > 0 ? "inf" : "-inf";
    std::string s = fmt::format("{}", float_);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  // int128 has no standard formatting: print digits by hand.
  int128 v = integer_;
  const bool negative = v < 0;
  std::string digits;
  do {
    int d = static_cast<int>(v % 10);
    digits.push_back(static_cast<char>('0' + (negative ? -d : d)));
    v /= 10;
  } while (v != 0);
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

bool operator==(const WeakScalar& a, const WeakScalar& b) noexcept {
  if (a.kind_ != b.kind_ || a.is_bool_ != b.is_bool_) return false;
  return a.kind_ == WeakScalarKind::INTEGER ? a.integer_ == b.integer_ : a.float_ == b.float_;
}

// ---------------------------------------------------------------- records

namespace {
std::size_t mix(std::size_t seed, std::size_t v) noexcept {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}
}  // namespace

OperandPlan::OperandPlan(OperandRole role, const SimpleDType* dtype, const SimpleDType& convert_to)
    : role_(role), dtype_(dtype), convert_to_(&convert_to) {
  if (role == OperandRole::TENSOR && !dtype)
    throw TypeError("OperandPlan: a tensor operand needs a SimpleDType source dtype");
  if (role == OperandRole::WEAK_SCALAR && dtype)
    throw TypeError(fmt::format("OperandPlan: a weak-scalar operand has no dtype (got {})", dtype->name()));
}

std::size_t OperandPlan::hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(role_);
  h = mix(h, std::hash<const void*>()(dtype_));
  return mix(h, std::hash<const void*>()(convert_to_));
}

OperationPlan::OperationPlan(std::string operation, std::vector<OperandPlan> operands, Arithmetic compute,
                             std::optional<Accumulation> accumulation, const SimpleDType* accumulator_dtype,
                             const SimpleDType& output)
    : operation_(std::move(operation)),
      compute_(compute),
      accumulation_(accumulation),
      accumulator_dtype_(accumulator_dtype),
      output_(&output) {
  if (operands.size() > kInlineOperands) {
    count_ = operands.size();
    heap_ = std::move(operands);
  } else {
    set_operands(operands);
  }
  check();
}

OperationPlan::OperationPlan(std::string operation, std::initializer_list<OperandPlan> operands, Arithmetic compute,
                             std::optional<Accumulation> accumulation, const SimpleDType* accumulator_dtype,
                             const SimpleDType& output)
    : operation_(std::move(operation)),
      compute_(compute),
      accumulation_(accumulation),
      accumulator_dtype_(accumulator_dtype),
      output_(&output) {
  set_operands(std::span<const OperandPlan>(operands.begin(), operands.size()));
  check();
}

OperationPlan::OperationPlan(const OperationPlan& other)
    : operation_(other.operation_),
      heap_(other.heap_),
      count_(other.count_),
      compute_(other.compute_),
      accumulation_(other.accumulation_),
      accumulator_dtype_(other.accumulator_dtype_),
      output_(other.output_),
      hash_(other.hash_.load(std::memory_order_relaxed)) {
  std::copy_n(other.inline_, std::min(other.count_, kInlineOperands), inline_);  // the used slots
}

OperationPlan::OperationPlan(OperationPlan&& other) noexcept
    : operation_(std::move(other.operation_)),
      heap_(std::move(other.heap_)),
      count_(other.count_),
      compute_(other.compute_),
      accumulation_(other.accumulation_),
      accumulator_dtype_(other.accumulator_dtype_),
      output_(other.output_),
      hash_(other.hash_.load(std::memory_order_relaxed)) {
  std::copy_n(other.inline_, std::min(other.count_, kInlineOperands), inline_);  // the used slots
  other.hash_.store(0, std::memory_order_relaxed);  // its fields are gone
}

OperationPlan& OperationPlan::operator=(const OperationPlan& other) {
  if (this != &other) {
    OperationPlan copy(other);
    *this = std::move(copy);
  }
  return *this;
}

OperationPlan& OperationPlan::operator=(OperationPlan&& other) noexcept {
  if (this != &other) {
    operation_ = std::move(other.operation_);
    std::copy_n(other.inline_, std::min(other.count_, kInlineOperands), inline_);  // the used slots
    heap_ = std::move(other.heap_);
    count_ = other.count_;
    compute_ = other.compute_;
    accumulation_ = other.accumulation_;
    accumulator_dtype_ = other.accumulator_dtype_;
    output_ = other.output_;
    hash_.store(other.hash_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    other.hash_.store(0, std::memory_order_relaxed);  // its fields are gone
  }
  return *this;
}

void OperationPlan::set_operands(std::span<const OperandPlan> operands) {
  count_ = operands.size();
  if (count_ <= kInlineOperands)
    std::copy(operands.begin(), operands.end(), std::begin(inline_));
  else
    heap_.assign(operands.begin(), operands.end());
}

void OperationPlan::check() const {
  if (count_ == 0) throw ValueError(fmt::format("OperationPlan '{}': operands must be non-empty", operation_));
}

std::vector<OperandRole> OperationPlan::roles() const {
  std::vector<OperandRole> out;
  for (const OperandPlan& o : operands()) out.push_back(o.role());
  return out;
}

OperationPlan OperationPlan::with_compute(Arithmetic compute) const {
  OperationPlan copy = *this;
  copy.compute_ = compute;
  copy.hash_.store(0, std::memory_order_relaxed);
  return copy;
}

OperationPlan OperationPlan::with_accumulator(const SimpleDType* accumulator_dtype) const {
  OperationPlan copy = *this;
  copy.accumulator_dtype_ = accumulator_dtype;
  copy.hash_.store(0, std::memory_order_relaxed);
  return copy;
}

bool operator==(const OperationPlan& a, const OperationPlan& b) noexcept {
  const std::size_t ha = a.hash_.load(std::memory_order_relaxed), hb = b.hash_.load(std::memory_order_relaxed);
  if (ha != 0 && hb != 0 && ha != hb) return false;
  const auto x = a.operands(), y = b.operands();
  return a.compute_ == b.compute_ && a.output_ == b.output_ && a.accumulator_dtype_ == b.accumulator_dtype_ &&
         a.accumulation_ == b.accumulation_ && std::equal(x.begin(), x.end(), y.begin(), y.end()) &&
         a.operation_ == b.operation_;
}

std::size_t OperationPlan::compute_hash() const noexcept {
  std::size_t h = static_cast<std::size_t>(XXH3_64bits(operation_.data(), operation_.size()));
  for (const OperandPlan& o : operands()) h = mix(h, o.hash());
  h = mix(h, static_cast<std::size_t>(compute_));
  h = mix(h, accumulation_ ? static_cast<std::size_t>(*accumulation_) + 1 : 0);
  h = mix(h, std::hash<const void*>()(accumulator_dtype_));
  return mix(h, std::hash<const void*>()(output_));
}

std::size_t OperationPlan::cache_hash() const noexcept {
  std::size_t h = compute_hash();
  if (h == 0) h = 1;  // 0 marks "not computed"
  hash_.store(h, std::memory_order_relaxed);
  return h;
}

std::string OperationPlan::to_string() const {
  std::string ops;
  for (const OperandPlan& o : operands()) {
    if (!ops.empty()) ops += ", ";
    ops += fmt::format("{}:{}->{}", value_of(o.role()), o.dtype() ? o.dtype()->name() : "None", o.convert_to().name());
  }
  return fmt::format("{}({}) compute={} accumulation={} accumulator={} -> {}", operation_, ops, name_of(compute_),
                     accumulation_ ? name_of(*accumulation_) : "None",
                     accumulator_dtype_ ? accumulator_dtype_->name() : "None", output_->name());
}

// ---------------------------------------------------------------- specifications

OperationOverload::OperationOverload(std::vector<OperandRole> roles, PlanRule rule,
                                     std::optional<std::vector<DTypeDomain>> tensor_domains)
    : roles_(std::move(roles)), rule_(std::move(rule)), tensor_domains_(std::move(tensor_domains)) {
  if (roles_.empty()) throw ValueError("OperationOverload: roles must be non-empty");
  if (!rule_) throw TypeError("OperationOverload: rule must be callable");
  if (tensor_domains_) {
    const auto tensors = std::count(roles_.begin(), roles_.end(), OperandRole::TENSOR);
    if (static_cast<std::size_t>(tensors) != tensor_domains_->size())
      throw ValueError(fmt::format("OperationOverload: {} tensor domains given for {} tensor roles",
                                   tensor_domains_->size(), tensors));
    for (const DTypeDomain& d : *tensor_domains_) {
      if (d.empty()) throw ValueError("OperationOverload: a tensor domain must be non-empty");
      for (const SimpleDType* t : d)
        if (!t) throw TypeError("OperationOverload: a tensor domain entry is not a SimpleDType");
    }
  }
}

OperationSpec::OperationSpec(std::string name, std::vector<OperationOverload> overloads, bool is_public,
                             std::optional<std::vector<std::int64_t>> dtype_operand_positions)
    : name_(std::move(name)), overloads_(std::move(overloads)), public_(is_public), positions_(std::move(dtype_operand_positions)) {
  if (name_.empty()) throw ValueError("OperationSpec: name must be non-empty");
  if (overloads_.empty()) throw ValueError(fmt::format("OperationSpec '{}': overloads must be non-empty", name_));
  for (std::size_t i = 0; i < overloads_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (std::ranges::equal(overloads_[i].roles(), overloads_[j].roles()))
        throw ValueError(fmt::format("OperationSpec '{}': two overloads share one role signature", name_));
  if (positions_) {
    for (std::size_t i = 0; i < positions_->size(); ++i) {
      if ((*positions_)[i] < 0 || (i > 0 && (*positions_)[i] <= (*positions_)[i - 1]))
        throw ValueError(fmt::format(
            "OperationSpec '{}': dtype_operand_positions must be strictly increasing non-negative integers", name_));
    }
    for (const OperationOverload& o : overloads_)
      if (o.roles().size() != positions_->size())
        throw ValueError(fmt::format(
            "OperationSpec '{}': dtype_operand_positions has {} entries but an overload has arity {}", name_,
            positions_->size(), o.roles().size()));
  }
}

std::span<const OperandRole> OperationSpec::roles() const {
  if (overloads_.size() != 1)
    throw AttributeError(fmt::format("OperationSpec '{}' has {} overloads; use overloads()", name_, overloads_.size()));
  return overloads_.front().roles();
}

const PlanRule& OperationSpec::rule() const {
  if (overloads_.size() != 1)
    throw AttributeError(fmt::format("OperationSpec '{}' has {} overloads; use overloads()", name_, overloads_.size()));
  return overloads_.front().rule();
}

// ---------------------------------------------------------------- options

namespace {
bool is_configurable(std::string_view op) noexcept { return op == "reduce_sum" || op == "matmul"; }
}  // namespace

OperationExecutionOptions::OperationExecutionOptions(std::string operation, const DType* accumulator_dtype,
                                                     std::optional<Arithmetic> arithmetic)
    : operation_(std::move(operation)), accumulator_dtype_(nullptr), arithmetic_(arithmetic) {
  if (!is_configurable(operation_))
    throw TypeError(fmt::format(
        "OperationExecutionOptions: '{}' takes no execution options (only reduce_sum and matmul are configurable)",
        operation_));
  if (accumulator_dtype) {
    if (!accumulator_dtype->is_simple())
      throw TypeError(fmt::format("OperationExecutionOptions '{}': accumulator_dtype '{}' is not a SimpleDType",
                                  operation_, accumulator_dtype->name()));
    if (accumulator_dtype != &DType::Float32() && accumulator_dtype != &DType::Float64())
      throw NotImplementedError(fmt::format(
          "OperationExecutionOptions '{}': accumulator dtype '{}' is not supported (Float32 or Float64)", operation_,
          accumulator_dtype->name()));
    accumulator_dtype_ = static_cast<const SimpleDType*>(accumulator_dtype);
  }
  if (arithmetic && *arithmetic != Arithmetic::BINARY32 && *arithmetic != Arithmetic::BINARY32_FUSED)
    throw TypeError(fmt::format("OperationExecutionOptions '{}': arithmetic '{}' cannot be requested (binary32, the "
                                "default, or binary32_fused)",
                                operation_, value_of(*arithmetic)));
  if (arithmetic == Arithmetic::BINARY32_FUSED) {
    if (operation_ != "matmul")
      throw TypeError(fmt::format("OperationExecutionOptions '{}': binary32_fused contracts products with their "
                                  "accumulation; only matmul has products to contract",
                                  operation_));
    if (accumulator_dtype_ == &DType::Float64())
      throw TypeError(fmt::format("OperationExecutionOptions '{}': binary32_fused needs the Float32 accumulator (a "
                                  "binary32 product is exact in a Float64 accumulator: nothing to contract)",
                                  operation_));
  }
}

OperationExecutionOptions operation_execution_options(std::string operation, const DType* accumulator_dtype,
                                                      std::optional<Arithmetic> arithmetic) {
  return OperationExecutionOptions(std::move(operation), accumulator_dtype, arithmetic);
}

// ---------------------------------------------------------------- constants

std::span<const SimpleDType* const> SUPPORTED_TENSOR_DTYPES() {
  static const SimpleDType* const d[] = {&DType::Float32(), &DType::Int32()};
  return d;
}
std::span<const WeakScalar> WEAK_SCALAR_PROBES() {
  static const WeakScalar p[] = {WeakScalar(3), WeakScalar(-1), WeakScalar(0.5)};
  return p;
}
std::span<const SimpleDType* const> SUPPORTED_ACCUMULATOR_DTYPES() {
  static const SimpleDType* const d[] = {&DType::Float32(), &DType::Float64()};
  return d;
}
std::span<const std::string_view> CONFIGURABLE_OPERATIONS() {
  static constexpr std::string_view ops[] = {"matmul", "reduce_sum"};
  return ops;
}

// ---------------------------------------------------------------- resolution

std::span<const OperationSpec> registered_operations() { return policy::operation_table(); }

const OperationSpec* find_operation(std::string_view name) noexcept {
  auto table = policy::operation_table();
  auto it = std::lower_bound(table.begin(), table.end(), name,
                             [](const OperationSpec& s, std::string_view n) { return s.name() < n; });
  return it != table.end() && it->name() == name ? &*it : nullptr;
}

namespace {

bool in_domain(const DTypeDomain& domain, const DType* d) {
  return std::find(domain.begin(), domain.end(), d) != domain.end();
}

// R6: check every tensor operand against the overload's domains, in
// positional order; the first failure wins.
void check_tensor_dtypes(std::string_view op, const OperationOverload& overload, std::span<const PlanOperand> operands) {
  std::size_t tensor_slot = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].role() != OperandRole::TENSOR) continue;
    const DType* d = operands[i].dtype();
    const DTypeDomain* domain = overload.tensor_domains() ? &(*overload.tensor_domains())[tensor_slot] : nullptr;
    ++tensor_slot;
    if (d->is_category())
      throw TypeError(fmt::format("{}: operand {}: abstract category '{}' is not an operation storage dtype", op, i,
                                  d->name()));
    if (d->is_compound())
      throw NotImplementedError(fmt::format(
          "{}: operand {}: compound dtype '{}' needs representation-aware planning, which is not implemented", op, i,
          d->name()));
    if (domain && in_domain(*domain, d)) continue;
    const bool bool_slot = domain && in_domain(*domain, &DType::Bool());
    const bool implemented = d == &DType::Float32() || d == &DType::Int32() || (d == &DType::Bool() && bool_slot);
    if (!implemented)
      throw NotImplementedError(fmt::format("{}: operand {}: dtype '{}' is registered but not implemented for operations",
                                            op, i, d->name()));
    if (domain) {
      std::string allowed;
      for (const SimpleDType* a : *domain) allowed += (allowed.empty() ? "" : ", ") + a->name();
      throw TypeError(fmt::format("{}: operand {}: dtype '{}' is outside this slot's domain ({})", op, i, d->name(),
                                  allowed));
    }
  }
}

OperationPlan run_overload(const OperationSpec& spec, const OperationOverload& overload,
                           std::span<const PlanOperand> operands) {
  check_tensor_dtypes(spec.name(), overload, operands);
  OperationPlan plan = overload.rule()(spec.name(), operands);
  if (plan.operation() != spec.name())
    throw ValueError(fmt::format("{}: the overload rule returned a plan for '{}'", spec.name(), plan.operation()));
  if (!std::ranges::equal(plan.roles(), overload.roles()))
    throw ValueError(fmt::format("{}: the overload rule returned a plan with another role signature", spec.name()));
  return plan;
}

}  // namespace

namespace {
thread_local std::uint64_t resolutions = 0;
}  // namespace

std::uint64_t policy_probe::resolutions_on_this_thread() noexcept { return resolutions; }

OperationPlan resolve_operation_plan(std::string_view operation, std::span<const PlanOperand> operands,
                                     const DType* accumulator_dtype, const OperationExecutionOptions* options) {
  ++resolutions;
  // 1. options and accumulator.
  if (accumulator_dtype && options)
    throw TypeError(fmt::format("resolve_operation_plan('{}'): pass accumulator_dtype or options, not both", operation));
  std::optional<OperationExecutionOptions> validated;
  if (accumulator_dtype) validated.emplace(std::string(operation), accumulator_dtype);
  if (options) {
    if (options->operation() != operation)
      throw ValueError(fmt::format("resolve_operation_plan('{}'): the options are bound to '{}'", operation,
                                   options->operation()));
    validated = *options;
  }
  // 2. the spec.
  const OperationSpec* spec = find_operation(operation);
  if (!spec) throw NotImplementedError(fmt::format("resolve_operation_plan: no operation named '{}' is registered", operation));
  // 3. the overload.
  for (std::size_t i = 0; i < operands.size(); ++i)
    if (operands[i].role() == OperandRole::TENSOR && !operands[i].dtype())
      throw TypeError(fmt::format("{}: operand {} is neither a DType nor a real weak scalar", operation, i));
  const OperationOverload* chosen = nullptr;
  bool arity_seen = false;
  for (const OperationOverload& o : spec->overloads()) {
    if (o.roles().size() != operands.size()) continue;
    arity_seen = true;
    bool match = true;
    for (std::size_t i = 0; i < operands.size() && match; ++i) match = o.roles()[i] == operands[i].role();
    if (match) {
      chosen = &o;
      break;
    }
  }
  if (!arity_seen)
    throw TypeError(fmt::format("{}: no overload takes {} operand(s)", operation, operands.size()));
  if (!chosen) {
    std::string sig;
    for (const PlanOperand& o : operands) sig += (sig.empty() ? "" : ", ") + std::string(value_of(o.role()));
    throw TypeError(fmt::format("{}: no overload matches the role signature ({})", operation, sig));
  }
  // 4. the rule, then the accumulator override.
  OperationPlan plan = run_overload(*spec, *chosen, operands);
  if (validated && validated->accumulator_dtype()) {
    if (plan.accumulation() != Accumulation::FLOATING)
      throw TypeError(fmt::format("{}: a floating accumulator cannot apply to the exact-integer plan ({})", operation,
                                  plan.to_string()));
    plan = plan.with_accumulator(validated->accumulator_dtype());
  }
  // 5. an explicit arithmetic (beyond the specification).
  if (validated && validated->arithmetic()) {
    if (plan.compute() != Arithmetic::BINARY32 || plan.accumulation() != Accumulation::FLOATING)
      throw TypeError(fmt::format("{}: arithmetic '{}' cannot apply to this plan ({})", operation,
                                  value_of(*validated->arithmetic()), plan.to_string()));
    plan = plan.with_compute(*validated->arithmetic());
  }
  return plan;
}

std::vector<OperationPlan> plan_accumulator_variants(const OperationPlan& plan) {
  std::vector<OperationPlan> out{plan};
  if (!is_configurable(plan.operation()) || plan.accumulation() != Accumulation::FLOATING) return out;
  for (const SimpleDType* acc : SUPPORTED_ACCUMULATOR_DTYPES())
    if (acc != plan.accumulator_dtype()) out.push_back(plan.with_accumulator(acc));
  return out;
}

std::vector<OperationPlan> plan_arithmetic_variants(const OperationPlan& plan) {
  std::vector<OperationPlan> out{plan};
  if (plan.operation() == "matmul" && plan.compute() == Arithmetic::BINARY32 &&
      plan.accumulation() == Accumulation::FLOATING && plan.accumulator_dtype() == &DType::Float32())
    out.push_back(plan.with_compute(Arithmetic::BINARY32_FUSED));
  return out;
}

std::vector<OperationPlan> executable_plan_set() {
  std::vector<OperationPlan> out = resolvable_plans();
  out.push_back(resolve_operation_plan("select", {DType::Bool(), DType::Float32(), DType::Float32()}));
  const std::size_t defaults = out.size();
  for (std::size_t i = 0; i < defaults; ++i) {
    std::vector<OperationPlan> variants = plan_arithmetic_variants(out[i]);
    for (std::size_t v = 1; v < variants.size(); ++v) out.push_back(std::move(variants[v]));
  }
  return out;
}

std::vector<OperationPlan> resolvable_plans(std::span<const SimpleDType* const> tensor_dtypes,
                                            std::span<const WeakScalar> weak_scalars) {
  std::vector<OperationPlan> out;
  std::unordered_set<OperationPlan> seen;
  for (const OperationSpec& spec : registered_operations()) {
    for (const OperationOverload& overload : spec.overloads()) {
      // Candidates per slot.
      std::vector<std::vector<PlanOperand>> slots;
      std::size_t tensor_slot = 0;
      for (OperandRole role : overload.roles()) {
        std::vector<PlanOperand> c;
        if (role == OperandRole::TENSOR) {
          for (const SimpleDType* d : tensor_dtypes)
            if (!overload.tensor_domains() || in_domain((*overload.tensor_domains())[tensor_slot], d)) c.emplace_back(d);
          ++tensor_slot;
        } else {
          for (const WeakScalar& s : weak_scalars) c.emplace_back(s);
        }
        slots.push_back(std::move(c));
      }
      if (std::any_of(slots.begin(), slots.end(), [](const auto& c) { return c.empty(); })) continue;
      // Cartesian product, last slot fastest (itertools.product order).
      std::vector<std::size_t> idx(slots.size(), 0);
      while (true) {
        std::vector<PlanOperand> combo;
        for (std::size_t s = 0; s < slots.size(); ++s) combo.push_back(slots[s][idx[s]]);
        for (OperationPlan& p : plan_accumulator_variants(run_overload(spec, overload, combo)))
          if (seen.insert(p).second) out.push_back(std::move(p));
        std::size_t s = slots.size();
        while (s > 0) {
          --s;
          if (++idx[s] < slots[s].size()) break;
          idx[s] = 0;
          if (s == 0) goto done;
        }
        if (slots.empty()) break;
      }
    done:;
    }
  }
  return out;
}

// ---------------------------------------------------------------- representative plans (descriptor note)

std::optional<OperationPlan> representative_plan(std::string_view operation, const SimpleDType& dtype) {
  const OperationSpec* spec = find_operation(operation);
  if (!spec) return std::nullopt;
  auto tensor_count = [](const OperationOverload& o) {
    return std::count(o.roles().begin(), o.roles().end(), OperandRole::TENSOR);
  };
  // The overload with the most tensor operands: unique for every registered
  // operation (a tie is a defect of the table, reported by name).
  const OperationOverload* chosen = nullptr;
  std::vector<const OperationOverload*> tied;
  for (const OperationOverload& o : spec->overloads()) {
    if (!chosen || tensor_count(o) > tensor_count(*chosen)) {
      chosen = &o;
      tied = {&o};
    } else if (tensor_count(o) == tensor_count(*chosen)) {
      tied.push_back(&o);
    }
  }
  if (tied.size() > 1) {
    std::vector<std::string> names;
    for (const OperationOverload* o : tied) {
      std::vector<std::string> roles;
      for (OperandRole r : o->roles()) roles.emplace_back(name_of(r));
      names.push_back(fmt::format("({})", fmt::join(roles, ", ")));
    }
    throw ValueError(fmt::format("representative_plan: operation '{}' has several overloads with {} tensor operands: {}",
                                 operation, tensor_count(*chosen), fmt::join(names, ", ")));
  }
  // Every tensor slot that admits `dtype` receives it; a slot restricted to
  // one other dtype (an index, a condition) receives that one; weak scalars
  // are of dtype's kind.
  const std::optional<std::vector<DTypeDomain>>& domains = chosen->tensor_domains();
  std::vector<PlanOperand> operands;
  bool placed = false;
  std::size_t tensor_slot = 0;
  for (OperandRole r : chosen->roles()) {
    if (r == OperandRole::WEAK_SCALAR) {
      operands.emplace_back(&dtype == &DType::Int32() ? WeakScalar(std::int64_t{3}) : WeakScalar(0.5));
      continue;
    }
    const DTypeDomain* domain = domains ? &(*domains)[tensor_slot] : nullptr;
    ++tensor_slot;
    if (!domain || std::find(domain->begin(), domain->end(), &dtype) != domain->end()) {
      operands.emplace_back(dtype);
      placed = true;
    } else if (domain->size() == 1) {
      operands.emplace_back(*domain->front());
    } else {
      return std::nullopt;
    }
  }
  if (!placed) return std::nullopt;
  try {
    return resolve_operation_plan(operation, operands);
  } catch (const TypeError&) {
    return std::nullopt;  // outside the operation's domain
  } catch (const NotImplementedError&) {
    return std::nullopt;  // a dtype not implemented in that slot
  }
}

}  // namespace strideweave
