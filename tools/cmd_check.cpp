// `strideweave check [--carrier NAME] [--json]`: the conformance harness.
// `strideweave check --gradients [--json]`: the gradient checks (autograd).
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "conformance/harness.h"

namespace strideweave::cli {

int run_check(const std::vector<std::string>& args) {
  bool as_json = false, gradients = false;
  std::string carrier;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      as_json = true;
      rest.push_back(args[i]);
    } else if (args[i] == "--gradients") {
      gradients = true;
    } else if (args[i] == "--carrier" && i + 1 < args.size()) {
      carrier = args[++i];
      rest.push_back("--carrier");
      rest.push_back(carrier);
    } else {
      std::cerr << "usage: strideweave check [--carrier NAME] [--json] | check --gradients [--carrier NAME] [--json]\n";
      return 2;
    }
  }
  if (gradients) return run_check_gradients(rest);
  try {
    json list = json::array();
    bool ok = true;
    if (!as_json)
      std::cout << fmt::format("{:<10} {:>8} {:>12} {:>8} {:>8} {:>8}\n", "carrier", "entries", "unsupported", "cases",
                               "passed", "failed");
    for (const auto& [cls, name] : select_carriers(carrier)) {
      // A prototype of the class: a zero-sized instance (new_like builds operands).
      std::shared_ptr<Carrier> prototype =
          cls == carrier_class<CPU>() ? std::shared_ptr<Carrier>(CPU::create(0))
                                      : std::shared_ptr<Carrier>(Generic::zeros(0, DType::Float32()));
      const sw_test::ConformanceReport r = sw_test::run_conformance(prototype);
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

}  // namespace strideweave::cli
