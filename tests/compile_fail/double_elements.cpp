// Must NOT compile: double literals are not a tensor element type. The CTest
// `compile_fail_double_elements` passes when the compiler's output carries
// strideweave's static_assert message (tests/CMakeLists.txt).
#include <strideweave/strideweave.h>

int main() {
  const strideweave::Tensor t = strideweave::make_tensor<strideweave::CPU>({1.0, 2.0}, strideweave::Shape{2});
  return static_cast<int>(t.size());
}
