// Front end: reductions, arg reductions, cumsum, sort, topk.
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

Tensor reduce_sum(const Tensor& x, ReduceOptions reduce, const std::optional<OperationExecutionOptions>& options) {
  const OperationPlan plan =
      resolve_operation_plan("reduce_sum", {x.dtype()}, nullptr, options ? &*options : nullptr);
  const std::vector<std::int64_t> axes = normalize_axes("reduce_sum", reduce.axes, x.rank());
  std::vector<std::int64_t> out_extents;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i));
    if (!reduced) out_extents.push_back(x.shape().extent(i));
    else if (reduce.keepdims) out_extents.push_back(1);
  }
  const Carrier& prototype = common_carrier("reduce_sum", {&x});
  Attributes attributes;
  attributes.set("axes", axes);
  attributes.set("keepdims", reduce.keepdims);
  return execute(plan, {x}, attributes, Shape::of(out_extents), prototype);
}


namespace frontend {

void add_reduction_calls(std::vector<CallableOperation>& out) {
  CallableOperation c;
  c.name = "reduce_sum";
  c.signature = "reduce_sum(x: tensor)";
  c.options = {{"axes", "null (every axis)", "axes to reduce, each in [-rank, rank), no duplicates"},
               {"keepdims", "false", "keep reduced axes with extent 1"}};
  c.accepts_accumulator = true;
  c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const DType* acc) {
    OptionReader r("reduce_sum", options);
    ReduceOptions reduce{r.integers("axes"), r.boolean("keepdims", false)};
    r.finish();
    expect_arity("reduce_sum", ops, 1);
    const Tensor& x = tensor_arg("reduce_sum", ops, 0);
    std::optional<OperationExecutionOptions> exec;
    if (acc) exec.emplace("reduce_sum", acc);
    return CallResult{{resolve_operation_plan("reduce_sum", {x.dtype()}, nullptr, exec ? &*exec : nullptr)},
                      {reduce_sum(x, reduce, exec)}};
  };
  out.push_back(std::move(c));
}

}  // namespace frontend
}  // namespace strideweave
