// `strideweave check [--carrier NAME] [--operation NAME]... [--json]`: the
// conformance harness. `strideweave check --gradients ...`: the gradient
// checks (autograd, cmd_check_gradients.cpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli.h"
#include "conformance/harness.h"

namespace strideweave::cli {

namespace {

struct CheckArguments {
  std::string carrier;
  std::vector<std::string> operations;  // empty: every operation
  bool as_json = false, gradients = false;
};

int run_check(const CheckArguments& a) {
  const bool as_json = a.as_json;
  const std::string& carrier = a.carrier;
  if (a.gradients) return run_check_gradients(carrier, a.operations, as_json);
  try {
    require_registered_operations(a.operations);
    const auto carriers = select_carriers(carrier);
    json list = json::array();
    bool ok = true;
    if (!as_json)
      std::cout << fmt::format("{:<10} {:>8} {:>12} {:>8} {:>8} {:>8}\n", "carrier", "entries", "unsupported", "cases",
                               "passed", "failed");
    for (const ShippedCarrier* shipped : carriers) {
      const std::string name(shipped->name);
      const strideweave::conformance::ConformanceReport r = strideweave::conformance::run_conformance(prototype_of(*shipped), 20261129, a.operations);
      ok = ok && r.failed == 0;
      if (as_json) {
        list.push_back({{"name", name}, {"entries", r.entries}, {"cases", r.cases}, {"passed", r.passed}, {"failed", r.failed}});
      } else {
        std::cout << fmt::format("{:<10} {:>8} {:>12} {:>8} {:>8} {:>8}\n", name, r.entries, r.unsupported, r.cases,
                                 r.passed, r.failed);
        for (const std::string& f : r.failures) std::cout << "  FAIL " << f << "\n";
      }
    }
    if (as_json) std::cout << json{{"carriers", list}}.dump() << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    return report_error(e, as_json);
  }
}

}  // namespace

Command add_check_command(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("check",
                         "The conformance harness: every capability entry of each carrier run on it and on Generic and "
                         "compared (docs/numerics.md); with --gradients the finite-difference gradient checks");
  auto a = std::make_shared<CheckArguments>();
  sub->add_option("--carrier", a->carrier, "Only the carrier of this name (case-insensitive)")
      ->type_name("NAME")
      ->check(not_a_flag());
  sub->add_option("--operation", a->operations,
                  "Only the capability entries (or, with --gradients, the checks) of this operation; repeatable. A "
                  "small, quick case set: the cases are the full run's for those entries")
      ->type_name("NAME")
      ->check(not_a_flag())
      ->allow_extra_args(false);
  sub->add_flag("--gradients", a->gradients,
                "Check the VJP of every differentiable operation against central differences instead");
  sub->add_flag("--json", a->as_json,
                "Print {\"carriers\": [{\"name\", \"entries\", \"cases\", \"passed\", \"failed\"}]} "
                "(with --gradients {\"gradients\": [{\"carrier\", \"operations\", \"checked\", \"failed\"}]})");
  sub->footer("Exits 1 when any case failed.");
  return {sub, [a] { return run_check(*a); }};
}

}  // namespace strideweave::cli
