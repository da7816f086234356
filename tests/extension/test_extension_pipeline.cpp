// The definition-backed dispatch pipeline (issue 11 step 4;
// operation-semantics.md "Result publication validates provider output",
// carrier-extension R4, R6.2, R9.2, R11.3-R11.5): a user-defined operation
// executed by kernel patterns of an independent definition-backed carrier
// and by the composite provider of a dependent one.
#include <strideweave/strideweave.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// An accelerator whose storage is a separate arena per instance.
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
      [](const Carrier& c, std::int64_t i) { return static_cast<const A&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<A&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};
class OtherIface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

// pipetest.double(x) -> 2x, Float32, compact; differentiable.
std::shared_ptr<const op::OperationDefinition> double_op() {
  static const auto d = op::define_operation(
      "pipetest.double", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype(), x.dtype())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, x.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(x.dtype(), Shape::of(x.shape().extents()))});
      },
      std::nullopt,
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        std::vector<Value> v = cot[0]->values();
        for (Value& e : v) e = Value::from_float32(2 * e.f);
        return std::vector<std::optional<Tensor>>{Tensor(cot[0]->carrier()->new_like(v, true, &DType::Float32()), 0,
                                                         Layout::compact(Shape::of(cot[0]->shape().extents())))};
      }));
  return d;
}

// pipetest.fill_(x) mutates x in place and returns it (alias_of = 0).
std::shared_ptr<const op::OperationDefinition> fill_op() {
  static const auto d = op::define_operation(
      "pipetest.fill_", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype(), x.dtype())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, x.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec(x.dtype(), x.shape(), x.layout(), 0)}, {0});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}

OperationCapability plan_of(const char* name, const SimpleDType& d = DType::Float32()) {
  return OperationCapability::from_plan(
      OperationPlan(name, {OperandPlan::tensor(d, d)}, Arithmetic::BINARY32, std::nullopt, nullptr, d));
}

struct Counters {
  std::atomic<int> prepare_fast{0}, prepare_generic{0}, submit{0};
};

template <int N>
Tensor accel_tensor(std::vector<float> values) {
  auto c = ext::create<Accel<N>>(static_cast<std::int64_t>(values.size()), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) c->set_value(static_cast<std::int64_t>(i), Value::from_float32(values[i]));
  return Tensor(c, 0, Layout::compact(Shape{static_cast<std::int64_t>(values.size())}));
}

// 2x into a fresh Accel<N> result.
template <int N>
ext::ProviderResult doubled(const op::ResolvedInvocation& inv) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  auto out = ext::create<Accel<N>>(x.size(), DType::Float32());
  for (std::int64_t i = 0; i < x.size(); ++i)
    out->set_value(i, Value::from_float32(2 * x.carrier()->get_value(x.offset() + x.layout()(i)).f));
  return ext::ProviderResult({Tensor(out, 0, Layout::compact(x.shape()))});
}

// Two preference-ordered patterns: "fast" (preference 10) declines inputs of
// more than 4 elements at run time; "generic" runs everything.
template <int N>
void register_accel(Counters& counters, std::shared_ptr<const ext::KernelExecutionInterface> iface) {
  auto fast = ext::KernelPattern(
      double_op(), {plan_of("pipetest.double")}, "fast",
      [&counters](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        ++counters.prepare_fast;
        if (std::get<Tensor>(inv.operands()[0]).size() > 4) return ext::Unsupported("more than 4 elements");
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [&counters, inv = &inv]() -> ext::ResultSubmission {
          ++counters.submit;
          return doubled<N>(*inv);
        });
      },
      10);
  auto generic = ext::KernelPattern(
      double_op(), {plan_of("pipetest.double")}, "generic",
      [&counters](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        ++counters.prepare_generic;
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        // Asynchronous: the result arrives through a deferred completion.
        return ext::PreparedKernel(self, [&counters, inv = &inv]() -> ext::ResultSubmission {
          ++counters.submit;
          return ext::ProviderCompletion<ext::ProviderResult>::deferred([inv] { return doubled<N>(*inv); });
        });
      });
  ext::register_carrier_definition(carrier_class<Accel<N>>(),
                                   ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(iface, {generic, fast})));
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}

