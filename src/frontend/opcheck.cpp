// opcheck: every kernel pattern of every carrier advertising a user-defined
// operation against the operation's reference (include/strideweave/opcheck.h,
// docs/opcheck.md). Inputs are generated in opcheck_inputs.cpp; the gradient
// check is in opcheck_gradients.cpp.
#include <strideweave/opcheck.h>

#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "extension/registry.h"
#include "frontend/autograd_hooks.h"
#include "frontend/opcheck_support.h"
#include "frontend/pipeline.h"

namespace strideweave::operation {

using frontend::opcheck::Built;
using frontend::opcheck::Variant;

const char* name_of(OpcheckStatus status) noexcept {
  switch (status) {
    case OpcheckStatus::PASSED: return "passed";
    case OpcheckStatus::FAILED: return "failed";
    case OpcheckStatus::DECLINED: return "declined";
    case OpcheckStatus::NOT_APPLICABLE: return "not applicable";
    case OpcheckStatus::SKIPPED: return "skipped";
  }
  return "?";
}

std::size_t OpcheckReport::count(OpcheckStatus status) const noexcept {
  std::size_t n = 0;
  for (const auto& c : carriers) {
    for (const auto& p : c.patterns)
      n += static_cast<std::size_t>(std::count_if(p.cases.begin(), p.cases.end(),
                                                  [&](const OpcheckCase& k) { return k.status == status; }));
    n += static_cast<std::size_t>(std::count_if(c.gradients.begin(), c.gradients.end(),
                                                [&](const OpcheckCase& k) { return k.status == status; }));
  }
  return n;
}

std::size_t OpcheckReport::failed() const noexcept {
  std::size_t n = count(OpcheckStatus::FAILED);
  for (const auto& c : carriers) n += c.problem ? 1 : 0;
  return n;
}

namespace {

// ---------------------------------------------------------------- registered inputs

struct RegisteredInputs {
  std::vector<OpcheckSample> samples;
  std::vector<std::shared_ptr<Carrier>> carriers;
};
struct InputRegistry {
  std::mutex mutex;
  std::map<const OperationDefinition*, RegisteredInputs> entries;
};
InputRegistry& input_registry() {
  static InputRegistry* r = new InputRegistry();  // lives for the program, like the definitions it names
  return *r;
}

// ---------------------------------------------------------------- comparison

bool is_nan(const Value& v) { return v.kind == ElementKind::Float32 && std::isnan(v.f); }
// Within tolerance: NaN matches NaN, an infinity the same infinity, other
// reals |a - b| <= atol + rtol * |b|; other kinds exactly.
bool close(const Value& a, const Value& b, double atol, double rtol) {
  if (a.kind != b.kind) return false;
  if (a.kind != ElementKind::Float32) return a == b;
  if (std::isnan(a.f) || std::isnan(b.f)) return std::isnan(a.f) && std::isnan(b.f);
  if (std::isinf(a.f) || std::isinf(b.f)) return a.f == b.f;
  return std::fabs(static_cast<double>(a.f) - b.f) <= atol + rtol * std::fabs(static_cast<double>(b.f));
}
bool identical(const Value& a, const Value& b) { return a == b || (is_nan(a) && is_nan(b)); }

std::vector<Value> physical(const Carrier& c) {
  std::vector<Value> out;
  out.reserve(static_cast<std::size_t>(c.size()));
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i));
  return out;
}

OpcheckCase failed(std::string field, std::string message) {
  return OpcheckCase{{}, {}, OpcheckStatus::FAILED, std::move(field), std::move(message)};
}

