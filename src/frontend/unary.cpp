// Front end: unary math and activations.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/call_support.h"
#include "frontend/dispatch.h"

namespace strideweave {

using frontend::common_carrier;
using frontend::Execute;
using frontend::Lower;
using frontend::Lowered;
using frontend::flat;

namespace {

// resolve -> validate options -> carrier -> execute. The plan is resolved
// first so that a dtype error (TypeError for Int32 into a Float32-only
// function, NotImplementedError for Bool) wins over an option error, as for
// every other operation; options are validated before the carrier check and
// before anything is allocated.
template <class Finish, class Options>
auto unary_call(const char* op, const Tensor& x, Finish&& finish, Options&& options) {
  frontend::PlanScratch scratch;
  const OperationPlan& plan = frontend::cached_plan(op, {x.dtype()}, scratch);
  const Attributes attributes = options();
  const Carrier& prototype = common_carrier(op, {&x});
  return finish(plan, {x}, attributes, flat(x.shape()), prototype);
}
Tensor unary_call(const char* op, const Tensor& x, const Output& out) {
  const auto by_name = [&] { return frontend::bind_builtin(op, {x}, {}); };
  return unary_call(op, x, Execute{out, frontend::by_definition(by_name), {&x}}, [] { return Attributes{}; });
}

// A real option as the binary32 value every kernel step uses (round to
// nearest even, like a weak float scalar). `finite` rejects a value whose
// binary32 rounding is infinite or NaN.
double binary32_option(const char* op, const char* name, double value, bool finite) {
  // IEEE conversion, spelled out where C++ leaves it undefined: NaN stays
  // NaN and a magnitude >= FLT_MAX + half an ulp (2^128 - 2^103) is infinite.
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float f = std::isnan(value)              ? std::numeric_limits<float>::quiet_NaN()
                  : value >= 0x1.ffffffp127      ? inf
                  : value <= -0x1.ffffffp127     ? -inf
                                                 : static_cast<float>(value);
  if (finite && !std::isfinite(f))
    throw ValueError(fmt::format("{}: {} must be finite in binary32, got {}", op, name, value));
  return static_cast<double>(f);
}

}  // namespace

// The typed function of every UNARY row of operations.def.
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) SW_UNARY_DEFINITION_##form(id)
#define SW_UNARY_DEFINITION_OWN(id)
#define SW_UNARY_DEFINITION_UNARY(id) \
  Tensor id(const Tensor& x, const Output& out) { return unary_call(#id, x, out); }
#include <strideweave/operations.def>
#undef SW_UNARY_DEFINITION_OWN
#undef SW_UNARY_DEFINITION_UNARY

namespace {

Attributes elu_attributes(double alpha) {
  Attributes a;
  a.set("alpha", binary32_option("elu", "alpha", alpha, true));
  return a;
}
Attributes gelu_attributes(bool approximate) {
  Attributes a;
  a.set("approximate", approximate);
  return a;
}
Attributes leaky_relu_attributes(double negative_slope) {
  Attributes a;
  a.set("negative_slope", binary32_option("leaky_relu", "negative_slope", negative_slope, true));
  return a;
}
Attributes softplus_attributes(double beta, double threshold) {
  const double b = binary32_option("softplus", "beta", beta, true);
  if (b == 0.0) throw ValueError(fmt::format("softplus: beta must be non-zero in binary32, got {}", beta));
  if (std::isnan(threshold)) throw ValueError("softplus: threshold must not be NaN");
  Attributes a;
  a.set("beta", b);
  a.set("threshold", binary32_option("softplus", "threshold", threshold, false));
  return a;
}

}  // namespace

Tensor elu(const Tensor& x, double alpha, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("elu", {x}, {{"alpha", alpha}});
  };
  return unary_call("elu", x, Execute{out, frontend::by_definition(by_name), {&x}}, [&] { return elu_attributes(alpha); });
}
Tensor gelu(const Tensor& x, bool approximate, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("gelu", {x}, {{"approximate", approximate}});
  };
  return unary_call("gelu", x, Execute{out, frontend::by_definition(by_name), {&x}}, [&] { return gelu_attributes(approximate); });
}
Tensor leaky_relu(const Tensor& x, double negative_slope, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("leaky_relu", {x}, {{"negative_slope", negative_slope}});
  };
  return unary_call("leaky_relu", x, Execute{out, frontend::by_definition(by_name), {&x}}, [&] { return leaky_relu_attributes(negative_slope); });
}
Tensor softplus(const Tensor& x, double beta, double threshold, const Output& out) {
  const auto by_name = [&] {
    return frontend::bind_builtin("softplus", {x}, {{"beta", beta}, {"threshold", threshold}});
  };
  return unary_call("softplus", x, Execute{out, frontend::by_definition(by_name), {&x}}, [&] { return softplus_attributes(beta, threshold); });
}



namespace frontend {

using namespace builtin_schema;

void add_unary_builtins(std::vector<BuiltinEntry>& out) {
  // One record per UNARY row of operations.def: f(x), x differentiable (sign,
  // floor, ceil and round with the zero gradient, docs/autograd.md).
  static constexpr const char* kUnary[] = {
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) SW_UNARY_NAME_##form(id)
#define SW_UNARY_NAME_OWN(id)
#define SW_UNARY_NAME_UNARY(id) #id,
#include <strideweave/operations.def>
#undef SW_UNARY_NAME_OWN
#undef SW_UNARY_NAME_UNARY
  };
  for (const char* name : kUnary) {
    out.push_back(entry(name, {tensor("x", true)}, {}, [name](const BoundCall& c) {
      return unary_call(name, c.tensor(0), Lower{}, [] { return Attributes{}; });
    }));
  }
  out.push_back(entry("elu", {tensor("x", true)},
                      {listed_option("elu", "alpha")},
                      [](const BoundCall& c) {
                        const double alpha = real_option(c, "alpha");
                        return unary_call("elu", c.tensor(0), Lower{}, [&] { return elu_attributes(alpha); });
                      }));
  out.push_back(entry("gelu", {tensor("x", true)},
                      {listed_option("gelu", "approximate")},
                      [](const BoundCall& c) {
                        const bool approximate = bool_option(c, "approximate");
                        return unary_call("gelu", c.tensor(0), Lower{}, [&] { return gelu_attributes(approximate); });
                      }));
  out.push_back(entry("leaky_relu", {tensor("x", true)},
                      {listed_option("leaky_relu", "negative_slope")},
                      [](const BoundCall& c) {
                        const double slope = real_option(c, "negative_slope");
                        return unary_call("leaky_relu", c.tensor(0), Lower{},
                                          [&] { return leaky_relu_attributes(slope); });
                      }));
  out.push_back(entry(
      "softplus", {tensor("x", true)},
      {listed_option("softplus", "beta"), listed_option("softplus", "threshold")},
      [](const BoundCall& c) {
        const double beta = real_option(c, "beta"), threshold = real_option(c, "threshold");
        return unary_call("softplus", c.tensor(0), Lower{}, [&] { return softplus_attributes(beta, threshold); });
      }));
}

}  // namespace frontend
}  // namespace strideweave
