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
std::vector<Tensor> dispatch_definition(const operation::OperationDefinition& definition,
                                        std::vector<operation::CallOperand> operands, operation::OptionMap options,
                                        const Output& out);

}  // namespace strideweave::frontend
