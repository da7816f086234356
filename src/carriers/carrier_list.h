// Internal: registering the central list of shipped carriers
// (<strideweave/carriers/shipped.h>).
#pragma once

namespace strideweave::carriers {

// Names every shipped class and publishes its kernel table (and with it the
// class's capability declaration), in list order. Called once, by the
// library bootstrap (src/library/bootstrap.cpp).
void register_shipped_carriers();

}  // namespace strideweave::carriers