// Compares a kernel's published outputs (and operands afterwards) with the
// reference's; the first difference wins.
OpcheckCase compare(const ResolvedInvocation& invocation, const Built& kernel_in, const std::vector<Tensor>& kernel_out,
                    const Built& reference_in, const std::vector<Tensor>& reference_out) {
  const std::span<const ResultSpec> specs = invocation.results();
  if (kernel_out.size() != specs.size())
    return failed("count", fmt::format("{} outputs for {} result specs", kernel_out.size(), specs.size()));
  double atol = 0, rtol = 0;
  for (std::size_t r = 0; r < specs.size(); ++r) {
    const Tensor& k = kernel_out[r];
    const ResultSpec& spec = specs[r];
    atol = std::max(atol, spec.atol());
    rtol = std::max(rtol, spec.rtol());
    if (&k.dtype() != &spec.dtype())
      return failed("dtype", fmt::format("result {} has dtype {}, the spec says {}", r, k.dtype().name(), spec.dtype().name()));
    if (!(k.shape() == spec.shape()))
      return failed("shape", fmt::format("result {} has shape {}, the spec says {}", r, k.shape().to_string(),
                                         spec.shape().to_string()));
    if (!(k.layout() == spec.layout()))
      return failed("layout", fmt::format("result {} has layout {}, the spec says {}", r, k.layout().to_string(),
                                          spec.layout().to_string()));
    // An exact-object alias is the operand itself: its values are the
    // operand's storage after the call, which the mutation check below
    // compares slot by slot (so an in-place kernel that writes other values
    // than the reference fails on "mutation", the effect that differs).
    if (!spec.alias_of()) {
      const std::vector<Value> kv = k.values(), rv = reference_out[r].values();
      if (kv.size() != rv.size())
        return failed("values", fmt::format("result {} has {} elements, the reference's {}", r, kv.size(), rv.size()));
      for (std::size_t e = 0; e < kv.size(); ++e)
        if (!close(kv[e], rv[e], spec.atol(), spec.rtol()))
          return failed("values", fmt::format("result {} element {} (logical ordinal) is {}, the reference gives {} "
                                              "(atol {}, rtol {})",
                                              r, e, kv[e].to_string(), rv[e].to_string(), spec.atol(), spec.rtol()));
    }
    // Aliasing: storage shared with an operand exactly as the reference's result shares it.
    for (std::size_t i = 0; i < kernel_in.operands.size(); ++i) {
      const Tensor* kt = std::get_if<Tensor>(&kernel_in.operands[i]);
      const Tensor* rt = std::get_if<Tensor>(&reference_in.operands[i]);
      if (!kt || !rt) continue;
      const bool k_shares = k.carrier() == kt->carrier();
      const bool r_shares = reference_out[r].carrier() == rt->carrier();
      if (k_shares != r_shares)
        return failed("alias", fmt::format("result {} {} storage with operand {}, the reference's result {}", r,
                                           k_shares ? "shares" : "does not share", i, r_shares ? "does" : "does not"));
    }
  }
  // Mutation effects, over every slot of every operand's storage.
  for (std::size_t i = 0; i < kernel_in.operands.size(); ++i) {
    const Tensor* kt = std::get_if<Tensor>(&kernel_in.operands[i]);
    const Tensor* rt = std::get_if<Tensor>(&reference_in.operands[i]);
    if (!kt || !rt) continue;
    const bool declared = std::find(invocation.mutated_operands().begin(), invocation.mutated_operands().end(), i) !=
                          invocation.mutated_operands().end();
    const std::vector<Value> after = physical(*kt->carrier());
    const std::vector<Value>& before = kernel_in.storage[i];
    const std::vector<Value> expected = declared ? physical(*rt->carrier()) : before;
    for (std::size_t s = 0; s < after.size() && s < expected.size(); ++s) {
      const bool ok = declared ? close(after[s], expected[s], atol, rtol) : identical(after[s], expected[s]);
      if (!ok)
        return failed("mutation",
                      declared ? fmt::format("operand {} (declared mutated) holds {} at storage slot {}; the reference "
                                             "wrote {}",
                                             i, after[s].to_string(), s, expected[s].to_string())
                               : fmt::format("operand {} is not declared mutated, but its storage slot {} changed from "
                                             "{} to {}",
                                             i, s, before[s].to_string(), after[s].to_string()));
    }
  }
  return OpcheckCase{};
}

// ---------------------------------------------------------------- one case

