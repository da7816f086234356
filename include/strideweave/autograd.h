// strideweave/autograd.h — reverse-mode automatic differentiation
// (core-concepts.md section 6; operation-semantics.md, "Automatic
// differentiation belongs to the semantic definition"). Design and the
// conventions at non-differentiable points: docs/autograd.md.
//
// The per-tensor surface (requires_grad, set_requires_grad, grad, retain_grad,
// is_leaf, grad_fn/autograd_ctx, detach, backward) is on Tensor (tensor.h).
// This header adds grad mode, the graph node, the functional grad(), the VJP
// table and the finite-difference gradient check.
//
// Recording. When grad mode is on, a call whose plan outputs exactly Float32
// and which has a Tensor operand that requires grad gets a Node as its
// result's grad_fn. The node keeps the operation name, the plan, the
// normalised Attributes, every operand exactly as the kernel received it
// (tensor views already broadcast/aligned by the front end, weak scalars
// materialised) as detached handles with their carriers' versions, and the
// result (detached). Views (permute, slice, reshape, squeeze, unsqueeze,
// broadcast_to, as_strided) of a tensor that requires grad get a view node.
// Int32 and Bool results never get a node.
//
// Gradients are part of an operation's meaning: every VJP is written with the
// library's own public operations, so it runs on any carrier that executes
// them, and no carrier supplies its own gradient mathematics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strideweave/execution.h>
#include <strideweave/operation.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct TensorImpl;
}

// ---------------------------------------------------------------- grad mode
// Thread-local (each thread starts enabled) and restorable.
bool is_grad_enabled() noexcept;
void set_grad_enabled(bool enabled) noexcept;

// RAII: sets grad mode for the guard's lifetime and restores the previous
// mode on exit (also when an exception leaves the scope).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) noexcept : previous_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// Disables recording for its lifetime: `{ NoGradGuard g; ... }` or
// `auto g = no_grad();`.
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() noexcept : GradModeGuard(false) {}
};
inline NoGradGuard no_grad() noexcept { return NoGradGuard(); }

// ---------------------------------------------------------------- functional

// The vector-Jacobian products of `outputs` (weighted by `cotangents`) with
// respect to `inputs`, without touching any .grad. cotangents: empty, or one
// entry per output; nullopt = the implicit unit cotangent (same rule as
// Tensor::backward). One entry per input: its gradient (fresh compact
// storage of the input's carrier class), or nullopt when the input does not
// contribute to any output. Every input must be differentiable and require
// grad (RuntimeError otherwise); errors as Tensor::backward. Without
// retain_graph the traversed graph is released.
std::vector<std::optional<Tensor>> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                                        std::span<const std::optional<Tensor>> cotangents = {},
                                        bool retain_graph = false);
inline std::vector<std::optional<Tensor>> grad(const Tensor& output, std::span<const Tensor> inputs,
                                               std::optional<Tensor> cotangent = std::nullopt,
                                               bool retain_graph = false) {
  const std::optional<Tensor> cotangents[] = {std::move(cotangent)};
  return grad(std::span<const Tensor>(&output, 1), inputs, cotangents, retain_graph);
}

namespace autograd {

// What a VJP sees: the recorded call, read-only. Tensor operands are
// detached (using them records nothing).
struct VjpContext {
  const std::string& operation;
  const std::optional<OperationPlan>& plan;  // absent for views
  std::span<const KernelOperand> operands;   // as the kernel received them
  const Attributes& attributes;
  const Tensor& output;                      // the published result, detached
  const std::vector<bool>& needs_grad;       // per operand: a gradient is wanted

