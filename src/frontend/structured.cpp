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
using frontend::Execute;
using frontend::Lower;
using frontend::Lowered;
using frontend::flat;
using frontend::normalize_axes;
using frontend::tensor_scalar;

namespace {

template <class Finish>
auto matmul_call(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options,
                 Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("matmul", {a.dtype(), b.dtype()}, scratch, options ? &*options : nullptr);
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
  // The published result drops the axes the vector promotion introduced.
  const auto rank = static_cast<std::int64_t>(eo.size());
  std::vector<std::int64_t> squeeze;
  if (a.rank() == 1) squeeze.push_back(rank - 2);
  if (b.rank() == 1) squeeze.push_back(rank - 1);
  return finish(plan, {a2.broadcast_to(Shape::of(ea)), b2.broadcast_to(Shape::of(eb))}, Attributes{}, Shape::of(eo),
                prototype, squeeze);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const std::optional<OperationExecutionOptions>& options,
              const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("matmul", {a, b}, frontend::execution_option_map(options));
  };
  return matmul_call(a, b, options, Execute{out, frontend::by_definition(by_name), {&a, &b}});
}

// ---- conv_general

namespace {

// floor(a / b) for b > 0.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

// A per-spatial-axis option: the default when absent, else exactly `d`
// values each >= `minimum` (ValueError otherwise).
std::vector<std::int64_t> spatial_option(const std::optional<std::vector<std::int64_t>>& given, std::size_t d,
                                         std::int64_t fallback, std::int64_t minimum, const char* name) {
  if (!given) return std::vector<std::int64_t>(d, fallback);
  if (given->size() != d)
    throw ValueError(fmt::format("conv_general: {} needs {} value(s), one per spatial axis (got {})", name, d,
                                 given->size()));
  for (std::int64_t v : *given)
    if (v < minimum)
      throw ValueError(fmt::format("conv_general: every {} value must be >= {} (got {})", name, minimum, v));
  return *given;
}

template <class Finish>
auto conv_general_call(const Tensor& input, const Tensor& weight, const ConvOptions& options, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("conv_general", {input.dtype(), weight.dtype()}, scratch);
  if (input.rank() < 3)
    throw ValueError(fmt::format("conv_general: input must have rank >= 3 (N, C_in, S_1..S_d), got {}",
                                 input.shape().to_string()));
  if (weight.rank() != input.rank())
    throw ValueError(fmt::format("conv_general: weight {} must have the input's rank {} (C_out, C_in/groups, "
                                 "K_1..K_d)",
                                 weight.shape().to_string(), input.rank()));
  const std::size_t d = input.rank() - 2;
  const std::int64_t groups = options.groups;
  if (groups < 1) throw ValueError(fmt::format("conv_general: groups must be >= 1 (got {})", groups));
  const std::int64_t c_in = input.shape().extent(1), c_out = weight.shape().extent(0);
  if (c_in % groups != 0 || c_out % groups != 0)
    throw ValueError(fmt::format("conv_general: groups {} must divide C_in {} and C_out {}", groups, c_in, c_out));
  if (weight.shape().extent(1) != c_in / groups)
    throw ValueError(fmt::format("conv_general: weight {} must have C_in/groups = {} channels on axis 1 "
                                 "(input {}, groups {})",
                                 weight.shape().to_string(), c_in / groups, input.shape().to_string(), groups));
  const std::vector<std::int64_t> stride = spatial_option(options.stride, d, 1, 1, "stride");
  const std::vector<std::int64_t> dilation = spatial_option(options.dilation, d, 1, 1, "dilation");
  std::vector<std::int64_t> lo(d, 0), hi(d, 0);
  if (options.padding) {
    const std::vector<std::int64_t>& p = *options.padding;
    if (p.size() != d && p.size() != 2 * d)
      throw ValueError(fmt::format("conv_general: padding needs {} (symmetric) or {} (lo, hi per axis) values (got "
                                   "{})",
                                   d, 2 * d, p.size()));
    for (std::int64_t v : p)
      if (v < 0) throw ValueError(fmt::format("conv_general: every padding value must be >= 0 (got {})", v));
    for (std::size_t i = 0; i < d; ++i) {
      lo[i] = p.size() == d ? p[i] : p[2 * i];
      hi[i] = p.size() == d ? p[i] : p[2 * i + 1];
    }
  }
  std::vector<std::int64_t> out_extents{input.shape().extent(0), c_out};
  for (std::size_t i = 0; i < d; ++i) {
    const std::int64_t s = input.shape().extent(i + 2), k = weight.shape().extent(i + 2);
    if (k < 1)
      throw ValueError(fmt::format("conv_general: kernel extents must be >= 1 (weight {})", weight.shape().to_string()));
    const char* what = "conv_general output extent";
    const std::int64_t span = checked_add(checked_mul(dilation[i], k - 1, what), 1, what);
    const std::int64_t room = checked_add(checked_add(s, lo[i], what), hi[i], what) - span;  // no overflow: both >= 0
    const std::int64_t o = floor_div(room, stride[i]) + 1;
    if (o < 0)
      throw ValueError(fmt::format("conv_general: spatial axis {} is too small: input extent {} with padding ({}, {}) "
                                   "is shorter than the dilated kernel extent {}",
                                   i + 1, s, lo[i], hi[i], span));
    out_extents.push_back(o);
  }
  const Carrier& prototype = common_carrier("conv_general", {&input, &weight});
  Attributes attributes;
  attributes.set("stride", stride);
  attributes.set("padding_lo", lo);
  attributes.set("padding_hi", hi);
  attributes.set("dilation", dilation);
  attributes.set("groups", groups);
  return finish(plan, {input, weight}, attributes, Shape::of(out_extents), prototype);
}

}  // namespace

