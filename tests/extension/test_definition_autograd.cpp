// Autograd through OperationDefinitions (issue 11 step 5; operation-semantics.md,
// "Automatic differentiation belongs to the semantic definition"; core-concepts.md 6).
// Suite names: OperationSemantics_AD_<rule or scenario>.
//
// The operations run on definition-backed carriers (Dev<N>) whose kernel
// patterns compute on the host through the storage provider; every VJP here
// is written against the public surface only, and the fused backward is
// another namespaced operation executed by the same carrier's patterns.
#include <strideweave/strideweave.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;
using Grads = std::vector<std::optional<Tensor>>;
using Cotangents = std::span<const std::optional<Tensor>>;

// ---------------------------------------------------------------- a definition-backed device

template <int N>
class Dev final : public ext::DefinedCarrier {
 public:
  explicit Dev(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider dev_storage() {
  using D = Dev<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const D&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) {
        static_cast<D&>(c).arena.assign(static_cast<std::size_t>(n), *storage_zero(c.dtype()));
      },
      [](Carrier& c) { static_cast<D&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const D&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<D&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

// A fresh compact Float32 tensor with `values` (logical order) on `like`'s class.
Tensor like_tensor(const Tensor& like, const std::vector<float>& values, const Shape& shape) {
  std::vector<Value> v;
  for (float f : values) v.push_back(Value::from_float32(f));
  return Tensor(like.carrier()->new_like(v, true, &DType::Float32()), 0, Layout::compact(shape));
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.kind == ElementKind::Int32 ? static_cast<float>(v.i) : v.f);
  return out;
}

template <int N>
Tensor dev_tensor(const std::vector<float>& values, const Shape& shape) {
  auto c = ext::create<Dev<N>>(shape.size(), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) c->set_value(static_cast<std::int64_t>(i), Value::from_float32(values[i]));
  return Tensor(c, 0, Layout::compact(shape));
}

OperationPlan f32_plan(const std::string& name, std::size_t tensors, const SimpleDType& out = DType::Float32()) {
  std::vector<OperandPlan> operands(tensors, OperandPlan::tensor(DType::Float32()));
  return OperationPlan(name, operands, Arithmetic::BINARY32, std::nullopt, nullptr, out);
}

// What a host kernel computes: one (values, dtype) per result spec.
using HostKernel = std::function<std::vector<std::vector<float>>(const op::ResolvedInvocation&)>;

std::atomic<int> prepares_of_backward{0};  // adtest.fused_linear_backward's prepare calls
std::atomic<int> forward_prepares{0};      // every other prepare call

// The results of `kernel` as fresh compact tensors of class Dev<N> per spec.
template <int N>
ext::ProviderResult host_result(const op::ResolvedInvocation& inv, const HostKernel& kernel) {
  const std::vector<std::vector<float>> values = kernel(inv);
  std::vector<Tensor> outputs;
  for (std::size_t r = 0; r < inv.results().size(); ++r) {
    const op::ResultSpec& spec = inv.results()[r];
    auto c = ext::create<Dev<N>>(spec.shape().size(), spec.dtype());
    for (std::size_t k = 0; k < values[r].size(); ++k)
      c->set_value(static_cast<std::int64_t>(k), &spec.dtype() == &DType::Int32()
                                                     ? Value::from_int32(static_cast<std::int32_t>(values[r][k]))
                                                     : Value::from_float32(values[r][k]));
    outputs.emplace_back(c, 0, spec.layout());
  }
  return ext::ProviderResult(std::move(outputs));
}

template <int N>
ext::KernelPattern host_pattern(std::shared_ptr<const op::OperationDefinition> d, std::size_t tensors,
                                std::string id, HostKernel kernel, std::int64_t preference = 0,
                                std::function<bool(const op::ResolvedInvocation&)> declines = {},
                                const SimpleDType& out = DType::Float32()) {
  const std::string name = d->name();
  return ext::KernelPattern(
      d, {OperationCapability::from_plan(f32_plan(name, tensors, out))}, std::move(id),
      [kernel, declines, name](const op::ResolvedInvocation& inv,
                               const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        if (name == "adtest.fused_linear_backward") ++prepares_of_backward;
        else ++forward_prepares;
        if (declines && declines(inv)) return ext::Unsupported("declined at run time");
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv, kernel]() -> ext::ResultSubmission {
          return host_result<N>(*inv, kernel);
        });
      },
      preference);
}

// ---------------------------------------------------------------- the operations

op::OperandSpec diff(const char* name) { return op::OperandSpec(name, op::OperandKind::TENSOR, true); }

Shape flat(const Tensor& t) { return Shape::of(t.shape().extents()); }

// adtest.mul(x, w) = x * w (same shapes). Saves (w, x): declared order,
// deliberately not operand order. The VJP records what it saw.
struct Seen {
  std::vector<std::vector<float>> saved, outputs;
  std::vector<bool> cotangent_present, needs_grad;
  std::string operation;
  int calls = 0;
};
Seen seen;

