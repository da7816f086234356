// The bootstrap hook. See bootstrap.h.
#include "core/bootstrap.h"

#include <strideweave/errors.h>

#include <atomic>
#include <mutex>

namespace strideweave::detail {
namespace {

std::atomic<BootstrapFn> installed{nullptr};  // constant-initialised: no static-order hazard
std::atomic<bool> done{false};
thread_local bool inside = false;

void run_once() {
  const BootstrapFn fn = installed.load(std::memory_order_acquire);
  if (!fn)
    throw RuntimeError(
        "strideweave: the library's registrations are missing (a static libstrideweave must be linked "
        "whole-archive; the strideweave::strideweave CMake target does that)");
  inside = true;
  try {
    fn();
  } catch (...) {
    inside = false;
    throw;
  }
  inside = false;
}

}  // namespace

void install_bootstrap(BootstrapFn fn) noexcept { installed.store(fn, std::memory_order_release); }

bool bootstrapping() noexcept { return inside; }

void ensure_bootstrapped() {
  // The fast check first: this runs on every dispatch, and std::call_once
  // costs a TLS round trip.
  if (done.load(std::memory_order_acquire) || inside) return;
  static std::once_flag once;
  std::call_once(once, run_once);
  done.store(true, std::memory_order_release);
}

}  // namespace strideweave::detail
