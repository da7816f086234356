// Internal: the dispatch of OperationDefinition calls (installed as the
// operation layer's dispatcher by the library bootstrap).
#pragma once

#include <strideweave/operation.h>

#include <memory>
#include <vector>

namespace strideweave::frontend {

// bind -> resolve (its errors propagate) -> released-state check
// (RuntimeError) -> the exact-object alias rule (ValueError). Nothing else
// happens before it returns.
std::shared_ptr<const operation::ResolvedInvocation> admit(const operation::OperationDefinition& definition,
                                                           std::vector<operation::CallOperand> operands,
                                                           operation::OptionMap options);
// The carrier whose exact class executes the invocation: the one class of
// every Tensor operand (TypeError for two classes or none).
const Carrier& dispatch_carrier(const operation::ResolvedInvocation& invocation);

// The whole call (operation::Dispatcher).
// Binds, resolves and runs one call of `definition`: a built-in through its
// lowering (kernel table, or the definition-backed pipeline), a user-defined
// one through the definition-backed pipeline or a custom definition-free
// class's dispatch hook. `target`: the Operation dispatch_op made for the
// call (it becomes the node), or null.
std::vector<Tensor> dispatch_definition(const operation::OperationDefinition& definition,
                                        std::vector<operation::CallOperand> operands, operation::OptionMap options,
                                        const Output& out, const std::shared_ptr<Operation>& target = nullptr);

}  // namespace strideweave::frontend
