// `strideweave run OPERATION ARG...`: evaluates one public operation through
// call_operation (call.h) on small literal inputs (docs/cli.md).
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

CallOperand call_operand(const OperandLiteral& literal, const std::string& carrier) {
  if (literal.form == OperandLiteral::Form::Tensor)
    return tensor_from_json(DType::from_name(literal.dtype), literal.value, carrier);
  return weak_scalar_of(literal.value, "scalar literal");
}

int list_operations(bool as_json) {
  const std::vector<CallableOperation>& ops = callable_operations();
  if (as_json) {
    json out = json::array();
    for (const CallableOperation& c : ops) {
      if (c.internal) continue;
      json options = json::array();
      for (const OptionDoc& o : c.options)
        options.push_back({{"name", o.name}, {"default", o.default_value}, {"meaning", o.meaning}});
      out.push_back(
          {{"name", c.name}, {"signature", c.signature}, {"options", options}, {"accumulator", c.accepts_accumulator},
           {"arithmetic", c.accepts_arithmetic}});
    }
    std::cout << json{{"operations", out}}.dump() << "\n";
    return 0;
  }
  std::size_t listed = 0;
  for (const CallableOperation& c : ops) {
    if (c.internal) continue;
    ++listed;
    std::cout << c.signature << (c.accepts_accumulator ? "  [--accumulator DTYPE]" : "")
              << (c.accepts_arithmetic ? "  [--arithmetic binary32|binary32_fused]" : "") << "\n";
    for (const OptionDoc& o : c.options)
      std::cout << fmt::format("    --option {}=JSON  (default {}): {}\n", o.name, o.default_value, o.meaning);
  }
  std::cout << listed << " operations\n";
  return 0;
}

struct RunArguments {
  std::string operation;
  std::vector<std::string> operands;
  std::string carrier = "cpu";
  std::vector<std::string> options;  // NAME=JSON, in the order given
  std::string accumulator, arithmetic;
  bool as_json = false, list = false;
  CLI::Option* accumulator_given = nullptr;
  CLI::Option* arithmetic_given = nullptr;
};

int run_run(const RunArguments& a) {
  if (a.list) {
    if (!a.operation.empty() || !a.options.empty() || a.accumulator_given->count() > 0 ||
        a.arithmetic_given->count() > 0)
      throw UsageError("--list takes no operation, arguments or options");
    return list_operations(a.as_json);
  }
  if (a.operation.empty()) throw UsageError("no operation given (or --list)");
  // The whole command line is read before anything is looked up or built: a
  // usage error wins over every error of the library.
  const std::vector<std::pair<std::string, JsonNode>> option_args = parse_option_args(a.options);
  std::vector<OperandLiteral> literals;
  for (const std::string& arg : a.operands) literals.push_back(read_operand_literal(arg, TensorOperands::Values));

  try {
    if (!find_callable(a.operation))
      throw NotImplementedError(
          fmt::format("run: no public operation named '{}' (see strideweave run --list)", a.operation));
    std::vector<CallOperand> operands;
    for (const OperandLiteral& literal : literals) operands.push_back(call_operand(literal, a.carrier));
    CallOptions options;
    for (const auto& [name, value] : option_args) options.emplace(name, option_from_json(name, value));
    ExecutionRequest execution(a.accumulator_given->count() > 0 ? &DType::from_name(a.accumulator) : nullptr);
    if (a.arithmetic_given->count() > 0) execution.arithmetic = arithmetic_from_value(a.arithmetic);

    const CallResult result = call_operation(a.operation, operands, options, execution);

    // One plan and one result print as objects; otherwise both as lists.
    const bool several = result.plans.size() != 1 || result.results.size() != 1;
    if (a.as_json) {
      std::vector<std::string> plans, results;
      for (const OperationPlan& p : result.plans) plans.push_back(plan_to_json(p).dump());
      for (const Tensor& t : result.results) results.push_back(tensor_json(t));
      auto joined = [several](const std::vector<std::string>& items) {
        return several ? fmt::format("[{}]", fmt::join(items, ",")) : items.front();
      };
      std::cout << fmt::format("{{\"plan\":{},\"result\":{}}}\n", joined(plans), joined(results));
    } else {
      for (const OperationPlan& p : result.plans) std::cout << "plan:   " << p.to_string() << "\n";
      for (const Tensor& t : result.results) std::cout << "result: " << tensor_text(t) << "\n";
    }
    return 0;
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
}

}  // namespace

Command add_run_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("run", "Evaluate one public operation on literal inputs (call_operation)");
  auto a = std::make_shared<RunArguments>();
  sub->add_option("OPERATION", a->operation, "A public operation (strideweave run --list lists them)")->type_name("");
  sub->add_option("ARG", a->operands,
                  "The operands in the operation's order: tensor:DTYPE:VALUES (a fresh tensor; DTYPE float32, "
                  "int32 or bool; VALUES a JSON nested list, outer list = axis 0) or scalar:LITERAL (a weak scalar)")
      ->type_name("");
  sub->add_option("--carrier", a->carrier, "The carrier of every tensor operand")
      ->type_name("NAME")
      ->check(not_a_flag())
      ->check(CLI::IsMember(carrier_choices()))
      ->capture_default_str();
  add_operation_option_flag(*sub, a->options, "A named option of the operation (run --list shows each one's); repeatable");
  a->accumulator_given =
      sub->add_option("--accumulator", a->accumulator, "The accumulator dtype (float64) of reduce_sum or matmul")
          ->type_name("DTYPE")
          ->check(not_a_flag());
  a->arithmetic_given =
      sub->add_option("--arithmetic", a->arithmetic,
                      "An explicit compute arithmetic: binary32 (the strict default) or binary32_fused (matmul)")
          ->type_name("NAME")
          ->check(not_a_flag());
  sub->add_flag("--json", a->as_json, "Print {\"plan\": PLAN, \"result\": RESULT} on one line");
  sub->add_flag("--list", a->list, "List the operations run can call, with their options, and nothing else");
  sub->footer("Example: strideweave run add 'tensor:float32:[[1,2],[3,4]]' 'tensor:float32:[[10,20],[30,40]]' --json");
  return {sub, [a] { return run_run(*a); }};
}

}  // namespace strideweave::cli
