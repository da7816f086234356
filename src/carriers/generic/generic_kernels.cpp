// Generic's kernel table: the reference execution of the central plans. Each
// kernel walks the result in logical order (first mode fastest), reads every
// operand through Tensor::at and computes exactly what the plan says, one
// element at a time. Slow and obvious on purpose (STYLE.md habit 6). The
// kernels live in one file per operation family.
#include <strideweave/carriers/generic.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

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
  for (std::size_t i = 0; i < policy::kOperationCount; ++i)
    if (!kernels.count(static_cast<policy::OperationId>(i)))
      throw RuntimeError(fmt::format("operations.def lists '{}' but Generic, the executable reference, has no kernel "
                                     "for it",
                                     policy::kOperationNames[i]));
  KernelTable table;
  for (const OperationPlan& plan : executable_plan_set()) {
    const std::optional<policy::OperationId> id = policy::find_operation_id(plan.operation());
    if (!id) continue;
    auto it = kernels.find(*id);
    if (it != kernels.end()) table.add(plan, it->second, direct_write_axes(plan, SupportLevel::Native));
  }
  register_kernel_table(carrier_class<Generic>(), std::move(table));
}

}  // namespace strideweave
