// `strideweave run OPERATION ARG...`: evaluates one public operation through
// call_operation (call.h) on small literal inputs (docs/cli.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "cli.h"
#include "values_json.h"

namespace strideweave::cli {
namespace {

constexpr const char* kUsage =
    "usage: strideweave run OPERATION ARG... [--carrier generic|cpu] [--option NAME=JSON]...\n"
    "                       [--accumulator DTYPE] [--arithmetic binary32|binary32_fused] [--json]\n"
    "       strideweave run --list [--json]\n"
    "  ARG: tensor:DTYPE:VALUES (VALUES a JSON nested list, outer list = axis 0; dtype float32, int32 or bool)\n"
    "       or scalar:LITERAL (a weak scalar)\n";

int usage(const std::string& why) {
  std::cerr << "strideweave run: " << why << "\n" << kUsage;
  return 2;
}

CallOperand parse_operand(const std::string& arg, const std::string& carrier) {
  if (arg.rfind("tensor:", 0) == 0) {
    const std::size_t colon = arg.find(':', 7);
    if (colon == std::string::npos)
      throw ValueError(fmt::format("run: argument '{}' is not tensor:DTYPE:VALUES", arg));
    const DType& dtype = DType::from_name(arg.substr(7, colon - 7));
    return tensor_from_json(dtype, arg.substr(colon + 1), carrier);
  }
  if (arg.rfind("scalar:", 0) == 0) return parse_scalar_literal(arg.substr(7));
  throw ValueError(fmt::format("run: argument '{}' is neither tensor:DTYPE:VALUES nor scalar:LITERAL", arg));
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

}  // namespace

int run_run(const std::vector<std::string>& args) {
  bool as_json = false;
  bool list = false;
  std::string operation;
  std::vector<std::string> operand_args;
  std::string carrier = "cpu";
  std::vector<std::pair<std::string, std::string>> option_args;
  std::string accumulator, arithmetic;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--json") as_json = true;
    else if (a == "--list") list = true;
    else if (a == "--carrier") {
      if (!has_value) return usage("--carrier needs a value");
      carrier = args[++i];
      if (carrier != "generic" && carrier != "cpu") return usage(fmt::format("unknown carrier '{}'", carrier));
    } else if (a == "--option") {
      if (!has_value) return usage("--option needs NAME=JSON");
      const std::string& spec = args[++i];
      const std::size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return usage(fmt::format("--option '{}' is not NAME=JSON", spec));
      const std::string name = spec.substr(0, eq);
      for (const auto& [seen, _] : option_args)
        if (seen == name) return usage(fmt::format("option '{}' given twice", name));
      option_args.emplace_back(name, spec.substr(eq + 1));
    } else if (a == "--accumulator") {
      if (!has_value) return usage("--accumulator needs a dtype");
      accumulator = args[++i];
    } else if (a == "--arithmetic") {
      if (!has_value) return usage("--arithmetic needs a value (binary32 or binary32_fused)");
      arithmetic = args[++i];
    } else if (a.rfind("--", 0) == 0) return usage(fmt::format("unknown flag '{}'", a));
    else if (operation.empty()) operation = a;
    else operand_args.push_back(a);
  }
  if (list) {
    if (!operation.empty() || !option_args.empty() || !accumulator.empty() || !arithmetic.empty())
      return usage("--list takes no operation, arguments or options");
    return list_operations(as_json);
  }
  if (operation.empty()) return usage("no operation given");

  try {
    if (!find_callable(operation))
      throw NotImplementedError(fmt::format("run: no public operation named '{}' (see strideweave run --list)", operation));
    std::vector<CallOperand> operands;
    for (const std::string& a : operand_args) operands.push_back(parse_operand(a, carrier));
    CallOptions options;
    for (const auto& [name, text] : option_args) options.emplace(name, option_from_json(name, text));
    ExecutionRequest execution(accumulator.empty() ? nullptr : &DType::from_name(accumulator));
    if (!arithmetic.empty()) execution.arithmetic = arithmetic_from_value(arithmetic);

    const CallResult result = call_operation(operation, operands, options, execution);

    // One plan and one result print as objects; otherwise both as lists.
    const bool several = result.plans.size() != 1 || result.results.size() != 1;
    if (as_json) {
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
    return report_error(e, as_json);
  }
}

}  // namespace strideweave::cli
