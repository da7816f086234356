// Generic's kernel table: the reference execution of the central plans. Each
// kernel walks the result in logical order (first mode fastest), reads every
// operand through Tensor::at and computes exactly what the plan says, one
// element at a time. Slow and obvious on purpose (STYLE.md habit 6). The
// kernels live in one file per operation family.
#include <strideweave/carriers/generic.h>

#include "carriers/generic/reference.h"
#include "carriers/kernel_axes.h"
#include "execution/kernel_table.h"

namespace strideweave {

using namespace carriers;
using namespace carriers::generic;

void Generic::register_kernels() {
  ReferenceKernels kernels;
  add_arithmetic_kernels(kernels);
  add_unary_kernels(kernels);
  add_reduction_kernels(kernels);
  add_structured_kernels(kernels);
  KernelTable table;
  for (const OperationPlan& plan : executable_plan_set()) {
    auto it = kernels.find(plan.operation());
    if (it != kernels.end()) table.add(plan, it->second, direct_write_axes(plan, SupportLevel::Native));
  }
  register_kernel_table(carrier_class<Generic>(), std::move(table));
}

}  // namespace strideweave
