// Internal: the autograd hooks of the one dispatch point
// (src/frontend/dispatch.cpp and pipeline.cpp). See docs/autograd.md.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include <strideweave/autograd.h>
#include <strideweave/execution.h>
#include <strideweave/operation.h>

namespace strideweave::autograd {

// After a kernel produced a fresh result: when grad mode is on, a
// positional Tensor argument (`inputs`, in argument order) is
// differentiable and `published` is, record the call as `target` (or a
// fresh Operation) and attach it to `published`. `kernel_operands` are the
// operands exactly as the kernel received them; `kernel_shape` is the
// kernel result's shape when `published` squeezed axes away. Cheap when
// nothing is recorded.
void record_call(const OperationPlan& plan, std::span<const KernelOperand> kernel_operands,
                 const Attributes& attributes, const Tensor& published, std::span<const Tensor* const> inputs,
                 const std::optional<Shape>& kernel_shape, const std::shared_ptr<Operation>& target);

// Before a kernel accumulates into a caller-provided output
// (accumulate_into): a call that would record raises RuntimeError instead,
// before anything is written (the old value's history cannot be recorded).
// An overwrite (into) records the call on the output like a fresh result.
void refuse_caller_output(const OperationPlan& plan, std::span<const Tensor* const> inputs);

// The definition-backed pipeline's two steps (record_definition.cpp): after
// publication validation, a node for the call (`target`, or a fresh one;
// nothing attached; may throw); after publication, the versions snapshot
// and the attachment (cannot fail).
std::shared_ptr<Operation> prepare_definition_node(std::shared_ptr<const operation::ResolvedInvocation> invocation,
                                                   std::span<const Tensor> results,
                                                   const std::shared_ptr<Operation>& target);
void attach_definition_node(const std::shared_ptr<Operation>& node, std::span<const Tensor> results) noexcept;

// A custom definition-free class's computation (carrier-extension R13.1;
// frontend/autograd_hooks.h): the Operation that computes (`target`, or
// prototype.dispatch_op(name): its dispatch hook), then its _forward(call)
// with grad mode off. A hook without an implementation (NotImplementedError,
// from either step) is UnsupportedOperationPlan naming the class and plan.
std::shared_ptr<Operation> dispatch_hook_operation(const Carrier& prototype, const OperationPlan& plan,
                                                   std::string_view name, const std::shared_ptr<Operation>& target);
void run_dispatch_hook(Operation& op, const Carrier& prototype, const OperationPlan& plan, const DispatchedCall& call);

}  // namespace strideweave::autograd
