// Tests for the central operation dtype policy (include/strideweave/policy.h)
// against /work/shared/spec/operation-dtype-policy.md. Suites are named
// OperationDtypePolicy_R<n> after the requirement they check; each WHEN/THEN
// scenario has its own test named after it. The complete table of registered
// operations, R8 and R9 are in test_operation_dtype_policy_table.cpp.
//
// C++ spellings (cpp-mapping.md): None is nullptr / std::nullopt; the spec's
// INT32_MIN / INT32_MAX are INT32_MIN_VALUE / INT32_MAX_VALUE (the plain names
// are C macros); a null `const DType*` operand models a non-DType in a tensor
// slot.
#include "policy/policy_test_support.h"
#include "support/expect_exactly.h"

#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/factory.h>
#include <strideweave/ops.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <unordered_set>
#include <vector>

namespace sw = strideweave;
using namespace policy_test;
using sw::Accumulation;
using sw::Arithmetic;
using sw::OperandRole;
using sw::OperationExecutionOptions;
using sw::PlanOperand;
using sw::WeakScalar;

namespace {

const sw::DType* null_dtype() { return nullptr; }

sw::OperationPlan f32_reduce_sum(const sw::SimpleDType* acc) {
  return make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, acc, F32());
}

std::vector<std::string> registered_names() {
  std::vector<std::string> out;
  for (const sw::OperationSpec& s : sw::registered_operations()) out.push_back(s.name());
  return out;
}

// A trivially valid rule for hand-built overloads.
sw::PlanRule trivial_rule() {
  return [](std::string_view op, std::span<const PlanOperand> ops) {
    std::vector<sw::OperandPlan> operands;
    for (const PlanOperand& o : ops)
      operands.push_back(o.role() == OperandRole::TENSOR ? T(F32(), F32()) : S(F32()));
    return make_plan(std::string(op), operands, Arithmetic::BINARY32, std::nullopt, nullptr, F32());
  };
}

// Every (spec, overload, tensor slot) with the other slots filled validly.
struct SlotProbe {
  std::string name;
  std::vector<PlanOperand> inputs;
  std::size_t slot;
};
std::vector<SlotProbe> every_tensor_slot() {
  std::vector<SlotProbe> out;
  for (const sw::OperationSpec& spec : sw::registered_operations()) {
    for (const sw::OperationOverload& overload : spec.overloads()) {
      std::vector<PlanOperand> valid;
      std::size_t tensor_slot = 0;
      for (OperandRole r : overload.roles()) {
        if (r == OperandRole::WEAK_SCALAR) {
          valid.emplace_back(3);
        } else {
          const auto& d = overload.tensor_domains();
          valid.emplace_back(d ? static_cast<const sw::DType&>(*(*d)[tensor_slot].front())
                               : static_cast<const sw::DType&>(F32()));
          ++tensor_slot;
        }
      }
      for (std::size_t k = 0; k < valid.size(); ++k)
        if (overload.roles()[k] == OperandRole::TENSOR) out.push_back({spec.name(), valid, k});
    }
  }
  return out;
}

// resolve with `dtype` placed in the probe's slot.
sw::OperationPlan resolve_with(const SlotProbe& probe, const sw::DType& dtype) {
  std::vector<PlanOperand> in = probe.inputs;
  in[probe.slot] = PlanOperand(dtype);
  return sw::resolve_operation_plan(probe.name, std::span<const PlanOperand>(in));
}

}  // namespace

// ================================================================ R1

TEST(OperationDtypePolicy_R1, AddInt32Float32ConvertsBothToFloat32) {
  const sw::OperationPlan p = sw::resolve_operation_plan("add", {I32(), F32()});
  EXPECT_EQ(p.operation(), "add");
  ASSERT_EQ(p.operands().size(), 2u);
  EXPECT_EQ(p.operands()[0].role(), OperandRole::TENSOR);
  EXPECT_EQ(p.operands()[0].dtype(), &I32());
  EXPECT_EQ(&p.operands()[0].convert_to(), &F32());
  EXPECT_EQ(p.operands()[1].role(), OperandRole::TENSOR);
  EXPECT_EQ(p.operands()[1].dtype(), &F32());
  EXPECT_EQ(&p.operands()[1].convert_to(), &F32());
  EXPECT_EQ(p.compute(), Arithmetic::BINARY32);
  EXPECT_EQ(p.accumulation(), std::nullopt);
  EXPECT_EQ(p.accumulator_dtype(), nullptr);
  EXPECT_EQ(&p.output(), &F32());
}

TEST(OperationDtypePolicy_R1, OperandRoleValuesAreTensorAndWeakScalar) {
  EXPECT_STREQ(sw::value_of(OperandRole::TENSOR), "tensor");
  EXPECT_STREQ(sw::value_of(OperandRole::WEAK_SCALAR), "weak_scalar");
  EXPECT_STREQ(sw::name_of(OperandRole::TENSOR), "TENSOR");
  EXPECT_STREQ(sw::name_of(OperandRole::WEAK_SCALAR), "WEAK_SCALAR");
}

TEST(OperationDtypePolicy_R1, OperandPlanFieldsAndConstructionTypeErrors) {
  const sw::OperandPlan t(OperandRole::TENSOR, &I32(), F32());
  EXPECT_EQ(t.role(), OperandRole::TENSOR);
  EXPECT_EQ(t.dtype(), &I32());
  EXPECT_EQ(&t.convert_to(), &F32());
  // Unconverted: convert_to equals dtype.
  const sw::OperandPlan same = sw::OperandPlan::tensor(I32());
  EXPECT_EQ(&same.convert_to(), same.dtype());
  const sw::OperandPlan w(OperandRole::WEAK_SCALAR, nullptr, I32());
  EXPECT_EQ(w.role(), OperandRole::WEAK_SCALAR);
  EXPECT_EQ(w.dtype(), nullptr);
  EXPECT_EQ(&w.convert_to(), &I32());
  // A tensor operand needs a source dtype; a weak scalar has none.
  EXPECT_THROW_EXACTLY(sw::OperandPlan(OperandRole::TENSOR, nullptr, F32()), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::OperandPlan(OperandRole::WEAK_SCALAR, &F32(), F32()), sw::TypeError);
}

TEST(OperationDtypePolicy_R1, OperationPlanHoldsItsFieldsInPositionalOrder) {
  const sw::OperationPlan p = make_plan("mul", {T(I32(), I32()), S(I32())}, Arithmetic::INT32_EXACT_CHECKED,
                                        std::nullopt, nullptr, I32());
  EXPECT_EQ(p.operation(), "mul");
  ASSERT_EQ(p.operands().size(), 2u);
  EXPECT_EQ(p.operands()[0], T(I32(), I32()));
  EXPECT_EQ(p.operands()[1], S(I32()));
  EXPECT_EQ(p.roles(), (std::vector<OperandRole>{OperandRole::TENSOR, OperandRole::WEAK_SCALAR}));
  EXPECT_EQ(p.compute(), Arithmetic::INT32_EXACT_CHECKED);
  EXPECT_EQ(p.accumulation(), std::nullopt);
  EXPECT_EQ(p.accumulator_dtype(), nullptr);
  EXPECT_EQ(&p.output(), &I32());
  // Implementation choice: an operand-less plan is a ValueError.
  EXPECT_THROW_EXACTLY(make_plan("add", {}, Arithmetic::BINARY32, std::nullopt, nullptr, F32()), sw::ValueError);
}

TEST(OperationDtypePolicy_R1, RecordsAreImmutableValueTypes) {
  // Accessors hand out const views only; there is no setter.
  const sw::OperationPlan p = f32_reduce_sum(&F32());
  static_assert(std::is_const_v<std::remove_reference_t<decltype(p.operation())>>);
  static_assert(std::is_same_v<decltype(p.operands()), std::span<const sw::OperandPlan>>);
  static_assert(std::is_same_v<decltype(p.accumulator_dtype()), const sw::SimpleDType*>);
  static_assert(std::is_same_v<decltype(p.output()), const sw::SimpleDType&>);
  // with_accumulator returns a copy; the original is unchanged.
  const sw::OperationPlan wide = p.with_accumulator(&F64());
  EXPECT_EQ(p.accumulator_dtype(), &F32());
  EXPECT_EQ(wide.accumulator_dtype(), &F64());
}

TEST(OperationDtypePolicy_R1, EqualRecordsCompareAndHashEqual) {
  const sw::OperandPlan a = T(I32(), F32()), b = T(I32(), F32());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(std::hash<sw::OperandPlan>()(a), std::hash<sw::OperandPlan>()(b));
  const sw::OperationPlan p = f32_reduce_sum(&F32());
  const sw::OperationPlan q = sw::resolve_operation_plan("reduce_sum", {F32()});
  EXPECT_TRUE(p == q);
  EXPECT_EQ(std::hash<sw::OperationPlan>()(p), std::hash<sw::OperationPlan>()(q));
  std::unordered_set<sw::OperationPlan> set{p, q, sw::resolve_operation_plan("reduce_sum", {F32()})};
  EXPECT_EQ(set.size(), 1u);
  std::unordered_set<sw::OperandPlan> operands{a, b, S(F32()), S(F32())};
  EXPECT_EQ(operands.size(), 2u);
}

