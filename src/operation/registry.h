// Internal: building built-in definitions and the dispatcher hook.
//
// The definitions of the 56 built-in operations are written in the builtins
// layer (above the front end, because their VJPs use the library's own
// operations) and registered here by the library bootstrap. The front end
// installs the dispatcher that OperationDefinition::operator() calls.
#pragma once

#include <strideweave/operation.h>

#include <memory>
#include <string>
#include <vector>

namespace strideweave::operation {

struct DefinitionAccess {
  // Any definition (the caller validated the name and callbacks).
  static std::shared_ptr<OperationDefinition> make(std::string name, OperationSchema schema, ResolveFn resolve,
                                                   std::optional<ReferenceFn> reference, VjpChoice vjp,
                                                   std::optional<BuiltinTraits> builtin);
  // A built-in definition (no namespace rule: its name is a registered
  // policy operation name).
  static std::shared_ptr<OperationDefinition> make_builtin(std::string name, OperationSchema schema, ResolveFn resolve,
                                                           std::optional<ReferenceFn> reference, VjpChoice vjp,
                                                           BuiltinTraits traits);
};

// Publishes `definitions` (all or nothing; a duplicate name is a
// ValueError), once, from the library bootstrap. `reserved` names first
// segments no user definition may use beyond the built-in names themselves
// (the typed functions that run several plans, "sort" and "topk").
void register_builtin_definitions(std::vector<std::shared_ptr<OperationDefinition>> definitions,
                                  std::vector<std::string> reserved);

// The front end's dispatch of a definition call (OperationDefinition::operator()).
using Dispatcher = std::vector<Tensor> (*)(const OperationDefinition& definition, std::vector<CallOperand> operands,
                                           OptionMap options, const Output& out);
void install_dispatcher(Dispatcher dispatcher) noexcept;

// Python's str.isidentifier() (Unicode XID_Start / XID_Continue; schema.cpp).
bool is_identifier(std::string_view text) noexcept;

}  // namespace strideweave::operation
