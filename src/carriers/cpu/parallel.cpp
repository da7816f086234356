// CPU's thread setting and parallel loop (parallel.h, threading.h). The pool
// is the OpenMP runtime's (libgomp): oneDNN's Debian build threads through
// the same runtime, so strideweave's kernels and the contracted matmul share
// one team and one count instead of competing.
#include "carriers/cpu/parallel.h"

#include <strideweave/errors.h>
#include <strideweave/threading.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace strideweave {
namespace {

std::atomic<int> g_threads{0};  // 0 = not yet read from the environment
std::mutex g_init;

int default_threads() {
  if (const char* env = std::getenv("STRIDEWEAVE_NUM_THREADS")) {
    const std::string text(env);
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 1 || v > 4096)
      throw ValueError(fmt::format("STRIDEWEAVE_NUM_THREADS='{}' is not a thread count (a positive integer)", text));
    return static_cast<int>(v);
  }
#ifdef _OPENMP
  return std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

}  // namespace

int num_threads() {
  int t = g_threads.load(std::memory_order_relaxed);
  if (t > 0) return t;
  std::lock_guard lock(g_init);
  t = g_threads.load(std::memory_order_relaxed);
  if (t > 0) return t;
  t = default_threads();
  g_threads.store(t, std::memory_order_relaxed);
  return t;
}

void set_num_threads(int n) {
  if (n < 1) throw ValueError(fmt::format("set_num_threads: {} is not a thread count (at least 1)", n));
  g_threads.store(n, std::memory_order_relaxed);
}

bool threading_available() noexcept {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

namespace carriers::cpu {

int parallel_ranges(std::int64_t n, std::int64_t grain) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
  const std::int64_t by_work = grain > 0 ? n / grain : n;
  return static_cast<int>(std::clamp<std::int64_t>(by_work, 1, num_threads()));
#else
  (void)n;
  (void)grain;
  return 1;
#endif
}

void parallel_for_ranges(std::int64_t n, std::int64_t grain, RangeFn fn, void* context) {
  if (n <= 0) return;
  const int ranges = parallel_ranges(n, grain);
  if (ranges <= 1) {
    fn(context, 0, n);
    return;
  }
#ifdef _OPENMP
  std::exception_ptr error;
  std::mutex error_lock;
#pragma omp parallel num_threads(ranges)
  {
    const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::int64_t begin = n * t / count, end = n * (t + 1) / count;
    try {
      if (begin < end) fn(context, begin, end);
    } catch (...) {
      std::lock_guard lock(error_lock);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#endif
}

void with_library_threads_impl(void (*fn)(void*), void* context) {
#ifdef _OPENMP
  const int previous = omp_get_max_threads();
  omp_set_num_threads(omp_in_parallel() ? 1 : num_threads());
  try {
    fn(context);
  } catch (...) {
    omp_set_num_threads(previous);
    throw;
  }
  omp_set_num_threads(previous);
#else
  fn(context);
#endif
}

}  // namespace carriers::cpu
}  // namespace strideweave
