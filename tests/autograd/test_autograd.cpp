// Scenario tests of reverse-mode autograd (core-concepts.md section 6,
// operation-semantics.md "Automatic differentiation belongs to the semantic
// definition"; design in docs/autograd.md). Suites are named after the
// requirement they check. The finite-difference checks of every VJP are in
// test_gradcheck.cpp.
#include <strideweave/autograd.h>
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::CPU;
using sw::DType;
using sw::Generic;
using sw::Shape;
using sw::Tensor;

namespace {

Tensor F(std::initializer_list<float> v, const Shape& s) { return sw::make_tensor<CPU>(v, s); }
Tensor leaf(std::initializer_list<float> v, const Shape& s) {
  Tensor t = F(v, s);
  return t;
}
std::vector<float> floats(const Tensor& t) { return sw::TypedTensor<float>(t).values(); }
std::vector<float> grad_of(const Tensor& t) {
  const std::optional<Tensor> g = t.grad();
  EXPECT_TRUE(g.has_value());
  return g ? floats(*g) : std::vector<float>{};
}
// A scalar-like loss of shape (1): the shape the implicit cotangent accepts.
Tensor total(const Tensor& t) { return sw::reduce_sum(t).reshape(Shape{1}); }

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

// ---- 6.2: recording

TEST(CoreConcepts_6_2_Recording, AUserBuiltFloat32TensorTakesPartWithoutAnyFlag) {
  // core-concepts 6.2: grad mode on, a differentiable positional input and
  // a differentiable result decide recording; nothing opts in.
  Tensor x = F({1, 2, 3}, Shape{3});
  Tensor y = sw::mul(x, 2.0);
  ASSERT_TRUE(y.autograd_ctx());
  EXPECT_EQ(y.autograd_ctx()->name(), "mul");
  EXPECT_EQ(y.autograd_ctx()->_operation_name(), std::optional<std::string>("mul"));
  EXPECT_EQ(y.autograd_ctx()->_dispatch_carrier_class(), std::optional(sw::carrier_class<CPU>()));
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());  // a read-only report of the rule
  EXPECT_TRUE(y.autograd_ctx()->plan().has_value());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(x.autograd_ctx());
  total(y).backward();
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 2, 2}));  // the user's leaf receives .grad when reached
}

TEST(CoreConcepts_6_2_Recording, TheSavedInputsAreThePositionalTensorArgumentsPerOccurrence) {
  // Saved inputs: exactly the positional Tensor arguments in argument order,
  // each occurrence saved, the weak scalar and options left out.
  Tensor x = F({1, 2, 3}, Shape{3});
  const Tensor scaled = sw::mul(x, 2.0);
  const std::span<const Tensor> scalar_call = scaled.autograd_ctx()->inputs();
  ASSERT_EQ(scalar_call.size(), 1u);
  EXPECT_TRUE(scalar_call[0].is(x));
  const Tensor twice = sw::add(x, x);
  ASSERT_EQ(twice.autograd_ctx()->inputs().size(), 2u);
  EXPECT_TRUE(twice.autograd_ctx()->inputs()[0].is(x));
  EXPECT_TRUE(twice.autograd_ctx()->inputs()[1].is(x));
  // A broadcast operand is saved as the caller passed it, not as the
  // broadcast view the kernel read.
  Tensor row = F({10, 20, 30}, Shape{3});
  Tensor grid = F({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor sum = sw::add(grid, row);
  ASSERT_EQ(sum.autograd_ctx()->inputs().size(), 2u);
  EXPECT_TRUE(sum.autograd_ctx()->inputs()[0].is(grid));
  EXPECT_TRUE(sum.autograd_ctx()->inputs()[1].is(row));
  // One version snapshot per saved input: each distinct carrier with its version.
  const auto versions = sum.autograd_ctx()->input_versions();
  ASSERT_EQ(versions.size(), 2u);
  ASSERT_EQ(versions[1].size(), 1u);
  EXPECT_EQ(versions[1][0].carrier, row.carrier());
  EXPECT_EQ(versions[1][0].version, row.carrier()->version());
  // Operation.backward returns one entry per saved input, in its shape.
  const auto g = sum.autograd_ctx()->backward(F({1, 1, 1, 1, 1, 1}, Shape{2, 3}));
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(floats(*g[1]), (std::vector<float>{2, 2, 2}));
}

TEST(CoreConcepts_6_2_Recording, NoNodeWithoutADifferentiableInputOrWithoutGradMode) {
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 2, 3}, Shape{3});
  EXPECT_FALSE(sw::mul(i, 2).autograd_ctx());
  Tensor x = F({1, 2, 3}, Shape{3});
  sw::NoGradGuard off;
  EXPECT_FALSE(sw::exp(x).autograd_ctx());
}

