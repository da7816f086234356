// explain(): one call, step by step. See <strideweave/explain.h>.
#include <strideweave/explain.h>

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <sstream>

#include "frontend/call_support.h"
#include "frontend/definition_dispatch.h"
#include "frontend/dispatch.h"
#include "frontend/pipeline.h"
#include "extension/registry.h"

namespace strideweave {

using OperationOperand = operation::CallOperand;

const char* name_of(CandidateTrace::Outcome outcome) noexcept {
  switch (outcome) {
    case CandidateTrace::Outcome::Ran: return "ran";
    case CandidateTrace::Outcome::Declined: return "declined";
    case CandidateTrace::Outcome::NotReached: return "not reached";
  }
  return "?";
}

namespace {

std::string describe(const OperationOperand& operand) {
  if (const Tensor* t = std::get_if<Tensor>(&operand))
    return fmt::format("tensor {} {} on {}", t->dtype().name(), t->shape().to_string(), t->carrier()->class_name());
  if (const WeakScalar* s = std::get_if<WeakScalar>(&operand)) return "scalar " + s->to_string();
  return operation::to_string(std::get<operation::Structural>(operand).value);
}

std::string bound_call_text(const operation::BoundOperationCall& call) {
  std::string out = call.definition().name() + "(";
  const auto specs = call.definition().schema().operands();
  for (std::size_t i = 0; i < call.operands().size(); ++i)
    out += fmt::format("{}{}={}", i ? ", " : "", specs[i].name(), describe(call.operands()[i]));
  bool first = true;
  for (const auto& [name, value] : call.options()) {
    out += fmt::format("{}{}={}", first ? "; " : ", ", name, operation::to_string(value));
    first = false;
  }
  return out + ")";
}

}  // namespace

Explanation explain(const operation::OperationDefinition& definition, std::vector<OperationOperand> operands,
                    operation::OptionMap options) {
  Explanation e;
  e.operation = definition.name();
  try {
    // bind: a copy, so the real call below binds the caller's operands itself.
    const auto call = operation::bind(definition, operands, options);
    e.bound_call = bound_call_text(*call);
    // resolve, released-state check, alias rule.
    const auto invocation = frontend::admit(definition, operands, options);
    e.plan = invocation->plan();
    e.results.assign(invocation->results().begin(), invocation->results().end());
    const Carrier& prototype = frontend::dispatch_carrier(*invocation);
    e.carrier = prototype.class_name();
    e.placement = prototype.placement();
    // The capability entry (the gate's own answer).
    e.admitted_by = prototype.require_operation_plan(invocation->plan());
    e.admitted_axes = prototype.execution_axes(*e.admitted_by);
    if (extension::detail::find_definition(prototype.exact_class())) {
      frontend::PipelineTrace trace;
      try {
        e.outputs = frontend::execute_definition_backed(invocation, prototype, Output{}, &trace);
      } catch (...) {
        e.route = trace.route;
        e.candidates = std::move(trace.candidates);
        e.ran = trace.ran;
        throw;
      }
      e.route = trace.route;
      e.candidates = std::move(trace.candidates);
      e.ran = trace.ran;
    } else {
      e.route = "kernel table";
      e.outputs = definition(std::move(operands), std::move(options));
      e.ran = fmt::format("{}'s kernel for {}", prototype.class_name(), invocation->plan().to_string());
    }
  } catch (const Error& error) {
    e.error_type = error.type_name();
    e.error_message = error.what();
  }
  return e;
}

std::string to_text(const Explanation& e) {
  std::ostringstream out;
  out << "operation:  " << e.operation << "\n";
  if (!e.bound_call.empty()) out << "bound call: " << e.bound_call << "\n";
  if (e.plan) out << "plan:       " << e.plan->to_string() << "\n";
  for (std::size_t r = 0; r < e.results.size(); ++r) {
    const operation::ResultSpec& s = e.results[r];
    out << fmt::format("result {}:   {} {} layout {}{}\n", r, s.dtype().name(), s.shape().to_string(),
                       s.layout().to_string(), s.alias_of() ? fmt::format(" alias_of={}", *s.alias_of()) : "");
  }
  if (!e.carrier.empty()) out << "carrier:    " << e.carrier << "\n";
  if (e.placement) out << "placement:  " << e.placement->to_string() << "\n";
  if (e.admitted_by) {
    out << "admitted:   " << e.admitted_by->to_plan().to_string() << "\n";
    if (e.admitted_axes) {
      out << "            axes:";
      for (ExecutionAxis axis : all_execution_axes())
        out << " " << name_of(axis) << "=" << name_of(e.admitted_axes->level(axis));
      out << "\n";
    }
  }
  if (!e.route.empty()) out << "route:      " << e.route << "\n";
  for (const CandidateTrace& c : e.candidates)
    out << fmt::format("candidate:  {} ({}, preference {}): {}{}\n", c.kernel_id, c.source, c.preference,
                       name_of(c.outcome), c.reason.empty() ? "" : ": " + c.reason);
  if (e.ran) out << "ran:        " << *e.ran << "\n";
  if (e.error_type) out << "error:      " << *e.error_type << ": " << *e.error_message << "\n";
  return out.str();
}

}  // namespace strideweave
