// Uses the installed library: resolves a plan and computes on the CPU.
// Exits non-zero if the answer is wrong.
#include <strideweave/strideweave.h>

#include <cstdio>

int main() {
  using namespace strideweave;
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{2, 2});
  const Tensor b = make_tensor<CPU>(std::initializer_list<std::int32_t>{10, 20}, Shape{2});
  const OperationPlan plan = resolve_operation_plan("add", {a.dtype(), b.dtype()});
  const TypedTensor<float> sum(add(a, b));
  std::printf("%s\n", plan.to_string().c_str());
  // b broadcasts along axis 1 (right-aligned): (i, j) gets b[j].
  const bool ok = &plan.output() == &DType::Float32() && sum.at({0, 0}) == 11.0f && sum.at({1, 1}) == 24.0f &&
                  sum.at({0, 1}) == 23.0f && sum.at({1, 0}) == 12.0f;
  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
