// The cases of the finite-difference gradient check, one builder per
// differentiable operation. Inputs keep a distance of at least 0.1 (ten
// times the difference step) from every kink of their operation: from 0 for
// relu/abs/sign, from integers and half-integers for floor/ceil/round, from
// each other for maximum/minimum/clamp and the extrema and sorts, from
// integer quotients for rem, from the softplus threshold. Broadcasting,
// batch broadcasting, mixed Int32/Float32 plans, strides, dilation,
// asymmetric padding, groups and duplicate indices are all exercised.
#include <algorithm>
#include <numeric>

#include <strideweave/errors.h>

#include "autograd/gradcheck_cases.h"

namespace strideweave::autograd::gradcheck {
namespace {

using Extents = std::vector<std::int64_t>;

std::int64_t size_of(const Extents& e) {
  return std::accumulate(e.begin(), e.end(), std::int64_t{1}, std::multiplies<>());
}
double f32(double v) { return static_cast<double>(static_cast<float>(v)); }
int uniform(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

enum class Domain {
  Smooth,    // +-{0.25, 0.75, 1.25, 1.75}: away from 0, integers and half-integers
  Positive,  // 0.6 .. 1.85 in steps of 0.25
  Distinct,  // a shuffled progression with step 0.3 (no ties)
};

// Operand i of `plan` as a tensor of `extents`: Float32 from `domain`,
// Int32 small positive integers, Bool random.
HostTensor tensor(const OperationPlan& plan, std::size_t i, Extents extents, Domain domain, std::mt19937& rng) {
  const SimpleDType* dtype = plan.operands()[i].dtype();
  HostTensor t{extents, dtype, {}};
  const std::int64_t n = size_of(extents);
  if (dtype == &DType::Int32()) {
    for (std::int64_t k = 0; k < n; ++k) t.values.push_back(uniform(rng, 1, 3));
  } else if (dtype == &DType::Bool()) {
    for (std::int64_t k = 0; k < n; ++k) t.values.push_back(uniform(rng, 0, 1));
  } else if (domain == Domain::Distinct) {
    for (std::int64_t k = 0; k < n; ++k) t.values.push_back(f32(-1.6 + 0.3 * static_cast<double>(k)));
    std::shuffle(t.values.begin(), t.values.end(), rng);
  } else {
    for (std::int64_t k = 0; k < n; ++k)
      t.values.push_back(f32(domain == Domain::Smooth ? 0.5 * uniform(rng, -4, 3) + 0.25 : 0.6 + 0.25 * uniform(rng, 0, 5)));
  }
  return t;
}

// Float32 values 0.5 k + offset (k in [lo, hi]): operands drawn with
// different offsets never come closer than their offsets' distance.
HostTensor grid(Extents extents, double offset, int lo, int hi, std::mt19937& rng) {
  HostTensor t{extents, &DType::Float32(), {}};
  for (std::int64_t k = 0; k < size_of(extents); ++k) t.values.push_back(f32(0.5 * uniform(rng, lo, hi) + offset));
  return t;
}

HostTensor explicit_tensor(Extents extents, const SimpleDType& dtype, std::vector<double> values) {
  return HostTensor{std::move(extents), &dtype, std::move(values)};
}

// The first candidate that, at operand i, resolves exactly `plan`.
WeakScalar scalar_for(const OperationPlan& plan, std::size_t i, std::initializer_list<WeakScalar> candidates) {
  for (const WeakScalar& s : candidates) {
    std::vector<PlanOperand> ops;
    for (std::size_t k = 0; k < plan.operands().size(); ++k) {
      if (k == i) ops.emplace_back(s);
      else if (plan.operands()[k].role() == OperandRole::TENSOR) ops.emplace_back(*plan.operands()[k].dtype());
      else ops.emplace_back(WeakScalar(0.5));
    }
    try {
      if (resolve_operation_plan(plan.operation(), ops) == plan) return s;
    } catch (const Error&) {
    }
  }
  return *candidates.begin();
}

bool scalar_at(const OperationPlan& plan, std::size_t i) { return plan.operands()[i].role() == OperandRole::WEAK_SCALAR; }

// ---- builders

// Binary elementwise with broadcasting: a (2, 3), b (3); `b_domain` for a
// divisor or an exponent.
CaseBuilder binary(Domain a_domain, Domain b_domain) {
  return [=](const OperationPlan& plan, std::mt19937& rng) {
    Case c{"a(2,3) b(3) broadcast", {}, {}};
    c.operands.push_back(tensor(plan, 0, {2, 3}, a_domain, rng));
    if (scalar_at(plan, 1)) {
      c.label = "a(2,3) scalar";
      c.operands.push_back(scalar_for(plan, 1, {0.75, 2.5, 3, -1, 0.5}));
    } else {
      c.operands.push_back(tensor(plan, 1, {3}, b_domain, rng));
    }
    return std::vector<Case>{c};
  };
}

std::vector<Case> pow_cases(const OperationPlan& plan, std::mt19937& rng) {
  Case c{"", {}, {}};
  if (scalar_at(plan, 0)) {
    c.label = "scalar base, exponent(2,3)";
    c.operands = {scalar_for(plan, 0, {1.7, 0.5}), tensor(plan, 1, {2, 3}, Domain::Smooth, rng)};
  } else if (scalar_at(plan, 1)) {
    c.label = "base(2,3), scalar exponent";
    c.operands = {tensor(plan, 0, {2, 3}, Domain::Positive, rng), scalar_for(plan, 1, {2.5, -1.5, 0.5, 3})};
  } else {
    c.label = "base(2,3) exponent(3) broadcast";
    c.operands = {tensor(plan, 0, {2, 3}, Domain::Positive, rng), tensor(plan, 1, {3}, Domain::Smooth, rng)};
  }
  return {c};
}

// rem: quotients a / b stay at least 0.3 from an integer.
std::vector<Case> rem_cases(const OperationPlan&, std::mt19937& rng) {
  const double divisors[] = {0.6, 0.9, 1.3};
  HostTensor b = explicit_tensor({3}, DType::Float32(), {});
  for (double d : divisors) b.values.push_back(f32(uniform(rng, 0, 1) ? d : -d));
  HostTensor a = explicit_tensor({2, 3}, DType::Float32(), {});
  for (std::int64_t k = 0; k < 6; ++k) {
    const double q = uniform(rng, -2, 2) + (uniform(rng, 0, 1) ? 0.35 : 0.65);
    a.values.push_back(f32(q * b.values[static_cast<std::size_t>(k / 2)]));  // element (i, j) = k = i + 2 j
  }
  return {Case{"a(2,3) b(3) broadcast", {a, b}, {}}};
}

// maximum / minimum: a = 0.5 k + 0.1 against b = 0.5 k + 0.35.
std::vector<Case> extremum_cases(const OperationPlan&, std::mt19937& rng) {
  return {Case{"a(2,3) b(3) broadcast", {grid({2, 3}, 0.1, -3, 3, rng), grid({3}, 0.35, -3, 3, rng)}, {}}};
}

// clamp: x = 0.5 k + 0.1, lo = 0.5 k + 0.25, hi = 0.5 k + 0.4 (so every
// branch, including lo > hi, occurs with margins >= 0.15).
std::vector<Case> clamp_cases(const OperationPlan& plan, std::mt19937& rng) {
  Case c{"x(2,3) lo(3) hi(2,1)", {grid({2, 3}, 0.1, -3, 3, rng)}, {}};
  c.operands.push_back(scalar_at(plan, 1) ? HostOperand(WeakScalar(-0.25)) : HostOperand(grid({3}, 0.25, -3, 1, rng)));
  c.operands.push_back(scalar_at(plan, 2) ? HostOperand(WeakScalar(0.9)) : HostOperand(grid({2, 1}, 0.4, -1, 3, rng)));
  return {c};
}

std::vector<Case> select_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"cond(2,3) a(2,3) b(3)",
               {tensor(plan, 0, {2, 3}, Domain::Smooth, rng), tensor(plan, 1, {2, 3}, Domain::Smooth, rng),
                tensor(plan, 2, {3}, Domain::Smooth, rng)},
               {}}};
}

