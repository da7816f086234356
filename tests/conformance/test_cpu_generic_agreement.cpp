// CPU-versus-Generic agreement, derived from the kernel tables rather than
// hand-listed: every plan CPU registered is run on both carriers over
// generated operands (edge values: NaN, +-0, +-inf, subnormals, extremes,
// Int32 limits; empty extents; size-1 and broadcast axes; strided, permuted
// and hierarchical views) and compared under docs/numerics.md:
//   - bit for bit (every NaN equal to every NaN) for every plan except
//     FLOATING accumulation;
//   - FLOATING accumulation within |cpu - generic| <= 2 n eps_acc sum|t_i|
//     + 1 ulp of the binary32 result, where t_i are the rounded terms;
//   - an error on one carrier is the same error type on the other.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "conformance/agreement_support.h"

namespace sw_test {
namespace {

struct Outcome {
  std::optional<Tensor> result;
  std::string error;  // type name, when raised
};

Outcome run(const std::function<Tensor()>& f) {
  try {
    return Outcome{f(), ""};
  } catch (const Error& e) {
    return Outcome{std::nullopt, e.type_name()};
  }
}

// For FLOATING plans: the per-result-element sum of |terms| (terms already
// rounded to binary32) and term count, computed from the Generic operands.
using TermBound = std::function<std::pair<double, std::int64_t>(std::int64_t ordinal)>;

void expect_agree(const std::string& label, const OperationPlan& plan, const Outcome& g, const Outcome& c,
                  const TermBound& bound = nullptr) {
  SCOPED_TRACE(label + " :: " + plan.to_string());
  ASSERT_EQ(g.error, c.error) << "one carrier raised and the other did not (or a different type)";
  if (!g.result) return;
  const Tensor& gt = *g.result;
  const Tensor& ct = *c.result;
  ASSERT_EQ(&gt.dtype(), &ct.dtype());
  ASSERT_EQ(&gt.dtype(), &plan.output());
  ASSERT_EQ(gt.shape(), ct.shape());
  EXPECT_EQ(gt.carrier_type(), carrier_class<Generic>());
  EXPECT_EQ(ct.carrier_type(), carrier_class<CPU>());
  const std::vector<Value> gv = gt.values(), cv = ct.values();
  const bool floating = plan.accumulation() == Accumulation::FLOATING;
  const double eps = plan.accumulator_dtype() == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  for (std::size_t i = 0; i < gv.size(); ++i) {
    if (!floating || !bound) {
      EXPECT_TRUE(same_value(gv[i], cv[i])) << "element " << i << ": generic " << gv[i].to_string() << " cpu "
                                            << cv[i].to_string();
      continue;
    }
    const float a = gv[i].f, b = cv[i].f;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      // Non-finite results must agree exactly (NaN with NaN, inf signs).
      EXPECT_TRUE(same_value(gv[i], cv[i]) || (std::isnan(a) && std::isnan(b)))
          << "element " << i << ": generic " << a << " cpu " << b;
      continue;
    }
    const auto [abs_sum, n] = bound(static_cast<std::int64_t>(i));
    const double ulp = std::nextafter(std::max(std::fabs(a), std::fabs(b)), INFINITY) - std::max(std::fabs(a), std::fabs(b));
    const double tol = 2.0 * static_cast<double>(n) * eps * abs_sum + ulp;
    EXPECT_LE(std::fabs(static_cast<double>(a) - b), tol) << "element " << i << ": generic " << a << " cpu " << b;
  }
}

// The same view over a Float32 Generic copy of the storage holding |v|.
Tensor abs_twin(const Tensor& generic) {
  const auto& g = static_cast<const Generic&>(*generic.carrier());
  std::vector<Value> values;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Value v = g.get_value(i);
    values.push_back(Value::from_float32(std::fabs(v.kind == ElementKind::Int32 ? static_cast<float>(v.i) : v.f)));
  }
  return Tensor(Generic::create(values, DType::Float32()), generic.offset(), generic.layout());
}

// Per-result-element sum of |terms| from a Generic Float64-accumulated result.
TermBound bound_from(const Tensor& abs_result, std::int64_t terms) {
  const std::vector<Value> v = abs_result.values();
  return [v, terms](std::int64_t i) { return std::make_pair(static_cast<double>(v[static_cast<std::size_t>(i)].f), terms); };
}

const std::vector<LayoutCase> kCases = {LayoutCase::Compact, LayoutCase::Strided, LayoutCase::Permuted,
                                        LayoutCase::Broadcast, LayoutCase::Hierarchical};

std::vector<OperationPlan> cpu_plans(const std::string& operation) {
  std::vector<OperationPlan> out;
  for (const OperationPlan& p : kernel_table(carrier_class<CPU>())->plans())
    if (p.operation() == operation) out.push_back(p);
  return out;
}

std::optional<OperationExecutionOptions> options_for(const OperationPlan& p) {
  if (p.accumulation() != Accumulation::FLOATING) return std::nullopt;
  return OperationExecutionOptions(p.operation(), p.accumulator_dtype());
}

// ---- the table itself