// R1 (records are immutable values with operator== and std::hash): a plan's
// equality and hash follow its fields only, whichever way it was built
// (braced operands, a vector, up to and beyond the inline operand storage),
// copied, moved or assigned, and whether or not its (lazily cached) hash was
// asked for before the copy; concurrent first hash() calls agree.
TEST(OperationDtypePolicy_R1, PlansKeepFieldEqualityAcrossConstructionCopyAndMove) {
  for (std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{5}, std::size_t{7}}) {
    std::vector<sw::OperandPlan> ops;
    for (std::size_t i = 0; i < n; ++i) ops.push_back(i % 2 ? S(F32()) : T(I32(), F32()));
    const sw::OperationPlan from_vector("sum_n", ops, Arithmetic::BINARY32, std::nullopt, nullptr, F32());
    const sw::OperationPlan hashed_first("sum_n", ops, Arithmetic::BINARY32, std::nullopt, nullptr, F32());
    const std::size_t h = hashed_first.hash();
    const sw::OperationPlan copy = hashed_first;  // carries the cached hash
    sw::OperationPlan moved_from = from_vector;
    const sw::OperationPlan moved = std::move(moved_from);
    sw::OperationPlan assigned("other", {S(I32())}, Arithmetic::INT32_EXACT, std::nullopt, nullptr, I32());
    assigned = from_vector;
    sw::OperationPlan move_assigned("other", {S(I32())}, Arithmetic::INT32_EXACT, std::nullopt, nullptr, I32());
    move_assigned = sw::OperationPlan(from_vector);
    for (const sw::OperationPlan* p : std::initializer_list<const sw::OperationPlan*>{&from_vector, &copy, &moved, &assigned, &move_assigned}) {
      EXPECT_TRUE(*p == hashed_first) << n;
      EXPECT_EQ(p->hash(), h) << n;
      ASSERT_EQ(p->operands().size(), n);
      EXPECT_TRUE(std::equal(ops.begin(), ops.end(), p->operands().begin()));
      EXPECT_EQ(p->to_string(), hashed_first.to_string());
    }
    // One operand fewer, or the name changed, is a different plan.
    if (n > 1) {
      const sw::OperationPlan shorter("sum_n", std::vector<sw::OperandPlan>(ops.begin(), ops.end() - 1),
                                      Arithmetic::BINARY32, std::nullopt, nullptr, F32());
      EXPECT_FALSE(shorter == from_vector) << n;
    }
    EXPECT_FALSE(sw::OperationPlan("sum_m", ops, Arithmetic::BINARY32, std::nullopt, nullptr, F32()) == from_vector);
    // with_compute there and back: equal again, same hash.
    const sw::OperationPlan back = copy.with_compute(Arithmetic::INT32_EXACT).with_compute(Arithmetic::BINARY32);
    EXPECT_TRUE(back == copy);
    EXPECT_EQ(back.hash(), h);
    EXPECT_FALSE(copy.with_compute(Arithmetic::INT32_EXACT) == copy);
  }
  // The braced (initializer-list) form builds the same plan as a vector.
  const sw::OperationPlan braced("add", {T(F32(), F32()), T(F32(), F32())}, Arithmetic::BINARY32, std::nullopt,
                                 nullptr, F32());
  const sw::OperationPlan resolved = sw::resolve_operation_plan("add", {F32(), F32()});
  EXPECT_TRUE(braced == resolved);
  EXPECT_EQ(braced.hash(), resolved.hash());
  // Racing first calls of hash() agree with a later one.
  const sw::OperationPlan fresh("add", {T(F32(), F32()), T(F32(), F32())}, Arithmetic::BINARY32, std::nullopt,
                                nullptr, F32());
  std::vector<std::size_t> seen(4, 0);
  {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&, t] { seen[t] = fresh.hash(); });
    for (std::thread& t : threads) t.join();
  }
  for (std::size_t v : seen) EXPECT_EQ(v, resolved.hash());
}

