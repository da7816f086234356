// `strideweave plans --json` and `strideweave resolve OPERATION ARG...`.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"

namespace strideweave::cli {

int run_plans(const std::vector<std::string>& args) {
  bool as_json = false;
  for (const std::string& a : args) {
    if (a == "--json") as_json = true;
    else {
      std::cerr << "usage: strideweave plans [--json]\n";
      return 2;
    }
  }
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

int run_resolve(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string operation;
  std::vector<std::string> operand_args;
  std::string accumulator, arithmetic;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") as_json = true;
    else if (args[i] == "--accumulator" && i + 1 < args.size()) accumulator = args[++i];
    else if (args[i] == "--arithmetic" && i + 1 < args.size()) arithmetic = args[++i];
    else if (operation.empty()) operation = args[i];
    else operand_args.push_back(args[i]);
  }
  if (operation.empty()) {
    std::cerr << "usage: strideweave resolve OPERATION ARG... [--accumulator DTYPE] [--arithmetic NAME] --json\n"
                 "  ARG: dtype:NAME (a tensor operand) or scalar:LITERAL (a weak scalar)\n";
    return 2;
  }
  try {
    std::vector<PlanOperand> operands;
    for (const std::string& a : operand_args) {
      if (a.rfind("dtype:", 0) == 0) operands.emplace_back(DType::from_name(a.substr(6)));
      else if (a.rfind("scalar:", 0) == 0) operands.emplace_back(parse_scalar_literal(a.substr(7)));
      else throw ValueError(fmt::format("resolve: argument '{}' is neither dtype:NAME nor scalar:LITERAL", a));
    }
    const DType* acc = accumulator.empty() ? nullptr : &DType::from_name(accumulator);
    std::optional<OperationExecutionOptions> options;
    if (!arithmetic.empty()) options.emplace(operation, acc, arithmetic_from_value(arithmetic));
    const OperationPlan plan = options ? resolve_operation_plan(operation, operands, nullptr, &*options)
                                       : resolve_operation_plan(operation, operands, acc);
    if (as_json) std::cout << plan_to_json(plan).dump() << "\n";
    else std::cout << plan.to_string() << "\n";
    return 0;
  } catch (const Error& e) {
    return report_error(e, as_json);
  }
}

}  // namespace strideweave::cli
