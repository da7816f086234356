// Front end: matmul, conv_general, gather, scatter.
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

Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options) {
  const OperationPlan plan =
      resolve_operation_plan("matmul", {a.dtype(), b.dtype()}, nullptr, options ? &*options : nullptr);
  if (a.rank() == 0 || b.rank() == 0)
    throw ValueError(fmt::format("matmul: operands must have rank >= 1 (got {} and {})", a.shape().to_string(),
                                 b.shape().to_string()));
  const Carrier& prototype = common_carrier("matmul", {&a, &b});
  // numpy promotion of vectors: a (K) -> (1, K), b (K) -> (K, 1).
  const Tensor a2 = a.rank() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.rank() == 1 ? b.unsqueeze(1) : b;
  const std::int64_t m = a2.shape().extent(a2.rank() - 2), k = a2.shape().extent(a2.rank() - 1);
  const std::int64_t kb = b2.shape().extent(b2.rank() - 2), n = b2.shape().extent(b2.rank() - 1);
  if (k != kb)
    throw ValueError(fmt::format("matmul: contraction extents differ ({} in {} vs {} in {})", k, a.shape().to_string(),
                                 kb, b.shape().to_string()));
  std::vector<std::int64_t> batch_a(a2.shape().extents().begin(), a2.shape().extents().end() - 2);
  std::vector<std::int64_t> batch_b(b2.shape().extents().begin(), b2.shape().extents().end() - 2);
  const Shape batch = broadcast_shapes(Shape::of(batch_a), Shape::of(batch_b), "matmul");
  std::vector<std::int64_t> ea(batch.extents().begin(), batch.extents().end()), eb = ea, eo = ea;
  ea.insert(ea.end(), {m, k});
  eb.insert(eb.end(), {k, n});
  eo.insert(eo.end(), {m, n});
  Tensor result = execute(plan, {a2.broadcast_to(Shape::of(ea)), b2.broadcast_to(Shape::of(eb))}, Attributes{},
                          Shape::of(eo), prototype);
  // Remove the axes the vector promotion introduced.
  const auto rank = static_cast<std::int64_t>(eo.size());
  if (a.rank() == 1 && b.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 2, rank - 1});
  if (a.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 2});
  if (b.rank() == 1) return result.squeeze(std::vector<std::int64_t>{rank - 1});
  return result;
}


namespace frontend {

void add_structured_calls(std::vector<CallableOperation>& out) {
  CallableOperation c;
  c.name = "matmul";
  c.signature = "matmul(a: tensor, b: tensor)";
  c.accepts_accumulator = true;
  c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const DType* acc) {
    OptionReader("matmul", options).finish();
    expect_arity("matmul", ops, 2);
    const Tensor& a = tensor_arg("matmul", ops, 0);
    const Tensor& b = tensor_arg("matmul", ops, 1);
    std::optional<OperationExecutionOptions> exec;
    if (acc) exec.emplace("matmul", acc);
    return CallResult{{resolve_operation_plan("matmul", {a.dtype(), b.dtype()}, nullptr, exec ? &*exec : nullptr)},
                      {matmul(a, b, exec)}};
  };
  out.push_back(std::move(c));
}

}  // namespace frontend
}  // namespace strideweave