std::shared_ptr<const op::OperationDefinition> mul_op() {
  static const auto d = op::define_operation(
      "adtest.mul", op::OperationSchema({diff("x"), diff("w")}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 2),
                                      {op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)))}, {}, {1, 0});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext& ctx, Cotangents cot) -> Grads {
        ++seen.calls;
        seen.operation = ctx.invocation().operation();
        seen.saved.clear();
        seen.outputs.clear();
        for (const Tensor& t : ctx.saved_operands()) seen.saved.push_back(floats(t));
        for (const Tensor& t : ctx.outputs()) seen.outputs.push_back(floats(t));
        seen.needs_grad = {ctx.needs_grad(0), ctx.needs_grad(1)};
        seen.cotangent_present = {cot[0].has_value()};
        const Tensor& w = ctx.saved_operands()[0];
        const Tensor& x = ctx.saved_operands()[1];
        const std::vector<float> g = floats(*cot[0]), xv = floats(x), wv = floats(w);
        std::vector<float> gx(g.size()), gw(g.size());
        for (std::size_t k = 0; k < g.size(); ++k) {
          gx[k] = g[k] * wv[k];
          gw[k] = g[k] * xv[k];
        }
        return {like_tensor(x, gx, flat(x)), like_tensor(w, gw, flat(w))};
      }));
  return d;
}

// adtest.split(x) = (2x, x*x): two differentiable results, one node.
std::shared_ptr<const op::OperationDefinition> split_op() {
  static const auto d = op::define_operation(
      "adtest.split", op::OperationSchema({diff("x")}),
      [](const op::BoundOperationCall& call) {
        const auto spec = op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)));
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1), {spec, spec}, {}, {0});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext& ctx, Cotangents cot) -> Grads {
        seen.cotangent_present = {cot[0].has_value(), cot[1].has_value()};
        const Tensor& x = ctx.saved_operands()[0];
        const std::vector<float> xv = floats(x);
        std::vector<float> g(xv.size(), 0.0f);
        if (cot[0])
          for (std::size_t k = 0; auto c : floats(*cot[0])) g[k++] += 2 * c;
        if (cot[1])
          for (std::size_t k = 0; auto c : floats(*cot[1])) g[k] += 2 * xv[k] * c, ++k;
        return {like_tensor(x, g, flat(x))};
      }));
  return d;
}

// adtest.with_sign(x) = (3x Float32, sign(x) Int32): only the Float32 result
// carries the node.
std::shared_ptr<const op::OperationDefinition> with_sign_op() {
  static const auto d = op::define_operation(
      "adtest.with_sign", op::OperationSchema({diff("x")}),
      [](const op::BoundOperationCall& call) {
        const Shape s = flat(call.tensor(0));
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec::compact(DType::Float32(), s),
                                       op::ResultSpec::compact(DType::Int32(), s)},
                                      {}, {});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext& ctx, Cotangents cot) -> Grads {
        const Tensor& x = std::get<Tensor>(ctx.invocation().operands()[0]);
        std::vector<float> g = floats(*cot[0]);
        for (float& v : g) v *= 3;
        return {like_tensor(x, g, flat(x))};
      }));
  return d;
}

// adtest.fused_linear(x, w, b) = relu(x @ w + b), x (m, k), w (k, n), b (n).
// Its VJP runs adtest.fused_linear_backward(g, x, w, y) -> (gx, gw, gb), a
// complete namespaced operation of its own (operation-semantics.md, "Use a
// fused namespaced backward").
struct Dims {
  std::int64_t m, k, n;
};
Dims dims(const Tensor& x, const Tensor& w) { return {x.shape().extent(0), x.shape().extent(1), w.shape().extent(1)}; }

std::shared_ptr<const op::OperationDefinition> fused_linear_backward_op() {
  static const auto d = op::define_operation(
      "adtest.fused_linear_backward",
      op::OperationSchema({op::OperandSpec("g", op::OperandKind::TENSOR), op::OperandSpec("x", op::OperandKind::TENSOR),
                           op::OperandSpec("w", op::OperandKind::TENSOR),
                           op::OperandSpec("y", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(1);
        const Tensor& w = call.tensor(2);
        const Dims s = dims(x, w);
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 4),
                                      {op::ResultSpec::compact(DType::Float32(), flat(x)),
                                       op::ResultSpec::compact(DType::Float32(), flat(w)),
                                       op::ResultSpec::compact(DType::Float32(), Shape{s.n})});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}

std::vector<std::vector<float>> fused_linear_backward_kernel(const op::ResolvedInvocation& inv) {
  auto t = [&](std::size_t i) { return std::get<Tensor>(inv.operands()[i]); };
  const Dims s = dims(t(1), t(2));
  const std::vector<float> g = floats(t(0)), x = floats(t(1)), w = floats(t(2)), y = floats(t(3));
  // Logical order is first axis fastest: element (i, j) of an (r, c) tensor is at i + r * j.
  std::vector<float> gz(g.size()), gx(static_cast<std::size_t>(s.m * s.k), 0), gw(static_cast<std::size_t>(s.k * s.n), 0),
      gb(static_cast<std::size_t>(s.n), 0);
  for (std::size_t q = 0; q < g.size(); ++q) gz[q] = y[q] > 0 ? g[q] : 0.0f;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      const float z = gz[static_cast<std::size_t>(i + s.m * j)];
      gb[static_cast<std::size_t>(j)] += z;
      for (std::int64_t p = 0; p < s.k; ++p) {
        gx[static_cast<std::size_t>(i + s.m * p)] += z * w[static_cast<std::size_t>(p + s.k * j)];
        gw[static_cast<std::size_t>(p + s.k * j)] += z * x[static_cast<std::size_t>(i + s.m * p)];
      }
    }
  return {gx, gw, gb};
}

std::shared_ptr<const op::OperationDefinition> fused_linear_op() {
  static const auto d = op::define_operation(
      "adtest.fused_linear", op::OperationSchema({diff("x"), diff("w"), diff("b")}),
      [](const op::BoundOperationCall& call) {
        const Dims s = dims(call.tensor(0), call.tensor(1));
        if (call.tensor(0).rank() != 2 || call.tensor(1).rank() != 2 || call.tensor(1).shape().extent(0) != s.k)
          throw ValueError("adtest.fused_linear: x (m, k) and w (k, n) are needed");
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 3),
                                      {op::ResultSpec::compact(DType::Float32(), Shape{s.m, s.n})}, {}, {0, 1});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext& ctx, Cotangents cot) -> Grads {
        if (!cot[0]) return {std::nullopt, std::nullopt, std::nullopt};
        const std::vector<Tensor> g = (*fused_linear_backward_op())(
            {*cot[0], ctx.saved_operands()[0], ctx.saved_operands()[1], ctx.outputs()[0]});
        return {g[0], g[1], g[2]};
      }));
  return d;
}

