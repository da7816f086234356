// Internal: composite ownership (include/strideweave/dependent_carrier.h;
// docs/design.md, "Composite ownership").
//
// A carrier's owner is one atomic pointer (Carrier::owner_). Owner access is
// per thread: acting_owner() is the composite whose OwnerAccess scope is the
// innermost one alive on this thread (null outside every scope). A mutation
// of an owned carrier is allowed exactly when its owner is the acting owner
// and the carrier is intrinsically mutable; everyone else gets the
// RuntimeError of an owned carrier.
#pragma once

#include <strideweave/carrier.h>

namespace strideweave::detail {

struct Ownership {
  // The acting owner of this thread, or null.
  static const Carrier* acting_owner() noexcept;
  // Installs `owner` as this thread's acting owner and returns the previous
  // one (OwnerAccess's constructor and destructor; an asynchronous move
  // re-installs its starter's owner on the thread that commits it).
  static const Carrier* exchange_acting_owner(const Carrier* owner) noexcept;
  // Owned by the acting owner (which may therefore mutate it, if it is
  // intrinsically mutable).
  static bool acting_owner_owns(const Carrier& carrier) noexcept {
    const Carrier* owner = carrier.owner_.load();
    return owner != nullptr && owner == acting_owner();
  }
  // The public-or-owner write check: publicly mutable, or owned by the
  // acting owner and intrinsically mutable.
  static bool writable_here(const Carrier& carrier) noexcept {
    return carrier.is_mutable() || (carrier.intrinsic_mutable_ && acting_owner_owns(carrier));
  }
  static const Carrier* owner_of(const Carrier& carrier) noexcept { return carrier.owner_.load(); }
  // Sets the owner from `expected` to `desired` atomically; false when the
  // carrier's owner was not `expected`.
  static bool exchange_owner(Carrier& carrier, const Carrier* expected, const Carrier* desired) noexcept {
    return carrier.owner_.compare_exchange_strong(expected, desired);
  }
};

// The acting owner `owner` on this thread for the scope's life (restores the
// previous one).
class ActingOwnerScope {
 public:
  explicit ActingOwnerScope(const Carrier* owner) noexcept : previous_(Ownership::exchange_acting_owner(owner)) {}
  ~ActingOwnerScope() { Ownership::exchange_acting_owner(previous_); }
  ActingOwnerScope(const ActingOwnerScope&) = delete;
  ActingOwnerScope& operator=(const ActingOwnerScope&) = delete;

 private:
  const Carrier* previous_;
};

}  // namespace strideweave::detail
