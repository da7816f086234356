// Issue 10, item 1: a caller-provided output belongs to exactly the call it
// is passed to (<strideweave/output.h>). The removed compute_into(out, fn)
// handed its output to the first kernel that ran inside `fn`:
// compute_into(out, [&] { return add(mul(x, x), x); }) left out = [1, 4] (the
// inner mul) instead of [2, 6]. These tests run on every shipped carrier.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "support/expect_exactly.h"
#include "support/shipped_types.h"

namespace {

using namespace strideweave;

// These numeric tests run without a graph: under grad mode an accumulation
// into a caller-provided output is refused (docs/autograd.md, "Recording").
template <class C>
class CallerOutput : public ::testing::Test {
  NoGradGuard no_graph_;
};
TYPED_TEST_SUITE(CallerOutput, sw_support::ShippedCarrierTypes, sw_support::ShippedCarrierName);

std::vector<float> floats(const Tensor& t) { return TypedTensor<float>(t).values(); }

TYPED_TEST(CallerOutput, NestedExpressionWritesOnlyTheOuterCallsResult) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const Tensor out = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{2});
  const Tensor r = add(mul(x, x), x, into(out));
  EXPECT_TRUE(r.is(out)) << "the call returns the caller's output handle itself";
  EXPECT_EQ(floats(out), (std::vector<float>{2, 6}));
  EXPECT_EQ(out.carrier()->version(), 1u) << "one versioned write for the one call that owns the output";
  EXPECT_EQ(floats(x), (std::vector<float>{1, 2}));
  // Two outputs in one expression: each call writes its own.
  const Tensor inner = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{2});
  add(mul(x, x, into(inner)), x, into(out));
  EXPECT_EQ(floats(inner), (std::vector<float>{1, 4}));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 6}));
  EXPECT_EQ(inner.carrier()->version(), 1u);
  EXPECT_EQ(out.carrier()->version(), 2u);
  // Accumulation belongs to its call as well.
  add(mul(x, x), x, accumulate_into(out));
  EXPECT_EQ(floats(out), (std::vector<float>{4, 12}));
}

TYPED_TEST(CallerOutput, AFailureAnywhereInTheExpressionLeavesTheOutputUnchanged) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const Tensor three = make_tensor<TypeParam>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor out = make_tensor<TypeParam>({-5.0f, -5.0f}, Shape{2});
  // The inner call raises before the outer one runs.
  EXPECT_THROW_EXACTLY(add(mul(x, three), x, into(out)), ValueError);
  // The outer call raises after the inner one ran.
  EXPECT_THROW_EXACTLY(add(mul(x, x), three, into(out)), ValueError);
  // An exception of the caller's own while the arguments are evaluated.
  auto throwing = [&]() -> Tensor { throw std::runtime_error("the caller's own failure"); };
  EXPECT_THROW(add(throwing(), x, into(out)), std::runtime_error);
  EXPECT_EQ(floats(out), (std::vector<float>{-5, -5}));
  EXPECT_EQ(out.carrier()->version(), 0u);
  // A checked Int32 overflow in the outer call writes nothing either.
  const Tensor big = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{INT32_MAX_VALUE, 1}, Shape{2});
  const Tensor iout = make_tensor<TypeParam>(std::initializer_list<std::int32_t>{-7, -7}, Shape{2});
  EXPECT_THROW_EXACTLY(add(mul(big, 1), big, into(iout)), OverflowError);
  EXPECT_EQ(TypedTensor<std::int32_t>(iout).values(), (std::vector<std::int32_t>{-7, -7}));
  EXPECT_EQ(iout.carrier()->version(), 0u);
}

TYPED_TEST(CallerOutput, ConcurrentCallsEachWriteTheirOwnOutput) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] {
      const NoGradGuard no_graph;  // grad mode is per thread
      const float base = static_cast<float>(t + 1);
      const Tensor x = make_tensor<TypeParam>({base, 2 * base}, Shape{2});
      const Tensor out = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{2});
      for (int r = 0; r < kRounds; ++r) {
        add(mul(x, x), x, into(out));
        const std::vector<float> got = floats(out);
        if (got != std::vector<float>{base * base + base, 4 * base * base + 2 * base}) ++wrong[static_cast<std::size_t>(t)];
      }
      if (out.carrier()->version() != static_cast<std::uint64_t>(kRounds)) ++wrong[static_cast<std::size_t>(t)];
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

TYPED_TEST(CallerOutput, ByNameCallsTakeTheOutputInTheirExecutionRequest) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  const Tensor out = make_tensor<TypeParam>({0.0f, 0.0f}, Shape{2});
  ExecutionRequest request;
  request.out = into(out);
  const std::vector<CallOperand> operands{mul(x, x), x};
  const CallResult r = call_operation("add", operands, {}, request);
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_TRUE(r.results.front().is(out));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 6}));
  // Two results take no output.
  EXPECT_THROW_EXACTLY(call_operation("sort", std::vector<CallOperand>{x}, {}, request), TypeError);
  EXPECT_EQ(out.carrier()->version(), 1u);
}

}  // namespace
