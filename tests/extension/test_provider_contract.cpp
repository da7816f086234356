// Providers cannot leak or half-publish (issue 24 item 4; operation-semantics.md
// "Result publication validates provider output", "Automatic differentiation
// belongs to the semantic definition"; carrier-extension R4, R8; docs/extension.md
// "Providers run without a graph" and "Provider writes to operands"):
//   - every provider callback runs with graph construction disabled, and a
//     published output carries no node but the definition's;
//   - a public write to an operand's carrier during provider execution is
//     refused when the operation does not declare it mutated, and logged
//     (un-versioned) when it does, so a failed call leaves every operand's
//     values and version as they were and a declared mutation advances the
//     version exactly once;
//   - publication refuses a new Tensor over an alias_of operand's storage,
//     and checks every mutated carrier before stepping any version.
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

// Graph recording needs a differentiable operand under grad mode
// (core-concepts 6.2): a Float32 tensor needs no mark; kept as the one place
// this file states it.
void track_gradients(Tensor& t) { (void)t; }

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

// pcontract.axpy_(y, x): y += x in place; the result is y itself (alias_of 0,
// mutated {0}).
std::shared_ptr<const op::OperationDefinition> axpy_op() {
  static const auto d = op::define_operation(
      "pcontract.axpy_",
      op::OperationSchema({op::OperandSpec("y", op::OperandKind::TENSOR), op::OperandSpec("x", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& y = call.tensor(0);
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 2),
                                      {op::ResultSpec(y.dtype(), y.shape(), y.layout(), 0)}, {0});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}

// pcontract.both_(a, b): mutates a and b in place; the result is a itself.
std::shared_ptr<const op::OperationDefinition> both_op() {
  static const auto d = op::define_operation(
      "pcontract.both_",
      op::OperationSchema({op::OperandSpec("a", op::OperandKind::TENSOR), op::OperandSpec("b", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& a = call.tensor(0);
        return op::ResolvedInvocation(call, f32_plan(call.definition().name(), 2),
                                      {op::ResultSpec(a.dtype(), a.shape(), a.layout(), 0)}, {0, 1});
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

// The call raises ProviderContractError naming `field`; returns its message.
std::string expect_error(const std::function<void()>& call, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "expected ProviderContractError(" << field << ")";
  } catch (const ProviderContractError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    return e.what();
  }
  return "";
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
  // publication validation, through the storage provider's callbacks. Grad
  // mode is on for the caller; the operation is NON_DIFFERENTIABLE (a
  // differentiable call cannot write a caller output under grad mode, see
  // docs/autograd.md), so only the framework's own switch keeps the
  // callbacks graph-free.
  register_pattern<3>(copy_op(), 1, [](const op::ResolvedInvocation& inv) { return doubled<3>(inv); });
  const Tensor x = accel_tensor<3>({1, 2});
  const Tensor out = accel_tensor<3>({0, 0});
  storage_calls_with_graph = 0;
  ASSERT_TRUE(is_grad_enabled());
  (*copy_op())({x}, {}, into(out));
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

// ---------------------------------------------------------------- provider writes to operands

enum class Write { set_value, write_slots, scatter, bump_version };
const char* name_of(Write w) {
  switch (w) {
    case Write::set_value: return "set_value";
    case Write::write_slots: return "write_slots";
    case Write::scatter: return "scatter";
    case Write::bump_version: return "bump_version";
  }
  return "?";
}

// A public write of 100 into slot 0 of `t`'s carrier, by the path `how`.
void public_write(const Tensor& t, Write how) {
  Carrier& c = *t.carrier();
  const Value hundred = Value::from_float32(100);
  switch (how) {
    case Write::set_value: c.set_value(0, hundred); break;
    case Write::write_slots: {
      const std::int64_t slot = 0;
      c.write_slots(std::span(&slot, 1), std::span(&hundred, 1));
      break;
    }
    case Write::scatter: {
      const Tensor source(c.new_like(std::vector<Value>{hundred}), 0, Layout::compact(Shape{1}));
      c.scatter(source, Tensor(t.carrier(), 0, Layout::compact(Shape{1})), Layout::compact(Shape{1}));
      break;
    }
    case Write::bump_version: c.bump_version(); break;
  }
}

template <int N>
void check_undeclared_write_is_refused(Write how) {
  SCOPED_TRACE(name_of(how));
  static std::atomic<int> refusals{0};
  refusals = 0;
  register_pattern<N>(double_op(), 1, [how](const op::ResolvedInvocation& inv) {
    try {
      public_write(std::get<Tensor>(inv.operands()[0]), how);
    } catch (const ProviderContractError& e) {  // a provider that swallows the refusal gains nothing
      EXPECT_EQ(e.field(), "mutation");
      ++refusals;
    }
    return doubled<N>(inv);
  });
  const Tensor x = accel_tensor<N>({1, 2});
  const auto version = x.carrier()->version();
  expect_error([&] { (*double_op())({x}); }, "mutation");
  EXPECT_EQ(refusals.load(), 1);
  EXPECT_EQ(floats(x), (std::vector<float>{1, 2}));
  EXPECT_EQ(x.carrier()->version(), version);
  // The guard ends with the call.
  x.carrier()->set_value(0, Value::from_float32(5));
  EXPECT_EQ(x.carrier()->version(), version + 1);
}

TEST(OperationSemantics_ResultPublication_ProviderWrites, AnUndeclaredPublicWriteIsRefusedBeforeAnythingIsWritten) {
  check_undeclared_write_is_refused<10>(Write::set_value);
  check_undeclared_write_is_refused<11>(Write::write_slots);
  check_undeclared_write_is_refused<12>(Write::scatter);
  check_undeclared_write_is_refused<13>(Write::bump_version);
}

TEST(OperationSemantics_ResultPublication_ProviderWrites, AWriteFromAnotherThreadOfTheProviderIsRefusedToo) {
  register_pattern<14>(double_op(), 1, [](const op::ResolvedInvocation& inv) {
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    std::thread worker([&x] {
      try {
        x.carrier()->set_value(1, Value::from_float32(100));
      } catch (const ProviderContractError&) {
      }
    });
    worker.join();
    return doubled<14>(inv);
  });
  const Tensor x = accel_tensor<14>({1, 2});
  const auto version = x.carrier()->version();
  expect_error([&] { (*double_op())({x}); }, "mutation");
  EXPECT_EQ(floats(x), (std::vector<float>{1, 2}));
  EXPECT_EQ(x.carrier()->version(), version);
}

// y += x through `how` (set_value per slot, or one write_slots), returning y.
ext::ProviderResult axpy_through(const op::ResolvedInvocation& inv, Write how) {
  const Tensor& y = std::get<Tensor>(inv.operands()[0]);
  const Tensor& x = std::get<Tensor>(inv.operands()[1]);
  const std::vector<Value> yv = y.values(), xv = x.values();
  std::vector<std::int64_t> slots;
  std::vector<Value> sums;
  for (std::size_t k = 0; k < yv.size(); ++k) {
    slots.push_back(y.offset() + y.layout()(static_cast<std::int64_t>(k)));
    sums.push_back(Value::from_float32(yv[k].f + xv[k].f));
  }
  if (how == Write::write_slots) {
    y.carrier()->write_slots(slots, sums);
  } else {
    for (std::size_t k = 0; k < slots.size(); ++k) y.carrier()->set_value(slots[k], sums[k]);
  }
  return ext::ProviderResult({y});
}

TEST(OperationSemantics_ResultPublication_ProviderWrites, ADeclaredMutationThroughPublicWritesAdvancesTheVersionExactlyOnce) {
  register_pattern<20>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) { return axpy_through(inv, Write::set_value); });
  const Tensor y = accel_tensor<20>({1, 2, 3});
  const Tensor x = accel_tensor<20>({10, 20, 30});
  const auto before = y.carrier()->version(), x_before = x.carrier()->version();
  const Tensor r = (*axpy_op())({y, x})[0];
  EXPECT_TRUE(r.is(y));
  EXPECT_EQ(floats(y), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(y.carrier()->version(), before + 1);  // three set_value calls, one version step
  EXPECT_EQ(x.carrier()->version(), x_before);
  // Aliasing: the non-mutated operand views the mutated carrier, so the
  // declaration covers it; still one step.
  register_pattern<21>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) { return axpy_through(inv, Write::write_slots); });
  const Tensor z = accel_tensor<21>({1, 2, 3, 4});
  const Tensor head(z.carrier(), 0, Layout::compact(Shape{2})), tail(z.carrier(), 2, Layout::compact(Shape{2}));
  const auto z_before = z.carrier()->version();
  (*axpy_op())({head, tail});
  EXPECT_EQ(floats(z), (std::vector<float>{4, 6, 3, 4}));
  EXPECT_EQ(z.carrier()->version(), z_before + 1);
}

TEST(OperationSemantics_ResultPublication_ProviderWrites, ACallThatFailsAfterADeclaredPublicWriteLeavesValuesAndVersion) {
  // The provider writes y through the public path and then fails: by
  // throwing, or by returning a result publication rejects.
  register_pattern<22>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    axpy_through(inv, Write::set_value);
    throw RuntimeError("device lost after the write (test)");
  });
  register_pattern<23>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    axpy_through(inv, Write::write_slots);
    const Tensor& y = std::get<Tensor>(inv.operands()[0]);
    return ext::ProviderResult({Tensor(y.carrier(), y.offset(), y.layout())});  // a new handle, not y itself
  });
  register_pattern<24>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    axpy_through(inv, Write::set_value);
    return ext::ProviderCompletion<ext::ProviderResult>::deferred(
        []() -> ext::ProviderResult { throw RuntimeError("the completion failed (test)"); });
  });
  const auto check = [](const Tensor& y, const Tensor& x, const std::string& field) {
    const auto before = y.carrier()->version();
    if (field.empty()) {
      EXPECT_THROW((*axpy_op())({y, x}), RuntimeError);
    } else {
      expect_error([&] { (*axpy_op())({y, x}); }, field);
    }
    EXPECT_EQ(floats(y), (std::vector<float>{1, 2}));
    EXPECT_EQ(y.carrier()->version(), before);
    EXPECT_EQ(floats(x), (std::vector<float>{10, 20}));
  };
  check(accel_tensor<22>({1, 2}), accel_tensor<22>({10, 20}), "");
  check(accel_tensor<23>({1, 2}), accel_tensor<23>({10, 20}), "alias");
  check(accel_tensor<24>({1, 2}), accel_tensor<24>({10, 20}), "");
}

