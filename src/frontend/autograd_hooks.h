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
#include <span>

namespace strideweave::frontend {

struct AutogradHooks {
  // After a kernel produced a fresh result (src/autograd/record.h).
  void (*record_operation)(const OperationPlan& plan, std::span<const KernelOperand> operands,
                           const Attributes& attributes, const Tensor& result);
  // Before a kernel writes a caller-provided output.
  void (*refuse_caller_output)(const OperationPlan& plan, std::span<const KernelOperand> operands);
  // Whether graph construction is on for the calling thread.
  bool (*grad_enabled)() noexcept;
  // The definition-backed pipeline (pipeline.cpp): after publication
  // validation, the call's node (nothing attached yet; may throw); after
  // publication, its attachment to the Float32 results (cannot fail).
  std::shared_ptr<autograd::Node> (*prepare_definition_node)(
      std::shared_ptr<const operation::ResolvedInvocation> invocation, std::span<const Tensor> results);
  void (*attach_definition_node)(const std::shared_ptr<autograd::Node>& node,
                                 std::span<const Tensor> results) noexcept;
};

// Installs the hooks (the bootstrap does, once); `hooks` must outlive the
// program.
void install_autograd_hooks(const AutogradHooks* hooks) noexcept;

// The installed hooks, after the bootstrap ran. RuntimeError when none were
// installed (only possible for a library assembled without its bootstrap).
const AutogradHooks& autograd_hooks();

}  // namespace strideweave::frontend