TEST(CoreConcepts_6_2_Recording, Int32AndBoolResultsAttachNoNode) {
  Tensor x = leaf({3, 1, 2}, Shape{3});
  Tensor y = F({2, 2, 2}, Shape{3});
  EXPECT_FALSE(sw::lt(x, y).grad_fn());        // Bool
  EXPECT_FALSE(sw::logical_not(x).grad_fn());  // Bool
  EXPECT_FALSE(sw::argmax(x).grad_fn());       // Int32
  const sw::SortResult s = sw::sort(x);
  EXPECT_TRUE(s.values.grad_fn());
  EXPECT_FALSE(s.indices.grad_fn());  // Int32
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 2, 3}, Shape{3});
  EXPECT_FALSE(sw::relu(i).grad_fn());
  EXPECT_FALSE(sw::mul(i, i).grad_fn());
}

TEST(CoreConcepts_6_2_Recording, MixedInt32AndFloat32OperandsRecordAndDifferentiateOnlyTheFloat) {
  Tensor x = leaf({1, 2, 3}, Shape{3});
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{4, 5, 6}, Shape{3});
  Tensor y = sw::mul(i, x);
  ASSERT_TRUE(y.grad_fn());
  total(y).backward();
  EXPECT_EQ(grad_of(x), (std::vector<float>{4, 5, 6}));
}

TEST(CoreConcepts_6_2_Recording, ViewsOfADifferentiableTensorAreRecorded) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(x.permute({1, 0}).grad_fn()->name(), "permute");
  EXPECT_EQ(x.slice(1, 0, 2).grad_fn()->name(), "slice");
  EXPECT_EQ(x.reshape(Shape{6}).grad_fn()->name(), "reshape");
  EXPECT_EQ(x.unsqueeze(0).grad_fn()->name(), "unsqueeze");
  EXPECT_EQ(x.unsqueeze(0).squeeze().grad_fn()->name(), "squeeze");
  EXPECT_EQ(x.broadcast_to(Shape{4, 2, 3}).grad_fn()->name(), "broadcast_to");
  EXPECT_TRUE(x.permute({1, 0}).autograd_ctx()->inputs()[0].is(x));
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 2}, Shape{2});
  EXPECT_FALSE(i.permute({0}).grad_fn());
}

TEST(CoreConcepts_6_2_Recording, DetachGivesALeafHandleOnTheSameStorage) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 2.0);
  Tensor d = y.detach();
  EXPECT_EQ(d.carrier(), y.carrier());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.is(y));
  // The detached handle is a leaf of its own: a graph through it stops there.
  Tensor z = sw::mul(d, 3.0);
  total(z).backward();
  EXPECT_EQ(grad_of(d), (std::vector<float>{3, 3}));
  EXPECT_FALSE(x.grad());
}

// ---- 6.3: grad mode

TEST(CoreConcepts_6_3_GradMode, NoGradRecordsNothing) {
  Tensor x = leaf({1, 2, 3}, Shape{3});
  {
    sw::NoGradGuard guard;
    EXPECT_FALSE(sw::is_grad_enabled());
    Tensor y = sw::mul(x, 2.0);
    EXPECT_FALSE(y.grad_fn());
    EXPECT_FALSE(x.slice(0, 0, 2).grad_fn());
  }
  EXPECT_TRUE(sw::is_grad_enabled());
  {
    auto guard = sw::no_grad();
    EXPECT_FALSE(sw::add(x, x).grad_fn());
  }
  EXPECT_TRUE(sw::add(x, x).grad_fn());
}

TEST(CoreConcepts_6_3_GradMode, SetGradEnabledAndGuardsRestore) {
  EXPECT_TRUE(sw::is_grad_enabled());
  sw::set_grad_enabled(false);
  EXPECT_FALSE(sw::is_grad_enabled());
  {
    sw::GradModeGuard on(true);
    EXPECT_TRUE(sw::is_grad_enabled());
    {
      sw::NoGradGuard off;
      EXPECT_FALSE(sw::is_grad_enabled());
    }
    EXPECT_TRUE(sw::is_grad_enabled());
  }
  EXPECT_FALSE(sw::is_grad_enabled());
  sw::set_grad_enabled(true);
  try {
    sw::NoGradGuard off;
    throw sw::ValueError("leave the scope by an exception");
  } catch (const sw::ValueError&) {
  }
  EXPECT_TRUE(sw::is_grad_enabled());
}

