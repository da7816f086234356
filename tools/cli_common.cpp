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

// A progress bar on stderr, redrawn in place; ends its line at 100%.
void draw_progress(std::int64_t done, std::int64_t total) {
  constexpr int kWidth = 30;
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  std::cerr << fmt::format("\r[{}{}] {:3d}% {:.1f}/{:.1f} MiB", std::string(static_cast<std::size_t>(filled), '#'),
                           std::string(static_cast<std::size_t>(kWidth - filled), '.'),
                           static_cast<int>(fraction * 100.0), static_cast<double>(done) / (1 << 20),
                           static_cast<double>(total) / (1 << 20));
  if (done >= total) std::cerr << "\n";
  std::cerr.flush();
}

}  // namespace strideweave::cli