TEST(OperationDtypePolicy_R1, RecordsDifferingInAnyFieldCompareUnequal) {
  // OperandPlan: role, dtype, convert_to.
  EXPECT_FALSE(T(I32(), F32()) == S(F32()));
  EXPECT_FALSE(T(I32(), F32()) == T(F32(), F32()));
  EXPECT_FALSE(T(I32(), F32()) == T(I32(), I32()));
  EXPECT_FALSE(S(F32()) == S(I32()));
  // OperationPlan: each field in turn.
  const sw::OperationPlan base = f32_reduce_sum(&F32());
  const std::vector<sw::OperationPlan> variants = {
      make_plan("cumsum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F32(), F32()),
      make_plan("reduce_sum", {T(I32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F32(), F32()),
      make_plan("reduce_sum", {T(F32(), I32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F32(), F32()),
      make_plan("reduce_sum", {T(F32(), F32()), T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING,
                &F32(), F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::INT32_EXACT, Accumulation::FLOATING, &F32(), F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::SEQUENTIAL_BINARY32, &F32(),
                F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, std::nullopt, &F32(), F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F64(), F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, nullptr, F32()),
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F32(), I32()),
  };
  std::unordered_set<sw::OperationPlan> all{base};
  for (const sw::OperationPlan& v : variants) {
    EXPECT_FALSE(v == base) << v.to_string();
    all.insert(v);
  }
  EXPECT_EQ(all.size(), variants.size() + 1);
}

TEST(OperationDtypePolicy_R1, OutputDifferentiableIffOutputIsExactlyFloat32) {
  EXPECT_TRUE(sw::resolve_operation_plan("add", {F32(), F32()}).output_differentiable());
  EXPECT_FALSE(sw::resolve_operation_plan("add", {I32(), I32()}).output_differentiable());
  EXPECT_FALSE(sw::resolve_operation_plan("lt", {F32(), F32()}).output_differentiable());
  EXPECT_FALSE(sw::resolve_operation_plan("argmax", {F32()}).output_differentiable());
  // Not by likeness: a Float32 look-alike output and Float64 are not.
  EXPECT_FALSE(make_plan("add", {T(F32(), F32())}, Arithmetic::BINARY32, std::nullopt, nullptr, float32_impostor())
                   .output_differentiable());
  EXPECT_FALSE(make_plan("add", {T(F32(), F32())}, Arithmetic::BINARY32, std::nullopt, nullptr, F64())
                   .output_differentiable());
}

// ================================================================ R2

TEST(OperationDtypePolicy_R2, ArithmeticValuesAreLowerCaseMemberNames) {
  const std::vector<Arithmetic> all(sw::all_arithmetics().begin(), sw::all_arithmetics().end());
  // The specification's three members, then BINARY32_FUSED, the contracted
  // arithmetic strideweave adds beyond it (docs/policy.md).
  EXPECT_EQ(all, (std::vector<Arithmetic>{Arithmetic::BINARY32, Arithmetic::INT32_EXACT_CHECKED,
                                          Arithmetic::INT32_EXACT, Arithmetic::BINARY32_FUSED}));
  EXPECT_STREQ(sw::value_of(Arithmetic::BINARY32_FUSED), "binary32_fused");
  EXPECT_STREQ(sw::name_of(Arithmetic::BINARY32), "BINARY32");
  EXPECT_STREQ(sw::value_of(Arithmetic::BINARY32), "binary32");
  EXPECT_STREQ(sw::name_of(Arithmetic::INT32_EXACT_CHECKED), "INT32_EXACT_CHECKED");
  EXPECT_STREQ(sw::value_of(Arithmetic::INT32_EXACT_CHECKED), "int32_exact_checked");
  EXPECT_STREQ(sw::name_of(Arithmetic::INT32_EXACT), "INT32_EXACT");
  EXPECT_STREQ(sw::value_of(Arithmetic::INT32_EXACT), "int32_exact");
}

TEST(OperationDtypePolicy_R2, AccumulationValuesAreLowerCaseMemberNames) {
  const std::vector<std::pair<Accumulation, std::string>> expected = {
      {Accumulation::FLOATING, "FLOATING"},
      {Accumulation::SEQUENTIAL_BINARY32, "SEQUENTIAL_BINARY32"},
      {Accumulation::SEQUENTIAL_BINARY32_PRODUCT, "SEQUENTIAL_BINARY32_PRODUCT"},
      {Accumulation::MAXIMUM, "MAXIMUM"},
      {Accumulation::MINIMUM, "MINIMUM"},
      {Accumulation::ARGMAX, "ARGMAX"},
      {Accumulation::ARGMIN, "ARGMIN"},
      {Accumulation::EXACT_INTEGER, "EXACT_INTEGER"},
  };
  ASSERT_EQ(sw::all_accumulations().size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const auto& [member, name] = expected[k];
    EXPECT_EQ(sw::all_accumulations()[k], member);
    EXPECT_EQ(std::string(sw::name_of(member)), name);
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(std::string(sw::value_of(member)), lower);
  }
}

template <class C>
void expect_int32_sum(std::vector<std::int32_t> values, std::int32_t expected) {
  const sw::Tensor x = sw::make_tensor<C>(values, sw::Shape::of({static_cast<std::int64_t>(values.size())}));
  const sw::Tensor s = sw::reduce_sum(x);
  EXPECT_EQ(&s.dtype(), &I32());
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.values().at(0).as<std::int32_t>(), expected);
}

TEST(OperationDtypePolicy_R2, Int32SumWithOutOfRangePartialButInRangeTotalSucceeds) {
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  // Logical order: INT32_MAX + 1 leaves Int32, the total INT32_MAX - 1 does not.
  expect_int32_sum<sw::Generic>({kMax, 1, -2}, kMax - 1);
  expect_int32_sum<sw::CPU>({kMax, 1, -2}, kMax - 1);
  // Far outside in the middle, 3 at the end.
  expect_int32_sum<sw::Generic>({kMax, kMax, kMax, kMin, kMin, kMin, 3}, 0);
  expect_int32_sum<sw::CPU>({kMax, kMax, kMax, kMin, kMin, kMin, 3}, 0);
}

TEST(OperationDtypePolicy_R2, Int32SumWithOutOfRangeTotalRaisesOverflowErrorAtFinalNarrowing) {
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> values{kMax, 2, -1};  // total INT32_MAX + 1
  EXPECT_THROW_EXACTLY(sw::reduce_sum(sw::make_tensor<sw::Generic>(values, sw::Shape::of({3}))), sw::OverflowError);
  EXPECT_THROW_EXACTLY(sw::reduce_sum(sw::make_tensor<sw::CPU>(values, sw::Shape::of({3}))), sw::OverflowError);
}

// ================================================================ R3

TEST(OperationDtypePolicy_R3, OperationOverloadHoldsRolesRuleAndDomains) {
  const sw::OperationOverload o({OperandRole::TENSOR, OperandRole::WEAK_SCALAR}, trivial_rule(),
                                std::vector<sw::DTypeDomain>{{&F32(), &I32()}});
  EXPECT_TRUE(std::ranges::equal(o.roles(), std::vector<OperandRole>{OperandRole::TENSOR, OperandRole::WEAK_SCALAR}));
  ASSERT_TRUE(o.tensor_domains().has_value());
  EXPECT_EQ(*o.tensor_domains(), (std::vector<sw::DTypeDomain>{{&F32(), &I32()}}));
  const std::vector<PlanOperand> ops{F32(), 3};
  EXPECT_EQ(o.rule()("x", ops), make_plan("x", {T(F32(), F32()), S(F32())}, Arithmetic::BINARY32, std::nullopt,
                                          nullptr, F32()));
  const sw::OperationOverload free({OperandRole::TENSOR}, trivial_rule());
  EXPECT_FALSE(free.tensor_domains().has_value());
}

TEST(OperationDtypePolicy_R3, OperationOverloadWrongDomainCountOrEmptyDomainIsValueError) {
  const std::vector<OperandRole> tt{OperandRole::TENSOR, OperandRole::TENSOR};
  EXPECT_THROW_EXACTLY(sw::OperationOverload(tt, trivial_rule(), std::vector<sw::DTypeDomain>{{&F32()}}),
                       sw::ValueError);
  EXPECT_THROW_EXACTLY(
      sw::OperationOverload(tt, trivial_rule(), std::vector<sw::DTypeDomain>{{&F32()}, {&F32()}, {&F32()}}),
      sw::ValueError);
  // Domains count TENSOR roles only.
  EXPECT_THROW_EXACTLY(sw::OperationOverload({OperandRole::TENSOR, OperandRole::WEAK_SCALAR}, trivial_rule(),
                                             std::vector<sw::DTypeDomain>{{&F32()}, {&F32()}}),
                       sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationOverload(tt, trivial_rule(), std::vector<sw::DTypeDomain>{{&F32()}, {}}),
                       sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationOverload(tt, trivial_rule(), std::vector<sw::DTypeDomain>{}), sw::ValueError);
  EXPECT_NO_THROW(sw::OperationOverload(tt, trivial_rule(), std::vector<sw::DTypeDomain>{{&F32()}, {&I32()}}));
}

TEST(OperationDtypePolicy_R3, OperationSpecViolationsAreValueError) {
  auto ov = [](std::vector<OperandRole> roles) { return sw::OperationOverload(std::move(roles), trivial_rule()); };
  const std::vector<OperandRole> t{OperandRole::TENSOR}, tt{OperandRole::TENSOR, OperandRole::TENSOR},
      ts{OperandRole::TENSOR, OperandRole::WEAK_SCALAR};
  using Positions = std::optional<std::vector<std::int64_t>>;
  // Empty overloads.
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {}), sw::ValueError);
  // Duplicate role signature.
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt), ov(tt)}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt), ov(ts), ov(tt)}), sw::ValueError);
  // Positions: negative, not strictly increasing, length mismatch.
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{{-1, 0}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{{1, 1}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{{2, 1}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{{0}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{{0, 1, 2}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(t), ov(tt)}, true, Positions{{0, 1}}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::OperationSpec("x", {ov(tt)}, true, Positions{std::vector<std::int64_t>{}}), sw::ValueError);
  // Valid: gaps are allowed (positions index the full forward argument list).
  const sw::OperationSpec ok("x", {ov(tt), ov(ts)}, false, Positions{{0, 3}});
  EXPECT_EQ(ok.name(), "x");
  EXPECT_FALSE(ok.is_public());
  EXPECT_EQ(ok.dtype_operand_positions(), (Positions{{0, 3}}));
  EXPECT_EQ(ok.overloads().size(), 2u);
  const sw::OperationSpec defaults("y", {ov(t)});
  EXPECT_TRUE(defaults.is_public());
  EXPECT_EQ(defaults.dtype_operand_positions(), std::nullopt);
}

TEST(OperationDtypePolicy_R3, SingleOverloadSpecExposesRolesAndRuleMultiOverloadRaisesAttributeError) {
  const sw::OperationSpec* add = sw::find_operation("add");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(std::ranges::equal(add->roles(), std::vector<OperandRole>{OperandRole::TENSOR, OperandRole::TENSOR}));
  const std::vector<PlanOperand> ii{I32(), I32()};
  EXPECT_EQ(add->rule()("add", ii), sw::resolve_operation_plan("add", {I32(), I32()}));
  for (const char* name : {"mul", "pow", "clamp"}) {
    const sw::OperationSpec* spec = sw::find_operation(name);
    ASSERT_NE(spec, nullptr);
    EXPECT_GT(spec->overloads().size(), 1u) << name;
    EXPECT_THROW_EXACTLY((void)spec->roles(), sw::AttributeError) << name;
    EXPECT_THROW_EXACTLY((void)spec->rule(), sw::AttributeError) << name;
  }
  // Every registered spec: exactly the multi-overload ones raise.
  for (const sw::OperationSpec& s : sw::registered_operations()) {
    if (s.overloads().size() == 1) {
      EXPECT_NO_THROW((void)s.roles()) << s.name();
      EXPECT_NO_THROW((void)s.rule()) << s.name();
    } else {
      EXPECT_THROW_EXACTLY((void)s.roles(), sw::AttributeError) << s.name();
    }
  }
}

TEST(OperationDtypePolicy_R3, DtypeOperandPositionsOfRegisteredOperations) {
  using Positions = std::optional<std::vector<std::int64_t>>;
  const std::map<std::string, Positions> listed = {
      {"cumsum", Positions{{0}}},         {"conv_general", Positions{{0, 1}}},  {"gather", Positions{{0, 1}}},
      {"scatter", Positions{{0, 1, 2}}},  {"scatter_add", Positions{{0, 1, 2}}}, {"_sort_values", Positions{{0}}},
      {"_sort_indices", Positions{{0}}},  {"_topk_values", Positions{{0}}},     {"_topk_indices", Positions{{0}}},
  };
  for (const sw::OperationSpec& s : sw::registered_operations()) {
    const auto it = listed.find(s.name());
    EXPECT_EQ(s.dtype_operand_positions(), it == listed.end() ? std::nullopt : it->second) << s.name();
  }
}

TEST(OperationDtypePolicy_R3, PartialDtypeOperandPositionsNeverMakeAxesOrFlagsWeakScalars) {
  // Operations listing only some forward arguments plan tensors alone: no
  // weak-scalar role, one role per listed position, and an axis / shape passed
  // as a number is a wrong operand count, not a weak scalar.
  for (const sw::OperationSpec& s : sw::registered_operations()) {
    if (!s.dtype_operand_positions()) continue;
    for (const sw::OperationOverload& o : s.overloads()) {
      EXPECT_EQ(o.roles().size(), s.dtype_operand_positions()->size()) << s.name();
      EXPECT_TRUE(std::ranges::all_of(o.roles(), [](OperandRole r) { return r == OperandRole::TENSOR; }))
          << s.name();
    }
  }
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("cumsum", {F32(), 0}), sw::TypeError);             // axis
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("_topk_values", {F32(), 5}), sw::TypeError);       // k
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("conv_general", {F32(), F32(), 1}), sw::TypeError);  // stride
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("gather", {F32(), I32(), 0}), sw::TypeError);       // axis
}

// ================================================================ R4

TEST(OperationDtypePolicy_R4, RegisteredOperationsAreSortedByCodePointWithInternalNamesFirst) {
  const std::vector<std::string> names = registered_names();
  ASSERT_EQ(names.size(), 56u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 56u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 4),
            (std::vector<std::string>{"_sort_indices", "_sort_values", "_topk_indices", "_topk_values"}));
  EXPECT_EQ(names[4], "abs");
  EXPECT_EQ(names.back(), "tanh");
  // find_operation agrees with the listing.
  for (const sw::OperationSpec& s : sw::registered_operations()) EXPECT_EQ(sw::find_operation(s.name()), &s);
}

