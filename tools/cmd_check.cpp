// `strideweave check [--carrier NAME] [--operation NAME]... [--json]`: the
// conformance harness. `strideweave check --gradients ...`: the gradient
// checks (autograd, cmd_check_gradients.cpp). `--operation NAME` of a
// user-defined operation (registered by a `--plugin PATH` library): opcheck
// (cmd_opcheck.cpp, docs/opcheck.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli.h"
#include "conformance/harness.h"

namespace strideweave::cli {

namespace {

struct CheckArguments {
  std::string carrier;
  std::vector<std::string> operations;  // empty: every operation
  std::vector<std::string> plugins;
  bool as_json = false, gradients = false;
};

int run_check_builtin(const CheckArguments& a);

// User-defined names go to opcheck, the rest to the conformance harness (or
// the gradient checks); with both, the outputs come one after the other
// (text) or as one object (--json: "carriers"/"gradients" beside "opcheck").
int run_check(const CheckArguments& a) {
  std::vector<std::string> user;
  CheckArguments builtin = a;
  try {
    load_plugins(a.plugins);
    builtin.operations.clear();
    for (const std::string& name : a.operations) {
      if (!is_user_defined(name)) builtin.operations.push_back(name);
      else if (std::find(user.begin(), user.end(), name) == user.end()) user.push_back(name);
    }
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
  if (user.empty()) return run_check_builtin(a);
  if (builtin.operations.empty()) {
    try {
      return run_opcheck(user, a.as_json);
    } catch (const Error& e) {
      return report_error(e, a.as_json);
    }
  }
  if (!a.as_json) {
    const int first = run_check_builtin(builtin);
    try {
      return std::max(first, run_opcheck(user, false));
    } catch (const Error& e) {
      return report_error(e, false);
    }
  }
  // One JSON object: capture the built-in part's line, then add "opcheck".
  std::stringstream captured;
  std::streambuf* const saved = std::cout.rdbuf(captured.rdbuf());
  int first = 0;
  try {
    first = run_check_builtin(builtin);
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  json object = json::parse(captured.str());
  if (object.contains("error")) {
    std::cout << object.dump() << "\n";
    return first;
  }
  try {
    json reports;
    const int second = run_opcheck(user, true, &reports);
    object["opcheck"] = std::move(reports);
    std::cout << object.dump() << "\n";
    return std::max(first, second);
  } catch (const Error& e) {
    return report_error(e, true);
  }
}

int run_check_builtin(const CheckArguments& a) {
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
  sub->add_option("--plugin", a->plugins,
                  "A shared library to load first (repeatable): its static initialisers (and its extern \"C\" "
                  "strideweave_plugin_init(), if any) register user-defined operations, carriers and opcheck inputs; "
                  "--operation NAME of such an operation runs opcheck (docs/opcheck.md)")
      ->type_name("PATH")
      ->check(not_a_flag())
      ->allow_extra_args(false);
  sub->add_flag("--gradients", a->gradients,
                "Check the VJP of every differentiable operation against central differences instead");
  sub->add_flag("--json", a->as_json,
                "Print {\"carriers\": [{\"name\", \"entries\", \"cases\", \"passed\", \"failed\"}]} "
                "(with --gradients {\"gradients\": [{\"carrier\", \"operations\", \"checked\", \"failed\"}]}; for "
                "user-defined operations {\"opcheck\": [REPORT]}, docs/opcheck.md)");
  sub->footer("Exits 1 when any case failed.");
  return {sub, [a] { return run_check(*a); }};
}

}  // namespace strideweave::cli
