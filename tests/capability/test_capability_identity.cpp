// Issue 24, item 6: a capability's identity is its six plan-shape fields
// (backend-capabilities.md, "A capability mirrors every plan matching
// dimension"); the descriptor note's execution axes are kept beside it, per
// carrier class and capability (backend-capability-descriptor.md).
// Custom classes use indices 1300 .. 1319 (capability_test_support.h).
#include "capability/capability_test_support.h"

#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace {

using namespace sw_caps;

TEST(BackendCapabilities_PlanMatching, RequireOperationPlanEqualsFromPlanForEveryShippedPlan) {
  // Derived from the shipped capability tables: every kernel-backed class,
  // every entry.
  std::size_t checked = 0;
  const std::shared_ptr<Carrier> instances[] = {Generic::create(std::vector<Value>{Value::from_float32(0)}, DType::Float32()),
                                                CPU::create(1, DType::Float32())};
  for (const std::shared_ptr<Carrier>& instance : instances) {
    for (const OperationCapability& c : capabilities_for_carrier_class(instance->exact_class())) {
      const OperationPlan plan = c.to_plan();
      const OperationCapability mirrored = OperationCapability::from_plan(plan);
      const OperationCapability required = instance->require_operation_plan(plan);
      EXPECT_TRUE(required == mirrored) << plan.to_string();
      EXPECT_EQ(std::hash<OperationCapability>{}(required), std::hash<OperationCapability>{}(mirrored));
      EXPECT_TRUE(require_capability(instance->exact_class(), plan) == mirrored) << plan.to_string();
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(BackendCapabilityDescriptor_Axes, ExecutionAxesAreQueriedBesideTheCapability) {
  for (const CarrierClass cls : registered_kernel_classes()) {
    const KernelTable* table = kernel_table(cls);
    ASSERT_NE(table, nullptr);
    for (const OperationCapability& c : capabilities_for_carrier_class(cls))
      EXPECT_EQ(execution_axes(cls, c), table->axes(c.to_plan())) << cls.name() << " " << c.to_plan().to_string();
  }
  const OperationCapability add = OperationCapability::from_plan(f32_add_plan());
  EXPECT_EQ(execution_axes(carrier_class<CPU>(), add).borrowed_input, SupportLevel::FallbackCopy);
  EXPECT_EQ(execution_axes(carrier_class<Generic>(), add).borrowed_input, SupportLevel::Native);
  const auto cpu = CPU::create(1, DType::Float32());
  EXPECT_EQ(cpu->execution_axes(add), execution_axes(carrier_class<CPU>(), add));
  // A capability the class does not hold: the stable unsupported reason.
  using C = Custom<1300>;
  register_operation_capabilities(C::cls(), caps_of({f32_add_plan()}));
  EXPECT_THROW_EXACTLY(execution_axes(C::cls(), OperationCapability::from_plan(i32_add_plan())),
                       UnsupportedOperationPlan);
  EXPECT_EQ(execution_axes(C::cls(), add), ExecutionAxes{});
  EXPECT_THROW_EXACTLY(execution_axes(carrier_class<TestDependent>(), add), TypeError);
}

TEST(BackendCapabilities_Registration, DeclaredAxesStayBesideTheDeclaredShapes) {
  using C = Custom<1301>;
  ExecutionAxes wide;
  wide.caller_output = SupportLevel::FallbackCopy;
  const std::vector<OperationCapability> caps = caps_of({f32_add_plan(), f32_relu_plan()});
  const std::vector<ExecutionAxes> axes{wide, ExecutionAxes{}};
  EXPECT_THROW_EXACTLY(register_operation_capabilities(C::cls(), caps, std::vector<ExecutionAxes>{wide}), ValueError);
  register_operation_capabilities(C::cls(), caps, axes);
  EXPECT_EQ(execution_axes(C::cls(), caps[0]), wide);
  EXPECT_EQ(execution_axes(C::cls(), caps[1]), ExecutionAxes{});
  EXPECT_TRUE(require_capability(C::cls(), f32_add_plan()) == OperationCapability::from_plan(f32_add_plan()));
  // The structured query reads the axes kept beside the entry.
  EXPECT_NO_THROW(require_capability(C::cls(), "add", DType::Float32(), ExecutionAxis::caller_output));
  EXPECT_THROW_EXACTLY(require_capability(C::cls(), "add", DType::Float32(), ExecutionAxis::strided_output),
                       UnsupportedOpDType);
}

TEST(BackendCapabilities_Registration, DuplicateExactShapeMeansTheSameSixFields) {
  const OperationCapability a = OperationCapability::from_plan(f32_add_plan());
  const OperationCapability b(a.operation(), std::vector<OperandCapability>(a.operands().begin(), a.operands().end()),
                              a.compute(), a.accumulation(), a.accumulator_dtype(), &a.output());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<1302>::cls(), std::vector<OperationCapability>{a, b}),
                       ValueError);
  // A dependent snapshot's duplicate is the same six fields too.
  TestDependent dependent([&] { return std::vector<OperationCapability>{a, b}; }, false);
  EXPECT_THROW_EXACTLY(dependent.finalize(), ValueError);
}

}  // namespace
