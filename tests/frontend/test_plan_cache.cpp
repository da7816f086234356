// Issue 20 step 1: "Plans are cached for every operation family".
// Resolution is a pure function of the operation, the operands (dtypes; weak
// scalars by kind and exact value) and the execution options, so the front
// end remembers each plan per thread (frontend::cached_plan): a repeated call
// of any family resolves nothing. A failing resolution is never remembered,
// and a weak scalar's value is part of the key (the Int32 rules of mul and
// pow read it).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "policy/resolution_probe.h"
#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

std::uint64_t resolutions_of(const std::function<void()>& call) {
  const std::uint64_t before = policy_probe::resolutions_on_this_thread();
  call();
  return policy_probe::resolutions_on_this_thread() - before;
}

void every_family_resolves_once();

TEST(PlanCache_Issue20Step1, EveryOperationFamilyResolvesItsPlanOncePerThread) {
  // On a fresh thread: the per-thread table remembers 256 plans, and a
  // whole-suite run in one process fills the main thread's first.
  std::thread fresh(every_family_resolves_once);
  fresh.join();
}

void every_family_resolves_once() {
  const NoGradGuard inference;
  const Tensor x = make_tensor<CPU>({1.0f, -2.0f, 3.0f, -4.0f, 5.0f, 6.0f}, Shape{2, 3});
  const Tensor y = make_tensor<CPU>({0.5f, 2.0f, -1.0f, 4.0f, 1.0f, 3.0f}, Shape{2, 3});
  const Tensor m = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{3, 2});
  const Tensor i = make_tensor<CPU>({2, 0, 1, 1, 0, 2}, Shape{2, 3});
  const Tensor n = make_tensor<CPU>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor image = make_tensor<CPU>(std::vector<float>(16, 1.0f), Shape{1, 1, 4, 4});
  const Tensor kernel = make_tensor<CPU>(std::vector<float>(4, 0.5f), Shape{1, 1, 2, 2});
  const std::vector<std::pair<std::string, std::function<void()>>> families = {
      {"binary", [&] { (void)add(x, y); }},
      {"binary broadcast", [&] { (void)mul(x, make_tensor<CPU>({1.0f, 2.0f, 3.0f}, Shape{3})); }},
      {"tensor, weak scalar", [&] { (void)mul(x, 2.5); }},
      {"Int32 tensor, integer scalar", [&] { (void)mul(n, 3); }},
      {"weak scalar, tensor", [&] { (void)pow(2.0, x); }},
      {"ternary", [&] { (void)clamp(x, WeakScalar(-1.0), WeakScalar(1.0)); }},
      {"select", [&] { (void)select(lt(x, y), x, y); }},
      {"logical_not", [&] { (void)logical_not(x); }},
      {"unary", [&] { (void)relu(x); }},
      {"unary with options", [&] { (void)elu(x, 0.5); }},
      {"reduce_sum", [&] { (void)reduce_sum(x, Axes{1}); }},
      {"reduce_sum with an accumulator",
       [&] { (void)reduce_sum(x, Axes::all(), false, OperationExecutionOptions("reduce_sum", &DType::Float32())); }},
      {"reduce_max", [&] { (void)reduce_max(x); }},
      {"argmax", [&] { (void)argmax(x, std::int64_t{1}); }},
      {"cumsum", [&] { (void)cumsum(x, 0); }},
      {"sort", [&] { (void)sort(x); }},
      {"topk", [&] { (void)topk(x, 2); }},
      {"matmul", [&] { (void)matmul(x, m); }},
      {"conv_general", [&] { (void)conv_general(image, kernel, ConvOptions{}); }},
      {"gather", [&] { (void)gather(x, i, 1); }},
      {"scatter_add", [&] { (void)scatter_add(x, i, y, 1); }},
  };
  for (const auto& [family, call] : families) {
    SCOPED_TRACE(family);
    call();  // the first call on this thread may resolve
    EXPECT_EQ(resolutions_of(call), 0u) << "the second call resolved its plan again";
  }
}

TEST(PlanCache_Issue20Step1, AFailingResolutionIsNeverRemembered) {
  const Tensor n = make_tensor<CPU>({1, 2}, Shape{2});
  const WeakScalar too_big = WeakScalar::integer(int128(1) << 40);
  for (int attempt = 0; attempt < 2; ++attempt) {
    SCOPED_TRACE(attempt);
    EXPECT_EQ(resolutions_of([&] { EXPECT_THROW_EXACTLY((void)mul(n, too_big), OverflowError); }), 1u);
  }
}

TEST(PlanCache_Issue20Step1, AWeakScalarsValueIsPartOfTheKey) {
  // pow(Int32, integer exponent) stays Int32 for exponents in
  // [0, POW_INTEGER_EXPONENT_MAX] and is Float32 otherwise: a cache keyed by
  // the scalar's kind alone would hand the first call's plan to the second.
  const Tensor n = make_tensor<CPU>({1, 2}, Shape{2});
  EXPECT_EQ(&pow(n, 2).dtype(), &DType::Int32());
  EXPECT_EQ(&pow(n, -1).dtype(), &DType::Float32());
  EXPECT_EQ(&pow(n, 2).dtype(), &DType::Int32());
  // Reals: the plan never depends on the value, but 0.0 and -0.0 are
  // distinct keys (keyed by bits), and both resolve to the same plan.
  const Tensor x = make_tensor<CPU>({1.0f, 2.0f}, Shape{2});
  EXPECT_EQ(mul(x, 0.0).values()[1], Value::from_float32(0.0f));
  EXPECT_EQ(mul(x, -0.0).values()[1], Value::from_float32(-0.0f));
}

// Backend-capabilities: "Unsupported plans fail before execution work". A
// cached plan also remembers the dispatch record it was last admitted with
// (storage::GateMemo), so a loop calling one operation skips the search;
// that record belongs to one exact class: the same plan on a class without
// the capability is refused every time, and the first class still runs.
TEST(PlanCache_Issue20Step1, ARememberedAdmissionBelongsToOneCarrierClass) {
  const NoGradGuard inference;
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f}, Shape{2});
  const Tensor b = make_tensor<CPU>({3.0f, 4.0f}, Shape{2});
  const Tensor g = make_tensor<Generic>({1.0f, 2.0f}, Shape{2});
  const Tensor h = make_tensor<Generic>({3.0f, 4.0f}, Shape{2});
  const Tensor f(FileBacked::create(std::nullopt, DType::Float32(), true, 2), Shape{2});
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    EXPECT_EQ(add(a, b).values()[1], Value::from_float32(6.0f));  // CPU admitted (and remembered)
    EXPECT_THROW_EXACTLY((void)add(f, f), UnsupportedOperationPlan);
    EXPECT_EQ(add(g, h).values()[1], Value::from_float32(6.0f));  // Generic's own record
    EXPECT_TRUE(add(g, h).carrier_type() == carrier_class<Generic>());
    EXPECT_THROW_EXACTLY((void)add(f, f), UnsupportedOperationPlan);
  }
}

}  // namespace
