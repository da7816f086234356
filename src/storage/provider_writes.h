// Internal: the guard the definition-backed pipeline (src/frontend/pipeline.cpp)
// puts on its operands' carriers while provider callbacks run
// (operation-semantics.md, "Result publication validates provider output";
// docs/extension.md, "Provider writes to operands").
//
// A public write (Carrier::set_value, write_slots, scatter, bump_version) to
// a guarded carrier, from any thread:
//   - under a read-only watch (an operand the operation does not declare
//     mutated) is refused before anything is written: ProviderContractError
//     "mutation", the carrier's refused-write count advances;
//   - else under a MutationJournal (a declared mutated operand's carrier) is
//     made through the storage hook WITHOUT a version step, after logging
//     each slot's previous value in every journal attached to the carrier
//     (nested calls each keep their own log); the operation steps the
//     version once when it publishes, or restores the log when it fails;
//   - else (the last guard went away meanwhile) is an ordinary write.
// The guard costs an unguarded write one atomic load.
#pragma once

#include <strideweave/carrier.h>

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace strideweave::detail {

// One journal's log: (slot, value before) in write order.
struct JournalState {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, Value>> entries;
};

// The undo log of one call's declared mutated carrier: attached on
// construction, detached on destruction (without restoring).
class MutationJournal {
 public:
  explicit MutationJournal(Carrier& carrier);
  ~MutationJournal();
  MutationJournal(const MutationJournal&) = delete;
  MutationJournal& operator=(const MutationJournal&) = delete;
  // Writes the logged values back, newest first, through the storage hook
  // (no version step), and empties the log. Best effort: a hook write that
  // throws is skipped (the call's own error is what propagates), and a
  // carrier released meanwhile is left released.
  void restore() noexcept;
  const Carrier& carrier() const noexcept { return *carrier_; }

 private:
  Carrier* carrier_;
  std::shared_ptr<JournalState> state_;
};

// The guard's entry points. watch()/unwatch() bracket a read-only watch
// (public writes to the carrier are refused in between); watch() returns the
// carrier's refused-write count, which refused_writes() later compares (a
// provider may have caught the refusal and carried on). The interception:
// Carrier's public writes call write()/bump() when the carrier's guard is
// non-zero. write(): true when the write was made, un-versioned, under a
// journal; false when no guard applies any more (write it the ordinary
// way); ProviderContractError when refused. bump(): true when suppressed.
struct ProviderWrites {
  static constexpr std::uint64_t kReader = 1;
  static constexpr std::uint64_t kJournal = std::uint64_t{1} << 32;
  static constexpr std::uint64_t kReaderMask = kJournal - 1;

  static std::uint64_t watch(Carrier& c) noexcept {
    const std::uint64_t refused = c.refused_writes_.load(std::memory_order_acquire);
    c.provider_guard_.fetch_add(kReader, std::memory_order_acq_rel);
    return refused;
  }
  static void unwatch(Carrier& c) noexcept { c.provider_guard_.fetch_sub(kReader, std::memory_order_acq_rel); }
  static std::uint64_t refused_writes(const Carrier& c) noexcept {
    return c.refused_writes_.load(std::memory_order_acquire);
  }

  static bool write(Carrier& carrier, std::span<const std::int64_t> indices, std::span<const Value> values,
                    const char* what);
  static bool bump(Carrier& carrier, const char* what);
  static std::atomic<std::uint64_t>& guard(Carrier& c) noexcept { return c.provider_guard_; }
  static std::atomic<std::uint64_t>& refused(Carrier& c) noexcept { return c.refused_writes_; }
  static void write_slot(Carrier& c, std::int64_t index, const Value& value) { c.write_slot(index, value); }
  static Value read_slot(const Carrier& c, std::int64_t index) { return c.read_slot(index); }
};

}  // namespace strideweave::detail