// The pattern `kernel_id` (or, when null, the carrier's composite provider)
// on one generated call.
OpcheckCase run_case(const OperationDefinition& definition, const Carrier& prototype, const OpcheckSample& sample,
                     const Variant& variant, const extension::KernelPattern* pattern, std::uint64_t seed) {
  OpcheckCase c;
  Built kernel_in, reference_in;
  std::shared_ptr<const ResolvedInvocation> invocation;
  try {
    kernel_in = frontend::opcheck::build(prototype, sample, variant, seed);
    reference_in = frontend::opcheck::build(prototype, sample, variant, seed);
    invocation = resolve_call(definition, kernel_in.operands, sample.options);
  } catch (const Error& e) {
    return OpcheckCase{{}, {}, OpcheckStatus::SKIPPED, {}, fmt::format("{}: {}", e.type_name(), e.what())};
  }
  if (pattern && !pattern->matching_plan(invocation->plan()))
    return OpcheckCase{{}, {}, OpcheckStatus::NOT_APPLICABLE, {},
                       fmt::format("no plan of the pattern matches {}", invocation->plan().to_string())};
  // The reference, on its own copy.
  std::vector<Tensor> reference_out;
  std::optional<std::string> reference_error_type, reference_error;
  try {
    const auto reference_invocation = resolve_call(definition, reference_in.operands, sample.options);
    const frontend::GraphConstructionOff reference_records_nothing;
    reference_out = execute_reference(definition, *reference_invocation);
  } catch (const ProviderContractError& e) {
    return failed("reference", fmt::format("the reference broke its own result contract ({}): {}", e.field(), e.what()));
  } catch (const Error& e) {
    reference_error_type = e.type_name();
    reference_error = e.what();
  }
  // The kernel, alone, through the ordinary pipeline.
  std::vector<Tensor> kernel_out;
  try {
    if (pattern) {
      const frontend::PinnedKernelPattern pin(pattern->kernel_id());
      kernel_out = definition(kernel_in.operands, sample.options);
    } else {
      kernel_out = definition(kernel_in.operands, sample.options);
    }
  } catch (const ProviderContractError& e) {
    return failed(e.field(), e.what());
  } catch (const UnsupportedOperationPlan& e) {
    if (reference_error_type && *reference_error_type == "UnsupportedOperationPlan") return c;
    // The pinned pattern's own reason ("kernel 'id' (source): reason.") rather
    // than the whole combined message.
    std::string why = e.what();
    if (pattern)
      if (const auto at = why.rfind(fmt::format("kernel '{}'", pattern->kernel_id())); at != std::string::npos)
        why = why.substr(at);
    return OpcheckCase{{}, {}, OpcheckStatus::DECLINED, {}, std::move(why)};
  } catch (const Error& e) {
    if (reference_error_type && *reference_error_type == e.type_name()) return c;  // the same error condition
    return failed("error", reference_error_type
                               ? fmt::format("the kernel raised {} ({}), the reference {} ({})", e.type_name(), e.what(),
                                             *reference_error_type, *reference_error)
                               : fmt::format("the kernel raised {} ({}); the reference succeeded", e.type_name(),
                                             e.what()));
  }
  if (reference_error_type)
    return failed("error", fmt::format("the reference raised {} ({}); the kernel succeeded", *reference_error_type,
                                       *reference_error));
  try {
    return compare(*invocation, kernel_in, kernel_out, reference_in, reference_out);
  } catch (const Error& e) {
    return failed("values", fmt::format("reading the results raised {}: {}", e.type_name(), e.what()));
  }
}

void check_sample_fits(const OperationDefinition& definition, const OpcheckSample& sample, std::size_t index) {
  const auto specs = definition.schema().operands();
  if (sample.operands.size() != specs.size())
    throw ValueError(fmt::format("opcheck({}): sample {} has {} operands, the schema {}", definition.name(), index,
                                 sample.operands.size(), specs.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const bool tensor = std::holds_alternative<SampleTensor>(sample.operands[i]);
    const bool fits = specs[i].kind() == OperandKind::TENSOR     ? tensor || (specs[i].accepts_weak_scalar() &&
                                                                             std::holds_alternative<WeakScalar>(
                                                                                 sample.operands[i]))
                      : specs[i].kind() == OperandKind::WEAK_SCALAR ? std::holds_alternative<WeakScalar>(sample.operands[i])
                                                                    : std::holds_alternative<Structural>(sample.operands[i]);
    if (!fits)
      throw ValueError(fmt::format("opcheck({}): sample {} operand {} ('{}') is not a {} operand", definition.name(),
                                   index, i, specs[i].name(), value_of(specs[i].kind())));
    if (const auto* t = std::get_if<SampleTensor>(&sample.operands[i]); t && (!t->dtype || !t->shape.is_flat()))
      throw ValueError(fmt::format("opcheck({}): sample {} operand {} needs a dtype and a flat shape", definition.name(),
                                   index, i));
  }
}

// The patterns of a class that name the definition, in candidate order,
// without sealing a class that has not been observed yet.
std::vector<extension::detail::Candidate> patterns_for(const extension::detail::ClassDefinition& record,
                                                       const OperationDefinition& definition) {
  std::vector<extension::detail::Candidate> out;
  const auto names = [&](const extension::KernelPattern& p) { return p.operation_ptr().get() == &definition; };
  if (const extension::detail::SealedKernels* sealed = record.kernels.load(std::memory_order_acquire)) {
    for (const auto& c : sealed->candidates)
      if (names(*c.pattern)) out.push_back(c);
    return out;
  }
  std::lock_guard lock(record.mutex);
  if (const auto& k = record.definition->kernels())
    for (const auto& p : k->patterns())
      if (names(p)) out.push_back({&p, "built-in", k->interface_ptr()});
  for (const auto& pack : record.packs)
    for (const auto& p : pack->patterns())
      if (names(p)) out.push_back({&p, pack->namespace_name() + "@" + pack->version(), nullptr});
  return out;
}

}  // namespace