std::vector<std::vector<float>> fused_linear_kernel(const op::ResolvedInvocation& inv) {
  auto t = [&](std::size_t i) { return std::get<Tensor>(inv.operands()[i]); };
  const Dims s = dims(t(0), t(1));
  const std::vector<float> x = floats(t(0)), w = floats(t(1)), b = floats(t(2));
  std::vector<float> y(static_cast<std::size_t>(s.m * s.n));
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      float z = b[static_cast<std::size_t>(j)];
      for (std::int64_t p = 0; p < s.k; ++p)
        z += x[static_cast<std::size_t>(i + s.m * p)] * w[static_cast<std::size_t>(p + s.k * j)];
      y[static_cast<std::size_t>(i + s.m * j)] = z > 0 ? z : 0.0f;
    }
  return {y};
}

// adtest.checked(x) = 2x whose VJP misbehaves as `vjp_fault` says.
enum class VjpFault { None, TooMany, TooFew, WrongShape, WrongDType, WrongCarrier };
VjpFault vjp_fault = VjpFault::None;

std::shared_ptr<const op::OperationDefinition> checked_op() {
  static const auto d = op::define_operation(
      "adtest.checked", op::OperationSchema({diff("x")}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)))}, {}, {0});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext& ctx, Cotangents cot) -> Grads {
        const Tensor& x = ctx.saved_operands()[0];
        std::vector<float> g = floats(*cot[0]);
        for (float& v : g) v *= 2;
        switch (vjp_fault) {
          case VjpFault::TooMany: return {like_tensor(x, g, flat(x)), std::nullopt};
          case VjpFault::TooFew: return {};
          case VjpFault::WrongShape: return {like_tensor(x, {1}, Shape{1})};
          case VjpFault::WrongDType: {
            std::vector<Value> ints(g.size(), Value::from_int32(1));
            return {Tensor(x.carrier()->new_like(ints, true, &DType::Int32()), 0, Layout::compact(flat(x)))};
          }
          case VjpFault::WrongCarrier: return {make_tensor<CPU>(std::span<const float>(g), flat(x))};
          case VjpFault::None: break;
        }
        return {like_tensor(x, g, flat(x))};
      }));
  return d;
}

// adtest.identity_(x) returns x itself (alias_of = 0), differentiable VJP;
// adtest.nd_identity_ the same NON_DIFFERENTIABLE; adtest.pair_alias(x)
// returns (2x, x) with only the second aliasing.
op::ResolveFn alias_resolve(std::size_t results) {
  return [results](const op::BoundOperationCall& call) {
    const Tensor& x = call.tensor(0);
    std::vector<op::ResultSpec> specs(results - 1, op::ResultSpec::compact(DType::Float32(), flat(x)));
    specs.emplace_back(x.dtype(), x.shape(), x.layout(), 0);
    return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1), std::move(specs));
  };
}
op::VjpFn pass_through() {
  return [](const op::VJPContext&, Cotangents cot) -> Grads { return {cot[0]}; };
}
std::shared_ptr<const op::OperationDefinition> identity_op() {
  static const auto d = op::define_operation("adtest.identity_", op::OperationSchema({diff("x")}), alias_resolve(1),
                                             std::nullopt, pass_through());
  return d;
}
std::shared_ptr<const op::OperationDefinition> nd_identity_op() {
  static const auto d = op::define_operation("adtest.nd_identity_", op::OperationSchema({diff("x")}), alias_resolve(1),
                                             std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}
std::shared_ptr<const op::OperationDefinition> pair_alias_op() {
  static const auto d = op::define_operation("adtest.pair_alias", op::OperationSchema({diff("x")}), alias_resolve(2),
                                             std::nullopt, pass_through());
  return d;
}
// adtest.nd_double(x) = 2x, NON_DIFFERENTIABLE (its VJP must never run).
std::shared_ptr<const op::OperationDefinition> nd_double_op() {
  static const auto d = op::define_operation(
      "adtest.nd_double", op::OperationSchema({diff("x")}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)))});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}
// adtest.view(x) returns a distinct Tensor over x's storage (no alias_of).
std::shared_ptr<const op::OperationDefinition> view_op() {
  static const auto d = op::define_operation(
      "adtest.view", op::OperationSchema({diff("x")}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec(x.dtype(), x.shape(), x.layout())});
      },
      std::nullopt, pass_through());
  return d;
}
// adtest.scale_(x, s) multiplies x in place by s (mutated = {0}) and returns
// a fresh copy of the new values.
std::shared_ptr<const op::OperationDefinition> scale_inplace_op() {
  static const auto d = op::define_operation(
      "adtest.scale_", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR), diff("s")}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 2),
                                      {op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)))}, {0});
      },
      std::nullopt, pass_through());
  return d;
}

