// The TiledEvictable definition's way into the carrier (a friend of the
// class): storage callbacks, release, the snapshot, and the tile pins and
// staging accounts the streaming engine (stream.cpp, direct.cpp) uses.
// Internal to src/extension_carriers/tiled_evictable/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/extension.h>
#include <strideweave/operation.h>
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
  // The streaming engine's way to the tiles (stream.cpp). pin_tile: under
  // the lock, waits out a best-effort prefetch of tile t, then pins it
  // (users + 1) and returns its primary run when it is resident; an
  // implicit tile is pinned and sets `implicit`; a valid secondary tile
  // is pinned and `secondary` set (the caller stages it). RuntimeError when
  // released, for an invalid tile, or a tile in another caller's incomplete
  // residency request. unpin_tile undoes one pin.
  static std::optional<std::pair<std::shared_ptr<Carrier>, std::int64_t>> pin_tile(
      TiledEvictable& carrier, std::int64_t tile, bool& implicit, std::shared_ptr<Carrier>& secondary);
  static void unpin_tile(TiledEvictable& carrier, std::int64_t tile) noexcept;
  // Counts running work as unfinished (release() refuses) until dropped.
  static std::shared_ptr<void> hold(TiledEvictable& carrier) { return carrier.hold_pending(); }
  // Whether `extra` more primary bytes would take the instance past its budget.
  static bool exceeds_budget_with(const TiledEvictable& carrier, std::int64_t extra);
  // Staged bytes come (delta > 0) or go; `read` bytes were copied from the
  // secondary.
  static void note_staged(TiledEvictable& carrier, std::int64_t delta, std::int64_t read) noexcept;
  // The prefetch counters: `prefetched` tiles staged ahead, `hits` and
  // `stalls` (TiledEvictableCounters).
  static void note_prefetch(TiledEvictable& carrier, std::int64_t prefetched, std::int64_t hits,
                            std::int64_t stalls) noexcept;
  // Makes `block` (tile-size, Float32, the tile's values in slot order) tile
  // t's primary block, dirty; its bytes move from staged to resident.
  static void install_block(TiledEvictable& carrier, std::int64_t tile, std::shared_ptr<Carrier> block);
  // Every tile valid (RuntimeError naming the first invalid one otherwise).
  static void require_all_valid(const TiledEvictable& carrier, const char* what);
  // The same for the tiles `tiles`.
  static void require_valid(const TiledEvictable& carrier, std::span<const std::int64_t> tiles, const char* what);
  // The values of the selected tiles of `tensor` (a checked full Tensor),
  // in the compact result's logical order; the tiles are pinned while read.
  static std::vector<Value> gather_selected(const TiledEvictable& carrier, const Tensor& tensor,
                                            const TileSelection& selection);
  // A fresh instance like `like` (geometry, tier classes, policy) whose
  // selected tiles are implicit zero and every other tile invalid: what a
  // scatter fills.
  static std::shared_ptr<TiledEvictable> fresh_with_valid(const TiledEvictable& like, const TileSelection& selection);
  // Best effort, for transfers that only speed work up (project's and
  // scatter's, a policy's promotions): promotes the valid tiles of `tiles`
  // that are not resident and not in use by anyone; a completed handle when
  // none qualify. Errors of the transfer itself surface at wait().
  // `reserve_bytes` of the budget are left free (for a streamed pass that
  // follows: its staged tile and prefetched ones). `submitted`, when given,
  // receives the tiles the transfer promotes.
  static AwaitResidency prefetch(TiledEvictable& carrier, const TileSet& tiles, std::int64_t reserve_bytes = 0,
                                 TileSet* submitted = nullptr);
  // Undoes a failed call's own best-effort promotions (docs/tiled_evictable.md,
  // "Failure"): evicts the tiles of `promoted` that are still primary,
  // clean and unused, which moves no data (their secondary copy is kept).
  static void undo_promotions(TiledEvictable& carrier, const TileSet& promoted) noexcept;
  // The same as a guard: a call's promotions, undone at scope exit unless
  // dismissed (the call succeeded).
  class PromotionsUndoneOnFailure {
   public:
    PromotionsUndoneOnFailure() = default;
    PromotionsUndoneOnFailure(const PromotionsUndoneOnFailure&) = delete;
    PromotionsUndoneOnFailure& operator=(const PromotionsUndoneOnFailure&) = delete;
    ~PromotionsUndoneOnFailure() {
      for (auto& [carrier, tiles] : promoted_) undo_promotions(*carrier, tiles);
    }
    // A prefetch of `tiles` whose promotions the guard undoes.
    AwaitResidency prefetch(const std::shared_ptr<TiledEvictable>& carrier, const TileSet& tiles) {
      promoted_.emplace_back(carrier, TileSet());
      return TiledEvictableAccess::prefetch(*carrier, tiles, 0, &promoted_.back().second);
    }
    void dismiss() noexcept { promoted_.clear(); }

   private:
    std::vector<std::pair<std::shared_ptr<TiledEvictable>, TileSet>> promoted_;
  };
  // Best effort, for a policy's evictions after the work: evicts the
  // resident tiles of `tiles` that are not in use. A failure changes no
  // tile (evict is failure-atomic) and is dropped: the work's result stands.
  static void evict_if_possible(TiledEvictable& carrier, const TileSet& tiles) noexcept;
};

