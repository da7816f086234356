// Must NOT compile: double literals in the row-major factory.
#include <strideweave/strideweave.h>

int main() {
  const strideweave::Tensor t = strideweave::tensor<strideweave::CPU>({{1.0, 2.0}, {3.0, 4.0}});
  return static_cast<int>(t.size());
}