void register_opcheck_inputs(const OperationDefinition& definition, std::vector<OpcheckSample> samples,
                             std::vector<std::shared_ptr<Carrier>> carriers) {
  if (definition.is_builtin())
    throw ValueError(fmt::format("register_opcheck_inputs({}): a built-in operation is checked by the conformance "
                                 "harness (strideweave check), not by opcheck",
                                 definition.name()));
  if (samples.empty())
    throw ValueError(fmt::format("register_opcheck_inputs({}): no samples", definition.name()));
  for (std::size_t i = 0; i < samples.size(); ++i) check_sample_fits(definition, samples[i], i);
  for (const auto& c : carriers)
    if (!c) throw TypeError(fmt::format("register_opcheck_inputs({}): a null carrier prototype", definition.name()));
  InputRegistry& r = input_registry();
  std::lock_guard lock(r.mutex);
  if (r.entries.count(&definition))
    throw ValueError(fmt::format("register_opcheck_inputs({}): inputs are already registered (one-shot)",
                                 definition.name()));
  r.entries.emplace(&definition, RegisteredInputs{std::move(samples), std::move(carriers)});
}

OpcheckReport opcheck(const OperationDefinition& definition, OpcheckOptions options) {
  const std::string& name = definition.name();
  if (definition.is_builtin())
    throw ValueError(fmt::format("opcheck({}): built-in operations are checked by the conformance harness "
                                 "(strideweave check --operation {})",
                                 name, name));
  if (!definition.reference())
    throw ValueError(fmt::format("opcheck({}): the operation has no reference to compare its kernels with", name));
  {
    InputRegistry& r = input_registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.entries.find(&definition); it != r.entries.end()) {
      if (options.samples.empty()) options.samples = it->second.samples;
      if (options.carriers.empty()) options.carriers = it->second.carriers;
    }
  }
  if (options.samples.empty())
    throw ValueError(fmt::format("opcheck({}): no samples (pass OpcheckOptions::samples or register them with "
                                 "register_opcheck_inputs)",
                                 name));
  for (std::size_t i = 0; i < options.samples.size(); ++i) {
    check_sample_fits(definition, options.samples[i], i);
    if (options.samples[i].label.empty()) options.samples[i].label = fmt::format("sample {}", i);
  }
  for (const auto& c : options.carriers) {
    if (!c) throw TypeError(fmt::format("opcheck({}): a null carrier prototype", name));
    if (!extension::detail::find_definition(c->exact_class()))
      throw ValueError(fmt::format("opcheck({}): {} is a definition-free carrier and runs no user-defined operation",
                                   name, c->class_name()));
  }
  if (!(options.fd_step > 0) || !(options.grad_atol >= 0) || !(options.grad_rtol >= 0) || options.fd_max_elements < 1)
    throw ValueError(fmt::format("opcheck({}): fd_step must be positive, the tolerances non-negative and "
                                 "fd_max_elements at least 1",
                                 name));

  OpcheckReport report;
  report.operation = name;
  const auto prototype_of = [&](CarrierClass cls) -> std::shared_ptr<Carrier> {
    for (const auto& c : options.carriers)
      if (c->exact_class() == cls) return c;
    return nullptr;
  };
  std::vector<CarrierClass> done;
  // Independent classes whose patterns name the definition.
  for (const auto& record : extension::detail::all_definitions()) {
    if (record->dependent) continue;
    const std::shared_ptr<Carrier> prototype = prototype_of(record->cls);
    const std::vector<extension::detail::Candidate> candidates =
        prototype ? [&] {
          std::vector<extension::detail::Candidate> out;
          for (const auto& c : extension::detail::sealed_kernels(*record).candidates)
            if (c.pattern->operation_ptr().get() == &definition) out.push_back(c);
          return out;
        }()
                  : patterns_for(*record, definition);
    if (candidates.empty()) continue;
    done.push_back(record->cls);
    OpcheckCarrierReport carrier;
    carrier.carrier = record->cls.name();
    if (!prototype) {
      carrier.problem = failed("prototype", fmt::format("{} advertises {} but opcheck was given no prototype instance "
                                                        "to build its inputs with",
                                                        record->cls.name(), name));
      report.carriers.push_back(std::move(carrier));
      continue;
    }
    for (const auto& candidate : candidates) {
      OpcheckPatternReport p{candidate.pattern->kernel_id(), candidate.source, candidate.pattern->preference(), {}};
      for (const OpcheckSample& sample : options.samples)
        for (const Variant& variant : frontend::opcheck::variants(sample)) {
          OpcheckCase k = run_case(definition, *prototype, sample, variant, candidate.pattern, options.seed);
          k.sample = sample.label;
          k.variant = variant.label;
          p.cases.push_back(std::move(k));
        }
      carrier.patterns.push_back(std::move(p));
    }
    if (options.gradients) carrier.gradients = frontend::opcheck::check_gradients(definition, *prototype, options);
    report.carriers.push_back(std::move(carrier));
  }
  // Dependent prototypes: through their composite providers.
  for (const auto& prototype : options.carriers) {
    const auto record = extension::detail::find_definition(prototype->exact_class());
    if (!record->dependent || std::find(done.begin(), done.end(), record->cls) != done.end()) continue;
    done.push_back(record->cls);
    OpcheckCarrierReport carrier;
    carrier.carrier = record->cls.name();
    OpcheckPatternReport p{"composite provider", "built-in", 0, {}};
    for (const OpcheckSample& sample : options.samples)
      for (const Variant& variant : frontend::opcheck::variants(sample)) {
        OpcheckCase k = run_case(definition, *prototype, sample, variant, nullptr, options.seed);
        k.sample = sample.label;
        k.variant = variant.label;
        p.cases.push_back(std::move(k));
      }
    carrier.patterns.push_back(std::move(p));
    if (options.gradients) carrier.gradients = frontend::opcheck::check_gradients(definition, *prototype, options);
    report.carriers.push_back(std::move(carrier));
  }
  return report;
}

