// The complete table of registered operations of operation-dtype-policy.md
// ("Registered operations (complete table, 56 names)"), transcribed row by
// row into kTable below, and the requirements it pins: R8 (core promotion
// families) and R9 (structured families). Every row lists its names, its
// overloads with their domains ("F/I" = no explicit domain, i.e.
// tensor_domains nullopt; "F", "F,I", ... = explicit domains), public flag,
// dtype_operand_positions and the exact plans for each input combination.
// The other requirements are in test_operation_dtype_policy.cpp.
#include "policy/policy_test_support.h"
#include "support/expect_exactly.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace sw = strideweave;
using namespace policy_test;
using sw::Accumulation;
using sw::Arithmetic;
using sw::OperandRole;
using sw::PlanOperand;
using sw::WeakScalar;

namespace {

using Domains = std::optional<std::vector<sw::DTypeDomain>>;

struct Overload {
  std::vector<OperandRole> roles;
  Domains domains;  // nullopt: "F/I" (caller's enumeration domain)
};

// One input combination and its exact plan (operation name filled per row).
struct Case {
  std::vector<PlanOperand> inputs;
  std::vector<sw::OperandPlan> operands;
  Arithmetic compute;
  std::optional<Accumulation> accumulation;
  const sw::SimpleDType* accumulator;
  const sw::SimpleDType* output;
  // "acc F (variant F64)": plan_accumulator_variants adds a Float64 copy.
  bool f64_variant = false;
};

struct Row {
  std::vector<std::string> names;
  std::vector<Overload> overloads;
  bool is_public;
  std::optional<std::vector<std::int64_t>> positions;
  std::vector<Case> cases;
};

const std::vector<OperandRole> kT{OperandRole::TENSOR};
const std::vector<OperandRole> kTT{OperandRole::TENSOR, OperandRole::TENSOR};
const std::vector<OperandRole> kTS{OperandRole::TENSOR, OperandRole::WEAK_SCALAR};
const std::vector<OperandRole> kST{OperandRole::WEAK_SCALAR, OperandRole::TENSOR};
const std::vector<OperandRole> kTTT{OperandRole::TENSOR, OperandRole::TENSOR, OperandRole::TENSOR};
const std::vector<OperandRole> kTTS{OperandRole::TENSOR, OperandRole::TENSOR, OperandRole::WEAK_SCALAR};
const std::vector<OperandRole> kTST{OperandRole::TENSOR, OperandRole::WEAK_SCALAR, OperandRole::TENSOR};
const std::vector<OperandRole> kTSS{OperandRole::TENSOR, OperandRole::WEAK_SCALAR, OperandRole::WEAK_SCALAR};

const std::vector<Row>& table() {
  static const std::vector<Row> rows = [] {
    const sw::SimpleDType *f = &F32(), *i = &I32(), *b = &BOOL();
    const sw::SimpleDType &F = F32(), &I = I32(), &B = BOOL();
    const Arithmetic b32 = Arithmetic::BINARY32, chk = Arithmetic::INT32_EXACT_CHECKED, ex = Arithmetic::INT32_EXACT;
    const std::nullopt_t none = std::nullopt;
    const WeakScalar two31 = WeakScalar(kTwo31);
    const WeakScalar int32_max = WeakScalar(std::int64_t{2147483647});
    const WeakScalar int32_min = WeakScalar(std::int64_t{-2147483648LL});
    const WeakScalar huge = WeakScalar::integer(sw::int128{1} << 100);
    const WeakScalar neg_huge = WeakScalar::integer(-(sw::int128{1} << 100));
    auto dom = [](std::vector<sw::DTypeDomain> d) { return Domains(std::move(d)); };

    // (T,T) "as add": I,I: I->I, chk, out I. Otherwise both ->F, b32, out F.
    const std::vector<Case> additive_tt = {
        {{F, F}, {T(F, F), T(F, F)}, b32, none, nullptr, f},
        {{F, I}, {T(F, F), T(I, F)}, b32, none, nullptr, f},
        {{I, F}, {T(I, F), T(F, F)}, b32, none, nullptr, f},
        {{I, I}, {T(I, I), T(I, I)}, chk, none, nullptr, i},
    };
    // (T,T) always Float32.
    const std::vector<Case> float_tt = {
        {{F, F}, {T(F, F), T(F, F)}, b32, none, nullptr, f},
        {{F, I}, {T(F, F), T(I, F)}, b32, none, nullptr, f},
        {{I, F}, {T(I, F), T(F, F)}, b32, none, nullptr, f},
        {{I, I}, {T(I, F), T(I, F)}, b32, none, nullptr, f},
    };
    auto concat = [](std::vector<Case> a, const std::vector<Case>& c) {
      a.insert(a.end(), c.begin(), c.end());
      return a;
    };

    std::vector<Row> t;
    // | add, sub, elementwise_mul | (T,T) F/I | I,I: I->I, chk, out I. Otherwise both ->F, b32, out F |
    t.push_back({{"add", "sub", "elementwise_mul"}, {{kTT, none}}, true, none, additive_tt});
    // | mul | (T,T) as add; (T,S) | (T,S): I tensor + INTEGER scalar: I->I, S->I, chk, out I.
    //   Otherwise T->F, S->F, b32, out F |
    t.push_back({{"mul"},
                 {{kTT, none}, {kTS, none}},
                 true,
                 none,
                 concat(additive_tt,
                        {
                            {{I, 3}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, -1}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, 0}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, int32_max}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, int32_min}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, 0.5}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, 2.0}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, true}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{F, 3}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, -1}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, 0.5}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, true}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, two31}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, huge}, {T(F, F), S(F)}, b32, none, nullptr, f},
                        })});
    // | div | (T,T) F/I | both ->F, b32, out F |
    t.push_back({{"div"}, {{kTT, none}}, true, none, float_tt});
    // | pow | (T,T); (T,S); (S,T) | (T,T): both ->F, b32, F. (T,S): I base, integer exponent
    //   0..2**31-1: I, S->I, chk, out I; else ->F, b32, F. (S,T): S->F, T->F, b32, F |
    t.push_back({{"pow"},
                 {{kTT, none}, {kTS, none}, {kST, none}},
                 true,
                 none,
                 concat(float_tt,
                        {
                            {{I, 0}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, 3}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, int32_max}, {T(I, I), S(I)}, chk, none, nullptr, i},
                            {{I, two31}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, huge}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, -1}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, int32_min}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, 0.5}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, 2.0}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{I, true}, {T(I, F), S(F)}, b32, none, nullptr, f},
                            {{F, 3}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, -1}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{F, 0.5}, {T(F, F), S(F)}, b32, none, nullptr, f},
                            {{3, F}, {S(F), T(F, F)}, b32, none, nullptr, f},
                            {{-1, F}, {S(F), T(F, F)}, b32, none, nullptr, f},
                            {{0.5, F}, {S(F), T(F, F)}, b32, none, nullptr, f},
                            {{3, I}, {S(F), T(I, F)}, b32, none, nullptr, f},
                            {{-1, I}, {S(F), T(I, F)}, b32, none, nullptr, f},
                            {{0.5, I}, {S(F), T(I, F)}, b32, none, nullptr, f},
                        })});
    // | maximum, minimum, rem | (T,T) F,F | b32, out F |
    t.push_back({{"maximum", "minimum", "rem"},
                 {{kTT, dom({{f}, {f}})}},
                 true,
                 none,
                 {{{F, F}, {T(F, F), T(F, F)}, b32, none, nullptr, f}}});
    // | eq, ne, lt, le | (T,T) F,F | b32, out B |
    t.push_back({{"eq", "ne", "lt", "le"},
                 {{kTT, dom({{f}, {f}})}},
                 true,
                 none,
                 {{{F, F}, {T(F, F), T(F, F)}, b32, none, nullptr, b}}});
    // | logical_not | (T) F | b32, out B |
    t.push_back({{"logical_not"}, {{kT, dom({{f}})}}, true, none, {{{F}, {T(F, F)}, b32, none, nullptr, b}}});
    // | relu | (T) F/I | F: b32, out F. I: I->I, ex, out I |
    t.push_back({{"relu"},
                 {{kT, none}},
                 true,
                 none,
                 {{{F}, {T(F, F)}, b32, none, nullptr, f}, {{I}, {T(I, I)}, ex, none, nullptr, i}}});
    // | elu, exp, gelu, leaky_relu, sigmoid, silu, softplus, tanh | (T) F/I | T->F, b32, out F |
    t.push_back({{"elu", "exp", "gelu", "leaky_relu", "sigmoid", "silu", "softplus", "tanh"},
                 {{kT, none}},
                 true,
                 none,
                 {{{F}, {T(F, F)}, b32, none, nullptr, f}, {{I}, {T(I, F)}, b32, none, nullptr, f}}});
    // | neg, abs, sign, recip, sqrt, rsqrt, exp2, log, log2, sin, cos, erf, floor, ceil, round | (T) F | b32, out F |
    t.push_back({{"neg", "abs", "sign", "recip", "sqrt", "rsqrt", "exp2", "log", "log2", "sin", "cos", "erf", "floor",
                  "ceil", "round"},
                 {{kT, dom({{f}})}},
                 true,
                 none,
                 {{{F}, {T(F, F)}, b32, none, nullptr, f}}});
    // | reduce_sum | (T) F/I | F: b32, FLOATING, acc F (variant F64), out F.
    //   I: I->I, chk, EXACT_INTEGER, acc None, out I |
    t.push_back({{"reduce_sum"},
                 {{kT, none}},
                 true,
                 none,
                 {{{F}, {T(F, F)}, b32, Accumulation::FLOATING, f, f, true},
                  {{I}, {T(I, I)}, chk, Accumulation::EXACT_INTEGER, nullptr, i}}});
    // | reduce_prod | (T) F | b32, SEQUENTIAL_BINARY32_PRODUCT, out F |
    t.push_back({{"reduce_prod"},
                 {{kT, dom({{f}})}},
                 true,
                 none,
                 {{{F}, {T(F, F)}, b32, Accumulation::SEQUENTIAL_BINARY32_PRODUCT, nullptr, f}}});
    // | reduce_max / reduce_min | (T) F | b32, MAXIMUM / MINIMUM, out F |
    t.push_back({{"reduce_max"}, {{kT, dom({{f}})}}, true, none,
                 {{{F}, {T(F, F)}, b32, Accumulation::MAXIMUM, nullptr, f}}});
    t.push_back({{"reduce_min"}, {{kT, dom({{f}})}}, true, none,
                 {{{F}, {T(F, F)}, b32, Accumulation::MINIMUM, nullptr, f}}});
    // | argmax / argmin | (T) F | b32, ARGMAX / ARGMIN, out I |
    t.push_back({{"argmax"}, {{kT, dom({{f}})}}, true, none,
                 {{{F}, {T(F, F)}, b32, Accumulation::ARGMAX, nullptr, i}}});
    t.push_back({{"argmin"}, {{kT, dom({{f}})}}, true, none,
                 {{{F}, {T(F, F)}, b32, Accumulation::ARGMIN, nullptr, i}}});
    // | cumsum | (T) F; positions (0,) | b32, SEQUENTIAL_BINARY32, out F |
    t.push_back({{"cumsum"}, {{kT, dom({{f}})}}, true, std::vector<std::int64_t>{0},
                 {{{F}, {T(F, F)}, b32, Accumulation::SEQUENTIAL_BINARY32, nullptr, f}}});
    // | matmul | (T,T) F/I | I,I: I->I, ex, EXACT_INTEGER, acc None, out I.
    //   Otherwise both ->F, b32, FLOATING, acc F (variant F64), out F |
    t.push_back({{"matmul"},
                 {{kTT, none}},
                 true,
                 none,
                 {{{F, F}, {T(F, F), T(F, F)}, b32, Accumulation::FLOATING, f, f, true},
                  {{F, I}, {T(F, F), T(I, F)}, b32, Accumulation::FLOATING, f, f, true},
                  {{I, F}, {T(I, F), T(F, F)}, b32, Accumulation::FLOATING, f, f, true},
                  {{I, I}, {T(I, I), T(I, I)}, ex, Accumulation::EXACT_INTEGER, nullptr, i}}});
    // | conv_general | (T,T) F,F; positions (0,1) | b32, SEQUENTIAL_BINARY32, out F |
    t.push_back({{"conv_general"}, {{kTT, dom({{f}, {f}})}}, true, std::vector<std::int64_t>{0, 1},
                 {{{F, F}, {T(F, F), T(F, F)}, b32, Accumulation::SEQUENTIAL_BINARY32, nullptr, f}}});
    // | gather | (T,T) F,I; positions (0,1) | data F, indices I->I, b32, out F |
    t.push_back({{"gather"}, {{kTT, dom({{f}, {i}})}}, true, std::vector<std::int64_t>{0, 1},
                 {{{F, I}, {T(F, F), T(I, I)}, b32, none, nullptr, f}}});
    // | scatter | (T,T,T) F,I,F; positions (0,1,2) | b32, out F |
    t.push_back({{"scatter"}, {{kTTT, dom({{f}, {i}, {f}})}}, true, std::vector<std::int64_t>{0, 1, 2},
                 {{{F, I, F}, {T(F, F), T(I, I), T(F, F)}, b32, none, nullptr, f}}});
    // | scatter_add | (T,T,T) F,I,F; positions (0,1,2) | b32, SEQUENTIAL_BINARY32, out F |
    t.push_back({{"scatter_add"}, {{kTTT, dom({{f}, {i}, {f}})}}, true, std::vector<std::int64_t>{0, 1, 2},
                 {{{F, I, F}, {T(F, F), T(I, I), T(F, F)}, b32, Accumulation::SEQUENTIAL_BINARY32, nullptr, f}}});
    // | select | (T,T,T) B,F,F | B->B, F, F, b32, out F |
    t.push_back({{"select"}, {{kTTT, dom({{b}, {f}, {f}})}}, true, none,
                 {{{B, F, F}, {T(B, B), T(F, F), T(F, F)}, b32, none, nullptr, f}}});
    // | clamp | (T,T,T), (T,T,S), (T,S,T), (T,S,S); value and tensor bounds F, weak bounds any
    //   real (no range check) | all ->F, b32, out F |
    t.push_back({{"clamp"},
                 {{kTTT, dom({{f}, {f}, {f}})}, {kTTS, dom({{f}, {f}})}, {kTST, dom({{f}, {f}})}, {kTSS, dom({{f}})}},
                 true,
                 none,
                 {
                     {{F, F, F}, {T(F, F), T(F, F), T(F, F)}, b32, none, nullptr, f},
                     {{F, F, 3}, {T(F, F), T(F, F), S(F)}, b32, none, nullptr, f},
                     {{F, F, 0.5}, {T(F, F), T(F, F), S(F)}, b32, none, nullptr, f},
                     {{F, F, huge}, {T(F, F), T(F, F), S(F)}, b32, none, nullptr, f},
                     {{F, -1, F}, {T(F, F), S(F), T(F, F)}, b32, none, nullptr, f},
                     {{F, neg_huge, F}, {T(F, F), S(F), T(F, F)}, b32, none, nullptr, f},
                     {{F, neg_huge, huge}, {T(F, F), S(F), S(F)}, b32, none, nullptr, f},
                     {{F, two31, 1e300}, {T(F, F), S(F), S(F)}, b32, none, nullptr, f},
                     {{F, 0.5, true}, {T(F, F), S(F), S(F)}, b32, none, nullptr, f},
                     {{F, 3, -1}, {T(F, F), S(F), S(F)}, b32, none, nullptr, f},
                 }});
    // | _sort_values, _topk_values | (T) F; public=False; positions (0,) | b32, out F |
    t.push_back({{"_sort_values", "_topk_values"}, {{kT, dom({{f}})}}, false, std::vector<std::int64_t>{0},
                 {{{F}, {T(F, F)}, b32, none, nullptr, f}}});
    // | _sort_indices, _topk_indices | (T) F; public=False; positions (0,) | b32, out I |
    t.push_back({{"_sort_indices", "_topk_indices"}, {{kT, dom({{f}})}}, false, std::vector<std::int64_t>{0},
                 {{{F}, {T(F, F)}, b32, none, nullptr, i}}});
    return t;
  }();
  return rows;
}

