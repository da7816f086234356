// Providers cannot leak (issue 24 item 4; operation-semantics.md "Result
// publication validates provider output", "Automatic differentiation belongs
// to the semantic definition"; docs/extension.md "Providers run without a
// graph"): every provider callback runs with graph construction disabled,
// and a published output carries no node but the definition's.
#include <strideweave/strideweave.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// Graph recording needs an operand that tracks gradients; the one place
// this file asks for it.
void track_gradients(Tensor& t) { t.set_requires_grad(true); }

// An accelerator whose storage is a separate arena per instance; the storage
// callbacks record whether graph construction was enabled when they ran.
std::atomic<int> storage_calls_with_graph{0};

template <int N>
class Accel final : public ext::DefinedCarrier {
 public:
  explicit Accel(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider accel_storage() {
  using A = Accel<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) {
        static_cast<A&>(c).arena.assign(static_cast<std::size_t>(n), *storage_zero(c.dtype()));
      },
      [](Carrier& c) { static_cast<A&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) {
        if (is_grad_enabled()) ++storage_calls_with_graph;
        return static_cast<const A&>(c).arena[static_cast<std::size_t>(i)];
      },
      [](Carrier& c, std::int64_t i, const Value& v) {
        if (is_grad_enabled()) ++storage_calls_with_graph;
        static_cast<A&>(c).arena[static_cast<std::size_t>(i)] = v;
      });
}

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

std::shared_ptr<const ext::KernelExecutionInterface> self_of(const ext::KernelExecutionInterface& i) {
  return std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
}

OperationPlan f32_plan(const std::string& name, std::size_t tensors) {
  const SimpleDType& f = DType::Float32();
  return OperationPlan(name, std::vector<OperandPlan>(tensors, OperandPlan::tensor(f, f)), Arithmetic::BINARY32,
                       std::nullopt, nullptr, f);
}
OperationCapability f32_capability(const std::string& name, std::size_t tensors) {
  return OperationCapability::from_plan(f32_plan(name, tensors));
}

// pcontract.double(x) -> 2x (fresh, compact); differentiable: its VJP doubles.
std::shared_ptr<const op::OperationDefinition> double_op() {
  static const auto d = op::define_operation(
      "pcontract.double", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec::compact(call.tensor(0).dtype(), call.tensor(0).shape())});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        std::vector<Value> v = cot[0]->values();
        for (Value& e : v) e = Value::from_float32(2 * e.f);
        return std::vector<std::optional<Tensor>>{Tensor(cot[0]->carrier()->new_like(v, true, &DType::Float32()), 0,
                                                         Layout::compact(cot[0]->shape()))};
      }));
  return d;
}

// pcontract.copy(x) -> a fresh result; NON_DIFFERENTIABLE.
std::shared_ptr<const op::OperationDefinition> copy_op() {
  static const auto d = op::define_operation(
      "pcontract.copy", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      [](const op::BoundOperationCall& call) {
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 1),
                                      {op::ResultSpec::compact(call.tensor(0).dtype(), call.tensor(0).shape())});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}

template <int N>
Tensor accel_tensor(std::vector<float> values) {
  auto c = ext::create<Accel<N>>(static_cast<std::int64_t>(values.size()), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) c->arena[i] = Value::from_float32(values[i]);
  return Tensor(c, 0, Layout::compact(Shape{static_cast<std::int64_t>(values.size())}));
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}

// 2x of operand 0 into a fresh Accel<N> (written through the result's own
// arena: the result is not an operand).
template <int N>
ext::ProviderResult doubled(const op::ResolvedInvocation& inv) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  auto out = ext::create<Accel<N>>(x.size(), DType::Float32());
  const std::vector<Value> v = x.values();
  for (std::size_t i = 0; i < v.size(); ++i) out->arena[i] = Value::from_float32(2 * v[i].f);
  return ext::ProviderResult({Tensor(out, 0, Layout::compact(x.shape()))});
}

