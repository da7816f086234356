// Internal: Generic's kernel registration (one line in carrier_list.cpp).
#pragma once

namespace strideweave::carriers::generic {

void register_generic();

}  // namespace strideweave::carriers::generic
