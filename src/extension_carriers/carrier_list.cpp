// The central list of carriers built on the public extension surface
// (carrier_list.h). One line per carrier folder; the definition-backed
// composite and accelerator carriers of the specifications land here:
// TiledEvictable (issue 22) and the CUDA carrier (issue 23).
#include "extension_carriers/carrier_list.h"

#include <array>

#include <strideweave/carriers/cuda.h>
#include <strideweave/carriers/evictable.h>
#include <strideweave/carriers/tiled_evictable.h>

namespace strideweave {
void register_tiled_evictable_definition();  // tiled_evictable/definition.cpp
void register_cuda_definition();            // cuda/cuda.cpp
}  // namespace strideweave

namespace strideweave::extension_carriers {
namespace {

// {public name, its class, its folder's registration}.
constexpr std::array kCarriers{
    ExtensionCarrier{"Evictable", &carrier_class<Evictable>, nullptr},  // evictable/: definition-free
    ExtensionCarrier{"TiledEvictable", &carrier_class<TiledEvictable>, &register_tiled_evictable_definition},
    ExtensionCarrier{"CUDA", &carrier_class<CUDA>, &register_cuda_definition},
};

}  // namespace

std::span<const ExtensionCarrier> extension_carriers() noexcept { return kCarriers; }

void register_extension_carriers() {
  for (const ExtensionCarrier& carrier : kCarriers)
    if (carrier.register_definition) carrier.register_definition();
}

}  // namespace strideweave::extension_carriers
