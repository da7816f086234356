// Uses the installed library: resolves a plan and computes on the CPU, with
// the README's "Using the library" lines. Exits non-zero if an answer is
// wrong.
#include <strideweave/strideweave.h>

#include <cstdio>
#include <string>

int main() {
  using namespace strideweave;
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{2, 2});
  const Tensor b = make_tensor<CPU>(std::initializer_list<std::int32_t>{10, 20}, Shape{2});
  const OperationPlan plan = resolve_operation_plan("add", {a.dtype(), b.dtype()});
  const TypedTensor<float> sum(add(a, b));
  std::printf("%s\n", plan.to_string().c_str());
  // b broadcasts along axis 1 (right-aligned): (i, j) gets b[j].
  bool ok = &plan.output() == &DType::Float32() && sum.at({0, 0}) == 11.0f && sum.at({1, 1}) == 24.0f &&
            sum.at({0, 1}) == 23.0f && sum.at({1, 0}) == 12.0f;
  // README: the row-major factory, operators, printing and a caller output.
  const Tensor r = tensor<CPU>({{1.0f, 2.0f}, {3.0f, 4.0f}});
  const Tensor e = r * 2 + 1.0f;
  const std::string text = e.to_string();
  std::printf("%s\n", text.c_str());
  ok = ok && text == "tensor([[3.0, 5.0], [7.0, 9.0]], dtype=float32, carrier=CPU)";
  const Tensor out = make_tensor<CPU>({0.0f, 0.0f, 0.0f, 0.0f}, Shape{2, 2});
  add(r, r, into(out));
  ok = ok && out.at({1, 0}).f == 6.0f && out.carrier()->version() == 1;
  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
