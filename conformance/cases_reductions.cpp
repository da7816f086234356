// Conformance cases: reductions, arg reductions, cumsum, sort, topk.
//
// Every operand comes in every layout case and with three value pools: the
// harness's edge pool (NaN, +-0, +-inf, subnormals, huge values), a pool of
// ties (+-0, +-1, 2, +-inf: many equal elements, no NaN) and a benign pool
// whose products stay finite. Shapes include rank 0, rank 1, an empty extent
// and size-1 axes; options include every axis choice, out-of-range and
// duplicate axes (both carriers must raise the same error).
#include "conformance/harness.h"

namespace strideweave::conformance {
namespace {

const std::vector<std::vector<std::int64_t>> kShapes = {{6, 5, 4}, {4, 0, 3}, {40, 3, 1}, {}, {9}};
const std::vector<std::optional<std::vector<std::int64_t>>> kAxes = {
    std::nullopt, std::vector<std::int64_t>{}, std::vector<std::int64_t>{0}, std::vector<std::int64_t>{1},
    std::vector<std::int64_t>{2}, std::vector<std::int64_t>{0, 2}, std::vector<std::int64_t>{1, 2},
    std::vector<std::int64_t>{0, 1, 2}, std::vector<std::int64_t>{-1}, std::vector<std::int64_t>{2, 0},
    std::vector<std::int64_t>{0, -3}};

enum class Pool { Edge, Ties, Benign };
const char* pool_name(Pool p) { return p == Pool::Edge ? "edge" : p == Pool::Ties ? "ties" : "benign"; }

// Overwrites every storage slot of both twins with values drawn from `pool`
// (the views, and so the layout case, stay).
void repaint(const Pair& x, const std::vector<float>& pool, std::mt19937& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
  Carrier& g = *x.generic.carrier();
  Carrier& c = *x.cpu.carrier();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Value v = Value::from_float32(pool[pick(rng)]);
    g.set_value(i, v);
    c.set_value(i, v);
  }
}

// The Float32 operand of `shape` in layout case `c` with values from `pool`.
Pair operand(const std::vector<std::int64_t>& shape, LayoutCase c, Pool pool, std::mt19937& rng) {
  const float inf = std::numeric_limits<float>::infinity();
  Pair x = twin(DType::Float32(), shape, c, rng);
  if (pool == Pool::Ties) repaint(x, {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, inf, -inf}, rng);
  if (pool == Pool::Benign) repaint(x, {0.5f, 2.0f, -1.0f, 1.0f, 1.5f, -0.75f, -0.0f, 0.0f, 3.0f, 1.25f}, rng);
  return x;
}

// Calls gen(label, x) for every shape, layout case and pool.
template <class Gen>
void for_each_operand(std::mt19937& rng, Gen&& gen, const std::vector<std::vector<std::int64_t>>& shapes = kShapes) {
  for (const auto& shape : shapes)
    for (LayoutCase c : all_layout_cases())
      for (Pool pool : {Pool::Edge, Pool::Ties, Pool::Benign}) {
        const Pair x = operand(shape, c, pool, rng);
        gen(std::string(case_name(c)) + "/" + pool_name(pool) + " " + Shape::of(shape).to_string(), x, shape);
      }
}

std::string option_label(const CallOptions& options) {
  std::string out;
  for (const auto& [name, value] : options) {
    out += " " + name + "=";
    if (const auto* b = std::get_if<bool>(&value)) out += *b ? "true" : "false";
    else if (const auto* i = std::get_if<std::int64_t>(&value)) out += std::to_string(*i);
    else if (const auto* l = std::get_if<std::vector<std::int64_t>>(&value)) {
      out += "[";
      for (std::int64_t a : *l) out += std::to_string(a) + ",";
      out += "]";
    }
  }
  return out;
}

TwinCase exact_case(const std::string& label, const Pair& x, CallOptions options) {
  return TwinCase{label + option_label(options), {t(x.generic)}, {t(x.cpu)}, std::move(options), {}};
}

// ---- reduce_sum (FLOATING plans compared within the documented bound).

std::vector<TwinCase> reduce_sum_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const bool floating = plan.accumulation() == Accumulation::FLOATING;
  const std::vector<std::vector<std::int64_t>> shapes = {{6, 5, 4}, {4, 0, 3}, {40, 3, 1}};
  for (bool small : {false, true})
    for (const auto& shape : shapes)
      for (LayoutCase c : all_layout_cases()) {
        const Pair x = twin(*plan.operands()[0].dtype(), shape, c, rng, small);
        for (const auto& axes : kAxes)
          for (bool keepdims : {false, true}) {
            CallOptions options{{"keepdims", keepdims}};
            if (axes) options["axes"] = *axes;
            TwinCase tc = exact_case(case_name(c), x, options);
            if (floating) {
              // Per result element: sum |x| over its block, on Generic in Float64.
              std::int64_t n = 1;
              for (std::size_t i = 0; i < shape.size(); ++i) {
                const bool reduced = !axes || std::find_if(axes->begin(), axes->end(), [&](std::int64_t a) {
                                                 return (a < 0 ? a + 3 : a) == static_cast<std::int64_t>(i);
                                               }) != axes->end();
                if (reduced) n *= shape[i];
              }
              std::optional<Tensor> abs_sum;
              try {
                abs_sum = reduce_sum(abs_twin(x.generic), axes ? Axes(*axes) : Axes::all(), keepdims,
                                     OperationExecutionOptions("reduce_sum", &DType::Float64()));
              } catch (const ValueError&) {  // a duplicate axis: both carriers raise
                out.push_back(std::move(tc));
                continue;
              }
              const std::vector<Value> v = abs_sum->values();
              tc.bound = [v, n](std::size_t, std::int64_t i) {
                return std::make_pair(static_cast<double>(v[static_cast<std::size_t>(i)].f), n);
              };
            }
            out.push_back(std::move(tc));
          }
      }
  return out;
}

