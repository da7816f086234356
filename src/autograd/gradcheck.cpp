// The finite-difference gradient check (autograd.h, docs/autograd.md
// "Gradient checks"). The operations and plans to check are derived from the
// registry and the carrier's kernel table; gradcheck_cases.cpp only supplies
// inputs.
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/gradcheck_cases.h"
#include "execution/kernel_table.h"
#include "autograd/graph.h"

namespace strideweave::autograd {
namespace {

using gradcheck::Case;
using gradcheck::HostOperand;
using gradcheck::HostTensor;

// The central difference step and the tolerance (docs/autograd.md).
constexpr double kStep = 1e-2;
constexpr double kTolerance = 1e-2;
constexpr std::size_t kReportedPerCase = 3;

Tensor build(const HostTensor& h, const Carrier& prototype) {
  std::vector<Value> values;
  values.reserve(h.values.size());
  for (double v : h.values) {
    if (h.dtype == &DType::Int32()) values.push_back(Value::from_int32(static_cast<std::int32_t>(v)));
    else if (h.dtype == &DType::Bool()) values.push_back(Value::from_bool(v != 0.0));
    else values.push_back(Value::from_float32(static_cast<float>(v)));
  }
  return Tensor(prototype.new_like(values, true, h.dtype), Shape::of(h.extents));
}

bool is_float_tensor(const HostOperand& o) {
  const HostTensor* t = std::get_if<HostTensor>(&o);
  return t && t->dtype == &DType::Float32();
}

class CaseCheck {
 public:
  CaseCheck(const OperationPlan& plan, const Case& c, const Carrier& prototype)
      : plan_(plan), case_(c), prototype_(prototype) {
    if (std::ranges::find(CONFIGURABLE_OPERATIONS(), std::string_view(plan.operation())) !=
        CONFIGURABLE_OPERATIONS().end())
      execution_ = execution_request_of(plan);
  }

  // Failure lines (empty when the VJP agrees with central differences).
  std::vector<std::string> run(std::mt19937& rng) {
    const GradModeGuard record(true);  // also inside a caller's no_grad()
    std::vector<CallOperand> operands;
    std::vector<Tensor> inputs;
    std::vector<std::size_t> positions;  // operand index of each input
    for (std::size_t i = 0; i < case_.operands.size(); ++i) {
      const HostOperand& o = case_.operands[i];
      if (const WeakScalar* s = std::get_if<WeakScalar>(&o)) {
        operands.emplace_back(*s);
        continue;
      }
      Tensor t = build(std::get<HostTensor>(o), prototype_);
      if (is_float_tensor(o)) {
        inputs.push_back(t);
        positions.push_back(i);
      }
      operands.emplace_back(std::move(t));
    }
    const CallResult r = call_operation(plan_.operation(), operands, case_.options, execution_);
    if (r.plans.empty() || !(r.plans.front() == plan_))
      return {failure(fmt::format("the case resolves {}, not the plan under check",
                                  r.plans.empty() ? "nothing" : r.plans.front().to_string()))};
    const Tensor& y = r.results.front();
    if (!y.grad_fn()) return {failure("the result has no grad_fn")};
    cotangent_.clear();
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<Value> cv;
    for (std::int64_t k = 0; k < y.size(); ++k) {
      cotangent_.push_back(static_cast<double>(unit(rng)));
      cv.push_back(Value::from_float32(static_cast<float>(cotangent_.back())));
    }
    const Tensor cotangent(prototype_.new_like(cv, true, &DType::Float32()), y.shape());
    const std::vector<std::optional<Tensor>> grads = grad(y, inputs, cotangent);

    std::vector<std::string> out;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const HostTensor& host = std::get<HostTensor>(case_.operands[positions[k]]);
      for (std::size_t e = 0; e < host.values.size() && out.size() < kReportedPerCase; ++e) {
        const double analytic =
            grads[k] ? static_cast<double>(grads[k]->at_ordinal(static_cast<std::int64_t>(e)).f) : 0.0;
        const double numeric = central_difference(positions[k], e);
        const double scale = std::max({1.0, std::abs(analytic), std::abs(numeric)});
        if (!(std::abs(analytic - numeric) <= kTolerance * scale))
          out.push_back(failure(fmt::format("d/d(operand {})[{}]: analytic {:.6g}, numeric {:.6g}", positions[k], e,
                                            analytic, numeric)));
      }
    }
    return out;
  }

