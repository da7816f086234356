// `strideweave plans [--json]` and `strideweave resolve OPERATION ARG...`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli.h"
#include "literals.h"

namespace strideweave::cli {
namespace {

int run_plans(bool as_json) {
  const std::vector<OperationPlan> plans = resolvable_plans();
  if (as_json) {
    json out = json::array();
    for (const OperationPlan& p : plans) out.push_back(plan_to_json(p));
    std::cout << json{{"plans", out}}.dump() << "\n";
  } else {
    for (const OperationPlan& p : plans) std::cout << p.to_string() << "\n";
    std::cout << plans.size() << " plans\n";
  }
  return 0;
}

struct ResolveArguments {
  std::string operation;
  std::vector<std::string> operands;
  std::string accumulator, arithmetic;
  bool as_json = false;
  CLI::Option* accumulator_given = nullptr;
  CLI::Option* arithmetic_given = nullptr;
};

int run_resolve(const ResolveArguments& a) {
  // The whole command line is read before anything is looked up: a usage
  // error wins over every error of the library.
  std::vector<OperandLiteral> literals;
  for (const std::string& arg : a.operands) literals.push_back(read_operand_literal(arg, TensorOperands::DTypeNames));
  try {
    std::vector<PlanOperand> operands;
    for (const OperandLiteral& literal : literals) {
      if (literal.form == OperandLiteral::Form::DType) operands.emplace_back(DType::from_name(literal.dtype));
      else operands.emplace_back(weak_scalar_of(literal.value, "scalar literal"));
    }
    const DType* acc = a.accumulator_given->count() > 0 ? &DType::from_name(a.accumulator) : nullptr;
    std::optional<OperationExecutionOptions> options;
    if (a.arithmetic_given->count() > 0) options.emplace(a.operation, acc, arithmetic_from_value(a.arithmetic));
    const OperationPlan plan = options ? resolve_operation_plan(a.operation, operands, nullptr, &*options)
                                       : resolve_operation_plan(a.operation, operands, acc);
    if (a.as_json) std::cout << plan_to_json(plan).dump() << "\n";
    else std::cout << plan.to_string() << "\n";
    return 0;
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
}

}  // namespace

Command add_plans_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "plans", "Every plan resolvable_plans() gives with the default probes, in its deterministic order");
  auto as_json = std::make_shared<bool>(false);
  sub->add_flag("--json", *as_json, "Print {\"plans\": [PLAN, ...]} (the plan objects of docs/cli.md)");
  return {sub, [as_json] { return run_plans(*as_json); }};
}

Command add_resolve_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("resolve", "Resolve one call to its plan through the dtype policy");
  auto a = std::make_shared<ResolveArguments>();
  sub->add_option("OPERATION", a->operation, "A registered operation name (strideweave plans lists them)")
      ->required()
      ->type_name("");
  sub->add_option("ARG", a->operands,
                  "The operands in the operation's order: dtype:NAME (a tensor of that dtype) or scalar:LITERAL "
                  "(a weak scalar)")
      ->type_name("");
  a->accumulator_given =
      sub->add_option("--accumulator", a->accumulator, "The accumulator dtype (float64) of reduce_sum or matmul")
          ->type_name("DTYPE")
          ->check(not_a_flag());
  a->arithmetic_given =
      sub->add_option("--arithmetic", a->arithmetic, "An explicit compute arithmetic: binary32 or binary32_fused")
          ->type_name("NAME")
          ->check(not_a_flag());
  sub->add_flag("--json", a->as_json, "Print the plan object (docs/cli.md) instead of its text form");
  sub->footer("Example: strideweave resolve add dtype:int32 dtype:float32 --json");
  return {sub, [a] { return run_resolve(*a); }};
}

}  // namespace strideweave::cli
