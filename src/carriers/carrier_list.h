// Internal: the one central list of shipped carriers (carrier_list.cpp).
#pragma once

namespace strideweave::carriers {

// Publishes every shipped carrier's kernel table, once, in list order.
void register_shipped_carriers();

}  // namespace strideweave::carriers
