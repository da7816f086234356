// strideweave/dependent_carrier.h — carriers whose executable plans depend on
// the carriers they compose (backend-capabilities.md, "DependentCarrier owns
// capabilities per finalized instance").
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/carrier.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// A carrier whose executable plans depend on the carriers it composes. Open
// for subclassing. A concrete subclass implements
// _generate_operation_capabilities() (the legacy definition-free path; the
// base raises NotImplementedError) and calls finalize_operation_capabilities()
// once in its constructor, after its dependencies are valid. Before that
// every capability query raises RuntimeError; a second finalisation raises
// RuntimeError and keeps the first snapshot; a failing generator, an entry
// that is not a whole record (a moved-from OperationCapability: TypeError) or
// a duplicate shape (ValueError) publishes nothing.
//
// Ownership (core-concepts 1.5; carrier-composition A2, A4, A13; docs/
// design.md, "Composite ownership"). A composite claims exclusive ownership
// of the carriers it is built from (its tiers, its tiles' storage):
//   claim(children)   all or nothing (A2): every child is checked first —
//                     null -> TypeError; this carrier itself, or one child
//                     twice -> ValueError; released, already owned (by
//                     anyone), or an owner of this carrier (ownership would
//                     become a cycle) -> RuntimeError — and a claim that
//                     fails part way is undone, so no child is left owned.
//   relinquish(child) gives it back (RuntimeError unless this carrier owns
//                     it); the child regains its own mutability.
//   owner_access()    an RAII scope: while it lives, the calling thread may
//                     write, scatter, bump the version of, move (as source
//                     or destination) and release the children this carrier
//                     owns. It never makes a child publicly mutable
//                     (is_mutable() stays false; an intrinsically read-only
//                     child stays read-only) and reaches only this carrier's
//                     own children. Scopes nest: inside an owner's scope, a
//                     composite it owns uses its own scope for its children.
// A claimed child reports is_owned() and is_owned_by(owner) and refuses all
// of the above to everyone else with RuntimeError; reading stays allowed.
// Destroying the composite without release relinquishes every claim (A13:
// the children keep their storage and regain their mutability), and so does
// a failed finalize_operation_capabilities() (A2). Claims and
// relinquishments are serialised process-wide, so two composites claiming
// each other at once cannot form a cycle.
class DependentCarrier : public Carrier {
 public:
  ~DependentCarrier() override;
  bool is_capability_finalized() const noexcept;
  // The frozen snapshot, sorted; RuntimeError before finalisation.
  std::span<const OperationCapability> capability_snapshot() const;
  // The children this carrier owns now, in the order they were claimed.
  std::vector<std::shared_ptr<Carrier>> owned_children() const;
  // Whether this carrier's owner access is the innermost scope open on the
  // calling thread.
  bool is_acting_owner_on_this_thread() const noexcept;

  // The scope owner_access() returns (neither copyable nor movable: keep it
  // in a local variable for as long as the owner works on its children).
  class [[nodiscard]] OwnerAccess {
   public:
    OwnerAccess(const OwnerAccess&) = delete;
    OwnerAccess& operator=(const OwnerAccess&) = delete;
    ~OwnerAccess();

   private:
    friend class DependentCarrier;
    explicit OwnerAccess(const Carrier& owner) noexcept;
    const Carrier* previous_;
  };

 protected:
  void claim(std::span<const std::shared_ptr<Carrier>> children);
  void claim(const std::shared_ptr<Carrier>& child) { claim(std::span<const std::shared_ptr<Carrier>>(&child, 1)); }
  void relinquish(Carrier& child);
  OwnerAccess owner_access() const noexcept { return OwnerAccess(*this); }
  // Relinquishes every child (a failed finalize_operation_capabilities does,
  // A2).
  void relinquish_all() noexcept;

  DependentCarrier(const SimpleDType& dtype, bool mutable_) noexcept : Carrier(dtype, mutable_, DependentTag{}) {}
  // The constructor of a run-time dependent class's host (see Carrier's):
  // TypeError unless `runtime_class` was minted for a dependent host.
  DependentCarrier(const SimpleDType& dtype, bool mutable_, CarrierClass runtime_class)
      : Carrier(dtype, mutable_, DependentTag{}, runtime_class) {}
  // Either of the two above (for extension::DefinedDependentCarrier).
  DependentCarrier(const SimpleDType& dtype, bool mutable_, const std::optional<CarrierClass>& runtime_class)
      : Carrier(dtype, mutable_, DependentTag{}, runtime_class) {}
  virtual std::vector<OperationCapability> _generate_operation_capabilities() const;
  void finalize_operation_capabilities();

 private:
  std::atomic<const std::vector<OperationCapability>*> snapshot_{nullptr};
  std::shared_ptr<const std::vector<OperationCapability>> owned_snapshot_;
  std::mutex finalize_mutex_;
  mutable std::mutex children_mutex_;
  std::vector<std::shared_ptr<Carrier>> children_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