TEST(CpuGenericAgreement, BothCarriersRegisterTheSamePlans) {
  const auto& g = kernel_table(carrier_class<Generic>())->plans();
  const auto& c = kernel_table(carrier_class<CPU>())->plans();
  ASSERT_EQ(g.size(), c.size());
  for (const OperationPlan& p : c) EXPECT_NE(kernel_table(carrier_class<Generic>())->find(p), nullptr) << p.to_string();
  // The six first operations, every plan the registry resolves for them.
  for (const OperationPlan& p : resolvable_plans()) {
    const std::string& op = p.operation();
    if (op == "add" || op == "elementwise_mul" || op == "mul" || op == "relu" || op == "reduce_sum" || op == "matmul") {
      EXPECT_NE(kernel_table(carrier_class<CPU>())->find(p), nullptr) << p.to_string();
    }
  }
}

// ---- elementwise plans (add, elementwise_mul, mul, relu)

struct BinaryShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<BinaryShapes> kBinaryShapes = {
    {{6, 5}, {6, 5}}, {{6, 1}, {1, 5}}, {{8, 3, 2}, {3, 2}}, {{}, {4, 2}}, {{0, 3}, {0, 3}}, {{4, 0}, {1, 0}}, {{1}, {1}}};

TEST(CpuGenericAgreement, ElementwisePlansAgreeOnEdgeValuesAndViews) {
  std::mt19937 rng(1234);
  int compared = 0;
  for (const char* op : {"add", "elementwise_mul", "mul"}) {
    for (const OperationPlan& plan : cpu_plans(op)) {
      const SimpleDType& da = *plan.operands()[0].dtype();
      const bool scalar = plan.operands()[1].role() == OperandRole::WEAK_SCALAR;
      for (bool small : {false, true}) {
        for (const BinaryShapes& s : kBinaryShapes) {
          for (LayoutCase ca : kCases) {
            const Pair a = twin(da, s.a, ca, rng, small);
            if (scalar) {
              // The scalar probes that select this plan.
              for (const WeakScalar& w : {WeakScalar(3), WeakScalar(-1), WeakScalar(0.5), WeakScalar(true),
                                          WeakScalar(-2147483648LL), WeakScalar(1e30)}) {
                std::optional<OperationPlan> chosen;
                try {
                  chosen = resolve_operation_plan(op, {da, w});
                } catch (const OverflowError&) {
                  continue;
                }
                if (!(*chosen == plan)) continue;
                expect_agree(std::string(op) + " scalar " + w.to_string() + " " + case_name(ca), plan,
                             run([&] { return mul(a.generic, w); }), run([&] { return mul(a.cpu, w); }));
                ++compared;
              }
              continue;
            }
            for (LayoutCase cb : kCases) {
              const Pair b = twin(*plan.operands()[1].dtype(), s.b, cb, rng, small);
              auto f = [&](const Tensor& x, const Tensor& y) {
                return std::string(op) == "add" ? add(x, y) : std::string(op) == "mul" ? mul(x, y) : elementwise_mul(x, y);
              };
              expect_agree(std::string(op) + " " + case_name(ca) + "/" + case_name(cb), plan,
                           run([&] { return f(a.generic, b.generic); }), run([&] { return f(a.cpu, b.cpu); }));
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 500);
}

TEST(CpuGenericAgreement, ReluPlansAgree) {
  std::mt19937 rng(99);
  for (const OperationPlan& plan : cpu_plans("relu"))
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{6, 5}, {}, {0}, {8, 2, 3}})
      for (LayoutCase c : kCases) {
        const Pair x = twin(*plan.operands()[0].dtype(), shape, c, rng);
        expect_agree(std::string("relu ") + case_name(c), plan, run([&] { return relu(x.generic); }),
                     run([&] { return relu(x.cpu); }));
      }
}

TEST(CpuGenericAgreement, Int32OverflowRaisesOnBothCarriers) {
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  for (bool cpu : {false, true}) {
    auto t = [&](std::initializer_list<std::int32_t> v, const Shape& s) {
      return cpu ? make_tensor<CPU>(v, s) : make_tensor<Generic>(v, s);
    };
    EXPECT_THROW(add(t({big, 1}, Shape{2}), t({1, 1}, Shape{2})), OverflowError);
    EXPECT_THROW(mul(t({big}, Shape{1}), t({2}, Shape{1})), OverflowError);
    EXPECT_THROW(mul(t({65536}, Shape{1}), 65536), OverflowError);
    EXPECT_THROW(reduce_sum(t({big, big}, Shape{2})), OverflowError);
    EXPECT_THROW(matmul(t({big, big}, Shape{1, 2}), t({1, 1}, Shape{2, 1})), OverflowError);
    // In range: the exact result, never wrapped.
    EXPECT_EQ(TypedTensor<std::int32_t>(add(t({big, -5}, Shape{2}), t({0, 5}, Shape{2}))).values(),
              (std::vector<std::int32_t>{big, 0}));
  }
}

// ---- reduce_sum

TEST(CpuGenericAgreement, ReduceSumPlansAgreeOverAxesAndViews) {
  std::mt19937 rng(7);
  const std::vector<std::vector<std::int64_t>> axes_cases = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}, {-1}};
  for (const OperationPlan& plan : cpu_plans("reduce_sum")) {
    for (bool small : {false, true}) {
      for (const auto& shape : std::vector<std::vector<std::int64_t>>{{6, 5, 4}, {4, 0, 3}, {40, 3, 1}}) {
        for (LayoutCase c : kCases) {
          const Pair x = twin(*plan.operands()[0].dtype(), shape, c, rng, small);
          for (const auto& axes : axes_cases) {
            for (bool keepdims : {false, true}) {
              const auto opts = options_for(plan);
              std::vector<std::int64_t> norm;
              for (std::int64_t a : axes) norm.push_back(a < 0 ? a + 3 : a);
              const OperationExecutionOptions wide("reduce_sum", &DType::Float64());
              std::int64_t n = 1;
              for (std::int64_t a : norm) n *= shape[static_cast<std::size_t>(a)];
              std::optional<Tensor> abs_sum;
              if (opts) abs_sum = reduce_sum(abs_twin(x.generic), ReduceOptions{axes, keepdims}, wide);
              TermBound bound = abs_sum ? bound_from(*abs_sum, n) : TermBound{};
              expect_agree("reduce_sum " + std::string(case_name(c)), plan,
                           run([&] { return reduce_sum(x.generic, ReduceOptions{axes, keepdims}, opts); }),
                           run([&] { return reduce_sum(x.cpu, ReduceOptions{axes, keepdims}, opts); }), bound);
            }
          }
          // Every axis (the default).
          TermBound bound;
          if (options_for(plan))
            bound = bound_from(reduce_sum(abs_twin(x.generic), ReduceOptions{},
                                          OperationExecutionOptions("reduce_sum", &DType::Float64())),
                               x.generic.size());
          expect_agree("reduce_sum all", plan, run([&] { return reduce_sum(x.generic, ReduceOptions{}, options_for(plan)); }),
                       run([&] { return reduce_sum(x.cpu, ReduceOptions{}, options_for(plan)); }), bound);
        }
      }
    }
  }
}

// Many small finite terms: the blocked CPU order and the sequential Generic
// order differ in rounding, and the documented tolerance holds.
TEST(CpuGenericAgreement, ReduceSumFloatingOrderStaysWithinTolerance) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(100003);
  double abs_sum = 0;
  for (float& f : v) {
    f = u(rng);
    abs_sum += std::fabs(f);
  }
  const Tensor g = make_tensor<Generic>(v, Shape{static_cast<std::int64_t>(v.size())});
  const Tensor c = make_tensor<CPU>(v, Shape{static_cast<std::int64_t>(v.size())});
  for (const SimpleDType* acc : SUPPORTED_ACCUMULATOR_DTYPES()) {
    const OperationExecutionOptions o("reduce_sum", acc);
    const float gs = TypedTensor<float>(reduce_sum(g, ReduceOptions{}, o)).at_ordinal(0);
    const float cs = TypedTensor<float>(reduce_sum(c, ReduceOptions{}, o)).at_ordinal(0);
    const double eps = acc == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    EXPECT_LE(std::fabs(static_cast<double>(gs) - cs),
              2.0 * static_cast<double>(v.size()) * eps * abs_sum + std::fabs(gs) * std::ldexp(1.0, -23));
  }
}

