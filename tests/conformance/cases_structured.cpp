// Conformance cases: matmul, conv_general, gather, scatter.
#include "conformance/harness.h"

namespace sw_test {
namespace {

struct MatmulShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<MatmulShapes> kMatmulShapes = {
    {{4, 6}, {6, 5}}, {{8, 3}, {3, 1}}, {{2, 4, 3}, {3, 5}}, {{6}, {6, 4}}, {{4, 6}, {6}}, {{6}, {6}},
    {{0, 3}, {3, 4}}, {{4, 0}, {0, 5}}, {{2, 1, 4, 2}, {3, 2, 3}}};

std::vector<TwinCase> matmul_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const bool floating = plan.accumulation() == Accumulation::FLOATING;
  for (bool small : {false, true})
    for (const MatmulShapes& sh : kMatmulShapes)
      for (LayoutCase ca : all_layout_cases())
        for (LayoutCase cb : {LayoutCase::Compact, LayoutCase::Permuted, LayoutCase::Strided}) {
          const Pair a = twin(*plan.operands()[0].dtype(), sh.a, ca, rng, small);
          const Pair b = twin(*plan.operands()[1].dtype(), sh.b, cb, rng, small);
          TwinCase tc{Shape::of(sh.a).to_string() + "x" + Shape::of(sh.b).to_string() + " " + case_name(ca) + "/" +
                          case_name(cb),
                      {t(a.generic), t(b.generic)}, {t(a.cpu), t(b.cpu)}, {}, {}};
          if (floating) {
            // |a| @ |b| accumulated in Float64 on Generic bounds the terms.
            const Tensor bound = matmul(abs_twin(a.generic), abs_twin(b.generic),
                                        OperationExecutionOptions("matmul", &DType::Float64()));
            const std::vector<Value> v = bound.values();
            const std::int64_t k = sh.a.back();
            tc.bound = [v, k](std::size_t, std::int64_t i) {
              return std::make_pair(static_cast<double>(v[static_cast<std::size_t>(i)].f), k);
            };
          }
          out.push_back(std::move(tc));
        }
  return out;
}

const bool registered = [] {
  register_cases("matmul", matmul_cases);
  return true;
}();

}  // namespace
}  // namespace sw_test
