// strideweave/carriers/evictable.h — Evictable, a two-tier storage hierarchy
// (carrier-composition.md Part A; backend-capabilities.md, "Evictable
// snapshots executable and storable primary plans"; docs/evictable.md).
//
// An Evictable composes a primary tier (where values are read, written and
// computed on while promoted) and a secondary tier (where all values live
// while evicted). It is a closed, definition-free DependentCarrier built
// through the public surface only (src/extension_carriers/evictable/): it
// claims both tiers, freezes the plans its primary executes, lowers every
// operation onto the promoted primary through its dispatch hook, and moves
// storage between the tiers with the registered exact-pair moves.
//
// Evictable::create(primary, secondary) checks, in this order, before
// anything is claimed (A1, A2):
//   primary or secondary null (not a Carrier)            TypeError
//   either tier refuses the role (BlockDeviceCarrier)     TypeError
//   primary and secondary are the same object             ValueError
//   primary released, then secondary released             RuntimeError
//   primary owned, then secondary owned                   RuntimeError
//   the tiers' dtypes are not the same descriptor         TypeError
//   the secondary is not publicly mutable                 RuntimeError
//   the primary is empty                                  ValueError
//   no move from the primary's exact class to the secondary's, or back
//                                                         NotImplementedError
// then claims both tiers (all or nothing) and freezes its capability
// snapshot (A14.1): the primary instance's capabilities whose output dtype
// both tiers can store, unchanged. A failure after the claim relinquishes
// both tiers: no tier is left owned by a hierarchy nobody received.
//
// The hierarchy (A3-A6, A10, A13):
//   primary() / secondary()  the current tier objects (a transition may
//                            replace one with fresh storage of its class);
//                            owned by the hierarchy: readable by anyone,
//                            mutable, movable and releasable by no one else.
//   size()                   the slot count while live; 0 once released.
//   dtype()                  the primary's, captured at construction.
//   is_mutable()             the primary's mutability at construction,
//                            limited by ownership of the hierarchy itself.
//   is_evicted()             whether the values live in the secondary.
//   supports_storage_dtype   both tiers support it.
// While promoted, reads, writes, scatter and operations act on the primary;
// each write or scatter steps the hierarchy's version once (the tiers'
// versions are its own business). While evicted they raise RuntimeError
// naming promote(); is_evicted(), dtype(), storage support, capability
// queries, promote() and release() still work. DLPack export raises
// BufferError (only CPU exports).
//
// Transitions (A7-A10):
//   evict()    moves the primary's slots into the secondary (the current one
//              when live and large enough, else fresh mutable storage of its
//              class, the old one then released and given back) with the
//              registered move for the pair, recording no autograd node; the
//              move releases the primary. No-op when evicted.
//   promote()  the reverse, into the primary when live and large enough,
//              else fresh storage of the primary's exact class. No-op when
//              promoted.
// Both are failure-atomic: when anything fails, residency, tiers, values,
// ownership, size, dtype, mutability and version are as before, fresh
// storage is released, and the call may be retried. Neither steps the
// hierarchy's version. Both raise RuntimeError when released, or when the
// hierarchy is owned by a composite that is not acting on this thread.
//
// Factories and results (A11, A12): new_like / allocate_like return a fresh
// promoted Evictable whose primary is fresh storage of the primary's exact
// class (holding the values / the allocation) and whose secondary is a fresh
// mutable zero-slot allocation of the secondary's exact class; a dtype must
// be supported by both tiers. Every operation result and gradient is such a
// new hierarchy, owning its fresh tiers.
//
// Release (A13): release() releases both tiers through owner access
// (idempotent; RuntimeError when the hierarchy is owned). Destroying an
// unreleased hierarchy only gives its tiers back: they keep their storage
// and regain their own mutability.
//
// Dispatch (A14.2): while promoted, dispatch_op(name) (and every ordinary
// call, which asks the same hook) returns a fresh single-use
// EvictableOperation around the primary's own Operation for `name`. The
// outer plan is checked against the hierarchy's snapshot before anything is
// lowered (the capability gate); the operands must be Evictable tensors,
// promoted (RuntimeError), whose tiers have the exact classes of the first
// one's (TypeError). The EvictableOperation is the call's one visible node;
// its gradients are computed by the operation's VJP on Evictable tensors,
// so each is a new hierarchy too. Its backward(gradient) takes an Evictable
// cotangent of the result's tier classes (TypeError otherwise), promoted
// (RuntimeError), or one on the result hierarchy's exact primary class
// (carrier-dispatch, "Evictable backward restores outer gradients"; any
// other class -> TypeError), as a fresh hierarchy of the result's tier
// classes; every saved input the VJP reads must be promoted (RuntimeError).
#pragma once

#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <strideweave/autograd.h>
#include <strideweave/dependent_carrier.h>
#include <strideweave/export.h>
#include <strideweave/placement.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class EvictableOperation;

class Evictable final : public DependentCarrier {
  struct Token {
    explicit Token() = default;
  };

