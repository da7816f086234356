// Shared helpers of the strideweave command.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
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

WeakScalar parse_scalar_literal(const std::string& text) {
  if (text == "true" || text == "True") return WeakScalar(true);
  if (text == "false" || text == "False") return WeakScalar(false);
  if (text == "nan") return WeakScalar(std::nan(""));
  if (text == "inf") return WeakScalar(HUGE_VAL);
  if (text == "-inf") return WeakScalar(-HUGE_VAL);
  // An integer literal: optional sign and digits only.
  std::size_t i = (text.size() > 0 && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  bool digits = i < text.size();
  for (std::size_t j = i; j < text.size(); ++j) digits = digits && std::isdigit(static_cast<unsigned char>(text[j]));
  if (digits) {
    int128 v = 0;
    const int128 limit = (static_cast<int128>(1) << 126);
    for (std::size_t j = i; j < text.size(); ++j) {
      v = v * 10 + (text[j] - '0');
      if (v > limit) throw ValueError(fmt::format("scalar literal '{}' is too large", text));
    }
    return WeakScalar::integer(text[0] == '-' ? -v : v);
  }
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    throw ValueError(fmt::format("'{}' is not a real scalar literal", text));
  return WeakScalar(d);
}

}  // namespace strideweave::cli
