// DependentCarrier's per-instance snapshots. See
// include/strideweave/dependent_carrier.h.
#include <strideweave/dependent_carrier.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "capability/registry.h"
#include "storage/ownership.h"

namespace strideweave {

std::vector<OperationCapability> DependentCarrier::_generate_operation_capabilities() const {
  throw NotImplementedError(fmt::format(
      "{}: a definition-free DependentCarrier must implement _generate_operation_capabilities()", class_name()));
}

bool DependentCarrier::is_capability_finalized() const noexcept { return snapshot_.load() != nullptr; }

std::span<const OperationCapability> DependentCarrier::capability_snapshot() const {
  const auto* s = snapshot_.load();
  if (!s)
    throw RuntimeError(fmt::format("{}: capabilities are queried before the instance finalised them", class_name()));
  return *s;
}

void DependentCarrier::finalize_operation_capabilities() {
  std::lock_guard lock(finalize_mutex_);
  if (snapshot_.load())
    throw RuntimeError(fmt::format("{}: operation capabilities are already finalised", class_name()));
  // Generation may throw: nothing is published then, and every claim made
  // so far is relinquished (carrier-composition A2: no child is left owned
  // by a hierarchy that never came to be).
  std::vector<OperationCapability> caps;
  try {
    caps = _generate_operation_capabilities();
    capability_registry::reject_invalid_entries(caps, class_name() + " _generate_operation_capabilities()");
    for (std::size_t i = 0; i < caps.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (caps[i] == caps[j])
          throw ValueError(fmt::format("{}: the generated capability shape {} appears twice", class_name(),
                                       caps[i].to_plan().to_string()));
  } catch (...) {
    relinquish_all();
    throw;
  }
  std::sort(caps.begin(), caps.end());
  owned_snapshot_ = std::make_shared<const std::vector<OperationCapability>>(std::move(caps));
  snapshot_.store(owned_snapshot_.get());
}

// ---------------------------------------------------------------- ownership

namespace detail {
namespace {
thread_local const Carrier* t_acting_owner = nullptr;
}  // namespace
// Claims and relinquishments of every carrier are serialised, so the checks
// of a claim (no cycle, not owned) and its compare-and-swaps are one step:
// two composites claiming each other at once cannot both succeed.
std::mutex& ownership_mutex() {
  static std::mutex* m = new std::mutex();  // lives for the process (destructors run at exit)
  return *m;
}
const Carrier* Ownership::acting_owner() noexcept { return t_acting_owner; }
const Carrier* Ownership::exchange_acting_owner(const Carrier* owner) noexcept {
  const Carrier* previous = t_acting_owner;
  t_acting_owner = owner;
  return previous;
}
}  // namespace detail

DependentCarrier::OwnerAccess::OwnerAccess(const Carrier& owner) noexcept
    : previous_(detail::Ownership::exchange_acting_owner(&owner)) {}
DependentCarrier::OwnerAccess::~OwnerAccess() { detail::Ownership::exchange_acting_owner(previous_); }

DependentCarrier::~DependentCarrier() {
  // A13: destruction without release only relinquishes ownership.
  std::lock_guard lock(detail::ownership_mutex());
  for (const std::shared_ptr<Carrier>& child : children_) detail::Ownership::exchange_owner(*child, this, nullptr);
}

void DependentCarrier::relinquish_all() noexcept {
  std::lock_guard lock(detail::ownership_mutex());
  std::lock_guard children_lock(children_mutex_);
  for (const std::shared_ptr<Carrier>& child : children_) detail::Ownership::exchange_owner(*child, this, nullptr);
  children_.clear();
}

bool DependentCarrier::is_acting_owner_on_this_thread() const noexcept {
  return detail::Ownership::acting_owner() == this;
}

std::vector<std::shared_ptr<Carrier>> DependentCarrier::owned_children() const {
  std::lock_guard lock(children_mutex_);
  return children_;
}

void DependentCarrier::claim(std::span<const std::shared_ptr<Carrier>> children) {
  const std::string who = fmt::format("{}.claim", class_name());
  std::lock_guard ownership(detail::ownership_mutex());
  // Every check first (A2: preconditions before any claim).
  std::unordered_set<const Carrier*> seen;
  for (std::size_t i = 0; i < children.size(); ++i) {
    const Carrier* child = children[i].get();
    if (!child) throw TypeError(fmt::format("{}: child {} is null, not a Carrier", who, i));
    if (child == this) throw ValueError(fmt::format("{}: a carrier cannot own itself", who));
    if (!seen.insert(child).second)
      throw ValueError(fmt::format("{}: the {} carrier is named twice", who, child->class_name()));
    if (child->is_released())
      throw RuntimeError(fmt::format("{}: the {} carrier is released", who, child->class_name()));
    if (const Carrier* owner = detail::Ownership::owner_of(*child))
      throw RuntimeError(fmt::format("{}: the {} carrier is already owned by {}", who, child->class_name(),
                                     owner == this ? "this carrier" : "another carrier"));
    for (const Carrier* above = detail::Ownership::owner_of(*this); above; above = detail::Ownership::owner_of(*above))
      if (above == child)
        throw RuntimeError(fmt::format("{}: the {} carrier owns this carrier (directly or through its children); "
                                       "ownership cannot form a cycle",
                                       who, child->class_name()));
  }
  // Then the claims, undone if one loses a race with another claimant.
  std::lock_guard lock(children_mutex_);
  children_.reserve(children_.size() + children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (!detail::Ownership::exchange_owner(*children[i], nullptr, this)) {
      for (std::size_t j = 0; j < i; ++j) detail::Ownership::exchange_owner(*children[j], this, nullptr);
      children_.resize(children_.size() - i);
      throw RuntimeError(fmt::format("{}: the {} carrier was claimed by another carrier meanwhile", who,
                                     children[i]->class_name()));
    }
    children_.push_back(children[i]);
  }
}

void DependentCarrier::relinquish(Carrier& child) {
  std::lock_guard ownership(detail::ownership_mutex());
  std::lock_guard lock(children_mutex_);
  if (!detail::Ownership::exchange_owner(child, this, nullptr))
    throw RuntimeError(fmt::format("{}.relinquish: the {} carrier is not owned by this carrier", class_name(),
                                   child.class_name()));
  children_.erase(std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.get() == &child; }));
}

}  // namespace strideweave
