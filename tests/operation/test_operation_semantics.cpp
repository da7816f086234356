// operation-semantics.md: the public definition contract, requirement by
// requirement (suite name = requirement, test name = scenario or rule).
// Built-in definitions are tested in test_builtin_definitions.cpp.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace op = strideweave::operation;
using op::CallOperand;
using op::OperandKind;
using op::OperandSpec;
using op::OperationSchema;
using op::OptionSpec;
using op::OptionValue;
using op::ResultSpec;

// A fresh, unique namespaced name per call (the registry is process-wide and
// one-shot).
std::string fresh_name(const std::string& stem) {
  static std::atomic<int> n{0};
  return "test" + std::to_string(n++) + "." + stem;
}

Tensor f32(std::initializer_list<float> v) { return make_tensor<CPU>(v, Shape{static_cast<std::int64_t>(v.size())}); }

// An elementwise operation on one Float32 tensor with an option `scale`.
op::ResolveFn elementwise_resolve(std::atomic<int>* calls = nullptr) {
  return [calls](const op::BoundOperationCall& call) {
    if (calls) ++*calls;
    const Tensor& x = call.tensor(0);
    OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype(), x.dtype())}, Arithmetic::BINARY32,
                       std::nullopt, nullptr, DType::Float32());
    return op::ResolvedInvocation(call, plan, {ResultSpec::compact(DType::Float32(), Shape::of(x.shape().extents()))},
                                  {}, {0});
  };
}

OperationSchema unary_schema() {
  return OperationSchema({OperandSpec("x", OperandKind::TENSOR, true)}, {OptionSpec("scale", OptionValue(1.0))});
}

// ---------------------------------------------------------------- import surface

TEST(OperationSemantics_ImportSurface, TopLevelReExportsNameTheSameEntities) {
  static_assert(std::is_same_v<strideweave::OperationDefinition, op::OperationDefinition>);
  static_assert(std::is_same_v<strideweave::OperationSchema, op::OperationSchema>);
  static_assert(std::is_same_v<strideweave::OperandSpec, op::OperandSpec>);
  static_assert(std::is_same_v<strideweave::OptionSpec, op::OptionSpec>);
  static_assert(std::is_same_v<strideweave::OperandKind, op::OperandKind>);
  static_assert(std::is_same_v<strideweave::ResultSpec, op::ResultSpec>);
  EXPECT_EQ(&strideweave::REQUIRED, &op::REQUIRED);
  EXPECT_EQ(&strideweave::NON_DIFFERENTIABLE, &op::NON_DIFFERENTIABLE);
  EXPECT_EQ(&strideweave::define_operation, &op::define_operation);
  // ProviderContractError is a RuntimeError.
  static_assert(std::is_base_of_v<RuntimeError, ProviderContractError>);
}

// ---------------------------------------------------------------- schema and binding

TEST(OperationSemantics_SchemaBinding, OperandKindHasTheExplicitStringValues) {
  EXPECT_EQ(op::value_of(OperandKind::TENSOR), "tensor");
  EXPECT_EQ(op::value_of(OperandKind::WEAK_SCALAR), "weak_scalar");
  EXPECT_EQ(op::value_of(OperandKind::STRUCTURAL), "structural");
  EXPECT_EQ(op::operand_kind("weak_scalar"), OperandKind::WEAK_SCALAR);
  EXPECT_THROW_EXACTLY(op::operand_kind("scalar"), ValueError);
}

TEST(OperationSemantics_SchemaBinding, OperandSpecValidatesNameAndDifferentiability) {
  EXPECT_THROW_EXACTLY(OperandSpec("", OperandKind::TENSOR), ValueError);
  EXPECT_THROW_EXACTLY(OperandSpec("2x", OperandKind::TENSOR), ValueError);
  EXPECT_THROW_EXACTLY(OperandSpec("a-b", OperandKind::TENSOR), ValueError);
  EXPECT_THROW_EXACTLY(OperandSpec("s", OperandKind::WEAK_SCALAR, true), ValueError);
  EXPECT_THROW_EXACTLY(OperandSpec("s", OperandKind::STRUCTURAL, true), ValueError);
  const OperandSpec x("x_1", OperandKind::TENSOR, true);
  EXPECT_EQ(x.name(), "x_1");
  EXPECT_TRUE(x.differentiable());
  EXPECT_EQ(x, OperandSpec("x_1", OperandKind::TENSOR, true));
  EXPECT_FALSE(x == OperandSpec("x_1", OperandKind::TENSOR, false));
}