using Body = std::function<ext::ResultSubmission(const op::ResolvedInvocation&)>;

// One pattern for `definition` on Accel<N> whose submit runs `body`;
// `on_prepare` (optional) runs in prepare.
template <int N>
void register_pattern(const std::shared_ptr<const op::OperationDefinition>& definition, std::size_t tensors,
                      Body body, std::function<void()> on_prepare = {}) {
  auto p = ext::KernelPattern(
      definition, {f32_capability(definition->name(), tensors)}, "k",
      [body, on_prepare](const op::ResolvedInvocation& inv,
                         const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        if (on_prepare) on_prepare();
        return ext::PreparedKernel(self_of(i), [body, inv = &inv]() -> ext::ResultSubmission { return body(*inv); });
      });
  ext::register_carrier_definition(
      carrier_class<Accel<N>>(),
      ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
}

// ---------------------------------------------------------------- graph construction

TEST(OperationSemantics_ProvidersRunWithoutAGraph, EveryKernelCallbackRunsWithGraphConstructionOffAndItIsRestored) {
  static std::vector<std::pair<std::string, bool>> seen;
  static std::atomic<bool> fail{false};
  auto p = ext::KernelPattern(
      double_op(), {f32_capability("pcontract.double", 1)}, "k",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        seen.emplace_back("prepare", is_grad_enabled());
        return ext::PreparedKernel(self_of(i), [inv = &inv]() -> ext::ResultSubmission {
          seen.emplace_back("submit", is_grad_enabled());
          return ext::ProviderCompletion<ext::ProviderResult>::deferred([inv] {
            seen.emplace_back("wait", is_grad_enabled());
            if (fail) throw RuntimeError("device lost (test)");
            return doubled<1>(*inv);
          });
        });
      });
  ext::register_carrier_definition(
      carrier_class<Accel<1>>(),
      ext::CarrierDefinition(accel_storage<1>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
  Tensor x = accel_tensor<1>({1, 2});
  track_gradients(x);
  const Tensor y = (*double_op())({x})[0];
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{{"prepare", false}, {"submit", false}, {"wait", false}}));
  EXPECT_TRUE(is_grad_enabled());
  ASSERT_TRUE(y.autograd_ctx());  // the call itself still records
  EXPECT_EQ(y.autograd_ctx()->name(), "pcontract.double");
  // Restored after a failure too, and to the caller's own state.
  fail = true;
  EXPECT_THROW((*double_op())({x}), RuntimeError);
  EXPECT_TRUE(is_grad_enabled());
  {
    NoGradGuard off;
    EXPECT_THROW((*double_op())({x}), RuntimeError);
    EXPECT_FALSE(is_grad_enabled());
  }
  EXPECT_TRUE(is_grad_enabled());
}

