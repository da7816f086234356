// Conformance cases: unary math and activations.
//
// Every plan gets: the edge pool (NaN, +-0, +-inf, subnormals, FLT_MAX, and
// for Int32 operands the Int32 limits, which round when converted to
// Float32) over every layout case and empty, rank-0, size-1 and broadcast
// shapes; a list of values chosen for the unary functions (rounding ties,
// overflow and underflow boundaries of exp, the softplus threshold, gelu's
// cancellation region, random values over many binades) on a compact and a
// strided view; and, for the operations with options, option variations
// including invalid ones (both carriers must raise the same error).
#include <cmath>
#include <limits>

#include "conformance/harness.h"

namespace strideweave::conformance {
namespace {

const std::vector<std::vector<std::int64_t>> kShapes = {{6, 5}, {}, {0}, {8, 2, 3}, {1}, {4, 1}, {3, 0, 2}, {1, 5}};

// Option variations per operation; the first entry is "no options".
std::vector<CallOptions> option_variants(const std::string& op) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  using O = CallOptions;
  if (op == "elu")
    return {O{},
            O{{"alpha", 0.5}},
            O{{"alpha", -2.0}},
            O{{"alpha", 0.1}},
            O{{"alpha", 1e-40}},
            O{{"alpha", std::int64_t{3}}},
            O{{"alpha", inf}},   // ValueError
            O{{"alpha", nan}},   // ValueError
            O{{"alpha", 1e39}},  // rounds to inf: ValueError
            O{{"alpha", true}}};  // TypeError
  if (op == "leaky_relu")
    return {O{},
            O{{"negative_slope", 0.2}},
            O{{"negative_slope", -0.5}},
            O{{"negative_slope", 0.0}},
            O{{"negative_slope", 1.5}},
            O{{"negative_slope", -inf}}};  // ValueError
  if (op == "softplus")
    return {O{},
            O{{"beta", 2.0}},
            O{{"beta", 0.5}, {"threshold", 5.0}},
            O{{"beta", -1.0}},
            O{{"threshold", inf}},
            O{{"threshold", -inf}},
            O{{"beta", std::int64_t{3}}, {"threshold", std::int64_t{0}}},
            O{{"beta", 0.0}},        // ValueError
            O{{"beta", 1e-50}},      // rounds to 0: ValueError
            O{{"threshold", nan}}};  // ValueError
  if (op == "gelu") return {O{}, O{{"approximate", false}}, O{{"approximate", true}}};
  return {O{}};
}

std::string options_label(const CallOptions& o) {
  std::string s;
  for (const auto& [name, v] : o) {
    s += " " + name + "=";
    if (const double* d = std::get_if<double>(&v)) s += std::to_string(*d);
    else if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) s += std::to_string(*i);
    else if (const bool* b = std::get_if<bool>(&v)) s += *b ? "true" : "false";
  }
  return s;
}

// Values chosen for the unary functions, in the operand's dtype.
std::vector<Value> chosen_values(const SimpleDType& d, std::mt19937& rng) {
  std::vector<Value> out;
  if (&d == &DType::Int32()) {
    for (std::int32_t i : {0, 1, -1, 2, -3, 7, -7, 20, 21, -20, 88, 89, -87, -88, -104, -150, 1000, -1000, 16777217,
                           -16777217, 16777219, 2147483647, -2147483647 - 1, 2147483646, -2147483647})
      out.push_back(Value::from_int32(i));
    std::uniform_int_distribution<std::int32_t> u(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
    for (int k = 0; k < 16; ++k) out.push_back(Value::from_int32(u(rng)));
    return out;
  }
  for (float f : {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 3.5f, 0.49999997f, -0.49999997f, 8388607.5f, -8388607.5f,
                  8388609.0f, 1e10f, -1e10f, 1e13f, -1e13f, 88.72f, 88.73f, -87.33f, -103.9f, -104.0f, -150.0f,
                  20.0f, 20.000002f, 19.999998f, 10.0f, 5.0f, -3.0f, -5.0f, -9.0f, -10.0f, 3.0f, 0.25f, -0.75f,
                  1e-20f, -1e-20f, 1e-38f, 1e-45f, 0.70710677f, 3.14159274f, -3.14159274f, 1.5707964f, 1e5f, 1e30f,
                  std::numeric_limits<float>::lowest(), 4.0f, 2.0f, 0.0625f, 1024.0f, 127.0f, 128.0f, -126.0f,
                  -149.0f, -149.5f, -150.5f})
    out.push_back(Value::from_float32(f));
  // Random values: uniform on [-12, 12] and log-uniform magnitudes.
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  std::uniform_real_distribution<float> e(-40.0f, 40.0f);
  std::bernoulli_distribution neg(0.5);
  for (int k = 0; k < 48; ++k) out.push_back(Value::from_float32(u(rng)));
  for (int k = 0; k < 48; ++k) {
    const float m = std::exp2(e(rng));
    out.push_back(Value::from_float32(neg(rng) ? -m : m));
  }
  return out;
}

// `values` as a compact vector, and as every other element of a doubled
// storage (a strided view at offset 1).
std::vector<std::pair<std::string, Pair>> value_twins(const SimpleDType& d, const std::vector<Value>& values) {
  const auto n = static_cast<std::int64_t>(values.size());
  std::vector<std::pair<std::string, Pair>> out;
  out.push_back({"values compact", Pair{Tensor(Generic::create(values, d), Shape{n}),
                                        Tensor(under_test_from_values(values, d), Shape{n})}});
  std::vector<Value> spread(static_cast<std::size_t>(2 * n + 1), values.front());
  for (std::int64_t i = 0; i < n; ++i) spread[static_cast<std::size_t>(1 + 2 * i)] = values[static_cast<std::size_t>(i)];
  const Layout strided(Shape{n}, Stride{2});
  out.push_back({"values strided", Pair{Tensor(Generic::create(spread, d), 1, strided),
                                        Tensor(under_test_from_values(spread, d), 1, strided)}});
  return out;
}

std::vector<TwinCase> unary_cases(const OperationPlan& plan, std::mt19937& rng) {
  std::vector<TwinCase> out;
  const SimpleDType& d = *plan.operands()[0].dtype();
  const std::vector<CallOptions> variants = option_variants(plan.operation());
  auto push = [&](const std::string& label, const Pair& x, const CallOptions& o) {
    out.push_back({label + options_label(o), {t(x.generic)}, {t(x.cpu)}, o, {}});
  };
  // The edge pool over every layout and shape, default options.
  for (bool small : {false, true})
    for (const auto& shape : kShapes)
      for (LayoutCase c : all_layout_cases()) push(std::string(case_name(c)) + (small ? " small" : ""), twin(d, shape, c, rng, small), {});
  // Every option variation over the edge pool and the chosen values.
  for (const CallOptions& o : variants) {
    for (LayoutCase c : all_layout_cases()) push(std::string(case_name(c)) + " (8,2,3)", twin(d, {8, 2, 3}, c, rng), o);
    for (const auto& [label, x] : value_twins(d, chosen_values(d, rng))) push(label, x, o);
  }
  return out;
}


}  // namespace

// The generators operations.def names (harness.h).
STRIDEWEAVE_EXPORT_CASES(unary_cases)

}  // namespace strideweave::conformance