TEST(OperationDtypePolicy_R4, FiftyTwoPublicAndFourInternalNames) {
  std::size_t n_public = 0;
  std::vector<std::string> internal;
  for (const sw::OperationSpec& s : sw::registered_operations()) {
    if (s.is_public()) ++n_public;
    else internal.push_back(s.name());
    EXPECT_EQ(s.is_public(), s.name().front() != '_') << s.name();
  }
  EXPECT_EQ(n_public, 52u);
  EXPECT_EQ(internal, (std::vector<std::string>{"_sort_indices", "_sort_values", "_topk_indices", "_topk_values"}));
}

TEST(OperationDtypePolicy_R4, RepresentationOnlyNamesAndGtGeAreNotRegistered) {
  for (const char* name : {"view", "reshape", "permute", "rearrange", "as_strided", "broadcast_to", "squeeze",
                           "unsqueeze", "move", "gt", "ge", "sort", "topk"}) {
    EXPECT_EQ(sw::find_operation(name), nullptr) << name;
    EXPECT_THROW_EXACTLY(sw::resolve_operation_plan(name, {F32()}), sw::NotImplementedError) << name;
  }
}

TEST(OperationDtypePolicy_R4, Constants) {
  ASSERT_EQ(sw::SUPPORTED_TENSOR_DTYPES().size(), 2u);
  EXPECT_EQ(sw::SUPPORTED_TENSOR_DTYPES()[0], &F32());
  EXPECT_EQ(sw::SUPPORTED_TENSOR_DTYPES()[1], &I32());
  ASSERT_EQ(sw::WEAK_SCALAR_PROBES().size(), 3u);
  EXPECT_EQ(sw::WEAK_SCALAR_PROBES()[0].kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_TRUE(sw::WEAK_SCALAR_PROBES()[0].integer_value() == 3);
  EXPECT_EQ(sw::WEAK_SCALAR_PROBES()[1].kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_TRUE(sw::WEAK_SCALAR_PROBES()[1].integer_value() == -1);
  EXPECT_EQ(sw::WEAK_SCALAR_PROBES()[2].kind(), sw::WeakScalarKind::FLOAT);
  EXPECT_FALSE(sw::WEAK_SCALAR_PROBES()[2].is_bool());
  EXPECT_EQ(sw::WEAK_SCALAR_PROBES()[2].real_value(), 0.5);
  EXPECT_TRUE(sw::WEAK_SCALAR_PROBES()[0] == WeakScalar(3));
  EXPECT_TRUE(sw::WEAK_SCALAR_PROBES()[1] == WeakScalar(-1));
  EXPECT_TRUE(sw::WEAK_SCALAR_PROBES()[2] == WeakScalar(0.5));
  ASSERT_EQ(sw::SUPPORTED_ACCUMULATOR_DTYPES().size(), 2u);
  EXPECT_EQ(sw::SUPPORTED_ACCUMULATOR_DTYPES()[0], &F32());
  EXPECT_EQ(sw::SUPPORTED_ACCUMULATOR_DTYPES()[1], &F64());
  const std::set<std::string_view> configurable(sw::CONFIGURABLE_OPERATIONS().begin(),
                                                sw::CONFIGURABLE_OPERATIONS().end());
  EXPECT_EQ(configurable, (std::set<std::string_view>{"matmul", "reduce_sum"}));
  EXPECT_EQ(sw::CONFIGURABLE_OPERATIONS().size(), 2u);
  EXPECT_EQ(sw::INT32_MIN_VALUE, -2147483648LL);
  EXPECT_EQ(sw::INT32_MAX_VALUE, 2147483647LL);
  EXPECT_EQ(sw::INT32_MIN_VALUE, -kTwo31);
  EXPECT_EQ(sw::INT32_MAX_VALUE, kTwo31 - 1);
  EXPECT_EQ(sw::POW_INTEGER_EXPONENT_MAX, sw::INT32_MAX_VALUE);
}

TEST(OperationDtypePolicy_R4, DefaultsYield101PlansAndNoSelectPlan) {
  const std::vector<sw::OperationPlan> plans = sw::resolvable_plans();
  EXPECT_EQ(plans.size(), 101u);
  // The explicit-argument form with the default constants is the same.
  EXPECT_EQ(sw::resolvable_plans(sw::SUPPORTED_TENSOR_DTYPES(), sw::WEAK_SCALAR_PROBES()), plans);
  for (const sw::OperationPlan& p : plans) EXPECT_NE(p.operation(), "select");
  // Backends declare the select plan explicitly: it resolves directly.
  EXPECT_NO_THROW(sw::resolve_operation_plan("select", {BOOL(), F32(), F32()}));
}

TEST(OperationDtypePolicy_R4, ResolvablePlansAreDeterministicAndDuplicateFree) {
  const std::vector<sw::OperationPlan> a = sw::resolvable_plans();
  const std::vector<sw::OperationPlan> b = sw::resolvable_plans();
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::unordered_set<sw::OperationPlan>(a.begin(), a.end()).size(), a.size());
  for (const sw::OperationPlan& p : a) EXPECT_NE(sw::find_operation(p.operation()), nullptr) << p.to_string();
}

TEST(OperationDtypePolicy_R4, ResolvablePlansFollowSpecOverloadAndCartesianOrder) {
  const std::vector<sw::OperationPlan> plans = sw::resolvable_plans();
  // Spec name order.
  std::vector<std::string> ops;
  for (const sw::OperationPlan& p : plans) ops.push_back(p.operation());
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  auto slice = [&](const std::string& name) {
    std::vector<sw::OperationPlan> out;
    for (const sw::OperationPlan& p : plans)
      if (p.operation() == name) out.push_back(p);
    return out;
  };
  const auto b32 = Arithmetic::BINARY32;
  const auto none = std::nullopt;
  // Cartesian product, last slot fastest: (F,F), (F,I), (I,F), (I,I).
  EXPECT_EQ(slice("add"),
            (std::vector<sw::OperationPlan>{
                make_plan("add", {T(F32(), F32()), T(F32(), F32())}, b32, none, nullptr, F32()),
                make_plan("add", {T(F32(), F32()), T(I32(), F32())}, b32, none, nullptr, F32()),
                make_plan("add", {T(I32(), F32()), T(F32(), F32())}, b32, none, nullptr, F32()),
                make_plan("add", {T(I32(), I32()), T(I32(), I32())}, Arithmetic::INT32_EXACT_CHECKED, none, nullptr,
                          I32()),
            }));
  // Overload order (T,T) then (T,S); probes 3, -1, 0.5; first occurrence kept.
  const auto mul = slice("mul");
  ASSERT_EQ(mul.size(), 7u);
  EXPECT_EQ(mul[4], make_plan("mul", {T(F32(), F32()), S(F32())}, b32, none, nullptr, F32()));
  EXPECT_EQ(mul[5], make_plan("mul", {T(I32(), I32()), S(I32())}, Arithmetic::INT32_EXACT_CHECKED, none, nullptr,
                              I32()));
  EXPECT_EQ(mul[6], make_plan("mul", {T(I32(), F32()), S(F32())}, b32, none, nullptr, F32()));
  // pow: (T,T) x4, (T,S) x3, (S,T) x2.
  const auto pow = slice("pow");
  ASSERT_EQ(pow.size(), 9u);
  EXPECT_EQ(pow[4], make_plan("pow", {T(F32(), F32()), S(F32())}, b32, none, nullptr, F32()));
  EXPECT_EQ(pow[5], make_plan("pow", {T(I32(), I32()), S(I32())}, Arithmetic::INT32_EXACT_CHECKED, none, nullptr,
                              I32()));
  EXPECT_EQ(pow[6], make_plan("pow", {T(I32(), F32()), S(F32())}, b32, none, nullptr, F32()));
  EXPECT_EQ(pow[7], make_plan("pow", {S(F32()), T(F32(), F32())}, b32, none, nullptr, F32()));
  EXPECT_EQ(pow[8], make_plan("pow", {S(F32()), T(I32(), F32())}, b32, none, nullptr, F32()));
  // Accumulator variants directly follow their plan.
  EXPECT_EQ(slice("reduce_sum"),
            (std::vector<sw::OperationPlan>{
                f32_reduce_sum(&F32()), f32_reduce_sum(&F64()),
                make_plan("reduce_sum", {T(I32(), I32())}, Arithmetic::INT32_EXACT_CHECKED,
                          Accumulation::EXACT_INTEGER, nullptr, I32())}));
  const auto matmul = slice("matmul");
  ASSERT_EQ(matmul.size(), 7u);
  for (std::size_t k = 0; k < 6; k += 2) {
    EXPECT_EQ(matmul[k].accumulator_dtype(), &F32()) << k;
    EXPECT_EQ(matmul[k + 1], matmul[k].with_accumulator(&F64())) << k;
  }
  EXPECT_EQ(matmul[6].accumulation(), Accumulation::EXACT_INTEGER);
}

TEST(OperationDtypePolicy_R4, DefaultsIncludeEveryOverloadShapeAndBothAccumulatorsForFloat32ReduceSumAndMatmul) {
  const std::vector<sw::OperationPlan> plans = sw::resolvable_plans();
  std::size_t shapes = 0;
  for (const sw::OperationSpec& s : sw::registered_operations()) {
    if (s.name() == "select") continue;  // Bool is outside the default domain (R4.4)
    for (const sw::OperationOverload& o : s.overloads()) {
      ++shapes;
      const bool found = std::ranges::any_of(plans, [&](const sw::OperationPlan& p) {
        return p.operation() == s.name() && std::ranges::equal(p.roles(), o.roles());
      });
      EXPECT_TRUE(found) << s.name() << " overload with " << o.roles().size() << " roles";
    }
  }
  EXPECT_EQ(shapes, 52u + 2u + 3u + 4u);  // 52 single-overload names besides select; mul 2, pow 3, clamp 4
  const std::unordered_set<sw::OperationPlan> set(plans.begin(), plans.end());
  EXPECT_TRUE(set.count(f32_reduce_sum(&F32())));
  EXPECT_TRUE(set.count(f32_reduce_sum(&F64())));
  const auto mm = [](const sw::SimpleDType* acc) {
    return make_plan("matmul", {T(F32(), F32()), T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, acc,
                     F32());
  };
  EXPECT_TRUE(set.count(mm(&F32())));
  EXPECT_TRUE(set.count(mm(&F64())));
}

TEST(OperationDtypePolicy_R4, AddingBoolToTensorDtypesMakesDomainLessOverloadsRaiseNotImplementedError) {
  const sw::SimpleDType* with_bool[] = {&F32(), &I32(), &BOOL()};
  EXPECT_THROW_EXACTLY(sw::resolvable_plans(with_bool, sw::WEAK_SCALAR_PROBES()), sw::NotImplementedError);
  const sw::SimpleDType* only_bool[] = {&BOOL()};
  EXPECT_THROW_EXACTLY(sw::resolvable_plans(only_bool, sw::WEAK_SCALAR_PROBES()), sw::NotImplementedError);
}

TEST(OperationDtypePolicy_R4, RestrictedEnumerationsHonourDomains) {
  // Float32 only: Int32-index operations (gather, scatter, scatter_add) have no
  // candidate for their index slot and contribute nothing.
  const sw::SimpleDType* only_f32[] = {&F32()};
  const std::vector<sw::OperationPlan> f = sw::resolvable_plans(only_f32, sw::WEAK_SCALAR_PROBES());
  for (const sw::OperationPlan& p : f) {
    EXPECT_NE(p.operation(), "gather");
    EXPECT_NE(p.operation(), "scatter");
    for (const sw::OperandPlan& o : p.operands()) {
      if (o.role() == OperandRole::TENSOR) {
        EXPECT_EQ(o.dtype(), &F32()) << p.to_string();
      }
    }
  }
  EXPECT_LT(f.size(), 101u);
  EXPECT_GT(f.size(), 50u);
  // No weak probes: the (T,S)/(S,T)/clamp weak overloads contribute nothing.
  const std::vector<sw::OperationPlan> no_weak = sw::resolvable_plans(sw::SUPPORTED_TENSOR_DTYPES(), {});
  for (const sw::OperationPlan& p : no_weak)
    for (const sw::OperandPlan& o : p.operands()) EXPECT_EQ(o.role(), OperandRole::TENSOR) << p.to_string();
  EXPECT_EQ(no_weak.size(), 101u - 3u - 5u - 3u);  // mul (T,S) 3, pow (T,S)+(S,T) 5, clamp 3
}

// ================================================================ R5

TEST(OperationDtypePolicy_R5, UnknownNameRaisesNotImplementedError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("no_such_operation", {F32()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("", {F32()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("Add", {F32(), F32()}), sw::NotImplementedError);
}

TEST(OperationDtypePolicy_R5, MulAndPowTensorTensorVersusTensorScalarChooseDistinctOverloads) {
  for (const char* op : {"mul", "pow"}) {
    SCOPED_TRACE(op);
    const auto tt = sw::resolve_operation_plan(op, {F32(), F32()});
    const auto ts = sw::resolve_operation_plan(op, {F32(), 2});
    EXPECT_EQ(tt.roles(), (std::vector<OperandRole>{OperandRole::TENSOR, OperandRole::TENSOR}));
    EXPECT_EQ(ts.roles(), (std::vector<OperandRole>{OperandRole::TENSOR, OperandRole::WEAK_SCALAR}));
    EXPECT_EQ(ts.operands()[1].dtype(), nullptr);
    EXPECT_FALSE(tt == ts);
  }
  // mul's role signatures: exactly (T,T) and (T,S).
  const sw::OperationSpec* mul = sw::find_operation("mul");
  ASSERT_NE(mul, nullptr);
  ASSERT_EQ(mul->overloads().size(), 2u);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {2, F32()}), sw::TypeError);
  EXPECT_EQ(sw::resolve_operation_plan("pow", {2, F32()}).roles(),
            (std::vector<OperandRole>{OperandRole::WEAK_SCALAR, OperandRole::TENSOR}));
}

TEST(OperationDtypePolicy_R5, WrongOperandCountRaisesTypeError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32(), F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("neg", {F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {BOOL(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", std::span<const PlanOperand>()), sw::TypeError);
}

TEST(OperationDtypePolicy_R5, NoMatchingRoleSignatureRaisesTypeError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32(), 3}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {3, F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {3, 4}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("pow", {3, 4}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("neg", {1.5}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {BOOL(), 1, F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("clamp", {1, F32(), F32()}), sw::TypeError);
}

TEST(OperationDtypePolicy_R5, NonDTypeInTensorSlotRaisesTypeError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {null_dtype(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32(), null_dtype()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("neg", {null_dtype()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {null_dtype(), 3}), sw::TypeError);
  // A non-real weak scalar cannot be built at all in C++.
  static_assert(!std::is_constructible_v<WeakScalar, std::string>);
  static_assert(!std::is_constructible_v<WeakScalar, const char*>);
  static_assert(!std::is_convertible_v<const char*, WeakScalar>);
  static_assert(!std::is_convertible_v<const int*, WeakScalar>);
  static_assert(!std::is_constructible_v<PlanOperand, const char*>);
  static_assert(!std::is_convertible_v<std::string, PlanOperand>);
}

TEST(OperationDtypePolicy_R5, BothAccumulatorDtypeAndOptionsRaiseTypeError) {
  const OperationExecutionOptions options("reduce_sum", &F64());
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {F32()}, &F64(), &options), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {F32()}, &F32(), &options), sw::TypeError);
}

TEST(OperationDtypePolicy_R5, OptionsBoundToAnotherOperationRaiseValueError) {
  const OperationExecutionOptions for_matmul("matmul", &F64());
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {F32()}, nullptr, &for_matmul), sw::ValueError);
  const OperationExecutionOptions for_sum("reduce_sum");
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("matmul", {F32(), F32()}, nullptr, &for_sum), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32(), F32()}, nullptr, &for_sum), sw::ValueError);
}

TEST(OperationDtypePolicy_R5, OptionsAndAccumulatorAreValidatedBeforeTheNameIsLookedUp) {
  const OperationExecutionOptions for_sum("reduce_sum");
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("no_such_operation", {F32()}, nullptr, &for_sum), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("no_such_operation", {F32()}, &F64()), sw::TypeError);
  // Options are validated before dtypes.
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F64(), F32()}, &F64()), sw::TypeError);
}

