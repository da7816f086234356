// strideweave/move_operation.h — the definition-free move registry
// (core-concepts.md 7.3; interop-movement, "Move dispatches on the exact
// carrier class pair", "Move registration is explicit, validated, and
// process-global", "A move operation performs its transfer through the copy
// hook", "A move operation may pin the carrier pair it supports"), the
// progress option and AwaitMove. move() and move_async() themselves are in
// <strideweave/move.h>; the route interface is documented in docs/storage.md
// ("Movement").
//
// A MoveOperation performs the mechanics of one move for a carrier pair: its
// _copy hook fills the destination's slots [0, element_count) from the
// source tensor's physical span. Everything else is the framework's (the
// ordered checks, allocation of an empty destination, the before-image and
// rollback, the one version step of the destination, releasing the source,
// the autograd node): a route never releases, versions or publishes.
//
// A route may finish later: _copy returns MoveSubmission, either
// std::monostate (the destination is complete now) or a pending
// extension::ProviderCompletion<void> (an io_uring submission, a device
// stream) that the framework waits for before it validates and commits.
//
// Registry: one operation per exact (source class, destination class) pair,
// never inherited by subclasses; process-global and thread-safe; the
// built-in pairs (CPU <-> FileBacked) are registered by their carrier's own
// folder during the library bootstrap, before the first answer. A pair
// where either class is definition-backed (extension::DefinedCarrier) is
// refused with RuntimeError: those classes move through their
// CarrierDefinition's TransferRoutes (carrier-extension.md R5.6).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include <strideweave/carrier.h>
#include <strideweave/carrier_class.h>
#include <strideweave/completion.h>
#include <strideweave/errors.h>
#include <strideweave/tensor.h>
#include <strideweave/value.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---------------------------------------------------------------- progress

// How far a move's transfer got: bytes of the physical span (element_count
// slots of the dtype's 4 or 1 bytes) known complete, of bytes_total.
struct MoveProgress {
  std::int64_t bytes_done = 0;
  std::int64_t bytes_total = 0;
};
using MoveProgressCallback = std::function<void(const MoveProgress&)>;

// Options of move() / move_async() (docs/storage.md, "Progress").
struct MoveOptions {
  // 64 MiB: the default threshold and window.
  static constexpr std::int64_t default_progress_threshold_bytes = std::int64_t{64} << 20;
  static constexpr std::int64_t default_window_bytes = std::int64_t{64} << 20;
  // Called once per completed window (bytes_done increasing, the last call
  // with bytes_done == bytes_total) when the physical span is at least
  // progress_threshold_bytes; never for a smaller move. Called on the thread
  // that completed the window (an asynchronous route's completion thread);
  // an exception it throws fails the move (rolled back like any failure).
  // A window that failed is never reported, nor any after it.
  MoveProgressCallback progress;
  std::int64_t progress_threshold_bytes = default_progress_threshold_bytes;
  // The bulk routes' window: one memcpy / pread / pwrite per window, and
  // the progress granularity. >= 1 (ValueError otherwise).
  std::int64_t window_bytes = default_window_bytes;
};

// What a route's _copy sees besides the specification's four inputs.
class STRIDEWEAVE_EXPORT MoveContext {
 public:
  MoveContext(std::int64_t element_count, std::int64_t element_bytes, const MoveOptions& options);
  std::int64_t element_count() const noexcept { return element_count_; }
  std::int64_t element_bytes() const noexcept { return element_bytes_; }
  // Slots per window (window_bytes / element_bytes, at least 1).
  std::int64_t window_elements() const noexcept { return window_elements_; }
  // Reports `slots` more slots complete; thread-safe. Calls the progress
  // callback when the move reports progress (its exceptions propagate).
  void advance(std::int64_t slots);
  std::int64_t slots_done() const noexcept { return done_.load(); }

  // Un-versioned slot access for routes that copy through the carrier
  // interface (the framework adds the destination's one version step at
  // commit). IndexError outside [0, size()).
  static Value read(const Carrier& carrier, std::int64_t index);
  static void write(Carrier& carrier, std::int64_t index, const Value& value);