CaseBuilder unary(Domain domain, std::vector<CallOptions> options = {CallOptions{}}) {
  return [=](const OperationPlan& plan, std::mt19937& rng) {
    std::vector<Case> out;
    for (const CallOptions& o : options) out.push_back(Case{"x(2,3)", {tensor(plan, 0, {2, 3}, domain, rng)}, o});
    return out;
  };
}

CaseBuilder reduction(Domain domain) {
  return [=](const OperationPlan& plan, std::mt19937& rng) {
    return std::vector<Case>{
        Case{"x(2,3,2) axes [0, 2]", {tensor(plan, 0, {2, 3, 2}, domain, rng)},
             {{"axes", std::vector<std::int64_t>{0, 2}}, {"keepdims", false}}},
        Case{"x(3,4) all axes keepdims", {tensor(plan, 0, {3, 4}, domain, rng)}, {{"keepdims", true}}},
        Case{"x(3,4) axes [-1]", {tensor(plan, 0, {3, 4}, domain, rng)}, {{"axes", std::vector<std::int64_t>{-1}}}}};
  };
}

std::vector<Case> prod_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<Case> out = reduction(Domain::Smooth)(plan, rng);
  // Rows of (2, 3) reduced over axis 1: row 0 holds one zero, row 1 two.
  out.push_back(Case{"x(2,3) with zeros, axes [1]",
                     {explicit_tensor({2, 3}, DType::Float32(), {0.0, 0.0, 1.25, 0.0, -0.75, 1.75})},
                     {{"axes", std::vector<std::int64_t>{1}}}});
  return out;
}