TEST(OperationDtypePolicy_R5, ResolutionDependsOnlyOnNameDtypesAndBranchScalarsAndIsDeterministic) {
  // Resolution takes dtypes, never tensors; the same inputs give equal plans.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(sw::resolve_operation_plan("mul", {I32(), 5}), sw::resolve_operation_plan("mul", {I32(), 5}));
    EXPECT_EQ(sw::resolve_operation_plan("matmul", {F32(), I32()}, &F64()),
              sw::resolve_operation_plan("matmul", {F32(), I32()}, &F64()));
  }
  // Scalar values matter only through the branch they select.
  EXPECT_EQ(sw::resolve_operation_plan("mul", {I32(), 5}), sw::resolve_operation_plan("mul", {I32(), -7}));
  EXPECT_EQ(sw::resolve_operation_plan("mul", {F32(), 5}), sw::resolve_operation_plan("mul", {F32(), 0.25}));
}

// ================================================================ R6

TEST(OperationDtypePolicy_R6, CategoryInAnyTensorSlotRaisesTypeError) {
  const std::vector<const sw::DType*> categories = {&sw::DType::Any(), &sw::DType::Floating(),
                                                    &sw::DType::Integer(), &user_category()};
  const std::vector<SlotProbe> probes = every_tensor_slot();
  EXPECT_GT(probes.size(), 70u);
  for (const SlotProbe& probe : probes)
    for (const sw::DType* c : categories)
      EXPECT_THROW_EXACTLY(resolve_with(probe, *c), sw::TypeError)
          << probe.name << " slot " << probe.slot << " " << c->name();
}

