// Front end: reductions, arg reductions, cumsum, sort, topk.
// Semantics: docs/operations/reductions.md.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "execution/kernel_table.h"
#include "frontend/call_support.h"
#include "frontend/dispatch.h"

namespace strideweave {

using frontend::common_carrier;
using frontend::execute;
using frontend::flat;
using frontend::normalize_axes;

namespace {

// Indices are Int32: positions 0 .. 2^31-1.
constexpr std::int64_t kMaxIndexedExtent = std::int64_t{INT32_MAX_VALUE} + 1;

// The result shape of a reduction over sorted, normalised `axes`.
Shape reduced_shape(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdims) {
  std::vector<std::int64_t> out_extents;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i));
    if (!reduced) out_extents.push_back(x.shape().extent(i));
    else if (keepdims) out_extents.push_back(1);
  }
  return Shape::of(out_extents);
}

// The number of elements of one reduced block (fits: the shape's non-zero
// extents have a representable product).
std::int64_t block_size(const Tensor& x, const std::vector<std::int64_t>& axes) {
  std::int64_t n = 1;
  for (std::int64_t a : axes) n *= x.shape().extent(static_cast<std::size_t>(a));
  return n;
}

Attributes reduce_attributes(const std::vector<std::int64_t>& axes, bool keepdims) {
  Attributes attributes;
  attributes.set("axes", axes);
  attributes.set("keepdims", keepdims);
  return attributes;
}

