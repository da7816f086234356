// The central list of shipped carriers: one registration line each. A new
// carrier adds its folder under src/carriers/ and one line here.
#include "carriers/carrier_list.h"

#include <atomic>
#include <mutex>

#include "carriers/cpu/cpu_kernels.h"
#include "carriers/generic/generic_kernels.h"

namespace strideweave::detail {
void mark_shipped_registration(bool on);  // src/execution/kernel_table.cpp
}  // namespace strideweave::detail

namespace strideweave::carriers {

namespace {
void register_shipped_carriers() {
  detail::mark_shipped_registration(true);
  generic::register_generic();
  cpu::register_cpu();
  detail::mark_shipped_registration(false);
}
}  // namespace

void ensure_registered() {
  static std::once_flag once;
  // A fast acquire check first: std::call_once costs a TLS round trip on
  // every call, and this runs on every dispatch.
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return;
  std::call_once(once, register_shipped_carriers);
  done.store(true, std::memory_order_release);
}

}  // namespace strideweave::carriers
