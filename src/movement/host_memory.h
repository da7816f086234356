// Internal: the host-memory seam of the bulk move routes (docs/storage.md,
// "Movement: routes").
//
// A carrier folder never includes another carrier (scripts/check_layers.py),
// so a storage carrier's bulk route to and from host memory cannot name the
// CPU class. Instead the class whose instances are plain host memory (CPU)
// declares itself here, once, from its own folder during the bootstrap
// (shipped carriers register before storage carriers), and the storage
// carriers' folders register their routes for (host_memory_class(), Self)
// and (Self, host_memory_class()) and reach the memory through
// host_memory_bytes().
#pragma once

#include <strideweave/carrier.h>

#include <cstddef>

namespace strideweave::detail {

// The instance's slot 0 (bytes of its dtype, contiguous over size() slots).
using HostBytesFn = std::byte* (*)(const Carrier& carrier);

// Declares `cls` the host-memory class. RuntimeError when one is already
// declared.
void declare_host_memory_class(CarrierClass cls, HostBytesFn bytes);
// The declared class; RuntimeError before the declaration.
CarrierClass host_memory_class();
// Slot 0 of a live host-memory instance; TypeError for an instance of
// another class.
std::byte* host_memory_bytes(const Carrier& carrier);

}  // namespace strideweave::detail