TEST(OperationSemantics_SchemaBinding, OptionSpecDefaultsToTheOneRequiredMarker) {
  EXPECT_THROW_EXACTLY(OptionSpec(""), ValueError);
  EXPECT_THROW_EXACTLY(OptionSpec("a.b"), ValueError);
  EXPECT_TRUE(OptionSpec("axis").required());
  EXPECT_TRUE(std::holds_alternative<op::Required>(OptionSpec("axis").default_value()));
  EXPECT_FALSE(OptionSpec("axis", OptionValue(std::int64_t{0})).required());
}

TEST(OperationSemantics_SchemaBinding, SchemaRejectsEmptyOperandsAndDuplicateNames) {
  EXPECT_THROW_EXACTLY(OperationSchema({}), ValueError);
  EXPECT_THROW_EXACTLY(OperationSchema({OperandSpec("x", OperandKind::TENSOR), OperandSpec("x", OperandKind::TENSOR)}),
                       ValueError);
  EXPECT_THROW_EXACTLY(OperationSchema({OperandSpec("x", OperandKind::TENSOR)}, {OptionSpec("x")}), ValueError);
  EXPECT_THROW_EXACTLY(OperationSchema({OperandSpec("x", OperandKind::TENSOR)}, {OptionSpec("k"), OptionSpec("k")}),
                       ValueError);
}

