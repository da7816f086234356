// Internal: the one central list of shipped carriers (carrier_list.cpp).
#pragma once

namespace strideweave::carriers {

// Publishes every shipped carrier's kernel table (and with it the class's
// capability declaration), once, in list order. Safe to call from any
// thread; the registries call it before their first answer so that a
// shipped class is never observed before it declared.
void ensure_registered();

}  // namespace strideweave::carriers