// ---- matmul

struct MatmulShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<MatmulShapes> kMatmulShapes = {
    {{4, 6}, {6, 5}}, {{8, 3}, {3, 1}}, {{2, 4, 3}, {3, 5}}, {{6}, {6, 4}}, {{4, 6}, {6}}, {{6}, {6}},
    {{0, 3}, {3, 4}}, {{4, 0}, {0, 5}}, {{2, 1, 4, 2}, {3, 2, 3}}};

TEST(CpuGenericAgreement, MatmulPlansAgreeOnEdgeValuesAndViews) {
  std::mt19937 rng(42);
  for (const OperationPlan& plan : cpu_plans("matmul")) {
    for (bool small : {false, true}) {
      for (const MatmulShapes& s : kMatmulShapes) {
        for (LayoutCase ca : kCases) {
          for (LayoutCase cb : {LayoutCase::Compact, LayoutCase::Permuted, LayoutCase::Strided}) {
            const Pair a = twin(*plan.operands()[0].dtype(), s.a, ca, rng, small);
            const Pair b = twin(*plan.operands()[1].dtype(), s.b, cb, rng, small);
            const auto opts = options_for(plan);
            // Bound: |a| @ |b| accumulated in Float64 on Generic.
            TermBound bound;
            if (opts)
              bound = bound_from(matmul(abs_twin(a.generic), abs_twin(b.generic),
                                        OperationExecutionOptions("matmul", &DType::Float64())),
                                 s.a.back());
            expect_agree(std::string("matmul ") + Shape::of(s.a).to_string() + "x" + Shape::of(s.b).to_string() + " " + case_name(ca) + "/" + case_name(cb), plan,
                         run([&] { return matmul(a.generic, b.generic, opts); }),
                         run([&] { return matmul(a.cpu, b.cpu, opts); }), bound);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sw_test
