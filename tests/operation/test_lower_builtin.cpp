// lower_builtin (<strideweave/call.h>; docs/extension.md, "Built-in
// operations in a kernel pattern"): a built-in call as its kernels see it.
// Derived from the kernel tables: for every plan of Generic's table, over
// the conformance generators' cases, Generic's own kernel run on
// lower_builtin's fields gives exactly the typed call's result (so a
// pattern that computes Generic's kernel from these fields, as the CUDA
// carrier's do, is the built-in operation).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "conformance/harness.h"
#include "execution/kernel_table.h"

#include <random>

namespace {

using namespace strideweave;

std::vector<operation::CallOperand> definition_operands(const std::vector<CallOperand>& operands) {
  std::vector<operation::CallOperand> out;
  for (const CallOperand& o : operands) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) out.emplace_back(*t);
    else out.emplace_back(std::get<WeakScalar>(o));
  }
  return out;
}

TEST(LowerBuiltin_Issue23, GenericKernelsOnTheLoweredCallGiveTheTypedCallsResult) {
  const KernelTable& generic = *kernel_table(carrier_class<Generic>());
  std::size_t checked = 0;
  for (const OperationPlan& plan : generic.plans()) {
    const auto gen = conformance::case_generators().find(plan.operation());
    ASSERT_NE(gen, conformance::case_generators().end()) << plan.operation();
    std::mt19937 rng(20261207);
    for (const conformance::TwinCase& c : gen->second(plan, rng)) {
      const ExecutionRequest request = execution_request_of(plan);
      CallResult expected;
      try {
        expected = call_operation(plan.operation(), c.generic, c.options, request);
      } catch (const std::exception&) {
        continue;  // an erroring case: the typed call's error is lower_builtin's too (below)
      }
      if (expected.plans.size() != 1 || !(expected.plans[0] == plan)) continue;
      operation::OptionMap options = c.options;
      // The request as the schema's options (reduce_sum's and matmul's).
      if (request.accumulator) options.emplace("accumulator_dtype", request.accumulator);
      if (request.arithmetic) options.emplace("arithmetic", std::string(value_of(*request.arithmetic)));
      const auto definition = operation::get_definition(plan.operation());
      const auto invocation = operation::resolve_call(*definition, definition_operands(c.generic), options);
      const BuiltinKernelCall lowered = lower_builtin(*invocation);
      EXPECT_EQ(lowered.plan, plan) << c.label;
      std::vector<Value> zeros(static_cast<std::size_t>(lowered.kernel_shape.size()), *storage_zero(plan.output()));
      const Tensor out(Generic::create(zeros, plan.output()), lowered.kernel_shape);
      const KernelFn* kernel = generic.find(lowered.plan);
      ASSERT_NE(kernel, nullptr) << plan.to_string();
      (*kernel)(KernelCall{lowered.plan, lowered.operands, lowered.attributes, out});
      const Tensor& published = expected.results[0];
      EXPECT_EQ(invocation->results()[0].shape(), published.shape()) << c.label;
      EXPECT_EQ(out.values(), published.values())  // bitwise for Float32 (Value ==)
          << plan.to_string() << " " << c.label;
      ++checked;
    }
  }
  EXPECT_GT(checked, 500u);
}

TEST(LowerBuiltin_Issue23, RefusesWhatIsNotOneBuiltinKernelPlan) {
  const auto x = Tensor(CPU::create(2), Shape::of({2}));
  const auto user = operation::define_operation(
      "test_lower_builtin_cpp.identity",
      operation::OperationSchema({operation::OperandSpec("x", operation::OperandKind::TENSOR)}),
      [](const operation::BoundOperationCall& call) {
        const SimpleDType& f = DType::Float32();
        return operation::ResolvedInvocation(
            call, OperationPlan(call.definition().name(), {OperandPlan::tensor(f)}, Arithmetic::BINARY32,
                                std::nullopt, nullptr, f),
            {operation::ResultSpec::compact(f, call.tensor(0).shape())});
      },
      std::nullopt, operation::NON_DIFFERENTIABLE);
  const auto invocation = operation::resolve_call(*user, {x}, {});
  EXPECT_THROW(lower_builtin(*invocation), TypeError);
}

}  // namespace
