// operation-semantics.md, "The direct tiled operation set has complete
// semantic definitions", extended to every built-in name (issue 11, step 1;
// docs/design.md, "One record per operation"): each of the registered
// operations is one immutable OperationDefinition whose schema, resolve,
// VJP and reference are what the typed functions and the by-name calls do.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace op = strideweave::operation;

Tensor cpu(std::initializer_list<float> v, Shape shape) { return make_tensor<CPU>(v, std::move(shape)); }

// A tensor of `shape` with `dtype` on Generic, every element one (true).
Tensor ones(const DType& dtype, const Shape& shape) {
  const Value one = &dtype == &DType::Bool() ? Value::from_bool(true)
                    : &dtype == &DType::Int32() ? Value::from_int32(1)
                                                 : Value::from_float32(1.0f);
  const std::vector<Value> values(static_cast<std::size_t>(shape.size()), one);
  return Tensor(Generic::create(values, dtype), 0, Layout::compact(shape));
}

TEST(BuiltinDefinitions, EveryRegisteredOperationIsOneImmutableDefinition) {
  std::set<std::string> names;
  for (const OperationSpec& spec : registered_operations()) {
    const auto d = op::get_definition(spec.name());
    ASSERT_NE(d, nullptr) << spec.name();
    EXPECT_EQ(d->name(), spec.name());
    EXPECT_TRUE(d->is_builtin()) << spec.name();
    EXPECT_TRUE(d->reference().has_value()) << spec.name();
    EXPECT_EQ(op::get_definition(spec.name()).get(), d.get()) << "one record per name";
    names.insert(spec.name());
  }
  EXPECT_EQ(names.size(), 56u);
  std::set<std::string> listed;
  for (const auto& d : op::registered_definitions())
    if (d->is_builtin()) listed.insert(d->name());
  EXPECT_EQ(listed, names);
  // sort and topk are typed functions of two plans: reserved, not definitions.
  EXPECT_THROW_EXACTLY(op::get_definition("sort"), LookupError);
  const op::OperationSchema schema({op::OperandSpec("x", op::OperandKind::TENSOR)});
  const auto resolve = [](const op::BoundOperationCall& c) -> op::ResolvedInvocation {
    throw RuntimeError(c.definition().name());
  };
  EXPECT_THROW_EXACTLY(op::define_operation("sort.mine", schema, resolve, std::nullopt, op::NON_DIFFERENTIABLE),
                       ValueError);
  EXPECT_THROW_EXACTLY(op::define_operation("add.mine", schema, resolve, std::nullopt, op::NON_DIFFERENTIABLE),
                       ValueError);
}

// Parity derived from the registry's executable plan set: for every plan
// whose operands are all tensors and whose operation needs no required
// option, a definition call on Generic operands of (2, 3) publishes exactly
// the dtype and shape its resolve step declares, under the same plan.
TEST(BuiltinDefinitions, ResolveDeclaresWhatTheCallPublishesForEveryTensorPlan) {
  int checked = 0;
  for (const OperationPlan& plan : executable_plan_set()) {
    const auto d = op::get_definition(plan.operation());
    bool tensors_only = true;
    for (const OperandPlan& o : plan.operands()) tensors_only &= o.role() == OperandRole::TENSOR;
    bool required = false;
    for (const op::OptionSpec& o : d->schema().options()) required |= o.required();
    if (!tensors_only || required || plan.operation() == "conv_general" || plan.operation() == "matmul") continue;
    std::vector<op::CallOperand> operands;
    std::vector<const DType*> dtypes;
    for (const OperandPlan& o : plan.operands()) {
      operands.emplace_back(ones(*o.dtype(), Shape{2, 3}));
      dtypes.push_back(o.dtype());
    }
    const auto invocation = op::resolve_call(*d, operands);
    std::vector<PlanOperand> plan_operands;
    for (const DType* t : dtypes) plan_operands.emplace_back(*t);
    EXPECT_EQ(invocation->plan(), resolve_operation_plan(plan.operation(), plan_operands)) << plan.to_string();
    const std::vector<Tensor> results = (*d)(operands);
    ASSERT_EQ(results.size(), 1u);
    ASSERT_EQ(invocation->results().size(), 1u);
    EXPECT_EQ(&results[0].dtype(), &invocation->results()[0].dtype()) << plan.to_string();
    EXPECT_EQ(results[0].shape(), invocation->results()[0].shape()) << plan.to_string();
    EXPECT_EQ(invocation->kernel_id(), plan.operation());
    ++checked;
  }
  EXPECT_GE(checked, 60) << "the parity must cover the registry, not a handful of plans";
}