template <int N>
class Pair final : public ext::DefinedDependentCarrier {
 public:
  explicit Pair(ext::Construction key) : DefinedDependentCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider pair_storage() {
  using P = Pair<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const P&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<P&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
      [](Carrier& c) { static_cast<P&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const P&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<P&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

TEST(OperationSemantics_ProvidersRunWithoutAGraph, CompositeResultCarriersPrepareAndSubmitRunWithGraphConstructionOff) {
  static std::vector<std::pair<std::string, bool>> seen;
  using P = Pair<2>;
  ext::CompositeProvider composite(
      [](const Carrier&) { return std::vector{f32_capability("pcontract.double", 1)}; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        seen.emplace_back("result_carriers", is_grad_enabled());
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
        seen.emplace_back("prepare", is_grad_enabled());
        return ext::PreparedComposite([inv = &inv]() -> ext::ResultSubmission {
          seen.emplace_back("submit", is_grad_enabled());
          const Tensor& x = std::get<Tensor>(inv->operands()[0]);
          std::vector<float> v;
          for (const Value& e : x.values()) v.push_back(2 * e.f);
          return ext::ProviderResult({make_tensor<CPU>(std::span<const float>(v), Shape{x.size()})});
        });
      });
  ext::register_carrier_definition(carrier_class<P>(), ext::CarrierDefinition(pair_storage<2>(), std::nullopt, {}, composite));
  Tensor x(ext::create<P>(2, DType::Float32()), 0, Layout::compact(Shape{2}));
  track_gradients(x);
  const Tensor y = (*double_op())({x})[0];
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{
                      {"result_carriers", false}, {"prepare", false}, {"submit", false}}));
  EXPECT_TRUE(is_grad_enabled());
  ASSERT_TRUE(y.autograd_ctx());
  EXPECT_EQ(y.autograd_ctx()->name(), "pcontract.double");
}

TEST(OperationSemantics_ProvidersRunWithoutAGraph, StorageCallbacksTheFrameworkCallsInsideAnOperationRunWithoutAGraph) {
  // The caller-provided output is read and written by the framework after
  // publication validation, through the storage provider's callbacks.
  register_pattern<3>(double_op(), 1, [](const op::ResolvedInvocation& inv) { return doubled<3>(inv); });
  const Tensor x = accel_tensor<3>({1, 2});
  const Tensor out = accel_tensor<3>({0, 0});
  storage_calls_with_graph = 0;
  (*double_op())({x}, {}, into(out));
  EXPECT_EQ(storage_calls_with_graph.load(), 0);
  EXPECT_EQ(floats(out), (std::vector<float>{2, 4}));
  EXPECT_TRUE(is_grad_enabled());
}

// ---------------------------------------------------------------- published nodes

TEST(OperationSemantics_ResultPublication, ANonDifferentiableResultThatIsAViewOfAnOperandCarriesNoNode) {
  // The kernel hands back a distinct reshaped view of its operand (allowed
  // without alias_of); the view of a gradient-tracking tensor must not bring
  // a "reshape" node into the published result.
  register_pattern<4>(copy_op(), 1, [](const op::ResolvedInvocation& inv) {
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    return ext::ProviderResult({x.reshape(x.shape())});
  });
  Tensor x = accel_tensor<4>({1, 2});
  track_gradients(x);
  const Tensor y = (*copy_op())({x})[0];
  EXPECT_FALSE(y.is(x));
  EXPECT_EQ(y.carrier(), x.carrier());
  EXPECT_FALSE(y.autograd_ctx()) << y.autograd_ctx()->name();
  EXPECT_TRUE(x.autograd_ctx() == nullptr);  // the operand's own state is untouched
}

TEST(OperationSemantics_ResultPublication, AKernelThatReenablesGraphConstructionPublishesOnlyTheDefinitionsNode) {
  // The kernel turns graph construction back on and returns a recorded view:
  // publication drops every node but the definition's.
  const auto view_with_graph = [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    const GradModeGuard on(true);
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    const Tensor v = x.reshape(x.shape());
    EXPECT_TRUE(v.autograd_ctx());  // recorded inside the kernel
    return ext::ProviderResult({v});
  };
  register_pattern<5>(copy_op(), 1, view_with_graph);
  register_pattern<6>(double_op(), 1, view_with_graph);
  Tensor x = accel_tensor<5>({1, 2});
  track_gradients(x);
  EXPECT_FALSE((*copy_op())({x})[0].autograd_ctx());  // NON_DIFFERENTIABLE: none
  Tensor w = accel_tensor<6>({1, 2});
  track_gradients(w);
  const Tensor recorded = (*double_op())({w})[0];
  ASSERT_TRUE(recorded.autograd_ctx());
  EXPECT_EQ(recorded.autograd_ctx()->name(), "pcontract.double");  // the definition's, not "reshape"
  NoGradGuard off;
  EXPECT_FALSE((*double_op())({w})[0].autograd_ctx());  // unrecorded call: none
}

}  // namespace
