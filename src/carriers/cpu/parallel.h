// Internal: CPU's parallel loop over the shared OpenMP pool.
//
// parallel_for(n, grain, body) calls body(begin, end) over disjoint ranges
// covering [0, n), each at least `grain` long except possibly the last, in
// static chunks (thread t gets the t-th contiguous range, so a kernel's
// results never depend on scheduling). It runs on the calling thread alone
// when n < 2 * grain, when num_threads() is 1, in a build without OpenMP, and
// inside an enclosing parallel region (no nested teams: no
// oversubscription). An exception thrown by a body is rethrown on the
// calling thread after every range has finished.
//
// with_library_threads(fn) runs fn (a call into oneDNN) with the OpenMP
// runtime's thread count of the calling thread set to num_threads() and
// restores it afterwards, so the library's team follows the strideweave
// setting without changing the caller's own OpenMP configuration.
#pragma once

#include <cstdint>
#include <utility>

namespace strideweave::carriers::cpu {

using RangeFn = void (*)(void* context, std::int64_t begin, std::int64_t end);

void parallel_for_ranges(std::int64_t n, std::int64_t grain, RangeFn fn, void* context);
// The number of ranges parallel_for would use for (n, grain) right now.
int parallel_ranges(std::int64_t n, std::int64_t grain);
void with_library_threads_impl(void (*fn)(void*), void* context);

template <class Body>
void parallel_for(std::int64_t n, std::int64_t grain, Body&& body) {
  // Below two grains the calling thread runs it alone (above): called
  // directly, with no out-of-line hop (a tiny call's share).
  if (n < 2 * grain) {
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
  parallel_for_ranges(
      n, grain,
      [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<std::remove_reference_t<Body>*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

template <class Fn>
void with_library_threads(Fn&& fn) {
  with_library_threads_impl([](void* c) { (*static_cast<std::remove_reference_t<Fn>*>(c))(); },
                            const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace strideweave::carriers::cpu