TEST(OperationDtypePolicy_R6, CompoundInAnyTensorSlotRaisesNotImplementedError) {
  for (const SlotProbe& probe : every_tensor_slot())
    EXPECT_THROW_EXACTLY(resolve_with(probe, user_compound()), sw::NotImplementedError)
        << probe.name << " slot " << probe.slot;
}

TEST(OperationDtypePolicy_R6, RegisteredButUnimplementedSimpleDtypesRaiseNotImplementedError) {
  const std::vector<const sw::DType*> unimplemented = {
      &sw::DType::Float64(), &sw::DType::Int8(), &sw::DType::E8M0(), &sw::DType::E5M2(), &sw::DType::E4M3(),
      &sw::DType::E3M2(),    &sw::DType::E2M3(), &sw::DType::E2M1()};
  for (const SlotProbe& probe : every_tensor_slot())
    for (const sw::DType* d : unimplemented)
      EXPECT_THROW_EXACTLY(resolve_with(probe, *d), sw::NotImplementedError)
          << probe.name << " slot " << probe.slot << " " << d->name();
  // Never widened: Float64 does not become a Float32 plan.
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F64(), F32()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {sw::DType::Int8(), 2}), sw::NotImplementedError);
}

TEST(OperationDtypePolicy_R6, BoolOutsideABoolSlotRaisesNotImplementedError) {
  std::size_t checked = 0;
  for (const SlotProbe& probe : every_tensor_slot()) {
    if (probe.name == "select" && probe.slot == 0) {
      EXPECT_NO_THROW(resolve_with(probe, BOOL()));
      continue;
    }
    EXPECT_THROW_EXACTLY(resolve_with(probe, BOOL()), sw::NotImplementedError) << probe.name << " slot " << probe.slot;
    ++checked;
  }
  EXPECT_GT(checked, 70u);
}

TEST(OperationDtypePolicy_R6, ImplementedDtypeOutsideARestrictedSlotRaisesTypeError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("neg", {I32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("maximum", {I32(), I32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("maximum", {F32(), I32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {F32(), F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_prod", {I32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("argmax", {I32()}), sw::TypeError);
}

TEST(OperationDtypePolicy_R6, MatchingIsByIdentityFloat32ImpostorNeverMatches) {
  EXPECT_EQ(float32_impostor().bits(), F32().bits());
  EXPECT_FALSE(float32_impostor() == F32());
  for (const SlotProbe& probe : every_tensor_slot())
    EXPECT_THROW_EXACTLY(resolve_with(probe, float32_impostor()), sw::NotImplementedError)
        << probe.name << " slot " << probe.slot;
}

TEST(OperationDtypePolicy_R6, FirstFailingSlotInPositionalOrderDecides) {
  // Implementation choice (the spec fixes no order among slots): slots are
  // checked in positional order and the first failure wins.
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {sw::DType::Any(), user_compound()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {user_compound(), sw::DType::Any()}), sw::NotImplementedError);
}

// ================================================================ R7

TEST(OperationDtypePolicy_R7, WeakScalarKindOfBoolIntAndFloat) {
  EXPECT_EQ(WeakScalar(true).kind(), sw::WeakScalarKind::FLOAT);
  EXPECT_EQ(WeakScalar(false).kind(), sw::WeakScalarKind::FLOAT);
  EXPECT_TRUE(WeakScalar(true).is_bool());
  EXPECT_EQ(WeakScalar(true).real_value(), 1.0);
  EXPECT_EQ(WeakScalar(false).real_value(), 0.0);
  EXPECT_EQ(WeakScalar(3).kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_EQ(WeakScalar(std::int64_t{-5}).kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_EQ(WeakScalar(std::uint64_t{7}).kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_EQ(WeakScalar(static_cast<char>(1)).kind(), sw::WeakScalarKind::INTEGER);
  EXPECT_EQ(WeakScalar(0.5).kind(), sw::WeakScalarKind::FLOAT);
  EXPECT_EQ(WeakScalar(2.0f).kind(), sw::WeakScalarKind::FLOAT);
  EXPECT_EQ(WeakScalar(2.0).kind(), sw::WeakScalarKind::FLOAT);  // integral value, float kind
  EXPECT_FALSE(WeakScalar(3) == WeakScalar(3.0));
  EXPECT_FALSE(WeakScalar(true) == WeakScalar(1.0));
  EXPECT_EQ(WeakScalar(3).to_string(), "3");
  EXPECT_EQ(WeakScalar(-1).to_string(), "-1");
  EXPECT_EQ(WeakScalar(0.5).to_string(), "0.5");
  EXPECT_EQ(WeakScalar(true).to_string(), "true");
}

TEST(OperationDtypePolicy_R7, WeakOperandPlanHasNoDtypeAndTheOperationChoosesConvertTo) {
  const auto i = sw::resolve_operation_plan("mul", {I32(), 2});
  EXPECT_EQ(i.operands()[1].role(), OperandRole::WEAK_SCALAR);
  EXPECT_EQ(i.operands()[1].dtype(), nullptr);
  EXPECT_EQ(&i.operands()[1].convert_to(), &I32());
  const auto f = sw::resolve_operation_plan("clamp", {F32(), 0, 1});
  for (std::size_t k : {1u, 2u}) {
    EXPECT_EQ(f.operands()[k].dtype(), nullptr);
    EXPECT_EQ(&f.operands()[k].convert_to(), &F32());
  }
}

TEST(OperationDtypePolicy_R7, Int32TensorMulPythonTrueIsFloat32Plan) {
  expect_plan(sw::resolve_operation_plan("mul", {I32(), true}),
              make_plan("mul", {T(I32(), F32()), S(F32())}, Arithmetic::BINARY32, std::nullopt, nullptr, F32()));
}

TEST(OperationDtypePolicy_R7, Int32Mul2To31RaisesOverflowError) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {I32(), WeakScalar(kTwo31)}), sw::OverflowError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {I32(), WeakScalar::integer(sw::int128{1} << 100)}),
                       sw::OverflowError);
}

TEST(OperationDtypePolicy_R7, Float32Mul2To31IsFine) {
  expect_plan(sw::resolve_operation_plan("mul", {F32(), WeakScalar(kTwo31)}),
              make_plan("mul", {T(F32(), F32()), S(F32())}, Arithmetic::BINARY32, std::nullopt, nullptr, F32()));
}

TEST(OperationDtypePolicy_R7, Int32MulRangeIsInclusiveMinus2To31) {
  EXPECT_EQ(&sw::resolve_operation_plan("mul", {I32(), WeakScalar(-kTwo31)}).output(), &I32());
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {I32(), WeakScalar(-kTwo31 - 1)}), sw::OverflowError);
  EXPECT_EQ(&sw::resolve_operation_plan("mul", {I32(), WeakScalar(kTwo31 - 1)}).output(), &I32());
}

TEST(OperationDtypePolicy_R7, ToInt32AcceptsExactlyTheInt32Range) {
  EXPECT_EQ(WeakScalar(kTwo31 - 1).to_int32("mul"), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(WeakScalar(-kTwo31).to_int32("mul"), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(WeakScalar(0).to_int32("mul"), 0);
  EXPECT_EQ(WeakScalar(-1).to_int32("mul"), -1);
  EXPECT_THROW_EXACTLY(WeakScalar(kTwo31).to_int32("mul"), sw::OverflowError);
  EXPECT_THROW_EXACTLY(WeakScalar(-kTwo31 - 1).to_int32("mul"), sw::OverflowError);
  EXPECT_THROW_EXACTLY(WeakScalar(std::numeric_limits<std::uint64_t>::max()).to_int32("mul"), sw::OverflowError);
  EXPECT_THROW_EXACTLY(WeakScalar::integer(-(sw::int128{1} << 100)).to_int32("mul"), sw::OverflowError);
  // The message names the operation.
  try {
    WeakScalar(kTwo31).to_int32("mul");
    ADD_FAILURE() << "no OverflowError";
  } catch (const sw::OverflowError& e) {
    EXPECT_ERROR_TYPE_IS(e, sw::OverflowError);
    EXPECT_NE(std::string(e.what()).find("mul"), std::string::npos) << e.what();
  }
}

// ================================================================ R10

TEST(OperationDtypePolicy_R10, OptionsAcceptOnlyReduceSumAndMatmul) {
  for (const char* op : {"add", "mul", "cumsum", "reduce_prod", "conv_general", "no_such_operation"}) {
    EXPECT_THROW_EXACTLY(OperationExecutionOptions{op}, sw::TypeError) << op;
    EXPECT_THROW_EXACTLY(OperationExecutionOptions(op, &F64()), sw::TypeError) << op;
    EXPECT_THROW_EXACTLY(sw::operation_execution_options(op), sw::TypeError) << op;
  }
  const OperationExecutionOptions sum("reduce_sum");
  EXPECT_EQ(sum.operation(), "reduce_sum");
  EXPECT_EQ(sum.accumulator_dtype(), nullptr);  // None = default (Float32)
  const OperationExecutionOptions mm("matmul", &F64());
  EXPECT_EQ(mm.operation(), "matmul");
  EXPECT_EQ(mm.accumulator_dtype(), &F64());
  EXPECT_EQ(OperationExecutionOptions("matmul", &F32()).accumulator_dtype(), &F32());
}

TEST(OperationDtypePolicy_R10, NonSimpleAccumulatorIsTypeErrorUnsupportedSimpleIsNotImplementedError) {
  for (const sw::DType* d : {static_cast<const sw::DType*>(&sw::DType::Floating()),
                             static_cast<const sw::DType*>(&sw::DType::Any()),
                             static_cast<const sw::DType*>(&user_category()),
                             static_cast<const sw::DType*>(&user_compound())}) {
    EXPECT_THROW_EXACTLY(OperationExecutionOptions("reduce_sum", d), sw::TypeError) << d->name();
    EXPECT_THROW_EXACTLY(sw::operation_execution_options("matmul", d), sw::TypeError) << d->name();
  }
  for (const sw::DType* d : {static_cast<const sw::DType*>(&I32()), static_cast<const sw::DType*>(&BOOL()),
                             static_cast<const sw::DType*>(&sw::DType::Int8()),
                             static_cast<const sw::DType*>(&sw::DType::E4M3()),
                             static_cast<const sw::DType*>(&float32_impostor())}) {
    EXPECT_THROW_EXACTLY(OperationExecutionOptions("reduce_sum", d), sw::NotImplementedError) << d->name();
    EXPECT_THROW_EXACTLY(sw::operation_execution_options("matmul", d), sw::NotImplementedError) << d->name();
  }
  EXPECT_NO_THROW(OperationExecutionOptions("reduce_sum", &F64()));
  // The same validation applies to resolve_operation_plan's accumulator_dtype.
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {F32()}, &sw::DType::Floating()), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {F32()}, &I32()), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {F32(), F32()}, &F64()), sw::TypeError);
}

TEST(OperationDtypePolicy_R10, OperationExecutionOptionsFactoryEqualsConstructor) {
  EXPECT_TRUE(sw::operation_execution_options("reduce_sum") == OperationExecutionOptions("reduce_sum"));
  EXPECT_TRUE(sw::operation_execution_options("matmul", &F64()) == OperationExecutionOptions("matmul", &F64()));
  EXPECT_FALSE(sw::operation_execution_options("matmul", &F64()) == OperationExecutionOptions("matmul"));
  EXPECT_FALSE(sw::operation_execution_options("matmul") == OperationExecutionOptions("reduce_sum"));
}

TEST(OperationDtypePolicy_R10, FloatingAccumulatorOnExactIntegerPlanRaisesTypeErrorAtResolution) {
  const OperationExecutionOptions sum64("reduce_sum", &F64());
  const OperationExecutionOptions mm64("matmul", &F64());
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {I32()}, nullptr, &sum64), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("matmul", {I32(), I32()}, nullptr, &mm64), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {I32()}, &F64()), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("matmul", {I32(), I32()}, &F64()), sw::TypeError);
  // Default options (no accumulator) are fine on the exact plans.
  const OperationExecutionOptions sum_default("reduce_sum");
  EXPECT_EQ(&sw::resolve_operation_plan("reduce_sum", {I32()}, nullptr, &sum_default).output(), &I32());
  // Mixed Int32/Float32 matmul is a floating plan: Float64 is allowed.
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {I32(), F32()}, nullptr, &mm64).accumulator_dtype(), &F64());
}

