// Front end: reductions, arg reductions, cumsum, sort, topk.
// Semantics: docs/operations/reductions.md.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "frontend/call_support.h"
#include "frontend/autograd_hooks.h"
#include "frontend/dispatch.h"
#include "storage/gate.h"

namespace strideweave {

using frontend::common_carrier;
using frontend::execute;
using frontend::Execute;
using frontend::by_definition;
using frontend::bind_builtin;
using frontend::normalize_op_axis;
using frontend::Lower;
using frontend::Lowered;
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
template <class Finish>
auto reduce(std::string_view op, const Tensor& x, const Axes& requested, bool keepdims, bool has_identity,
            Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {x.dtype()}, scratch);
  const std::vector<std::int64_t> axes = normalize_axes(op, requested.list(), x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  if (!has_identity && block_size(x, axes) == 0)
    throw ValueError(fmt::format("{}: the reduced block of input shape {} is empty and {} has no identity", op,
                                 x.shape().to_string(), op));
  const Carrier& prototype = common_carrier(op, {&x});
  return finish(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype);
}

// argmax, argmin: one axis, or every axis (flat logical ordinal).
template <class Finish>
auto arg_reduce(std::string_view op, const Tensor& x, std::optional<std::int64_t> axis, bool keepdims,
                Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {x.dtype()}, scratch);
  const std::vector<std::int64_t> axes = axis ? std::vector<std::int64_t>{normalize_op_axis(op, "axis", *axis, x.rank())}
                                              : normalize_axes(op, std::nullopt, x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  const std::int64_t n = block_size(x, axes);
  if (n == 0)
    throw ValueError(fmt::format("{}: attempt to take the {} of an empty block (input shape {})", op, op,
                                 x.shape().to_string()));
  if (n > kMaxIndexedExtent)
    throw OverflowError(fmt::format("{}: a block of {} elements has ordinals beyond the Int32 index range (at most {})",
                                    op, n, kMaxIndexedExtent));
  const Carrier& prototype = common_carrier(op, {&x});
  return finish(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype);
}

// The normalised axis of sort/topk; OverflowError when its positions do not
// all fit an Int32 index.
std::int64_t indexed_axis(std::string_view op, const Tensor& x, std::int64_t axis) {
  const std::int64_t a = normalize_op_axis(op, "axis", axis, x.rank());
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

// sort/topk: resolve both plans -> validate -> carrier -> gate both -> run
// both. On a definition-backed carrier each plan runs its own internal
// definition (_sort_values and _sort_indices, _topk_values and
// _topk_indices) with the call's options (docs/extension.md, "Typed
// functions on definition-backed carriers").
SortResult line_pair(std::string_view op, const Tensor& x, const char* values_op, const char* indices_op,
                     const std::function<LineCall()>& validate, const operation::OptionMap& options) {
  frontend::PlanScratch values_plan_scratch;
  const OperationPlan& values_plan = frontend::cached_plan(values_op, {x.dtype()}, values_plan_scratch);
  frontend::PlanScratch indices_plan_scratch;
  const OperationPlan& indices_plan = frontend::cached_plan(indices_op, {x.dtype()}, indices_plan_scratch);
  const LineCall c = validate();
  const Carrier& prototype = common_carrier(op, {&x});
  // Both plans pass the gate (one dispatch record each) before either result
  // is allocated or either pattern prepared.
  const storage::Admission values_admission = storage::gate(prototype, values_plan);
  const storage::Admission indices_admission = storage::gate(prototype, indices_plan);
  const auto values_by_name = [&] { return bind_builtin(values_op, {x}, options); };
  const auto indices_by_name = [&] { return bind_builtin(indices_op, {x}, options); };
  const frontend::DefinitionRoute values_route = by_definition(values_by_name);
  const frontend::DefinitionRoute indices_route = by_definition(indices_by_name);
  const KernelOperand operands[] = {x};
  frontend::CallRecord values_record{{&x}, nullptr}, indices_record{{&x}, nullptr};
  Tensor values = execute(values_admission, values_plan, operands, c.attributes, c.shape, prototype, Output{}, &values_route,
                          values_record);
  Tensor indices = execute(indices_admission, indices_plan, operands, c.attributes, c.shape, prototype, Output{}, &indices_route,
                           indices_record);
  // Each plan is its own recorded call (a definition route recorded there).
  const frontend::AutogradHooks& hooks = frontend::autograd_hooks();
  if (!values_route.taken)
    hooks.record_call(values_plan, std::span<const KernelOperand>(operands), c.attributes, values, values_record.inputs.span(), std::nullopt,
                      values_record.target);
  if (!indices_route.taken)
    hooks.record_call(indices_plan, std::span<const KernelOperand>(operands), c.attributes, indices, indices_record.inputs.span(), std::nullopt,
                      indices_record.target);
  return SortResult{std::move(values), std::move(indices)};
}

// One internal plan of sort/topk (the name-based entries below).
Lowered line_single(std::string_view op, const Tensor& x, const std::function<LineCall()>& validate) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {x.dtype()}, scratch);
  const LineCall c = validate();
  const Carrier& prototype = common_carrier(op, {&x});
  return Lower{}(plan, {x}, c.attributes, c.shape, prototype);
}