// adtest.carry(x, s) = a copy of x; only s is differentiable, so a node
// reaches an x produced by an earlier call through its invocation alone.
std::shared_ptr<const op::OperationDefinition> carry_op() {
  static const auto d = op::define_operation(
      "adtest.carry", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR), diff("s")}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 2),
                                      {op::ResultSpec::compact(DType::Float32(), flat(call.tensor(0)))});
      },
      std::nullopt, op::VjpFn([](const op::VJPContext&, Cotangents) -> Grads { return {std::nullopt}; }));
  return d;
}

std::vector<std::vector<float>> elementwise(const op::ResolvedInvocation& inv, float (*f)(float)) {
  std::vector<float> v = floats(std::get<Tensor>(inv.operands()[0]));
  for (float& e : v) e = f(e);
  return {v};
}

// Registers every operation's patterns on Dev<N> (once per N).
template <int N>
void register_dev() {
  static const bool once = [] {
    using K = HostKernel;
    const K same = [](const op::ResolvedInvocation& inv) { return elementwise(inv, [](float v) { return v; }); };
    const K twice = [](const op::ResolvedInvocation& inv) { return elementwise(inv, [](float v) { return 2 * v; }); };
    std::vector<ext::KernelPattern> patterns{
        host_pattern<N>(mul_op(), 2, "mul",
                        [](const op::ResolvedInvocation& inv) {
                          std::vector<float> x = floats(std::get<Tensor>(inv.operands()[0]));
                          const std::vector<float> w = floats(std::get<Tensor>(inv.operands()[1]));
                          for (std::size_t k = 0; k < x.size(); ++k) x[k] *= w[k];
                          return std::vector<std::vector<float>>{x};
                        }),
        host_pattern<N>(split_op(), 1, "split",
                        [](const op::ResolvedInvocation& inv) {
                          std::vector<float> x = floats(std::get<Tensor>(inv.operands()[0])), a = x, b = x;
                          for (std::size_t k = 0; k < x.size(); ++k) a[k] = 2 * x[k], b[k] = x[k] * x[k];
                          return std::vector<std::vector<float>>{a, b};
                        }),
        host_pattern<N>(with_sign_op(), 1, "with_sign",
                        [](const op::ResolvedInvocation& inv) {
                          std::vector<float> x = floats(std::get<Tensor>(inv.operands()[0])), a = x, s = x;
                          for (std::size_t k = 0; k < x.size(); ++k)
                            a[k] = 3 * x[k], s[k] = static_cast<float>((x[k] > 0) - (x[k] < 0));
                          return std::vector<std::vector<float>>{a, s};
                        }),
        host_pattern<N>(fused_linear_op(), 3, "fused_linear", fused_linear_kernel),
        // The fused backward: a preferred pattern that declines more than 4
        // rows at run time, and a general one (ordinary kernel selection).
        host_pattern<N>(fused_linear_backward_op(), 4, "fused_linear_backward_small", fused_linear_backward_kernel, 10,
                        [](const op::ResolvedInvocation& inv) {
                          return std::get<Tensor>(inv.operands()[1]).shape().extent(0) > 4;
                        }),
        host_pattern<N>(fused_linear_backward_op(), 4, "fused_linear_backward", fused_linear_backward_kernel),
        host_pattern<N>(checked_op(), 1, "checked", twice),
        host_pattern<N>(carry_op(), 2, "carry", same),
        host_pattern<N>(nd_double_op(), 1, "nd_double", twice),
        host_pattern<N>(scale_inplace_op(), 2, "scale_",
                        [](const op::ResolvedInvocation& inv) {
                          const Tensor& x = std::get<Tensor>(inv.operands()[0]);
                          std::vector<float> v = floats(x);
                          const std::vector<float> s = floats(std::get<Tensor>(inv.operands()[1]));
                          for (std::size_t k = 0; k < v.size(); ++k) {
                            v[k] *= s[k];
                            x.carrier()->set_value(x.offset() + x.layout()(static_cast<std::int64_t>(k)),
                                                   Value::from_float32(v[k]));
                          }
                          return std::vector<std::vector<float>>{v};
                        }),
    };
    // Aliasing and view results are not fresh: their own patterns.
    auto returning = [](std::shared_ptr<const op::OperationDefinition> d, std::string id,
                        std::function<std::vector<Tensor>(const op::ResolvedInvocation&)> make) {
      return ext::KernelPattern(
          d, {OperationCapability::from_plan(f32_plan(d->name(), 1))}, std::move(id),
          [make](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
            ++forward_prepares;
            auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
            return ext::PreparedKernel(self, [inv = &inv, make]() -> ext::ResultSubmission {
              return ext::ProviderResult(make(*inv));
            });
          });
    };
    auto x_of = [](const op::ResolvedInvocation& inv) { return std::get<Tensor>(inv.operands()[0]); };
    patterns.push_back(returning(identity_op(), "identity_", [x_of](const auto& inv) { return std::vector{x_of(inv)}; }));
    patterns.push_back(returning(nd_identity_op(), "nd_identity_", [x_of](const auto& inv) { return std::vector{x_of(inv)}; }));
    patterns.push_back(returning(pair_alias_op(), "pair_alias", [x_of](const auto& inv) {
      const Tensor x = x_of(inv);
      return std::vector{like_tensor(x, floats(x), flat(x)), x};
    }));
    patterns.push_back(returning(view_op(), "view", [x_of](const auto& inv) {
      const Tensor x = x_of(inv);
      return std::vector{Tensor(x.carrier(), x.offset(), x.layout())};
    }));
    ext::register_carrier_definition(carrier_class<Dev<N>>(),
                                     ext::CarrierDefinition(dev_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), patterns)));
    return true;
  }();
  (void)once;
}

