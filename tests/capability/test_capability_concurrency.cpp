// cpp-mapping.md, "Threads": declaration, observation and sealing are
// atomic; a racing registration and query see either the whole declaration
// or the sealed empty answer, never a mix; sealed answers never change.
// Also DependentCarrier finalisation racing shipped-class queries.
// Custom classes use indices 300 .. 999 (capability_test_support.h).
#include <gtest/gtest.h>

#include <thread>
#include <typeinfo>
#include <utility>

#include "capability/capability_test_support.h"
#include "support/bounded_wait.h"

namespace sw_caps {
namespace {

constexpr int kThreads = 8;
constexpr int kObservations = 15;

// Spins until every thread arrived, so that the racing calls overlap.
class StartLine {
 public:
  explicit StartLine(int n) : n_(n) {}
  void arrive_and_wait() {
    arrived_.fetch_add(1);
    sw_testing::wait_until([&] { return arrived_.load() >= n_; }, "every racing thread at the start line");
  }

 private:
  int n_;
  std::atomic<int> arrived_{0};
};

enum Seen : int { kEmpty = 0, kWhole = 1, kMixed = 2 };

Seen classify(const std::vector<OperationCapability>& answer, const std::vector<OperationCapability>& whole) {
  if (answer.empty()) return kEmpty;
  return answer == whole ? kWhole : kMixed;
}

struct RaceOutcome {
  bool declared = false;
  int empty = 0, whole = 0, mixed = 0, inconsistent = 0;
};

// Who goes first in a round: nobody (a free race), the declaration (every
// observer waits until register_operation_capabilities returned), or an
// observation (the declarer waits until one observer's first enumeration
// returned; the other observers still race with the declaration).
enum class Lead { Nobody, Declaration, Observation };

// One fresh class: thread 0 declares, the others observe through every
// observing query while it does.
template <int N>
RaceOutcome race_declaration_against_observation(Lead lead, int declarer_delay_spins, int observer_delay_spins) {
  const CarrierClass cls = Custom<N>::cls();
  const std::vector<OperationCapability> declared =
      caps_of({f32_relu_plan(), i32_add_plan(), f32_add_plan(), f32_mul_scalar_plan()});
  const std::vector<OperationCapability> whole = sorted(declared);
  StartLine start(kThreads);
  std::atomic<int> outcome{-1};
  std::vector<std::vector<Seen>> seen(kThreads);
  std::atomic<int> inconsistent{0};
  std::atomic<bool> declaration_returned{false}, first_observation_returned{false};
  auto wait_for = [](const std::atomic<bool>& flag) {
    sw_testing::wait_until([&] { return flag.load(); }, "the leading thread's signal");
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      if (t == 0) {
        if (lead == Lead::Observation) wait_for(first_observation_returned);
        for (int i = 0; i < declarer_delay_spins; ++i) std::this_thread::yield();
        try {
          register_operation_capabilities(cls, declared);
          outcome.store(1);
        } catch (const TypeError& e) {
          outcome.store(typeid(e) == typeid(TypeError) ? 0 : 2);  // exactly TypeError
        } catch (...) {
          outcome.store(2);  // any other error is wrong (counted as inconsistent)
        }
        declaration_returned.store(true);
        return;
      }
      if (lead == Lead::Declaration) wait_for(declaration_returned);
      for (int i = 0; i < observer_delay_spins; ++i) std::this_thread::yield();
      for (int k = 0; k < kObservations; ++k) {
        const Seen s = classify(capabilities_for_carrier_class(cls), whole);
        first_observation_returned.store(true);
        seen[static_cast<std::size_t>(t)].push_back(s);
        // The enumeration observed (and so sealed) the answer: every later
        // query agrees with it, whichever it was.
        const bool supported = supports_operation_plan(cls, f32_add_plan());
        const bool matched = matching_capability(cls, i32_add_plan()).has_value();
        const bool no_reason = !unsupported_plan_reason(cls, f32_relu_plan()).has_value();
        bool required = true;
        try {
          require_capability(cls, f32_mul_scalar_plan());
        } catch (const UnsupportedOperationPlan& e) {
          required = false;
          if (typeid(e) != typeid(UnsupportedOperationPlan)) inconsistent.fetch_add(1);
        }
        const bool filtered_whole = capabilities_for_carrier_class(cls, "add").size() == 2;
        const bool all = supported && matched && no_reason && required && filtered_whole;
        const bool none = !supported && !matched && !no_reason && !required &&
                          capabilities_for_carrier_class(cls, "add").empty();
        if (s == kWhole && !all) inconsistent.fetch_add(1);
        if (s == kEmpty && !none) inconsistent.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  RaceOutcome r;
  r.declared = outcome.load() == 1;
  r.inconsistent = inconsistent.load() + (outcome.load() == 0 || outcome.load() == 1 ? 0 : 1);
  for (const auto& per_thread : seen) {
    bool saw_whole = false;
    for (Seen s : per_thread) {
      if (s == kEmpty) ++r.empty;
      if (s == kWhole) ++r.whole;
      if (s == kMixed) ++r.mixed;
      // Once whole, always whole (a sealed answer never changes).
      if (saw_whole && s != kWhole) ++r.inconsistent;
      saw_whole = saw_whole || s == kWhole;
    }
  }
  // The final answer equals every observed answer.
  const Seen final_answer = classify(capabilities_for_carrier_class(cls), whole);
  if (r.declared) {
    if (final_answer != kWhole) ++r.inconsistent;
  } else if (final_answer != kEmpty) {
    ++r.inconsistent;
  }
  return r;
}

template <int... I>
std::vector<RaceOutcome> race_all(std::integer_sequence<int, I...>) {
  // Even rounds let the declaration start first, odd rounds the observers;
  // which side wins a free race is up to the scheduler.
  return {race_declaration_against_observation<300 + I>(Lead::Nobody, I % 2 == 0 ? 0 : 20 * (I % 3),
                                                        I % 2 == 0 ? 20 * (1 + I % 3) : 0)...};
}

template <int First, int... I>
std::vector<RaceOutcome> led_rounds(Lead lead, std::integer_sequence<int, I...>) {
  return {race_declaration_against_observation<First + I>(lead, 0, 0)...};
}

void expect_consistent_round(const RaceOutcome& r) {
  EXPECT_EQ(r.mixed, 0);
  EXPECT_EQ(r.inconsistent, 0);
  if (r.declared) {
    // The declaration won: nobody observed (and sealed) the empty answer.
    EXPECT_EQ(r.empty, 0);
  } else {
    // An observation sealed the class first: everyone saw the empty answer.
    EXPECT_EQ(r.whole, 0);
  }
  EXPECT_EQ(r.empty + r.whole, (kThreads - 1) * kObservations);
}

TEST(CapabilityConcurrency_RacingDeclarationAndObservation, EveryThreadSeesWholeSetOrSealedEmpty) {
  int declared_rounds = 0, sealed_empty_rounds = 0;
  const std::vector<RaceOutcome> rounds = race_all(std::make_integer_sequence<int, 16>{});
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    SCOPED_TRACE("free round " + std::to_string(i));
    expect_consistent_round(rounds[i]);
    ++(rounds[i].declared ? declared_rounds : sealed_empty_rounds);
  }
  RecordProperty("free_rounds_declared", declared_rounds);
  // Both outcomes, whatever the scheduler does: rounds the declaration leads
  // end with the whole set for every observer (observers still race with
  // each other), rounds an observation leads end sealed empty, and the
  // declaration racing the remaining observers is refused.
  const auto four = std::make_integer_sequence<int, 4>{};
  const std::vector<RaceOutcome> declaration_led = led_rounds<320>(Lead::Declaration, four);
  const std::vector<RaceOutcome> observation_led = led_rounds<330>(Lead::Observation, four);
  for (std::size_t i = 0; i < declaration_led.size(); ++i) {
    SCOPED_TRACE("declaration-led round " + std::to_string(i));
    expect_consistent_round(declaration_led[i]);
    EXPECT_TRUE(declaration_led[i].declared);
    EXPECT_EQ(declaration_led[i].whole, (kThreads - 1) * kObservations);
    ++(declaration_led[i].declared ? declared_rounds : sealed_empty_rounds);
  }
  for (std::size_t i = 0; i < observation_led.size(); ++i) {
    SCOPED_TRACE("observation-led round " + std::to_string(i));
    expect_consistent_round(observation_led[i]);
    EXPECT_FALSE(observation_led[i].declared);
    EXPECT_EQ(observation_led[i].empty, (kThreads - 1) * kObservations);
    ++(observation_led[i].declared ? declared_rounds : sealed_empty_rounds);
  }
  EXPECT_GT(declared_rounds, 0) << "no round ended with the declaration published";
  EXPECT_GT(sealed_empty_rounds, 0) << "no round ended sealed empty by an observation";
}

// Several threads declare different sets for one class while others observe:
// exactly one answer wins and it never changes.
template <int N>
void race_declarations() {
  const CarrierClass cls = Custom<N>::cls();
  const std::vector<std::vector<OperationCapability>> sets{
      caps_of({f32_add_plan()}), caps_of({i32_add_plan(), f32_relu_plan()}), caps_of({f32_mul_scalar_plan()}),
      caps_of({i32_relu_plan(), f32_add_plan(), i32_add_plan()})};
  StartLine start(kThreads);
  std::atomic<int> successes{0}, wrong_type{0};
  std::atomic<int> winner{-1};
  std::vector<std::vector<std::vector<OperationCapability>>> observed(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      if (t < static_cast<int>(sets.size())) {
        try {
          register_operation_capabilities(cls, sets[static_cast<std::size_t>(t)]);
          successes.fetch_add(1);
          winner.store(t);
        } catch (const TypeError& e) {
          if (typeid(e) != typeid(TypeError)) wrong_type.fetch_add(1);
        }
      }
      for (int k = 0; k < 10; ++k) observed[static_cast<std::size_t>(t)].push_back(capabilities_for_carrier_class(cls));
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong_type.load(), 0) << "a refused declaration raised a TypeError subclass";
  EXPECT_LE(successes.load(), 1);
  const std::vector<OperationCapability> final_answer = capabilities_for_carrier_class(cls);
  if (successes.load() == 1) {
    EXPECT_EQ(final_answer, sorted(sets[static_cast<std::size_t>(winner.load())]));
  } else {
    EXPECT_TRUE(final_answer.empty());
  }
  // Every thread's last answer is the final one; none saw another set.
  for (const auto& per_thread : observed) {
    ASSERT_FALSE(per_thread.empty());
    EXPECT_EQ(per_thread.back(), final_answer);
    for (const auto& answer : per_thread) EXPECT_TRUE(answer.empty() || answer == final_answer);
  }
}

template <int... I>
void race_declarations_all(std::integer_sequence<int, I...>) {
  (race_declarations<400 + I>(), ...);
}

TEST(CapabilityConcurrency_RacingDeclarationAndObservation, RacingDeclarationsPublishExactlyOneAnswer) {
  race_declarations_all(std::make_integer_sequence<int, 12>{});
}

TEST(CapabilityConcurrency_DependentFinalization, ShippedQueriesWhileDependentsFinalize) {
  const std::vector<OperationCapability> generic_ref = capabilities_for_carrier_class(carrier_class<Generic>());
  const std::vector<OperationCapability> cpu_ref = capabilities_for_carrier_class(carrier_class<CPU>());
  const std::vector<OperationCapability> set_a = sorted(caps_of({f32_add_plan(), i32_relu_plan()}));
  const std::vector<OperationCapability> set_b = sorted(caps_of({f32_mul_scalar_plan()}));
  StartLine start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      if (t % 2 == 0) {
        const CarrierClass cls = t % 4 == 0 ? carrier_class<Generic>() : carrier_class<CPU>();
        const std::vector<OperationCapability>& ref = t % 4 == 0 ? generic_ref : cpu_ref;
        for (int k = 0; k < 4; ++k) {
          if (capabilities_for_carrier_class(cls) != ref) failures.fetch_add(1);
          for (const OperationCapability& c : ref)
            if (!supports_operation_plan(cls, c.to_plan())) failures.fetch_add(1);
        }
        const auto cpu = CPU::create(2, DType::Float32());
        for (const OperationCapability& c : cpu_ref)
          if (!cpu->supports_operation_plan(c.to_plan())) failures.fetch_add(1);
      } else {
        for (int k = 0; k < 40; ++k) {
          const bool a = (k + t) % 2 == 0;
          const std::vector<OperationCapability> given = a ? set_a : set_b;
          const auto d = std::make_shared<TestDependent>([given] { return given; }, true);
          if (d->operation_capabilities() != (a ? set_a : set_b)) failures.fetch_add(1);
          if (d->supports_operation_plan(f32_add_plan()) != a) failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<Generic>()), generic_ref);
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<CPU>()), cpu_ref);
}

TEST(CapabilityConcurrency_DependentFinalization, RacingFinalizationsOfOneInstanceFreezeOnce) {
  for (int round = 0; round < 10; ++round) {
    const std::vector<OperationCapability> set = sorted(caps_of({f32_add_plan(), f32_relu_plan()}));
    const auto d = std::make_shared<TestDependent>([set] { return set; }, false);
    StartLine start(kThreads);
    std::atomic<int> finalized{0}, refused{0}, unfinalized_queries{0}, wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        if (t % 2 == 0) {
          try {
            d->finalize();
            finalized.fetch_add(1);
          } catch (const RuntimeError& e) {
            ++(typeid(e) == typeid(RuntimeError) ? refused : wrong);
          }
        } else {
          for (int k = 0; k < 20; ++k) {
            try {
              if (d->operation_capabilities() != set) wrong.fetch_add(1);
            } catch (const RuntimeError& e) {
              ++(typeid(e) == typeid(RuntimeError) ? unfinalized_queries : wrong);  // before finalisation: allowed
            }
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(finalized.load(), 1);
    EXPECT_EQ(refused.load(), kThreads / 2 - 1);
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(d->generator_calls(), 1);
    EXPECT_EQ(d->operation_capabilities(), set);
  }
}

}  // namespace
}  // namespace sw_caps
