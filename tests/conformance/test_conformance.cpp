// Conformance of every carrier with Generic, derived from the kernel tables
// (harness.h). Also the fixed cases the generators cannot express.
#include <gtest/gtest.h>

#include "conformance/harness.h"
#include "execution/kernel_table.h"

namespace sw_test {

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

TEST(Conformance, GenericAgreesWithItself) {
  const ConformanceReport report = run_conformance(Generic::zeros(0, DType::Float32()));
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  EXPECT_EQ(report.failed, 0u);
}

// Int32 overflow raises the same error on both carriers and never wraps.
TEST(Conformance, Int32OverflowRaisesOnBothCarriers) {
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
    const float gs = TypedTensor<float>(reduce_sum(g, ReduceOptions{}, o)).at_ordinal(0);
    const float cs = TypedTensor<float>(reduce_sum(c, ReduceOptions{}, o)).at_ordinal(0);
    const double eps = acc == &DType::Float64() ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    EXPECT_LE(std::fabs(static_cast<double>(gs) - cs),
              2.0 * static_cast<double>(v.size()) * eps * abs_sum + std::fabs(gs) * std::ldexp(1.0, -23));
  }
}

}  // namespace
}  // namespace sw_test
