// CPU's kernel table. Each plan of the executable plan set is offered to the
// kernel families; the family that executes it returns one typed
// instantiation. Mapping plans to types here, once, is the dtype-stripping
// seam: no kernel branches on dtype at run time. Each kernel chooses its
// layout case once per call (strided.h).
#include <strideweave/carriers/cpu.h>

#include "carriers/cpu/kernels.h"
#include "carriers/cpu/strided.h"
#include "carriers/kernel_axes.h"
#include "execution/kernel_table.h"
#include "movement/host_memory.h"

namespace strideweave {

using namespace carriers;
using namespace carriers::cpu;

void CPU::register_kernels() {
  // Movement's bulk routes reach CPU memory through the host-memory seam.
  detail::declare_host_memory_class(carrier_class<CPU>(),
                                    [](const Carrier& c) { return static_cast<const CPU&>(c).data<std::byte>(); });
  KernelTable table;
  for (const OperationPlan& plan : executable_plan_set()) {
    for (KernelFn (*family)(const OperationPlan&) : {arithmetic_kernel, unary_kernel, reduction_kernel, structured_kernel}) {
      if (KernelFn k = family(plan)) {
        // The elementwise arithmetic kernels honour KernelCall::accumulate
        // (arithmetic.cpp): accumulation is Native for them.
        table.add(plan, std::move(k), direct_write_axes(plan, SupportLevel::FallbackCopy, family == arithmetic_kernel));
        break;
      }
    }
  }
  // Every CPU kernel reads plain strided operands in place; the framework
  // copies the others (borrowed_input = FallbackCopy).
  table.set_in_place_reader(&has_plain_strides);
  register_kernel_table(carrier_class<CPU>(), std::move(table));
}

}  // namespace strideweave
