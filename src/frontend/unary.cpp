// Front end: unary math and activations.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>

#include "frontend/call_support.h"
#include "frontend/dispatch.h"

namespace strideweave {

using frontend::binary;
using frontend::common_carrier;
using frontend::execute;
using frontend::flat;
using frontend::normalize_axes;
using frontend::tensor_scalar;

Tensor relu(const Tensor& x) {
  const OperationPlan plan = resolve_operation_plan("relu", {x.dtype()});
  const Carrier& prototype = common_carrier("relu", {&x});
  return execute(plan, {x}, Attributes{}, Shape::of(x.shape().extents()), prototype);
}


namespace frontend {

void add_unary_calls(std::vector<CallableOperation>& out) {
  CallableOperation c;
  c.name = "relu";
  c.signature = "relu(x: tensor)";
  c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const DType* acc) {
    no_accumulator("relu", acc);
    OptionReader("relu", options).finish();
    expect_arity("relu", ops, 1);
    const Tensor& x = tensor_arg("relu", ops, 0);
    return CallResult{{resolve_operation_plan("relu", {x.dtype()})}, {relu(x)}};
  };
  out.push_back(std::move(c));
}

}  // namespace frontend
}  // namespace strideweave
