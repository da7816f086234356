// Conformance cases: reductions, arg reductions, cumsum, sort, topk.
#include "conformance/harness.h"

namespace sw_test {
namespace {

const std::vector<std::vector<std::int64_t>> kShapes = {{6, 5, 4}, {4, 0, 3}, {40, 3, 1}};
const std::vector<std::optional<std::vector<std::int64_t>>> kAxes = {
    std::nullopt, std::vector<std::int64_t>{}, std::vector<std::int64_t>{0}, std::vector<std::int64_t>{1},
    std::vector<std::int64_t>{2}, std::vector<std::int64_t>{0, 2}, std::vector<std::int64_t>{1, 2},
    std::vector<std::int64_t>{0, 1, 2}, std::vector<std::int64_t>{-1}};

std::vector<TwinCase> reduce_sum_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const bool floating = plan.accumulation() == Accumulation::FLOATING;
  for (bool small : {false, true})
    for (const auto& shape : kShapes)
      for (LayoutCase c : all_layout_cases()) {
        const Pair x = twin(*plan.operands()[0].dtype(), shape, c, rng, small);
        for (const auto& axes : kAxes)
          for (bool keepdims : {false, true}) {
            CallOptions options{{"keepdims", keepdims}};
            if (axes) options["axes"] = *axes;
            TwinCase tc{std::string(case_name(c)), {t(x.generic)}, {t(x.cpu)}, options, {}};
            if (floating) {
              // Per result element: sum |x| over its block, on Generic in Float64.
              std::int64_t n = 1;
              for (std::size_t i = 0; i < shape.size(); ++i) {
                const bool reduced = !axes || std::find_if(axes->begin(), axes->end(), [&](std::int64_t a) {
                                                 return (a < 0 ? a + 3 : a) == static_cast<std::int64_t>(i);
                                               }) != axes->end();
                if (reduced) n *= shape[i];
              }
              const Tensor abs_sum = reduce_sum(abs_twin(x.generic), ReduceOptions{axes, keepdims},
                                                OperationExecutionOptions("reduce_sum", &DType::Float64()));
              const std::vector<Value> v = abs_sum.values();
              tc.bound = [v, n](std::size_t, std::int64_t i) {
                return std::make_pair(static_cast<double>(v[static_cast<std::size_t>(i)].f), n);
              };
            }
            out.push_back(std::move(tc));
          }
      }
  return out;
}

const bool registered = [] {
  register_cases("reduce_sum", reduce_sum_cases);
  return true;
}();

}  // namespace
}  // namespace sw_test