TEST(CoreConcepts_6_3_GradMode, GradModeIsThreadLocal) {
  Tensor x = leaf({1, 2}, Shape{2});
  std::latch disabled(1), observed(1);
  std::atomic<bool> other_thread_enabled{false}, other_thread_recorded{false}, first_recorded{true};
  std::thread first([&] {
    sw::NoGradGuard off;
    disabled.count_down();
    observed.wait();  // keep grad mode off here while the other thread looks
    first_recorded = static_cast<bool>(sw::mul(x, 2.0).grad_fn());
  });
  std::thread second([&] {
    disabled.wait();
    other_thread_enabled = sw::is_grad_enabled();
    other_thread_recorded = static_cast<bool>(sw::mul(x, 2.0).grad_fn());
    observed.count_down();
  });
  first.join();
  second.join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_TRUE(other_thread_recorded);
  EXPECT_FALSE(first_recorded);
  // A new thread starts enabled even while this one is disabled.
  sw::NoGradGuard off;
  bool fresh_thread_enabled = false;
  std::thread([&] { fresh_thread_enabled = sw::is_grad_enabled(); }).join();
  EXPECT_TRUE(fresh_thread_enabled);
}

// ---- 6.4: backward and cotangents

TEST(CoreConcepts_6_4_Backward, ChainRuleThroughSeveralOperations) {
  Tensor x = leaf({1, 2, 3}, Shape{3});
  Tensor w = leaf({0.5f, -1, 2}, Shape{3});
  total(sw::add(sw::mul(x, w), x)).backward();  // d/dx = w + 1, d/dw = x
  EXPECT_EQ(grad_of(x), (std::vector<float>{1.5f, 0, 3}));
  EXPECT_EQ(grad_of(w), (std::vector<float>{1, 2, 3}));
}

TEST(CoreConcepts_6_4_Backward, EachNodeOnceWithContributionsSummedFirst) {
  Tensor x = leaf({0.5f, 1}, Shape{2});
  Tensor y = sw::mul(x, x);  // a diamond: y feeds two branches
  y.retain_grad();
  total(sw::add(sw::mul(y, 2.0), sw::mul(y, 3.0))).backward();
  EXPECT_EQ(grad_of(y), (std::vector<float>{5, 5}));            // both branches summed before y's node
  EXPECT_EQ(grad_of(x), (std::vector<float>{5.0f, 10.0f}));     // 5 * 2x, computed once
}

TEST(CoreConcepts_6_4_Backward, ImplicitUnitCotangentOnlyForOneTopLevelModeOfExtentOne) {
  Tensor x = leaf({1, 2}, Shape{2});
  EXPECT_NO_THROW(sw::reduce_sum(x, {0}, true).backward());  // shape (1)
  EXPECT_EQ(grad_of(x), (std::vector<float>{1, 1}));
  EXPECT_NO_THROW(sw::reduce_sum(x).backward());  // shape (): the rank-0 scalar is accepted too
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 2}));
  EXPECT_THROW(sw::mul(x, 2.0).backward(), sw::ValueError);    // shape (2)
  EXPECT_THROW(sw::reduce_sum(x.unsqueeze(0), {0, 1}, true).backward(), sw::ValueError);  // shape (1, 1)
}

TEST(CoreConcepts_6_4_Backward, ExplicitCotangentRules) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 3.0);
  EXPECT_THROW(y.backward(F({1, 1, 1}, Shape{3})), sw::ValueError);
  EXPECT_THROW(y.backward(sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 1}, Shape{2})), sw::TypeError);
  EXPECT_THROW(y.backward(sw::make_tensor<Generic>({1.0f, 1.0f}, Shape{2})), sw::TypeError);
  EXPECT_FALSE(x.grad());  // the failed calls did nothing
  y.backward(F({1, -2}, Shape{2}));
  EXPECT_EQ(grad_of(x), (std::vector<float>{3, -6}));
}

