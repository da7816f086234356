// Internal: the autograd hooks of the one dispatch point
// (src/frontend/dispatch.cpp, frontend::execute). See docs/autograd.md.
#pragma once

#include <span>

#include <strideweave/execution.h>
#include <strideweave/operation.h>

#include <memory>

namespace strideweave::autograd {

// After a kernel produced a fresh result: when grad mode is on, the plan
// outputs exactly Float32 and a Tensor operand requires grad, attach a node
// to `result`. Cheap when none holds.
void record_operation(const OperationPlan& plan, std::span<const KernelOperand> operands,
                      const Attributes& attributes, const Tensor& result);

// Before a kernel writes a caller-provided output (into/accumulate_into): a call that
// would be recorded raises RuntimeError instead, before anything is written
// (a caller-provided output cannot carry the call's graph node).
void refuse_caller_output(const OperationPlan& plan, std::span<const KernelOperand> operands);

// The definition-backed pipeline's two steps (record_definition.cpp): after
// publication validation, a node for the call (nothing attached; may throw);
// after publication, the versions snapshot and the attachment (cannot fail).
std::shared_ptr<Node> prepare_definition_node(std::shared_ptr<const operation::ResolvedInvocation> invocation,
                                              std::span<const Tensor> results);
void attach_definition_node(const std::shared_ptr<Node>& node, std::span<const Tensor> results) noexcept;

}  // namespace strideweave::autograd
