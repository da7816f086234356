// The conformance harness driver. See harness.h.
#include "conformance/harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace sw_test {

std::map<std::string, CaseGenerator>& case_generators() {
  static std::map<std::string, CaseGenerator> g;
  return g;
}

// Transcendental and analytic functions: results within a few binary32 ulps
// (docs/numerics.md lists each).
const std::map<std::string, int>& ulp_tolerances() {
  // Unary family (docs/operations/unary.md, "Agreement between carriers"):
  // one C-library call, or a short well-conditioned chain of binary32 steps
  // around one, may be replaced by a vectorised (SIMD library) version whose
  // results differ by a few ulps. neg, abs, sign, recip, sqrt, rsqrt, floor,
  // ceil, round, relu and leaky_relu are IEEE-exact steps: not listed, so
  // compared bit for bit.
  static const std::map<std::string, int> t = {
      {"cos", 4},  {"elu", 4},  {"erf", 4},      {"exp", 4},  {"exp2", 4}, {"gelu", 4}, {"log", 4},
      {"log2", 4}, {"sigmoid", 4}, {"silu", 4}, {"sin", 4}, {"softplus", 4}, {"tanh", 4},
  };
  return t;
}

AgreementRule agreement_rule(const OperationPlan& plan) {
  if (plan.accumulation() == Accumulation::FLOATING) return {AgreementRule::Floating, 0};
  auto it = ulp_tolerances().find(plan.operation());
  if (it != ulp_tolerances().end()) return {AgreementRule::Ulps, it->second};
  return {AgreementRule::Exact, 0};
}

const std::vector<LayoutCase>& all_layout_cases() {
  static const std::vector<LayoutCase> c = {LayoutCase::Compact, LayoutCase::Strided, LayoutCase::Permuted,
                                            LayoutCase::Broadcast, LayoutCase::Hierarchical};
  return c;
}

std::vector<WeakScalar> scalars_selecting(const OperationPlan& plan, std::size_t i) {
  std::vector<WeakScalar> out;
  for (const WeakScalar& w : {WeakScalar(3), WeakScalar(-1), WeakScalar(0.5), WeakScalar(true), WeakScalar(0),
                              WeakScalar(-2147483648LL), WeakScalar(2147483647LL), WeakScalar(1e30), WeakScalar(-0.0)}) {
    std::vector<PlanOperand> ops;
    for (std::size_t k = 0; k < plan.operands().size(); ++k) {
      if (k == i) ops.emplace_back(w);
      else if (plan.operands()[k].role() == OperandRole::TENSOR) ops.emplace_back(*plan.operands()[k].dtype());
      else ops.emplace_back(WeakScalar(0.5));
    }
    try {
      if (resolve_operation_plan(plan.operation(), ops, plan.accumulator_dtype() &&
                                                            plan.accumulation() == Accumulation::FLOATING
                                                        ? plan.accumulator_dtype()
                                                        : nullptr) == plan)
        out.push_back(w);
    } catch (const Error&) {
    }
  }
  return out;
}

Tensor abs_twin(const Tensor& generic) {
  const auto& g = static_cast<const Generic&>(*generic.carrier());
  std::vector<Value> values;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Value v = g.get_value(i);
    values.push_back(Value::from_float32(std::fabs(v.kind == ElementKind::Int32 ? static_cast<float>(v.i) : v.f)));
  }
  return Tensor(Generic::create(values, DType::Float32()), generic.offset(), generic.layout());
}

namespace {

struct Outcome {
  std::optional<CallResult> result;
  std::string error;
};

Outcome run(const OperationPlan& plan, const std::vector<CallOperand>& operands, const CallOptions& options) {
  try {
    const DType* acc = plan.accumulation() == Accumulation::FLOATING ? plan.accumulator_dtype() : nullptr;
    return Outcome{call_operation(plan.operation(), operands, options, acc), ""};
  } catch (const Error& e) {
    return Outcome{std::nullopt, e.type_name()};
  }
}

bool within_ulps(float a, float b, int ulps) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  if (a == b) return true;
  // Distance in representable binary32 values.
  auto key = [](float f) {
    std::int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? static_cast<std::int64_t>(INT32_MIN) - i : static_cast<std::int64_t>(i);
  };
  return std::llabs(key(a) - key(b)) <= ulps;
}

}  // namespace

// Compares one case; returns false (with gtest failures) on disagreement.
void compare_case(const OperationPlan& plan, const TwinCase& c, CarrierClass other_class) {
  SCOPED_TRACE(plan.to_string() + " :: " + c.label);
  const Outcome g = run(plan, c.generic, c.options);
  const Outcome o = run(plan, c.other, c.options);
  ASSERT_EQ(g.error, o.error) << "the carriers disagree on raising";
  if (!g.result) return;
  ASSERT_EQ(g.result->plans.size(), o.result->plans.size());
  EXPECT_EQ(g.result->plans.front(), plan) << "the case resolved another plan: " << g.result->plans.front().to_string();
  ASSERT_EQ(g.result->results.size(), o.result->results.size());
  const AgreementRule rule = agreement_rule(plan);
  const double eps = plan.accumulator_dtype() == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  for (std::size_t r = 0; r < g.result->results.size(); ++r) {
    const Tensor& gt = g.result->results[r];
    const Tensor& ot = o.result->results[r];
    ASSERT_EQ(&gt.dtype(), &ot.dtype());
    ASSERT_EQ(gt.shape(), ot.shape());
    EXPECT_EQ(gt.carrier_type(), carrier_class<Generic>());
    EXPECT_EQ(ot.carrier_type(), other_class);
    const std::vector<Value> gv = gt.values(), ov = ot.values();
    for (std::size_t i = 0; i < gv.size(); ++i) {
      const bool floats = gv[i].kind == ElementKind::Float32;
      if (rule.kind == AgreementRule::Exact || !floats) {
        EXPECT_TRUE(same_value(gv[i], ov[i])) << "result " << r << " element " << i << ": generic "
                                              << gv[i].to_string() << " vs " << ov[i].to_string();
      } else if (rule.kind == AgreementRule::Ulps) {
        EXPECT_TRUE(within_ulps(gv[i].f, ov[i].f, rule.ulps))
            << "result " << r << " element " << i << ": generic " << gv[i].f << " vs " << ov[i].f;
      } else {
        const float a = gv[i].f, b = ov[i].f;
        if (!c.bound) {
          EXPECT_TRUE(same_value(gv[i], ov[i])) << "element " << i << ": generic " << a << " vs " << b;
          continue;
        }
        const auto [abs_sum, n] = c.bound(r, static_cast<std::int64_t>(i));
        if (std::isnan(abs_sum)) {  // a NaN term: NaN in every order
          EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << "element " << i << ": generic " << a << " vs " << b;
          continue;
        }
        if (!(abs_sum <= std::numeric_limits<float>::max())) continue;  // overflow depends on the order
        ASSERT_TRUE(std::isfinite(a) && std::isfinite(b)) << "element " << i << ": generic " << a << " vs " << b;
        const double m = std::max(std::fabs(a), std::fabs(b));
        const double tol = 2.0 * static_cast<double>(n) * eps * abs_sum + (std::nextafter(static_cast<float>(m), INFINITY) - m);
        EXPECT_LE(std::fabs(static_cast<double>(a) - b), tol) << "element " << i << ": generic " << a << " vs " << b;
      }
    }
  }
}

}  // namespace sw_test