// Central differences of <c, f(x)> in double precision for one operand.
std::vector<double> numeric_gradient(const std::function<std::vector<float>(const std::vector<float>&)>& f,
                                     std::vector<float> x, const std::vector<float>& c, float h = 1e-2f) {
  std::vector<double> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + h;
    const float up = x[i];
    const std::vector<float> fp = f(x);
    x[i] = saved - h;
    const float down = x[i];
    const std::vector<float> fm = f(x);
    x[i] = saved;
    double dp = 0, dm = 0;
    for (std::size_t k = 0; k < c.size(); ++k) dp += double(c[k]) * fp[k], dm += double(c[k]) * fm[k];
    out.push_back((dp - dm) / (double(up) - double(down)));
  }
  return out;
}

void expect_close(const std::vector<float>& analytic, const std::vector<double>& numeric, const char* what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    const double scale = std::max({1.0, std::abs(double(analytic[i])), std::abs(numeric[i])});
    EXPECT_LE(std::abs(analytic[i] - numeric[i]), 1e-2 * scale) << what << " element " << i;
  }
}

// ---------------------------------------------------------------- saved operands, context, one node

TEST(OperationSemantics_AD_SaveAndContext, SavesExactlyTheDeclaredOperandsInDeclaredOrderWithInvocationAndOutputs) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2}), w = dev_tensor<1>({3, 4}, Shape{2});
  const Tensor y = (*mul_op())({x, w})[0];
  ASSERT_TRUE(y.grad_fn());
  const Operation& node = *y.grad_fn();
  EXPECT_EQ(node.name(), "adtest.mul");
  ASSERT_TRUE(node.invocation());
  EXPECT_EQ(&node.invocation()->definition(), mul_op().get());
  // core-concepts 6.2: the saved inputs are the positional Tensor
  // arguments; the declared saved_operands = (1, 0) reach the VJP below.
  ASSERT_EQ(node.inputs().size(), 2u);
  EXPECT_TRUE(node.inputs()[0].is(x));
  EXPECT_TRUE(node.inputs()[1].is(w));
  ASSERT_EQ(node.input_versions().size(), 2u);
  ASSERT_EQ(node.outputs().size(), 1u);
  seen = {};
  y.backward(like_tensor(y, {1, 1}, Shape{2}));
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.operation, "adtest.mul");
  EXPECT_EQ(seen.saved, (std::vector<std::vector<float>>{{3, 4}, {1, 2}}));  // declared order: w, x
  EXPECT_EQ(seen.outputs, (std::vector<std::vector<float>>{{3, 8}}));
  EXPECT_EQ(seen.needs_grad, (std::vector<bool>{true, true}));
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{3, 4}));
  EXPECT_EQ(floats(*w.grad()), (std::vector<float>{1, 2}));
  EXPECT_EQ(x.grad()->carrier()->exact_class(), carrier_class<Dev<1>>());
}

TEST(OperationSemantics_AD_SaveAndContext, EveryDifferentiableOperandIsAnEdgeWithoutAnyFlag) {
  // core-concepts 6.2: no opt-in flag; both Float32 operands take part.
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor w = dev_tensor<1>({3, 4}, Shape{2});
  const Tensor y = (*mul_op())({x, w})[0];
  seen = {};
  const auto grads = grad(y, std::vector<Tensor>{x}, like_tensor(y, {1, 1}, Shape{2}));
  EXPECT_EQ(seen.needs_grad, (std::vector<bool>{true, true}));
  EXPECT_EQ(floats(*grads[0]), (std::vector<float>{3, 4}));
  EXPECT_FALSE(w.grad().has_value());  // grad() touches no .grad
}

TEST(OperationSemantics_AD_OneNode, OneNodeAttachesToEveryDifferentiableResultAndRunsOnceWithEveryCotangent) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, -2, 3}, Shape{3});
  const std::vector<Tensor> r = (*split_op())({x});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].grad_fn());
  EXPECT_EQ(r[0].grad_fn(), r[1].grad_fn());  // one node per call
  // Both results reached: the VJP runs once with both cotangents.
  seen = {};
  const auto g = grad(std::vector<Tensor>{r[0], r[1]}, std::vector<Tensor>{x},
                      std::vector<std::optional<Tensor>>{like_tensor(x, {1, 1, 1}, Shape{3}),
                                                         like_tensor(x, {1, 1, 1}, Shape{3})},
                      /*retain_graph=*/true);
  EXPECT_EQ(seen.cotangent_present, (std::vector<bool>{true, true}));
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{4, -2, 8}));  // 2 + 2x
  // Only the second reached: no cotangent flows from the first.
  seen = {};
  const auto g1 = grad(r[1], std::vector<Tensor>{x}, like_tensor(x, {1, 1, 1}, Shape{3}));
  EXPECT_EQ(seen.cotangent_present, (std::vector<bool>{false, true}));
  EXPECT_EQ(floats(*g1[0]), (std::vector<float>{2, -4, 6}));
}

