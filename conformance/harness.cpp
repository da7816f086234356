// The conformance harness driver. See harness.h.
#include "conformance/harness.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace strideweave::conformance {

const std::map<std::string, CaseGenerator>& case_generators() {
  static const std::map<std::string, CaseGenerator> g = [] {
    std::map<std::string, CaseGenerator> out;
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) out[#id] = generators::conformance;
#include <strideweave/operations.def>
    return out;
  }();
  return g;
}

// operations.def's ulps column: transcendental and analytic functions agree
// within a few binary32 ulps (docs/operations/unary.md, "Agreement between
// carriers": one C-library call, or a short well-conditioned chain of
// binary32 steps around one, may be replaced by a vectorised version whose
// results differ by a few ulps); IEEE-exact steps have 0 and are compared bit
// for bit.
int ulp_tolerance(std::string_view operation) {
  static const std::map<std::string, int, std::less<>> t = [] {
    std::map<std::string, int, std::less<>> out;
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) out[#id] = ulps;
#include <strideweave/operations.def>
    return out;
  }();
  const auto it = t.find(operation);
  return it == t.end() ? 0 : it->second;
}

AgreementRule agreement_rule(const OperationPlan& plan) {
  if (plan.accumulation() == Accumulation::FLOATING) return {AgreementRule::Floating, 0};
  if (const int ulps = ulp_tolerance(plan.operation()); ulps > 0) return {AgreementRule::Ulps, ulps};
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
      if (resolve_for_request(plan.operation(), ops, execution_request_of(plan)) == plan)
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
    return Outcome{call_operation(plan.operation(), operands, options, execution_request_of(plan)), ""};
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

std::vector<std::string> compare_case(const OperationPlan& plan, const TwinCase& c, CarrierClass other_class) {
  std::vector<std::string> failures;
  const std::string where = plan.to_string() + " :: " + c.label + ": ";
  auto fail = [&](const std::string& what) {
    if (failures.size() < 8) failures.push_back(where + what);
  };
  const Outcome g = run(plan, c.generic, c.options);
  const Outcome o = run(plan, c.other, c.options);
  if (g.error != o.error) {
    fail(fmt::format("the carriers disagree on raising (generic: '{}', other: '{}')", g.error, o.error));
    return failures;
  }
  if (!g.result) return failures;
  if (g.result->plans.size() != o.result->plans.size() || g.result->results.size() != o.result->results.size()) {
    fail("different result counts");
    return failures;
  }
  if (!(g.result->plans.front() == plan)) fail("the case resolved another plan: " + g.result->plans.front().to_string());
  const AgreementRule rule = agreement_rule(plan);
  const double eps = plan.accumulator_dtype() == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  for (std::size_t r = 0; r < g.result->results.size(); ++r) {
    const Tensor& gt = g.result->results[r];
    const Tensor& ot = o.result->results[r];
    if (&gt.dtype() != &ot.dtype() || !(gt.shape() == ot.shape())) {
      fail(fmt::format("result {}: dtype or shape differ ({} {} vs {} {})", r, gt.dtype().name(), gt.shape().to_string(),
                       ot.dtype().name(), ot.shape().to_string()));
      continue;
    }
    if (!(gt.carrier_type() == carrier_class<Generic>()) || !(ot.carrier_type() == other_class))
      fail(fmt::format("result {}: published on the wrong carrier class", r));
    const std::vector<Value> gv = gt.values(), ov = ot.values();
    for (std::size_t i = 0; i < gv.size(); ++i) {
      const std::string at = fmt::format("result {} element {}: generic {} vs {}", r, i, gv[i].to_string(), ov[i].to_string());
      const bool floats = gv[i].kind == ElementKind::Float32;
      if (rule.kind == AgreementRule::Exact || !floats) {
        if (!same_value(gv[i], ov[i])) fail(at);
      } else if (rule.kind == AgreementRule::Ulps) {
        if (!within_ulps(gv[i].f, ov[i].f, rule.ulps)) fail(at + fmt::format(" (more than {} ulps)", rule.ulps));
      } else {
        const float a = gv[i].f, b = ov[i].f;
        if (!c.bound) {
          if (!same_value(gv[i], ov[i])) fail(at);
          continue;
        }
        const auto [abs_sum, n] = c.bound(r, static_cast<std::int64_t>(i));
        if (std::isnan(abs_sum)) {  // a NaN term: NaN in every order
          if (!(std::isnan(a) && std::isnan(b))) fail(at + " (a NaN term must give NaN)");
          continue;
        }
        if (!(abs_sum <= std::numeric_limits<float>::max())) continue;  // overflow depends on the order
        if (!std::isfinite(a) || !std::isfinite(b)) {
          fail(at + " (finite terms must give a finite sum)");
          continue;
        }
        const double m = std::max(std::fabs(a), std::fabs(b));
        const double tol = 2.0 * static_cast<double>(n) * eps * abs_sum + (std::nextafter(static_cast<float>(m), INFINITY) - m);
        if (std::fabs(static_cast<double>(a) - b) > tol) fail(at + fmt::format(" (beyond the FLOATING bound {})", tol));
      }
    }
  }
  return failures;
}

std::shared_ptr<Carrier>& carrier_under_test() {
  static std::shared_ptr<Carrier> prototype = CPU::create(0);
  return prototype;
}

namespace {

// The generator of one entry's cases: `seed` mixed with the plan's text
// (FNV-1a), so that an entry's cases do not depend on which entries ran
// before it.
std::mt19937 entry_rng(std::uint32_t seed, const OperationPlan& plan) {
  std::uint32_t h = 2166136261u ^ seed;
  for (const char c : plan.to_string()) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return std::mt19937(h);
}

}  // namespace

ConformanceReport run_conformance(const std::shared_ptr<Carrier>& prototype, std::uint32_t seed,
                                  const std::vector<std::string>& operations) {
  ConformanceReport report;
  const CarrierClass cls = prototype->exact_class();
  report.name = cls.name();
  const std::set<std::string> selected(operations.begin(), operations.end());
  auto wanted = [&](const OperationPlan& plan) { return selected.empty() || selected.count(plan.operation()) != 0; };
  const std::shared_ptr<Carrier> previous = carrier_under_test();
  set_carrier_under_test(prototype);
  try {
    const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
    for (const OperationCapability& cap : caps) {
      const OperationPlan plan = cap.to_plan();
      if (!wanted(plan)) continue;
      ++report.entries;
      std::mt19937 rng = entry_rng(seed, plan);
      auto it = case_generators().find(plan.operation());
      if (it == case_generators().end()) {
        ++report.failed;
        report.failures.push_back(plan.to_string() + ": no conformance case generator");
        continue;
      }
      const std::vector<TwinCase> cases = it->second(plan, rng);
      if (cases.empty()) {
        ++report.failed;
        report.failures.push_back(plan.to_string() + ": the generator produced no case");
      }
      for (const TwinCase& c : cases) {
        ++report.cases;
        std::vector<std::string> f = compare_case(plan, c, cls);
        if (f.empty()) {
          ++report.passed;
        } else {
          ++report.failed;
          for (std::string& m : f)
            if (report.failures.size() < 50) report.failures.push_back(std::move(m));
        }
      }
    }
    // Plans of the registry this class does not execute must be refused by
    // the gate (explicit unsupported entries).
    for (const OperationPlan& plan : executable_plan_set()) {
      if (!wanted(plan) || supports_operation_plan(cls, plan)) continue;
      ++report.unsupported;
      std::mt19937 rng = entry_rng(seed, plan);
      auto it = case_generators().find(plan.operation());
      if (it == case_generators().end()) continue;
      const std::vector<TwinCase> cases = it->second(plan, rng);
      if (cases.empty()) continue;
      // The first case the reference executes (a case the front end refuses
      // before the gate, such as an invalid option, proves nothing about it).
      const TwinCase* executable = nullptr;
      for (const TwinCase& c : cases)
        if (run(plan, c.generic, c.options).error.empty()) {
          executable = &c;
          break;
        }
      ++report.cases;
      if (!executable) {
        ++report.failed;
        report.failures.push_back(plan.to_string() + ": no case of the generator executes on Generic");
        continue;
      }
      const Outcome o = run(plan, executable->other, executable->options);
      if (o.error == "UnsupportedOperationPlan") {
        ++report.passed;
        ++report.refused;
      } else {
        ++report.failed;
        report.failures.push_back(plan.to_string() + ": an unsupported entry was not refused by the gate (" +
                                  (o.error.empty() ? std::string("it executed") : "raised " + o.error) + ")");
      }
    }
  } catch (...) {
    set_carrier_under_test(previous);
    throw;
  }
  set_carrier_under_test(previous);
  return report;
}

}  // namespace strideweave::conformance