TEST(DefinitionPipeline_R11_Selection, PreferredPatternRunsAndRuntimeRejectionFallsBack) {
  Counters counters;
  register_accel<1>(counters, std::make_shared<Iface>("1"));
  const Tensor small = accel_tensor<1>({1, 2, 3});
  const std::vector<Tensor> r = (*double_op())({small});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(floats(r[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(r[0].carrier()->exact_class(), carrier_class<Accel<1>>());
  EXPECT_EQ(counters.prepare_fast.load(), 1);
  EXPECT_EQ(counters.prepare_generic.load(), 0);  // the preferred pattern accepted
  const Tensor big = accel_tensor<1>({1, 2, 3, 4, 5});
  EXPECT_EQ(floats((*double_op())({big})[0]), (std::vector<float>{2, 4, 6, 8, 10}));
  EXPECT_EQ(counters.prepare_fast.load(), 2);
  EXPECT_EQ(counters.prepare_generic.load(), 1);  // runtime fallback, through a completion
  EXPECT_EQ(counters.submit.load(), 2);           // one submission per call
  EXPECT_EQ(small.carrier()->version(), 3u);      // operands untouched (3 set_value at creation)
}

TEST(DefinitionPipeline_R11_Selection, NoStaticMatchIsUnsupportedBeforeAnyPrepare) {
  Counters counters;
  register_accel<2>(counters, std::make_shared<Iface>("1"));
  auto c = ext::create<Accel<2>>(2, DType::Int32());
  const Tensor ints(c, 0, Layout::compact(Shape{2}));
  EXPECT_THROW((*double_op())({ints}), UnsupportedOperationPlan);
  EXPECT_EQ(counters.prepare_fast.load() + counters.prepare_generic.load(), 0);
}

template <int N>
void register_declining(std::vector<std::string> reasons) {
  std::vector<ext::KernelPattern> patterns;
  for (std::size_t k = 0; k < reasons.size(); ++k)
    patterns.emplace_back(double_op(), std::vector{plan_of("pipetest.double")}, fmt::format("k{}", k),
                          [why = reasons[k]](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
                              -> ext::KernelPattern::Prepared { return ext::Unsupported(why); },
                          static_cast<std::int64_t>(reasons.size() - k));
  ext::register_carrier_definition(
      carrier_class<Accel<N>>(),
      ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), patterns)));
}

TEST(DefinitionPipeline_R11_Selection, AllCandidatesDecliningCombineEveryReasonInOrder) {
  register_declining<3>({"shape not tiled", "no workspace"});
  const Tensor x = accel_tensor<3>({1});
  try {
    (*double_op())({x});
    FAIL() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    const std::string what = e.what();
    const auto first = what.find("shape not tiled"), second = what.find("no workspace");
    ASSERT_NE(first, std::string::npos) << what;
    ASSERT_NE(second, std::string::npos) << what;
    EXPECT_LT(first, second) << what;
  }
}

TEST(DefinitionPipeline_R11_Selection, AnExceptionFromPrepareIsTerminal) {
  std::atomic<int> second{0};
  auto boom = ext::KernelPattern(double_op(), {plan_of("pipetest.double")}, "boom",
                                 [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
                                     -> ext::KernelPattern::Prepared { throw ValueError("compiler crashed"); },
                                 5);
  auto next = ext::KernelPattern(double_op(), {plan_of("pipetest.double")}, "next",
                                 [&second](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
                                     -> ext::KernelPattern::Prepared {
                                   ++second;
                                   return ext::Unsupported("never reached");
                                 });
  ext::register_carrier_definition(
      carrier_class<Accel<4>>(),
      ext::CarrierDefinition(accel_storage<4>(), ext::KernelProvider(std::make_shared<Iface>("1"), {boom, next})));
  EXPECT_THROW((*double_op())({accel_tensor<4>({1})}), ValueError);
  EXPECT_EQ(second.load(), 0);
}

TEST(DefinitionPipeline_R9_Interface, PreparedKernelForAnotherInterfaceIsTypeErrorBeforeSubmission) {
  std::atomic<int> submits{0};
  auto other = std::make_shared<OtherIface>("1");
  auto p = ext::KernelPattern(double_op(), {plan_of("pipetest.double")}, "wrong_iface",
                              [&, other](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&)
                                  -> ext::KernelPattern::Prepared {
                                return ext::PreparedKernel(other, [&submits, inv = &inv]() -> ext::ResultSubmission {
                                  ++submits;
                                  return doubled<5>(*inv);
                                });
                              });
  ext::register_carrier_definition(
      carrier_class<Accel<5>>(),
      ext::CarrierDefinition(accel_storage<5>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
  EXPECT_THROW((*double_op())({accel_tensor<5>({1})}), TypeError);
  EXPECT_EQ(submits.load(), 0);
}

// A pattern whose submit returns `make(invocation)`.
template <int N>
void register_returning(std::function<ext::ProviderResult(const op::ResolvedInvocation&)> make,
                        std::shared_ptr<const op::OperationDefinition> definition = double_op(),
                        const char* name = "pipetest.double") {
  auto p = ext::KernelPattern(definition, {plan_of(name)}, "k",
                              [make](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i)
                                  -> ext::KernelPattern::Prepared {
                                auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
                                return ext::PreparedKernel(self, [make, inv = &inv]() -> ext::ResultSubmission {
                                  return make(*inv);
                                });
                              });
  ext::register_carrier_definition(
      carrier_class<Accel<N>>(),
      ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
}

void expect_contract_error(const std::function<void()>& call, const std::string& field) {
  try {
    call();
    FAIL() << "expected ProviderContractError(" << field << ")";
  } catch (const ProviderContractError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(DefinitionPipeline_Publication, EveryFieldIsValidatedAndNothingIsPublished) {
  register_returning<10>([](const op::ResolvedInvocation& inv) {
    auto r = doubled<10>(inv);
    return ext::ProviderResult({r.outputs()[0], r.outputs()[0]});
  });
  expect_contract_error([] { (*double_op())({accel_tensor<10>({1})}); }, "count");

  register_returning<11>([](const op::ResolvedInvocation&) {
    return ext::ProviderResult({make_tensor<CPU>({2.0f}, Shape{1})});
  });
  expect_contract_error([] { (*double_op())({accel_tensor<11>({1})}); }, "carrier");

  register_returning<12>([](const op::ResolvedInvocation&) {
    auto c = ext::create<Accel<12>>(1, DType::Int32());
    return ext::ProviderResult({Tensor(c, 0, Layout::compact(Shape{1}))});
  });
  expect_contract_error([] { (*double_op())({accel_tensor<12>({1})}); }, "dtype");

  register_returning<13>([](const op::ResolvedInvocation&) {
    auto c = ext::create<Accel<13>>(2, DType::Float32());
    return ext::ProviderResult({Tensor(c, 0, Layout::compact(Shape{2}))});
  });
  expect_contract_error([] { (*double_op())({accel_tensor<13>({1})}); }, "shape");

  register_returning<14>([](const op::ResolvedInvocation&) {
    auto c = ext::create<Accel<14>>(4, DType::Float32());
    return ext::ProviderResult({Tensor(c, 0, Layout(Shape{2}, Stride{2}))});  // strided, not compact
  });
  expect_contract_error([] { (*double_op())({accel_tensor<14>({1, 2})}); }, "layout");

  register_returning<15>([](const op::ResolvedInvocation& inv) {
    return ext::ProviderResult({std::get<Tensor>(inv.operands()[0])});  // the operand, undeclared
  });
  expect_contract_error([] { (*double_op())({accel_tensor<15>({1})}); }, "alias");

  register_returning<16>([](const op::ResolvedInvocation& inv) {
    auto r = doubled<16>(inv);
    r.outputs()[0].carrier()->release();
    return r;
  });
  expect_contract_error([] { (*double_op())({accel_tensor<16>({1})}); }, "physical size");

  register_returning<17>([](const op::ResolvedInvocation& inv) {
    std::get<Tensor>(inv.operands()[0]).carrier()->set_value(0, Value::from_float32(9));  // undeclared mutation
    return doubled<17>(inv);
  });
  expect_contract_error([] { (*double_op())({accel_tensor<17>({1})}); }, "mutation");
}

TEST(DefinitionPipeline_Publication, DeclaredMutationAdvancesTheVersionOnceAndAliasIsTheOperandItself) {
  register_returning<20>(
      [](const op::ResolvedInvocation& inv) {
        const Tensor& x = std::get<Tensor>(inv.operands()[0]);
        auto& arena = static_cast<Accel<20>&>(*x.carrier()).arena;
        for (Value& v : arena) v = Value::from_float32(7);  // writes through its own storage, no version
        return ext::ProviderResult({x});
      },
      fill_op(), "pipetest.fill_");
  const Tensor x = accel_tensor<20>({1, 2});
  const auto before = x.carrier()->version();
  const std::vector<Tensor> r = (*fill_op())({x});
  EXPECT_TRUE(r[0].is(x));
  EXPECT_EQ(x.carrier()->version(), before + 1);
  EXPECT_EQ(floats(x), (std::vector<float>{7, 7}));
}

TEST(DefinitionPipeline_Completion, ASubmitFailureThroughTheCompletionIsTerminalAndPublishesNothing) {
  auto p = ext::KernelPattern(double_op(), {plan_of("pipetest.double")}, "k",
                              [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface& i)
                                  -> ext::KernelPattern::Prepared {
                                auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
                                return ext::PreparedKernel(self, []() -> ext::ResultSubmission {
                                  return ext::ProviderCompletion<ext::ProviderResult>::deferred(
                                      []() -> ext::ProviderResult { throw RuntimeError("device lost"); });
                                });
                              });
  ext::register_carrier_definition(
      carrier_class<Accel<21>>(),
      ext::CarrierDefinition(accel_storage<21>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
  const Tensor x = accel_tensor<21>({1});
  const auto before = x.carrier()->version();
  EXPECT_THROW((*double_op())({x}), RuntimeError);
  EXPECT_EQ(x.carrier()->version(), before);
}

TEST(DefinitionPipeline_Out, AUserDefinedOperationWritesIntoACallerOutputAfterValidation) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  Counters counters;
  register_accel<22>(counters, std::make_shared<Iface>("1"));
  const Tensor x = accel_tensor<22>({1, 2});
  const Tensor out = accel_tensor<22>({0, 0});
  const auto before = out.carrier()->version();
  const std::vector<Tensor> r = (*double_op())({x}, {}, into(out));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].is(out));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 4}));
  EXPECT_EQ(out.carrier()->version(), before + 1);
  // A wrong shape is refused before any prepare.
  const int prepared = counters.prepare_fast.load();
  EXPECT_THROW((*double_op())({x}, {}, into(accel_tensor<22>({0}))), ValueError);
  EXPECT_EQ(counters.prepare_fast.load(), prepared);
}

TEST(DefinitionPipeline_Autograd, TheLastStageAttachesOneNodeAfterPublication) {
  // issue 11 step 4: ... -> publication -> autograd attachment (step 5).
  Counters counters;
  register_accel<23>(counters, std::make_shared<Iface>("1"));
  Tensor x = accel_tensor<23>({1, 2});
  const Tensor y = (*double_op())({x})[0];
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "pipetest.double");
  y.backward(accel_tensor<23>({1, 3}));
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{2, 6}));
  {
    NoGradGuard guard;
    EXPECT_FALSE((*double_op())({x})[0].grad_fn());
  }
}

// ---------------------------------------------------------------- dependent carriers

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

TEST(DefinitionPipeline_R6_Composite, DependentCarrierExecutesThroughItsCompositeProvider) {
  using P = Pair<30>;
  std::atomic<int> prepares{0};
  ext::CompositeProvider composite(
      [](const Carrier&) { return std::vector{plan_of("pipetest.double")}; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [&prepares](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
        ++prepares;
        if (std::get<Tensor>(inv.operands()[0]).size() > 2) return ext::Unsupported("tiles of 2 only");
        return ext::PreparedComposite([inv = &inv]() -> ext::ResultSubmission {
          const Tensor& x = std::get<Tensor>(inv->operands()[0]);
          std::vector<float> v;
          for (const Value& e : x.values()) v.push_back(2 * e.f);
          return ext::ProviderResult({make_tensor<CPU>(std::span<const float>(v), Shape{x.size()})});
        });
      });
  ext::register_carrier_definition(carrier_class<P>(),
                                   ext::CarrierDefinition(pair_storage<30>(), std::nullopt, {}, composite));
  auto c = ext::create<P>(2, DType::Float32());
  c->set_value(1, Value::from_float32(3));
  const std::vector<Tensor> r = (*double_op())({Tensor(c, 0, Layout::compact(Shape{2}))});
  EXPECT_EQ(r[0].carrier()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(floats(r[0]), (std::vector<float>{0, 6}));
  auto big = ext::create<P>(3, DType::Float32());
  EXPECT_THROW((*double_op())({Tensor(big, 0, Layout::compact(Shape{3}))}), UnsupportedOperationPlan);
  EXPECT_EQ(prepares.load(), 2);
}

TEST(DefinitionPipeline_R6_Composite, TheOuterCallIsTheOneNodeAndGradientsReturnToTheOperandsClass) {
  // operation-semantics R9: the outer operation remains the sole visible
  // autograd node; its results live on CPU (result_carriers), the VJP
  // computes there, and the gradient reaches the operand on its own class.
  using P = Pair<32>;
  ext::CompositeProvider composite(
      [](const Carrier&) { return std::vector{plan_of("pipetest.double")}; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
        return ext::PreparedComposite([inv = &inv]() -> ext::ResultSubmission {
          const Tensor& x = std::get<Tensor>(inv->operands()[0]);
          std::vector<float> v;
          for (const Value& e : x.values()) v.push_back(2 * e.f);
          return ext::ProviderResult({make_tensor<CPU>(std::span<const float>(v), Shape{x.size()})});
        });
      });
  ext::register_carrier_definition(carrier_class<P>(),
                                   ext::CarrierDefinition(pair_storage<32>(), std::nullopt, {}, composite));
  auto c = ext::create<P>(2, DType::Float32());
  c->set_value(1, Value::from_float32(3));
  Tensor x(c, 0, Layout::compact(Shape{2}));
  const Tensor y = (*double_op())({x})[0];
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "pipetest.double");
  y.backward(make_tensor<CPU>({1.0f, 5.0f}, Shape{2}));
  ASSERT_TRUE(x.grad());
  EXPECT_EQ(x.grad()->carrier()->exact_class(), carrier_class<P>());
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{2, 10}));
}

