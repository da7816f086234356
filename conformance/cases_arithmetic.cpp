// Conformance cases: elementwise arithmetic, comparisons, clamp, select.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "conformance/harness.h"

namespace strideweave::conformance {
namespace {

struct BinaryShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<BinaryShapes> kBinaryShapes = {{{6, 5}, {6, 5}}, {{6, 1}, {1, 5}}, {{8, 3, 2}, {3, 2}}, {{}, {4, 2}},
                                                 {{0, 3}, {0, 3}}, {{4, 0}, {1, 0}}, {{1}, {1}}};

// The same explicit values on both carriers, compact, with logical shape
// `extents`.
Pair explicit_twin(const SimpleDType& d, const std::vector<Value>& values, const std::vector<std::int64_t>& extents) {
  const Shape shape = Shape::of(extents);
  return Pair{Tensor(Generic::create(values, d), shape), Tensor(under_test_from_values(values, d), shape)};
}

// The plan's tensor operand at `i` holding every value of the edge pool along
// axis `axis` of a rank-`rank` shape (extent 1 elsewhere): broadcasting two
// of them against each other visits every pair of edge values.
Pair pool_axis(const OperationPlan& plan, std::size_t i, std::size_t axis, std::size_t rank, bool small) {
  const SimpleDType& d = *plan.operands()[i].dtype();
  const std::vector<Value> pool = edge_pool(d, small);
  std::vector<std::int64_t> extents(rank, 1);
  extents[axis] = static_cast<std::int64_t>(pool.size());
  return explicit_twin(d, pool, extents);
}

TwinCase tensor_case(std::string label, const std::vector<Pair>& pairs) {
  TwinCase c{std::move(label), {}, {}, {}, {}};
  for (const Pair& p : pairs) {
    c.generic.push_back(t(p.generic));
    c.other.push_back(t(p.cpu));
  }
  return c;
}

// Tensor/tensor and tensor/scalar cases for a two-operand elementwise plan.
std::vector<TwinCase> binary_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const auto& ops = plan.operands();
  const bool both_tensors = ops[0].role() == OperandRole::TENSOR && ops[1].role() == OperandRole::TENSOR;
  for (bool small : {false, true}) {
    for (const BinaryShapes& sh : kBinaryShapes) {
      for (LayoutCase ca : all_layout_cases()) {
        if (both_tensors) {
          const Pair a = twin(*ops[0].dtype(), sh.a, ca, rng, small);
          for (LayoutCase cb : all_layout_cases()) {
            const Pair b = twin(*ops[1].dtype(), sh.b, cb, rng, small);
            out.push_back(
                tensor_case(std::string(case_name(ca)) + "/" + case_name(cb) + (small ? " small" : ""), {a, b}));
          }
        } else {
          const std::size_t ti = ops[0].role() == OperandRole::TENSOR ? 0 : 1;
          const Pair a = twin(*ops[ti].dtype(), sh.a, ca, rng, small);
          for (const WeakScalar& w : scalars_selecting(plan, 1 - ti)) {
            TwinCase c{
                std::string(case_name(ca)) + " scalar " + w.to_string() + (small ? " small" : ""), {}, {}, {}, {}};
            c.generic =
                ti == 0 ? std::vector<CallOperand>{t(a.generic), s(w)} : std::vector<CallOperand>{s(w), t(a.generic)};
            c.other = ti == 0 ? std::vector<CallOperand>{t(a.cpu), s(w)} : std::vector<CallOperand>{s(w), t(a.cpu)};
            out.push_back(std::move(c));
          }
        }
      }
    }
  }
  // Every pair of edge values, in both operand orders.
  if (both_tensors) {
    for (bool small : {false, true}) {
      out.push_back(tensor_case("edge pairs", {pool_axis(plan, 0, 0, 2, small), pool_axis(plan, 1, 1, 2, small)}));
      out.push_back(
          tensor_case("edge pairs transposed", {pool_axis(plan, 0, 1, 2, small), pool_axis(plan, 1, 0, 2, small)}));
    }
  } else {
    const std::size_t ti = ops[0].role() == OperandRole::TENSOR ? 0 : 1;
    for (bool small : {false, true}) {
      const Pair a = pool_axis(plan, ti, 0, 1, small);
      for (const WeakScalar& w : scalars_selecting(plan, 1 - ti)) {
        TwinCase c{"edge values scalar " + w.to_string(), {}, {}, {}, {}};
        c.generic =
            ti == 0 ? std::vector<CallOperand>{t(a.generic), s(w)} : std::vector<CallOperand>{s(w), t(a.generic)};
        c.other = ti == 0 ? std::vector<CallOperand>{t(a.cpu), s(w)} : std::vector<CallOperand>{s(w), t(a.cpu)};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

std::vector<Value> int32s(std::initializer_list<std::int64_t> v) {
  std::vector<Value> out;
  for (std::int64_t x : v) out.push_back(Value::from_int32(static_cast<std::int32_t>(x)));
  return out;
}

// sub: the Int32 plan at the edges of the range, element by element (each
// element its own call, so in-range results are compared and out-of-range
// ones raise on both carriers).
std::vector<TwinCase> sub_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out = binary_cases(plan, rng);
  if (plan.compute() != Arithmetic::INT32_EXACT_CHECKED) return out;
  const std::int64_t lo = INT32_MIN_VALUE, hi = INT32_MAX_VALUE;
  for (const auto& [x, y] : std::vector<std::pair<std::int64_t, std::int64_t>>{{lo, 1},
                                                                               {lo, 0},
                                                                               {lo, -1},
                                                                               {hi, -1},
                                                                               {hi, 0},
                                                                               {-1, hi},
                                                                               {-2, hi},
                                                                               {0, lo},
                                                                               {-1, lo},
                                                                               {lo, lo},
                                                                               {hi, hi},
                                                                               {0, hi},
                                                                               {lo, hi},
                                                                               {hi, lo}}) {
    out.push_back(tensor_case(
        fmt::format("int32 edge {} - {}", x, y),
        {explicit_twin(DType::Int32(), int32s({x}), {1}), explicit_twin(DType::Int32(), int32s({y}), {1})}));
  }
  return out;
}

// pow: on top of the generic cases, the exact Int32 plan with boundary bases
// and exponents (one call per base, so in-range results are compared); the
// Float32 plans with exponents that pick special paths of powf.
std::vector<TwinCase> pow_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out = binary_cases(plan, rng);
  const auto& ops = plan.operands();
  if (plan.compute() == Arithmetic::INT32_EXACT_CHECKED) {
    const std::int64_t lo = INT32_MIN_VALUE, hi = INT32_MAX_VALUE;
    for (std::int64_t e : std::initializer_list<std::int64_t>{0, 1, 2, 3, 15, 19, 20, 30, 31, 32, 33, 62, 63, 64,
                                                              1000000, 2147483646, 2147483647}) {
      for (std::int64_t b : std::initializer_list<std::int64_t>{0, 1, -1, 2, -2, 3, -3, 10, -10, 46340, 46341, -46341,
                                                                1290, 1291, -1291, lo, hi, lo + 1}) {
        const Pair a = explicit_twin(DType::Int32(), int32s({b}), {1});
        TwinCase c{fmt::format("int32 {} ** {}", b, e),
                   {t(a.generic), s(WeakScalar(e))},
                   {t(a.cpu), s(WeakScalar(e))},
                   {},
                   {}};
        out.push_back(std::move(c));
      }
      // Bases -1, 0, 1 only: never overflows, whatever the exponent.
      const Pair unit = explicit_twin(DType::Int32(), int32s({-1, 0, 1, 1, 0, -1}), {2, 3});
      out.push_back({fmt::format("int32 units ** {}", e),
                     {t(unit.generic), s(WeakScalar(e))},
                     {t(unit.cpu), s(WeakScalar(e))},
                     {},
                     {}});
    }
  } else if (ops[1].role() == OperandRole::WEAK_SCALAR) {
    // Float32 exponents with special meanings (their scalars select the plan
    // when scalars_selecting says so).
    const Pair a = pool_axis(plan, 0, 0, 1, false);
    for (const WeakScalar& w :
         {WeakScalar(2.0), WeakScalar(-2.0), WeakScalar(0.0), WeakScalar(-0.0), WeakScalar(1.0),
          WeakScalar(std::numeric_limits<double>::infinity()), WeakScalar(-std::numeric_limits<double>::infinity()),
          WeakScalar(std::numeric_limits<double>::quiet_NaN()), WeakScalar(0.5), WeakScalar(-0.5), WeakScalar(1e-45),
          WeakScalar(-3), WeakScalar(1LL << 40)}) {
      std::vector<PlanOperand> probe{PlanOperand(*ops[0].dtype()), PlanOperand(w)};
      if (!(resolve_operation_plan("pow", probe) == plan)) continue;
      out.push_back({"edge values ** " + w.to_string(), {t(a.generic), s(w)}, {t(a.cpu), s(w)}, {}, {}});
    }
  }
  return out;
}

std::vector<TwinCase> logical_not_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for (const std::vector<std::int64_t>& sh :
       std::vector<std::vector<std::int64_t>>{{6, 5}, {8, 3, 2}, {}, {0, 3}, {4, 0}, {1}, {1, 7}}) {
    for (LayoutCase c : all_layout_cases())
      out.push_back(tensor_case(case_name(c), {twin(*plan.operands()[0].dtype(), sh, c, rng)}));
  }
  out.push_back(tensor_case("edge values", {pool_axis(plan, 0, 0, 1, false)}));
  return out;
}

// Three-operand shapes (broadcasting together).
struct TernaryShapes {
  std::vector<std::int64_t> a, b, c;
};
const std::vector<TernaryShapes> kTernaryShapes = {{{6, 5}, {6, 5}, {6, 5}},
                                                   {{6, 1, 1}, {1, 5, 1}, {1, 1, 4}},
                                                   {{4, 3}, {3}, {}},
                                                   {{8, 3, 2}, {1, 2}, {8, 1, 1}},
                                                   {{}, {}, {}},
                                                   {{0, 3}, {1, 3}, {0, 1}},
                                                   {{1}, {4, 1}, {1, 6}},
                                                   {{1, 1}, {1}, {1}}};

// Weak bounds for clamp: the probes plus reals that round to infinity or are
// not numbers at all (no range check).
std::vector<WeakScalar> clamp_bounds(const OperationPlan& plan, std::size_t i) {
  std::vector<WeakScalar> out = scalars_selecting(plan, i);
  for (const WeakScalar& w : {WeakScalar(1e40), WeakScalar(-1e40), WeakScalar(std::numeric_limits<double>::quiet_NaN()),
                              WeakScalar(-std::numeric_limits<double>::infinity()), WeakScalar(1e-45), WeakScalar(-0.0),
                              WeakScalar::integer(int128(1) << 100)})
    out.push_back(w);
  return out;
}

// Three-operand cases (clamp and select): every tensor slot gets generated
// operands over the layout cases (the full product on the first two shapes,
// rotations elsewhere); every scalar slot cycles through its bounds.
std::vector<TwinCase> ternary_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const auto& ops = plan.operands();
  const std::vector<LayoutCase>& L = all_layout_cases();
  std::vector<std::vector<WeakScalar>> bounds(3);
  for (std::size_t i = 0; i < 3; ++i)
    if (ops[i].role() == OperandRole::WEAK_SCALAR) bounds[i] = clamp_bounds(plan, i);
  std::size_t k = 0;  // cycles the scalar bounds
  auto add = [&](const std::vector<std::int64_t>* shapes[3], const LayoutCase cases[3], bool small) {
    TwinCase c{"", {}, {}, {}, {}};
    for (std::size_t i = 0; i < 3; ++i) {
      if (ops[i].role() == OperandRole::TENSOR) {
        const Pair p = twin(*ops[i].dtype(), *shapes[i], cases[i], rng, small);
        c.generic.push_back(t(p.generic));
        c.other.push_back(t(p.cpu));
        c.label += std::string(i ? "/" : "") + case_name(cases[i]);
      } else {
        const WeakScalar& w = bounds[i][(k + 3 * i) % bounds[i].size()];
        c.generic.push_back(s(w));
        c.other.push_back(s(w));
        c.label += std::string(i ? "/" : "") + "scalar " + w.to_string();
      }
    }
    ++k;
    out.push_back(std::move(c));
  };
  for (std::size_t si = 0; si < kTernaryShapes.size(); ++si) {
    const TernaryShapes& sh = kTernaryShapes[si];
    const std::vector<std::int64_t>* shapes[3] = {&sh.a, &sh.b, &sh.c};
    for (bool small : {false, true}) {
      if (si < 2) {
        for (LayoutCase a : L)
          for (LayoutCase b : L)
            for (LayoutCase c : L) {
              const LayoutCase cases[3] = {a, b, c};
              add(shapes, cases, small);
            }
      } else {
        for (std::size_t r = 0; r < L.size(); ++r) {
          const LayoutCase cases[3] = {L[r], L[(r + 1) % L.size()], L[(r + 3) % L.size()]};
          add(shapes, cases, small);
        }
      }
    }
  }
  // Every scalar bound at least once against the edge values, and every
  // triple of edge values for the all-tensor forms.
  const std::size_t rank = 3;
  std::vector<std::optional<Pair>> pools(3);
  for (std::size_t i = 0; i < 3; ++i)
    if (ops[i].role() == OperandRole::TENSOR) pools[i] = pool_axis(plan, i, i, rank, false);
  const std::size_t rounds = std::max({bounds[1].size(), bounds[2].size(), std::size_t{1}});
  for (std::size_t r = 0; r < rounds; ++r) {
    TwinCase c{"edge values", {}, {}, {}, {}};
    for (std::size_t i = 0; i < 3; ++i) {
      if (ops[i].role() == OperandRole::TENSOR) {
        c.generic.push_back(t(pools[i]->generic));
        c.other.push_back(t(pools[i]->cpu));
      } else {
        const WeakScalar& w = bounds[i][(r * (i == 2 ? 5 : 1)) % bounds[i].size()];
        c.generic.push_back(s(w));
        c.other.push_back(s(w));
        c.label += " scalar " + w.to_string();
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}


}  // namespace

// The generators operations.def names (harness.h).
STRIDEWEAVE_EXPORT_CASES(binary_cases)
STRIDEWEAVE_EXPORT_CASES(sub_cases)
STRIDEWEAVE_EXPORT_CASES(pow_cases)
STRIDEWEAVE_EXPORT_CASES(logical_not_cases)
STRIDEWEAVE_EXPORT_CASES(ternary_cases)

}  // namespace strideweave::conformance
