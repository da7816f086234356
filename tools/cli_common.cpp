// Shared helpers of the strideweave command.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli.h"

namespace strideweave::cli {

json plan_to_json(const OperationPlan& plan) {
  json operands = json::array();
  for (const OperandPlan& o : plan.operands()) {
    operands.push_back({{"role", value_of(o.role())},
                        {"dtype", o.dtype() ? json(o.dtype()->name()) : json(nullptr)},
                        {"convert_to", o.convert_to().name()}});
  }
  return json{{"operation", plan.operation()},
              {"operands", operands},
              {"compute", name_of(plan.compute())},
              {"accumulation", plan.accumulation() ? json(name_of(*plan.accumulation())) : json(nullptr)},
              {"accumulator_dtype", plan.accumulator_dtype() ? json(plan.accumulator_dtype()->name()) : json(nullptr)},
              {"output", plan.output().name()}};
}

const CLI::Validator& not_a_flag() {
  static const CLI::Validator v(
      [](std::string& value) {
        return value.empty() || value[0] != '-' ? std::string()
                                                : fmt::format("needs a value, not the flag-like word '{}'", value);
      },
      "");
  return v;
}

void require_registered_operations(const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (!find_operation(name))
      throw NotImplementedError(fmt::format("check: no operation named '{}' (strideweave plans lists them)", name));
}

int report_error(const Error& error, bool as_json) {
  if (as_json) {
    std::cout << json{{"error", error.type_name()}, {"message", error.message()}}.dump() << "\n";
  } else {
    std::cerr << "strideweave: " << error.type_name() << ": " << error.message() << "\n";
  }
  return 1;
}

void add_operation_option_flag(CLI::App& sub, std::vector<std::string>& specs, const std::string& help) {
  sub.add_option("--option", specs, help)
      ->type_name("NAME=JSON")
      ->check(not_a_flag())
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& spec) {
            const std::size_t eq = spec.find('=');
            return eq == std::string::npos || eq == 0 ? fmt::format("'{}' is not NAME=JSON", spec) : std::string();
          },
          ""));
}

}  // namespace strideweave::cli