std::vector<Case> cumsum_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"x(3,4) axis 1", {tensor(plan, 0, {3, 4}, Domain::Smooth, rng)}, {{"axis", std::int64_t{1}}}},
          Case{"x(3,4) axis 0", {tensor(plan, 0, {3, 4}, Domain::Smooth, rng)}, {{"axis", std::int64_t{0}}}}};
}

std::vector<Case> matmul_cases(const OperationPlan& plan, std::mt19937& rng) {
  auto two = [&](const char* label, Extents a, Extents b) {
    return Case{label, {tensor(plan, 0, a, Domain::Smooth, rng), tensor(plan, 1, b, Domain::Smooth, rng)}, {}};
  };
  return {two("a(2,2,3) b(3,4) batch broadcast", {2, 2, 3}, {3, 4}), two("a(3) b(3,2) vector", {3}, {3, 2}),
          two("a(2,3) b(3) vector", {2, 3}, {3})};
}

std::vector<Case> conv_cases(const OperationPlan& plan, std::mt19937& rng) {
  auto conv = [&](const char* label, Extents input, Extents weight, CallOptions options) {
    return Case{label,
                {tensor(plan, 0, input, Domain::Smooth, rng), tensor(plan, 1, weight, Domain::Smooth, rng)},
                std::move(options)};
  };
  using L = std::vector<std::int64_t>;
  return {conv("1-d plain", {1, 3, 4}, {2, 3, 2}, {}),
          conv("1-d groups 2, stride 2, padding (1, 0)", {2, 4, 5}, {6, 2, 3},
               {{"groups", std::int64_t{2}}, {"stride", L{2}}, {"padding", L{1, 0}}}),
          conv("2-d groups 2, stride (1, 2), dilation (2, 1), padding (1, 1, 0, 2)", {1, 2, 5, 4}, {2, 1, 2, 2},
               {{"groups", std::int64_t{2}}, {"stride", L{1, 2}}, {"dilation", L{2, 1}}, {"padding", L{1, 1, 0, 2}}})};
}

