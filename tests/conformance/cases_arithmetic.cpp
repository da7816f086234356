// Conformance cases: elementwise arithmetic, comparisons, clamp, select.
#include "conformance/harness.h"

namespace sw_test {
namespace {

struct BinaryShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<BinaryShapes> kBinaryShapes = {
    {{6, 5}, {6, 5}}, {{6, 1}, {1, 5}}, {{8, 3, 2}, {3, 2}}, {{}, {4, 2}}, {{0, 3}, {0, 3}}, {{4, 0}, {1, 0}}, {{1}, {1}}};

// Tensor/tensor and tensor/scalar cases for a two-operand elementwise plan.
std::vector<TwinCase> binary_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const auto& ops = plan.operands();
  for (bool small : {false, true}) {
    for (const BinaryShapes& sh : kBinaryShapes) {
      for (LayoutCase ca : all_layout_cases()) {
        if (ops[0].role() == OperandRole::TENSOR && ops[1].role() == OperandRole::TENSOR) {
          const Pair a = twin(*ops[0].dtype(), sh.a, ca, rng, small);
          for (LayoutCase cb : all_layout_cases()) {
            const Pair b = twin(*ops[1].dtype(), sh.b, cb, rng, small);
            out.push_back({std::string(case_name(ca)) + "/" + case_name(cb) + (small ? " small" : ""),
                           {t(a.generic), t(b.generic)}, {t(a.cpu), t(b.cpu)}, {}, {}});
          }
        } else {
          const std::size_t ti = ops[0].role() == OperandRole::TENSOR ? 0 : 1;
          const Pair a = twin(*ops[ti].dtype(), sh.a, ca, rng, small);
          for (const WeakScalar& w : scalars_selecting(plan, 1 - ti)) {
            TwinCase c{std::string(case_name(ca)) + " scalar " + w.to_string(), {}, {}, {}, {}};
            c.generic = ti == 0 ? std::vector<CallOperand>{t(a.generic), s(w)} : std::vector<CallOperand>{s(w), t(a.generic)};
            c.other = ti == 0 ? std::vector<CallOperand>{t(a.cpu), s(w)} : std::vector<CallOperand>{s(w), t(a.cpu)};
            out.push_back(std::move(c));
          }
        }
      }
    }
  }
  return out;
}

const bool registered = [] {
  for (const char* op : {"add", "elementwise_mul", "mul"}) register_cases(op, binary_cases);
  return true;
}();

}  // namespace
}  // namespace sw_test