TEST(OperationSemantics_AD_OneNode, ANonFloat32ResultCarriesNoNode) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, -2}, Shape{2});
  const std::vector<Tensor> r = (*with_sign_op())({x});
  EXPECT_TRUE(r[0].grad_fn());
  EXPECT_FALSE(r[1].grad_fn());
  EXPECT_EQ(&r[1].dtype(), &DType::Int32());
  const auto g = grad(r[0], std::vector<Tensor>{x}, like_tensor(x, {1, 2}, Shape{2}));
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{3, 6}));
}

TEST(OperationSemantics_AD_OneNode, NoGradModeAttachesNothing) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1}, Shape{1});
  {
    NoGradGuard off;
    const std::vector<Tensor> r = (*split_op())({x});
    EXPECT_FALSE(r[0].grad_fn());
    EXPECT_TRUE(r[0].is_leaf());
  }
  EXPECT_TRUE((*split_op())({x})[0].grad_fn());  // and back with grad mode
}

TEST(OperationSemantics_AD_Accumulation, ReturnedGradientsEnterOrdinaryAccumulation) {
  // x feeds two calls, and backward runs twice: contributions are summed in
  // fresh storage of x's own (definition-backed) class.
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor w = dev_tensor<1>({3, 4}, Shape{2});
  const Tensor a = (*mul_op())({x, w})[0];
  const Tensor b = (*mul_op())({a, x})[0];  // b = x * w * x: db/dx = 2 x w
  b.backward(like_tensor(b, {1, 1}, Shape{2}), /*retain_graph=*/true);
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{6, 16}));
  b.backward(like_tensor(b, {1, 1}, Shape{2}));
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{12, 32}));
  EXPECT_EQ(x.grad()->carrier()->exact_class(), carrier_class<Dev<1>>());
}

// ---------------------------------------------------------------- scenarios

TEST(OperationSemantics_AD_Scenario, UseAFusedNamespacedBackward) {
  // The VJP of adtest.fused_linear calls adtest.fused_linear_backward, which
  // undergoes ordinary resolution and kernel selection: its preferred pattern
  // declines 5 rows at run time and the general one runs.
  register_dev<1>();
  for (const std::int64_t m : {2, 5}) {
    const std::int64_t k = 3, n = 2;
    std::vector<float> xv, wv, bv{0.25f, -0.5f};
    for (std::int64_t i = 0; i < m * k; ++i) xv.push_back(0.3f * static_cast<float>((i * 7) % 5) - 0.6f);
    for (std::int64_t i = 0; i < k * n; ++i) wv.push_back(0.2f * static_cast<float>((i * 3) % 7) - 0.5f);
    Tensor x = dev_tensor<1>(xv, Shape{m, k}), w = dev_tensor<1>(wv, Shape{k, n}), b = dev_tensor<1>(bv, Shape{n});
    const Tensor y = (*fused_linear_op())({x, w, b})[0];
    std::vector<float> c;
    for (std::int64_t i = 0; i < m * n; ++i) c.push_back(0.1f * static_cast<float>(i % 4) - 0.15f);
    const int before = prepares_of_backward.load();
    y.backward(like_tensor(y, c, Shape{m, n}));
    EXPECT_EQ(prepares_of_backward.load() - before, m > 4 ? 2 : 1) << "m = " << m;
    // Against finite differences of the forward operation itself.
    auto forward = [&](const std::vector<float>& xs, const std::vector<float>& ws, const std::vector<float>& bs) {
      NoGradGuard off;
      return floats((*fused_linear_op())({dev_tensor<1>(xs, Shape{m, k}), dev_tensor<1>(ws, Shape{k, n}),
                                          dev_tensor<1>(bs, Shape{n})})[0]);
    };
    expect_close(floats(*x.grad()), numeric_gradient([&](const auto& v) { return forward(v, wv, bv); }, xv, c), "x");
    expect_close(floats(*w.grad()), numeric_gradient([&](const auto& v) { return forward(xv, v, bv); }, wv, c), "w");
    expect_close(floats(*b.grad()), numeric_gradient([&](const auto& v) { return forward(xv, wv, v); }, bv, c), "b");
  }
}

TEST(OperationSemantics_AD_Scenario, BackpropagateThroughTwoCarrierKernels) {
  register_dev<1>();
  register_dev<2>();
  const std::vector<float> xv{0.5f, -1.0f, 2.0f, 0.25f}, wv{1.5f, 0.5f, -0.75f, 1.0f}, bv{0.1f, 0.2f};
  auto gradients = [&](Tensor x, Tensor w, Tensor b) {
    const Tensor y = (*fused_linear_op())({x, w, b})[0];
    y.backward(like_tensor(y, {1, -1, 0.5f, 2}, Shape{2, 2}));
    return std::vector{floats(*x.grad()), floats(*w.grad()), floats(*b.grad())};
  };
  const auto one = gradients(dev_tensor<1>(xv, Shape{2, 2}), dev_tensor<1>(wv, Shape{2, 2}), dev_tensor<1>(bv, Shape{2}));
  const auto two = gradients(dev_tensor<2>(xv, Shape{2, 2}), dev_tensor<2>(wv, Shape{2, 2}), dev_tensor<2>(bv, Shape{2}));
  EXPECT_EQ(one, two);
}

TEST(OperationSemantics_AD_Scenario, DetectAModifiedSavedInput) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2}), w = dev_tensor<1>({3, 4}, Shape{2});
  const Tensor y = (*mul_op())({x, w})[0];
  w.carrier()->set_value(0, Value::from_float32(9));  // w is saved
  seen = {};
  try {
    y.backward(like_tensor(y, {1, 1}, Shape{2}));
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input 'w' (operand 1)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seen.calls, 0);  // before the VJP (and any provider work)
  EXPECT_FALSE(x.grad().has_value());
}

