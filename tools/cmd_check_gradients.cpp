// `strideweave check --gradients [--carrier NAME] [--operation NAME]...
// [--json]`: the finite-difference gradient check of every differentiable
// operation (or of the named ones) on each shipped carrier (autograd.h,
// docs/autograd.md). Prints
//   {"gradients": [{"carrier": ..., "operations": N, "checked": N, "failed": N}]}
// with --json (failure details go to stderr) and exits 1 on any failure.
#include <strideweave/autograd.h>

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "cli.h"

namespace strideweave::cli {
namespace {

}  // namespace

namespace {

// The check of `operations` (all when empty; a name given twice counts once)
// on `prototype`, as one report.
autograd::GradientCheckReport check_selected(const Carrier& prototype, const std::vector<std::string>& operations) {
  if (operations.empty()) return autograd::check_gradients(prototype);
  autograd::GradientCheckReport total;
  std::set<std::string> seen;
  for (const std::string& operation : operations) {
    if (!seen.insert(operation).second) continue;
    autograd::GradientCheckReport one = autograd::check_operation_gradients(prototype, operation);
    total.carrier = one.carrier;
    total.operations += one.operations;
    total.checked += one.checked;
    total.failed += one.failed;
    for (std::string& f : one.failures) total.failures.push_back(std::move(f));
  }
  return total;
}

}  // namespace

int run_check_gradients(const std::string& carrier, const std::vector<std::string>& operations, bool as_json) {
  try {
    require_registered_operations(operations);
    nlohmann::ordered_json reports = nlohmann::ordered_json::array();  // keys in the documented order
    bool any_failed = false;
    for (const ShippedCarrier* shipped : select_carriers(carrier)) {
      const autograd::GradientCheckReport report = check_selected(*prototype_of(*shipped), operations);
      any_failed = any_failed || report.failed != 0;
      reports.push_back(nlohmann::ordered_json{{"carrier", report.carrier},
                         {"operations", report.operations},
                         {"checked", report.checked},
                         {"failed", report.failed}});
      for (const std::string& f : report.failures) std::cerr << f << "\n";
      if (!as_json)
        std::cout << fmt::format("{:<8} {} differentiable operations, {} checked, {} failed\n", report.carrier,
                                 report.operations, report.checked, report.failed);
    }
    if (as_json) std::cout << nlohmann::ordered_json{{"gradients", reports}}.dump() << "\n";
    return any_failed ? 1 : 0;
  } catch (const Error& e) {
    return report_error(e, as_json);
  }
}

}  // namespace strideweave::cli