TEST(OperationSemantics_ResultPublication_ProviderWrites, ADecliningCandidatesPublicWritesAreUndoneBeforeTheNextOne) {
  // carrier-extension R11.5: a decline moves on with no mutation; the next
  // candidate starts from the operand as it was.
  auto writes_then_declines = ext::KernelPattern(
      axpy_op(), {f32_capability("pcontract.axpy_", 2)}, "first",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        std::get<Tensor>(inv.operands()[0]).carrier()->set_value(0, Value::from_float32(1000));
        return ext::Unsupported("changed its mind after writing");
      },
      10);
  auto computes = ext::KernelPattern(
      axpy_op(), {f32_capability("pcontract.axpy_", 2)}, "second",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        return ext::PreparedKernel(self_of(i), [inv = &inv]() -> ext::ResultSubmission {
          return axpy_through(*inv, Write::set_value);
        });
      });
  ext::register_carrier_definition(
      carrier_class<Accel<25>>(),
      ext::CarrierDefinition(accel_storage<25>(),
                             ext::KernelProvider(std::make_shared<Iface>("1"), {writes_then_declines, computes})));
  const Tensor y = accel_tensor<25>({1, 2}), x = accel_tensor<25>({10, 20});
  const auto before = y.carrier()->version();
  (*axpy_op())({y, x});
  EXPECT_EQ(floats(y), (std::vector<float>{11, 22}));
  EXPECT_EQ(y.carrier()->version(), before + 1);
}

