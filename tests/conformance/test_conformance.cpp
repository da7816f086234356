// Conformance of every carrier with Generic, derived from the kernel tables
// (harness.h). Also the fixed cases the generators cannot express.
#include <gtest/gtest.h>

#include "capability/capability_test_support.h"
#include "conformance/harness.h"
#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace strideweave::conformance {

namespace {

const KernelTable& cpu_table() { return *kernel_table(carrier_class<CPU>()); }

TEST(Conformance, EveryPublicOperationExecutesOnGenericAndCpu) {
  // Derived from the registry: a public operation with a resolvable plan and
  // no kernel on a carrier fails here.
  for (const OperationPlan& plan : executable_plan_set()) {
    EXPECT_NE(kernel_table(carrier_class<Generic>())->find(plan), nullptr) << "Generic lacks " << plan.to_string();
    EXPECT_NE(cpu_table().find(plan), nullptr) << "CPU lacks " << plan.to_string();
  }
}

TEST(Conformance, EveryPlanOfEveryCarrierHasCaseGenerator) {
  for (const CarrierClass& cls : registered_kernel_classes())
    for (const OperationPlan& plan : kernel_table(cls)->plans())
      EXPECT_TRUE(case_generators().count(plan.operation())) << cls.name() << ": no conformance cases for " << plan.operation();
}

TEST(Conformance, CpuAgreesWithGenericOnEveryPlan) {
  const ConformanceReport report = run_conformance(CPU::create(0));
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  EXPECT_EQ(report.failed, 0u);
  EXPECT_EQ(report.entries, cpu_table().plans().size());
  EXPECT_GT(report.cases, 1000u);
}

// The harness itself, on carriers built to pass and to fail it. A custom
// class (capability_test_support.h, indices 1100 .. 1199) registers kernels
// for two of Generic's plans; its kernels compute through the carrier's own
// slot access, the reference's arithmetic or, for the failing class, not.
template <class Fn>
KernelFn value_kernel(Fn element) {
  return [element](const KernelCall& call) {
    auto& out = dynamic_cast<sw_caps::ValueCarrier&>(*call.output.carrier());
    std::vector<std::vector<Value>> inputs;
    for (std::size_t i = 0; i < call.operands.size(); ++i) inputs.push_back(call.tensor(i).values());
    for (std::int64_t k = 0; k < call.output.size(); ++k)
      out.poke(call.output.offset() + call.output.layout()(k), element(inputs, static_cast<std::size_t>(k)));
  };
}

OperationPlan f32_add() { return resolve_operation_plan("add", {DType::Float32(), DType::Float32()}); }
OperationPlan f32_neg() { return resolve_operation_plan("neg", {DType::Float32()}); }

// Add and neg exactly as Generic computes them (one binary32 step each).
void register_two_plan_table(CarrierClass cls, bool wrong_add) {
  KernelTable table;
  table.add(f32_add(), value_kernel([wrong_add](const std::vector<std::vector<Value>>& in, std::size_t k) {
              const float sum = in[0][k].f + in[1][k].f;
              return Value::from_float32(wrong_add && sum == 1.0f ? 1.5f : sum);
            }));
  table.add(f32_neg(), value_kernel([](const std::vector<std::vector<Value>>& in, std::size_t k) {
              return Value::from_float32(-in[0][k].f);
            }));
  register_kernel_table(cls, std::move(table));
}

// The harness's second half: every registry plan a carrier does not execute
// is run once on it and must be refused by the gate. Generic and CPU execute
// every plan, so only a carrier with a partial table reaches that branch.
TEST(Conformance, PlansACarrierLacksAreRunAndRefusedByTheGate) {
  using Partial = sw_caps::Custom<1100>;
  register_two_plan_table(Partial::cls(), false);
  const ConformanceReport report = run_conformance(Partial::make(DType::Float32(), {}));
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  EXPECT_EQ(report.failed, 0u);
  EXPECT_EQ(report.entries, 2u);
  const std::size_t registry_plans = executable_plan_set().size();
  EXPECT_EQ(report.unsupported, registry_plans - 2);
  // Every one of them was run, and every run was refused.
  EXPECT_EQ(report.refused, report.unsupported);
  EXPECT_GT(report.cases, report.unsupported + 2);
  EXPECT_EQ(report.passed, report.cases);
}

// The harness's first half reports a carrier that disagrees with Generic:
// the same table with an add that returns 1.5 where the sum is 1.
TEST(Conformance, DisagreementWithGenericIsReported) {
  using Wrong = sw_caps::Custom<1101>;
  register_two_plan_table(Wrong::cls(), true);
  const ConformanceReport report = run_conformance(Wrong::make(DType::Float32(), {}));
  EXPECT_GT(report.failed, 0u);
  EXPECT_EQ(report.refused, report.unsupported);
  ASSERT_FALSE(report.failures.empty());
  for (const std::string& f : report.failures) {
    EXPECT_EQ(f.rfind(f32_add().to_string() + " :: ", 0), 0u) << "only add is wrong: " << f;
    EXPECT_NE(f.find("generic 1.0 vs 1.5"), std::string::npos) << f;
  }
}

// Int32 overflow raises the same error on both carriers and never wraps.
TEST(Conformance, Int32OverflowRaisesOnBothCarriers) {
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  for (bool cpu : {false, true}) {
    auto t = [&](std::initializer_list<std::int32_t> v, const Shape& s) {
      return cpu ? make_tensor<CPU>(v, s) : make_tensor<Generic>(v, s);
    };
    EXPECT_THROW_EXACTLY(add(t({big, 1}, Shape{2}), t({1, 1}, Shape{2})), OverflowError);
    EXPECT_THROW_EXACTLY(mul(t({big}, Shape{1}), t({2}, Shape{1})), OverflowError);
    EXPECT_THROW_EXACTLY(mul(t({65536}, Shape{1}), 65536), OverflowError);
    EXPECT_THROW_EXACTLY(reduce_sum(t({big, big}, Shape{2})), OverflowError);
    EXPECT_THROW_EXACTLY(matmul(t({big, big}, Shape{1, 2}), t({1, 1}, Shape{2, 1})), OverflowError);
    EXPECT_EQ(TypedTensor<std::int32_t>(add(t({big, -5}, Shape{2}), t({0, 5}, Shape{2}))).values(),
              (std::vector<std::int32_t>{big, 0}));
  }
}

// Many small finite terms: the blocked CPU order and the sequential Generic
// order differ in rounding, and the documented tolerance holds.
TEST(Conformance, ReduceSumFloatingOrderStaysWithinTolerance) {
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
    const float gs = TypedTensor<float>(reduce_sum(g, Axes::all(), false, o)).at_ordinal(0);
    const float cs = TypedTensor<float>(reduce_sum(c, Axes::all(), false, o)).at_ordinal(0);
    const double eps = acc == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    EXPECT_LE(std::fabs(static_cast<double>(gs) - cs),
              2.0 * static_cast<double>(v.size()) * eps * abs_sum + std::fabs(gs) * std::ldexp(1.0, -23));
  }
}

}  // namespace
}  // namespace strideweave::conformance