TEST(CoreConcepts_6_4_Backward, BroadcastingGradientsAreReducedToTheInputShape) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = leaf({10, 20, 30}, Shape{3});
  Tensor c = leaf({7, 8}, Shape{2, 1});
  Tensor y = sw::add(sw::mul(a, b), c);  // (2, 3)
  y.backward(F({1, 1, 1, 1, 1, 1}, Shape{2, 3}));
  EXPECT_EQ(a.grad()->shape(), a.shape());
  EXPECT_EQ(b.grad()->shape(), b.shape());
  EXPECT_EQ(c.grad()->shape(), c.shape());
  EXPECT_EQ(grad_of(a), (std::vector<float>{10, 10, 20, 20, 30, 30}));  // logical order: (i, j) at i + 2j
  EXPECT_EQ(grad_of(b), (std::vector<float>{3, 7, 11}));                // column sums of a
  EXPECT_EQ(grad_of(c), (std::vector<float>{3, 3}));
}

TEST(CoreConcepts_6_4_Backward, GradientsFlowThroughExplicitViews) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor s = x.slice(1, 1, 3).permute({1, 0});  // (2, 2): columns 1 and 2, transposed
  // The cotangent of an injective tensor has exactly its layout (here (2, 2)
  // with strides (2, 1)); {1, 3, 2, 4} in that layout is {1, 2, 3, 4} in logical order.
  const std::vector<sw::Value> slots{sw::Value::from_float32(1), sw::Value::from_float32(3), sw::Value::from_float32(2),
                                     sw::Value::from_float32(4)};
  EXPECT_THROW_EXACTLY(s.backward(F({1, 2, 3, 4}, Shape{2, 2})), sw::ValueError);  // compact: another layout
  s.backward(Tensor(CPU::from_values(slots, DType::Float32()), 0, s.layout()));
  EXPECT_EQ(grad_of(x), (std::vector<float>{0, 0, 1, 3, 2, 4}));
  // as_strided without overlap: the gradient lands on the viewed elements.
  Tensor v = leaf({1, 2, 3, 4}, Shape{4});
  Tensor odd = v.as_strided(sw::Layout(Shape{2}, sw::Stride{2}), 1);  // [v1 v3]
  odd.backward(Tensor(CPU::from_values(std::vector<sw::Value>{sw::Value::from_float32(5), sw::Value::from_float32(0),
                                                              sw::Value::from_float32(7)},
                                       DType::Float32()),
                      0, odd.layout()));  // the cotangent has odd's exact layout (2):(2)
  EXPECT_EQ(grad_of(v), (std::vector<float>{0, 5, 0, 7}));
}

TEST(CoreConcepts_6_4_Backward, AliasingThatBroadcastModesDoNotExplainIsRefused) {
  // Upstream autograd, scenario "Refuse aliasing that broadcast modes do not
  // explain": overlapping windows ((2, 3):(1, 1)) reached by a traversal are
  // a ValueError before any .grad changes, as the root or inside the graph.
  Tensor v = leaf({1, 2, 3, 4}, Shape{4});
  Tensor windows = v.as_strided(sw::Layout(Shape{2, 3}, sw::Stride{1, 1}), 0);  // [v0 v1 v2], [v1 v2 v3]
  EXPECT_THROW_EXACTLY(windows.backward(F({1, 1, 1, 1, 1, 1}, Shape{2, 3})), sw::ValueError);
  EXPECT_THROW_EXACTLY(total(windows).backward(), sw::ValueError);
  EXPECT_FALSE(v.grad());
  // Broadcast aliasing is explained by its stride-0 mode: the sum per slot.
  Tensor b(CPU::from_values(std::vector<sw::Value>{sw::Value::from_float32(1), sw::Value::from_float32(2)},
                            DType::Float32()),
           0, sw::Layout(Shape{3, 2}, sw::Stride{0, 1}));  // a broadcast leaf
  b.backward(F({1, 2, 3, 4, 5, 6}, Shape{3, 2}));  // an injective cotangent of b's shape
  EXPECT_EQ(b.grad()->layout(), sw::Layout::compact(Shape{3, 2}));
  EXPECT_EQ(grad_of(b), (std::vector<float>{6, 6, 6, 15, 15, 15}));
}