 private:
  std::int64_t element_count_;
  std::int64_t element_bytes_;
  std::int64_t window_elements_;
  bool reports_;
  MoveProgressCallback progress_;
  std::mutex progress_mutex_;  // callbacks in order, one at a time
  std::atomic<std::int64_t> done_{0};
};

// ---------------------------------------------------------------- operations

// What _copy returns: done now, or a pending completion the framework waits
// for (its exception fails the move, rolled back).
using MoveSubmission = std::variant<std::monostate, extension::ProviderCompletion<void>>;

// A restorer of the destination's prior contents (the move's before-image).
using MoveRestore = std::function<void()>;

namespace detail {
struct MoveAccess;
}  // namespace detail

// MoveOperation: open for subclassing (a stateless object stands for its
// class; the registry holds one shared instance per pair).
class STRIDEWEAVE_EXPORT MoveOperation {
 public:
  virtual ~MoveOperation() = default;
  // The operation's name in messages ("ElementwiseMoveOperation"); by
  // default the demangled C++ type.
  virtual std::string name() const;
  // The pinned exact classes; nullopt accepts any (interop-movement, "A move
  // operation may pin the carrier pair it supports").
  virtual std::optional<CarrierClass> source_class() const { return std::nullopt; }
  virtual std::optional<CarrierClass> destination_class() const { return std::nullopt; }

 protected:
  friend struct detail::MoveAccess;
  // The transfer of one move, after every check passed and the destination
  // holds at least element_count (= tensor.layout().cosize()) slots:
  // destination slot k must end up holding the source's slot
  // tensor.offset() + k for every k the layout addresses (slots it does not
  // address may be copied or left). `output` is the result Tensor already
  // bound to `destination` at offset 0. Must not release, version or
  // publish; a throw (or a failed completion) rolls the move back.
  virtual MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output,
                               std::int64_t element_count, MoveContext& context) const = 0;
  // Captures destination slots [0, element_count) before _copy runs, when
  // the destination already held storage, and returns what puts them back
  // (called only after a failure). Default: slot by slot through
  // MoveContext::read / write. Bulk routes override it with one bulk read.
  virtual MoveRestore _save_destination(Carrier& destination, std::int64_t element_count,
                                        MoveContext& context) const;
};

// The fallback for every definition-free pair without a registration: copies
// the logical values run by run along the tensor's layout, each run through
// the carriers' range access (host memory where a class has it, else its
// range hooks, whose defaults go slot by slot; docs/storage.md, "Ranges").
// Destination slots the layout does not address keep their prior values.
class STRIDEWEAVE_EXPORT ElementwiseMoveOperation : public MoveOperation {
 public:
  std::string name() const override { return "ElementwiseMoveOperation"; }
  // The one shared instance the registry falls back to.
  static const std::shared_ptr<const ElementwiseMoveOperation>& instance();

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext& context) const override;
};

// ---------------------------------------------------------------- the registry

// Records `operation` for exactly (source_class, destination_class).
// TypeError naming the argument: a class that is not a Carrier class or is
// the Carrier root, a null operation. RuntimeError when either class is
// definition-backed (use a TransferRoute). ValueError naming both classes
// when the pair already has an entry (built-in pairs included); the
// existing entry is kept. Atomic.
STRIDEWEAVE_EXPORT void register_move_operation(CarrierClass source_class, CarrierClass destination_class,
                                                std::shared_ptr<const MoveOperation> operation);
// Removes and returns the pair's operation; KeyError naming both classes
// when it has none; RuntimeError for a definition-backed class.
STRIDEWEAVE_EXPORT std::shared_ptr<const MoveOperation> unregister_move_operation(CarrierClass source_class,
                                                                                  CarrierClass destination_class);
// The operation registered for exactly the pair, else the
// ElementwiseMoveOperation instance. Never walks base classes. RuntimeError
// when either class is definition-backed (carrier-extension R5.6: it moves
// through its CarrierDefinition's TransferRoutes).
STRIDEWEAVE_EXPORT std::shared_ptr<const MoveOperation> dispatch_move(CarrierClass source_class,
                                                                      CarrierClass destination_class);