TEST(DefinitionPipeline_R6_Composite, ResultCarriersOfTheWrongCountIsValueErrorBeforePrepare) {
  using P = Pair<31>;
  std::atomic<int> prepares{0};
  ext::CompositeProvider composite(
      [](const Carrier&) { return std::vector{plan_of("pipetest.double")}; },
      [](const Carrier&, const op::ResolvedInvocation&) { return std::vector<CarrierClass>{}; },
      [&prepares](const Carrier&, const op::ResolvedInvocation&) -> ext::CompositeProvider::Prepared {
        ++prepares;
        return ext::Unsupported("unreached");
      });
  ext::register_carrier_definition(carrier_class<P>(),
                                   ext::CarrierDefinition(pair_storage<31>(), std::nullopt, {}, composite));
  auto c = ext::create<P>(1, DType::Float32());
  EXPECT_THROW((*double_op())({Tensor(c, 0, Layout::compact(Shape{1}))}), ValueError);
  EXPECT_EQ(prepares.load(), 0);
}

}  // namespace

namespace {

// ---------------------------------------------------------------- built-in operations

// A kernel pattern for the built-in `add` (Float32 + Float32) on Accel<N>:
// the invocation is the built-in definition's (its lowering's plan and the
// published result's compact spec).
template <int N>
void register_accel_add(std::atomic<int>& prepares) {
  const auto add_plan = OperationCapability::from_plan(
      resolve_operation_plan("add", {PlanOperand(DType::Float32()), PlanOperand(DType::Float32())}));
  auto p = ext::KernelPattern(
      op::get_definition("add"), {add_plan}, "accel_add",
      [&prepares](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        ++prepares;
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
          const Tensor& a = std::get<Tensor>(inv->operands()[0]);
          const Tensor& b = std::get<Tensor>(inv->operands()[1]);
          const op::ResultSpec& spec = inv->results()[0];
          auto out = ext::create<Accel<N>>(spec.shape().size(), spec.dtype());
          for (std::int64_t k = 0; k < spec.shape().size(); ++k)  // same shapes in this test
            out->set_value(k, Value::from_float32(a.carrier()->get_value(a.offset() + a.layout()(k)).f +
                                                  b.carrier()->get_value(b.offset() + b.layout()(k)).f));
          return ext::ProviderResult({Tensor(out, 0, spec.layout())});
        });
      });
  ext::register_carrier_definition(
      carrier_class<Accel<N>>(),
      ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
}