Tensor conv_general(const Tensor& input, const Tensor& weight, const ConvOptions& options, const Output& out) {
  const auto by_name = [&] {
    operation::OptionMap map{{"groups", options.groups}};
    if (options.stride) map.emplace("stride", *options.stride);
    if (options.padding) map.emplace("padding", *options.padding);
    if (options.dilation) map.emplace("dilation", *options.dilation);
    return frontend::bind_builtin("conv_general", {input, weight}, std::move(map));
  };
  return conv_general_call(input, weight, options, Execute{out, frontend::by_definition(by_name), {&input, &weight}});
}

// ---- gather, scatter, scatter_add

namespace {

// Rank-0 operands act as rank-1 operands of extent 1 (torch convention).
Tensor at_least_1d(const Tensor& t) { return t.rank() == 0 ? t.unsqueeze(0) : t; }

std::int64_t indexed_axis(std::string_view op, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(std::max<std::size_t>(rank, 1));
  if (axis >= -r && axis < r) return axis < 0 ? axis + r : axis;
  const std::string what(op);  // for the error only
  return normalize_axis(axis, std::max<std::size_t>(rank, 1), what.c_str());  // raises
}

// indices.extent(d) <= other.extent(d) for every d (except `skip`, if any).
void require_within(std::string_view op, const Tensor& indices, const Tensor& other, const char* other_name,
                     std::optional<std::int64_t> skip) {
  for (std::size_t i = 0; i < indices.rank(); ++i) {
    if (skip && static_cast<std::int64_t>(i) == *skip) continue;
    if (indices.shape().extent(i) > other.shape().extent(i))
      throw ValueError(fmt::format("{}: indices {} exceed {} {} on axis {} ({} > {})", op,
                                   indices.shape().to_string(), other_name, other.shape().to_string(), i,
                                   indices.shape().extent(i), other.shape().extent(i)));
  }
}

template <class Finish>
auto scatter_like(std::string_view op, const Tensor& data, const Tensor& indices, const Tensor& src, std::int64_t axis,
                  Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {data.dtype(), indices.dtype(), src.dtype()}, scratch);
  if (indices.rank() != data.rank() || src.rank() != data.rank())
    throw ValueError(fmt::format("{}: data {}, indices {} and src {} must have equal rank", op,
                                 data.shape().to_string(), indices.shape().to_string(), src.shape().to_string()));
  const std::int64_t a = indexed_axis(op, axis, data.rank());
  const Tensor d1 = at_least_1d(data), i1 = at_least_1d(indices), s1 = at_least_1d(src);
  require_within(op, i1, s1, "src", std::nullopt);
  require_within(op, i1, d1, "data", a);
  const Carrier& prototype = common_carrier(op, {&data, &indices, &src});
  Attributes attributes;
  attributes.set("axis", a);
  // A rank-0 data publishes a rank-0 result.
  const std::vector<std::int64_t> squeeze = data.rank() == 0 ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{};
  return finish(plan, {d1, i1, s1}, attributes, flat(d1.shape()), prototype, squeeze);
}