// ---------------------------------------------------------------- publication (planted faults)

TEST(OperationSemantics_ResultPublication, ANewTensorOverAnAliasOfOperandsStorageIsAnAliasErrorAndNoVersionMoves) {
  // alias_of names the operand object itself; a distinct Tensor over the
  // same storage is not it (operation-semantics: "an aliased result ... SHALL
  // be the declared operand object").
  register_pattern<30>(axpy_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    const Tensor& y = std::get<Tensor>(inv.operands()[0]);
    return ext::ProviderResult({Tensor(y.carrier(), y.offset(), y.layout())});
  });
  const Tensor y = accel_tensor<30>({1, 2}), x = accel_tensor<30>({3, 4});
  const auto before = y.carrier()->version();
  const std::string what = expect_error([&] { (*axpy_op())({y, x}); }, "alias");
  EXPECT_NE(what.find("alias_of"), std::string::npos) << what;
  EXPECT_NE(what.find("operand 0"), std::string::npos) << what;
  EXPECT_EQ(y.carrier()->version(), before);
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2}));
}

TEST(OperationSemantics_ResultPublication, AKernelReleasingOneOfTwoMutatedCarriersFailsWithTheOtherVersionUnchanged) {
  // Publication checks every declared mutated carrier before it steps any
  // version: a carrier the kernel released fails the call, and the other
  // one's version stays as it was.
  register_pattern<31>(both_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    const Tensor& a = std::get<Tensor>(inv.operands()[0]);
    const Tensor& b = std::get<Tensor>(inv.operands()[1]);
    static_cast<Accel<31>&>(*a.carrier()).arena[0] = Value::from_float32(50);  // through its own storage
    b.carrier()->release();
    return ext::ProviderResult({a});
  });
  const Tensor a = accel_tensor<31>({1, 2}), b = accel_tensor<31>({3, 4});
  const auto before = a.carrier()->version();
  EXPECT_THROW((*both_op())({a, b}), RuntimeError);
  EXPECT_TRUE(b.carrier()->is_released());
  EXPECT_EQ(a.carrier()->version(), before);
  // The same through the public write path: the write is undone too.
  register_pattern<32>(both_op(), 2, [](const op::ResolvedInvocation& inv) -> ext::ResultSubmission {
    const Tensor& first = std::get<Tensor>(inv.operands()[0]);
    first.carrier()->set_value(0, Value::from_float32(50));
    std::get<Tensor>(inv.operands()[1]).carrier()->release();
    return ext::ProviderResult({first});
  });
  const Tensor c = accel_tensor<32>({1, 2}), d = accel_tensor<32>({3, 4});
  const auto c_before = c.carrier()->version();
  EXPECT_THROW((*both_op())({c, d}), RuntimeError);
  EXPECT_EQ(c.carrier()->version(), c_before);
  EXPECT_EQ(floats(c), (std::vector<float>{1, 2}));
}

}  // namespace
