// Finite-difference gradient checks of every VJP on every shipped carrier
// (issue: "derived from the registry rather than hand-listed"). The
// operations come from autograd::differentiable_operations() (the registry's
// executable plans that output Float32 from a Float32 input); a
// differentiable operation without a VJP or without cases fails its test.
// Step and tolerance: docs/autograd.md, "Gradient checks".
#include <strideweave/autograd.h>
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

namespace sw = strideweave;

namespace {

// A zero-sized prototype of the shipped carrier named `carrier`.
std::shared_ptr<sw::Carrier> prototype(const std::string& carrier) {
  const sw::ShippedCarrier* shipped = sw::find_shipped_carrier(carrier);
  if (!shipped) throw std::invalid_argument("no shipped carrier " + carrier);
  return shipped->make({}, sw::DType::Float32());
}

// Every shipped carrier's name (<strideweave/carriers/shipped.h>).
std::vector<std::string> shipped_names() {
  std::vector<std::string> out;
  for (const sw::ShippedCarrier& c : sw::shipped_carriers()) out.emplace_back(c.name);
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class AutogradGradientCheck : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(AutogradGradientCheck, VjpMatchesCentralDifferences) {
  const auto& [carrier, operation] = GetParam();
  const sw::autograd::GradientCheckReport r =
      sw::autograd::check_operation_gradients(*prototype(carrier), operation);
  ASSERT_EQ(r.operations, 1) << carrier << " executes no differentiable plan of " << operation;
  EXPECT_EQ(r.checked, 1) << join(r.failures);
  EXPECT_EQ(r.failed, 0) << join(r.failures);
}

INSTANTIATE_TEST_SUITE_P(Registry, AutogradGradientCheck,
                         ::testing::Combine(::testing::ValuesIn(shipped_names()),
                                            ::testing::ValuesIn(sw::autograd::differentiable_operations())),
                         [](const auto& p) {
                           return std::get<0>(p.param) + "_" + std::get<1>(p.param);
                         });

TEST(AutogradGradientCheckSummary, EveryDifferentiableOperationIsCheckedOnEachCarrier) {
  const std::size_t expected = sw::autograd::differentiable_operations().size();
  for (const std::string& carrier : shipped_names()) {
    const sw::autograd::GradientCheckReport r = sw::autograd::check_gradients(*prototype(carrier));
    EXPECT_EQ(r.carrier, carrier);
    EXPECT_EQ(r.operations, static_cast<std::int64_t>(expected)) << carrier;
    EXPECT_EQ(r.checked, r.operations) << join(r.failures);
    EXPECT_EQ(r.failed, 0) << join(r.failures);
  }
}

// The check records its own calls: it works the same inside a caller's
// no_grad() scope, and leaves the caller's grad mode as it was.
TEST(AutogradGradientCheckSummary, RunsInsideACallersNoGradScope) {
  const sw::NoGradGuard off;
  const sw::autograd::GradientCheckReport r = sw::autograd::check_operation_gradients(*prototype("CPU"), "mul");
  EXPECT_EQ(r.checked, 1) << join(r.failures);
  EXPECT_EQ(r.failed, 0) << join(r.failures);
  EXPECT_FALSE(sw::is_grad_enabled());
}

}  // namespace
