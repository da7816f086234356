// Internal: CPU's kernel registration (one line in carrier_list.cpp).
#pragma once

namespace strideweave::carriers::cpu {

void register_cpu();

}  // namespace strideweave::carriers::cpu
