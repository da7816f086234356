// Issue 24, item 5 (and the C++ half of item 6's record rules): findings of
// the conformance audit against operation-semantics.md and
// carrier-extension.md R5.6, each named after the rule it checks.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;
using op::OperandKind;
using op::OperandSpec;
using op::OperationSchema;
using op::OptionSpec;
using op::OptionValue;
using op::ResultSpec;

std::string fresh_name(const std::string& stem) {
  static std::atomic<int> n{0};
  return "audit" + std::to_string(n++) + "." + stem;
}

Tensor f32(std::initializer_list<float> v) { return make_tensor<CPU>(v, Shape{static_cast<std::int64_t>(v.size())}); }

OperationPlan f32_plan(const std::string& name) {
  return OperationPlan(name, {OperandPlan::tensor(DType::Float32(), DType::Float32())}, Arithmetic::BINARY32,
                       std::nullopt, nullptr, DType::Float32());
}

std::shared_ptr<const op::OperationDefinition> unary(const std::string& stem, op::ResolveFn resolve,
                                                     std::optional<op::ReferenceFn> reference = std::nullopt) {
  return op::define_operation(fresh_name(stem), OperationSchema({OperandSpec("x", OperandKind::TENSOR, true)}),
                              std::move(resolve), std::move(reference), op::NON_DIFFERENTIABLE);
}

op::ResolvedInvocation fresh_result(const op::BoundOperationCall& call) {
  const Tensor& x = call.tensor(0);
  return op::ResolvedInvocation(call, f32_plan(call.definition().name()),
                                {ResultSpec::compact(DType::Float32(), Shape::of(x.shape().extents()))});
}

op::ResolvedInvocation aliased_result(const op::BoundOperationCall& call) {
  const Tensor& x = call.tensor(0);
  return op::ResolvedInvocation(call, f32_plan(call.definition().name()),
                                {ResultSpec(DType::Float32(), x.shape(), x.layout(), 0)});
}

// ---------------------------------------------------------------- mul(weak, tensor)

TEST(OperationSemantics_DirectTiledOperationSet, MulWeakTensorInvocationListsThePlanInCallOrder) {
  const auto mul_def = op::get_definition("mul");
  const Tensor x = f32({1, 2});
  const auto inv = op::resolve_call(*mul_def, {WeakScalar(2.0), x});
  const OperationPlan& plan = inv->plan();
  ASSERT_EQ(plan.operands().size(), 2u);
  // Plan operand i describes call operand i.
  EXPECT_EQ(plan.operands()[0].role(), OperandRole::WEAK_SCALAR);
  EXPECT_EQ(plan.operands()[1].role(), OperandRole::TENSOR);
  EXPECT_EQ(plan.operands()[1].dtype(), &DType::Float32());
  // Its other fields are the registry's (tensor, weak_scalar) plan's.
  const OperationPlan registry = resolve_operation_plan("mul", {DType::Float32(), WeakScalar(2.0)});
  EXPECT_TRUE(plan.operands()[0] == registry.operands()[1]);
  EXPECT_TRUE(plan.operands()[1] == registry.operands()[0]);
  EXPECT_EQ(plan.compute(), registry.compute());
  EXPECT_EQ(&plan.output(), &registry.output());
  // The same values on every route.
  EXPECT_EQ(TypedTensor<float>(strideweave::mul(WeakScalar(2.0), x)).values(), (std::vector<float>{2, 4}));
  EXPECT_EQ(TypedTensor<float>((*mul_def)({WeakScalar(2.0), x})[0]).values(), (std::vector<float>{2, 4}));
}

TEST(OperationSemantics_ResolvedInvocations, AnOperandOrderThePlanDoesNotListIsAValueError) {
  // The one plan a (weak_scalar, tensor) call takes is in that order: the
  // registry's (tensor, weak_scalar) plan no longer passes for it.
  const auto mul_def = op::get_definition("mul");
  const Tensor x = f32({1, 2});
  const auto call = op::bind(*mul_def, {WeakScalar(2.0), x});
  const OperationPlan registry = resolve_operation_plan("mul", {DType::Float32(), WeakScalar(2.0)});
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, registry, {ResultSpec::compact(DType::Float32(), Shape{2})}),
                       ValueError);
}

// ---------------------------------------------------------------- result contracts

TEST(OperationSemantics_ResolvedInvocations, AResultDtypeOtherThanThePlanOutputIsAValueError) {
  const auto d = unary("dtype", fresh_result);
  const auto call = op::bind(*d, {f32({1, 2})});
  const OperationPlan plan = f32_plan(d->name());
  EXPECT_NO_THROW(op::ResolvedInvocation(*call, plan, {ResultSpec::compact(DType::Float32(), Shape{2})}));
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {ResultSpec::compact(DType::Int32(), Shape{2})}),
                       ValueError);
  // The plan's output is the first result's dtype; a later result of a
  // multi-result operation declares its own (an Int32 index beside values).
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan,
                                              std::vector<ResultSpec>{ResultSpec::compact(DType::Int32(), Shape{2}),
                                                                      ResultSpec::compact(DType::Float32(), Shape{2})}),
                       ValueError);
  EXPECT_NO_THROW(op::ResolvedInvocation(*call, plan,
                                         std::vector<ResultSpec>{ResultSpec::compact(DType::Float32(), Shape{2}),
                                                                 ResultSpec::compact(DType::Int32(), Shape{2})}));
}