TEST(DefinitionPipeline_Builtins, BuiltInOperationRunsThroughThePatternByDefinitionAndByName) {
  std::atomic<int> prepares{0};
  register_accel_add<40>(prepares);
  const Tensor a = accel_tensor<40>({1, 2}), b = accel_tensor<40>({10, 20});
  const std::vector<Tensor> by_definition = (*op::get_definition("add"))({a, b});
  EXPECT_EQ(floats(by_definition[0]), (std::vector<float>{11, 22}));
  EXPECT_EQ(by_definition[0].carrier()->exact_class(), carrier_class<Accel<40>>());
  const std::vector<CallOperand> operands{a, b};
  const CallResult by_name = call_operation("add", operands);
  EXPECT_EQ(floats(by_name.results[0]), (std::vector<float>{11, 22}));
  EXPECT_EQ(by_name.plans[0].operation(), "add");
  EXPECT_EQ(prepares.load(), 2);
  // A plan the class does not claim is refused by the gate, before prepare.
  EXPECT_THROW((*op::get_definition("sub"))({a, b}), UnsupportedOperationPlan);
  EXPECT_EQ(prepares.load(), 2);
}

TEST(DefinitionPipeline_Builtins, ABuiltInCallAttachesItsNodeAndItsBackwardRunsOnTheCarrier) {
  std::atomic<int> prepares{0};
  register_accel_add<42>(prepares);
  Tensor a = accel_tensor<42>({1, 2});
  const Tensor b = accel_tensor<42>({10, 20});
  const Tensor y = (*op::get_definition("add"))({a, b})[0];
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "add");
  y.backward(accel_tensor<42>({3, 5}));
  ASSERT_TRUE(a.grad().has_value());
  EXPECT_EQ(a.grad()->carrier()->exact_class(), carrier_class<Accel<42>>());
  EXPECT_EQ(floats(*a.grad()), (std::vector<float>{3, 5}));
  // Issue 24 item 4: the VJP computes from the saved context; the forward's
  // pattern is not prepared again in backward.
  EXPECT_EQ(prepares.load(), 1);
}

