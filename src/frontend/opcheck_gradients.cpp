// opcheck's gradient check: the definition's VJP, called directly with a
// VJPContext, against central differences of its reference
// (src/frontend/opcheck_support.h). No autograd graph is involved.
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "frontend/autograd_hooks.h"
#include "frontend/opcheck_support.h"

namespace strideweave::frontend::opcheck {

using operation::OpcheckCase;
using operation::OpcheckStatus;
using operation::SampleTensor;

namespace {

// The compact random call of the sample with operand `which`'s logical
// element `element` replaced by `value` (which < 0: unchanged).
Built perturbed(const Carrier& prototype, const operation::OpcheckSample& sample, std::uint64_t seed, std::size_t which,
                std::int64_t element, float value) {
  static const Variant random{"random", Variant::Values::RANDOM, Variant::View::COMPACT, -1, 0};
  Built b = build(prototype, sample, random, seed);
  if (element >= 0) {
    Tensor& t = std::get<Tensor>(b.operands[which]);
    t.carrier()->set_value(t.offset() + t.layout()(element), Value::from_float32(value));
  }
  return b;
}

// <cotangents, reference(call)> in double.
double projected(const operation::OperationDefinition& definition, const operation::OpcheckSample& sample,
                 const Built& call, const std::vector<std::optional<Tensor>>& cotangents) {
  const auto invocation = operation::resolve_call(definition, call.operands, sample.options);
  const GraphConstructionOff reference_records_nothing;
  const std::vector<Tensor> out = operation::execute_reference(definition, *invocation);
  double sum = 0;
  for (std::size_t r = 0; r < out.size() && r < cotangents.size(); ++r) {
    if (!cotangents[r]) continue;
    const std::vector<Value> y = out[r].values(), c = cotangents[r]->values();
    for (std::size_t e = 0; e < y.size() && e < c.size(); ++e) sum += static_cast<double>(c[e].f) * y[e].f;
  }
  return sum;
}

OpcheckCase fail(std::string label, std::string variant, std::string field, std::string message) {
  return OpcheckCase{std::move(label), std::move(variant), OpcheckStatus::FAILED, std::move(field), std::move(message)};
}

}  // namespace

std::vector<OpcheckCase> check_gradients(const operation::OperationDefinition& definition, const Carrier& prototype,
                                         const operation::OpcheckOptions& options) {
  std::vector<OpcheckCase> out;
  const auto* vjp = std::get_if<operation::VjpFn>(&definition.vjp());
  if (!vjp) return out;
  const auto specs = definition.schema().operands();
  for (const operation::OpcheckSample& sample : options.samples) {
    // The differentiable schema operands, and which of them this sample can check.
    std::vector<std::size_t> differentiable, checked;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (!specs[i].differentiable()) continue;
      differentiable.push_back(i);
      if (const auto* t = std::get_if<SampleTensor>(&sample.operands[i]); t && t->dtype == &DType::Float32())
        checked.push_back(i);
    }
    if (checked.empty()) continue;
    const std::string label = sample.label;
    // The context: the reference's outputs on a compact random call.
    const Built base = perturbed(prototype, sample, options.seed, 0, -1, 0);
    std::shared_ptr<const operation::ResolvedInvocation> invocation;
    std::vector<Tensor> outputs;
    try {
      invocation = operation::resolve_call(definition, base.operands, sample.options);
      const GraphConstructionOff reference_records_nothing;
      outputs = operation::execute_reference(definition, *invocation);
    } catch (const Error& e) {
      out.push_back(OpcheckCase{label, "all operands", OpcheckStatus::SKIPPED, {},
                                fmt::format("the reference call raised {}: {}", e.type_name(), e.what())});
      continue;
    }
    std::mt19937_64 rng(options.seed ^ 0x5851f42d4c957f2dULL);
    std::vector<std::optional<Tensor>> cotangents;
    for (const auto& spec : invocation->results()) {
      if (&spec.dtype() != &DType::Float32()) {
        cotangents.emplace_back(std::nullopt);
        continue;
      }
      std::vector<Value> v(static_cast<std::size_t>(spec.shape().size()));
      for (auto& x : v) x = Value::from_float32(static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1));
      cotangents.emplace_back(Tensor(prototype.new_like(v, true, &DType::Float32()), spec.shape()));
    }
    std::vector<Tensor> saved;
    for (std::size_t i : invocation->saved_operands()) saved.push_back(std::get<Tensor>(base.operands[i]).detach());
    std::vector<std::optional<Tensor>> grads;
    try {
      const operation::VJPContext context(invocation, outputs, saved);
      const GraphConstructionOff vjp_records_nothing;
      grads = (*vjp)(context, cotangents);
    } catch (const Error& e) {
      out.push_back(fail(label, "all operands", "vjp", fmt::format("the VJP raised {}: {}", e.type_name(), e.what())));
      continue;
    }
    if (grads.size() != differentiable.size()) {
      out.push_back(fail(label, "all operands", "vjp",
                         fmt::format("the VJP returned {} gradients for {} differentiable operands", grads.size(),
                                     differentiable.size())));
      continue;
    }
    for (std::size_t i : checked) {
      const std::size_t k = static_cast<std::size_t>(std::find(differentiable.begin(), differentiable.end(), i) -
                                                     differentiable.begin());
      const Tensor& x = std::get<Tensor>(base.operands[i]);
      const std::string variant = specs[i].name();
      const std::optional<Tensor>& g = grads[k];
      if (g && !(g->shape() == x.shape())) {
        out.push_back(fail(label, variant, "gradient shape",
                           fmt::format("the gradient has shape {}, the operand {}", g->shape().to_string(),
                                       x.shape().to_string())));
        continue;
      }
      if (g && &g->dtype() != &x.dtype()) {
        out.push_back(fail(label, variant, "gradient dtype",
                           fmt::format("the gradient has dtype {}, the operand {}", g->dtype().name(), x.dtype().name())));
        continue;
      }
      const std::vector<Value> gv = g ? g->values() : std::vector<Value>{};
      const std::vector<Value> xv = x.values();
      const std::int64_t n = x.size();
      const std::int64_t step = std::max<std::int64_t>(1, (n + options.fd_max_elements - 1) / options.fd_max_elements);
      std::int64_t compared = 0, nonsmooth = 0;
      std::optional<std::string> worst;
      try {
        for (std::int64_t e = 0; e < n && !worst; e += step) {
          const float x0 = xv[static_cast<std::size_t>(e)].f;
          const auto central = [&](double h) {
            const float plus = static_cast<float>(x0 + h), minus = static_cast<float>(x0 - h);
            const double fp = projected(definition, sample, perturbed(prototype, sample, options.seed, i, e, plus), cotangents);
            const double fm = projected(definition, sample, perturbed(prototype, sample, options.seed, i, e, minus), cotangents);
            return (fp - fm) / (static_cast<double>(plus) - minus);
          };
          const double fd = central(options.fd_step), fd_half = central(options.fd_step / 2);
          const double tol = options.grad_atol + options.grad_rtol * std::fabs(fd);
          if (std::fabs(fd - fd_half) > tol) {  // a kink within the step: no derivative to compare with
            ++nonsmooth;
            continue;
          }
          const double analytic = g ? static_cast<double>(gv[static_cast<std::size_t>(e)].f) : 0.0;
          ++compared;
          if (!(std::fabs(analytic - fd) <= tol))
            worst = fmt::format("element {}: the VJP gives {}, central differences {} (tolerance {})", e, analytic, fd,
                                tol);
        }
      } catch (const Error& err) {
        out.push_back(fail(label, variant, "gradient",
                           fmt::format("a perturbed reference call raised {}: {}", err.type_name(), err.what())));
        continue;
      }
      if (worst) {
        out.push_back(fail(label, variant, "gradient", *worst));
      } else {
        out.push_back(OpcheckCase{label, variant, OpcheckStatus::PASSED, {},
                                  fmt::format("{} elements compared, {} skipped at a kink", compared, nonsmooth)});
      }
    }
  }
  return out;
}

}  // namespace strideweave::frontend::opcheck
