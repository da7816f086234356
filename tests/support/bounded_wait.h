// wait_until(predicate, what): every spin-wait in the tests goes through it.
//
// Polls `predicate` (yielding between polls) until it holds and returns
// true. A wait whose condition never comes (a version that is never bumped,
// a thread that died before it arrived) gives up after kHangDeadline,
// records a test failure naming `what`, and returns false, so the test
// fails with a message instead of hanging until CTest's timeout kills the
// whole process. The deadline only catches a hang: it is far above any
// legitimate wait, on any machine and under any sanitizer, and no test
// measures time with it. Thread-safe (GoogleTest records failures from any
// thread); in the main thread write ASSERT_TRUE(wait_until(...)).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sw_testing {

inline constexpr std::chrono::seconds kHangDeadline{120};

template <class Predicate>
bool wait_until(Predicate&& predicate, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kHangDeadline;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "gave up after " << kHangDeadline.count() << " s waiting for " << what;
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

}  // namespace sw_testing
