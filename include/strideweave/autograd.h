// strideweave/autograd.h — reverse-mode automatic differentiation
// (core-concepts.md section 6; operation-semantics.md, "Automatic
// differentiation belongs to the semantic definition"; upstream
// openspec/specs/autograd and carrier-dispatch). Design and the conventions
// at non-differentiable points: docs/autograd.md.
//
// The per-tensor surface (is_differentiable, requires_grad (read-only),
// grad, retain_grad, is_leaf, autograd_ctx, detach, backward) is on Tensor
// (tensor.h). This header adds grad mode, Operation (the dispatched call and
// the graph node), the functional grad(), the VJP table and the
// finite-difference gradient check.
//
// Recording follows the texts, with no opt-in flag: when grad mode is on and
// a call's positional Tensor arguments include a differentiable one (dtype
// exactly Float32), the call saves every positional Tensor argument with its
// version snapshot and becomes the autograd_ctx of each differentiable
// result. A Float32 tensor built by the user is a leaf: it receives .grad
// whenever a backward reaches it. Inference without a graph: no_grad().
//
// Gradients are part of an operation's meaning: every VJP is written with the
// library's own public operations, so it runs on any carrier that executes
// them, and no carrier supplies its own gradient mathematics.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strideweave/call.h>
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
// contribute to any output. An output that is not differentiable ->
// RuntimeError; an input that is not -> ValueError (before any traversal);
// other errors as Tensor::backward. Without retain_graph the traversed graph
// is released.
std::vector<std::optional<Tensor>> grad(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                                        std::span<const std::optional<Tensor>> cotangents = {},
                                        bool retain_graph = false);
inline std::vector<std::optional<Tensor>> grad(const Tensor& output, std::span<const Tensor> inputs,
                                               std::optional<Tensor> cotangent = std::nullopt,
                                               bool retain_graph = false) {
  const std::optional<Tensor> cotangents[] = {std::move(cotangent)};
  return grad(std::span<const Tensor>(&output, 1), inputs, cotangents, retain_graph);
}

// Batched functional gradients (upstream autograd, "Batched functional
// gradients return one stacked gradient per reachable input"): `cotangents`
// carries K cotangents for `output`, its layout one prepended leaf batch
// mode of extent K followed by modes exactly equal to output.layout()
// (ValueError otherwise). Returns, per input, the K gradients stacked along a
// prepended batch mode whose stride is the single gradient layout's cosize
// (batch indices never share storage), or nullopt for an input the output
// does not reach. The graph is released once, after the last cotangent,
// unless retain_graph. Other errors as grad().
std::vector<std::optional<Tensor>> batched_grad(const Tensor& output, std::span<const Tensor> inputs,
                                                const Tensor& cotangents, bool retain_graph = false);

namespace autograd {

struct OperationAccess;  // src/autograd/graph.h

// What a kernel-level VJP sees: the recorded call, read-only. Tensor
// operands are detached (using them records nothing).
struct VjpContext {
  const std::string& operation;
  const std::optional<OperationPlan>& plan;  // absent for views
  std::span<const KernelOperand> operands;   // as the kernel received them
  const Attributes& attributes;
  const Tensor& output;                      // the kernel's result, detached
  const std::vector<bool>& needs_grad;       // per operand: a gradient is wanted

  const Tensor& tensor(std::size_t i) const { return std::get<Tensor>(operands[i]); }
  float scalar(std::size_t i) const { return std::get<Value>(operands[i]).f; }
};

// One entry per operand: the gradient (the operand's top-level extents,
// Float32, on the operand's carrier class) or nullopt. Called with grad mode
// off, only when some needs_grad entry is true.
using VjpFn = std::function<std::vector<std::optional<Tensor>>(const VjpContext& ctx, const Tensor& cotangent)>;

}  // namespace autograd

// ---------------------------------------------------------------- Operation

// One carrier-version pair of a saved input's snapshot (core-concepts 2.2).
struct CarrierVersion {
  std::shared_ptr<Carrier> carrier;
  std::uint64_t version = 0;
};
// A Tensor's mutation snapshot: each distinct constituent carrier once, in
// first-occurrence order, with its version at the time of the snapshot.
using VersionSnapshot = std::vector<CarrierVersion>;