TEST(CoreConcepts_6_4_Backward, ATensorWithoutANodeAccumulatesItsCotangentAndPropagatesNoFurther) {
  // Upstream autograd: "A backward call on a Tensor that has no autograd node
  // SHALL accumulate the supplied cotangent into that Tensor's .grad".
  Tensor x = F({1}, Shape{1});
  x.backward();
  EXPECT_EQ(grad_of(x), (std::vector<float>{1}));
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1}, Shape{1});
  EXPECT_THROW(i.backward(), sw::RuntimeError);  // not differentiable
}

// ---- 6.5: accumulation and retain_grad

TEST(CoreConcepts_6_5_Accumulation, LeavesAccumulateOverTwoBackwardCallsInFreshStorage) {
  Tensor x = leaf({1, 2}, Shape{2});
  total(sw::mul(x, 3.0)).backward();
  const Tensor first = *x.grad();
  EXPECT_EQ(floats(first), (std::vector<float>{3, 3}));
  EXPECT_NE(first.carrier(), x.carrier());
  EXPECT_EQ(first.carrier_type(), x.carrier_type());
  total(sw::mul(x, x)).backward();
  const Tensor second = *x.grad();
  EXPECT_EQ(floats(second), (std::vector<float>{5, 7}));
  EXPECT_NE(second.carrier(), first.carrier());                   // the sum is fresh storage
  EXPECT_EQ(floats(first), (std::vector<float>{3, 3}));           // the earlier gradient is untouched
  x.set_grad(std::nullopt);
  EXPECT_FALSE(x.grad());
}

// Accumulation is all or nothing: when one leaf cannot take its gradient
// (its existing .grad's carrier was released), backward raises before any
// .grad changes and before the graph is released, so it can be retried.
TEST(CoreConcepts_6_5_Accumulation, AFailedAccumulationChangesNoGradAndReleasesNothing) {
  Tensor a = leaf({1, 2}, Shape{2});
  Tensor b = leaf({1, 2}, Shape{2});
  Tensor c = leaf({1, 2}, Shape{2});
  total(sw::add(sw::add(a, b), c)).backward();  // every .grad is {1, 1}
  b.grad()->carrier()->release();
  Tensor loss = total(sw::add(sw::add(sw::mul(a, 2.0), sw::mul(b, 3.0)), sw::mul(c, 4.0)));
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("released"), std::string::npos) << message;
  EXPECT_EQ(grad_of(a), (std::vector<float>{1, 1}));
  EXPECT_EQ(grad_of(c), (std::vector<float>{1, 1}));
  EXPECT_FALSE(loss.grad_fn()->is_released());
  b.set_grad(std::nullopt);
  loss.backward();  // the same graph, retried
  EXPECT_EQ(grad_of(a), (std::vector<float>{3, 3}));
  EXPECT_EQ(grad_of(b), (std::vector<float>{3, 3}));
  EXPECT_EQ(grad_of(c), (std::vector<float>{5, 5}));
}

TEST(CoreConcepts_6_5_Accumulation, TheGradientLivesOnTheLeafsExactCarrierClass) {
  Tensor g = sw::make_tensor<Generic>({1.0f, 2.0f}, Shape{2});
  sw::reduce_sum(sw::mul(g, g), {0}, true).backward();
  EXPECT_EQ(g.grad()->carrier_type(), sw::carrier_class<Generic>());
  EXPECT_EQ(floats(*g.grad()), (std::vector<float>{2, 4}));
  EXPECT_TRUE(g.grad()->layout().is_compact());
}

TEST(CoreConcepts_6_5_Accumulation, AHierarchicalLeafGetsItsOwnShape) {
  const Shape nested{2, sw::IntTuple{2, 2}};  // (2,(2,2)): top-level extents (2, 4)
  Tensor x = F({1, 2, 3, 4, 5, 6, 7, 8}, nested);
  total(sw::mul(x, x)).backward();
  EXPECT_EQ(x.grad()->shape(), nested);
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
}

TEST(CoreConcepts_6_5_Accumulation, NonLeavesKeepGradOnlyAfterRetainGrad) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 2.0);
  Tensor z = sw::mul(y, 3.0);
  z.retain_grad();
  total(z).backward();
  EXPECT_FALSE(y.grad());
  EXPECT_EQ(grad_of(z), (std::vector<float>{1, 1}));
  EXPECT_EQ(grad_of(x), (std::vector<float>{6, 6}));
}