TEST(DefinitionPipeline_Builtins, TypedFunctionReachesTheCarrierThroughTheBuiltInDefinition) {
  std::atomic<int> prepares{0};
  register_accel_add<41>(prepares);
  const Tensor a = accel_tensor<41>({1, 2});
  const Tensor r = add(a, a);
  EXPECT_EQ(floats(r), (std::vector<float>{2, 4}));
  EXPECT_EQ(r.carrier()->exact_class(), carrier_class<Accel<41>>());
  EXPECT_EQ(floats(a + a), (std::vector<float>{2, 4}));
  EXPECT_EQ(prepares.load(), 2);
  // A plan without a pattern: the gate's UnsupportedOperationPlan, before prepare.
  EXPECT_THROW((void)sub(a, a), UnsupportedOperationPlan);
  EXPECT_EQ(prepares.load(), 2);
}

}  // namespace

namespace {

// ---------------------------------------------------------------- explain (issue 11 step 8)

TEST(Explain_Step8, CandidatesInPreferenceOrderWithRejectionReasonsAndWhatRan) {
  Counters counters;
  register_accel<50>(counters, std::make_shared<Iface>("1"));
  const Explanation e = explain(*double_op(), {accel_tensor<50>({1, 2, 3, 4, 5})});
  EXPECT_FALSE(e.error_type) << *e.error_message;
  EXPECT_EQ(e.route, "kernel patterns");
  ASSERT_EQ(e.candidates.size(), 2u);
  EXPECT_EQ(e.candidates[0].kernel_id, "fast");
  EXPECT_EQ(e.candidates[0].preference, 10);
  EXPECT_EQ(e.candidates[0].outcome, CandidateTrace::Outcome::Declined);
  EXPECT_EQ(e.candidates[0].reason, "more than 4 elements");
  EXPECT_EQ(e.candidates[1].kernel_id, "generic");
  EXPECT_EQ(e.candidates[1].source, "built-in");
  EXPECT_EQ(e.candidates[1].outcome, CandidateTrace::Outcome::Ran);
  EXPECT_EQ(e.ran, "generic");
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(floats(e.outputs[0]), (std::vector<float>{2, 4, 6, 8, 10}));
  ASSERT_TRUE(e.admitted_by);
  EXPECT_TRUE(e.admitted_by->matches(*e.plan));
  EXPECT_EQ(e.bound_call, fmt::format("pipetest.double(x=tensor float32 (5) on {})", carrier_class<Accel<50>>().name()));
  const std::string text = to_text(e);
  EXPECT_NE(text.find("candidate:  fast (built-in, preference 10): declined: more than 4 elements"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ran:        generic"), std::string::npos) << text;
}

TEST(Explain_Step8, AFailingStepEndsTheRecordWithItsError) {
  register_declining<51>({"no tiles", "no workspace"});
  const Explanation e = explain(*double_op(), {accel_tensor<51>({1})});
  ASSERT_TRUE(e.error_type);
  EXPECT_EQ(*e.error_type, "UnsupportedOperationPlan");
  ASSERT_EQ(e.candidates.size(), 2u);
  EXPECT_EQ(e.candidates[0].outcome, CandidateTrace::Outcome::Declined);
  EXPECT_EQ(e.candidates[1].reason, "no workspace");
  EXPECT_FALSE(e.ran);
  EXPECT_TRUE(e.outputs.empty());
  // A binding error stops before the plan.
  const Explanation unbound = explain(*double_op(), {});
  EXPECT_EQ(unbound.error_type, std::optional<std::string>("TypeError"));
  EXPECT_FALSE(unbound.plan);
  EXPECT_TRUE(unbound.bound_call.empty());
}

TEST(Explain_Step8, DefinitionFreeCarrierRunsItsKernelTable) {
  const Explanation e = explain(*op::get_definition("mul"), {make_tensor<CPU>({1.5f}, Shape{1}), WeakScalar(2)});
  EXPECT_FALSE(e.error_type);
  EXPECT_EQ(e.route, "kernel table");
  EXPECT_TRUE(e.candidates.empty());
  EXPECT_EQ(e.carrier, "CPU");
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(floats(e.outputs[0]), (std::vector<float>{3}));
}

}  // namespace

namespace {

// ---------------------------------------------------------------- fault injection (issue 11 standards)
//
// Each provider callback is made to throw; the exception reaches the caller
// unchanged, and nothing was published: no result, no version advanced, the
// registries answer as before.

enum class Fault { None, SupportsDType, Allocate, Read, Write, Prepare, Submit, Wait, Capabilities, ResultCarriers };
std::atomic<Fault> fault{Fault::None};

struct InjectedFault : RuntimeError {
  using RuntimeError::RuntimeError;
};

void maybe_fail(Fault where) {
  if (fault.load() == where) throw InjectedFault("injected fault");
}

class Faulty final : public ext::DefinedCarrier {
 public:
  explicit Faulty(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

class FaultyComposite final : public ext::DefinedDependentCarrier {
 public:
  explicit FaultyComposite(ext::Construction key) : DefinedDependentCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <class C>
ext::StorageProvider faulty_storage() {
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) {
        maybe_fail(Fault::SupportsDType);
        return &d == &DType::Float32();
      },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const C&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) {
        maybe_fail(Fault::Allocate);
        static_cast<C&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(1));
      },
      [](Carrier& c) { static_cast<C&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) {
        maybe_fail(Fault::Read);
        return static_cast<const C&>(c).arena[static_cast<std::size_t>(i)];
      },
      [](Carrier& c, std::int64_t i, const Value& v) {
        maybe_fail(Fault::Write);
        static_cast<C&>(c).arena[static_cast<std::size_t>(i)] = v;
      });
}

std::vector<Tensor> produced;  // every result faulty_double made (guarded by the test's single thread)

ext::ProviderResult faulty_double(const op::ResolvedInvocation& inv) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  auto out = ext::create<Faulty>(x.size(), DType::Float32());
  produced.emplace_back(out, 0, Layout::compact(x.shape()));
  return ext::ProviderResult({produced.back()});
}

void register_faulty() {
  static const bool once = [] {
    auto p = ext::KernelPattern(
        double_op(), {plan_of("pipetest.double")}, "faulty",
        [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
          maybe_fail(Fault::Prepare);
          auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
          return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
            maybe_fail(Fault::Submit);
            return ext::ProviderCompletion<ext::ProviderResult>::deferred([inv] {
              maybe_fail(Fault::Wait);
              return faulty_double(*inv);
            });
          });
        });
    ext::register_carrier_definition(
        carrier_class<Faulty>(),
        ext::CarrierDefinition(faulty_storage<Faulty>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
    ext::CompositeProvider composite(
        [](const Carrier&) {
          maybe_fail(Fault::Capabilities);
          return std::vector{plan_of("pipetest.double")};
        },
        [](const Carrier&, const op::ResolvedInvocation&) {
          maybe_fail(Fault::ResultCarriers);
          return std::vector<CarrierClass>{carrier_class<Faulty>()};
        },
        [](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
          return ext::PreparedComposite([inv = &inv]() -> ext::ResultSubmission { return faulty_double(*inv); });
        });
    ext::register_carrier_definition(
        carrier_class<FaultyComposite>(),
        ext::CarrierDefinition(faulty_storage<FaultyComposite>(), std::nullopt, {}, composite));
    return true;
  }();
  (void)once;
}

struct FaultCase {
  Fault fault;
  const char* name;
};

class ProviderFaults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ProviderFaults, EachCallbackThrowingPublishesNothing) {
  register_faulty();
  fault = Fault::None;
  const auto x = ext::create<Faulty>(2, DType::Float32());
  const auto composite = ext::create<FaultyComposite>(2, DType::Float32());
  const Tensor tx(x, 0, Layout::compact(Shape{2}));
  const Tensor tc(composite, 0, Layout::compact(Shape{2}));
  // The operands require grad, so a successful call attaches a node: a
  // failing one must attach none (issue 11 standards).
  Tensor gx = tx, gc = tc;
  produced.clear();
  std::optional<Tensor> result;
  const auto definition_before = ext::carrier_definition(carrier_class<Faulty>());
  const auto caps_before = capabilities_for_carrier_class(carrier_class<Faulty>());
  const auto x_version = x->version(), c_version = composite->version();
  const std::vector<Value> x_values = tx.values();

