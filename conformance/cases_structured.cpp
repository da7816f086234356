// Conformance cases: matmul, conv_general, gather, scatter.
#include "conformance/harness.h"

#include <functional>
#include <limits>

namespace strideweave::conformance {
namespace {

struct MatmulShapes {
  std::vector<std::int64_t> a, b;
};
const std::vector<MatmulShapes> kMatmulShapes = {
    {{4, 6}, {6, 5}}, {{8, 3}, {3, 1}}, {{2, 4, 3}, {3, 5}}, {{6}, {6, 4}}, {{4, 6}, {6}}, {{6}, {6}},
    {{0, 3}, {3, 4}}, {{4, 0}, {0, 5}}, {{2, 1, 4, 2}, {3, 2, 3}},
    // Large enough for CPU's register-blocked Float32 kernel (64-row by
    // 4-column blocks) and its row and column remainders.
    {{130, 5}, {5, 9}}};

std::vector<TwinCase> matmul_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const bool floating = plan.accumulation() == Accumulation::FLOATING;
  for (bool small : {false, true})
    for (const MatmulShapes& sh : kMatmulShapes)
      for (LayoutCase ca : all_layout_cases())
        for (LayoutCase cb : {LayoutCase::Compact, LayoutCase::Permuted, LayoutCase::Strided}) {
          const Pair a = twin(*plan.operands()[0].dtype(), sh.a, ca, rng, small);
          const Pair b = twin(*plan.operands()[1].dtype(), sh.b, cb, rng, small);
          TwinCase tc{Shape::of(sh.a).to_string() + "x" + Shape::of(sh.b).to_string() + " " + case_name(ca) + "/" +
                          case_name(cb),
                      {t(a.generic), t(b.generic)}, {t(a.cpu), t(b.cpu)}, {}, {}};
          if (floating) {
            // |a| @ |b| accumulated in Float64 on Generic bounds the terms.
            const Tensor bound = matmul(abs_twin(a.generic), abs_twin(b.generic),
                                        OperationExecutionOptions("matmul", &DType::Float64()));
            const std::vector<Value> v = bound.values();
            const std::int64_t k = sh.a.back();
            tc.bound = [v, k](std::size_t, std::int64_t i) {
              return std::make_pair(static_cast<double>(v[static_cast<std::size_t>(i)].f), k);
            };
          }
          out.push_back(std::move(tc));
        }
  return out;
}

// ---- operands with chosen values (the edge pool of twin() makes almost every
// convolution sum NaN, and indices must mostly be in range).

// (twin_of and ValueGen come from agreement_support.h.)

// Ordinary binary32 values in [-2, 2] (rounding depends on the order), with
// one value in ten from the edge pool (NaN, +-inf, +-0, subnormals, FLT_MAX).
ValueGen mostly_ordinary() {
  return [](std::mt19937& rng) {
    static const std::vector<Value> edges = edge_pool(DType::Float32(), false);
    if (std::uniform_int_distribution<int>(0, 9)(rng) == 0)
      return edges[std::uniform_int_distribution<std::size_t>(0, edges.size() - 1)(rng)];
    return Value::from_float32(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
  };
}

// Indices in [0, extent), or (bad_percent of the time) out of range.
ValueGen index_values(std::int64_t extent, int bad_percent) {
  return [extent, bad_percent](std::mt19937& rng) {
    if (std::uniform_int_distribution<int>(0, 99)(rng) < bad_percent || extent == 0) {
      const std::int32_t bad[] = {-1, static_cast<std::int32_t>(extent), static_cast<std::int32_t>(extent) + 7,
                                  std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
      return Value::from_int32(bad[std::uniform_int_distribution<int>(0, 4)(rng)]);
    }
    return Value::from_int32(
        static_cast<std::int32_t>(std::uniform_int_distribution<std::int64_t>(0, extent - 1)(rng)));
  };
}

// ---- conv_general

struct ConvShapes {
  std::vector<std::int64_t> input, weight;
  CallOptions options;
};
using Ints = std::vector<std::int64_t>;
const std::vector<ConvShapes> kConvShapes = {
    // 1-d
    {{2, 3, 9}, {4, 3, 3}, {}},
    {{4, 4, 7}, {6, 2, 3}, {{"groups", std::int64_t{2}}, {"stride", Ints{2}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2}}}},
    {{1, 2, 6}, {2, 2, 1}, {{"padding", Ints{3}}}},
    {{1, 2, 0}, {1, 2, 2}, {{"padding", Ints{0, 2}}}},  // every input position is padding
    {{1, 1, 2}, {1, 1, 3}, {}},                          // O = 0
    {{0, 2, 5}, {3, 2, 2}, {}},                          // N = 0
    {{2, 0, 5}, {3, 0, 2}, {}},                          // C_in = 0: empty sums
    {{2, 2, 5}, {0, 2, 2}, {}},                          // C_out = 0
    // 2-d
    {{2, 3, 5, 6}, {4, 3, 3, 2}, {{"stride", Ints{1, 2}}, {"padding", Ints{1, 0}}}},
    {{4, 4, 6, 5}, {4, 1, 2, 3}, {{"groups", std::int64_t{4}}, {"padding", Ints{0, 2, 1, 0}}, {"dilation", Ints{2, 1}}, {"stride", Ints{2, 1}}}},
    {{1, 6, 4, 4}, {4, 3, 2, 2}, {{"groups", std::int64_t{2}}, {"stride", Ints{3, 3}}, {"padding", Ints{2, 2}}}},
    // 3-d
    {{1, 2, 4, 3, 5}, {2, 2, 2, 2, 3}, {{"padding", Ints{1, 1, 1}}, {"stride", Ints{1, 2, 2}}}},
    {{2, 2, 3, 4, 3}, {4, 1, 1, 2, 2}, {{"groups", std::int64_t{2}}, {"dilation", Ints{1, 2, 1}}, {"padding", Ints{0, 1, 1, 0, 2, 2}}}},
    // rejected before allocation on both carriers
    {{1, 1, 2}, {1, 1, 4}, {}},                           // negative output extent
    {{1, 3, 4}, {2, 1, 2}, {{"groups", std::int64_t{2}}}},  // groups does not divide C_in
    {{1, 2, 4}, {1, 2, 2}, {{"stride", Ints{0}}}},
};

std::vector<TwinCase> conv_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  for (bool edges : {false, true})
    for (const ConvShapes& sh : kConvShapes)
      for (LayoutCase ci : all_layout_cases())
        for (LayoutCase cw : all_layout_cases()) {
          const Pair x = edges ? twin(*plan.operands()[0].dtype(), sh.input, ci, rng)
                               : twin_of(DType::Float32(), sh.input, ci, rng, mostly_ordinary());
          const Pair w = edges ? twin(*plan.operands()[1].dtype(), sh.weight, cw, rng)
                               : twin_of(DType::Float32(), sh.weight, cw, rng, mostly_ordinary());
          out.push_back({Shape::of(sh.input).to_string() + "*" + Shape::of(sh.weight).to_string() + " " +
                             case_name(ci) + "/" + case_name(cw) + (edges ? " edge pool" : ""),
                         {t(x.generic), t(w.generic)}, {t(x.cpu), t(w.cpu)}, sh.options, {}});
        }
  return out;
}

// ---- gather, scatter, scatter_add

struct IndexedShapes {
  std::vector<std::int64_t> data, indices, src;
  std::int64_t axis;
};
const std::vector<IndexedShapes> kIndexedShapes = {
    {{5, 4}, {3, 4}, {3, 5}, 0},
    {{5, 4}, {5, 2}, {6, 2}, 1},
    {{5, 4}, {4, 3}, {4, 4}, -1},
    {{4, 3, 6}, {4, 2, 9}, {4, 3, 9}, 2},  // indices may be longer than data on the axis
    {{4, 3, 6}, {2, 5, 6}, {2, 5, 6}, 1},
    {{6}, {10}, {12}, 0},
    {{4}, {4}, {4}, -1},
    {{}, {}, {}, 0},                       // rank 0
    {{3, 4}, {0, 4}, {0, 4}, 0},            // empty indices
    {{3, 0}, {3, 0}, {3, 0}, 1},
    {{4, 0}, {4, 2}, {4, 2}, 1},            // every index is out of range
    {{2, 3}, {3, 3}, {3, 3}, 1},            // rejected: indices exceed data on axis 0
    {{2, 3}, {2, 3}, {2, 2}, 0},            // rejected for scatter: src smaller than indices
};

std::vector<TwinCase> indexed_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const bool has_src = plan.operands().size() == 3;
  for (const IndexedShapes& sh : kIndexedShapes) {
    const std::int64_t rank = static_cast<std::int64_t>(sh.data.size());
    const std::int64_t axis = rank == 0 ? 0 : (sh.axis < 0 ? sh.axis + rank : sh.axis);
    const std::int64_t extent = rank == 0 ? 1 : sh.data[static_cast<std::size_t>(axis)];
    for (int bad_percent : {0, 10})
      for (bool few_targets : {false, true})  // few targets: many duplicate indices
        for (LayoutCase cd : all_layout_cases())
          for (LayoutCase ci : all_layout_cases()) {
            const std::int64_t range = few_targets ? std::min<std::int64_t>(extent, 2) : extent;
            const Pair data = few_targets ? twin_of(DType::Float32(), sh.data, cd, rng, mostly_ordinary())
                                          : twin(DType::Float32(), sh.data, cd, rng);
            const Pair idx = twin_of(DType::Int32(), sh.indices, ci, rng,
                                     index_values(range, range < extent ? 0 : bad_percent));
            TwinCase tc{Shape::of(sh.data).to_string() + " idx " + Shape::of(sh.indices).to_string() + " axis " +
                            std::to_string(sh.axis) + " " + case_name(cd) + "/" + case_name(ci) +
                            (bad_percent ? " some out of range" : "") + (few_targets ? " duplicates" : ""),
                        {t(data.generic), t(idx.generic)}, {t(data.cpu), t(idx.cpu)},
                        {{"axis", sh.axis}}, {}};
            if (has_src) {
              for (LayoutCase cs : {LayoutCase::Compact, LayoutCase::Permuted, LayoutCase::Broadcast}) {
                const Pair src = few_targets ? twin_of(DType::Float32(), sh.src, cs, rng, mostly_ordinary())
                                             : twin(DType::Float32(), sh.src, cs, rng);
                TwinCase with_src = tc;
                with_src.label += std::string(" src ") + case_name(cs);
                with_src.generic.push_back(t(src.generic));
                with_src.other.push_back(t(src.cpu));
                out.push_back(std::move(with_src));
              }
            } else {
              out.push_back(std::move(tc));
            }
          }
  }
  return out;
}


}  // namespace

// The generators operations.def names (harness.h).
STRIDEWEAVE_EXPORT_CASES(matmul_cases)
STRIDEWEAVE_EXPORT_CASES(conv_cases)
STRIDEWEAVE_EXPORT_CASES(indexed_cases)

}  // namespace strideweave::conformance