TEST(CoreConcepts_6_5_Accumulation, RetainGradFalseTurnsRetentionOffAgain) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 2.0);
  Tensor z = sw::mul(y, 3.0);
  y.retain_grad(true);
  total(z).backward(std::nullopt, /*retain_graph=*/true);
  EXPECT_EQ(grad_of(y), (std::vector<float>{3, 3}));
  y.retain_grad(false);
  y.set_grad(std::nullopt);
  total(z).backward();
  EXPECT_FALSE(y.grad());
  EXPECT_EQ(grad_of(x), (std::vector<float>{12, 12}));  // two traversals
}

// ---- 6.6: saved versions and graph release

TEST(CoreConcepts_6_6_SavedVersions, ModifiedSavedInputRaisesBeforeAnyBackwardWork) {
  Tensor a = leaf({1, 2}, Shape{2});
  Tensor b = leaf({3, 4}, Shape{2});
  Tensor c = leaf({5, 6}, Shape{2});
  // c's branch would be reached first; b's saved input is modified.
  Tensor loss = sw::add(total(sw::mul(a, b)), total(c));
  const std::int64_t at[] = {0};
  b.set(at, sw::Value::from_float32(9.0f));
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("modified by an inplace operation"), std::string::npos) << message;
  EXPECT_NE(message.find("input 1 of 'mul'"), std::string::npos) << message;
  EXPECT_FALSE(a.grad());
  EXPECT_FALSE(b.grad());
  EXPECT_FALSE(c.grad());  // no backward work happened anywhere
}

// Every saved operand a VJP reads is version-checked, also one that does not
// require grad: d(x * c)/dx reads c, so writing c after the call would give a
// silently wrong gradient. The error names the operation and the operand,
// and nothing is accumulated.
TEST(CoreConcepts_6_6_SavedVersions, ModifiedConstantOperandRaisesNamingTheOperationAndOperand) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor c = F({3, 4}, Shape{2});  // a constant: requires no grad, saved for x's gradient
  Tensor loss = total(sw::mul(x, c));
  total(sw::mul(x, 1.0)).backward();  // an earlier gradient, which a failed backward must keep
  c.carrier()->set_value(0, sw::Value::from_float32(10.0f));
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("one of the variables needed for gradient computation has been modified by an inplace "
                         "operation"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("input 1 of 'mul'"), std::string::npos) << message;
  EXPECT_EQ(grad_of(x), (std::vector<float>{1, 1}));
  const Tensor inputs[] = {x};
  EXPECT_THROW(sw::grad(loss, inputs), sw::RuntimeError);
  EXPECT_EQ(grad_of(x), (std::vector<float>{1, 1}));
}

// The same through a broadcast: the kernel saw a view of the constant, which
// shares the constant's carrier.
TEST(CoreConcepts_6_6_SavedVersions, ModifiedBroadcastConstantIsDetected) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor c = F({3}, Shape{1});
  Tensor loss = total(sw::mul(c, x));
  const std::int64_t at[] = {0};
  c.set(at, sw::Value::from_float32(5.0f));
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("input 0 of 'mul'"), std::string::npos) << message;
  EXPECT_FALSE(x.grad());
}

TEST(CoreConcepts_6_6_SavedVersions, ModifiedResultOfANodeIsDetectedToo) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::exp(x);  // exp's VJP reads its result
  Tensor loss = total(y);
  const std::int64_t at[] = {1};
  y.set(at, sw::Value::from_float32(0.0f));
  EXPECT_THROW(loss.backward(), sw::RuntimeError);  // reduce_sum saved y as its operand too
  // Straight from y, only exp's saved result is involved.
  const std::string message = message_of<sw::RuntimeError>([&] { y.backward(F({1, 1}, Shape{2})); });
  EXPECT_NE(message.find("the result of 'exp'"), std::string::npos) << message;
  EXPECT_FALSE(x.grad());
}

TEST(CoreConcepts_6_6_GraphRelease, SecondBackwardWithoutRetainGraphRaisesNamingRetainGraph) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor loss = total(sw::mul(x, x));
  loss.backward();
  EXPECT_TRUE(loss.grad_fn()->is_released());
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("retain_graph=True"), std::string::npos) << message;
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 4}));  // unchanged by the failed call
}

TEST(CoreConcepts_6_6_GraphRelease, RetainGraphAllowsASecondTraversal) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor loss = total(sw::mul(x, x));
  loss.backward(std::nullopt, /*retain_graph=*/true);
  EXPECT_FALSE(loss.grad_fn()->is_released());
  loss.backward();
  EXPECT_EQ(grad_of(x), (std::vector<float>{4, 8}));
}

