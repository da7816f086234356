// The internal kernel-table registration (src/execution/kernel_table.h) has
// register_operation_capabilities' eligibility rules (issue 10 item 4;
// backend-capabilities.md "Public registration is complete, atomic, and
// one-shot"): it used to accept any identity, including a non-carrier type,
// the Carrier root and a DependentCarrier class.
#include <gtest/gtest.h>

#include "capability/capability_test_support.h"
#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace sw_caps {
namespace {

KernelTable one_add_table() {
  KernelTable table;
  table.add(f32_add_plan(), [](const KernelCall&) {});
  return table;
}

TEST(KernelRegistration_Eligibility, RejectsWhatIsNotAnIndependentCarrierClass) {
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<int>(), one_add_table()), TypeError);
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<Carrier>(), one_add_table()), TypeError);
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<TestDependent>(), one_add_table()), TypeError);
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<DependentCarrier>(), one_add_table()), TypeError);
  EXPECT_EQ(kernel_table(carrier_class<int>()), nullptr);
  EXPECT_EQ(kernel_table(carrier_class<TestDependent>()), nullptr);
}

TEST(KernelRegistration_Eligibility, RejectsShippedDeclaredAndObservedClasses) {
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<CPU>(), one_add_table()), TypeError);
  EXPECT_THROW_EXACTLY(register_kernel_table(carrier_class<Generic>(), one_add_table()), TypeError);

  register_operation_capabilities(Custom<1000>::cls(), caps_of({f32_relu_plan()}));
  EXPECT_THROW_EXACTLY(register_kernel_table(Custom<1000>::cls(), one_add_table()), TypeError);
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<1000>::cls())), std::vector<OperationPlan>{f32_relu_plan()});

  EXPECT_TRUE(capabilities_for_carrier_class(Custom<1001>::cls()).empty());  // observed: sealed empty
  EXPECT_THROW_EXACTLY(register_kernel_table(Custom<1001>::cls(), one_add_table()), TypeError);
  EXPECT_EQ(kernel_table(Custom<1001>::cls()), nullptr);
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<1001>::cls()).empty());
}

TEST(KernelRegistration_Eligibility, OneTablePerClassAndARejectedCallChangesNothing) {
  register_kernel_table(Custom<1002>::cls(), one_add_table());
  EXPECT_THROW_EXACTLY(register_kernel_table(Custom<1002>::cls(), one_add_table()), TypeError);
  ASSERT_NE(kernel_table(Custom<1002>::cls()), nullptr);
  EXPECT_EQ(kernel_table(Custom<1002>::cls())->plans().size(), 1u);
  // KernelTable.add refuses a duplicate shape.
  KernelTable bad;
  bad.add(f32_add_plan(), [](const KernelCall&) {});
  EXPECT_THROW_EXACTLY(bad.add(f32_add_plan(), [](const KernelCall&) {}), ValueError);
}

}  // namespace
}  // namespace sw_caps
