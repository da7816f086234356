// The provider-write guard. See provider_writes.h.
#include "storage/provider_writes.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>

namespace strideweave::detail {

namespace {

constexpr std::uint64_t kJournal = ProviderWrites::kJournal;
constexpr std::uint64_t kReaderMask = ProviderWrites::kReaderMask;

// The attached journals (few: one per declared mutated carrier of each call
// in progress). Never held while a storage hook runs.
struct Journals {
  std::mutex mutex;
  std::vector<std::pair<const Carrier*, std::shared_ptr<JournalState>>> attached;
};
Journals& journals() {
  static Journals* j = new Journals();  // outlives every carrier
  return *j;
}

}  // namespace

// ---- MutationJournal

MutationJournal::MutationJournal(Carrier& carrier) : carrier_(&carrier), state_(std::make_shared<JournalState>()) {
  Journals& j = journals();
  {
    std::lock_guard lock(j.mutex);
    j.attached.emplace_back(carrier_, state_);
  }
  ProviderWrites::guard(carrier).fetch_add(kJournal, std::memory_order_acq_rel);
}

MutationJournal::~MutationJournal() {
  ProviderWrites::guard(*carrier_).fetch_sub(kJournal, std::memory_order_acq_rel);
  Journals& j = journals();
  std::lock_guard lock(j.mutex);
  const auto it = std::find_if(j.attached.begin(), j.attached.end(),
                               [this](const auto& e) { return e.second.get() == state_.get(); });
  if (it != j.attached.end()) j.attached.erase(it);
}

void MutationJournal::restore() noexcept {
  std::vector<std::pair<std::int64_t, Value>> entries;
  {
    std::lock_guard lock(state_->mutex);
    entries.swap(state_->entries);
  }
  if (carrier_->is_released()) return;  // a provider released it: nothing to write back into
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    try {
      ProviderWrites::write_slot(*carrier_, it->first, it->second);
    } catch (...) {
    }
  }
}

// ---- the interception

namespace {

[[noreturn]] void refuse(Carrier& carrier, const char* what) {
  ProviderWrites::refused(carrier).fetch_add(1, std::memory_order_acq_rel);
  throw ProviderContractError(
      "mutation", fmt::format("{}: the {} carrier is an operand of an operation whose providers are running, and the "
                              "operation does not declare it mutated; the write is refused (nothing was written)",
                              what, carrier.class_name()));
}

// The states of the journals attached to `carrier` (kept alive while used).
std::vector<std::shared_ptr<JournalState>> journals_of(const Carrier& carrier) {
  std::vector<std::shared_ptr<JournalState>> out;
  Journals& j = journals();
  std::lock_guard lock(j.mutex);
  for (const auto& [c, state] : j.attached)
    if (c == &carrier) out.push_back(state);
  return out;
}

}  // namespace

bool ProviderWrites::write(Carrier& carrier, std::span<const std::int64_t> indices, std::span<const Value> values,
                           const char* what) {
  if (guard(carrier).load(std::memory_order_acquire) & kReaderMask) refuse(carrier, what);
  const auto states = journals_of(carrier);
  if (states.empty()) return false;
  // The previous values first (the hooks run with no lock held), then the
  // log, then the writes: a hook that fails part way leaves slots the log
  // already restores.
  std::vector<std::pair<std::int64_t, Value>> before;
  before.reserve(indices.size());
  for (std::int64_t index : indices) before.emplace_back(index, read_slot(carrier, index));
  for (const auto& s : states) {
    std::lock_guard lock(s->mutex);
    s->entries.insert(s->entries.end(), before.begin(), before.end());
  }
  for (std::size_t k = 0; k < indices.size(); ++k) write_slot(carrier, indices[k], values[k]);
  return true;
}

bool ProviderWrites::bump(Carrier& carrier, const char* what) {
  const std::uint64_t g = guard(carrier).load(std::memory_order_acquire);
  if (g & kReaderMask) refuse(carrier, what);
  return g != 0;
}

}  // namespace strideweave::detail
