// `strideweave` with no arguments (or `strideweave tour`): a short tour on
// the built-in default.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "values_json.h"

namespace strideweave::cli {

int run_tour() {
  std::cout << "strideweave " STRIDEWEAVE_VERSION_TEXT " - a C++20 tensor runtime\n"
            << "Every operation call resolves to one immutable OperationPlan through the central dtype policy;\n"
            << "each carrier executes exactly the plans it registered, and nothing else.\n\n";
  std::cout << "Registered operations: " << registered_operations().size() << " ("
            << resolvable_plans().size() << " resolvable plans with the default probes)\n";
  std::cout << "Carriers with kernels:\n";
  for (const ShippedCarrier& c : shipped_carriers())
    std::cout << fmt::format("  {:<8} {} plans\n", c.name, capabilities_for_carrier_class(c.cls).size());
  std::cout << fmt::format("CPU kernels use {} thread(s) (set_num_threads, STRIDEWEAVE_NUM_THREADS{})\n\n", num_threads(),
                           threading_available() ? "" : "; this build runs them on the calling thread");

  const Tensor a = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});
  const Tensor b = make_tensor<CPU>(std::initializer_list<std::int32_t>{10, 20, 30}, Shape{1, 3});
  // Tensors print as `strideweave run` prints them: values nested with the
  // outer list = axis 0 (make_tensor fills them first mode fastest).
  std::cout << "a = " << tensor_text(a) << "   (make_tensor<CPU>({1, ..., 6}, Shape{2, 3}): first mode fastest)\n";
  std::cout << "b = " << tensor_text(b) << "\n\n";

  auto step = [](const char* label, const OperationPlan& plan, const Tensor& result) {
    std::cout << label << "\n  plan:   " << plan.to_string() << "\n  result: " << tensor_text(result) << "\n";
  };
  step("add(a, b)  # Int32 and Float32 meet: both convert to Float32; b broadcasts",
       resolve_operation_plan("add", {a.dtype(), b.dtype()}), add(a, b));
  step("mul(b, 2)  # an integer weak scalar keeps Int32 (checked)", resolve_operation_plan("mul", {b.dtype(), 2}),
       mul(b, 2));
  step("mul(b, 0.5)  # a float weak scalar selects the Float32 plan",
       resolve_operation_plan("mul", {b.dtype(), 0.5}), mul(b, 0.5));
  step("relu(a + (-3.5))", resolve_operation_plan("relu", {a.dtype()}),
       relu(add(a, mul(make_tensor<CPU>({-3.5f}, Shape{1}), 1))));
  step("reduce_sum(a, axes=[1])", resolve_operation_plan("reduce_sum", {a.dtype()}), reduce_sum(a, {1}));
  const OperationExecutionOptions wide("reduce_sum", &DType::Float64());
  step("reduce_sum(a) with the Float64 accumulator", resolve_operation_plan("reduce_sum", {a.dtype()}, nullptr, &wide),
       reduce_sum(a, Axes::all(), false, wide));
  step("matmul(a, permute(a))", resolve_operation_plan("matmul", {a.dtype(), a.dtype()}), matmul(a, a.permute({1, 0})));
  const OperationExecutionOptions fused("matmul", nullptr, Arithmetic::BINARY32_FUSED);
  step("matmul(a, permute(a)) contracted on request (beyond the specification)",
       resolve_operation_plan("matmul", {a.dtype(), a.dtype()}, nullptr, &fused), matmul(a, a.permute({1, 0}), fused));
  try {
    mul(b, 1LL << 31);
  } catch (const OverflowError& e) {
    std::cout << "mul(b, 2**31) -> OverflowError: " << e.message() << "\n";
  }
  std::cout << "\nMore: strideweave plans --json | strideweave resolve add dtype:int32 dtype:float32 --json\n"
            << "      strideweave --help lists every subcommand\n";
  return 0;
}

Command add_tour_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "tour",
      "A short tour: what the library is, the carriers with kernels, a few operations with their plans "
      "(what strideweave alone runs)");
  return {sub, [] { return run_tour(); }};
}

}  // namespace strideweave::cli
