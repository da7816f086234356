// `strideweave explain OPERATION ARG...`: one call of a registered operation
// on literal inputs, step by step (explain(), <strideweave/explain.h>;
// docs/cli.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>

#include "cli.h"
#include "literals.h"
#include "values_json.h"

namespace strideweave::cli {
namespace {

struct ExplainArguments {
  std::string operation;
  std::vector<std::string> operands;
  std::string carrier = "cpu";
  std::vector<std::string> options;  // NAME=JSON
  bool as_json = false;
};

json spec_to_json(const operation::ResultSpec& s) {
  json out = {{"dtype", s.dtype().name()},
              {"shape", s.shape().extents()},
              {"stride", s.layout().flat_strides() ? json(*s.layout().flat_strides()) : json(nullptr)},
              {"layout", s.layout().to_string()}};
  out["alias_of"] = s.alias_of() ? json(*s.alias_of()) : json(nullptr);
  return out;
}

json explanation_to_json(const Explanation& e) {
  json out = {{"operation", e.operation}, {"bound_call", e.bound_call}};
  out["plan"] = e.plan ? plan_to_json(*e.plan) : json(nullptr);
  json results = json::array();
  for (const operation::ResultSpec& s : e.results) results.push_back(spec_to_json(s));
  out["results"] = results;
  out["carrier"] = e.carrier;
  out["placement"] = e.placement ? json(e.placement->to_string()) : json(nullptr);
  if (e.admitted_by) {
    json axes = json::object();
    if (e.admitted_axes)
      for (ExecutionAxis axis : all_execution_axes()) axes[name_of(axis)] = name_of(e.admitted_axes->level(axis));
    out["admitted_by"] = {{"plan", plan_to_json(e.admitted_by->to_plan())}, {"axes", axes}};
  } else {
    out["admitted_by"] = nullptr;
  }
  out["route"] = e.route;
  json candidates = json::array();
  for (const CandidateTrace& c : e.candidates)
    candidates.push_back({{"kernel_id", c.kernel_id},
                          {"source", c.source},
                          {"preference", c.preference},
                          {"outcome", name_of(c.outcome)},
                          {"reason", c.reason}});
  out["candidates"] = candidates;
  out["ran"] = e.ran ? json(*e.ran) : json(nullptr);
  json outputs = json::array();
  for (const Tensor& t : e.outputs) outputs.push_back(json::parse(tensor_json(t)));
  out["outputs"] = outputs;
  out["error"] = e.error_type ? json{{"type", *e.error_type}, {"message", *e.error_message}} : json(nullptr);
  return out;
}

int run_explain(const ExplainArguments& a) {
  // The whole command line is read before anything is looked up or built.
  const std::vector<std::pair<std::string, JsonNode>> option_args = parse_option_args(a.options);
  std::vector<OperandLiteral> literals;
  for (const std::string& arg : a.operands) literals.push_back(read_operand_literal(arg, TensorOperands::Values));
  try {
    const std::shared_ptr<const operation::OperationDefinition> definition = operation::get_definition(a.operation);
    std::vector<operation::CallOperand> operands;
    for (const OperandLiteral& literal : literals) {
      if (literal.form == OperandLiteral::Form::Tensor)
        operands.emplace_back(tensor_from_json(DType::from_name(literal.dtype), literal.value, a.carrier));
      else
        operands.emplace_back(weak_scalar_of(literal.value, "scalar literal"));
    }
    operation::OptionMap options;
    for (const auto& [name, value] : option_args) options.emplace(name, option_from_json(name, value));
    const Explanation e = explain(*definition, std::move(operands), std::move(options));
    if (a.as_json) {
      std::cout << explanation_to_json(e).dump() << "\n";
    } else {
      std::cout << to_text(e);
      for (const Tensor& t : e.outputs) std::cout << "output:     " << tensor_text(t) << "\n";
    }
    return e.error_type ? 1 : 0;
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
}

}  // namespace

Command add_explain_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "explain", "Run one call of an operation on literal inputs and print each dispatch step (explain())");
  auto a = std::make_shared<ExplainArguments>();
  sub->add_option("OPERATION", a->operation, "A registered operation (strideweave run --list lists the public ones)")
      ->type_name("")
      ->required();
  sub->add_option("ARG", a->operands, "The operands, as for `strideweave run`: tensor:DTYPE:VALUES or scalar:LITERAL")
      ->type_name("");
  sub->add_option("--carrier", a->carrier, "The carrier of every tensor operand")
      ->type_name("NAME")
      ->check(not_a_flag())
      ->check(CLI::IsMember(carrier_choices()))
      ->capture_default_str();
  add_operation_option_flag(*sub, a->options, "A named option of the operation; repeatable");
  sub->add_flag("--json", a->as_json, "Print the record as one JSON object");
  sub->footer("Example: strideweave explain add 'tensor:float32:[1,2]' 'tensor:int32:[3,4]' --json");
  return {sub, [a] { return run_explain(*a); }};
}

}  // namespace strideweave::cli