TEST(OperationSemantics_SchemaBinding, BindDefaultsAndPreserveOperandOrder) {
  const auto d = define_operation(
      fresh_name("ordered"),
      OperationSchema({OperandSpec("x", OperandKind::TENSOR, true), OperandSpec("s", OperandKind::WEAK_SCALAR),
                       OperandSpec("axes", OperandKind::STRUCTURAL)},
                      {OptionSpec("mode"), OptionSpec("scale", OptionValue(2.5))}),
      elementwise_resolve(), std::nullopt, op::NON_DIFFERENTIABLE);
  const Tensor x = f32({1, 2});
  const auto call = op::bind(*d, {x, WeakScalar(3), op::Structural{std::vector<std::int64_t>{0, 1}}},
                             {{"mode", OptionValue(std::string("fast"))}});
  ASSERT_EQ(call->operands().size(), 3u);
  EXPECT_TRUE(std::get<Tensor>(call->operands()[0]).is(x));
  EXPECT_EQ(std::get<WeakScalar>(call->operands()[1]), WeakScalar(3));
  EXPECT_EQ(std::get<op::Structural>(call->operands()[2]).value, OptionValue(std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(call->option("scale"), OptionValue(2.5));  // the declared default
  EXPECT_EQ(call->option("mode"), OptionValue(std::string("fast")));
  EXPECT_EQ(&call->definition(), d.get());
  EXPECT_THROW_EXACTLY(call->option("nope"), LookupError);
}

TEST(OperationSemantics_SchemaBinding, BindingErrorsAreTypeErrorsBeforeResolve) {
  std::atomic<int> resolves{0};
  const auto d = define_operation(
      fresh_name("strict"),
      OperationSchema({OperandSpec("x", OperandKind::TENSOR, true), OperandSpec("s", OperandKind::WEAK_SCALAR)},
                      {OptionSpec("mode")}),
      elementwise_resolve(&resolves), std::nullopt, op::NON_DIFFERENTIABLE);
  const Tensor x = f32({1, 2});
  const op::OptionMap mode{{"mode", OptionValue(std::int64_t{1})}};
  EXPECT_THROW_EXACTLY(op::bind(*d, {x}, mode), TypeError);                                  // missing operand
  EXPECT_THROW_EXACTLY(op::bind(*d, {x, WeakScalar(1), WeakScalar(2)}, mode), TypeError);    // extra operand
  EXPECT_THROW_EXACTLY(op::bind(*d, {x, WeakScalar(1)}, {}), TypeError);                     // omitted required option
  EXPECT_THROW_EXACTLY(op::bind(*d, {x, WeakScalar(1)}, {{"mode", OptionValue(std::int64_t{1})},
                                                         {"other", OptionValue(true)}}),
                       TypeError);                                                            // unknown option
  EXPECT_THROW_EXACTLY(op::bind(*d, {WeakScalar(1), WeakScalar(1)}, mode), TypeError);       // scalar for a tensor
  // Scenario "Reject a Tensor in a weak-scalar role": binding raises before
  // semantic resolution or carrier work.
  EXPECT_THROW_EXACTLY((*d)({x, x}, mode), TypeError);
  EXPECT_EQ(resolves.load(), 0);
}

// ---------------------------------------------------------------- define_operation

TEST(OperationSemantics_Namespacing, NamesAreDotNamespacedOutsideReservedSegments) {
  auto define = [](const std::string& name) {
    return define_operation(name, unary_schema(), elementwise_resolve(), std::nullopt, op::NON_DIFFERENTIABLE);
  };
  EXPECT_THROW_EXACTLY(define("flat"), ValueError);                  // no namespace
  EXPECT_THROW_EXACTLY(define(""), ValueError);
  EXPECT_THROW_EXACTLY(define("acme..x"), ValueError);               // empty segment
  EXPECT_THROW_EXACTLY(define("acme.2x"), ValueError);               // not an identifier
  EXPECT_THROW_EXACTLY(define("strideweave.mine"), ValueError);      // reserved
  EXPECT_THROW_EXACTLY(define("add.fast"), ValueError);              // a built-in name as namespace
  EXPECT_THROW_EXACTLY(define("_sort_values.x"), ValueError);
  for (const char* bad : {"flat", "strideweave.mine", "add.fast"})
    EXPECT_THROW_EXACTLY(op::get_definition(bad), LookupError) << "a rejected name was registered: " << bad;
  const std::string good = fresh_name("deep.nested_name");
  EXPECT_EQ(define(good)->name(), good);
}

TEST(OperationSemantics_Namespacing, RegistrationIsOneShot) {
  const std::string name = fresh_name("once");
  const auto first = define_operation(name, unary_schema(), elementwise_resolve(), std::nullopt, op::NON_DIFFERENTIABLE);
  EXPECT_THROW_EXACTLY(
      define_operation(name, unary_schema(), elementwise_resolve(), std::nullopt, op::NON_DIFFERENTIABLE), ValueError);
  EXPECT_EQ(op::get_definition(name), first);
}

TEST(OperationSemantics_Namespacing, RequireAnExplicitGradientDeclaration) {
  const std::string name = fresh_name("no_vjp");
  EXPECT_THROW_EXACTLY(define_operation(name, unary_schema(), elementwise_resolve(), std::nullopt, op::VjpFn{}),
                       ValueError);
  EXPECT_THROW_EXACTLY(op::get_definition(name), LookupError) << "the name became observable";
  EXPECT_THROW_EXACTLY(define_operation(fresh_name("no_resolve"), unary_schema(), op::ResolveFn{}, std::nullopt,
                                        op::NON_DIFFERENTIABLE),
                       ValueError);
}

TEST(OperationSemantics_Namespacing, ConcurrentRegistrationOfOneNameHasOneWinner) {
  const std::string name = fresh_name("raced");
  std::atomic<int> won{0}, lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      try {
        define_operation(name, unary_schema(), elementwise_resolve(), std::nullopt, op::NON_DIFFERENTIABLE);
        ++won;
      } catch (const ValueError&) {
        ++lost;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(lost.load(), 7);
}

TEST(OperationSemantics_Namespacing, TheDefinitionExposesItsImmutableFields) {
  const std::string name = fresh_name("fields");
  const op::ReferenceFn reference = [](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
    return std::get<Tensor>(inv.operands()[0]);
  };
  int resolves = 0;
  const op::ResolveFn counting = [&resolves, inner = elementwise_resolve()](const op::BoundOperationCall& c) {
    ++resolves;
    return inner(c);
  };
  const auto d = define_operation(name, unary_schema(), counting, reference, op::NON_DIFFERENTIABLE);
  EXPECT_EQ(d->name(), name);
  EXPECT_EQ(d->schema(), unary_schema());
  EXPECT_FALSE(d->is_differentiable());
  EXPECT_FALSE(d->is_builtin());
  // The fields are the callables given, not stand-ins: the stored resolve is
  // the one that counts, and the stored reference returns operand 0.
  const Tensor x = f32({1, 2});
  const auto call = op::bind(*d, {x});
  const op::ResolvedInvocation inv = d->resolve()(*call);
  EXPECT_EQ(resolves, 1);
  EXPECT_EQ(inv.operation(), name);
  ASSERT_TRUE(d->reference().has_value());
  EXPECT_TRUE(std::get<Tensor>((*d->reference())(inv)).is(x));
}

// ---------------------------------------------------------------- results and invocations

TEST(OperationSemantics_ResolvedInvocations, ResultSpecValidatesLayoutAndTolerances) {
  const Shape s{2, 3};
  EXPECT_THROW_EXACTLY(ResultSpec(DType::Float32(), s, Layout::compact(Shape{3, 2})), ValueError);
  EXPECT_THROW_EXACTLY(ResultSpec(DType::Float32(), s, Layout::compact(s), std::nullopt, -1.0), ValueError);
  EXPECT_THROW_EXACTLY(ResultSpec(DType::Float32(), s, Layout::compact(s), std::nullopt, 0.0,
                                  std::numeric_limits<double>::infinity()),
                       ValueError);
  EXPECT_THROW_EXACTLY(ResultSpec(DType::Float32(), s, Layout::compact(s), std::nullopt, std::nan("")), ValueError);
  const ResultSpec r(DType::Float32(), s, Layout(s, Stride{3, 1}), std::nullopt, 1e-6, 1e-5);
  EXPECT_EQ(r.layout(), Layout(s, Stride{3, 1}));
  EXPECT_EQ(r.atol(), 1e-6);
}

// Resolves `d` with `resolve` replaced: the invocation `make` builds.
template <class Make>
void expect_invocation_error(Make make) {
  const std::string name = fresh_name("inv");
  const auto d = define_operation(
      name,
      OperationSchema({OperandSpec("x", OperandKind::TENSOR, true), OperandSpec("s", OperandKind::WEAK_SCALAR),
                       OperandSpec("k", OperandKind::STRUCTURAL)}),
      [make](const op::BoundOperationCall& call) { return make(call); }, std::nullopt, op::NON_DIFFERENTIABLE);
  EXPECT_THROW_EXACTLY(op::resolve_call(*d, {f32({1, 2}), WeakScalar(2.0), op::Structural{std::int64_t{4}}}),
                       ValueError);
}

OperationPlan plan_for(const std::string& name, OperandRole second = OperandRole::WEAK_SCALAR,
                       const SimpleDType& first_dtype = DType::Float32()) {
  std::vector<OperandPlan> operands{OperandPlan::tensor(first_dtype, DType::Float32())};
  operands.push_back(second == OperandRole::WEAK_SCALAR ? OperandPlan::weak_scalar(DType::Float32())
                                                        : OperandPlan::tensor(DType::Float32(), DType::Float32()));
  return OperationPlan(name, operands, Arithmetic::BINARY32, std::nullopt, nullptr, DType::Float32());
}

TEST(OperationSemantics_ResolvedInvocations, InvalidInvocationsAreValueErrors) {
  const ResultSpec ok = ResultSpec::compact(DType::Float32(), Shape{2});
  auto name = [](const op::BoundOperationCall& c) { return c.definition().name(); };
  // The plan names another operation.
  expect_invocation_error([&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for("add"), {ok}); });
  // Operand roles differ (tensor where the schema has a weak scalar).
  expect_invocation_error(
      [&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for(name(c), OperandRole::TENSOR), {ok}); });
  // The plan reads another dtype than the operand stores.
  expect_invocation_error([&](const op::BoundOperationCall& c) {
    return op::ResolvedInvocation(c, plan_for(name(c), OperandRole::WEAK_SCALAR, DType::Int32()), {ok});
  });
  // Empty results, duplicate / out-of-range / non-tensor indices, empty kernel id.
  expect_invocation_error([&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for(name(c)), {}); });
  expect_invocation_error(
      [&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for(name(c)), {ok}, {0, 0}); });
  expect_invocation_error(
      [&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for(name(c)), {ok}, {}, {5}); });
  expect_invocation_error(
      [&](const op::BoundOperationCall& c) { return op::ResolvedInvocation(c, plan_for(name(c)), {ok}, {}, {1}); });
  expect_invocation_error([&](const op::BoundOperationCall& c) {
    return op::ResolvedInvocation(c, plan_for(name(c)), {ok}, {}, {}, std::string());
  });
  expect_invocation_error([&](const op::BoundOperationCall& c) {
    return op::ResolvedInvocation(c, plan_for(name(c)), {ResultSpec(DType::Float32(), Shape{2}, Layout::compact(Shape{2}), 2)});
  });
}