TEST(BuiltinDefinitions, PublishedShapesFollowTheTypedFunctionsViews) {
  // matmul's vector promotion and rank-0 gather publish the squeezed result.
  const Tensor v = cpu({1, 2, 3}, Shape{3});
  const Tensor m = cpu({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  const auto mm = op::get_definition("matmul");
  EXPECT_EQ(op::resolve_call(*mm, {v, m})->results()[0].shape(), Shape{2});
  EXPECT_EQ(op::resolve_call(*mm, {v, v})->results()[0].shape(), Shape{});
  EXPECT_EQ((*mm)({v, m})[0].shape(), matmul(v, m).shape());
  const Tensor scalar = cpu({7}, Shape{});
  const Tensor index = make_tensor<CPU>({std::int32_t{0}}, Shape{});
  const auto g = op::get_definition("gather");
  EXPECT_EQ(op::resolve_call(*g, {scalar, index}, {{"axis", std::int64_t{0}}})->results()[0].shape(), Shape{});
  // Broadcasting and reductions.
  const auto add = op::get_definition("add");
  EXPECT_EQ(op::resolve_call(*add, {cpu({1, 2, 3}, Shape{3, 1}), cpu({1, 2}, Shape{1, 2})})->results()[0].shape(),
            (Shape{3, 2}));
  const auto sum = op::get_definition("reduce_sum");
  EXPECT_EQ(op::resolve_call(*sum, {m}, {{"axes", std::vector<std::int64_t>{0}}, {"keepdims", true}})
                ->results()[0]
                .shape(),
            (Shape{1, 2}));
}

TEST(BuiltinDefinitions, MulHasItsThreeOverloads) {
  const Tensor x = cpu({1, 2, 3}, Shape{3});
  const auto mul_def = op::get_definition("mul");
  for (const std::vector<op::CallOperand>& operands :
       {std::vector<op::CallOperand>{x, x}, std::vector<op::CallOperand>{x, WeakScalar(2.0)},
        std::vector<op::CallOperand>{WeakScalar(2.0), x}}) {
    const auto invocation = op::resolve_call(*mul_def, operands);
    const Tensor r = (*mul_def)(operands)[0];
    EXPECT_EQ(r.shape(), invocation->results()[0].shape());
  }
  EXPECT_EQ(TypedTensor<float>((*mul_def)({WeakScalar(2.0), x})[0]).values(), (std::vector<float>{2, 4, 6}));
  // Two weak scalars: no carrier, a TypeError at resolution.
  EXPECT_THROW_EXACTLY((*mul_def)({WeakScalar(2.0), WeakScalar(3.0)}), TypeError);
  // A weak scalar where only a tensor belongs: a binding TypeError.
  EXPECT_THROW_EXACTLY((*op::get_definition("add"))({x, WeakScalar(1.0)}), TypeError);
}

TEST(BuiltinDefinitions, OptionDefaultsLiveInTheSchemaAndReachEveryCall) {
  const auto sum = op::get_definition("reduce_sum");
  const op::OptionSpec* keepdims = sum->schema().option("keepdims");
  ASSERT_NE(keepdims, nullptr);
  EXPECT_EQ(std::get<op::OptionValue>(keepdims->default_value()), op::OptionValue(false));
  const Tensor m = cpu({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(call_operation("reduce_sum", std::vector<CallOperand>{m}).results[0].shape(), reduce_sum(m).shape());
  // The by-name documentation is the schema's.
  const CallableOperation* elu_call = find_callable("elu");
  ASSERT_NE(elu_call, nullptr);
  ASSERT_EQ(elu_call->options.size(), 1u);
  EXPECT_EQ(elu_call->options[0].default_value,
            op::to_string(std::get<op::OptionValue>(op::get_definition("elu")->schema().option("alpha")->default_value())));
  // A required option is required everywhere.
  EXPECT_THROW_EXACTLY((*op::get_definition("cumsum"))({m}), TypeError);
  EXPECT_THROW_EXACTLY(call_operation("cumsum", std::vector<CallOperand>{m}), TypeError);
}

// Accumulator configurability is a field of the definition, and agrees with
// the central policy (R10) for every name.
TEST(BuiltinDefinitions, ConfigurableAccumulatorAgreesWithThePolicy) {
  for (const OperationSpec& spec : registered_operations()) {
    const auto d = op::get_definition(spec.name());
    bool policy_accepts = true;
    try {
      (void)OperationExecutionOptions(spec.name(), &DType::Float64());
    } catch (const TypeError&) {
      policy_accepts = false;
    }
    ASSERT_TRUE(d->builtin().has_value());
    EXPECT_EQ(d->builtin()->configurable_accumulator, policy_accepts) << spec.name();
    EXPECT_EQ(d->schema().option("accumulator_dtype") != nullptr, policy_accepts) << spec.name();
  }
  // The option reaches the plan.
  const Tensor m = cpu({1, 2, 3, 4}, Shape{2, 2});
  const auto invocation =
      op::resolve_call(*op::get_definition("reduce_sum"), {m}, {{"accumulator_dtype", &DType::Float64()}});
  EXPECT_EQ(invocation->plan().accumulator_dtype(), &DType::Float64());
  const auto fused = op::resolve_call(*op::get_definition("matmul"), {m, m}, {{"arithmetic", std::string("binary32_fused")}});
  EXPECT_EQ(fused->plan().compute(), Arithmetic::BINARY32_FUSED);
}

TEST(BuiltinDefinitions, DifferentiabilityIsTheAutogradTables) {
  for (const auto& d : op::registered_definitions()) {
    if (!d->is_builtin()) continue;
    EXPECT_EQ(d->is_differentiable(), autograd::find_vjp(d->name()) != nullptr) << d->name();
  }
  EXPECT_FALSE(op::get_definition("eq")->is_differentiable());
  EXPECT_FALSE(op::get_definition("argmax")->is_differentiable());
  EXPECT_FALSE(op::get_definition("select")->schema().operands()[0].differentiable());
  EXPECT_TRUE(op::get_definition("select")->schema().operands()[1].differentiable());
}

// The definition's VJP gives the gradients autograd gives for the typed
// call, back to each operand's own shape (broadcasts, vector promotion,
// the commuted mul overload).
TEST(BuiltinDefinitions, VjpAgreesWithAutogradOnTheTypedCall) {
  struct Case {
    const char* name;
    std::vector<op::CallOperand> operands;
    op::OptionMap options;
  };
  const Tensor col = cpu({1, 2, 3}, Shape{3, 1});
  const Tensor row = cpu({4, 5}, Shape{1, 2});
  const Tensor v = cpu({1, 2, 3}, Shape{3});
  const Tensor m = cpu({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  const std::vector<Case> cases = {
      {"add", {col, row}, {}},
      {"mul", {WeakScalar(3.0), v}, {}},
      {"matmul", {v, m}, {}},
      {"reduce_sum", {m}, {{"axes", std::vector<std::int64_t>{1}}}},
      {"select", {cpu({1, 0, 1}, Shape{3}) != 0.0f, v, cpu({7, 8, 9}, Shape{3})}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto d = op::get_definition(c.name);
    const auto invocation = op::resolve_call(*d, c.operands, c.options);
    const Tensor y = (*d)(c.operands, c.options)[0];
    std::vector<Tensor> saved;
    for (std::size_t i : invocation->saved_operands()) saved.push_back(std::get<Tensor>(c.operands[i]));
    const op::VJPContext context(invocation, {y}, saved);
    const Tensor cotangent = make_tensor<CPU>(std::vector<float>(static_cast<std::size_t>(y.shape().size()), 1.0f),
                                              Shape::of(y.shape().extents()));
    const std::optional<Tensor> cotangents[] = {cotangent};
    const std::vector<std::optional<Tensor>> grads = std::get<op::VjpFn>(d->vjp())(context, cotangents);

    // Autograd on the typed call.
    std::vector<op::CallOperand> leaves = c.operands;
    std::vector<Tensor> inputs;
    std::vector<std::size_t> differentiable;
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      if (!d->schema().operands()[i].differentiable()) continue;
      differentiable.push_back(i);
      if (Tensor* t = std::get_if<Tensor>(&leaves[i]); t && &t->dtype() == &DType::Float32()) {
        *t = t->detach();
        inputs.push_back(*t);
      }
    }
    const Tensor typed = (*d)(leaves, c.options)[0];
    const std::vector<std::optional<Tensor>> expected = grad(typed, inputs, cotangent);
    ASSERT_EQ(grads.size(), differentiable.size());
    std::size_t k = 0;
    for (std::size_t slot = 0; slot < differentiable.size(); ++slot) {
      const op::CallOperand& o = c.operands[differentiable[slot]];
      const Tensor* t = std::get_if<Tensor>(&o);
      if (!t) {
        EXPECT_FALSE(grads[slot].has_value());
        continue;
      }
      ASSERT_TRUE(grads[slot].has_value()) << "operand " << differentiable[slot];
      ASSERT_TRUE(expected[k].has_value());
      EXPECT_EQ(grads[slot]->shape(), t->shape());
      EXPECT_EQ(TypedTensor<float>(*grads[slot]).values(), TypedTensor<float>(*expected[k]).values());
      ++k;
    }
  }
}

TEST(BuiltinDefinitions, ReferenceRunsThePlanOnGeneric) {
  const Tensor a = cpu({1, 2, 3, 4}, Shape{2, 2});
  const Tensor b = cpu({10, 20}, Shape{2});
  for (const char* name : {"add", "elementwise_mul", "mul", "matmul"}) {
    const auto d = op::get_definition(name);
    const auto invocation = op::resolve_call(*d, {a, std::string_view(name) == "matmul" ? a : b});
    const std::vector<Tensor> reference = op::execute_reference(*d, *invocation);
    ASSERT_EQ(reference.size(), 1u);
    EXPECT_EQ(reference[0].carrier()->exact_class(), carrier_class<Generic>()) << name;
    const Tensor executed = (*d)({a, std::string_view(name) == "matmul" ? a : b})[0];
    EXPECT_EQ(TypedTensor<float>(reference[0]).values(), TypedTensor<float>(executed).values()) << name;
  }
  const auto relu_def = op::get_definition("relu");
  const Tensor x = cpu({-1, 2}, Shape{2});
  EXPECT_EQ(TypedTensor<float>(op::execute_reference(*relu_def, *op::resolve_call(*relu_def, {x}))[0]).values(),
            (std::vector<float>{0, 2}));
  const auto sum = op::get_definition("reduce_sum");
  EXPECT_EQ(TypedTensor<float>(op::execute_reference(*sum, *op::resolve_call(*sum, {a}))[0]).values(),
            (std::vector<float>{10}));
}

TEST(BuiltinDefinitions, ADefinitionCallIsRecordedLikeTheTypedCall) {
  Tensor x = cpu({1, 2, 3}, Shape{3});
  const Tensor y = (*op::get_definition("mul"))({x, x})[0];
  const Tensor total = reduce_sum(y);
  total.backward();
  ASSERT_TRUE(x.grad().has_value());
  EXPECT_EQ(TypedTensor<float>(*x.grad()).values(), (std::vector<float>{2, 4, 6}));
}

TEST(BuiltinDefinitions, ACallerOutputIsWrittenThroughTheDefinition) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  const Tensor a = cpu({1, 2}, Shape{2});
  const Tensor out = cpu({0, 0}, Shape{2});
  const std::vector<Tensor> r = (*op::get_definition("add"))({a, a}, {}, into(out));
  EXPECT_EQ(r[0].carrier().get(), out.carrier().get());
  EXPECT_EQ(TypedTensor<float>(out).values(), (std::vector<float>{2, 4}));
}

}  // namespace
