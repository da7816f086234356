// The composition root: the one translation unit that sees every layer and
// wires the upper ones into the lower ones (docs/design.md, "Layers"). It
// installs the library bootstrap during static initialisation; the bootstrap
// itself runs lazily, before the first answer of any registry (core/bootstrap.h).
#include <strideweave/autograd.h>

#include "autograd/record.h"
#include "builtins/definitions.h"
#include "carriers/carrier_list.h"
#include "core/bootstrap.h"
#include "frontend/autograd_hooks.h"
#include "frontend/definition_dispatch.h"
#include "operation/registry.h"

namespace strideweave {
namespace {

constexpr frontend::AutogradHooks autograd_recording{&autograd::record_operation, &autograd::refuse_caller_output,
                                                     &is_grad_enabled, &autograd::prepare_definition_node,
                                                     &autograd::attach_definition_node, &set_grad_enabled};

void bootstrap() {
  frontend::install_autograd_hooks(&autograd_recording);
  operation::install_dispatcher(&frontend::dispatch_definition);
  carriers::register_shipped_carriers();
  builtins::register_builtin_definitions();
}

// Static initialisation of the library installs the bootstrap (a pointer
// store: safe in any initialisation order).
[[maybe_unused]] const bool installed = (detail::install_bootstrap(&bootstrap), true);

}  // namespace
}  // namespace strideweave