// ---- projection (projection.cpp) and scatter (scatter.cpp)

// The projection's shape: per axis, len(per_axis[i]) * tile_shape[i].
std::vector<std::int64_t> projected_shape(const TiledEvictable& tiled, const TileSelection& selection);

// Calls f(selected, tile, index, key, slot) for every element of the
// projection of `tensor` (a checked full Tensor of `tiled`) by `selection`,
// tile by tile: selected is the position in coordinates() order, tile the
// source tile's index, index the element's position in the compact
// result's logical order, key its logical key in the full Tensor (first
// axis fastest), slot the carrier slot the Tensor's offset and Layout give
// it.
template <class F>
void for_each_projected(const TiledEvictable& tiled, const Tensor& tensor, const TileSelection& selection, F&& f) {
  const std::size_t rank = selection.rank();
  const std::vector<std::int64_t>& tile = tiled.tile_shape();
  const std::vector<std::int64_t>& logical = tiled.logical_shape();
  const std::vector<std::int64_t> compact = projected_shape(tiled, selection);
  std::vector<std::int64_t> grid_stride(rank), logical_stride(rank), compact_stride(rank);
  std::int64_t g = 1, l = 1, c = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    grid_stride[i] = g;
    logical_stride[i] = l;
    compact_stride[i] = c;
    g *= tiled.grid_shape()[i];
    l *= logical[i];
    c *= compact[i];
  }
  const std::vector<TileCoordinate> coordinates = selection.coordinates();
  std::vector<std::int64_t> cc(rank, 0);  // the compact tile coordinate
  for (std::size_t s = 0; s < coordinates.size(); ++s) {
    const TileCoordinate& source = coordinates[s];
    std::int64_t t = 0;
    for (std::size_t i = 0; i < rank; ++i) t += source[i] * grid_stride[i];
    std::vector<std::int64_t> w(rank, 0);  // the within-tile coordinate
    for (std::int64_t e = 0; e < tiled.tile_size(); ++e) {
      std::int64_t key = 0, index = 0;
      for (std::size_t i = 0; i < rank; ++i) {
        key += (source[i] * tile[i] + w[i]) * logical_stride[i];
        index += (cc[i] * tile[i] + w[i]) * compact_stride[i];
      }
      f(s, t, index, key, tensor.offset() + tensor.layout()(key));
      for (std::size_t i = 0; i < rank; ++i) {  // first axis fastest
        if (++w[i] < tile[i]) break;
        w[i] = 0;
      }
    }
    for (std::size_t i = 0; i < rank; ++i) {
      if (++cc[i] < static_cast<std::int64_t>(selection.per_axis()[i].size())) break;
      cc[i] = 0;
    }
  }
}


// A TileSelection as the gather operation's `per_axis` option: [rank,
// len(per_axis[0]), ..., then every axis's coordinates]. decode is the
// inverse; a malformed list is a ValueError naming `what`.
std::vector<std::int64_t> encode_selection(const TileSelection& selection);
TileSelection decode_selection(std::span<const std::int64_t> encoded, const char* what);
// The gather operation behind project() ("tiled_evictable.gather"),
// registered once; its plan for `dtype` (every instance's snapshot holds the
// one of its dtype).
std::shared_ptr<const operation::OperationDefinition> gather_definition();
OperationCapability gather_capability(const SimpleDType& dtype);
// The composite's preparation of a gather invocation.
extension::CompositeProvider::Prepared prepare_gather(const operation::ResolvedInvocation& invocation);

// The scatter operation behind scatter() ("tiled_evictable.scatter"); its
// plan for `dtype` and `reduction`; the composite's preparation.
std::shared_ptr<const operation::OperationDefinition> scatter_definition();
OperationCapability scatter_capability(const SimpleDType& dtype, ScatterReduction reduction);
extension::CompositeProvider::Prepared prepare_scatter(const operation::ResolvedInvocation& invocation);

// ---- the residency policy (definition.cpp)

// B14: `instance`'s policy's plan for the tiles `required` by work of kind
// `purpose` ("operation", "projection", "scatter", "backward"); an empty plan
// without a policy. Its sets must fit the grid (ValueError); the policy's
// own exceptions propagate. Asked before any work.
ResidencyPlan policy_plan(const TiledEvictable& instance, const TileSet& required, const char* purpose);
// The TiledEvictable a Tensor lives on (TypeError naming `what` otherwise).
const TiledEvictable& tiled_of(const Tensor& tensor, const char* what);
// The tiles in either set.
TileSet tile_union(const TileSet& a, const TileSet& b);

// ---- the direct operations (direct.cpp)

// The dense primary-class result of a direct operation (add,
// elementwise_mul, mul, relu, reduce_sum, matmul) on full tiled operands
// (checked), streamed within each instance's budget.
Tensor run_direct_operation(const operation::ResolvedInvocation& invocation);

// The backward of a call the composite executed (CompositeProvider::
// backward): gather's and scatter's own VJPs; for the six, the operation's
// VJP applied block by block over the forward's schedule, each tiled
// operand's gradient accumulated tile by tile into a fresh TiledEvictable.
std::vector<std::optional<Tensor>> run_direct_backward(const operation::VJPContext& context,
                                                       std::span<const std::optional<Tensor>> cotangents);

// Registers TiledEvictable's CarrierDefinition (the library bootstrap, once).
void register_tiled_evictable_definition();

}  // namespace strideweave
