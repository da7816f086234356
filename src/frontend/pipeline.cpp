// The definition-backed half of the dispatch pipeline. See pipeline.h.
#include "frontend/dispatch.h"
#include "frontend/pipeline.h"

#include <strideweave/dependent_carrier.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "extension/registry.h"
#include "frontend/autograd_hooks.h"
#include "frontend/definition_output.h"
#include "storage/gate.h"
#include "storage/provider_writes.h"

namespace strideweave::frontend {

namespace storage_detail = strideweave::detail;
using extension::ProviderCompletion;
using extension::ProviderResult;
using extension::ResultSubmission;
using operation::ResolvedInvocation;
using operation::ResultSpec;

namespace {
thread_local const std::string* pinned_kernel_id = nullptr;
}  // namespace

PinnedKernelPattern::PinnedKernelPattern(const std::string& kernel_id) noexcept : previous_(pinned_kernel_id) {
  pinned_kernel_id = &kernel_id;
}
PinnedKernelPattern::~PinnedKernelPattern() { pinned_kernel_id = previous_; }
const std::string* PinnedKernelPattern::current() noexcept { return pinned_kernel_id; }

namespace {

// The subject of every message ("op on Class"), formatted only when an error
// is raised (the per-call path builds no string).
struct Who {
  const ResolvedInvocation* invocation;
  const Carrier* carrier;
};
std::string text(const Who& w) { return fmt::format("{} on {}", w.invocation->operation(), w.carrier->class_name()); }

// The carriers the invocation declares mutated (each once).
std::vector<Carrier*> mutated_carriers(const ResolvedInvocation& invocation) {
  std::vector<Carrier*> out;
  for (std::size_t i : invocation.mutated_operands()) {
    Carrier* c = std::get<Tensor>(invocation.operands()[i]).carrier().get();
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// From before the first provider callback until publication (docs/extension.md,
// "Provider writes to operands"; src/storage/provider_writes.h):
//   - every operand carrier that no declared mutated operand covers
//     (versions are per carrier: a view of a mutated operand is covered) is
//     watched read-only: a public write to it is refused, and check() fails
//     the call when a write was refused or its version moved all the same;
//   - every declared one logs public writes without a version step. Ending
//     without commit() (any failure) writes the logs back, so each operand
//     holds what it held and its version never moved; decline() does the
//     same between candidates, so the next one starts from the operands as
//     they were. commit() ends the guard just before publication's one
//     version step per declared carrier.
// A call that declares nothing mutated allocates nothing here.
class ProviderScope {
 public:
  explicit ProviderScope(const ResolvedInvocation& invocation) {
    if (!invocation.mutated_operands().empty()) declared_ = mutated_carriers(invocation);
    const std::span<const operation::CallOperand> operands = invocation.operands();
    try {  // a failed allocation below must not leave a carrier watched
      for (std::size_t i = 0; i < operands.size(); ++i) {
        const Tensor* t = std::get_if<Tensor>(&operands[i]);
        if (!t) continue;
        Carrier* c = t->carrier().get();
        if (std::find(declared_.begin(), declared_.end(), c) != declared_.end() || watching(c)) continue;
        if (watched_ >= inline_.size()) more_.reserve(watched_ + 1 - inline_.size());
        const Watched w{c, i, storage_detail::ProviderWrites::watch(*c), c->version()};
        if (watched_ < inline_.size()) inline_[watched_] = w;
        else more_.push_back(w);  // reserved: cannot throw
        ++watched_;
      }
      for (Carrier* c : declared_) journals_.push_back(std::make_unique<storage_detail::MutationJournal>(*c));
    } catch (...) {
      unwatch();
      throw;
    }
  }
  ~ProviderScope() {
    if (!committed_) restore();
    unwatch();
  }
  ProviderScope(const ProviderScope&) = delete;
  ProviderScope& operator=(const ProviderScope&) = delete;

  void decline() noexcept { restore(); }
  // A refused write (a provider may have caught the error and carried on),
  // or a version step by a path the guard does not see, fails the call as
  // the undeclared mutation it is.
  void check(const Who& who) const {
    for (std::size_t k = 0; k < watched_; ++k) {
      const Watched& w = at(k);
      if (storage_detail::ProviderWrites::refused_writes(*w.carrier) != w.refused_before)
        throw ProviderContractError("mutation", fmt::format("{}: a provider wrote operand {}'s carrier, which no "
                                                            "declared mutated operand covers (the write was refused)",
                                                            text(who), w.operand));
      if (w.carrier->version() != w.version_before)
        throw ProviderContractError("mutation", fmt::format("{}: operand {}'s carrier changed version during the "
                                                            "call but no declared mutated operand covers it",
                                                            text(who), w.operand));
    }
  }
  // The declared mutated carriers, each once.
  const std::vector<Carrier*>& declared() const noexcept { return declared_; }
  void commit() noexcept {
    committed_ = true;
    unwatch();
    journals_.clear();
  }

 private:
  struct Watched {
    Carrier* carrier;
    std::size_t operand;  // the first operand on it (messages)
    std::uint64_t refused_before;
    std::uint64_t version_before;
  };
  const Watched& at(std::size_t k) const { return k < inline_.size() ? inline_[k] : more_[k - inline_.size()]; }
  bool watching(const Carrier* c) const {
    for (std::size_t k = 0; k < watched_; ++k)
      if (at(k).carrier == c) return true;
    return false;
  }
  void unwatch() noexcept {
    for (std::size_t k = 0; k < watched_; ++k) storage_detail::ProviderWrites::unwatch(*at(k).carrier);
    watched_ = 0;
  }
  void restore() noexcept {
    for (auto& j : journals_) j->restore();
  }
  std::array<Watched, 4> inline_;  // the first watched_ are set
  std::vector<Watched> more_;
  std::size_t watched_ = 0;
  std::vector<Carrier*> declared_;
  std::vector<std::unique_ptr<storage_detail::MutationJournal>> journals_;
  bool committed_ = false;
};

// Takes the submission by value: a ready result is moved out, not copied.
// A framework ProviderCompletion is done() whenever wait() returned (its
// state settles before wait() returns); a foreign completion whose `done`
// is still false after its wait() returned is the ProviderContractError
// "completion" that the binding's adapter raises from wait()
// (python/src/extension.cpp), so it arrives here as the wait's terminal
// exception.
ProviderResult settle(ResultSubmission submission) {
  if (auto* ready = std::get_if<ProviderResult>(&submission)) return std::move(*ready);
  return std::get<ProviderCompletion<ProviderResult>>(submission).wait();  // its exception is terminal
}

// Publication validation (operation-semantics.md, "Result publication
// validates provider output"): every field of every result against its
// ResultSpec, then (ProviderScope::check) the undeclared-mutation check.
template <class ExpectedClass>
void validate(const ResolvedInvocation& invocation, const ProviderResult& result, ExpectedClass expected_class,
              const ProviderScope& scope, const Who& who) {
  const std::span<const ResultSpec> specs = invocation.results();
  const std::span<const Tensor> outputs = result.outputs();
  if (outputs.size() != specs.size())
    throw ProviderContractError("count", fmt::format("{}: the provider returned {} outputs for {} result specs", text(who),
                                                     outputs.size(), specs.size()));
  for (std::size_t r = 0; r < specs.size(); ++r) {
    const Tensor& t = outputs[r];
    const ResultSpec& spec = specs[r];
    if (!(t.carrier()->exact_class() == expected_class(r)))
      throw ProviderContractError("carrier", fmt::format("{}: result {} lives on {}, not on {}", text(who), r,
                                                         t.carrier()->class_name(), expected_class(r).name()));
    if (t.carrier()->is_released())
      throw ProviderContractError("physical size", fmt::format("{}: result {}'s carrier is released", text(who), r));
    if (t.offset() + t.layout().cosize() > t.carrier()->size())
      throw ProviderContractError("physical size",
                                  fmt::format("{}: result {} spans {} slots from offset {} of a carrier of {}", text(who), r,
                                              t.layout().cosize(), t.offset(), t.carrier()->size()));
    if (&t.dtype() != &spec.dtype())
      throw ProviderContractError("dtype", fmt::format("{}: result {} has dtype {}, the spec says {}", text(who), r,
                                                       t.dtype().name(), spec.dtype().name()));
    if (!(t.shape() == spec.shape()))
      throw ProviderContractError("shape", fmt::format("{}: result {} has shape {}, the spec says {}", text(who), r,
                                                       t.shape().to_string(), spec.shape().to_string()));
    if (!(t.layout() == spec.layout()))
      throw ProviderContractError("layout", fmt::format("{}: result {} has layout {}, the spec says {}", text(who), r,
                                                        t.layout().to_string(), spec.layout().to_string()));
    if (const auto& alias = spec.alias_of()) {
      if (!t.is(std::get<Tensor>(invocation.operands()[*alias])))
        throw ProviderContractError("alias", fmt::format("{}: result {} must be operand {} itself (alias_of)", text(who), r,
                                                         *alias));
    } else {
      // operation-semantics: a result without alias_of may be a distinct
      // Tensor over an operand's storage (ordinary view rules); handing back
      // an operand object itself is an undeclared alias.
      for (std::size_t i = 0; i < invocation.operands().size(); ++i)
        if (const Tensor* in = std::get_if<Tensor>(&invocation.operands()[i]); in && in->is(t))
          throw ProviderContractError("alias", fmt::format("{}: result {} is operand {} itself but declares no "
                                                           "alias_of",
                                                           text(who), r, i));
    }
  }
  // One Tensor object published as two results would carry one autograd
  // slot for two results; distinct results are distinct objects.
  for (std::size_t r = 1; r < outputs.size(); ++r)
    for (std::size_t q = 0; q < r; ++q)
      if (outputs[r].is(outputs[q]) && !(specs[r].alias_of() && specs[q].alias_of()))
        throw ProviderContractError("alias", fmt::format("{}: result {} is result {} itself", text(who), r, q));
  scope.check(who);
}

// Publication: declared mutations become one public versioned change each,
// then the autograd node attaches (operation-semantics.md, "Automatic
// differentiation belongs to the semantic definition"). Everything that can
// fail (the writability of every mutated carrier, building the node) comes
// before the first version step; the attachment itself cannot fail, and it
// snapshots the published versions. The validated result's outputs are
// moved out, not copied (the result is spent).
//
// A published output carries no node but the definition's: an output that
// is not an exact-object alias and arrives with a node (a view the provider
// made with graph construction re-enabled, a tensor with history it kept)
// is published as a detached handle on the same storage, so a
// NON_DIFFERENTIABLE or unrecorded call returns node-free results. An
// aliased output is the operand itself and keeps the operand's own history.
std::vector<Tensor> publish(const std::shared_ptr<const ResolvedInvocation>& invocation, ProviderResult&& result,
                            bool graph, ProviderScope& scope, const std::shared_ptr<Operation>& target) {
  const std::vector<Carrier*>& declared = scope.declared();
  for (const Carrier* c : declared) c->require_writable(invocation->operation().c_str());  // all, before any bump
  std::vector<Tensor> outputs = extension::detail::ProviderResultAccess::take_outputs(result);
  const std::span<const ResultSpec> specs = invocation->results();
  for (std::size_t r = 0; r < outputs.size(); ++r)
    if (!specs[r].alias_of() && outputs[r].autograd_ctx()) outputs[r] = outputs[r].detach();
  const AutogradHooks* hooks = graph ? &autograd_hooks() : nullptr;
  const std::shared_ptr<Operation> node = hooks ? hooks->prepare_definition_node(invocation, outputs, target) : nullptr;
  scope.commit();  // nothing below can fail
  for (Carrier* c : declared) c->bump_version();
  if (node) hooks->attach_definition_node(node, outputs);
  return outputs;
}

// What every route needs: the invocation (shared: a node keeps it for
// backward) and whether the call builds a graph (decided once, at entry).
struct Call {
  const std::shared_ptr<const ResolvedInvocation>& invocation;
  bool graph;
  std::shared_ptr<Operation> target;  // dispatch_op's Operation, when the call came through one
};

// The dispatch record's executor for the plan (capability_registry::Executor,
// KernelPatterns): the candidates whose pattern matches the plan statically
// (R11.3), in preference order, frozen when the class was sealed; so the
// gate's one lookup also chose what may run, and nothing is matched again
// per call.
std::vector<Tensor> run_independent(const Call& call, const Carrier& prototype,
                                    const extension::detail::ClassDefinition& record,
                                    const std::vector<const extension::detail::Candidate*>& matched,
                                    PipelineTrace* trace) {
  const ResolvedInvocation& invocation = *call.invocation;
  const Who who{&invocation, &prototype};
  const OperationPlan& plan = invocation.plan();
  // A pattern serves the definition it was declared for (a name names one
  // registered definition, but a call may bind an unregistered one); opcheck
  // may pin one pattern, the others then skipped as if absent.
  const std::string* const pinned = pinned_kernel_id;
  const auto runs = [&](const extension::detail::Candidate* c) {
    return c->pattern->operation_ptr().get() == &invocation.definition() &&
           (!pinned || c->pattern->kernel_id() == *pinned);
  };
  const auto first = std::find_if(matched.begin(), matched.end(), runs);
  if (first == matched.end())
    throw UnsupportedOperationPlan(fmt::format("{} has no kernel pattern for the plan {}.", prototype.class_name(),
                                               plan.to_string()),
                                   plan);
  // R11.4-R11.5: preference order; Unsupported moves on, anything else is
  // terminal.
  if (trace) {
    trace->route = "kernel patterns";
    for (auto it = first; it != matched.end(); ++it)
      if (runs(*it))
        trace->candidates.push_back(CandidateTrace{(*it)->pattern->kernel_id(), (*it)->source,
                                                   (*it)->pattern->preference(), CandidateTrace::Outcome::NotReached,
                                                   {}});
  }
  ProviderScope scope(invocation);  // before the first provider callback (prepare must not mutate)
  std::string reasons;
  std::size_t k = 0;  // the position among the matched candidates
  for (auto it = first; it != matched.end(); ++it) {
    if (!runs(*it)) continue;
    const extension::detail::Candidate* c = *it;
    const std::size_t position = k++;
    extension::KernelPattern::Prepared prepared = c->pattern->prepare()(invocation, *c->interface);
    if (const auto* no = std::get_if<extension::Unsupported>(&prepared)) {
      scope.decline();
      reasons += fmt::format("{}kernel '{}' ({}): {}", reasons.empty() ? "" : "; ", c->pattern->kernel_id(), c->source,
                             no->reason());
      if (trace) {
        trace->candidates[position].outcome = CandidateTrace::Outcome::Declined;
        trace->candidates[position].reason = no->reason();
      }
      continue;
    }
    const auto& kernel = std::get<extension::PreparedKernel>(prepared);
    if (!(kernel.interface().compatibility_identity() == c->interface->compatibility_identity()))
      throw TypeError(fmt::format("{}: kernel '{}' prepared a launch for interface {}, not the provider's {}", text(who),
                                  c->pattern->kernel_id(), kernel.interface().describe(), c->interface->describe()));
    if (trace) {
      trace->candidates[position].outcome = CandidateTrace::Outcome::Ran;
      trace->ran = c->pattern->kernel_id();
    }
    ProviderResult result = settle(kernel.submit()());
    validate(invocation, result, [&record](std::size_t) { return record.cls; }, scope, who);
    return publish(call.invocation, std::move(result), call.graph, scope, call.target);
  }
  scope.check(who);
  throw UnsupportedOperationPlan(fmt::format("{}: every kernel pattern for the plan {} declined at run time: {}.",
                                             prototype.class_name(), plan.to_string(), reasons),
                                 plan);
}

std::vector<Tensor> run_composite(const Call& call, const Carrier& prototype,
                                  const extension::detail::ClassDefinition& record, PipelineTrace* trace) {
  const ResolvedInvocation& invocation = *call.invocation;
  if (trace) trace->route = "composite provider";
  const Who who{&invocation, &prototype};
  const extension::CompositeProvider& composite = *record.definition->composite();
  ProviderScope scope(invocation);  // before the first provider callback
  // R6.2: one exact concrete class per result, validated before prepare.
  const std::vector<CarrierClass> classes = composite.result_carriers()(prototype, invocation);
  if (classes.size() != invocation.results().size())
    throw ValueError(fmt::format("{}: result_carriers named {} classes for {} results", text(who), classes.size(),
                                 invocation.results().size()));
  for (const CarrierClass& c : classes)
    if (!c.traits().derives_carrier || c.traits().is_root || extension::detail::is_framework_base(c))
      throw TypeError(fmt::format("{}: result_carriers named {}, not a concrete Carrier class", text(who), c.name()));
  extension::CompositeProvider::Prepared prepared = composite.prepare()(prototype, invocation);
  if (const auto* no = std::get_if<extension::Unsupported>(&prepared)) {
    scope.check(who);
    throw UnsupportedOperationPlan(fmt::format("{} declined the plan {} at run time: {}.", prototype.class_name(),
                                               invocation.plan().to_string(), no->reason()),
                                   invocation.plan());
  }
  if (trace) trace->ran = "composite provider";
  ProviderResult result = settle(std::get<extension::PreparedComposite>(prepared).submit()());
  validate(invocation, result, [&classes](std::size_t r) { return classes[r]; }, scope, who);
  return publish(call.invocation, std::move(result), call.graph, scope, call.target);
}

}  // namespace

namespace {
// What the gate's admission chose: an independent class's matched kernel
// patterns (the record is the executor's owner), or a dependent class's
// composite provider (the record is found by class).
std::vector<Tensor> run_gated(const Call& call, const Carrier& prototype, const storage::Admission& admission,
                              PipelineTrace* trace) {
  const GraphConstructionOff providers_record_nothing;  // call.graph was decided at entry
  using capability_registry::ExecutorKind;
  const capability_registry::Executor& executor = admission.executor;
  if (executor.kind == ExecutorKind::KernelPatterns) {
    const auto& record = *static_cast<const extension::detail::ClassDefinition*>(executor.owner);
    const auto& matched = *static_cast<const std::vector<const extension::detail::Candidate*>*>(executor.target);
    return run_independent(call, prototype, record, matched, trace);
  }
  const extension::detail::ClassDefinition* record = extension::detail::find_definition_fast(prototype.exact_class());
  if (executor.kind != ExecutorKind::CompositeProvider || !record || !record->dependent)
    throw RuntimeError(fmt::format("{}: {} has no carrier definition", call.invocation->operation(),
                                   prototype.class_name()));
  return run_composite(call, prototype, *record, trace);
}
}  // namespace

std::vector<Tensor> run_definition_backed(const std::shared_ptr<const ResolvedInvocation>& invocation,
                                          const Carrier& prototype, PipelineTrace* trace) {
  const storage::Admission admission = storage::gate(prototype, invocation->plan());  // before any work
  return run_gated(Call{invocation, graph_would_attach(*invocation), nullptr}, prototype, admission, trace);
}

bool graph_would_attach(const ResolvedInvocation& invocation) {
  const operation::OperationDefinition& d = invocation.definition();
  if (!d.is_differentiable() || !autograd_hooks().grad_enabled()) return false;
  // core-concepts 6.2: some result is differentiable (exactly Float32) ...
  const std::span<const ResultSpec> results = invocation.results();
  if (std::none_of(results.begin(), results.end(), [](const ResultSpec& r) { return &r.dtype() == &DType::Float32(); }))
    return false;
  // ... and some schema-differentiable operand is a differentiable Tensor
  // (a Float32 tensor takes part in every graph: no opt-in flag).
  const std::span<const operation::OperandSpec> specs = d.schema().operands();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&invocation.operands()[i]);
    if (specs[i].differentiable() && t && t->is_differentiable()) return true;
  }
  return false;
}

namespace {
// execute_definition_backed after its gate.
std::vector<Tensor> execute_admitted(const std::shared_ptr<const ResolvedInvocation>& invocation,
                                     const Carrier& prototype, const storage::Admission& admission, const Output& out,
                                     PipelineTrace* trace, const std::shared_ptr<Operation>& target) {
  if (out) {
    const bool graph = graph_would_attach(*invocation);
    admit_definition_output(*invocation, prototype, out, graph);
    const GraphConstructionOff storage_callbacks_record_nothing;  // the write into `out` too
    const std::vector<Tensor> results = run_gated(Call{invocation, false, nullptr}, prototype, admission, trace);
    return {write_definition_output(*invocation, results.front(), out)};
  }
  return run_gated(Call{invocation, graph_would_attach(*invocation), target}, prototype, admission, trace);
}
}  // namespace

std::vector<Tensor> execute_definition_backed(const std::shared_ptr<const ResolvedInvocation>& invocation,
                                              const Carrier& prototype, const Output& out, PipelineTrace* trace,
                                              const std::shared_ptr<Operation>& target) {
  const storage::Admission admission = storage::gate(prototype, invocation->plan());  // UnsupportedOperationPlan first
  return execute_admitted(invocation, prototype, admission, out, trace, target);
}

std::vector<Tensor> execute_by_dispatch_hook(const std::shared_ptr<const ResolvedInvocation>& invocation,
                                             const Carrier& prototype, const std::shared_ptr<Operation>& target) {
  const ResolvedInvocation& inv = *invocation;
  storage::gate(prototype, inv.plan());  // UnsupportedOperationPlan before any work
  const Who who{&inv, &prototype};
  const bool graph = graph_would_attach(inv);
  const AutogradHooks& hooks = autograd_hooks();
  const std::shared_ptr<Operation> op = hooks.dispatch_hook_operation(prototype, inv.plan(), inv.operation(), target);
  // The result storage, allocated on the class (an aliased result is the
  // operand itself), then the operands as the hook sees them: tensors as
  // bound, weak scalars materialised to the plan's convert_to dtype.
  std::vector<Tensor> outputs;
  for (const ResultSpec& r : inv.results()) {
    if (r.alias_of()) {
      outputs.push_back(std::get<Tensor>(inv.operands()[*r.alias_of()]));
      continue;
    }
    outputs.emplace_back(prototype.allocate_like(r.layout().cosize(), true, &r.dtype(), false), 0, r.layout());
  }
  std::vector<KernelOperand> operands;
  for (std::size_t i = 0; i < inv.operands().size(); ++i) {
    if (const Tensor* t = std::get_if<Tensor>(&inv.operands()[i])) operands.emplace_back(*t);
    else if (const WeakScalar* w = std::get_if<WeakScalar>(&inv.operands()[i]))
      operands.emplace_back(frontend::materialize(*w, inv.plan().operands()[i], inv.operation()));
  }
  ProviderScope scope(inv);  // before the hook's computation runs
  const Attributes none;
  const DispatchedCall call{inv.operation(), inv.plan(), operands, none, outputs, &inv};
  {
    const GraphConstructionOff provider_records_nothing;  // `graph` was decided at entry
    hooks.run_dispatch_hook(*op, prototype, inv.plan(), call);
  }
  ProviderResult result(std::move(outputs));
  const CarrierClass cls = prototype.exact_class();
  validate(inv, result, [cls](std::size_t) { return cls; }, scope, who);
  return publish(invocation, std::move(result), graph, scope, op);
}

operation::ResolvedInvocation builtin_invocation(const operation::BoundOperationCall& call,
                                                 const OperationPlan& invocation_plan, const Shape& published) {
  const std::span<const operation::OperandSpec> specs = call.definition().schema().operands();
  const bool saves = std::any_of(specs.begin(), specs.end(), [](const auto& o) { return o.differentiable(); });
  std::array<std::size_t, 3> saved{};
  std::size_t count = 0;
  bool more = false;  // more than three Tensor operands: the general form
  if (saves)
    for (std::size_t i = 0; i < call.operands().size(); ++i)
      if (std::holds_alternative<Tensor>(call.operands()[i])) {
        if (count < saved.size()) saved[count] = i;
        more = more || count == saved.size();
        ++count;
      }
  const ResultSpec result = ResultSpec::compact(invocation_plan.output(), published);
  const std::string& name = call.definition().name();
  // The braced forms keep the one result inline (no vector per call).
  if (!more) {
    switch (count) {
      case 0: return ResolvedInvocation(call, invocation_plan, {result}, {}, {}, name);
      case 1: return ResolvedInvocation(call, invocation_plan, {result}, {}, {saved[0]}, name);
      case 2: return ResolvedInvocation(call, invocation_plan, {result}, {}, {saved[0], saved[1]}, name);
      default: return ResolvedInvocation(call, invocation_plan, {result}, {}, {saved[0], saved[1], saved[2]}, name);
    }
  }
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < call.operands().size(); ++i)
    if (std::holds_alternative<Tensor>(call.operands()[i])) all.push_back(i);
  return ResolvedInvocation(call, invocation_plan, std::vector<ResultSpec>{result}, {}, std::move(all), name);
}

Tensor run_builtin_on_definition(const operation::BoundOperationCall& call, const OperationPlan& invocation_plan,
                                 const Shape& published, const Carrier& prototype, const storage::Admission& admission,
                                 const Output& out, const std::shared_ptr<Operation>& target) {
  const auto invocation =
      std::make_shared<const ResolvedInvocation>(builtin_invocation(call, invocation_plan, published));
  return std::move(execute_admitted(invocation, prototype, admission, out, nullptr, target).front());
}

std::vector<Tensor> run_definition_backed_without_node(const std::shared_ptr<const ResolvedInvocation>& invocation,
                                                       const Carrier& prototype) {
  const storage::Admission admission = storage::gate(prototype, invocation->plan());
  return run_gated(Call{invocation, false, nullptr}, prototype, admission, nullptr);
}

}  // namespace strideweave::frontend