TEST(OperationDtypePolicy_R10, ADifferentAccumulatorChangesOnlyAccumulatorDtype) {
  const std::vector<std::pair<std::string, std::vector<PlanOperand>>> cases = {
      {"reduce_sum", {F32()}}, {"matmul", {F32(), F32()}}, {"matmul", {F32(), I32()}}, {"matmul", {I32(), F32()}}};
  for (const auto& [op, in] : cases) {
    SCOPED_TRACE(op);
    const std::span<const PlanOperand> ops(in);
    const sw::OperationPlan base = sw::resolve_operation_plan(op, ops);
    const OperationExecutionOptions o64(op, &F64()), o32(op, &F32()), odef(op);
    for (const sw::OperationPlan& wide :
         {sw::resolve_operation_plan(op, ops, &F64()), sw::resolve_operation_plan(op, ops, nullptr, &o64)}) {
      EXPECT_EQ(wide.accumulator_dtype(), &F64());
      expect_plan(wide, base.with_accumulator(&F64()));
      EXPECT_TRUE(std::ranges::equal(wide.operands(), base.operands()));
      EXPECT_EQ(wide.compute(), base.compute());
      EXPECT_EQ(wide.accumulation(), base.accumulation());
      EXPECT_EQ(&wide.output(), &F32());
    }
    EXPECT_EQ(sw::resolve_operation_plan(op, ops, nullptr, &o32), base);
    EXPECT_EQ(sw::resolve_operation_plan(op, ops, nullptr, &odef), base);
    EXPECT_EQ(base.accumulator_dtype(), &F32());
  }
}

TEST(OperationDtypePolicy_R10, ReduceSumOptionsRequestingFloat64KeepConversionComputeAndFloat32Output) {
  const OperationExecutionOptions o = sw::operation_execution_options("reduce_sum", &F64());
  expect_plan(sw::resolve_operation_plan("reduce_sum", {F32()}, nullptr, &o), f32_reduce_sum(&F64()));
}

TEST(OperationDtypePolicy_R10, PlanAccumulatorVariantsOrder) {
  // Float32 first: (plan, Float64 copy).
  const auto v32 = sw::plan_accumulator_variants(f32_reduce_sum(&F32()));
  EXPECT_EQ(v32, (std::vector<sw::OperationPlan>{f32_reduce_sum(&F32()), f32_reduce_sum(&F64())}));
  // Float64 first: (plan, then the others in (Float32, Float64) order).
  const auto v64 = sw::plan_accumulator_variants(f32_reduce_sum(&F64()));
  EXPECT_EQ(v64, (std::vector<sw::OperationPlan>{f32_reduce_sum(&F64()), f32_reduce_sum(&F32())}));
  const auto mm = sw::resolve_operation_plan("matmul", {F32(), I32()});
  EXPECT_EQ(sw::plan_accumulator_variants(mm), (std::vector<sw::OperationPlan>{mm, mm.with_accumulator(&F64())}));
}

TEST(OperationDtypePolicy_R10, PlanAccumulatorVariantsOfOtherPlansIsThePlanAlone) {
  const std::vector<sw::OperationPlan> singles = {
      sw::resolve_operation_plan("reduce_sum", {I32()}),
      sw::resolve_operation_plan("matmul", {I32(), I32()}),
      sw::resolve_operation_plan("add", {F32(), F32()}),
      sw::resolve_operation_plan("cumsum", {F32()}),
      sw::resolve_operation_plan("reduce_prod", {F32()}),
      // Non-configurable operation even with FLOATING accumulation.
      make_plan("add", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::FLOATING, &F32(), F32()),
      // Configurable operation without FLOATING accumulation.
      make_plan("reduce_sum", {T(F32(), F32())}, Arithmetic::BINARY32, Accumulation::SEQUENTIAL_BINARY32, nullptr,
                F32()),
  };
  for (const sw::OperationPlan& p : singles)
    EXPECT_EQ(sw::plan_accumulator_variants(p), (std::vector<sw::OperationPlan>{p})) << p.to_string();
}

TEST(OperationDtypePolicy_R10, FrontEndOptionsBoundToAnotherOperationRaiseValueError) {
  const sw::Tensor x = sw::make_tensor<sw::Generic>(std::vector<float>{1.0f, 2.0f}, sw::Shape::of({2}));
  const sw::Tensor m = sw::make_tensor<sw::Generic>(std::vector<float>{1.0f, 2.0f}, sw::Shape::of({1, 2}));
  const sw::Tensor n = sw::make_tensor<sw::Generic>(std::vector<float>{1.0f, 2.0f}, sw::Shape::of({2, 1}));
  // The same calls without options first: their plans are cached, and
  // another operation's empty options must not hit those entries.
  (void)sw::reduce_sum(x);
  (void)sw::matmul(m, n);
  EXPECT_THROW_EXACTLY(sw::reduce_sum(x, sw::Axes::all(), false, sw::operation_execution_options("matmul")),
                       sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::matmul(m, n, sw::operation_execution_options("reduce_sum")), sw::ValueError);
  const sw::Tensor xi = sw::make_tensor<sw::CPU>(std::vector<std::int32_t>{1, 2}, sw::Shape::of({2}));
  EXPECT_THROW_EXACTLY(sw::reduce_sum(xi, sw::Axes::all(), false, sw::operation_execution_options("reduce_sum", &F64())),
                       sw::TypeError);
}

// ================================================================ Contracted arithmetic
// Beyond the specification (docs/policy.md, "Contracted arithmetic"):
// Arithmetic::BINARY32_FUSED, selected only through the execution options.

TEST(PolicyExtension_ContractedArithmetic, DefaultPlansAreNeverFused) {
  for (const sw::OperationPlan& p : sw::resolvable_plans())
    EXPECT_NE(p.compute(), Arithmetic::BINARY32_FUSED) << p.to_string();
  for (const sw::OperationPlan& p : sw::resolvable_plans())
    for (const sw::OperationPlan& v : sw::plan_accumulator_variants(p))
      EXPECT_NE(v.compute(), Arithmetic::BINARY32_FUSED) << v.to_string();
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {F32(), F32()}).compute(), Arithmetic::BINARY32);
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {F32(), F32()}, &F32()).compute(), Arithmetic::BINARY32);
  const OperationExecutionOptions strict("matmul", nullptr, Arithmetic::BINARY32);
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {F32(), F32()}, nullptr, &strict),
            sw::resolve_operation_plan("matmul", {F32(), F32()}));
}

