// The central list of shipped carriers: one registration line each. A new
// carrier adds its folder under src/carriers/ and one line here.
#include "carriers/carrier_list.h"

#include "carriers/cpu/cpu_kernels.h"
#include "carriers/generic/generic_kernels.h"

namespace strideweave::carriers {

void register_shipped_carriers() {
  generic::register_generic();
  cpu::register_cpu();
}

}  // namespace strideweave::carriers