// set_autograd_ctx can close a cycle (a tensor given a node that reaches the
// tensor itself). Backward must not return as if it had succeeded: it
// raises before any .grad changes.
TEST(CoreConcepts_6_4_Backward, AGraphWithACycleRaisesInsteadOfReturningNoGradient) {
  Tensor w = leaf({1, 2}, Shape{2});
  Tensor x = leaf({3, 4}, Shape{2});
  Tensor y = sw::mul(x, w);
  Tensor loss = total(y);
  x.set_autograd_ctx(y.grad_fn());  // x's producer now consumes x
  const std::string message = message_of<sw::RuntimeError>([&] { loss.backward(); });
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;
  EXPECT_FALSE(w.grad());
  EXPECT_FALSE(loss.grad_fn()->is_released());
  x.set_autograd_ctx(nullptr);  // break the cycle (its nodes would never be freed)
}

// ---- 6.7: functional grad and Node::backward

TEST(CoreConcepts_6_7_Functional, GradReturnsVjpsWithoutTouchingDotGrad) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor w = leaf({3, 4}, Shape{2});
  Tensor unused = leaf({0}, Shape{1});
  Tensor y = sw::mul(x, w);
  const Tensor inputs[] = {x, w, unused};
  const auto g = sw::grad(y, inputs, F({1, 10}, Shape{2}), /*retain_graph=*/false);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{3, 40}));
  EXPECT_EQ(floats(*g[1]), (std::vector<float>{1, 20}));
  EXPECT_FALSE(g[2]);
  EXPECT_FALSE(x.grad());
  EXPECT_FALSE(w.grad());
  EXPECT_TRUE(g[0]->is_leaf());  // detached
  EXPECT_THROW(sw::grad(y, inputs, F({1, 1}, Shape{2})), sw::RuntimeError);  // released
}

TEST(CoreConcepts_6_7_Functional, GradRefusesANonDifferentiableInputWithValueErrorAndOutputWithRuntimeError) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 2.0);
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 2}, Shape{2});
  const Tensor bad_inputs[] = {x, i};
  EXPECT_THROW_EXACTLY(sw::grad(y, bad_inputs, F({1, 1}, Shape{2})), sw::ValueError);
  const Tensor inputs[] = {x};
  EXPECT_THROW_EXACTLY(sw::grad(i, inputs, std::nullopt), sw::RuntimeError);
  EXPECT_FALSE(y.grad_fn()->is_released());  // nothing was traversed
}

TEST(CoreConcepts_6_7_Functional, OperationBackwardReturnsOneEntryPerSavedInput) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor y = sw::mul(x, 5.0);
  const auto g = y.grad_fn()->backward(F({1, 1}, Shape{2}));
  ASSERT_EQ(g.size(), 1u);  // one saved input: the weak scalar is not one
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{5, 5}));
  EXPECT_THROW(y.grad_fn()->backward(F({1}, Shape{1})), sw::ValueError);
  // A non-differentiable saved input gets None.
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{4, 5}, Shape{2});
  const Tensor z = sw::mul(i, x);
  const auto h = z.grad_fn()->backward(F({1, 1}, Shape{2}));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_FALSE(h[0]);
  EXPECT_EQ(floats(*h[1]), (std::vector<float>{4, 5}));
}

// ---- 6.1: non-differentiable tensors

TEST(CoreConcepts_6_1_Differentiability, GradientRequestsOnNonDifferentiableTensorsRaise) {
  Tensor i = sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1}, Shape{1});
  Tensor b = sw::make_tensor<CPU>(std::initializer_list<bool>{true}, Shape{1});
  for (Tensor t : {i, b}) {
    EXPECT_FALSE(t.is_differentiable());
    EXPECT_FALSE(t.requires_grad());
    EXPECT_THROW((void)t.grad(), sw::RuntimeError);
    EXPECT_THROW(t.retain_grad(), sw::RuntimeError);
    EXPECT_THROW(t.backward(), sw::RuntimeError);
    EXPECT_THROW(t.set_grad(F({1}, Shape{1})), sw::RuntimeError);
    EXPECT_NO_THROW(t.set_grad(std::nullopt));
  }
  Tensor x = leaf({1}, Shape{1});
  EXPECT_THROW(i.set_autograd_ctx(sw::mul(x, 2.0).grad_fn()), sw::RuntimeError);
}

