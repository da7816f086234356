// strideweave/completion.h — a pending outcome with a blocking, thread-safe,
// idempotent wait (carrier-extension.md R4.1; cpp-mapping.md): the
// ProviderCompletion<T> of the extension surface, also what a move route
// returns for a transfer that finishes later (move_operation.h).
//
// Spelled strideweave::extension::ProviderCompletion as the specification
// places it in strideweave.carriers.extension; kept in this core-layer
// header so that layers below the extension layer (movement) use the same
// type.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <strideweave/errors.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave::extension {

// ---------------------------------------------------------------- R4 completion

namespace detail {
// The shared terminal state of one completion.
template <class T>
struct CompletionState {
  using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;
  std::mutex mutex;
  std::condition_variable settled;
  std::function<T()> wait_once;  // a deferred completion's blocking step; consumed by the first wait()
  bool running = false;          // a waiter is inside wait_once
  std::atomic<bool> done{false};
  std::optional<Stored> value;
  std::exception_ptr error;
};
}  // namespace detail

// R4.1 ProviderCompletion<T>: a provider's pending outcome. Thread-safe and
// idempotent: every wait() returns the same value (a copy of it) or rethrows
// the same exception object; done() becomes true exactly when the terminal
// outcome is recorded. Two ways to make one:
//   - deferred(wait_once): wait_once is the provider's blocking step (a
//     stream synchronisation, an io_uring wait); the first wait() runs it
//     once, and concurrent waiters block until it settles;
//   - ProviderPromise<T>::completion(): settled by the provider from any
//     thread with set_value / set_exception.
// There is no coroutine face (R4.1: no __await__).
template <class T>
class ProviderCompletion {
 public:
  static ProviderCompletion deferred(std::function<T()> wait_once) {
    if (!wait_once) throw TypeError("ProviderCompletion.deferred: wait_once must be a callable");
    ProviderCompletion c;
    c.state_->wait_once = std::move(wait_once);
    return c;
  }
  // An already settled completion.
  static ProviderCompletion ready()
    requires std::is_void_v<T>
  {
    ProviderCompletion c;
    c.settle_value(std::monostate{});
    return c;
  }
  template <class U = T>
    requires(!std::is_void_v<U>)
  static ProviderCompletion ready(U value) {
    ProviderCompletion c;
    c.settle_value(std::move(value));
    return c;
  }
  static ProviderCompletion failed(std::exception_ptr error) {
    if (!error) throw TypeError("ProviderCompletion.failed: a null exception");
    ProviderCompletion c;
    c.settle_error(std::move(error));
    return c;
  }

  bool done() const noexcept { return state_->done.load(std::memory_order_acquire); }

  // Blocks until the terminal outcome; returns it or rethrows it.
  T wait() const {
    auto& s = *state_;
    std::unique_lock lock(s.mutex);
    if (!s.done.load() && s.wait_once && !s.running) {
      s.running = true;
      std::function<T()> step = std::move(s.wait_once);
      s.wait_once = nullptr;
      lock.unlock();
      std::optional<typename detail::CompletionState<T>::Stored> value;
      std::exception_ptr error;
      try {
        if constexpr (std::is_void_v<T>) {
          step();
          value.emplace();
        } else {
          value.emplace(step());
        }
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      s.running = false;
      if (error) s.error = error; else s.value = std::move(value);
      s.done.store(true, std::memory_order_release);
      s.settled.notify_all();
    }
    s.settled.wait(lock, [&] { return s.done.load(); });
    if (s.error) std::rethrow_exception(s.error);
    if constexpr (!std::is_void_v<T>) return *s.value;
  }

 private:
  template <class>
  friend class ProviderPromise;
  ProviderCompletion() : state_(std::make_shared<detail::CompletionState<T>>()) {}
  template <class V>
  bool settle_value(V&& v) const {
    std::lock_guard lock(state_->mutex);
    if (state_->done.load()) return false;
    state_->value.emplace(std::forward<V>(v));
    state_->done.store(true, std::memory_order_release);
    state_->settled.notify_all();
    return true;
  }
  bool settle_error(std::exception_ptr e) const {
    std::lock_guard lock(state_->mutex);
    if (state_->done.load()) return false;
    state_->error = std::move(e);
    state_->done.store(true, std::memory_order_release);
    state_->settled.notify_all();
    return true;
  }
  std::shared_ptr<detail::CompletionState<T>> state_;
};

// The provider's side of a ProviderCompletion settled from another thread.
// The first set_* wins; a second is a RuntimeError (an outcome is terminal).
template <class T>
class ProviderPromise {
 public:
  ProviderPromise() = default;
  ProviderCompletion<T> completion() const { return completion_; }
  void set_value()
    requires std::is_void_v<T>
  {
    if (!completion_.settle_value(std::monostate{})) throw RuntimeError("ProviderPromise: already settled");
  }
  template <class U = T>
    requires(!std::is_void_v<U>)
  void set_value(U value) {
    if (!completion_.settle_value(std::move(value))) throw RuntimeError("ProviderPromise: already settled");
  }
  void set_exception(std::exception_ptr error) {
    if (!error) throw TypeError("ProviderPromise.set_exception: a null exception");
    if (!completion_.settle_error(std::move(error))) throw RuntimeError("ProviderPromise: already settled");
  }

 private:
  ProviderCompletion<T> completion_;
};

}  // namespace strideweave::extension

STRIDEWEAVE_PUBLIC_END