// reduce_prod, reduce_max, reduce_min: resolve -> axes -> shape -> (no
// identity: empty block is a ValueError) -> carrier -> execute.
Tensor reduce(std::string_view op, const Tensor& x, const Axes& requested, bool keepdims, bool has_identity,
              const Output& out) {
  const OperationPlan plan = resolve_operation_plan(op, {x.dtype()});
  const std::vector<std::int64_t> axes = normalize_axes(op, requested.list(), x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  if (!has_identity && block_size(x, axes) == 0)
    throw ValueError(fmt::format("{}: the reduced block of input shape {} is empty and {} has no identity", op,
                                 x.shape().to_string(), op));
  const Carrier& prototype = common_carrier(op, {&x});
  return execute(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype, out);
}

// argmax, argmin: one axis, or every axis (flat logical ordinal).
Tensor arg_reduce(std::string_view op, const Tensor& x, std::optional<std::int64_t> axis, bool keepdims,
                  const Output& out) {
  const OperationPlan plan = resolve_operation_plan(op, {x.dtype()});
  const std::string what = fmt::format("{} axis", op);
  const std::vector<std::int64_t> axes =
      axis ? std::vector<std::int64_t>{normalize_axis(*axis, x.rank(), what.c_str())} : normalize_axes(op, std::nullopt, x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  const std::int64_t n = block_size(x, axes);
  if (n == 0)
    throw ValueError(fmt::format("{}: attempt to take the {} of an empty block (input shape {})", op, op,
                                 x.shape().to_string()));
  if (n > kMaxIndexedExtent)
    throw OverflowError(fmt::format("{}: a block of {} elements has ordinals beyond the Int32 index range (at most {})",
                                    op, n, kMaxIndexedExtent));
  const Carrier& prototype = common_carrier(op, {&x});
  return execute(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype, out);
}

// The normalised axis of sort/topk; OverflowError when its positions do not
// all fit an Int32 index.
std::int64_t indexed_axis(std::string_view op, const Tensor& x, std::int64_t axis) {
  const std::string what = fmt::format("{} axis", op);
  const std::int64_t a = normalize_axis(axis, x.rank(), what.c_str());
  const std::int64_t extent = x.shape().extent(static_cast<std::size_t>(a));
  if (extent > kMaxIndexedExtent)
    throw OverflowError(fmt::format("{}: axis {} has extent {}, beyond the Int32 index range (at most {})", op, axis,
                                    extent, kMaxIndexedExtent));
  return a;
}

// A validated call of the sort or topk plans: attributes and result shape.
struct LineCall {
  Attributes attributes;
  Shape shape;
};

LineCall sort_call(const Tensor& x, std::int64_t axis, bool descending) {
  LineCall c;
  c.attributes.set("axis", indexed_axis("sort", x, axis));
  c.attributes.set("descending", descending);
  c.shape = flat(x.shape());
  return c;
}

LineCall topk_call(const Tensor& x, std::int64_t k, std::int64_t axis, bool largest) {
  const std::int64_t a = indexed_axis("topk", x, axis);
  const std::int64_t extent = x.shape().extent(static_cast<std::size_t>(a));
  if (k < 0 || k > extent)
    throw ValueError(fmt::format("topk: k = {} is outside [0, {}] (the extent of axis {})", k, extent, axis));
  std::vector<std::int64_t> extents(x.shape().extents().begin(), x.shape().extents().end());
  extents[static_cast<std::size_t>(a)] = k;
  LineCall c;
  c.attributes.set("axis", a);
  c.attributes.set("k", k);
  c.attributes.set("largest", largest);
  c.shape = Shape::of(extents);
  return c;
}

// Both plans pass the gate before either result is allocated: execute()
// raises the gate's UnsupportedOperationPlan before it allocates or reads
// any operand, so a plan without a kernel is sent through it first.
void gate_before_allocation(std::initializer_list<const OperationPlan*> plans, const Carrier& prototype) {
  const KernelTable* table = kernel_table(prototype.exact_class());
  for (const OperationPlan* plan : plans)
    if (!table || !table->find(*plan)) execute(*plan, {}, Attributes{}, Shape{}, prototype, Output{});
}

// sort/topk: resolve both plans -> validate -> carrier -> gate both -> run both.
SortResult line_pair(std::string_view op, const Tensor& x, const char* values_op, const char* indices_op,
                     const std::function<LineCall()>& validate) {
  const OperationPlan values_plan = resolve_operation_plan(values_op, {x.dtype()});
  const OperationPlan indices_plan = resolve_operation_plan(indices_op, {x.dtype()});
  const LineCall c = validate();
  const Carrier& prototype = common_carrier(op, {&x});
  gate_before_allocation({&values_plan, &indices_plan}, prototype);
  Tensor values = execute(values_plan, {x}, c.attributes, c.shape, prototype, Output{});
  Tensor indices = execute(indices_plan, {x}, c.attributes, c.shape, prototype, Output{});
  return SortResult{std::move(values), std::move(indices)};
}

// One internal plan of sort/topk (the name-based entries below).
Tensor line_single(std::string_view op, const Tensor& x, const std::function<LineCall()>& validate,
                   const Output& out) {
  const OperationPlan plan = resolve_operation_plan(op, {x.dtype()});
  const LineCall c = validate();
  const Carrier& prototype = common_carrier(op, {&x});
  return execute(plan, {x}, c.attributes, c.shape, prototype, out);
}

}  // namespace

Tensor reduce_sum(const Tensor& x, Axes requested, bool keepdims, const std::optional<OperationExecutionOptions>& options,
                  const Output& out) {
  const OperationPlan plan =
      resolve_operation_plan("reduce_sum", {x.dtype()}, nullptr, options ? &*options : nullptr);
  const std::vector<std::int64_t> axes = normalize_axes("reduce_sum", requested.list(), x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  const Carrier& prototype = common_carrier("reduce_sum", {&x});
  return execute(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype, out);
}

Tensor reduce_prod(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  return reduce("reduce_prod", x, axes, keepdims, true, out);
}
Tensor reduce_max(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  return reduce("reduce_max", x, axes, keepdims, false, out);
}
Tensor reduce_min(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  return reduce("reduce_min", x, axes, keepdims, false, out);
}

Tensor argmax(const Tensor& x, std::optional<std::int64_t> axis, bool keepdims, const Output& out) {
  return arg_reduce("argmax", x, axis, keepdims, out);
}
Tensor argmin(const Tensor& x, std::optional<std::int64_t> axis, bool keepdims, const Output& out) {
  return arg_reduce("argmin", x, axis, keepdims, out);
}

Tensor cumsum(const Tensor& x, std::int64_t axis, const Output& out) {
  const OperationPlan plan = resolve_operation_plan("cumsum", {x.dtype()});
  Attributes attributes;
  attributes.set("axis", normalize_axis(axis, x.rank(), "cumsum axis"));
  const Carrier& prototype = common_carrier("cumsum", {&x});
  return execute(plan, {x}, attributes, flat(x.shape()), prototype, out);
}

SortResult sort(const Tensor& x, std::int64_t axis, bool descending) {
  return line_pair("sort", x, "_sort_values", "_sort_indices", [&] { return sort_call(x, axis, descending); });
}

SortResult topk(const Tensor& x, std::int64_t k, std::int64_t axis, bool largest) {
  return line_pair("topk", x, "_topk_values", "_topk_indices", [&] { return topk_call(x, k, axis, largest); });
}

namespace frontend {

namespace {

const OptionDoc kAxesDoc{"axes", "null (every axis)",
                         "axes to reduce, each in [-rank, rank), no duplicates; [] reduces nothing"};
const OptionDoc kKeepdimsDoc{"keepdims", "false", "keep reduced axes with extent 1"};

std::int64_t required_integer(std::string_view op, OptionReader& r, const char* name) {
  const std::optional<std::int64_t> v = r.optional_integer(name);
  if (!v) throw TypeError(fmt::format("{}: missing required option '{}'", op, name));
  return *v;
}

// The axes option: missing or null = every axis; a list (or one integer).
Axes axes_option(OptionReader& r) {
  std::optional<std::vector<std::int64_t>> list = r.integers("axes");
  return list ? Axes(std::move(*list)) : Axes::all();
}

// One tensor operand, no accumulator.
const Tensor& only_tensor(std::string_view op, std::span<const CallOperand> ops, const ExecutionRequest& acc) {
  no_accumulator(op, acc);
  expect_arity(op, ops, 1);
  return tensor_arg(op, ops, 0);
}

}  // namespace

void add_reduction_calls(std::vector<CallableOperation>& out) {
  {
    CallableOperation c;
    c.name = "reduce_sum";
    c.signature = "reduce_sum(x: tensor)";
    c.options = {kAxesDoc, kKeepdimsDoc};
    c.accepts_accumulator = true;
    c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r("reduce_sum", options);
      const Axes axes = axes_option(r);
      const bool keepdims = r.boolean("keepdims", false);
      r.finish();
      expect_arity("reduce_sum", ops, 1);
      const Tensor& x = tensor_arg("reduce_sum", ops, 0);
      const std::optional<OperationExecutionOptions> exec = acc.options("reduce_sum");
      return CallResult{{resolve_operation_plan("reduce_sum", {x.dtype()}, nullptr, exec ? &*exec : nullptr)},
                        {reduce_sum(x, axes, keepdims, exec, acc.out)}};
    };
    out.push_back(std::move(c));
  }
  for (const char* name : {"reduce_prod", "reduce_max", "reduce_min"}) {
    CallableOperation c;
    c.name = name;
    c.signature = fmt::format("{}(x: tensor)", name);
    c.options = {kAxesDoc, kKeepdimsDoc};
    c.call = [name](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r(name, options);
      const Axes axes = axes_option(r);
      const bool keepdims = r.boolean("keepdims", false);
      r.finish();
      const Tensor& x = only_tensor(name, ops, acc);
      const std::string_view n(name);
      Tensor result = n == "reduce_prod"  ? reduce_prod(x, axes, keepdims, acc.out)
                      : n == "reduce_max" ? reduce_max(x, axes, keepdims, acc.out)
                                          : reduce_min(x, axes, keepdims, acc.out);
      return CallResult{{resolve_operation_plan(name, {x.dtype()})}, {std::move(result)}};
    };
    out.push_back(std::move(c));
  }
  for (const char* name : {"argmax", "argmin"}) {
    CallableOperation c;
    c.name = name;
    c.signature = fmt::format("{}(x: tensor)", name);
    c.options = {{"axis", "null (every element, flat logical ordinal)", "the one axis to reduce, in [-rank, rank)"},
                 kKeepdimsDoc};
    c.call = [name](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r(name, options);
      const std::optional<std::int64_t> axis = r.optional_integer("axis");
      const bool keepdims = r.boolean("keepdims", false);
      r.finish();
      const Tensor& x = only_tensor(name, ops, acc);
      Tensor result = std::string_view(name) == "argmax" ? argmax(x, axis, keepdims, acc.out)
                                                         : argmin(x, axis, keepdims, acc.out);
      return CallResult{{resolve_operation_plan(name, {x.dtype()})}, {std::move(result)}};
    };
    out.push_back(std::move(c));
  }
  {
    CallableOperation c;
    c.name = "cumsum";
    c.signature = "cumsum(x: tensor)";
    c.options = {{"axis", "required", "the axis to accumulate along, in [-rank, rank); missing -> TypeError"}};
    c.call = [](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r("cumsum", options);
      const std::int64_t axis = required_integer("cumsum", r, "axis");
      r.finish();
      const Tensor& x = only_tensor("cumsum", ops, acc);
      return CallResult{{resolve_operation_plan("cumsum", {x.dtype()})}, {cumsum(x, axis, acc.out)}};
    };
    out.push_back(std::move(c));
  }
  // sort, and its two internal plans (each one result) for tools and the
  // conformance harness, which calls every kernel-table plan by its name.
  const std::vector<OptionDoc> sort_docs = {
      {"axis", "-1", "the axis to sort along, in [-rank, rank)"},
      {"descending", "false", "largest first (stable: equal elements keep their order)"}};
  for (const char* name : {"sort", "_sort_values", "_sort_indices"}) {
    CallableOperation c;
    c.name = name;
    c.internal = name[0] == '_';
    c.signature = std::string_view(name) == "sort" ? "sort(x: tensor) -> (values, indices)"
                                                   : fmt::format("{}(x: tensor) (internal plan of sort)", name);
    c.options = sort_docs;
    c.call = [name](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r(name, options);
      const std::int64_t axis = r.integer("axis", -1);
      const bool descending = r.boolean("descending", false);
      r.finish();
      const Tensor& x = only_tensor(name, ops, acc);
      if (std::string_view(name) != "sort")
        return CallResult{{resolve_operation_plan(name, {x.dtype()})},
                          {line_single(name, x, [&] { return sort_call(x, axis, descending); }, acc.out)}};
      no_output(name, acc);
      SortResult s = sort(x, axis, descending);
      return CallResult{{resolve_operation_plan("_sort_values", {x.dtype()}),
                         resolve_operation_plan("_sort_indices", {x.dtype()})},
                        {std::move(s.values), std::move(s.indices)}};
    };
    out.push_back(std::move(c));
  }
  const std::vector<OptionDoc> topk_docs = {
      {"k", "required", "how many elements to keep, in [0, extent of axis]; missing -> TypeError"},
      {"axis", "-1", "the axis to select along, in [-rank, rank)"},
      {"largest", "true", "the k largest (largest first); false: the k smallest (smallest first)"}};
  for (const char* name : {"topk", "_topk_values", "_topk_indices"}) {
    CallableOperation c;
    c.name = name;
    c.internal = name[0] == '_';
    c.signature = std::string_view(name) == "topk" ? "topk(x: tensor) -> (values, indices)"
                                                   : fmt::format("{}(x: tensor) (internal plan of topk)", name);
    c.options = topk_docs;
    c.call = [name](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
      OptionReader r(name, options);
      const std::int64_t k = required_integer(name, r, "k");
      const std::int64_t axis = r.integer("axis", -1);
      const bool largest = r.boolean("largest", true);
      r.finish();
      const Tensor& x = only_tensor(name, ops, acc);
      if (std::string_view(name) != "topk")
        return CallResult{{resolve_operation_plan(name, {x.dtype()})},
                          {line_single(name, x, [&] { return topk_call(x, k, axis, largest); }, acc.out)}};
      no_output(name, acc);
      SortResult s = topk(x, k, axis, largest);
      return CallResult{{resolve_operation_plan("_topk_values", {x.dtype()}),
                         resolve_operation_plan("_topk_indices", {x.dtype()})},
                        {std::move(s.values), std::move(s.indices)}};
    };
    out.push_back(std::move(c));
  }
}

}  // namespace frontend
}  // namespace strideweave