sw::OperationPlan expected_plan(const std::string& name, const Case& c) {
  return make_plan(name, c.operands, c.compute, c.accumulation, c.accumulator, *c.output);
}

std::string describe(const std::string& name, const std::vector<PlanOperand>& inputs) {
  std::string s = name + "(";
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (k) s += ", ";
    s += inputs[k].role() == OperandRole::TENSOR ? inputs[k].dtype()->name() : inputs[k].scalar().to_string();
  }
  return s + ")";
}

sw::OperationPlan resolve(const std::string& name, const std::vector<PlanOperand>& inputs) {
  return sw::resolve_operation_plan(name, std::span<const PlanOperand>(inputs));
}

bool is_default_input(const PlanOperand& o) {
  if (o.role() == OperandRole::TENSOR) return o.dtype() == &F32() || o.dtype() == &I32();
  for (const WeakScalar& p : sw::WEAK_SCALAR_PROBES())
    if (p == o.scalar()) return true;
  return false;
}

// A valid operand for `slot` of `overload` (first dtype of its domain, or
// Float32 for a domain-less slot; 3 for a weak slot).
std::vector<PlanOperand> valid_inputs(const sw::OperationOverload& overload) {
  std::vector<PlanOperand> out;
  std::size_t tensor_slot = 0;
  for (OperandRole r : overload.roles()) {
    if (r == OperandRole::WEAK_SCALAR) {
      out.emplace_back(3);
    } else {
      const auto& d = overload.tensor_domains();
      out.emplace_back(d ? static_cast<const sw::DType&>(*(*d)[tensor_slot].front())
                         : static_cast<const sw::DType&>(F32()));
      ++tensor_slot;
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- the complete table

TEST(OperationDtypePolicy_Table, RowsCoverExactly56RegisteredNamesEachOnce) {
  std::multiset<std::string> table_names;
  for (const Row& row : table())
    for (const std::string& n : row.names) table_names.insert(n);
  EXPECT_EQ(table_names.size(), 56u);
  std::set<std::string> registered;
  for (const sw::OperationSpec& s : sw::registered_operations()) registered.insert(s.name());
  EXPECT_EQ(std::set<std::string>(table_names.begin(), table_names.end()), registered);
  for (const std::string& n : registered) EXPECT_EQ(table_names.count(n), 1u) << n;
}

TEST(OperationDtypePolicy_Table, EveryRowDeclaresItsOverloadsDomainsPublicFlagAndPositions) {
  for (const Row& row : table()) {
    for (const std::string& name : row.names) {
      SCOPED_TRACE(name);
      const sw::OperationSpec* spec = sw::find_operation(name);
      ASSERT_NE(spec, nullptr);
      EXPECT_EQ(spec->name(), name);
      EXPECT_EQ(spec->is_public(), row.is_public);
      EXPECT_EQ(spec->dtype_operand_positions(), row.positions);
      ASSERT_EQ(spec->overloads().size(), row.overloads.size());
      for (std::size_t k = 0; k < row.overloads.size(); ++k) {
        const sw::OperationOverload& o = spec->overloads()[k];
        EXPECT_TRUE(std::ranges::equal(o.roles(), row.overloads[k].roles)) << "overload " << k;
        EXPECT_EQ(o.tensor_domains(), row.overloads[k].domains) << "overload " << k;
      }
    }
  }
}

TEST(OperationDtypePolicy_Table, EveryRowResolvesToItsExactPlansAndAccumulatorVariants) {
  std::size_t checked = 0;
  for (const Row& row : table()) {
    for (const std::string& name : row.names) {
      for (const Case& c : row.cases) {
        SCOPED_TRACE(describe(name, c.inputs));
        const sw::OperationPlan expected = expected_plan(name, c);
        const sw::OperationPlan actual = resolve(name, c.inputs);
        expect_plan(actual, expected);
        // Accumulator variants: (plan,), or (plan, Float64 copy) for "variant F64".
        const std::vector<sw::OperationPlan> variants = sw::plan_accumulator_variants(actual);
        if (c.f64_variant) {
          ASSERT_EQ(variants.size(), 2u);
          expect_plan(variants[0], expected);
          expect_plan(variants[1], expected.with_accumulator(&F64()));
        } else {
          ASSERT_EQ(variants.size(), 1u);
          expect_plan(variants[0], expected);
        }
        // R1.5: differentiable iff output is exactly Float32.
        EXPECT_EQ(actual.output_differentiable(), c.output == &F32());
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 100u);
}

TEST(OperationDtypePolicy_Table, DefaultResolvablePlansAreExactlyTheTablesDefaultPlans) {
  // The table's plans for default inputs (Float32/Int32 tensors, probes 3, -1,
  // 0.5), with their Float64 variants, are exactly resolvable_plans().
  std::unordered_set<sw::OperationPlan> expected;
  for (const Row& row : table())
    for (const std::string& name : row.names)
      for (const Case& c : row.cases) {
        if (!std::all_of(c.inputs.begin(), c.inputs.end(), is_default_input)) continue;
        const sw::OperationPlan p = expected_plan(name, c);
        expected.insert(p);
        if (c.f64_variant) expected.insert(p.with_accumulator(&F64()));
      }
  const std::vector<sw::OperationPlan> plans = sw::resolvable_plans();
  const std::unordered_set<sw::OperationPlan> actual(plans.begin(), plans.end());
  EXPECT_EQ(expected.size(), 101u);
  EXPECT_EQ(actual.size(), plans.size());
  for (const sw::OperationPlan& p : plans) EXPECT_TRUE(expected.count(p)) << "unexpected plan " << p.to_string();
  for (const sw::OperationPlan& p : expected) EXPECT_TRUE(actual.count(p)) << "missing plan " << p.to_string();
}

// ---------------------------------------------------------------- R8

TEST(OperationDtypePolicy_R8, CorePromotionFamiliesResolveConsistently) {
  // R8.1: tensor/tensor add/sub/mul/elementwise_mul: Int32+Int32 stays Int32
  // (checked); any Float32 operand makes both Float32; div always Float32.
  for (const char* op : {"add", "sub", "mul", "elementwise_mul"}) {
    SCOPED_TRACE(op);
    const auto ii = sw::resolve_operation_plan(op, {I32(), I32()});
    EXPECT_EQ(ii.compute(), Arithmetic::INT32_EXACT_CHECKED);
    EXPECT_EQ(&ii.output(), &I32());
    for (auto pair : {std::pair{&F32(), &I32()}, std::pair{&I32(), &F32()}, std::pair{&F32(), &F32()}}) {
      const auto p = sw::resolve_operation_plan(op, {*pair.first, *pair.second});
      EXPECT_EQ(&p.operands()[0].convert_to(), &F32());
      EXPECT_EQ(&p.operands()[1].convert_to(), &F32());
      EXPECT_EQ(p.compute(), Arithmetic::BINARY32);
      EXPECT_EQ(&p.output(), &F32());
    }
  }
  // R8.2: mul Int32 by INTEGER weak stays Int32; float/bool scalar -> Float32.
  EXPECT_EQ(&sw::resolve_operation_plan("mul", {I32(), 7}).output(), &I32());
  EXPECT_EQ(&sw::resolve_operation_plan("mul", {I32(), 7.0}).output(), &F32());
  EXPECT_EQ(&sw::resolve_operation_plan("mul", {I32(), false}).output(), &F32());
  // pow tensor/tensor and weak/tensor always Float32.
  EXPECT_EQ(&sw::resolve_operation_plan("pow", {I32(), I32()}).output(), &F32());
  EXPECT_EQ(&sw::resolve_operation_plan("pow", {2, I32()}).output(), &F32());
  // R8.3: relu keeps its dtype; other floating activations turn Int32 into
  // Float32; comparisons and logical_not output Bool.
  EXPECT_EQ(&sw::resolve_operation_plan("relu", {I32()}).output(), &I32());
  EXPECT_EQ(&sw::resolve_operation_plan("sigmoid", {I32()}).output(), &F32());
  EXPECT_EQ(&sw::resolve_operation_plan("lt", {F32(), F32()}).output(), &BOOL());
  EXPECT_EQ(&sw::resolve_operation_plan("logical_not", {F32()}).output(), &BOOL());
}

TEST(OperationDtypePolicy_R8, Int32PowWeakInteger2To31Minus1IsExactIntegerPlanWithoutFloatExponent) {
  const auto p = sw::resolve_operation_plan("pow", {I32(), WeakScalar(std::int64_t{2147483647})});
  expect_plan(p, make_plan("pow", {T(I32(), I32()), S(I32())}, Arithmetic::INT32_EXACT_CHECKED, std::nullopt,
                           nullptr, I32()));
  EXPECT_EQ(p.operands()[1].dtype(), nullptr);
  EXPECT_EQ(&p.operands()[1].convert_to(), &I32());
  EXPECT_EQ(sw::POW_INTEGER_EXPONENT_MAX, 2147483647);
}

TEST(OperationDtypePolicy_R8, Int32PowOutOfRangeNegativeFloatOrBoolExponentIsFloat32) {
  const auto fplan =
      make_plan("pow", {T(I32(), F32()), S(F32())}, Arithmetic::BINARY32, std::nullopt, nullptr, F32());
  expect_plan(sw::resolve_operation_plan("pow", {I32(), WeakScalar(kTwo31)}), fplan);
  expect_plan(sw::resolve_operation_plan("pow", {I32(), -1}), fplan);
  expect_plan(sw::resolve_operation_plan("pow", {I32(), 0.5}), fplan);
  expect_plan(sw::resolve_operation_plan("pow", {I32(), true}), fplan);
  // No OverflowError: the out-of-range exponent selects the floating plan.
  EXPECT_NO_THROW(sw::resolve_operation_plan("pow", {I32(), WeakScalar::integer(sw::int128{1} << 90)}));
}

TEST(OperationDtypePolicy_R8, DivInt32Int32IsFloat32) {
  expect_plan(sw::resolve_operation_plan("div", {I32(), I32()}),
              make_plan("div", {T(I32(), F32()), T(I32(), F32())}, Arithmetic::BINARY32, std::nullopt, nullptr,
                        F32()));
}

TEST(OperationDtypePolicy_R8, BoolNeverJoinsNumericPromotion) {
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {BOOL(), F32()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("add", {BOOL(), BOOL()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("mul", {BOOL(), 3}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("reduce_sum", {BOOL()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("logical_not", {BOOL()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("eq", {BOOL(), BOOL()}), sw::NotImplementedError);
}

// ---------------------------------------------------------------- R9

TEST(OperationDtypePolicy_R9, SelectBoolFloat32Float32IsFloat32Binary32NoAccumulation) {
  const auto p = sw::resolve_operation_plan("select", {BOOL(), F32(), F32()});
  expect_plan(p, make_plan("select", {T(BOOL(), BOOL()), T(F32(), F32()), T(F32(), F32())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, F32()));
  EXPECT_FALSE(p.accumulation().has_value());
  EXPECT_EQ(p.accumulator_dtype(), nullptr);
}

TEST(OperationDtypePolicy_R9, RestrictedOpOutsideDomainFailsNeverPromotes) {
  // For every explicit domain slot: an implemented dtype outside it is a
  // TypeError, Bool outside a Bool slot a NotImplementedError. Every other
  // operand is valid, so the failure is that slot's.
  std::size_t checked = 0;
  for (const sw::OperationSpec& spec : sw::registered_operations()) {
    for (const sw::OperationOverload& overload : spec.overloads()) {
      if (!overload.tensor_domains()) continue;
      const std::vector<PlanOperand> valid = valid_inputs(overload);
      EXPECT_NO_THROW(sw::resolve_operation_plan(spec.name(), std::span<const PlanOperand>(valid)))
          << describe(spec.name(), valid);
      std::size_t tensor_slot = 0;
      for (std::size_t k = 0; k < valid.size(); ++k) {
        if (overload.roles()[k] != OperandRole::TENSOR) continue;
        const sw::DTypeDomain& domain = (*overload.tensor_domains())[tensor_slot++];
        for (const sw::SimpleDType* d : {&F32(), &I32(), &BOOL()}) {
          if (std::find(domain.begin(), domain.end(), d) != domain.end()) continue;
          std::vector<PlanOperand> in = valid;
          in[k] = PlanOperand(static_cast<const sw::DType&>(*d));
          SCOPED_TRACE(describe(spec.name(), in));
          if (d == &BOOL())
            EXPECT_THROW_EXACTLY(resolve(spec.name(), in), sw::NotImplementedError);
          else
            EXPECT_THROW_EXACTLY(resolve(spec.name(), in), sw::TypeError);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 80u);
  // Named examples of R6.5 / R9.
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("neg", {I32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("maximum", {I32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("gather", {F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {F32(), F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {I32(), F32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {BOOL(), I32(), F32()}), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("select", {BOOL(), BOOL(), F32()}), sw::NotImplementedError);
  EXPECT_THROW_EXACTLY(sw::resolve_operation_plan("clamp", {I32(), 0, 1}), sw::TypeError);
}

TEST(OperationDtypePolicy_R9, DomainLessSlotsRejectBoolAsUnimplemented) {
  for (const sw::OperationSpec& spec : sw::registered_operations()) {
    for (const sw::OperationOverload& overload : spec.overloads()) {
      if (overload.tensor_domains()) continue;
      const std::vector<PlanOperand> valid = valid_inputs(overload);
      for (std::size_t k = 0; k < valid.size(); ++k) {
        if (overload.roles()[k] != OperandRole::TENSOR) continue;
        std::vector<PlanOperand> in = valid;
        in[k] = PlanOperand(static_cast<const sw::DType&>(BOOL()));
        SCOPED_TRACE(describe(spec.name(), in));
        EXPECT_THROW_EXACTLY(resolve(spec.name(), in), sw::NotImplementedError);
      }
    }
  }
}

TEST(OperationDtypePolicy_R9, StructuredFamiliesKeepTheirShapes) {
  // Indices stay Int32 (never converted to Float32) in gather/scatter(_add).
  for (const char* op : {"scatter", "scatter_add"}) {
    const auto p = sw::resolve_operation_plan(op, {F32(), I32(), F32()});
    EXPECT_EQ(&p.operands()[1].convert_to(), &I32()) << op;
    EXPECT_EQ(&p.output(), &F32()) << op;
  }
  EXPECT_EQ(&sw::resolve_operation_plan("gather", {F32(), I32()}).operands()[1].convert_to(), &I32());
  // Internal index plans output Int32, value plans Float32.
  EXPECT_EQ(&sw::resolve_operation_plan("_topk_indices", {F32()}).output(), &I32());
  EXPECT_EQ(&sw::resolve_operation_plan("_sort_values", {F32()}).output(), &F32());
  // Int32 matmul is exact without a check on each step; Int32 reduce_sum checked.
  EXPECT_EQ(sw::resolve_operation_plan("matmul", {I32(), I32()}).compute(), Arithmetic::INT32_EXACT);
  EXPECT_EQ(sw::resolve_operation_plan("reduce_sum", {I32()}).compute(), Arithmetic::INT32_EXACT_CHECKED);
}