TEST(OperationSemantics_AD_Scenario, AWriteIntoAnOutputIsDetectedToo) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor y = (*mul_op())({x, dev_tensor<1>({3, 4}, Shape{2})})[0];
  y.carrier()->set_value(1, Value::from_float32(0));
  EXPECT_THROW(y.backward(like_tensor(y, {1, 1}, Shape{2})), RuntimeError);
}

TEST(OperationSemantics_AD_Lifetime, WithoutRetainGraphASecondBackwardNamesRetainGraph) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1}, Shape{1});
  const Tensor y = (*split_op())({x})[0];
  y.backward();
  try {
    y.backward();
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph=True"), std::string::npos) << e.what();
  }
}

TEST(OperationSemantics_AD_Lifetime, ALongChainOfDefinitionNodesIsFreedWithBoundedStack) {
  // A definition node owns its invocation, whose bound call holds the
  // caller's operand tensors: the destructor hands that over too (node.cpp),
  // so a chain far deeper than a recursive teardown survives is freed.
  // Here each node reaches the previous result only through its invocation
  // (operand x of adtest.carry is not differentiable, so it is no edge).
  register_dev<1>();
  Tensor s = dev_tensor<1>({1}, Shape{1});
  std::optional<Tensor> y = dev_tensor<1>({1}, Shape{1});
  for (int i = 0; i < 200000; ++i) y = (*carry_op())({*y, s})[0];
  EXPECT_TRUE(y->grad_fn());
  y.reset();  // the whole chain goes here
  EXPECT_TRUE(s.is_leaf());
}

// ---------------------------------------------------------------- return validation

struct VjpFaultCase {
  VjpFault fault;
  const char* name;
  enum { Value, Type } error;
};
class OperationSemantics_AD_ReturnValidation : public ::testing::TestWithParam<VjpFaultCase> {};

TEST_P(OperationSemantics_AD_ReturnValidation, AWrongReturnIsRefusedBeforeAnyGradientIsAccumulated) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor y = (*checked_op())({x})[0];
  vjp_fault = GetParam().fault;
  if (GetParam().error == VjpFaultCase::Value)
    EXPECT_THROW(y.backward(like_tensor(y, {1, 1}, Shape{2}), true), ValueError) << GetParam().name;
  else
    EXPECT_THROW(y.backward(like_tensor(y, {1, 1}, Shape{2}), true), TypeError) << GetParam().name;
  vjp_fault = VjpFault::None;
  EXPECT_FALSE(x.grad().has_value());
  y.backward(like_tensor(y, {1, 1}, Shape{2}));  // the graph was kept: nothing half done
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{2, 2}));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OperationSemantics_AD_ReturnValidation,
    ::testing::Values(VjpFaultCase{VjpFault::TooMany, "wrong_length_too_many", VjpFaultCase::Value},
                      VjpFaultCase{VjpFault::TooFew, "wrong_length_empty", VjpFaultCase::Value},
                      VjpFaultCase{VjpFault::WrongShape, "incompatible_shape", VjpFaultCase::Value},
                      VjpFaultCase{VjpFault::WrongDType, "incompatible_dtype", VjpFaultCase::Type},
                      VjpFaultCase{VjpFault::WrongCarrier, "another_carrier_class", VjpFaultCase::Type}),
    [](const ::testing::TestParamInfo<VjpFaultCase>& param_info) { return std::string(param_info.param.name); });

TEST(OperationSemantics_AD_Cotangents, NodeBackwardTakesOneCotangentPerResultInResultOrder) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 3}, Shape{2});
  const std::vector<Tensor> r = (*split_op())({x});
  const Operation& node = *r[0].grad_fn();
  const std::vector<std::optional<Tensor>> cot{std::nullopt, like_tensor(x, {1, 1}, Shape{2})};
  const auto g = node.backward(std::span<const std::optional<Tensor>>(cot));
  ASSERT_EQ(g.size(), 1u);  // one per schema operand
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{2, 6}));
  const std::vector<std::optional<Tensor>> one{like_tensor(x, {1, 1}, Shape{2})};
  EXPECT_THROW(node.backward(std::span<const std::optional<Tensor>>(one)), ValueError);  // count
  const std::vector<std::optional<Tensor>> bad_shape{like_tensor(x, {1}, Shape{1}), std::nullopt};
  EXPECT_THROW(node.backward(std::span<const std::optional<Tensor>>(bad_shape)), ValueError);
  const std::vector<std::optional<Tensor>> bad_class{make_tensor<CPU>({1.0f, 1.0f}, Shape{2}), std::nullopt};
  EXPECT_THROW(node.backward(std::span<const std::optional<Tensor>>(bad_class)), TypeError);
}

// ---------------------------------------------------------------- NON_DIFFERENTIABLE and the alias rule

TEST(OperationSemantics_AD_NonDifferentiable, AttachesNoNodeAndNeverCallsAVjp) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor y = (*nd_double_op())({x})[0];
  EXPECT_FALSE(y.grad_fn());
  EXPECT_TRUE(y.is_leaf());
  // y is a leaf of its own: backward accumulates into y and reaches nothing.
  y.backward(like_tensor(y, {1, 1}, Shape{2}));
  EXPECT_TRUE(y.grad().has_value());
  EXPECT_FALSE(x.grad().has_value());
}