// The registered operation for exactly the pair, or null (no fallback);
// RuntimeError for a definition-backed class, as dispatch_move.
STRIDEWEAVE_EXPORT std::shared_ptr<const MoveOperation> registered_move_operation_for(CarrierClass source_class,
                                                                                     CarrierClass destination_class);

// registered_move_operation(source, destination, operation): registers on
// construction and unregisters on destruction (also during unwinding).
class STRIDEWEAVE_EXPORT ScopedMoveOperation {
 public:
  ScopedMoveOperation(CarrierClass source_class, CarrierClass destination_class,
                      std::shared_ptr<const MoveOperation> operation);
  ~ScopedMoveOperation();
  ScopedMoveOperation(const ScopedMoveOperation&) = delete;
  ScopedMoveOperation& operator=(const ScopedMoveOperation&) = delete;
  const std::shared_ptr<const MoveOperation>& operation() const noexcept { return operation_; }

 private:
  CarrierClass source_;
  CarrierClass destination_;
  std::shared_ptr<const MoveOperation> operation_;
};

// ---------------------------------------------------------------- AwaitMove

namespace detail {
// One move in flight (src/autograd/move.cpp implements it).
template <class T>
class MoveTransaction {
 public:
  virtual ~MoveTransaction() = default;
  // True once the route's transfer reached its terminal outcome (never
  // blocks).
  virtual bool transfer_done() const noexcept = 0;
  // Waits for the transfer, then validates and commits (returns the result)
  // or rolls back (throws). Called exactly once.
  virtual T finish() = 0;
};
}  // namespace detail

// AwaitMove<T> (core-concepts.md 7.1): a move in flight. wait() blocks until
// the move committed and returns its result, or rethrows its failure (the
// move rolled back); thread-safe and idempotent: every call returns the same
// result or rethrows the same exception object. done() never blocks: true
// exactly when the terminal outcome is recorded. A done() that finds the
// transfer finished records the outcome itself (it commits: a version step
// and a release), so polling alone completes a move. Dropping the last
// handle neither cancels nor blocks: the move still commits or rolls back
// (on a detached thread when its transfer is still pending).
template <class T>
class AwaitMove {
 public:
  explicit AwaitMove(std::shared_ptr<detail::MoveTransaction<T>> transaction)
      : state_(std::make_shared<State>()) {
    state_->transaction = std::move(transaction);
  }

  bool done() const {
    State& s = *state_;
    if (s.done.load(std::memory_order_acquire)) return true;
    std::unique_lock lock(s.mutex, std::try_to_lock);
    if (!lock.owns_lock()) return s.done.load(std::memory_order_acquire);  // a waiter is settling it
    if (s.done.load()) return true;
    if (!s.transaction->transfer_done()) return false;
    settle(s);
    return true;
  }

  T wait() const {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    settle(s);
    if (s.error) std::rethrow_exception(s.error);
    return *s.value;
  }

 private:
  struct State {
    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    // Dropping the last handle neither cancels nor blocks (AwaitResult): a
    // finished transfer is committed here, a pending one by a detached
    // thread that waits for it.
    ~State() {
      if (done.load() || !transaction) return;
      if (transaction->transfer_done()) {
        try {
          transaction->finish();
        } catch (...) {  // rolled back; nobody is left to report it to
        }
        return;
      }
      try {
        std::thread([t = std::move(transaction)] {
          try {
            t->finish();
          } catch (...) {
          }
        }).detach();
      } catch (...) {  // no thread: end it here after all
        try {
          transaction->finish();
        } catch (...) {
        }
      }
    }
    std::mutex mutex;
    std::shared_ptr<detail::MoveTransaction<T>> transaction;
    std::optional<T> value;
    std::exception_ptr error;
    std::atomic<bool> done{false};
  };
  // Under s.mutex.
  static void settle(State& s) {
    if (s.done.load()) return;
    try {
      s.value.emplace(s.transaction->finish());
    } catch (...) {
      s.error = std::current_exception();
    }
    s.transaction.reset();
    s.done.store(true, std::memory_order_release);
  }
  std::shared_ptr<State> state_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