 private:
  std::string failure(const std::string& what) const {
    return fmt::format("{} {} [{}]: {}", prototype_.class_name(), plan_.to_string(), case_.label, what);
  }

  // <cotangent, f(operands)> with element e of operand i replaced by v.
  double weighted_output(std::size_t i, std::size_t e, double v) const {
    NoGradGuard no_grad;
    std::vector<CallOperand> operands;
    for (std::size_t k = 0; k < case_.operands.size(); ++k) {
      const HostOperand& o = case_.operands[k];
      if (const WeakScalar* s = std::get_if<WeakScalar>(&o)) {
        operands.emplace_back(*s);
        continue;
      }
      HostTensor h = std::get<HostTensor>(o);
      if (k == i) h.values[e] = v;
      operands.emplace_back(build(h, prototype_));
    }
    const CallResult r = call_operation(plan_.operation(), operands, case_.options, execution_);
    double sum = 0.0;
    const std::vector<Value> values = r.results.front().values();
    for (std::size_t m = 0; m < values.size(); ++m) sum += cotangent_[m] * static_cast<double>(values[m].f);
    return sum;
  }

  // Central difference in float32: the perturbed inputs are binary32 values.
  double central_difference(std::size_t i, std::size_t e) const {
    const double x = std::get<HostTensor>(case_.operands[i]).values[e];
    const double up = static_cast<float>(x + kStep), down = static_cast<float>(x - kStep);
    return (weighted_output(i, e, up) - weighted_output(i, e, down)) / (up - down);
  }

  const OperationPlan& plan_;
  const Case& case_;
  const Carrier& prototype_;
  ExecutionRequest execution_;
  std::vector<double> cotangent_;
};

}  // namespace

GradientCheckReport check_operation_gradients(const Carrier& prototype, std::string_view operation) {
  GradientCheckReport report;
  report.carrier = prototype.class_name();
  const KernelTable* table = kernel_table(prototype.exact_class());
  std::vector<OperationPlan> plans;
  for (const OperationPlan& p : differentiable_plans())
    if (p.operation() == operation && table && table->find(p)) plans.push_back(p);
  if (plans.empty()) return report;
  report.operations = 1;
  const auto builder = gradcheck::case_builders().find(operation);
  if (!find_vjp(operation)) report.failures.push_back(fmt::format("{}: '{}' has no VJP", report.carrier, operation));
  if (builder == gradcheck::case_builders().end())
    report.failures.push_back(fmt::format("{}: '{}' has no gradient-check cases", report.carrier, operation));
  if (report.failures.empty()) {
    report.checked = 1;
    std::uint32_t seed = 2166136261u;  // FNV-1a of the name: the same inputs on every platform
    for (char ch : operation) seed = (seed ^ static_cast<unsigned char>(ch)) * 16777619u;
    std::mt19937 rng(seed);
    for (const OperationPlan& plan : plans) {
      for (const Case& c : builder->second(plan, rng)) {
        try {
          std::vector<std::string> f = CaseCheck(plan, c, prototype).run(rng);
          report.failures.insert(report.failures.end(), f.begin(), f.end());
        } catch (const Error& e) {
          report.failures.push_back(fmt::format("{} {} [{}]: {}: {}", report.carrier, plan.to_string(), c.label,
                                                e.type_name(), e.message()));
        }
      }
    }
  }
  report.failed = report.failures.empty() ? 0 : 1;
  return report;
}

GradientCheckReport check_gradients(const Carrier& prototype) {
  GradientCheckReport report;
  report.carrier = prototype.class_name();
  for (const std::string& op : differentiable_operations()) {
    GradientCheckReport one = check_operation_gradients(prototype, op);
    report.operations += one.operations;
    report.checked += one.checked;
    report.failed += one.failed;
    report.failures.insert(report.failures.end(), one.failures.begin(), one.failures.end());
  }
  return report;
}

}  // namespace strideweave::autograd