TEST(OperationSemantics_AD_Scenario, RejectADifferentiableExactObjectAliasBeforeProviderWork) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const auto version = x.carrier()->version();
  const int before = forward_prepares.load();
  EXPECT_THROW((*identity_op())({x}), ValueError);
  EXPECT_EQ(forward_prepares.load(), before);
  EXPECT_EQ(x.carrier()->version(), version);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
}

TEST(OperationSemantics_AD_Scenario, RejectOneGraphBuildingAliasAtomicallyAmongMultipleResults) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const int before = forward_prepares.load();
  EXPECT_THROW((*pair_alias_op())({x}), ValueError);  // result 0 is fresh, result 1 aliases
  EXPECT_EQ(forward_prepares.load(), before);
}

TEST(OperationSemantics_AD_Scenario, PermitANonDifferentiableExactObjectAlias) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const std::vector<Tensor> r = (*nd_identity_op())({x});
  EXPECT_TRUE(r[0].is(x));
  EXPECT_TRUE(x.is_leaf());  // no node attached to the operand itself
  EXPECT_TRUE(x.requires_grad());
}

TEST(OperationSemantics_AD_Scenario, PermitANoGradExactObjectAlias) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  NoGradGuard off;
  const std::vector<Tensor> r = (*identity_op())({x});
  EXPECT_TRUE(r[0].is(x));
  EXPECT_TRUE(x.is_leaf());
}

TEST(OperationSemantics_AD_Scenario, ADistinctViewSharingStorageKeepsOrdinaryAutogradBehaviour) {
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2});
  const Tensor v = (*view_op())({x})[0];
  EXPECT_FALSE(v.is(x));
  EXPECT_EQ(v.carrier(), x.carrier());
  ASSERT_TRUE(v.grad_fn());
  v.backward(like_tensor(v, {5, 7}, Shape{2}));
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{5, 7}));
}

TEST(OperationSemantics_AD_Mutation, ADifferentiableMutatedOperandUnderGradModeIsRefusedBeforeProviderWork) {
  // Beyond the specification (docs/autograd.md): the node cannot record an
  // overwrite of a tensor that takes part in differentiation.
  register_dev<1>();
  Tensor x = dev_tensor<1>({1, 2}, Shape{2}), s = dev_tensor<1>({2, 2}, Shape{2});
  const int before = forward_prepares.load();
  EXPECT_THROW((*scale_inplace_op())({x, s}), RuntimeError);
  EXPECT_EQ(forward_prepares.load(), before);
  EXPECT_EQ(floats(x), (std::vector<float>{1, 2}));
  // Under no_grad() the in-place update runs.
  NoGradGuard off;
  const Tensor y = (*scale_inplace_op())({x, s})[0];
  EXPECT_EQ(floats(x), (std::vector<float>{2, 4}));
  EXPECT_FALSE(y.grad_fn());
}

// ---------------------------------------------------------------- nothing attaches on a failure

std::mutex stash_mutex;
std::vector<Tensor> stash;  // every result a failing provider produced

template <int N>
void register_failing(std::function<ext::ProviderResult(const op::ResolvedInvocation&)> make) {
  auto p = ext::KernelPattern(
      checked_op(), {OperationCapability::from_plan(f32_plan("adtest.checked", 1))}, "failing",
      [make](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv, make]() -> ext::ResultSubmission {
          ext::ProviderResult r = make(*inv);
          std::lock_guard<std::mutex> lock(stash_mutex);
          for (const Tensor& t : r.outputs()) stash.push_back(t);
          return r;
        });
      });
  ext::register_carrier_definition(
      carrier_class<Dev<N>>(),
      ext::CarrierDefinition(dev_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
}

template <int N>
void expect_no_node_on_failure(const char* field) {
  Tensor x = dev_tensor<N>({1, 2}, Shape{2});
  stash.clear();
  const auto version = x.carrier()->version();
  try {
    (void)(*checked_op())({x});
    FAIL() << "expected ProviderContractError(" << field << ")";
  } catch (const ProviderContractError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
  ASSERT_FALSE(stash.empty()) << field;
  for (const Tensor& t : stash) EXPECT_FALSE(t.grad_fn()) << field;
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.carrier()->version(), version) << field;
}

TEST(OperationSemantics_AD_Publication, APublicationFailureAttachesNoNodeToAnyProducedResult) {
  register_failing<20>([](const op::ResolvedInvocation& inv) {  // a strided, not compact, result
    auto c = ext::create<Dev<20>>(4, DType::Float32());
    (void)inv;
    return ext::ProviderResult({Tensor(c, 0, Layout(Shape{2}, Stride{2}))});
  });
  expect_no_node_on_failure<20>("layout");
  register_failing<21>([](const op::ResolvedInvocation& inv) {  // two outputs for one spec
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    return ext::ProviderResult({like_tensor(x, {1, 1}, Shape{2}), like_tensor(x, {1, 1}, Shape{2})});
  });
  expect_no_node_on_failure<21>("count");
  register_failing<22>([](const op::ResolvedInvocation& inv) {  // a right result, but an undeclared write
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    try {
      x.carrier()->set_value(0, Value::from_float32(5));  // refused (docs/extension.md, "Provider writes to operands")
    } catch (const ProviderContractError&) {
    }
    return ext::ProviderResult({like_tensor(x, {2, 4}, Shape{2})});
  });
  Tensor x = dev_tensor<22>({1, 2}, Shape{2});
  stash.clear();
  EXPECT_THROW((void)(*checked_op())({x}), ProviderContractError);
  ASSERT_EQ(stash.size(), 1u);
  EXPECT_FALSE(stash[0].grad_fn());
}

}  // namespace
