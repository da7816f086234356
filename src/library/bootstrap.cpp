// The composition root: the one translation unit that sees every layer and
// wires the upper ones into the lower ones (docs/design.md, "Layers"). It
// installs the library bootstrap during static initialisation; the bootstrap
// itself runs lazily, before the first answer of any registry (core/bootstrap.h).
#include <strideweave/autograd.h>

#include "autograd/graph.h"
#include "autograd/record.h"
#include "builtins/definitions.h"
#include "carriers/carrier_list.h"
#include "core/bootstrap.h"
#include "core/carrier_class_internal.h"
#include "extension_carriers/carrier_list.h"
#include "frontend/autograd_hooks.h"
#include "frontend/definition_dispatch.h"
#include "operation/registry.h"

namespace strideweave {
namespace {

constexpr frontend::AutogradHooks autograd_recording{&autograd::record_call,
                                                     &autograd::refuse_caller_output,
                                                     &is_grad_enabled,
                                                     &autograd::prepare_definition_node,
                                                     &autograd::attach_definition_node,
                                                     &autograd::dispatch_hook_operation,
                                                     &autograd::run_dispatch_hook,
                                                     &set_grad_enabled};

// A definition called as a function (OperationDefinition::operator()) has no
// dispatch_op Operation: the call makes its own node.
std::vector<Tensor> dispatch_called_definition(const operation::OperationDefinition& definition,
                                               std::vector<operation::CallOperand> operands,
                                               operation::OptionMap options, const Output& out) {
  return frontend::dispatch_definition(definition, std::move(operands), std::move(options), out, nullptr);
}

void bootstrap() {
  frontend::install_autograd_hooks(&autograd_recording);
  operation::install_dispatcher(&dispatch_called_definition);
  carriers::register_shipped_carriers();
  builtins::register_builtin_definitions();
  // The carriers built on the public surface are named like the shipped
  // ones (their folders may include public headers only).
  for (const extension_carriers::ExtensionCarrier& c : extension_carriers::extension_carriers())
    detail::CarrierClassAccess::name_shipped_class(c.carrier_class(), std::string(c.name));
  extension_carriers::register_extension_carriers();
}

// Static initialisation of the library installs the bootstrap and the view
// hook (pointer stores into constant-initialised atomics: safe in any
// initialisation order). The view hook cannot wait for the lazy bootstrap:
// a view made before any registry answered must record too.
[[maybe_unused]] const bool installed = (detail::install_bootstrap(&bootstrap), autograd::install_view_hook(), true);

}  // namespace
}  // namespace strideweave