template <class Finish>
auto reduce_sum_call(const Tensor& x, const Axes& requested, bool keepdims,
                     const std::optional<OperationExecutionOptions>& options, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("reduce_sum", {x.dtype()}, scratch, options ? &*options : nullptr);
  const std::vector<std::int64_t> axes = normalize_axes("reduce_sum", requested.list(), x.rank());
  const Shape shape = reduced_shape(x, axes, keepdims);
  const Carrier& prototype = common_carrier("reduce_sum", {&x});
  return finish(plan, {x}, reduce_attributes(axes, keepdims), shape, prototype);
}

template <class Finish>
auto cumsum_call(const Tensor& x, std::int64_t axis, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("cumsum", {x.dtype()}, scratch);
  Attributes attributes;
  attributes.set("axis", normalize_axis(axis, x.rank(), "cumsum axis"));
  const Carrier& prototype = common_carrier("cumsum", {&x});
  return finish(plan, {x}, attributes, flat(x.shape()), prototype);
}


// The axes and keepdims options of a reduction called by definition.
operation::OptionMap reduction_options(const Axes& axes, bool keepdims) {
  operation::OptionMap options;
  if (axes.list()) options.emplace("axes", *axes.list());
  options.emplace("keepdims", keepdims);
  return options;
}

}  // namespace

Tensor reduce_sum(const Tensor& x, Axes requested, bool keepdims, const std::optional<OperationExecutionOptions>& options,
                  const Output& out) {
  const auto by_name = [&] {
    operation::OptionMap map = frontend::execution_option_map(options);
    map.merge(reduction_options(requested, keepdims));
    return bind_builtin("reduce_sum", {x}, std::move(map));
  };
  return reduce_sum_call(x, requested, keepdims, options, Execute{out, by_definition(by_name), {&x}});
}

Tensor reduce_prod(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  const auto by_name = [&] {
    return bind_builtin("reduce_prod", {x}, reduction_options(axes, keepdims));
  };
  return reduce("reduce_prod", x, axes, keepdims, true, Execute{out, by_definition(by_name), {&x}});
}
Tensor reduce_max(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  const auto by_name = [&] {
    return bind_builtin("reduce_max", {x}, reduction_options(axes, keepdims));
  };
  return reduce("reduce_max", x, axes, keepdims, false, Execute{out, by_definition(by_name), {&x}});
}
Tensor reduce_min(const Tensor& x, Axes axes, bool keepdims, const Output& out) {
  const auto by_name = [&] {
    return bind_builtin("reduce_min", {x}, reduction_options(axes, keepdims));
  };
  return reduce("reduce_min", x, axes, keepdims, false, Execute{out, by_definition(by_name), {&x}});
}

Tensor argmax(const Tensor& x, std::optional<std::int64_t> axis, bool keepdims, const Output& out) {
  const auto by_name = [&] {
    operation::OptionMap options{{"keepdims", keepdims}};
    if (axis) options.emplace("axis", *axis);
    return bind_builtin("argmax", {x}, std::move(options));
  };
  return arg_reduce("argmax", x, axis, keepdims, Execute{out, by_definition(by_name), {&x}});
}
Tensor argmin(const Tensor& x, std::optional<std::int64_t> axis, bool keepdims, const Output& out) {
  const auto by_name = [&] {
    operation::OptionMap options{{"keepdims", keepdims}};
    if (axis) options.emplace("axis", *axis);
    return bind_builtin("argmin", {x}, std::move(options));
  };
  return arg_reduce("argmin", x, axis, keepdims, Execute{out, by_definition(by_name), {&x}});
}

Tensor cumsum(const Tensor& x, std::int64_t axis, const Output& out) {
  const auto by_name = [&] { return bind_builtin("cumsum", {x}, {{"axis", axis}}); };
  return cumsum_call(x, axis, Execute{out, by_definition(by_name), {&x}});
}

SortResult sort(const Tensor& x, std::int64_t axis, bool descending) {
  return line_pair("sort", x, "_sort_values", "_sort_indices", [&] { return sort_call(x, axis, descending); },
                   {{"axis", axis}, {"descending", descending}});
}

SortResult topk(const Tensor& x, std::int64_t k, std::int64_t axis, bool largest) {
  return line_pair("topk", x, "_topk_values", "_topk_indices", [&] { return topk_call(x, k, axis, largest); },
                   {{"k", k}, {"axis", axis}, {"largest", largest}});
}