// An operation call: what carrier.dispatch_op(name) returns, and the node
// autograd records (core-concepts 1.8 and 6; upstream carrier-dispatch and
// autograd). One object plays both roles, as the texts say: the result's
// autograd_ctx() *is* the Operation whose forward produced it.
//
// Dispatch. carrier.dispatch_op(name) returns a fresh Operation bound to
// `name` and to the exact class of `carrier` (_operation_name,
// _dispatch_carrier_class). forward() runs the call through the one path the
// typed functions and by-name calls take (bind, resolve, gate, align, kernel
// or provider, publication) and may run once (a second forward ->
// RuntimeError). A typed call (add(a, b)) builds the same object when it
// records, so both carry the same metadata.
//
// Recording (core-concepts 6.2). A forward call made while grad mode is on
// whose positional Tensor arguments include a differentiable (exact Float32)
// one saves every positional Tensor argument, per occurrence and in argument
// order (inputs()), with each one's version snapshot (input_versions()); it
// becomes the autograd_ctx of each differentiable result. Otherwise it saves
// nothing and attaches to nothing. The library's own pure views (permute,
// slice, reshape, squeeze, unsqueeze, broadcast_to, as_strided) are
// operations of the same kind with one input.
//
// Backward. backward(gradient) runs this call's VJP alone (after the
// release and saved-version checks) and returns one gradient or nullopt per
// saved input, in inputs() order (nullopt for a non-differentiable input).
// The mathematics is the operation's, never a carrier's: built-in
// operations use autograd's VJP table (each written with the library's own
// operations), user-defined ones their OperationDefinition's VJP.
//
// Lifetime: an Operation is shared by the tensors it produced and by the
// Operations of later calls that consumed them; the last owner destroys it,
// on whichever thread drops the last reference. Destruction of a graph of
// any depth uses bounded stack.
class Operation : public std::enable_shared_from_this<Operation> {
 public:
  Operation() noexcept;
  virtual ~Operation();
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  // ---- dispatch metadata (set once, by dispatch_op or the recording call)
  // The dispatch name, or nullopt for an Operation never dispatched.
  const std::optional<std::string>& _operation_name() const noexcept { return operation_name_; }
  // The exact class of the carrier instance that dispatched it.
  const std::optional<CarrierClass>& _dispatch_carrier_class() const noexcept { return dispatch_class_; }
  // _operation_name() or "" (convenient for messages).
  const std::string& name() const noexcept;

  // ---- forward (single use)
  // Runs the call with positional `inputs` (the operation's operands in
  // schema order: Tensors, weak scalars, structural values) and named
  // `options` (the
  // schema's options; an explicit None means the default). The operands'
  // carrier must be the dispatching carrier's class (TypeError otherwise).
  // Returns the result(s). RuntimeError on a second call, also after a
  // failed first one; NotImplementedError for an Operation never dispatched.
  std::vector<Tensor> forward(std::span<const operation::CallOperand> inputs, const CallOptions& options = {});
  // The same, with validated execution options (policy R10): they must be
  // bound to this operation's name (ValueError otherwise).
  std::vector<Tensor> forward(std::span<const operation::CallOperand> inputs, const OperationExecutionOptions& options);
  // Whether forward() has been called.
  bool has_forwarded() const noexcept { return forwarded_; }

  // ---- the autograd node
  // The saved positional Tensor arguments (empty when nothing was recorded,
  // and after release).
  std::span<const Tensor> inputs() const noexcept { return inputs_; }
  // One version snapshot per saved input, in inputs() order.
  std::vector<VersionSnapshot> input_versions() const;
  // This call's backward alone: RuntimeError when released (naming
  // retain_graph=True) or when a saved input (or a result the VJP reads)
  // was modified since; `gradient` must be Float32 (TypeError) with the
  // result's top-level extents (ValueError) on its carrier class
  // (TypeError). Returns one entry per saved input. With several results,
  // `gradient` is the cotangent of result 0. Runs with grad mode off.
  std::vector<std::optional<Tensor>> backward(const Tensor& gradient) const;
  // One cotangent (or nullopt) per result, in result order (ValueError for
  // another count).
  std::vector<std::optional<Tensor>> backward(std::span<const std::optional<Tensor>> cotangents) const;
  // True after a backward without retain_graph traversed this node.
  bool is_released() const noexcept { return released_; }
  // How many results the call produced (1 for a built-in or a view).
  std::size_t result_count() const noexcept { return result_count_; }