  fault = GetParam().fault;
  std::function<void()> action;
  switch (GetParam().fault) {
    case Fault::SupportsDType:
    case Fault::Allocate:
      action = [] { (void)ext::create<Faulty>(3, DType::Float32()); };
      break;
    case Fault::Read: action = [&] { (void)x->get_value(0); }; break;
    case Fault::Write: action = [&] { x->set_value(0, Value::from_float32(9)); }; break;
    case Fault::Prepare:
    case Fault::Submit:
    case Fault::Wait: action = [&] { result = (*double_op())({tx})[0]; }; break;
    case Fault::Capabilities: action = [] { (void)ext::create<FaultyComposite>(1, DType::Float32()); }; break;
    case Fault::ResultCarriers: action = [&] { result = (*double_op())({tc})[0]; }; break;
    case Fault::None: break;
  }
  EXPECT_THROW(action(), InjectedFault) << GetParam().name;
  fault = Fault::None;
  EXPECT_EQ(x->version(), x_version);
  EXPECT_EQ(composite->version(), c_version);
  EXPECT_EQ(tx.values(), x_values);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Faulty>()), definition_before);
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<Faulty>()), caps_before);
  EXPECT_FALSE(result.has_value());
  for (const Tensor& t : produced) EXPECT_FALSE(t.grad_fn()) << GetParam().name;  // no node attached
  EXPECT_TRUE(tx.is_leaf() && tc.is_leaf());
  // The same call succeeds once the fault is gone: nothing was left half done.
  EXPECT_NO_THROW(action()) << GetParam().name;
  if (result) {
    EXPECT_TRUE(result->grad_fn()) << GetParam().name;  // the check above can fail
  }
}

