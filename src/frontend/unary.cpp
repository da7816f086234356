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
using frontend::execute;
using frontend::flat;

namespace {

// resolve -> validate options -> carrier -> execute. The plan is resolved
// first so that a dtype error (TypeError for Int32 into a Float32-only
// function, NotImplementedError for Bool) wins over an option error, as for
// every other operation; options are validated before the carrier check and
// before anything is allocated.
template <class Options>
Tensor unary_call(const char* op, const Tensor& x, const Output& out, Options&& options) {
  std::optional<OperationPlan> scratch;
  const OperationPlan& plan = frontend::tensor_plan(op, {&x.dtype()}, scratch);
  const Attributes attributes = options();
  const Carrier& prototype = common_carrier(op, {&x});
  return execute(plan, {x}, attributes, flat(x.shape()), prototype, out);
}
Tensor unary_call(const char* op, const Tensor& x, const Output& out) {
  return unary_call(op, x, out, [] { return Attributes{}; });
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

Tensor relu(const Tensor& x, const Output& out) { return unary_call("relu", x, out); }
Tensor exp(const Tensor& x, const Output& out) { return unary_call("exp", x, out); }
Tensor sigmoid(const Tensor& x, const Output& out) { return unary_call("sigmoid", x, out); }
Tensor silu(const Tensor& x, const Output& out) { return unary_call("silu", x, out); }
Tensor tanh(const Tensor& x, const Output& out) { return unary_call("tanh", x, out); }

Tensor elu(const Tensor& x, double alpha, const Output& out) {
  return unary_call("elu", x, out, [&] {
    Attributes a;
    a.set("alpha", binary32_option("elu", "alpha", alpha, true));
    return a;
  });
}

Tensor gelu(const Tensor& x, bool approximate, const Output& out) {
  return unary_call("gelu", x, out, [&] {
    Attributes a;
    a.set("approximate", approximate);
    return a;
  });
}

Tensor leaky_relu(const Tensor& x, double negative_slope, const Output& out) {
  return unary_call("leaky_relu", x, out, [&] {
    Attributes a;
    a.set("negative_slope", binary32_option("leaky_relu", "negative_slope", negative_slope, true));
    return a;
  });
}

Tensor softplus(const Tensor& x, double beta, double threshold, const Output& out) {
  return unary_call("softplus", x, out, [&] {
    const double b = binary32_option("softplus", "beta", beta, true);
    if (b == 0.0) throw ValueError(fmt::format("softplus: beta must be non-zero in binary32, got {}", beta));
    if (std::isnan(threshold)) throw ValueError("softplus: threshold must not be NaN");
    Attributes a;
    a.set("beta", b);
    a.set("threshold", binary32_option("softplus", "threshold", threshold, false));
    return a;
  });
}

Tensor neg(const Tensor& x, const Output& out) { return unary_call("neg", x, out); }
Tensor abs(const Tensor& x, const Output& out) { return unary_call("abs", x, out); }
Tensor sign(const Tensor& x, const Output& out) { return unary_call("sign", x, out); }
Tensor recip(const Tensor& x, const Output& out) { return unary_call("recip", x, out); }
Tensor sqrt(const Tensor& x, const Output& out) { return unary_call("sqrt", x, out); }
Tensor rsqrt(const Tensor& x, const Output& out) { return unary_call("rsqrt", x, out); }
Tensor exp2(const Tensor& x, const Output& out) { return unary_call("exp2", x, out); }
Tensor log(const Tensor& x, const Output& out) { return unary_call("log", x, out); }
Tensor log2(const Tensor& x, const Output& out) { return unary_call("log2", x, out); }
Tensor sin(const Tensor& x, const Output& out) { return unary_call("sin", x, out); }
Tensor cos(const Tensor& x, const Output& out) { return unary_call("cos", x, out); }
Tensor erf(const Tensor& x, const Output& out) { return unary_call("erf", x, out); }
Tensor floor(const Tensor& x, const Output& out) { return unary_call("floor", x, out); }
Tensor ceil(const Tensor& x, const Output& out) { return unary_call("ceil", x, out); }
Tensor round(const Tensor& x, const Output& out) { return unary_call("round", x, out); }


namespace frontend {

namespace {

// The name-based entry of a unary operation; `run` reads the options (through
// `r`) and calls the typed function.
template <class Run>
CallableOperation unary_entry(std::string name, std::string signature, std::vector<OptionDoc> docs, Run run) {
  CallableOperation c;
  c.name = name;
  c.signature = std::move(signature);
  c.options = std::move(docs);
  c.call = [name, run](std::span<const CallOperand> ops, const CallOptions& options, const ExecutionRequest& acc) {
    no_accumulator(name, acc);
    OptionReader r(name, options);
    auto typed = run(r);  // reads every option (TypeError for a wrong kind)
    r.finish();
    expect_arity(name, ops, 1);
    const Tensor& x = tensor_arg(name, ops, 0);
    return CallResult{{resolve_operation_plan(name, {x.dtype()})}, {typed(x, acc.out)}};
  };
  return c;
}

CallableOperation plain(std::string name, Tensor (*fn)(const Tensor&, const Output&)) {
  return unary_entry(name, name + "(x: tensor)", {}, [fn](OptionReader&) { return fn; });
}

}  // namespace

void add_unary_calls(std::vector<CallableOperation>& out) {
  for (const auto& [name, fn] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&, const Output&)>>{
           {"relu", relu},   {"exp", exp},     {"sigmoid", sigmoid}, {"silu", silu},   {"tanh", tanh},
           {"neg", neg},     {"abs", abs},     {"sign", sign},       {"recip", recip}, {"sqrt", sqrt},
           {"rsqrt", rsqrt}, {"exp2", exp2},   {"log", log},         {"log2", log2},   {"sin", sin},
           {"cos", cos},     {"erf", erf},     {"floor", floor},     {"ceil", ceil},   {"round", round}})
    out.push_back(plain(name, fn));

  out.push_back(unary_entry(
      "elu", "elu(x: tensor)",
      {{"alpha", "1.0", "scale of the negative branch alpha * expm1(x); rounded to binary32, must stay finite"}},
      [](OptionReader& r) {
        const double alpha = r.real("alpha", 1.0);
        return [alpha](const Tensor& x, const Output& o) { return elu(x, alpha, o); };
      }));
  out.push_back(unary_entry(
      "gelu", "gelu(x: tensor)",
      {{"approximate", "false", "false: the exact erf form; true: the tanh approximation"}}, [](OptionReader& r) {
        const bool approximate = r.boolean("approximate", false);
        return [approximate](const Tensor& x, const Output& o) { return gelu(x, approximate, o); };
      }));
  out.push_back(unary_entry(
      "leaky_relu", "leaky_relu(x: tensor)",
      {{"negative_slope", "0.01", "factor of the branch x <= 0; rounded to binary32, must stay finite"}},
      [](OptionReader& r) {
        const double slope = r.real("negative_slope", 0.01);
        return [slope](const Tensor& x, const Output& o) { return leaky_relu(x, slope, o); };
      }));
  out.push_back(unary_entry(
      "softplus", "softplus(x: tensor)",
      {{"beta", "1.0", "log1p(exp(beta * x)) / beta; rounded to binary32, must be finite and non-zero"},
       {"threshold", "20.0", "x is returned unchanged where x * beta > threshold; rounded to binary32, not NaN"}},
      [](OptionReader& r) {
        const double beta = r.real("beta", 1.0), threshold = r.real("threshold", 20.0);
        return [beta, threshold](const Tensor& x, const Output& o) { return softplus(x, beta, threshold, o); };
      }));
}

}  // namespace frontend
}  // namespace strideweave
