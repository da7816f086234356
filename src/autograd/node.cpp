// Node destruction with bounded stack use (autograd.h, Node "Lifetime";
// docs/autograd.md, "Graph lifetime").
//
// A graph is a chain of shared ownership: a tensor's state owns its grad_fn
// node, the node owns the states of its operands (edges_), and so on down to
// the leaves. Left to the members' destructors, dropping the last tensor of a
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

#include <utility>
#include <vector>

#include "storage/tensor_impl.h"

namespace strideweave::autograd {
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

// The members that can own further nodes (edges_; operands_/output_/outputs_
// when a caller attached a node to a saved handle; a definition node's
// invocation, whose bound call holds the caller's operand tensors) are
// destroyed in the body, while `nesting` counts this destructor; the
// remaining members own none.
Node::~Node() {
  if (edges_.empty() && operands_.empty() && !output_ && outputs_.empty() && !invocation_)
    return;  // released: owns no further graph
  if (nesting >= kNestingLimit) {
    // Deep inside a drain: hand the graph below over. The saved operands and
    // the result are detached handles that own no node, unless a caller
    // attached one (set_autograd_ctx on a handle copied from operands()); such
    // a handle is handed over too. Should the work list fail to grow (out of
    // memory), the members are destroyed here after all: one level deeper,
    // never a lost node.
    try {
      Owned owned(edges_.begin(), edges_.end());
      for (const KernelOperand& o : operands_)
        if (const Tensor* t = std::get_if<Tensor>(&o); t && owns_node(*t)) owned.push_back(TensorAccess::shared(*t));
      if (output_ && owns_node(*output_)) owned.push_back(TensorAccess::shared(*output_));
      for (const Tensor& t : outputs_)
        if (owns_node(t)) owned.push_back(TensorAccess::shared(t));
      if (invocation_) owned.push_back(std::move(invocation_));
      edges_.clear();
      drain->push(std::move(owned));
    } catch (...) {
    }
    return;
  }
  ++nesting;
  if (nesting > 1) {
    edges_.clear();
    operands_.clear();
    output_.reset();
    outputs_.clear();
    invocation_.reset();
  } else {
    WorkList work;
    drain = &work;
    edges_.clear();
    operands_.clear();
    output_.reset();
    outputs_.clear();
    invocation_.reset();
    for (Owned next; work.pop(next);) next.clear();
    drain = nullptr;
  }
  --nesting;
}

}  // namespace strideweave::autograd
