// The complete table of registered operations (operation-dtype-policy.md,
// "Registered operations"). This is the one place where an operation's dtype
// rule is written; every backend executes the plans these rules return.
//
// Domain notation: an overload written "F/I" in the specification has no
// explicit domain (the caller's enumeration domain), which is why adding Bool
// to resolvable_plans' dtypes makes those overloads raise
// NotImplementedError; an overload written "F" or "F,I" has an explicit one.
#include <algorithm>

#include "policy/operation_table.h"

namespace strideweave::policy {
namespace {

using R = OperandRole;
const SimpleDType& F() { return DType::Float32(); }
const SimpleDType& I() { return DType::Int32(); }
const SimpleDType& B() { return DType::Bool(); }

// Operands reaching a rule were checked by resolution: tensor dtypes are the
// implemented simple dtypes their slot allows.
const SimpleDType& src(const PlanOperand& o) { return static_cast<const SimpleDType&>(*o.dtype()); }
bool is_int(const PlanOperand& o) { return o.dtype() == &DType::Int32(); }
OperandPlan to(const PlanOperand& o, const SimpleDType& target) {
  return o.role() == R::TENSOR ? OperandPlan::tensor(src(o), target) : OperandPlan::weak_scalar(target);
}
std::vector<OperandPlan> all_to(std::span<const PlanOperand> ops, const SimpleDType& target) {
  std::vector<OperandPlan> out;
  for (const PlanOperand& o : ops) out.push_back(to(o, target));
  return out;
}
OperationPlan plan(std::string_view op, std::vector<OperandPlan> operands, Arithmetic compute,
                   std::optional<Accumulation> acc, const SimpleDType* acc_dtype, const SimpleDType& out) {
  return OperationPlan(std::string(op), std::move(operands), compute, acc, acc_dtype, out);
}

// ---- rules

// Float32 everything, BINARY32, no accumulation, output `out`.
PlanRule float_rule(const SimpleDType& (*out)()) {
  return [out](std::string_view op, std::span<const PlanOperand> ops) {
    return plan(op, all_to(ops, F()), Arithmetic::BINARY32, std::nullopt, nullptr, out());
  };
}
PlanRule float_rule() { return float_rule(&F); }

// add/sub/elementwise_mul/mul (T,T): Int32 pair stays Int32 (checked).
OperationPlan additive(std::string_view op, std::span<const PlanOperand> ops) {
  if (is_int(ops[0]) && is_int(ops[1]))
    return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT_CHECKED, std::nullopt, nullptr, I());
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, std::nullopt, nullptr, F());
}

// mul (T,S): Int32 tensor with an INTEGER weak scalar stays Int32; the scalar
// must fit Int32 (OverflowError).
OperationPlan mul_tensor_scalar(std::string_view op, std::span<const PlanOperand> ops) {
  if (is_int(ops[0]) && ops[1].scalar().kind() == WeakScalarKind::INTEGER) {
    ops[1].scalar().to_int32(op);
    return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT_CHECKED, std::nullopt, nullptr, I());
  }
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, std::nullopt, nullptr, F());
}

// pow (T,S): an Int32 base stays exact only for an INTEGER exponent in
// [0, POW_INTEGER_EXPONENT_MAX].
OperationPlan pow_tensor_scalar(std::string_view op, std::span<const PlanOperand> ops) {
  const WeakScalar& e = ops[1].scalar();
  if (is_int(ops[0]) && e.kind() == WeakScalarKind::INTEGER && e.integer_value() >= 0 &&
      e.integer_value() <= POW_INTEGER_EXPONENT_MAX)
    return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT_CHECKED, std::nullopt, nullptr, I());
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, std::nullopt, nullptr, F());
}

OperationPlan relu_rule(std::string_view op, std::span<const PlanOperand> ops) {
  if (is_int(ops[0])) return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT, std::nullopt, nullptr, I());
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, std::nullopt, nullptr, F());
}

OperationPlan reduce_sum_rule(std::string_view op, std::span<const PlanOperand> ops) {
  if (is_int(ops[0]))
    return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT_CHECKED, Accumulation::EXACT_INTEGER, nullptr, I());
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, Accumulation::FLOATING, &F(), F());
}

OperationPlan matmul_rule(std::string_view op, std::span<const PlanOperand> ops) {
  if (is_int(ops[0]) && is_int(ops[1]))
    return plan(op, all_to(ops, I()), Arithmetic::INT32_EXACT, Accumulation::EXACT_INTEGER, nullptr, I());
  return plan(op, all_to(ops, F()), Arithmetic::BINARY32, Accumulation::FLOATING, &F(), F());
}

// A Float32 plan with a fixed accumulation and output.
PlanRule accumulating(Accumulation acc, const SimpleDType& (*out)()) {
  return [acc, out](std::string_view op, std::span<const PlanOperand> ops) {
    return plan(op, all_to(ops, F()), Arithmetic::BINARY32, acc, nullptr, out());
  };
}

// gather / scatter / scatter_add: indices stay Int32, the rest Float32.
PlanRule indexed(std::optional<Accumulation> acc) {
  return [acc](std::string_view op, std::span<const PlanOperand> ops) {
    std::vector<OperandPlan> operands;
    for (const PlanOperand& o : ops) operands.push_back(to(o, is_int(o) ? I() : F()));
    return plan(op, std::move(operands), Arithmetic::BINARY32, acc, nullptr, F());
  };
}

OperationPlan select_rule(std::string_view op, std::span<const PlanOperand> ops) {
  return plan(op, {to(ops[0], B()), to(ops[1], F()), to(ops[2], F())}, Arithmetic::BINARY32, std::nullopt, nullptr, F());
}

