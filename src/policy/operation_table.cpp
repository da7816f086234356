// The complete table of registered operations (operation-dtype-policy.md,
// "Registered operations"): one OperationSpec per row of
// <strideweave/operations.def>, made by the rule its policy column names.
// This is the one place where a dtype rule is written; every backend
// executes the plans these rules return.
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

// ---- the rules named by operations.def's policy column: each returns the
// operation's overloads, visibility and dtype-operand positions.

const std::vector<R> TT{R::TENSOR, R::TENSOR}, TS{R::TENSOR, R::WEAK_SCALAR}, ST{R::WEAK_SCALAR, R::TENSOR},
    T{R::TENSOR}, TTT{R::TENSOR, R::TENSOR, R::TENSOR};
using Positions = std::optional<std::vector<std::int64_t>>;

OperationSpec spec(std::string_view name, std::vector<OperationOverload> overloads, Positions positions = std::nullopt) {
  // A name starting with '_' is internal (the two plans of sort and topk).
  const bool is_public = !name.starts_with('_');
  return OperationSpec(std::string(name), std::move(overloads), is_public, std::move(positions));
}

OperationSpec rule_additive(std::string_view n) { return spec(n, {ov(TT, additive)}); }
OperationSpec rule_mul(std::string_view n) { return spec(n, {ov(TT, additive), ov(TS, mul_tensor_scalar)}); }
OperationSpec rule_float_binary(std::string_view n) { return spec(n, {ov(TT, float_rule())}); }
OperationSpec rule_pow(std::string_view n) {
  return spec(n, {ov(TT, float_rule()), ov(TS, pow_tensor_scalar), ov(ST, float_rule())});
}
OperationSpec rule_float_binary_f(std::string_view n) { return spec(n, {ov(TT, float_rule(), Domains{{dF(), dF()}})}); }
OperationSpec rule_comparison(std::string_view n) { return spec(n, {ov(TT, float_rule(&B), Domains{{dF(), dF()}})}); }
OperationSpec rule_logical_not(std::string_view n) { return spec(n, {ov(T, float_rule(&B), Domains{{dF()}})}); }
OperationSpec rule_relu(std::string_view n) { return spec(n, {ov(T, relu_rule)}); }
OperationSpec rule_float_unary(std::string_view n) { return spec(n, {ov(T, float_rule())}); }
OperationSpec rule_float_unary_f(std::string_view n) { return spec(n, {ov(T, float_rule(), Domains{{dF()}})}); }
OperationSpec rule_reduce_sum(std::string_view n) { return spec(n, {ov(T, reduce_sum_rule)}); }
OperationSpec rule_reduce_prod(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::SEQUENTIAL_BINARY32_PRODUCT, &F), Domains{{dF()}})});
}
OperationSpec rule_reduce_max(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::MAXIMUM, &F), Domains{{dF()}})});
}
OperationSpec rule_reduce_min(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::MINIMUM, &F), Domains{{dF()}})});
}
OperationSpec rule_argmax(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::ARGMAX, &I), Domains{{dF()}})});
}
OperationSpec rule_argmin(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::ARGMIN, &I), Domains{{dF()}})});
}
OperationSpec rule_cumsum(std::string_view n) {
  return spec(n, {ov(T, accumulating(Accumulation::SEQUENTIAL_BINARY32, &F), Domains{{dF()}})}, Positions(std::vector<std::int64_t>{0}));
}
OperationSpec rule_matmul(std::string_view n) { return spec(n, {ov(TT, matmul_rule)}); }
OperationSpec rule_conv_general(std::string_view n) {
  return spec(n, {ov(TT, accumulating(Accumulation::SEQUENTIAL_BINARY32, &F), Domains{{dF(), dF()}})},
              Positions(std::vector<std::int64_t>{0, 1}));
}
OperationSpec rule_gather(std::string_view n) {
  return spec(n, {ov(TT, indexed(std::nullopt), Domains{{dF(), dI()}})}, Positions(std::vector<std::int64_t>{0, 1}));
}
OperationSpec rule_scatter(std::string_view n) {
  return spec(n, {ov(TTT, indexed(std::nullopt), Domains{{dF(), dI(), dF()}})}, Positions(std::vector<std::int64_t>{0, 1, 2}));
}
OperationSpec rule_scatter_add(std::string_view n) {
  return spec(n, {ov(TTT, indexed(Accumulation::SEQUENTIAL_BINARY32), Domains{{dF(), dI(), dF()}})},
              Positions(std::vector<std::int64_t>{0, 1, 2}));
}
OperationSpec rule_select(std::string_view n) { return spec(n, {ov(TTT, select_rule, Domains{{dB(), dF(), dF()}})}); }
OperationSpec rule_clamp(std::string_view n) {
  return spec(n, {ov(TTT, float_rule(), Domains{{dF(), dF(), dF()}}),
                  ov({R::TENSOR, R::TENSOR, R::WEAK_SCALAR}, float_rule(), Domains{{dF(), dF()}}),
                  ov({R::TENSOR, R::WEAK_SCALAR, R::TENSOR}, float_rule(), Domains{{dF(), dF()}}),
                  ov({R::TENSOR, R::WEAK_SCALAR, R::WEAK_SCALAR}, float_rule(), Domains{{dF()}})});
}
// The values and indices plans of sort and topk (internal).
OperationSpec rule_sort_values(std::string_view n) {
  return spec(n, {ov(T, float_rule(), Domains{{dF()}})}, Positions(std::vector<std::int64_t>{0}));
}
OperationSpec rule_sort_indices(std::string_view n) {
  return spec(n, {ov(T, float_rule(&I), Domains{{dF()}})}, Positions(std::vector<std::int64_t>{0}));
}

std::vector<OperationSpec> build() {
  std::vector<OperationSpec> t;
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) t.push_back(rule_##policy(#id));
#include <strideweave/operations.def>
  std::sort(t.begin(), t.end(), [](const OperationSpec& a, const OperationSpec& b) { return a.name() < b.name(); });
  return t;
}

}  // namespace

std::span<const OperationSpec> operation_table() {
  static const std::vector<OperationSpec> table = build();
  return table;
}

}  // namespace strideweave::policy