// gather: duplicates in the indices (their gradients add up).
std::vector<Case> gather_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"data(3,4) indices(2,3) axis 1",
               {tensor(plan, 0, {3, 4}, Domain::Smooth, rng),
                explicit_tensor({2, 3}, DType::Int32(), {1, 3, 1, 1, 0, 2})},
               {{"axis", std::int64_t{1}}}},
          Case{"data(3,4) indices(2,4) axis 0",
               {tensor(plan, 0, {3, 4}, Domain::Smooth, rng),
                explicit_tensor({2, 4}, DType::Int32(), {2, 0, 1, 1, 0, 0, 2, 2})},
               {{"axis", std::int64_t{0}}}}};
}

// scatter / scatter_add: row 0 writes position 1 twice (the last write
// wins for scatter); src is larger than the indices.
std::vector<Case> scatter_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"data(3,4) indices(2,3) src(2,4) axis 1",
               {tensor(plan, 0, {3, 4}, Domain::Smooth, rng),
                explicit_tensor({2, 3}, DType::Int32(), {1, 0, 1, 2, 3, 0}),
                tensor(plan, 2, {2, 4}, Domain::Smooth, rng)},
               {{"axis", std::int64_t{1}}}},
          Case{"data(3,2) indices(2,2) src(2,2) axis 0",
               {tensor(plan, 0, {3, 2}, Domain::Smooth, rng),
                explicit_tensor({2, 2}, DType::Int32(), {2, 2, 0, 1}),
                tensor(plan, 2, {2, 2}, Domain::Smooth, rng)},
               {{"axis", std::int64_t{0}}}}};
}

std::vector<Case> sort_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"x(3,4) axis 1", {tensor(plan, 0, {3, 4}, Domain::Distinct, rng)}, {{"axis", std::int64_t{1}}}},
          Case{"x(3,4) axis 0 descending", {tensor(plan, 0, {3, 4}, Domain::Distinct, rng)},
               {{"axis", std::int64_t{0}}, {"descending", true}}}};
}

std::vector<Case> topk_cases(const OperationPlan& plan, std::mt19937& rng) {
  return {Case{"x(3,4) k 2 axis 1", {tensor(plan, 0, {3, 4}, Domain::Distinct, rng)},
               {{"k", std::int64_t{2}}, {"axis", std::int64_t{1}}}},
          Case{"x(3,4) k 2 axis 0 smallest", {tensor(plan, 0, {3, 4}, Domain::Distinct, rng)},
               {{"k", std::int64_t{2}}, {"axis", std::int64_t{0}}, {"largest", false}}}};
}

// ---- the builders operations.def's gradcheck column names

const CaseBuilder smooth_binary = binary(Domain::Smooth, Domain::Smooth);
const CaseBuilder div_cases = binary(Domain::Smooth, Domain::Positive);
const CaseBuilder smooth_unary = unary(Domain::Smooth);
const CaseBuilder positive_unary = unary(Domain::Positive);
const CaseBuilder elu_cases = unary(Domain::Smooth, {{{"alpha", 0.7}}});
const CaseBuilder leaky_relu_cases = unary(Domain::Smooth, {{{"negative_slope", 0.2}}});
const CaseBuilder gelu_cases = unary(Domain::Smooth, {{{"approximate", false}}, {{"approximate", true}}});
// beta x for x in +-{0.25, 0.75, 1.25, 1.75} stays >= 0.125 from the threshold.
const CaseBuilder softplus_cases = unary(Domain::Smooth, {{{"beta", 1.5}, {"threshold", 1.0}}});
const CaseBuilder smooth_reduction = reduction(Domain::Smooth);
const CaseBuilder distinct_reduction = reduction(Domain::Distinct);

const CaseBuilder none;  // an operation with no differentiable plan has no cases

std::map<std::string, CaseBuilder, std::less<>> build() {
  std::map<std::string, CaseBuilder, std::less<>> b;
  const auto add = [&](const char* name, const CaseBuilder& builder) {
    if (builder) b[name] = builder;
  };
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) add(#id, gradcheck);
#include <strideweave/operations.def>
  return b;
}

}  // namespace

const std::map<std::string, CaseBuilder, std::less<>>& case_builders() {
  static const std::map<std::string, CaseBuilder, std::less<>> builders = build();
  return builders;
}

}  // namespace strideweave::autograd::gradcheck