TEST(OperationSemantics_ResolvedInvocations, InvocationsExposeTheirWholeContract) {
  const std::string n = fresh_name("whole");
  const auto d = define_operation(
      n, OperationSchema({OperandSpec("x", OperandKind::TENSOR, true), OperandSpec("s", OperandKind::WEAK_SCALAR)},
                         {OptionSpec("flag", OptionValue(false))}),
      [](const op::BoundOperationCall& c) {
        return op::ResolvedInvocation(c, plan_for(c.definition().name()),
                                      {ResultSpec::compact(DType::Float32(), Shape{2}, 1e-6, 0.0)}, {}, {0});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  const Tensor x = f32({1, 2});
  const auto inv = op::resolve_call(*d, {x, WeakScalar(0.5)});
  EXPECT_EQ(&inv->definition(), d.get());
  EXPECT_EQ(inv->operation(), n);
  EXPECT_EQ(inv->kernel_id(), n);  // defaults to the definition's name
  EXPECT_EQ(inv->options().at("flag"), OptionValue(false));
  EXPECT_EQ(std::vector<std::size_t>(inv->saved_operands().begin(), inv->saved_operands().end()),
            (std::vector<std::size_t>{0}));
  EXPECT_TRUE(std::get<Tensor>(inv->operands()[0]).is(x));
}

// operation.h, ResolvedInvocation: the braced (initializer-list) form is the
// same contract as the vector form: the same accessors for one and for
// several results, the same defaults, and the same ValueErrors for empty
// results and for repeated, out-of-range or non-tensor indices.
TEST(OperationSemantics_ResolvedInvocations, BracedAndVectorResultsAreTheSameContract) {
  const std::string n = fresh_name("braced");
  const auto d = define_operation(
      n, OperationSchema({OperandSpec("x", OperandKind::TENSOR, true), OperandSpec("s", OperandKind::WEAK_SCALAR)}),
      [](const op::BoundOperationCall& c) {
        return op::ResolvedInvocation(c, plan_for(c.definition().name()), {ResultSpec::compact(DType::Float32(), Shape{2})});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  const Tensor x = f32({1, 2});
  const auto call = op::bind(*d, {x, WeakScalar(0.5)});
  const ResultSpec one = ResultSpec::compact(DType::Float32(), Shape{2}, 1e-6, 0.0);
  const ResultSpec two = ResultSpec::compact(DType::Float32(), Shape{3});
  const OperationPlan plan = plan_for(n);
  auto same = [](const op::ResolvedInvocation& a, const op::ResolvedInvocation& b) {
    EXPECT_EQ(&a.call(), &b.call());
    EXPECT_TRUE(a.plan() == b.plan());
    EXPECT_TRUE(std::equal(a.results().begin(), a.results().end(), b.results().begin(), b.results().end()));
    EXPECT_TRUE(std::equal(a.mutated_operands().begin(), a.mutated_operands().end(), b.mutated_operands().begin(),
                           b.mutated_operands().end()));
    EXPECT_TRUE(std::equal(a.saved_operands().begin(), a.saved_operands().end(), b.saved_operands().begin(),
                           b.saved_operands().end()));
    EXPECT_EQ(a.kernel_id(), b.kernel_id());
  };
  const op::ResolvedInvocation braced_one(*call, plan, {one}, {}, {0});
  const op::ResolvedInvocation vector_one(*call, plan, std::vector<ResultSpec>{one}, std::vector<std::size_t>{},
                                          std::vector<std::size_t>{0});
  same(braced_one, vector_one);
  ASSERT_EQ(braced_one.results().size(), 1u);
  EXPECT_EQ(braced_one.results()[0], one);
  EXPECT_EQ(braced_one.kernel_id(), n);
  // Copies and moves keep the single result (it lives in the invocation).
  const op::ResolvedInvocation copied = braced_one;
  op::ResolvedInvocation moved_from = braced_one;
  const op::ResolvedInvocation moved = std::move(moved_from);
  same(copied, vector_one);
  same(moved, vector_one);
  EXPECT_NE(copied.results().data(), braced_one.results().data());
  const op::ResolvedInvocation braced_two(*call, plan, {one, two}, {0}, {}, std::string("k"));
  const op::ResolvedInvocation vector_two(*call, plan, std::vector<ResultSpec>{one, two}, std::vector<std::size_t>{0},
                                          std::vector<std::size_t>{}, std::string("k"));
  same(braced_two, vector_two);
  ASSERT_EQ(braced_two.results().size(), 2u);
  EXPECT_EQ(braced_two.results()[1], two);
  EXPECT_EQ(braced_two.kernel_id(), "k");
  // The same refusals in both forms.
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, std::initializer_list<ResultSpec>{}), ValueError);
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, std::vector<ResultSpec>{}), ValueError);
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {one}, {0, 0}), ValueError);
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, std::vector<ResultSpec>{one}, std::vector<std::size_t>{0, 0}),
                       ValueError);
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {one}, {}, {7}), ValueError);
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {one}, {1}), ValueError);  // a weak scalar
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {one}, {}, {0, 0}), ValueError);
  // The definition's own (braced) resolve runs through the pipeline.
  const auto inv = op::resolve_call(*d, {x, WeakScalar(0.5)});
  ASSERT_EQ(inv->results().size(), 1u);
  EXPECT_EQ(inv->results()[0].shape(), (Shape{2}));
}

