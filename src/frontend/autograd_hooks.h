// Internal: the dispatch point's hooks into autograd.
//
// Autograd sits above the front end (its VJPs are written with the library's
// own operations), so the front end cannot call it. The library bootstrap
// (src/library/bootstrap.cpp) installs autograd's recording functions here
// instead; frontend::execute calls them at the one dispatch point.
#pragma once

#include <strideweave/execution.h>
#include <strideweave/operation.h>

#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace strideweave::frontend {

struct AutogradHooks {
  // After a kernel produced a fresh result (src/autograd/record.h).
  void (*record_call)(const OperationPlan& plan, std::span<const KernelOperand> kernel_operands,
                      const Attributes& attributes, const Tensor& published, std::span<const Tensor* const> inputs,
                      const std::optional<Shape>& kernel_shape, const std::shared_ptr<Operation>& target);
  // Before a kernel writes a caller-provided output.
  void (*refuse_caller_output)(const OperationPlan& plan, std::span<const Tensor* const> inputs);
  // Whether graph construction is on for the calling thread.
  bool (*grad_enabled)() noexcept;
  // The definition-backed pipeline (pipeline.cpp): after publication
  // validation, the call's node (`target`, or a fresh one; nothing attached
  // yet; may throw); after publication, its attachment to the Float32
  // results (cannot fail).
  std::shared_ptr<Operation> (*prepare_definition_node)(std::shared_ptr<const operation::ResolvedInvocation> invocation,
                                                        std::span<const Tensor> results,
                                                        const std::shared_ptr<Operation>& target);
  void (*attach_definition_node)(const std::shared_ptr<Operation>& node, std::span<const Tensor> results) noexcept;
  // A custom definition-free class's computation (carrier-extension R13.1),
  // in two steps so that a class without an implementation refuses before
  // anything is allocated: the Operation (`target` when dispatch_op already
  // asked the hook, else prototype.dispatch_op(name); a hook that supplies
  // nothing is UnsupportedOperationPlan), then its _forward(call) with grad
  // mode off (NotImplementedError from it is UnsupportedOperationPlan too).
  std::shared_ptr<Operation> (*dispatch_hook_operation)(const Carrier& prototype, const OperationPlan& plan,
                                                        std::string_view name,
                                                        const std::shared_ptr<Operation>& target);
  void (*run_dispatch_hook)(Operation& op, const Carrier& prototype, const OperationPlan& plan,
                            const DispatchedCall& call);
  // Sets graph construction for the calling thread (GraphConstructionOff).
  void (*set_grad_enabled)(bool enabled) noexcept;
};

// Installs the hooks (the bootstrap does, once); `hooks` must outlive the
// program.
void install_autograd_hooks(const AutogradHooks* hooks) noexcept;

// The installed hooks, after the bootstrap ran. RuntimeError when none were
// installed (only possible for a library assembled without its bootstrap).
const AutogradHooks& autograd_hooks();

// Graph construction disabled on the calling thread while it lives, and the
// previous state restored when it ends (exceptions included): every provider
// callback (pattern prepare, submit, completion wait, a CompositeProvider's
// result_carriers and prepare, storage callbacks inside an operation) and
// opcheck's direct reference and VJP calls run under one, so a provider
// records no node (docs/extension.md, "Providers run without a graph").
class GraphConstructionOff {
 public:
  GraphConstructionOff() : hooks_(autograd_hooks()), previous_(hooks_.grad_enabled()) {
    hooks_.set_grad_enabled(false);
  }
  ~GraphConstructionOff() { hooks_.set_grad_enabled(previous_); }
  GraphConstructionOff(const GraphConstructionOff&) = delete;
  GraphConstructionOff& operator=(const GraphConstructionOff&) = delete;

 private:
  const AutogradHooks& hooks_;
  bool previous_;
};

}  // namespace strideweave::frontend
