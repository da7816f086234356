// Operation destruction with bounded stack use (autograd.h, Operation
// "Lifetime"; docs/autograd.md, "Graph lifetime").
//
// A graph is a chain of shared ownership: a tensor's state owns its
// autograd_ctx Operation, the Operation owns its saved inputs (the caller's
// handles) and the view Operations of its lowering, and so on down to the
// leaves. Left to the members' destructors, dropping the last tensor of a
// chain of n recorded calls nests n destructor frames (Node -> TensorImpl ->
// Node -> ...): about 120,000 overflowed an 8 MiB stack.
//
// Here the outermost node destructor running on a thread is the drain.
// Destructors nested inside it run as before up to kNestingLimit deep; a
// node destroyed deeper hands its edges to the drain's work list instead of
// destroying them, and the drain destroys the list's entries one at a time
// (each again at most kNestingLimit deep). An ordinary graph never reaches
// the limit and is destroyed exactly as the members' destructors would
// destroy it; a graph of any depth costs a bounded stack.
//
// No reference count is inspected: each node is destroyed by the thread whose
// shared_ptr release brought its count to zero (the standard library's
// synchronisation decides, exactly once), and the work list belongs to that
// thread, so a graph reachable from tensors on several threads needs no
// further locking: the last owner of each part tears that part down.
#include <strideweave/autograd.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <atomic>

#include <utility>
#include <vector>

#include "storage/tensor_impl.h"

namespace strideweave {
namespace {

using ImplPtr = std::shared_ptr<strideweave::detail::TensorImpl>;
using strideweave::detail::TensorAccess;

// How deep node destructors may nest on one thread before the drain takes
// over. 64 levels of a node's and a tensor state's destructors take a few
// tens of KiB of stack, also in sanitizer builds.
constexpr int kNestingLimit = 64;

// The drain's work list: edge lists handed over by deep destructors, last in
// first out. A chain keeps one entry at a time, so the first lives in the
// drain's frame (no allocation); more spill to the heap.
using Owned = std::vector<std::shared_ptr<const void>>;  // tensor states and invocations

class WorkList {
 public:
  void push(Owned&& edges) {
    if (!first_used_) {
      first_ = std::move(edges);
      first_used_ = true;
    } else {
      spilled_.push_back(std::move(edges));
    }
  }
  // Moves the last entry into `out`; false when empty.
  bool pop(Owned& out) noexcept {
    if (!spilled_.empty()) {
      out = std::move(spilled_.back());
      spilled_.pop_back();
      return true;
    }
    if (!first_used_) return false;
    out = std::move(first_);
    first_used_ = false;
    return true;
  }

 private:
  Owned first_;
  bool first_used_ = false;
  std::vector<Owned> spilled_;
};

// Per thread: how many node destructors are running (nested), and the drain's
// work list (null when none runs). Plain values (trivially destructible), so a
// node destroyed during thread or program exit still finds valid ones.
thread_local int nesting = 0;
thread_local WorkList* drain = nullptr;

bool owns_node(const Tensor& t) noexcept { return TensorAccess::impl(t).grad_fn != nullptr; }

}  // namespace

namespace {
// Every Operation alive (autograd::live_operation_count).
std::atomic<std::int64_t> live_operations{0};
}  // namespace

std::int64_t autograd::live_operation_count() noexcept { return live_operations.load(std::memory_order_relaxed); }

Operation::Operation() noexcept { live_operations.fetch_add(1, std::memory_order_relaxed); }

const std::string& Operation::name() const noexcept {
  static const std::string none;
  return operation_name_ ? *operation_name_ : none;
}

std::vector<VersionSnapshot> Operation::input_versions() const {
  std::vector<VersionSnapshot> out;
  out.reserve(inputs_.size());
  for (std::size_t i = 0; i < inputs_.size() && i < versions_.size(); ++i) out.push_back(VersionSnapshot{versions_[i]});
  return out;
}

void Operation::_forward(const DispatchedCall& call) {
  throw NotImplementedError(
      fmt::format("Operation._forward: this operation supplies no computation for '{}'", call.operation));
}

std::optional<Tensor> Operation::_adapt_cotangent(const Tensor&, std::size_t) const { return std::nullopt; }

// The members that can own further Operations (inputs_, the caller's
// handles; operand_views_; a definition call's invocation, whose bound call
// holds the caller's operand tensors; the detached handles when a caller
// attached a node to one) are destroyed in the body, while `nesting` counts
// this destructor; the remaining members own none.
Operation::~Operation() {
  live_operations.fetch_sub(1, std::memory_order_relaxed);
  const bool owns = !inputs_.empty() || !kernel_operands_.empty() || !outputs_.empty() || !saved_operands_.empty() ||
                    invocation_;
  if (!owns) return;  // released, or never recorded: owns no further graph
  const auto clear_all = [this] {
    inputs_.clear();
    kernel_operands_.clear();
    outputs_.clear();
    saved_operands_.clear();
    invocation_.reset();
  };
  if (nesting >= kNestingLimit) {
    // Deep inside a drain: hand the graph below over. Should the work list
    // fail to grow (out of memory), the members are destroyed here after
    // all: one level deeper, never a lost node.
    try {
      Owned owned;
      for (const Tensor& t : inputs_) owned.push_back(TensorAccess::shared(t));
      for (const KernelOperand& o : kernel_operands_)
        if (const Tensor* t = std::get_if<Tensor>(&o); t && owns_node(*t)) owned.push_back(TensorAccess::shared(*t));
      for (const Tensor& t : outputs_)
        if (owns_node(t)) owned.push_back(TensorAccess::shared(t));
      for (const Tensor& t : saved_operands_)
        if (owns_node(t)) owned.push_back(TensorAccess::shared(t));
      if (invocation_) owned.push_back(std::move(invocation_));
      inputs_.clear();
      kernel_operands_.clear();
      drain->push(std::move(owned));
    } catch (...) {
    }
    return;
  }
  ++nesting;
  if (nesting > 1) {
    clear_all();
  } else {
    WorkList work;
    drain = &work;
    clear_all();
    for (Owned next; work.pop(next);) next.clear();
    drain = nullptr;
  }
  --nesting;
}

}  // namespace strideweave
