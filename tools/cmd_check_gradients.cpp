// `strideweave check --gradients [--carrier NAME] [--json]`: the
// finite-difference gradient check of every differentiable operation on each
// shipped carrier (autograd.h, docs/autograd.md). Prints
//   {"gradients": [{"carrier": ..., "operations": N, "checked": N, "failed": N}]}
// with --json (failure details go to stderr) and exits 1 on any failure.
#include <strideweave/autograd.h>

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <map>

#include "cli.h"

namespace strideweave::cli {
namespace {

// A prototype carrier of each shipped class: the check builds its tensors
// with prototype.new_like, so they live on exactly that class.
std::shared_ptr<Carrier> prototype_of(const std::string& class_name) {
  static const std::map<std::string, std::function<std::shared_ptr<Carrier>()>> factories = {
      {"Generic", [] { return Generic::zeros(0, DType::Float32()); }},
      {"CPU", [] { return CPU::create(0, DType::Float32()); }},
  };
  const auto it = factories.find(class_name);
  return it == factories.end() ? nullptr : it->second();
}

}  // namespace

int run_check_gradients(const std::string& carrier, bool as_json) {
  try {
    nlohmann::ordered_json reports = nlohmann::ordered_json::array();  // keys in the documented order
    bool any_failed = false;
    for (const auto& [cls, name] : select_carriers(carrier)) {
      autograd::GradientCheckReport report;
      if (std::shared_ptr<Carrier> prototype = prototype_of(name)) {
        report = autograd::check_gradients(*prototype);
      } else {
        report.carrier = name;
        report.failed = 1;
        report.failures.push_back(fmt::format("{}: no prototype carrier to build tensors with", name));
      }
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
