// Graph lifetime (docs/autograd.md, "Graph lifetime"): a graph of any depth
// is destroyed, and traversed by backward, without recursion, and a graph
// shared between threads is torn down exactly once, by its last owner.
#include <strideweave/autograd.h>
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <thread>
#include <vector>

namespace sw = strideweave;
using sw::CPU;
using sw::Shape;
using sw::Tensor;

namespace {

// Deeper than any default stack can hold as nested destructor frames: a
// recursive teardown (Node -> TensorImpl -> Node -> ...) overflowed an 8 MiB
// stack at about 120,000 nodes. A million in ordinary builds; the sanitizer
// builds, which run these tests for races and memory errors and are 10-20
// times slower, use 200,000 (their frames are larger, so that depth
// overflowed a recursive teardown there too).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)  // GCC
#define STRIDEWEAVE_TEST_SANITIZED 1
#elif defined(__has_feature)  // Clang
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STRIDEWEAVE_TEST_SANITIZED 1
#endif
#endif
#ifdef STRIDEWEAVE_TEST_SANITIZED
constexpr long kDeepChain = 200'000;
#else
constexpr long kDeepChain = 1'000'000;
#endif
constexpr long kProbeEvery = kDeepChain / 10;

Tensor scalar_leaf(float v) {
  Tensor t = sw::make_tensor<CPU>({v}, Shape{1});
  return t;
}

float only_value(const Tensor& t) { return sw::TypedTensor<float>(t).values().at(0); }

// Weak references to the nodes at a few positions of a chain, to check that
// the whole chain was freed.
struct NodeProbes {
  std::vector<std::weak_ptr<sw::Operation>> nodes;
  void sample(const Tensor& t) { nodes.push_back(t.grad_fn()); }
  bool all_freed() const {
    for (const auto& n : nodes)
      if (!n.expired()) return false;
    return true;
  }
};

}  // namespace

// The case: a running total of a loss kept without detach, one
// recorded add per step, destroyed at scope exit without any backward.
TEST(AutogradGraphLifetime, ARunningTotalOfADeepChainOfRecordedCallsIsDestroyedWithoutBackward) {
  Tensor x = scalar_leaf(1.0f);
  NodeProbes probes;
  {
    Tensor total = sw::mul(x, 0.0);
    probes.sample(total);
    for (long i = 0; i < kDeepChain; ++i) {
      total = sw::add(total, x);
      if (i % kProbeEvery == 0) probes.sample(total);
    }
    probes.sample(total);
    EXPECT_EQ(only_value(total), static_cast<float>(kDeepChain));
  }  // the chain's only owner goes here
  EXPECT_TRUE(probes.all_freed());
  EXPECT_FALSE(x.grad());
}

// Backward walks the same depth (collection and topological order are
// iterative), and the graph it kept (retain_graph) is destroyed afterwards.
TEST(AutogradGraphLifetime, ADeepChainIsTraversedByBackwardAndThenDestroyed) {
  Tensor x = scalar_leaf(2.0f);
  NodeProbes probes;
  {
    Tensor y = x;
    for (long i = 0; i < kDeepChain; ++i) {
      y = sw::mul(y, 1.0);
      if (i % kProbeEvery == 0) probes.sample(y);
    }
    probes.sample(y);
    y.backward(std::nullopt, /*retain_graph=*/true);
    ASSERT_TRUE(x.grad());
    EXPECT_EQ(only_value(*x.grad()), 1.0f);
    EXPECT_FALSE(y.grad_fn()->is_released());
  }
  EXPECT_TRUE(probes.all_freed());
}

// Without retain_graph backward releases the chain; what is left is freed
// with the last tensor.
TEST(AutogradGraphLifetime, ADeepChainReleasedByBackwardIsFreed) {
  Tensor x = scalar_leaf(3.0f);
  NodeProbes probes;
  {
    Tensor y = x;
    for (long i = 0; i < kDeepChain; ++i) {
      y = y.reshape(Shape{1});  // a view node per step
      if (i % kProbeEvery == 0) probes.sample(y);
    }
    probes.sample(y);
    y.backward();
    EXPECT_TRUE(y.grad_fn()->is_released());
    EXPECT_EQ(only_value(*x.grad()), 1.0f);
  }
  EXPECT_TRUE(probes.all_freed());
}

// A node whose saved result handle was given a node by the caller
// (set_autograd_ctx on a handle copied from outputs()) owns that node through
// its saved state, not through an edge: a chain linked only that way is torn
// down with bounded stack use too.
TEST(AutogradGraphLifetime, AChainLinkedThroughSavedHandlesIsDestroyed) {
  Tensor x = scalar_leaf(1.0f);
  NodeProbes probes;
  {
    std::shared_ptr<sw::Operation> last;
    for (long i = 0; i < kDeepChain; ++i) {
      Tensor y = sw::mul(x, 1.0);
      Tensor saved_result = y.grad_fn()->outputs()[0];  // shares the node's saved handle
      if (last) saved_result.set_autograd_ctx(last);
      last = y.grad_fn();
      if (i % kProbeEvery == 0) probes.sample(y);
    }
  }
  EXPECT_TRUE(probes.all_freed());
}

// A node reachable from tensors on several threads: every thread drops its
// handles at once, each on its own part of one chain or on the same tensor;
// whichever thread drops the last reference to a node tears it down.
// Correctness is checked here (every node freed, x still usable) and by the
// sanitizer builds (no data race, no use after free, no leak).
TEST(AutogradGraphLifetime, AGraphSharedBetweenThreadsIsTornDownByItsLastOwners) {
  constexpr int kThreads = 4;
  constexpr long kChain = 50'000;
  for (const bool same_tensor : {false, true}) {
    Tensor x = scalar_leaf(1.0f);
    NodeProbes probes;
    std::vector<std::vector<Tensor>> held(kThreads);
    {
      Tensor y = x;
      for (long i = 0; i < kChain; ++i) {
        y = sw::mul(y, 1.0);
        if (i % 5'000 == 0) probes.sample(y);
        // Distinct mode: thread k holds several points along the chain, so
        // threads free interleaved segments concurrently.
        if (!same_tensor && i % 2'500 == 0) held[static_cast<std::size_t>((i / 2'500) % kThreads)].push_back(y);
      }
      probes.sample(y);
      for (auto& h : held) h.push_back(y);  // everyone also holds the end
    }
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k)
      threads.emplace_back([&start, mine = std::move(held[static_cast<std::size_t>(k)])]() mutable {
        start.arrive_and_wait();
        mine.clear();
      });
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(probes.all_freed()) << (same_tensor ? "same tensor" : "distinct tensors");
    EXPECT_FALSE(x.grad());
    EXPECT_EQ(only_value(sw::mul(x, 2.0)), 2.0f);
  }
}

// Destroying an ordinary graph with shared subgraphs (a diamond and a
// tensor used twice) frees every node exactly once.
TEST(AutogradGraphLifetime, SharedSubgraphsAreFreedOnce) {
  Tensor x = scalar_leaf(1.5f);
  NodeProbes probes;
  {
    Tensor a = sw::exp(x);
    Tensor b = sw::mul(a, a);
    Tensor c = sw::add(a, b);
    Tensor d = sw::mul(c, b);
    for (const Tensor* t : {&a, &b, &c, &d}) probes.sample(*t);
    sw::reduce_sum(d).backward(std::nullopt, /*retain_graph=*/true);
    EXPECT_TRUE(x.grad());
  }
  EXPECT_TRUE(probes.all_freed());
}