TEST(OperationSemantics_ResolvedInvocations, AnAliasedResultWithAnotherShapeOrLayoutIsAValueError) {
  const auto d = unary("alias", aliased_result);
  const Tensor x = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});
  const auto call = op::bind(*d, {x});
  const OperationPlan plan = f32_plan(d->name());
  EXPECT_NO_THROW(op::ResolvedInvocation(*call, plan, {ResultSpec(DType::Float32(), x.shape(), x.layout(), 0)}));
  EXPECT_THROW_EXACTLY(
      op::ResolvedInvocation(*call, plan, {ResultSpec(DType::Float32(), Shape{6}, Layout::compact(Shape{6}), 0)}),
      ValueError);
  const Layout row_major(Shape{2, 3}, Stride{3, 1});
  ASSERT_FALSE(row_major == x.layout());
  EXPECT_THROW_EXACTLY(op::ResolvedInvocation(*call, plan, {ResultSpec(DType::Float32(), Shape{2, 3}, row_major, 0)}),
                       ValueError);
}

TEST(OperationSemantics_ReferenceExecution, AReferenceReturningAnOperandWithoutAliasOfIsAContractError) {
  const Tensor x = f32({1, 2});
  const auto returns_operand = [](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
    return std::get<Tensor>(inv.operands()[0]);
  };
  const auto fresh = unary("ref_fresh", fresh_result, op::ReferenceFn(returns_operand));
  try {
    op::execute_reference(*fresh, *op::resolve_call(*fresh, {x}));
    FAIL() << "no ProviderContractError";
  } catch (const ProviderContractError& e) {
    EXPECT_EQ(e.field(), "alias");
  }
  // alias_of declared: the reference must hand back the operand itself.
  const auto aliased_fresh = unary("ref_alias_fresh", aliased_result, op::ReferenceFn([](const op::ResolvedInvocation&) {
                                     return op::ReferenceResult(make_tensor<CPU>({1, 2}, Shape{2}));
                                   }));
  EXPECT_THROW_EXACTLY(op::execute_reference(*aliased_fresh, *op::resolve_call(*aliased_fresh, {x})),
                       ProviderContractError);
  const auto honest = unary("ref_alias", aliased_result, op::ReferenceFn(returns_operand));
  const std::vector<Tensor> out = op::execute_reference(*honest, *op::resolve_call(*honest, {x}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].is(x));
}

// ---------------------------------------------------------------- identifiers

TEST(OperationSemantics_SchemaBinding, NamesAreCheckedAsPythonIdentifiers) {
  // str.isidentifier(): XID_Start or "_" first, XID_Continue after.
  for (const char* ok : {"x", "_", "größe", "x1", "Ω", "ñame", "变量", "x\u0301", "_1", "ℕ", "ｘ", "x·"}) {
    EXPECT_NO_THROW(OperandSpec(ok, OperandKind::TENSOR)) << ok;
    EXPECT_NO_THROW(OptionSpec(ok, OptionValue(std::int64_t{1}))) << ok;
  }
  for (const char* bad : {"", "1x", "a-b", "x y", "é-", "·x", "\u0301x", "a.b", "💡", "x\u200d", "\xff", "a\xc3"}) {
    EXPECT_THROW_EXACTLY(OperandSpec(bad, OperandKind::TENSOR), ValueError) << bad;
    EXPECT_THROW_EXACTLY(OptionSpec(bad, OptionValue(std::int64_t{1})), ValueError) << bad;
  }
  EXPECT_NO_THROW(op::define_operation(fresh_name("größe"), OperationSchema({OperandSpec("x", OperandKind::TENSOR)}),
                                       fresh_result, std::nullopt, op::NON_DIFFERENTIABLE));
  EXPECT_THROW_EXACTLY(op::define_operation(fresh_name("a-b"), OperationSchema({OperandSpec("x", OperandKind::TENSOR)}),
                                            fresh_result, std::nullopt, op::NON_DIFFERENTIABLE),
                       ValueError);
}

// ---------------------------------------------------------------- the legacy move registry

template <int N>
class Defined final : public ext::DefinedCarrier {
 public:
  explicit Defined(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> slots;
};

TEST(CarrierExtension_R5, DispatchMoveRefusesADefinitionBackedPair) {
  using D = Defined<1>;
  ext::register_carrier_definition(
      carrier_class<D>(),
      ext::CarrierDefinition(ext::StorageProvider(
          [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
          [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const D&>(c).slots.size()); },
          [](Carrier& c, std::int64_t n) {
            static_cast<D&>(c).slots.assign(static_cast<std::size_t>(n), Value::from_float32(0));
          },
          [](Carrier& c) { static_cast<D&>(c).slots.clear(); },
          [](const Carrier& c, std::int64_t i) { return static_cast<const D&>(c).slots[static_cast<std::size_t>(i)]; },
          [](Carrier& c, std::int64_t i, const Value& v) { static_cast<D&>(c).slots[static_cast<std::size_t>(i)] = v; })));
  const CarrierClass d = carrier_class<D>(), cpu = carrier_class<CPU>();
  EXPECT_THROW_EXACTLY(dispatch_move(d, cpu), RuntimeError);
  EXPECT_THROW_EXACTLY(dispatch_move(cpu, d), RuntimeError);
  EXPECT_THROW_EXACTLY(registered_move_operation_for(d, cpu), RuntimeError);
  EXPECT_NE(dispatch_move(cpu, carrier_class<Generic>()), nullptr);
}

}  // namespace