// ---- overload builders

using Domains = std::optional<std::vector<DTypeDomain>>;
DTypeDomain dF() { return {&F()}; }
DTypeDomain dI() { return {&I()}; }
DTypeDomain dB() { return {&B()}; }

OperationOverload ov(std::vector<R> roles, PlanRule rule, Domains domains = std::nullopt) {
  return OperationOverload(std::move(roles), std::move(rule), std::move(domains));
}

std::vector<OperationSpec> build() {
  std::vector<OperationSpec> t;
  auto add = [&](std::string name, std::vector<OperationOverload> overloads, bool is_public = true,
                 std::optional<std::vector<std::int64_t>> positions = std::nullopt) {
    t.emplace_back(std::move(name), std::move(overloads), is_public, std::move(positions));
  };
  const std::vector<R> TT{R::TENSOR, R::TENSOR}, TS{R::TENSOR, R::WEAK_SCALAR}, ST{R::WEAK_SCALAR, R::TENSOR},
      T{R::TENSOR};

  for (const char* name : {"add", "sub", "elementwise_mul"}) add(name, {ov(TT, additive)});
  add("mul", {ov(TT, additive), ov(TS, mul_tensor_scalar)});
  add("div", {ov(TT, float_rule())});
  add("pow", {ov(TT, float_rule()), ov(TS, pow_tensor_scalar), ov(ST, float_rule())});
  for (const char* name : {"maximum", "minimum", "rem"}) add(name, {ov(TT, float_rule(), Domains{{dF(), dF()}})});
  for (const char* name : {"eq", "ne", "lt", "le"}) add(name, {ov(TT, float_rule(&B), Domains{{dF(), dF()}})});
  add("logical_not", {ov(T, float_rule(&B), Domains{{dF()}})});
  add("relu", {ov(T, relu_rule)});
  for (const char* name : {"elu", "exp", "gelu", "leaky_relu", "sigmoid", "silu", "softplus", "tanh"})
    add(name, {ov(T, float_rule())});
  for (const char* name : {"neg", "abs", "sign", "recip", "sqrt", "rsqrt", "exp2", "log", "log2", "sin", "cos", "erf",
                           "floor", "ceil", "round"})
    add(name, {ov(T, float_rule(), Domains{{dF()}})});
  add("reduce_sum", {ov(T, reduce_sum_rule)});
  add("reduce_prod", {ov(T, accumulating(Accumulation::SEQUENTIAL_BINARY32_PRODUCT, &F), Domains{{dF()}})});
  add("reduce_max", {ov(T, accumulating(Accumulation::MAXIMUM, &F), Domains{{dF()}})});
  add("reduce_min", {ov(T, accumulating(Accumulation::MINIMUM, &F), Domains{{dF()}})});
  add("argmax", {ov(T, accumulating(Accumulation::ARGMAX, &I), Domains{{dF()}})});
  add("argmin", {ov(T, accumulating(Accumulation::ARGMIN, &I), Domains{{dF()}})});
  add("cumsum", {ov(T, accumulating(Accumulation::SEQUENTIAL_BINARY32, &F), Domains{{dF()}})}, true,
      std::vector<std::int64_t>{0});
  add("matmul", {ov(TT, matmul_rule)});
  add("conv_general", {ov(TT, accumulating(Accumulation::SEQUENTIAL_BINARY32, &F), Domains{{dF(), dF()}})}, true,
      std::vector<std::int64_t>{0, 1});
  add("gather", {ov(TT, indexed(std::nullopt), Domains{{dF(), dI()}})}, true, std::vector<std::int64_t>{0, 1});
  add("scatter", {ov({R::TENSOR, R::TENSOR, R::TENSOR}, indexed(std::nullopt), Domains{{dF(), dI(), dF()}})}, true,
      std::vector<std::int64_t>{0, 1, 2});
  add("scatter_add",
      {ov({R::TENSOR, R::TENSOR, R::TENSOR}, indexed(Accumulation::SEQUENTIAL_BINARY32), Domains{{dF(), dI(), dF()}})},
      true, std::vector<std::int64_t>{0, 1, 2});
  add("select", {ov({R::TENSOR, R::TENSOR, R::TENSOR}, select_rule, Domains{{dB(), dF(), dF()}})});
  add("clamp", {ov({R::TENSOR, R::TENSOR, R::TENSOR}, float_rule(), Domains{{dF(), dF(), dF()}}),
                ov({R::TENSOR, R::TENSOR, R::WEAK_SCALAR}, float_rule(), Domains{{dF(), dF()}}),
                ov({R::TENSOR, R::WEAK_SCALAR, R::TENSOR}, float_rule(), Domains{{dF(), dF()}}),
                ov({R::TENSOR, R::WEAK_SCALAR, R::WEAK_SCALAR}, float_rule(), Domains{{dF()}})});
  for (const char* name : {"_sort_values", "_topk_values"})
    add(name, {ov(T, float_rule(), Domains{{dF()}})}, false, std::vector<std::int64_t>{0});
  for (const char* name : {"_sort_indices", "_topk_indices"})
    add(name, {ov(T, float_rule(&I), Domains{{dF()}})}, false, std::vector<std::int64_t>{0});

  std::sort(t.begin(), t.end(), [](const OperationSpec& a, const OperationSpec& b) { return a.name() < b.name(); });
  return t;
}

}  // namespace

std::span<const OperationSpec> operation_table() {
  static const std::vector<OperationSpec> table = build();
  return table;
}

}  // namespace strideweave::policy