  const Tensor& tensor(std::size_t i) const { return std::get<Tensor>(operands[i]); }
  float scalar(std::size_t i) const { return std::get<Value>(operands[i]).f; }
};

// One entry per operand: the gradient (the operand's top-level extents,
// Float32, on the operand's carrier class) or nullopt. Called with grad mode
// off, only when some needs_grad entry is true.
using VjpFn = std::function<std::vector<std::optional<Tensor>>(const VjpContext& ctx, const Tensor& cotangent)>;

// The VJP of `operation` (an operation name or a view kind), or nullptr.
const VjpFn* find_vjp(std::string_view operation);
// Every name with a VJP, sorted.
std::vector<std::string> operations_with_vjp();
// Every registered operation with a plan that outputs exactly Float32 and
// has a Float32 tensor operand (derived from the registry's executable plan
// set), sorted.
std::vector<std::string> differentiable_operations();
// The differentiable plans of executable_plan_set() (same rule).
std::vector<OperationPlan> differentiable_plans();

// One node of the graph (the specification's autograd_ctx): one recorded
// operation call or view. Immutable after recording except for its release.
//
// Three kinds: a kernel node (a typed call on a definition-free carrier: the
// kernel's operands, one output, autograd's VJP table), a view node, and a
// definition node (a call of an OperationDefinition executed by the
// definition-backed pipeline, operation-semantics.md "Automatic
// differentiation belongs to the semantic definition"): it holds the
// immutable ResolvedInvocation, every published result (one node for all of
// the call's differentiable results), the declared saved operands with their
// carriers' versions, and calls the definition's VJP with a VJPContext.
//
// Lifetime: a node is shared (std::shared_ptr) by the tensors it produced and
// by the nodes of later calls that consumed them; the last owner, on whichever
// thread it drops its reference, destroys it. Destruction is iterative: a
// graph of any depth (a chain of millions of nodes held by one tensor) is torn
// down on the destroying thread with bounded stack use.
class Node {
 public:
  Node() = default;
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::optional<OperationPlan>& plan() const noexcept { return plan_; }
  const Attributes& attributes() const noexcept { return attributes_; }
  // The saved operands (empty after release): a kernel node's in kernel
  // order; a definition node's the declared saved_operands, in declared order.
  std::span<const KernelOperand> operands() const noexcept { return operands_; }
  // The published result, detached (nullopt after release); a definition
  // node: its first result.
  const std::optional<Tensor>& output() const noexcept { return output_; }
  // A definition node: the resolved invocation (null for kernel and view
  // nodes, and after release).
  const std::shared_ptr<const operation::ResolvedInvocation>& invocation() const noexcept { return invocation_; }
  // A definition node: every published result, detached, in result order
  // (empty for kernel and view nodes, and after release).
  std::span<const Tensor> outputs() const noexcept { return outputs_; }
  // True after a backward without retain_graph traversed this node.
  bool is_released() const noexcept { return released_; }
  // The operation's backward alone (operation-semantics.md): RuntimeError
  // when released or when a saved carrier's version changed; then one
  // gradient or nullopt per operand. `cotangent` must be Float32 with the
  // result's top-level extents (ValueError), on its carrier class
  // (TypeError). Runs with grad mode off.
  //
  // A definition node returns one entry per schema operand (nullopt for the
  // operands that are not differentiable or do not require grad); with more
  // than one result, this form passes `cotangent` for result 0 only.
  std::vector<std::optional<Tensor>> backward(const Tensor& cotangent) const;
  // A definition node's backward with one cotangent (or nullopt) per result,
  // in result order (ValueError for another count; each present cotangent is
  // checked like the single form's). A kernel or view node takes exactly one.
  std::vector<std::optional<Tensor>> backward(std::span<const std::optional<Tensor>> cotangents) const;

 private:
  friend struct NodeAccess;  // src/autograd/graph.h
  struct Saved {
    std::shared_ptr<Carrier> carrier;  // a carrier whose version is checked
    std::uint64_t version;
  };
  std::string name_;
  std::optional<OperationPlan> plan_;
  Attributes attributes_;
  std::vector<KernelOperand> operands_;
  std::optional<Tensor> output_;
  std::vector<Saved> saved_;                                // each distinct carrier once, first occurrence
  std::vector<std::shared_ptr<detail::TensorImpl>> edges_;  // per operand: where its gradient flows, or null
  std::vector<bool> needs_grad_;                            // per operand: edge present
  const VjpFn* vjp_ = nullptr;
  bool released_ = false;
  std::shared_ptr<const operation::ResolvedInvocation> invocation_;  // definition nodes
  std::vector<Tensor> outputs_;                                       // definition nodes: every result, detached
  bool definition_ = false;                                           // a definition node (also after release)
  std::size_t result_count_ = 0;                                      // definition nodes (also after release)
};

// ---------------------------------------------------------------- gradient check

// Finite-difference check of every differentiable operation (docs/autograd.md,
// "Gradient checks"): for each differentiable plan the carrier executes, a few
// fixed cases with inputs away from kinks; every Float32 tensor operand's VJP
// (with a random cotangent) is compared with float32 central differences
// (h = 1e-2) under |analytic - numeric| <= 1e-2 * max(1, |analytic|, |numeric|).
struct GradientCheckReport {
  std::string carrier;              // class name
  std::int64_t operations = 0;      // differentiable operations the carrier executes
  std::int64_t checked = 0;         // of those, checked (a VJP and cases exist)
  std::int64_t failed = 0;          // operations with a failure (or no VJP, or no cases)
  std::vector<std::string> failures;  // one line per failure
};
// All operations, on `prototype`'s exact class (tensors are built with
// prototype.new_like).
GradientCheckReport check_gradients(const Carrier& prototype);
// One operation (a report with operations = 1, or 0 when the carrier
// executes no differentiable plan of it).
GradientCheckReport check_operation_gradients(const Carrier& prototype, std::string_view operation);

}  // namespace autograd
}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