INSTANTIATE_TEST_SUITE_P(
    DefinitionPipeline_FaultInjection, ProviderFaults,
    ::testing::Values(FaultCase{Fault::SupportsDType, "supports_dtype"}, FaultCase{Fault::Allocate, "allocate"},
                      FaultCase{Fault::Read, "read"}, FaultCase{Fault::Write, "write"},
                      FaultCase{Fault::Prepare, "prepare"}, FaultCase{Fault::Submit, "submit"},
                      FaultCase{Fault::Wait, "wait"}, FaultCase{Fault::Capabilities, "capabilities"},
                      FaultCase{Fault::ResultCarriers, "result_carriers"}),
    [](const ::testing::TestParamInfo<FaultCase>& param_info) { return std::string(param_info.param.name); });

}  // namespace

namespace {

// ---------------------------------------------------------------- review repairs

// pipetest.axpy_(y, x): y += x in place, result alias_of = 0, mutated = {0}.
std::shared_ptr<const op::OperationDefinition> axpy_op() {
  static const auto d = op::define_operation(
      "pipetest.axpy_",
      op::OperationSchema({op::OperandSpec("y", op::OperandKind::TENSOR), op::OperandSpec("x", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& y = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(y.dtype(), y.dtype()),
                                                      OperandPlan::tensor(call.tensor(1).dtype(), y.dtype())},
                           Arithmetic::BINARY32, std::nullopt, nullptr, y.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec(y.dtype(), y.shape(), y.layout(), 0)}, {0});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return d;
}

OperationCapability axpy_plan() {
  const SimpleDType& f = DType::Float32();
  return OperationCapability::from_plan(OperationPlan("pipetest.axpy_", {OperandPlan::tensor(f, f), OperandPlan::tensor(f, f)},
                                                      Arithmetic::BINARY32, std::nullopt, nullptr, f));
}

template <int N>
void register_axpy(std::atomic<int>& prepares, bool write_through_api) {
  auto p = ext::KernelPattern(
      axpy_op(), {axpy_plan()}, "axpy",
      [&prepares, write_through_api](const op::ResolvedInvocation& inv,
                                     const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        ++prepares;
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv, write_through_api]() -> ext::ResultSubmission {
          const Tensor& y = std::get<Tensor>(inv->operands()[0]);
          const Tensor& x = std::get<Tensor>(inv->operands()[1]);
          std::vector<Value> sums;
          for (std::int64_t k = 0; k < y.size(); ++k)
            sums.push_back(Value::from_float32(y.carrier()->get_value(y.offset() + y.layout()(k)).f +
                                               x.carrier()->get_value(x.offset() + x.layout()(k)).f));
          auto& arena = static_cast<Accel<N>&>(*y.carrier()).arena;
          for (std::int64_t k = 0; k < y.size(); ++k) {
            const auto slot = y.offset() + y.layout()(k);
            if (write_through_api) y.carrier()->set_value(slot, sums[static_cast<std::size_t>(k)]);
            else arena[static_cast<std::size_t>(slot)] = sums[static_cast<std::size_t>(k)];
          }
          return ext::ProviderResult({y});
        });
      });
  ext::register_carrier_definition(
      carrier_class<Accel<N>>(),
      ext::CarrierDefinition(accel_storage<N>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
}

TEST(DefinitionPipeline_Publication, AnOperandViewingADeclaredMutatedCarrierIsNotAnUndeclaredMutation) {
  // Versions belong to carriers: x views y's carrier, and the provider
  // writes y through the versioned API, so x's carrier version moves too.
  std::atomic<int> prepares{0};
  register_axpy<60>(prepares, true);
  const Tensor y = accel_tensor<60>({1, 2, 3, 4});
  const Tensor y_head(y.carrier(), 0, Layout::compact(Shape{2}));
  const Tensor y_tail(y.carrier(), 2, Layout::compact(Shape{2}));
  const auto before = y.carrier()->version();
  const std::vector<Tensor> r = (*axpy_op())({y_head, y_tail});
  EXPECT_TRUE(r[0].is(y_head));
  EXPECT_EQ(floats(y), (std::vector<float>{4, 6, 3, 4}));
  EXPECT_GT(y.carrier()->version(), before);
}

TEST(DefinitionPipeline_Publication, AnImmutableDeclaredMutatedOperandIsRefusedBeforeAnyProviderWork) {
  std::atomic<int> prepares{0};
  register_axpy<61>(prepares, false);
  auto frozen = ext::create<Accel<61>>(2, DType::Float32(), /*mutable*/ false);
  const Tensor y(frozen, 0, Layout::compact(Shape{2}));
  const Tensor x = accel_tensor<61>({1, 1});
  EXPECT_THROW((*axpy_op())({y, x}), RuntimeError);
  EXPECT_EQ(prepares.load(), 0);
  EXPECT_EQ(floats(y), (std::vector<float>{0, 0}));
}

TEST(DefinitionPipeline_Publication, AResultViewingAnOperandsStorageWithoutAliasOfIsAccepted) {
  // operation-semantics: a distinct Tensor sharing an operand's storage is
  // not rejected (ordinary view rules apply).
  register_returning<62>([](const op::ResolvedInvocation& inv) {
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    return ext::ProviderResult({Tensor(x.carrier(), x.offset(), x.layout())});
  });
  const Tensor x = accel_tensor<62>({5, 6});
  const std::vector<Tensor> r = (*double_op())({x});
  EXPECT_FALSE(r[0].is(x));
  EXPECT_EQ(r[0].carrier(), x.carrier());
}

TEST(DefinitionPipeline_Publication, AnOperandMutatedByADecliningPrepareIsReported) {
  auto p = ext::KernelPattern(double_op(), {plan_of("pipetest.double")}, "meddler",
                              [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&)
                                  -> ext::KernelPattern::Prepared {
                                std::get<Tensor>(inv.operands()[0]).carrier()->set_value(0, Value::from_float32(7));
                                return ext::Unsupported("changed my mind");
                              });
  ext::register_carrier_definition(
      carrier_class<Accel<63>>(),
      ext::CarrierDefinition(accel_storage<63>(), ext::KernelProvider(std::make_shared<Iface>("1"), {p})));
  expect_contract_error([] { (*double_op())({accel_tensor<63>({1})}); }, "mutation");
}

}  // namespace