TEST(OperationSemantics_ResolvedInvocations, AnInvocationOfAnotherCallIsRefused) {
  std::shared_ptr<const op::BoundOperationCall> stolen;
  const auto donor = define_operation(fresh_name("donor"), unary_schema(), elementwise_resolve(), std::nullopt,
                                      op::NON_DIFFERENTIABLE);
  stolen = op::bind(*donor, {f32({1})});
  const auto d = define_operation(
      fresh_name("thief"), unary_schema(),
      [&](const op::BoundOperationCall&) { return elementwise_resolve()(*stolen); }, std::nullopt,
      op::NON_DIFFERENTIABLE);
  EXPECT_THROW_EXACTLY(op::resolve_call(*d, {f32({1})}), ValueError);
}

TEST(OperationSemantics_ResolvedInvocations, ResolveExceptionsPropagateBeforeCapabilityWork) {
  const auto d = define_operation(
      fresh_name("raising"), unary_schema(),
      [](const op::BoundOperationCall&) -> op::ResolvedInvocation { throw OverflowError("resolve says no"); },
      std::nullopt, op::NON_DIFFERENTIABLE);
  EXPECT_THROW_EXACTLY((*d)({f32({1})}), OverflowError);
}

// ---------------------------------------------------------------- dispatch on definition-free carriers

