// Conformance cases: unary math and activations.
#include "conformance/harness.h"

namespace sw_test {
namespace {

std::vector<TwinCase> unary_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for (bool small : {false, true})
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{6, 5}, {}, {0}, {8, 2, 3}})
      for (LayoutCase c : all_layout_cases()) {
        const Pair x = twin(*plan.operands()[0].dtype(), shape, c, rng, small);
        out.push_back({case_name(c), {t(x.generic)}, {t(x.cpu)}, {}, {}});
      }
  return out;
}

const bool registered = [] {
  register_cases("relu", unary_cases);
  return true;
}();

}  // namespace
}  // namespace sw_test