template <class Finish>
auto gather_call(const Tensor& data, const Tensor& indices, std::int64_t axis, Finish&& finish) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan("gather", {data.dtype(), indices.dtype()}, scratch);
  if (indices.rank() != data.rank())
    throw ValueError(fmt::format("gather: data {} and indices {} must have equal rank", data.shape().to_string(),
                                 indices.shape().to_string()));
  const std::int64_t a = indexed_axis("gather", axis, data.rank());
  const Tensor d1 = at_least_1d(data), i1 = at_least_1d(indices);
  require_within("gather", i1, d1, "data", a);
  const Carrier& prototype = common_carrier("gather", {&data, &indices});
  Attributes attributes;
  attributes.set("axis", a);
  const std::vector<std::int64_t> squeeze = data.rank() == 0 ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{};
  return finish(plan, {d1, i1}, attributes, flat(i1.shape()), prototype, squeeze);
}



}  // namespace

Tensor gather(const Tensor& data, const Tensor& indices, std::int64_t axis, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("gather", {data, indices}, {{"axis", axis}});
  };
  return gather_call(data, indices, axis, Execute{out, frontend::by_definition(by_name), {&data, &indices}});
}

Tensor scatter(const Tensor& data, const Tensor& indices, const Tensor& src, std::int64_t axis, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("scatter", {data, indices, src}, {{"axis", axis}});
  };
  return scatter_like("scatter", data, indices, src, axis, Execute{out, frontend::by_definition(by_name), {&data, &indices, &src}});
}

Tensor scatter_add(const Tensor& data, const Tensor& indices, const Tensor& src, std::int64_t axis,
                   const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("scatter_add", {data, indices, src}, {{"axis", axis}});
  };
  return scatter_like("scatter_add", data, indices, src, axis, Execute{out, frontend::by_definition(by_name), {&data, &indices, &src}});
}

namespace frontend {

using namespace builtin_schema;

void add_structured_builtins(std::vector<BuiltinEntry>& out) {
  out.push_back(entry("matmul", {tensor("a", true), tensor("b", true)}, {accumulator_option(), arithmetic_option()},
                      [](const BoundCall& c) {
                        return matmul_call(c.tensor(0), c.tensor(1), execution_options(c), Lower{});
                      },
                      operation::BuiltinTraits{true, true, true}));
  out.push_back(entry(
      "conv_general", {tensor("input", true), tensor("weight", true)},
      {option("stride", operation::OptionKind::INTEGERS, std::monostate{},
              "d positive integers, the step between windows per spatial axis; None: 1 on every spatial axis"),
       option("padding", operation::OptionKind::INTEGERS, std::monostate{},
              "d non-negative integers (symmetric) or 2d (lo_1, hi_1, ..., lo_d, hi_d); padded inputs are +0.0; "
              "None: 0 on every spatial axis"),
       option("dilation", operation::OptionKind::INTEGERS, std::monostate{},
              "d positive integers, the step between kernel taps per spatial axis; None: 1 on every spatial axis"),
       listed_option("conv_general", "groups")},
      [](const BoundCall& c) {
        const ConvOptions conv{ints_option(c, "stride"), ints_option(c, "padding"), ints_option(c, "dilation"),
                               int_option(c, "groups")};
        return conv_general_call(c.tensor(0), c.tensor(1), conv, Lower{});
      }));
  const char* axis_doc = "the indexed axis, in [-rank, rank) (negative counts from the end)";
  out.push_back(entry("gather", {tensor("data", true), tensor("indices")}, {required("axis", operation::OptionKind::INTEGER, axis_doc)},
                      [](const BoundCall& c) {
                        return gather_call(c.tensor(0), c.tensor(1), int_option(c, "axis"), Lower{});
                      }));
  for (const char* name : {"scatter", "scatter_add"})
    out.push_back(entry(name, {tensor("data", true), tensor("indices"), tensor("src", true)},
                        {required("axis", operation::OptionKind::INTEGER, axis_doc)}, [name](const BoundCall& c) {
                          return scatter_like(name, c.tensor(0), c.tensor(1), c.tensor(2), int_option(c, "axis"),
                                              Lower{});
                        }));
}

}  // namespace frontend
}  // namespace strideweave