std::string to_text(const OpcheckReport& report) {
  std::string out = fmt::format("opcheck {}: {} passed, {} failed, {} declined, {} not applicable, {} skipped\n",
                                report.operation, report.count(OpcheckStatus::PASSED), report.failed(),
                                report.count(OpcheckStatus::DECLINED), report.count(OpcheckStatus::NOT_APPLICABLE),
                                report.count(OpcheckStatus::SKIPPED));
  if (report.carriers.empty()) out += "  no carrier advertises the operation\n";
  const auto line = [&out](const OpcheckCase& c) {
    out += fmt::format("      {:<15} {} / {}", name_of(c.status), c.sample, c.variant);
    if (!c.field.empty()) out += fmt::format(" [{}]", c.field);
    if (!c.message.empty() && c.status != OpcheckStatus::PASSED) out += fmt::format(": {}", c.message);
    out += "\n";
  };
  for (const auto& c : report.carriers) {
    out += fmt::format("  carrier {}\n", c.carrier);
    if (c.problem) out += fmt::format("    FAILED [{}]: {}\n", c.problem->field, c.problem->message);
    for (const auto& p : c.patterns) {
      out += fmt::format("    pattern {} ({}, preference {})\n", p.kernel_id, p.source, p.preference);
      for (const auto& k : p.cases) line(k);
    }
    if (!c.gradients.empty()) {
      out += "    gradients (VJP vs central differences of the reference)\n";
      for (const auto& k : c.gradients) line(k);
    }
  }
  return out;
}

}  // namespace strideweave::operation
