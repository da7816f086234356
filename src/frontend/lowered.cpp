// A built-in dispatched call run again on a composite's tier (call.h,
// execute_lowered; carrier-composition A14: Evictable lowers onto its
// promoted primary).
#include "frontend/autograd_hooks.h"
#include "frontend/dispatch.h"
#include "storage/gate.h"

#include <strideweave/call.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

namespace strideweave {

Tensor execute_lowered(const DispatchedCall& call, std::span<const KernelOperand> operands,
                       const std::shared_ptr<Operation>& tier_operation) {
  const std::string& op = call.operation;
  if (call.invocation)
    throw TypeError(fmt::format("execute_lowered: '{}' is a user-defined operation; it lowers through its definition "
                                "(call.invocation's definition called with the lowered operands)",
                                op));
  if (call.outputs.size() != 1)
    throw ValueError(fmt::format("execute_lowered: '{}' has {} outputs; a built-in call has one", op,
                                 call.outputs.size()));
  if (operands.size() != call.operands.size())
    throw ValueError(fmt::format("execute_lowered: '{}' has {} operand(s), got {}", op, call.operands.size(),
                                 operands.size()));
  // Each lowered operand stands for the call's operand in the same place: a
  // tensor of the same shape and dtype (the plan's), or the same scalar kind.
  const Carrier* prototype = nullptr;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const Tensor* lowered = std::get_if<Tensor>(&operands[i]);
    const Tensor* original = std::get_if<Tensor>(&call.operands[i]);
    if (!lowered != !original)
      throw TypeError(fmt::format("execute_lowered: operand {} of '{}' must be {}", i, op,
                                  original ? "a Tensor" : "a scalar value"));
    if (!lowered) {
      if (std::get<Value>(operands[i]).kind != std::get<Value>(call.operands[i]).kind)
        throw TypeError(fmt::format("execute_lowered: operand {} of '{}' is a scalar of another kind", i, op));
      continue;
    }
    if (!(lowered->shape() == original->shape()))
      throw ValueError(fmt::format("execute_lowered: operand {} of '{}' has shape {}, the call's has {}", i, op,
                                   lowered->shape().to_string(), original->shape().to_string()));
    if (&lowered->dtype() != &original->dtype())
      throw TypeError(fmt::format("execute_lowered: operand {} of '{}' stores {}, the call's stores {}", i, op,
                                  lowered->dtype().name(), original->dtype().name()));
    const Carrier& c = *lowered->carrier();
    if (!prototype) {
      prototype = &c;
      continue;
    }
    if (!(c.exact_class() == prototype->exact_class()))
      throw TypeError(fmt::format("execute_lowered: the operands of '{}' live on {} and {}; they must share one "
                                  "exact class",
                                  op, prototype->class_name(), c.class_name()));
    frontend::require_same_placement(op, *prototype, c);
  }
  if (!prototype) throw ValueError(fmt::format("execute_lowered: '{}' has no tensor operand to lower", op));
  prototype->require_live(op.c_str());
  // The lowered call is the outer call's implementation: it records nothing.
  const frontend::GraphConstructionOff no_graph;
  const storage::Admission admission = storage::gate(*prototype, call.plan);  // before any allocation
  frontend::CallRecord record{frontend::CallInputs{}, tier_operation};
  return frontend::execute(admission, call.plan, operands, call.attributes, call.output().shape(), *prototype,
                           Output{}, nullptr, record);
}

}  // namespace strideweave