  // ---- what was recorded (read-only; empty after release)
  // The central plan (nullopt for views and moves).
  const std::optional<OperationPlan>& plan() const noexcept { return plan_; }
  // A definition call: its immutable ResolvedInvocation (else null).
  const std::shared_ptr<const operation::ResolvedInvocation>& invocation() const noexcept { return invocation_; }
  // Every published result, detached, in result order.
  std::span<const Tensor> outputs() const noexcept { return outputs_; }

 protected:
  // The dispatch hook's computation (carrier-extension R13.1): a
  // definition-free carrier class without a kernel table of the library's
  // own returns, from its Carrier::_dispatch_op hook, an Operation whose
  // _forward computes `call` into call.outputs. Called by the framework
  // after the capability gate, with grad mode off; an exception propagates
  // and nothing is published. The default raises NotImplementedError (the
  // framework reports it as UnsupportedOperationPlan).
  virtual void _forward(const DispatchedCall& call);
  // A composite's adapter may vet and convert the cotangents backward()
  // receives (carrier-dispatch, "Evictable backward restores outer
  // gradients": an Evictable cotangent must match the result's tier classes
  // and be promoted; one on the exact primary class is accepted). Called with
  // grad mode off for every cotangent of result `result`, after the dtype and
  // shape checks and before the class check: it may raise, return a
  // replacement (the class check then applies to it), or return nullopt to
  // keep the cotangent as given (the default).
  virtual std::optional<Tensor> _adapt_cotangent(const Tensor& cotangent, std::size_t result) const;

 private:
  friend struct autograd::OperationAccess;  // src/autograd/graph.h

  // Dispatch metadata and state.
  std::optional<std::string> operation_name_;
  std::optional<CarrierClass> dispatch_class_;
  bool dispatched_ = false;
  bool forwarded_ = false;

  // The node. kind_ says which members are meaningful.
  enum class Kind : std::uint8_t { none, kernel, view, definition, move };
  Kind kind_ = Kind::none;
  bool released_ = false;
  std::size_t result_count_ = 1;
  // The node's short lists (inputs, versions, kernel operands, outputs) take
  // their memory from this buffer inside the Operation's own allocation, so
  // recording a kernel call of up to three operands allocates one block for
  // the node instead of five (three operands fill the 256 bytes); longer
  // lists take the rest from the heap. The resource only hands memory out
  // (monotonic): a list that is cleared keeps what it used until the node
  // dies, and the lists are reserved once, so nothing regrows. Declared
  // before the lists: built first, destroyed last.
  std::array<std::byte, 256> list_buffer_;
  std::pmr::monotonic_buffer_resource list_memory_{list_buffer_.data(), list_buffer_.size(),
                                                   std::pmr::new_delete_resource()};
  // Per occurrence, the caller's handles: a differentiable input is an edge
  // of the graph (its state receives the gradient).
  std::pmr::vector<Tensor> inputs_{&list_memory_};
  // One carrier version per saved input (a Tensor has one carrier), then one
  // per result the VJP reads.
  std::pmr::vector<CarrierVersion> versions_{&list_memory_};
  // kernel, view, move: the kernel-level record.
  std::optional<OperationPlan> plan_;
  Attributes attributes_;
  // As the kernel received them: the inputs themselves, or the views the
  // front end made of them (whose own view Operations lead back to the
  // inputs: backward follows them to carry each gradient to its input's
  // shape), and materialised scalars.
  std::pmr::vector<KernelOperand> kernel_operands_{&list_memory_};
  std::optional<Shape> kernel_shape_;           // when the published result squeezed axes away
  const autograd::VjpFn* vjp_ = nullptr;
  // definition: the invocation and the declared saved operands.
  std::shared_ptr<const operation::ResolvedInvocation> invocation_;
  std::vector<Tensor> saved_operands_;
  std::pmr::vector<Tensor> outputs_{&list_memory_};
};

namespace autograd {

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

// How many Operations that recorded a node are alive in the process (all
// threads): a diagnostic for graph lifetime (a chain computed under
// no_grad() holds none).
std::int64_t live_operation_count() noexcept;

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