TEST(CoreConcepts_6_1_Differentiability, RequiresGradReportsTheLogicalDtypeRuleAndNothingElse) {
  Tensor x = leaf({1}, Shape{1});
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(sw::mul(x, 2.0).requires_grad());
  sw::NoGradGuard off;  // grad mode does not change differentiability
  EXPECT_TRUE(sw::mul(x, 2.0).requires_grad());
  EXPECT_FALSE(sw::make_tensor<CPU>(std::initializer_list<std::int32_t>{1}, Shape{1}).requires_grad());
}

// ---- graph lifetime under no_grad

TEST(CoreConcepts_6_3_GradMode, ALongChainUnderNoGradHoldsNoOperation) {
  // Inference without a graph: the memory a chain holds is constant.
  Tensor x = leaf({1, 2}, Shape{2});
  const std::int64_t before = sw::autograd::live_operation_count();
  sw::NoGradGuard off;
  Tensor y = x;
  for (int k = 0; k < 1000; ++k) y = sw::add(sw::mul(y, 0.5), x);
  EXPECT_EQ(sw::autograd::live_operation_count(), before);
  EXPECT_FALSE(y.autograd_ctx());
}

TEST(CoreConcepts_6_3_GradMode, ALongChainUnderGradModeHoldsOneOperationPerCall) {
  Tensor x = leaf({1, 2}, Shape{2});
  const std::int64_t before = sw::autograd::live_operation_count();
  {
    Tensor y = x;
    for (int k = 0; k < 100; ++k) y = sw::mul(y, 0.5);
    EXPECT_EQ(sw::autograd::live_operation_count(), before + 100);
  }
  EXPECT_EQ(sw::autograd::live_operation_count(), before);  // freed with the chain
}

// ---- caller-provided outputs

TEST(AutogradCallerOutput, AnOverwrittenCallerOutputCarriesTheCallsNode) {
  // core-concepts 6.2: the call becomes its result's autograd_ctx; with
  // into(out) the result is the caller's output.
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor out = F({0, 0}, Shape{2});
  const Tensor r = sw::mul(x, x, sw::into(out));
  EXPECT_TRUE(r.is(out));
  ASSERT_TRUE(out.autograd_ctx());
  EXPECT_EQ(out.autograd_ctx()->name(), "mul");
  EXPECT_TRUE(out.autograd_ctx()->inputs()[0].is(x));
  out.backward(F({1, 1}, Shape{2}));
  EXPECT_EQ(grad_of(x), (std::vector<float>{2, 4}));
}

TEST(AutogradCallerOutput, AccumulatingUnderGradModeIsRefusedBeforeWriting) {
  Tensor x = leaf({1, 2}, Shape{2});
  Tensor out = F({0, 0}, Shape{2});
  const std::uint64_t version = out.carrier()->version();
  EXPECT_THROW_EXACTLY(sw::add(x, x, sw::accumulate_into(out)), sw::RuntimeError);
  EXPECT_EQ(out.carrier()->version(), version);
  EXPECT_EQ(floats(out), (std::vector<float>{0, 0}));
  sw::NoGradGuard off;
  sw::add(x, x, sw::accumulate_into(out));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 4}));
}

// ---- the registry

TEST(AutogradRegistry, DifferentiableOperationsAreDerivedFromTheRegistry) {
  const std::vector<std::string> ops = sw::autograd::differentiable_operations();
  for (const char* name : {"add", "mul", "matmul", "reduce_sum", "relu", "conv_general", "_sort_values"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), name), ops.end()) << name;
  for (const char* name : {"eq", "lt", "logical_not", "argmax", "argmin", "_sort_indices", "_topk_indices"})
    EXPECT_EQ(std::find(ops.begin(), ops.end(), name), ops.end()) << name;
}

TEST(AutogradRegistry, EveryDifferentiableOperationHasAVjp) {
  for (const std::string& op : sw::autograd::differentiable_operations())
    EXPECT_NE(sw::autograd::find_vjp(op), nullptr) << "no VJP for differentiable operation '" << op << "'";
  for (const char* view : {"permute", "slice", "reshape", "squeeze", "unsqueeze", "broadcast_to", "as_strided"})
    EXPECT_NE(sw::autograd::find_vjp(view), nullptr) << view;
}

}  // namespace