// ---- reduce_prod, reduce_max, reduce_min: exact agreement (normative order).

std::vector<TwinCase> reduce_cases(const OperationPlan&, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for_each_operand(rng, [&](const std::string& label, const Pair& x, const std::vector<std::int64_t>&) {
    for (const auto& axes : kAxes)
      for (bool keepdims : {false, true}) {
        CallOptions options{{"keepdims", keepdims}};
        if (axes) options["axes"] = *axes;
        out.push_back(exact_case(label, x, options));
      }
  });
  return out;
}

// ---- argmax, argmin: every single axis, every axis (flat ordinal), bad axes.

std::vector<TwinCase> arg_cases(const OperationPlan&, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const std::vector<std::optional<std::int64_t>> axes = {std::nullopt, 0, 1, 2, -1, -3, 3, -4};
  for_each_operand(rng, [&](const std::string& label, const Pair& x, const std::vector<std::int64_t>&) {
    for (const auto& axis : axes)
      for (bool keepdims : {false, true}) {
        CallOptions options{{"keepdims", keepdims}};
        if (axis) options["axis"] = *axis;
        out.push_back(exact_case(label, x, options));
      }
  });
  return out;
}

// ---- cumsum: every axis, bad axes, and the missing required axis.

std::vector<TwinCase> cumsum_cases(const OperationPlan&, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for_each_operand(rng, [&](const std::string& label, const Pair& x, const std::vector<std::int64_t>&) {
    for (std::int64_t axis : {0, 1, 2, -1, -2, 3})
      out.push_back(exact_case(label, x, CallOptions{{"axis", axis}}));
    out.push_back(exact_case(label + " (no axis)", x, {}));
  });
  // A long line, so that the partial sums are long sequences of roundings.
  for (LayoutCase c : all_layout_cases()) {
    const Pair x = operand({3, 300}, c, Pool::Benign, rng);
    for (std::int64_t axis : {0, 1}) out.push_back(exact_case(std::string(case_name(c)) + " long", x, {{"axis", axis}}));
  }
  return out;
}

// ---- sort (both plans through _sort_values / _sort_indices).

std::vector<TwinCase> sort_cases(const OperationPlan&, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for_each_operand(rng, [&](const std::string& label, const Pair& x, const std::vector<std::int64_t>&) {
    for (std::int64_t axis : {-1, 0, 1, 2, -3, 3})
      for (bool descending : {false, true})
        out.push_back(exact_case(label, x, CallOptions{{"axis", axis}, {"descending", descending}}));
    out.push_back(exact_case(label + " (defaults)", x, {}));
  });
  return out;
}

// ---- topk: k from 0 to the extent, and the invalid k around it.

std::vector<TwinCase> topk_cases(const OperationPlan&, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for_each_operand(rng, [&](const std::string& label, const Pair& x, const std::vector<std::int64_t>& shape) {
    for (std::int64_t axis : {-1, 0, 1, 3}) {
      const auto r = static_cast<std::int64_t>(shape.size());
      const std::int64_t extent = axis >= -r && axis < r ? shape[static_cast<std::size_t>(axis < 0 ? axis + r : axis)] : 2;
      std::vector<std::int64_t> ks = {0, 1, 3, extent - 1, extent, extent + 1, -1};
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      for (std::int64_t k : ks)
        for (bool largest : {true, false})
          out.push_back(exact_case(label, x, CallOptions{{"k", k}, {"axis", axis}, {"largest", largest}}));
    }
    out.push_back(exact_case(label + " (no k)", x, {}));
  });
  return out;
}


}  // namespace

// The generators operations.def names (harness.h).
STRIDEWEAVE_EXPORT_CASES(reduce_sum_cases)
STRIDEWEAVE_EXPORT_CASES(reduce_cases)
STRIDEWEAVE_EXPORT_CASES(arg_cases)
STRIDEWEAVE_EXPORT_CASES(cumsum_cases)
STRIDEWEAVE_EXPORT_CASES(sort_cases)
STRIDEWEAVE_EXPORT_CASES(topk_cases)

}  // namespace strideweave::conformance