TEST(PolicyExtension_ContractedArithmetic, OptionSelectsTheFusedMatmulPlan) {
  const sw::OperationPlan strict = sw::resolve_operation_plan("matmul", {F32(), I32()});
  const OperationExecutionOptions fused("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  const sw::OperationPlan p = sw::resolve_operation_plan("matmul", {F32(), I32()}, nullptr, &fused);
  EXPECT_EQ(p, strict.with_compute(Arithmetic::BINARY32_FUSED));
  EXPECT_EQ(p.accumulation(), Accumulation::FLOATING);
  EXPECT_EQ(p.accumulator_dtype(), &F32());
  EXPECT_EQ(&p.output(), &F32());
  EXPECT_TRUE(std::ranges::equal(p.operands(), strict.operands()));  // only the compute arithmetic differs
  const OperationExecutionOptions fused32("matmul", &F32(), Arithmetic::BINARY32_FUSED);
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {F32(), F32()}, nullptr, &fused32).compute(),
            Arithmetic::BINARY32_FUSED);
  EXPECT_TRUE(fused == sw::operation_execution_options("matmul", nullptr, Arithmetic::BINARY32_FUSED));
  EXPECT_FALSE(fused == OperationExecutionOptions("matmul"));
}

TEST(PolicyExtension_ContractedArithmetic, InvalidRequestsRaiseTypedErrors) {
  EXPECT_THROW_EXACTLY(OperationExecutionOptions("reduce_sum", nullptr, Arithmetic::BINARY32_FUSED), sw::TypeError);
  EXPECT_THROW_EXACTLY(OperationExecutionOptions("matmul", &F64(), Arithmetic::BINARY32_FUSED), sw::TypeError);
  EXPECT_THROW_EXACTLY(OperationExecutionOptions("matmul", nullptr, Arithmetic::INT32_EXACT), sw::TypeError);
  EXPECT_THROW_EXACTLY(OperationExecutionOptions("matmul", nullptr, Arithmetic::INT32_EXACT_CHECKED), sw::TypeError);
  EXPECT_THROW_EXACTLY(OperationExecutionOptions("add", nullptr, Arithmetic::BINARY32), sw::TypeError);
  const OperationExecutionOptions fused("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("matmul", {I32(), I32()}, nullptr, &fused), sw::TypeError);
  const OperationExecutionOptions strict("matmul", nullptr, Arithmetic::BINARY32);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("matmul", {I32(), I32()}, nullptr, &strict), sw::TypeError);
  EXPECT_EQ(sw::arithmetic_from_value("binary32_fused"), Arithmetic::BINARY32_FUSED);
  EXPECT_THROW_EXACTLY(sw::arithmetic_from_value("fused"), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::arithmetic_from_value("BINARY32"), sw::ValueError);  // values, not member names
}

TEST(PolicyExtension_ContractedArithmetic, ArithmeticVariantsListTheFusedMatmulOnly) {
  const sw::OperationPlan mm = sw::resolve_operation_plan("matmul", {I32(), F32()});
  EXPECT_EQ(sw::plan_arithmetic_variants(mm),
            (std::vector<sw::OperationPlan>{mm, mm.with_compute(Arithmetic::BINARY32_FUSED)}));
  for (const sw::OperationPlan& p : {mm.with_accumulator(&F64()), sw::resolve_operation_plan("matmul", {I32(), I32()}),
                                     f32_reduce_sum(&F32()), sw::resolve_operation_plan("add", {F32(), F32()})})
    EXPECT_EQ(sw::plan_arithmetic_variants(p), (std::vector<sw::OperationPlan>{p})) << p.to_string();
  // The executable set ends with exactly the three contracted Float32 matmul plans.
  const std::vector<sw::OperationPlan> all = sw::executable_plan_set();
  std::size_t fused = 0;
  for (const sw::OperationPlan& p : all) fused += p.compute() == Arithmetic::BINARY32_FUSED;
  EXPECT_EQ(fused, 3u);
  EXPECT_EQ(all.size(), sw::resolvable_plans().size() + 1 + 3);
}

// ================================================================ R11

namespace {

// Summed in any binary32 association these three give 33554432; summed in
// binary64 they give exactly 33554434.5, stored as binary32 33554436.
const std::vector<float> kAccumulatorSensitive = {16777216.0f, 16777218.0f, 0.5f};
constexpr float kFloat32Sum = 33554432.0f;
constexpr float kFloat64Sum = 33554436.0f;

template <class C>
float sum_with(const sw::SimpleDType* acc) {
  const sw::Tensor x = sw::make_tensor<C>(kAccumulatorSensitive, sw::Shape::of({3}));
  std::optional<OperationExecutionOptions> options;
  if (acc) options = sw::operation_execution_options("reduce_sum", acc);
  const sw::Tensor s = sw::reduce_sum(x, sw::Axes::all(), false, options);
  EXPECT_EQ(&s.dtype(), &F32());
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.carrier_type(), sw::carrier_class<C>());
  return s.values().at(0).as<float>();
}

template <class C>
float matmul_with(const sw::SimpleDType* acc) {
  const sw::Tensor a = sw::make_tensor<C>(kAccumulatorSensitive, sw::Shape::of({1, 3}));
  const sw::Tensor b = sw::make_tensor<C>(std::vector<float>{1.0f, 1.0f, 1.0f}, sw::Shape::of({3, 1}));
  std::optional<OperationExecutionOptions> options;
  if (acc) options = sw::operation_execution_options("matmul", acc);
  const sw::Tensor r = sw::matmul(a, b, options);
  EXPECT_EQ(&r.dtype(), &F32());
  EXPECT_EQ(r.size(), 1);
  EXPECT_EQ(r.carrier_type(), sw::carrier_class<C>());
  return r.values().at(0).as<float>();
}

}  // namespace

TEST(OperationDtypePolicy_R11, GenericAndCpuExecuteBothReduceSumAccumulatorVariantsWithFloat32Storage) {
  EXPECT_EQ(sum_with<sw::Generic>(nullptr), kFloat32Sum);
  EXPECT_EQ(sum_with<sw::Generic>(&F32()), kFloat32Sum);
  EXPECT_EQ(sum_with<sw::Generic>(&F64()), kFloat64Sum);
  EXPECT_EQ(sum_with<sw::CPU>(nullptr), kFloat32Sum);
  EXPECT_EQ(sum_with<sw::CPU>(&F32()), kFloat32Sum);
  EXPECT_EQ(sum_with<sw::CPU>(&F64()), kFloat64Sum);
}

TEST(OperationDtypePolicy_R11, GenericAndCpuExecuteBothMatmulAccumulatorVariantsWithFloat32Storage) {
  EXPECT_EQ(matmul_with<sw::Generic>(nullptr), kFloat32Sum);
  EXPECT_EQ(matmul_with<sw::Generic>(&F32()), kFloat32Sum);
  EXPECT_EQ(matmul_with<sw::Generic>(&F64()), kFloat64Sum);
  EXPECT_EQ(matmul_with<sw::CPU>(nullptr), kFloat32Sum);
  EXPECT_EQ(matmul_with<sw::CPU>(&F32()), kFloat32Sum);
  EXPECT_EQ(matmul_with<sw::CPU>(&F64()), kFloat64Sum);
}

TEST(OperationDtypePolicy_R11, GenericAndCpuAdvertiseEveryAccumulatorVariantOfReduceSumAndMatmul) {
  for (const sw::OperationPlan& p : sw::resolvable_plans()) {
    if (p.operation() != "reduce_sum" && p.operation() != "matmul") continue;
    EXPECT_EQ(sw::unsupported_plan_reason(sw::carrier_class<sw::Generic>(), p), std::nullopt) << p.to_string();
    EXPECT_EQ(sw::unsupported_plan_reason(sw::carrier_class<sw::CPU>(), p), std::nullopt) << p.to_string();
  }
}

TEST(OperationDtypePolicy_R11, GenericAndCpuAgreeOnOneSupportedPlan) {
  // Int32 + Float32 add resolves the Float32 plan on both carriers.
  const std::vector<std::int32_t> ai{1, -2, 16777217};
  const std::vector<float> bf{0.5f, 0.25f, 0.0f};
  const sw::Tensor g = sw::add(sw::make_tensor<sw::Generic>(ai, sw::Shape::of({3})),
                               sw::make_tensor<sw::Generic>(bf, sw::Shape::of({3})));
  const sw::Tensor c =
      sw::add(sw::make_tensor<sw::CPU>(ai, sw::Shape::of({3})), sw::make_tensor<sw::CPU>(bf, sw::Shape::of({3})));
  EXPECT_EQ(&g.dtype(), &F32());
  EXPECT_EQ(&c.dtype(), &F32());
  EXPECT_EQ(g.values(), c.values());
  // 16777217 converts to Float32 16777216 before the add (I->F in the plan).
  EXPECT_EQ(g.values().at(2).as<float>(), 16777216.0f);
  EXPECT_EQ(g.values().at(0).as<float>(), 1.5f);
}