 public:
  // The hierarchy over `primary` and `secondary` (see above for the checks).
  static std::shared_ptr<Evictable> create(const std::shared_ptr<Carrier>& primary,
                                           const std::shared_ptr<Carrier>& secondary);
  // For create() only (make_shared needs a public constructor; the token is
  // private and cannot be built outside the class).
  Evictable(Token, const std::shared_ptr<Carrier>& primary, const std::shared_ptr<Carrier>& secondary,
            bool mutable_);

  std::shared_ptr<Carrier> primary() const;
  std::shared_ptr<Carrier> secondary() const;
  bool is_evicted() const;
  void evict();
  void promote();

  bool supports_storage_dtype(const DType& dtype) const noexcept override;
  // The primary's placement at construction (every tier it is given later is
  // of its exact class).
  Placement placement() const override { return placement_; }

 protected:
  std::int64_t storage_size() const noexcept override { return size_; }
  Value read_slot(std::int64_t index) const override;
  void write_slot(std::int64_t index, const Value& value) override;
  void read_range(std::int64_t first, std::int64_t count, Value* out) const override;
  void write_range(std::int64_t first, std::span<const Value> values) override;
  void release_storage() override;
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override;
  bool released_size_is_zero() const noexcept override { return true; }
  std::vector<OperationCapability> _generate_operation_capabilities() const override;
  std::shared_ptr<Operation> _dispatch_op(std::string_view operation_name) const override;

 private:
  friend class EvictableOperation;
  // Concurrency (docs/evictable.md, "Threads"): mutex_ guards the fields
  // below and is never held while a tier is called. A Pin keeps the
  // hierarchy promoted for the duration of one access or one operation
  // (users_ counts them); a transition (evict, promote, release) waits until
  // no Pin is held, then marks itself in progress, so a Pin taken meanwhile
  // fails at once with RuntimeError instead of waiting (a caller never
  // blocks on a transition, which could hold the Python GIL's counterpart).
  class Pin {
   public:
    // The promoted primary, kept promoted while the Pin lives: RuntimeError
    // (naming `what`) when released, evicted, or in transition.
    Pin(const Evictable& hierarchy, const char* what);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    const std::shared_ptr<Carrier>& primary() const noexcept { return primary_; }
    const std::shared_ptr<Carrier>& secondary() const noexcept { return secondary_; }

   private:
    const Evictable& hierarchy_;
    std::shared_ptr<Carrier> primary_, secondary_;
  };
  // The hierarchy over fresh tiers of this one's classes (factories and
  // results): `mutable_` is the hierarchy's own mutability.
  static std::shared_ptr<Evictable> create_with(const std::shared_ptr<Carrier>& primary,
                                                const std::shared_ptr<Carrier>& secondary, bool mutable_);
  // RuntimeError when the hierarchy is owned by a composite that is not the
  // acting owner on this thread.
  void require_hierarchy_access(const char* what) const;
  // Waits until no Pin is held and no other transition runs, then marks a
  // transition in progress; returns false (nothing marked) when `done`
  // already holds (evicted for evict, promoted for promote). RuntimeError
  // when released.
  bool begin_transition(std::unique_lock<std::mutex>& lock, bool done_when_evicted, const char* what);
  void end_transition(std::unique_lock<std::mutex>& lock) noexcept;
  // evict() and promote(): moves every slot of `from` into `to_prototype`
  // (when live and large enough) or fresh storage of its class; returns the
  // tier that now holds the values. Runs without mutex_.
  std::shared_ptr<Carrier> transfer(const std::shared_ptr<Carrier>& from, const std::shared_ptr<Carrier>& to_prototype,
                                    const char* what);
  // evict() (to_evicted) and promote(), named `what` in messages.
  void transition(bool to_evicted, const char* what);
  // Releases (when live) and gives back a tier this hierarchy owns.
  void dispose(const std::shared_ptr<Carrier>& tier) noexcept;
  // Copies `result` (the lowered result: the same layout as this fresh
  // result hierarchy, on the primary's class) into the primary.
  void adopt_values(const Tensor& result);

  mutable std::mutex mutex_;
  mutable std::condition_variable idle_;  // signalled when users_ drops to 0 or a transition ends
  std::shared_ptr<Carrier> primary_;
  std::shared_ptr<Carrier> secondary_;
  const std::int64_t size_;
  const Placement placement_;
  bool evicted_ = false;
  bool transitioning_ = false;
  mutable std::int64_t users_ = 0;  // Pins held
};

// The adapter an Evictable's dispatch hook returns (A14.2): it owns the
// primary's own fresh Operation for the same name, and its _forward lowers
// the call onto the promoted primaries (execute_lowered for a built-in; the
// definition for a user-defined operation) and writes the result into the
// fresh result hierarchy the framework allocated. Single use, like every
// Operation (a second forward -> RuntimeError).
class EvictableOperation final : public Operation {
 public:
  // TypeError when `primary_operation` is null.
  explicit EvictableOperation(std::shared_ptr<Operation> primary_operation);
  const std::shared_ptr<Operation>& primary_operation() const noexcept { return primary_operation_; }

 protected:
  void _forward(const DispatchedCall& call) override;
  std::optional<Tensor> _adapt_cotangent(const Tensor& cotangent, std::size_t result) const override;

 private:
  std::shared_ptr<Operation> primary_operation_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
