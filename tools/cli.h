// The strideweave command: shared helpers of its subcommands.
#pragma once

#include <strideweave/strideweave.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace strideweave::cli {

using json = nlohmann::ordered_json;  // keys print in the documented order

// A plan as the documented JSON object (dtype names in lower case, enum
// members by their names).
json plan_to_json(const OperationPlan& plan);

// Subcommands; each returns the process exit code.
int run_tour();
int run_plans(const std::vector<std::string>& args);
int run_resolve(const std::vector<std::string>& args);
int run_caps(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args);
// The shipped carriers named NAME (case-insensitive), or all when empty.
std::vector<std::pair<CarrierClass, std::string>> select_carriers(const std::string& wanted);
// `strideweave run OPERATION ARG...` and `strideweave run --list` (cmd_run.cpp).
int run_run(const std::vector<std::string>& args);
// `strideweave check --gradients [--carrier NAME] [--json]` (cmd_check_gradients.cpp).
int run_check_gradients(const std::vector<std::string>& args);

// Prints {"error": type, "message": ...} (as JSON when `as_json`) to stdout
// and returns 1 (2 for usage errors).
int report_error(const Error& error, bool as_json);

// Parses a weak-scalar literal: integers (any size that fits 128 bits),
// decimals/exponents, "true"/"false", "nan", "inf", "-inf". ValueError
// otherwise.
WeakScalar parse_scalar_literal(const std::string& text);

}  // namespace strideweave::cli
