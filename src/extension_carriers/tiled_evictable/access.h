// The TiledEvictable definition's way into the carrier (a friend of the
// class): storage callbacks, release, the snapshot, and the dense gather the
// direct operations use. Internal to src/extension_carriers/tiled_evictable/.
#pragma once

#include <span>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/carriers/tiled_evictable.h>
#include <strideweave/tensor.h>
#include <strideweave/value.h>

namespace strideweave {

struct TiledEvictableAccess {
  // The full logical Tensor's canonical Layout of a geometry.
  static Layout full_layout_of(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile);
  // The StorageProvider's callbacks (the framework validated liveness, the
  // run's bounds, mutability and the values' kind).
  static bool supports(const TiledEvictable& carrier, const DType& dtype) noexcept;
  static void read_range(const TiledEvictable& carrier, std::int64_t first, std::span<Value> out);
  static void write_range(TiledEvictable& carrier, std::int64_t first, std::span<const Value> values);
  static void release(TiledEvictable& carrier);
  // The CompositeProvider's snapshot (B8.4).
  static std::vector<OperationCapability> capabilities(const TiledEvictable& carrier);
  // The values of the full Tensor `tensor` (checked by the caller) as a
  // Tensor of the same offset and Layout over fresh dense storage of the
  // primary's class; every tile is pinned while it is read. RuntimeError for
  // an invalid tile or a tile in an incomplete residency request.
  static Tensor gather_dense(const TiledEvictable& carrier, const Tensor& tensor);
};

// Registers TiledEvictable's CarrierDefinition (the library bootstrap, once).
void register_tiled_evictable_definition();

}  // namespace strideweave