namespace frontend {

using namespace builtin_schema;

namespace {

operation::OptionSpec axes_option() {
  return option("axes", operation::OptionKind::INTEGERS, std::monostate{},
                "axes to reduce, each in [-rank, rank), no duplicates; None: every axis; [] reduces nothing");
}

Axes axes_of(const BoundCall& c) {
  std::optional<std::vector<std::int64_t>> list = ints_option(c, "axes");
  return list ? Axes(std::move(*list)) : Axes::all();
}

// sort and topk by name: both plans.
CallResult pair_result(const char* values_op, const char* indices_op, const Tensor& x, SortResult s) {
  return CallResult{{resolve_operation_plan(values_op, {x.dtype()}), resolve_operation_plan(indices_op, {x.dtype()})},
                    {std::move(s.values), std::move(s.indices)}};
}

}  // namespace

void add_reduction_builtins(std::vector<BuiltinEntry>& out) {
  out.push_back(entry("reduce_sum", {tensor("x", true)},
                      {axes_option(), listed_option("reduce_sum", "keepdims"), accumulator_option(), arithmetic_option()},
                      [](const BoundCall& c) {
                        return reduce_sum_call(c.tensor(0), axes_of(c), bool_option(c, "keepdims"),
                                               execution_options(c), Lower{});
                      },
                      operation::BuiltinTraits{true, false, true}));
  for (const auto& [name, has_identity] :
       {std::pair{"reduce_prod", true}, std::pair{"reduce_max", false}, std::pair{"reduce_min", false}}) {
    const char* n = name;
    const bool identity = has_identity;
    out.push_back(entry(n, {tensor("x", true)}, {axes_option(), listed_option(n, "keepdims")}, [n, identity](const BoundCall& c) {
      return reduce(n, c.tensor(0), axes_of(c), bool_option(c, "keepdims"), identity, Lower{});
    }));
  }
  for (const char* name : {"argmax", "argmin"})
    out.push_back(entry(name, {tensor("x")},
                        {option("axis", operation::OptionKind::INTEGER, std::monostate{},
                                "the one axis to reduce, in [-rank, rank); None: every element (flat logical "
                                "ordinal)"),
                         listed_option(name, "keepdims")},
                        [name](const BoundCall& c) {
                          return arg_reduce(name, c.tensor(0), optional_int_option(c, "axis"),
                                            bool_option(c, "keepdims"), Lower{});
                        }));
  out.push_back(entry("cumsum", {tensor("x", true)},
                      {required("axis", operation::OptionKind::INTEGER, "the axis to accumulate along, in [-rank, rank)")},
                      [](const BoundCall& c) { return cumsum_call(c.tensor(0), int_option(c, "axis"), Lower{}); }));

  // sort and topk, and their internal plans (each one result) for tools and
  // the conformance harness, which calls every kernel-table plan by name.
  const std::vector<operation::OptionSpec> sort_options = {
      listed_option("sort", "axis"), listed_option("sort", "descending")};
  for (const char* name : {"_sort_values", "_sort_indices"})
    out.push_back(entry(name, {tensor("x", name[6] == 'v')}, sort_options,
                        [name](const BoundCall& c) {
                          const Tensor& x = c.tensor(0);
                          const std::int64_t axis = int_option(c, "axis");
                          const bool descending = bool_option(c, "descending");
                          return line_single(name, x, [&] { return sort_call(x, axis, descending); });
                        },
                        operation::BuiltinTraits{false, false, false}));
  {
    BuiltinEntry e = entry("sort", {tensor("x", true)}, sort_options, nullptr);
    e.composite = [](const BoundCall& c) {
      const Tensor& x = c.tensor(0);
      return pair_result("_sort_values", "_sort_indices", x,
                         sort(x, int_option(c, "axis"), bool_option(c, "descending")));
    };
    out.push_back(std::move(e));
  }
  const std::vector<operation::OptionSpec> topk_options = {
      required("k", operation::OptionKind::INTEGER, "how many elements to keep, in [0, extent of axis]"),
      listed_option("topk", "axis"), listed_option("topk", "largest")};
  for (const char* name : {"_topk_values", "_topk_indices"})
    out.push_back(entry(name, {tensor("x", name[6] == 'v')}, topk_options,
                        [name](const BoundCall& c) {
                          const Tensor& x = c.tensor(0);
                          const std::int64_t k = int_option(c, "k"), axis = int_option(c, "axis");
                          const bool largest = bool_option(c, "largest");
                          return line_single(name, x, [&] { return topk_call(x, k, axis, largest); });
                        },
                        operation::BuiltinTraits{false, false, false}));
  {
    BuiltinEntry e = entry("topk", {tensor("x", true)}, topk_options, nullptr);
    e.composite = [](const BoundCall& c) {
      const Tensor& x = c.tensor(0);
      return pair_result("_topk_values", "_topk_indices", x,
                         topk(x, int_option(c, "k"), int_option(c, "axis"), bool_option(c, "largest")));
    };
    out.push_back(std::move(e));
  }
}

}  // namespace frontend
}  // namespace strideweave