TEST(OperationSemantics_CustomOperations, LeaveAnotherCarrierUnsupported) {
  const auto d = define_operation(fresh_name("nowhere"), unary_schema(), elementwise_resolve(), std::nullopt,
                                  op::NON_DIFFERENTIABLE);
  for (const ShippedCarrier& c : shipped_carriers()) {
    SCOPED_TRACE(std::string(c.name));
    const Tensor x(c.make(std::vector<Value>{Value::from_float32(1.0f)}, DType::Float32()), Shape{1});
    EXPECT_THROW_EXACTLY((*d)({x}), UnsupportedOperationPlan);
    EXPECT_EQ(x.carrier()->version(), 0u);
  }
}

TEST(OperationSemantics_CustomOperations, AReleasedOperandIsARuntimeErrorAfterResolve) {
  std::atomic<int> resolves{0};
  const auto d = define_operation(fresh_name("released"), unary_schema(), elementwise_resolve(&resolves), std::nullopt,
                                  op::NON_DIFFERENTIABLE);
  const Tensor x = f32({1});
  x.carrier()->release();
  EXPECT_THROW_EXACTLY((*d)({x}), RuntimeError);
  EXPECT_EQ(resolves.load(), 1);
}

// ---------------------------------------------------------------- reference normalisation

TEST(OperationSemantics_Reference, ExecuteReferenceNormalisesAndValidatesTheReturn) {
  auto define_with = [](op::ReferenceFn ref) {
    return define_operation(fresh_name("ref"), unary_schema(), elementwise_resolve(), std::move(ref),
                            op::NON_DIFFERENTIABLE);
  };
  const Tensor x = f32({1, 2});
  {  // one Tensor -> a one-element tuple
    const Tensor fresh = f32({2, 4});
    const auto d = define_with([fresh](const op::ResolvedInvocation&) -> op::ReferenceResult { return fresh; });
    const auto inv = op::resolve_call(*d, {x});
    const std::vector<Tensor> r = op::execute_reference(*d, *inv);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].is(fresh));
  }
  {  // an empty tuple
    const auto d = define_with([](const op::ResolvedInvocation&) -> op::ReferenceResult { return std::vector<Tensor>{}; });
    const auto inv = op::resolve_call(*d, {x});
    try {
      op::execute_reference(*d, *inv);
      ADD_FAILURE() << "an empty reference return was accepted";
    } catch (const ProviderContractError& e) {
      EXPECT_ERROR_TYPE_IS(e, ProviderContractError);
      EXPECT_EQ(e.field(), "count");
    }
  }
  {  // the wrong dtype and the wrong shape
    const auto wrong_dtype = define_with([](const op::ResolvedInvocation&) -> op::ReferenceResult {
      return make_tensor<CPU>(std::initializer_list<std::int32_t>{1, 2}, Shape{2});
    });
    const auto inv = op::resolve_call(*wrong_dtype, {x});
    try {
      op::execute_reference(*wrong_dtype, *inv);
      ADD_FAILURE() << "a reference result of the wrong dtype was accepted";
    } catch (const ProviderContractError& e) {
      EXPECT_EQ(e.field(), "dtype");
    }
    const auto wrong_shape = define_with([](const op::ResolvedInvocation&) -> op::ReferenceResult { return f32({1, 2, 3}); });
    const auto inv2 = op::resolve_call(*wrong_shape, {x});
    try {
      op::execute_reference(*wrong_shape, *inv2);
      ADD_FAILURE() << "a reference result of the wrong shape was accepted";
    } catch (const ProviderContractError& e) {
      EXPECT_EQ(e.field(), "shape");
    }
  }
  {  // no reference; another definition's invocation
    const auto none = define_operation(fresh_name("noref"), unary_schema(), elementwise_resolve(), std::nullopt,
                                       op::NON_DIFFERENTIABLE);
    const auto inv = op::resolve_call(*none, {x});
    EXPECT_THROW_EXACTLY(op::execute_reference(*none, *inv), NotImplementedError);
    const auto other = define_with([](const op::ResolvedInvocation& i) -> op::ReferenceResult {
      return std::get<Tensor>(i.operands()[0]);
    });
    EXPECT_THROW_EXACTLY(op::execute_reference(*other, *inv), ValueError);
  }
}

TEST(OperationSemantics_Registry, UnknownNamesAreLookupErrors) {
  EXPECT_THROW_EXACTLY(op::get_definition("nobody.here"), LookupError);
}

}  // namespace
