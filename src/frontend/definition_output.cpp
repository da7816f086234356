// Caller-provided outputs on the definition-backed pipeline. See
// definition_output.h.
#include "frontend/definition_output.h"

#include "frontend/dispatch.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <vector>

namespace strideweave::frontend {

void admit_definition_output(const operation::ResolvedInvocation& invocation, const Carrier& prototype,
                             const Output& out, bool graph) {
  const std::string& op = invocation.operation();
  if (invocation.results().size() != 1)
    throw TypeError(fmt::format("{}: has {} results and takes no caller-provided output", op,
                                invocation.results().size()));
  const operation::ResultSpec& spec = invocation.results()[0];
  const Tensor& target = out.tensor();
  if (!(target.carrier()->exact_class() == prototype.exact_class()))
    throw TypeError(fmt::format("{}: the output lives on {} but the operands on {}", op, target.carrier()->class_name(),
                                prototype.class_name()));
  require_output_placement(op, *target.carrier(), prototype);
  target.carrier()->require_live(op.c_str());
  target.carrier()->require_writable(op.c_str());
  if (&target.dtype() != &spec.dtype())
    throw TypeError(fmt::format("{}: the output has dtype {} but the result has dtype {}", op, target.dtype().name(),
                                spec.dtype().name()));
  if (!(Shape::of(target.shape().extents()) == Shape::of(spec.shape().extents())))
    throw ValueError(fmt::format("{}: the output has shape {} but the result has shape {}", op,
                                 target.shape().to_string(), spec.shape().to_string()));
  if (!target.layout().is_injective())
    throw ValueError(fmt::format("{}: the output's layout {} maps several elements to one slot", op,
                                 target.layout().to_string()));
  for (const operation::CallOperand& o : invocation.operands())
    if (const Tensor* t = std::get_if<Tensor>(&o); t && t->carrier() == target.carrier())
      throw ValueError(fmt::format("{}: the output shares its carrier with an operand", op));
  if (graph)
    throw RuntimeError(fmt::format("{}: a caller-provided output cannot carry the call's autograd node (grad mode "
                                   "is on and a Float32 operand takes part in differentiation); compute into fresh "
                                   "storage, or write under no_grad()",
                                   op));
}

Tensor write_definition_output(const operation::ResolvedInvocation& invocation, const Tensor& result,
                               const Output& out) {
  const Tensor& target = out.tensor();
  Carrier& storage = *target.carrier();
  const std::vector<Value> computed = result.values();  // logical order
  std::vector<std::int64_t> slots(computed.size());
  std::vector<Value> old(computed.size());
  std::vector<Value> values = computed;
  const bool accumulate = out.mode() == OutputMode::Accumulate;
  for (std::size_t k = 0; k < computed.size(); ++k) {
    slots[k] = target.offset() + target.layout()(static_cast<std::int64_t>(k));
    old[k] = storage.get_value(slots[k]);
    if (!accumulate) continue;
    if (old[k].kind == ElementKind::Int32) {
      const std::int64_t sum = static_cast<std::int64_t>(old[k].i) + computed[k].i;
      if (sum < INT32_MIN_VALUE || sum > INT32_MAX_VALUE)
        throw OverflowError(fmt::format("{}: accumulating into the Int32 output: element {} (in logical order) would "
                                        "be outside [{}, {}]",
                                        invocation.operation(), k, INT32_MIN_VALUE, INT32_MAX_VALUE));
      values[k] = Value::from_int32(static_cast<std::int32_t>(sum));
    } else if (old[k].kind == ElementKind::Float32) {
      values[k] = Value::from_float32(old[k].f + computed[k].f);
    } else {
      throw TypeError(fmt::format("{}: accumulating into a {} output is not defined", invocation.operation(),
                                  target.dtype().name()));
    }
  }
  try {
    storage.write_slots(slots, values);
  } catch (...) {
    // A storage provider's write failed part way: put back what was there
    // (best effort; this restoring write is one version step), then report
    // the provider's error.
    try {
      storage.write_slots(slots, old);
    } catch (...) {
    }
    throw;
  }
  return target;
}

}  // namespace strideweave::frontend
