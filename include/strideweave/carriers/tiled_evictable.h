// strideweave/carriers/tiled_evictable.h — TiledEvictable, one flat logical
// extent cut into tiles whose residency is controlled tile by tile
// (carrier-composition.md Part B; backend-capabilities.md, "TiledEvictable";
// operation-semantics.md, "The direct tiled operation set";
// docs/tiled_evictable.md).
//
// TiledEvictable is the one definition-backed shipped composite: a closed
// extension::DefinedDependentCarrier whose CarrierDefinition holds a
// StorageProvider (its slots, read and written through the tiles' current
// residency) and a CompositeProvider (the six direct operations). It is built
// through the public surface only (src/extension_carriers/tiled_evictable/).
//
// Geometry (B1, B2). rank = grid_shape.size() = tile_shape.size() >= 1, every
// extent >= 1; logical_shape[i] = grid_shape[i] * tile_shape[i]. The tile of a
// logical coordinate c is c // tile_shape (per axis); tiles are numbered
// first-axis-fastest over grid_shape. The carrier's slots are tile-major:
// tile t owns slots [t * tile_size, (t + 1) * tile_size) (its *carrier tile
// footprint*), within-tile coordinates first-axis-fastest, so one tile is one
// contiguous run of every tier (one sequential read of a file). The full
// logical Tensor over the carrier is Tensor(carrier, 0, full_layout()), whose
// axis i is the nested mode (tile_shape[i], grid_shape[i]); any Tensor whose
// offset and Layout map every tile's logical coordinates injectively onto
// exactly that tile's footprint (a within-tile permutation is allowed) is a
// full Tensor too (check_full_tensor; ValueError otherwise, before any work).
//
// Construction (TiledEvictable::create), checks in this order before anything
// is claimed:
//   primary or secondary null (not a Carrier)            TypeError
//   primary and secondary are the same object             ValueError
//   primary released, then secondary released             RuntimeError
//   primary owned, then secondary owned                   RuntimeError
//   the tiers' dtypes are not the same descriptor         TypeError
//   a rank or extent outside the rules above, or ranks that differ,
//   or a logical extent that overflows int64              ValueError
//   a tier that is neither empty nor exactly the logical extent  ValueError
//   the secondary is not publicly mutable                 RuntimeError
// then claims both tiers (all or nothing) and freezes its capability snapshot.
// A full primary seeds every tile (primary-resident and dirty: the values are
// not yet in the secondary); else a full secondary seeds every tile
// (secondary-resident, clean); else every tile starts invalid. Each primary
// residency is a block of the primary's exact class: a seed tile lives in the
// given primary (released once no tile lives there), a promoted tile in a
// fresh tile-sized block. An empty secondary is replaced by fresh storage of
// its class, of the logical extent, at the first eviction that needs it.
//
// Tile states (B6): location() is Primary (a primary block holds the value),
// Secondary (only the secondary does), Implicit (an implicit zero, no
// storage: what a fresh new_like/allocate_like and gradient tiles hold) or
// Invalid (no value: unreadable until promoted or written through a scatter).
// dirty = primary-resident and not (yet) saved to the secondary.
//
// Value access (the carrier's slots): a slot of a primary tile reads and
// writes its block (a write makes the tile dirty); of a secondary tile, the
// secondary; of an implicit tile, reads 0 and a write first gives the tile a
// zeroed primary block; of an invalid tile, RuntimeError. A slot of a tile in
// another caller's incomplete residency request -> RuntimeError (B13.3).
// Write-behind: a write that gives a tile its block and fills the whole tile
// while the instance holds more than its budget saves the tile to the
// secondary before it returns (the tile ends secondary-resident and clean;
// best effort), so filling an instance run by run stays within the budget.
//
// Residency (B7, B13). promote_async(tiles) / evict_async(tiles) take a
// TileSet or a TileSelection (rank or range against the grid -> ValueError;
// released -> RuntimeError; a tile that is in another incomplete residency
// request or in use by running work -> RuntimeError at once, never a wait),
// mark the tiles, and return an AwaitResidency at once; the transfers run on
// the instance's own worker thread. promote makes each tile primary-valid
// (copying from the secondary, or zeroing an implicit tile; an invalid tile
// fails the request with RuntimeError); evict saves each dirty tile to the
// secondary, then drops its primary block. Both are idempotent, record no
// autograd node, step no version, and are failure-atomic: a failed request
// leaves every tile as it was (fresh storage is dropped) and the instance
// usable. promote(tiles) / evict(tiles) = the async form + wait().
//
// Direct operations (B8). A raw tiled Tensor is an operand only of add,
// elementwise_mul, mul (tensor/tensor, tensor/weak, weak/tensor), relu,
// reduce_sum and matmul: the snapshot holds the primary class's plans of
// those six names whose results the primary can store; any other name is
// UnsupportedOperationPlan at the gate. The operation means the full logical
// Tensor (every tile, whatever is resident), may block to make values
// available, and publishes an ordinary dense Tensor of the primary's exact
// class; the call is the one visible node (its VJP the operation's; a
// gradient for a tiled operand is a fresh TiledEvictable of the same tier
// classes and geometry). A residency_policy is asked plan(required,
// "operation") first (B14): its promotions run before the work, its
// evictions after it; a plan naming tiles outside the grid -> ValueError, a
// policy that returns something else -> TypeError, both before any work.
//
// The operations stream (docs/tiled_evictable.md, "Streaming"): the result
// is allocated once and filled block by block, where a block never crosses
// a tile of any operand. A tile that is primary-resident is read in place;
// any other is *staged*: copied from the secondary into a tile-sized primary
// buffer that lives only for the operation and never changes the tile's
// state. Elementwise operations and relu run the primary's operation per
// block; reduce_sum combines per-tile partial sums in the plan's
// accumulator (Float32 or Float64; exact integers for Int32, the narrowing
// checked once at the end) in ascending tile order, so its answer depends on
// neither residency nor the budget; matmul keeps the result resident and
// streams the contraction in tile panels (Float32 accumulation: partial
// products summed in binary32 panel by panel; a Float64 accumulator or Int32
// operands: one product per result block over the whole contraction, so
// the plan's accumulation holds exactly).
//
// The residency budget (residency_bytes, default 512 MiB). Staged tiles
// are kept, while they will be needed again, only as long as the tiles the
// instance holds in the primary plus the staged ones fit the budget; beyond
// it the staged tile needed furthest in the future is dropped (free: its
// value is in the secondary). So an operation holds at most max(budget,
// the primary-resident tiles) + the result + one staged tile per operand
// (+ matmul's panel, and one block result). Explicit promote() and a
// primary that seeds the tiles are the caller's decision and are not
// limited by it. resident_bytes() and counters() report.
//
// Release (B15). release() frees every tile block and both tiers; with an
// incomplete residency request or running work -> RuntimeError, nothing
// released. Afterwards residency requests, value access and dispatch raise
// RuntimeError.
//
// Backward (docs/tiled_evictable.md, "Backward"): the composite applies the
// operation's own VJP block by block over the forward's schedule
// (extension::CompositeProvider::backward); a tiled operand's gradient is a
// fresh Float32 TiledEvictable written tile by tile, its completed tiles
// written back to the secondary asynchronously while the gradient exceeds
// its budget.
//
// Prefetch (docs/tiled_evictable.md, "Prefetch"). A direct operation's, a
// backward's and a projection's tile order is known before they start, so while the caller
// computes on one tile the next prefetch_depth uses (default 2) are pinned
// and their secondary tiles staged on an I/O thread, within the budget: a
// fetch takes a free byte of the budget or the place of a staged tile
// needed after it (Belady's rule again), never of one needed sooner, and
// stops there. Staging runs off the calling thread only when both tiers are
// shipped classes (their I/O never calls back into user code); otherwise,
// and at depth 0, tiles are staged when needed. Tiles move as bytes
// (Carrier::read_bytes), never as Values. The counters record tiles the
// prefetcher staged, prefetch hits (a tile's first use found it staged)
// and stalls (a use that waited for its tile: a fetch still in flight, or a
// tile read when needed).
//
// Failure (docs/tiled_evictable.md, "Failure"). When a tier's I/O fails
// during evict, promote, project, scatter, a direct operation or a
// backward, the call raises the OSError (at wait() for a handle), publishes
// nothing, and leaves every tile's state, every value and the version as
// they were (the call's own best-effort promotions are undone); the
// instance stays usable.
//
// Not built yet (issue 22; docs/tiled_evictable.md, "Not built yet"):
// io_uring batched tier reads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <strideweave/completion.h>
#include <strideweave/extension.h>
#include <strideweave/layout.h>
#include <strideweave/move_operation.h>
#include <strideweave/placement.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// One tile's coordinate: one integer per grid axis.
using TileCoordinate = std::vector<std::int64_t>;

class TileSet;

// B3 An ordered Cartesian product of tile coordinates: per_axis[i] lists the
// tiles of axis i in the caller's order. Every axis non-empty, no axis empty
// list, no duplicate within an axis, no negative coordinate -> ValueError
// otherwise (an empty per_axis too).
class TileSelection {
 public:
  explicit TileSelection(std::vector<std::vector<std::int64_t>> per_axis);

  const std::vector<std::vector<std::int64_t>>& per_axis() const noexcept { return per_axis_; }
  std::size_t rank() const noexcept { return per_axis_.size(); }
  // per_axis[i].size() for each axis.
  std::vector<std::int64_t> compact_grid_shape() const;
  // The product, first axis fastest: compact coordinate c maps to
  // (per_axis[0][c[0]], per_axis[1][c[1]], ...).
  std::vector<TileCoordinate> coordinates() const;
  TileSet tile_set() const;
  // ValueError naming `what` unless rank() == grid_shape.size() and every
  // coordinate lies inside grid_shape.
  void check_against(std::span<const std::int64_t> grid_shape, const char* what) const;

  friend bool operator==(const TileSelection&, const TileSelection&) = default;

 private:
  std::vector<std::vector<std::int64_t>> per_axis_;
};

// B12 An immutable set of full-rank tile coordinates, sorted first axis
// fastest (by the reversed tuple). Mixed ranks, a negative component or a
// duplicate -> ValueError. The empty set is valid (and has no rank).
class TileSet {
 public:
  TileSet() = default;
  explicit TileSet(std::vector<TileCoordinate> coordinates);

  const std::vector<TileCoordinate>& coordinates() const noexcept { return coordinates_; }
  std::size_t size() const noexcept { return coordinates_.size(); }
  bool empty() const noexcept { return coordinates_.empty(); }
  // The coordinates' rank; nullopt when empty.
  std::optional<std::size_t> rank() const noexcept;
  bool contains(std::span<const std::int64_t> coordinate) const;
  // ValueError naming `what` unless every coordinate has grid_shape's rank
  // and lies inside it (the empty set binds to every grid).
  void check_against(std::span<const std::int64_t> grid_shape, const char* what) const;

  friend bool operator==(const TileSet&, const TileSet&) = default;

 private:
  std::vector<TileCoordinate> coordinates_;
};

// B12 What a ResidencyPolicy asks for: tiles to promote, to retain and to
// evict. A tile in two of the sets -> ValueError.
class ResidencyPlan {
 public:
  explicit ResidencyPlan(TileSet promote = {}, TileSet retain = {}, TileSet evict = {});
  const TileSet& promote() const noexcept { return promote_; }
  const TileSet& retain() const noexcept { return retain_; }
  const TileSet& evict() const noexcept { return evict_; }
  friend bool operator==(const ResidencyPlan&, const ResidencyPlan&) = default;

 private:
  TileSet promote_, retain_, evict_;
};

// B14 A residency policy: asked, before tiled work, what to promote, retain
// and evict around the tiles the work requires. `purpose` is "operation",
// "projection", "scatter" or "backward". It may only optimise: required
// tiles are always loaded, evictions of tiles the work needs are deferred
// until it is done, and without a policy every result is the same. An
// exception propagates before any work.
class STRIDEWEAVE_EXPORT ResidencyPolicy {
 public:
  virtual ~ResidencyPolicy() = default;
  virtual ResidencyPlan plan(const TileSet& required, std::string_view purpose) = 0;
};

enum class TileLocation { Primary, Secondary, Implicit, Invalid };
STRIDEWEAVE_EXPORT const char* to_string(TileLocation location) noexcept;  // "primary", "secondary", ...

struct TileState {
  TileLocation location = TileLocation::Invalid;
  bool valid = false;  // location != Invalid
  bool dirty = false;  // primary-resident and not saved to the secondary
  friend bool operator==(const TileState&, const TileState&) = default;
};

// The handle of a residency request (core-concepts' AwaitResult): done()
// becomes true at the request's terminal outcome; wait() blocks until then
// and rethrows its failure (every wait the same one). Thread-safe; copies
// share the request; dropping every handle neither cancels nor blocks it.
class AwaitResidency {
 public:
  explicit AwaitResidency(extension::ProviderCompletion<void> completion) : completion_(std::move(completion)) {}
  bool done() const noexcept { return completion_.done(); }
  void wait() const { completion_.wait(); }

 private:
  extension::ProviderCompletion<void> completion_;
};

// The handle of a projection (B4; core-concepts' AwaitResult[Tensor]): the
// transfers of the selected tiles start when project() returns it; the
// first wait() finishes them and gathers the compact Tensor, and every wait
// returns that same Tensor (or rethrows the same failure). done() becomes
// true at that terminal outcome. Thread-safe; not a Tensor.
class AwaitProjection {
 public:
  explicit AwaitProjection(extension::ProviderCompletion<Tensor> completion) : completion_(std::move(completion)) {}
  bool done() const noexcept { return completion_.done(); }
  Tensor wait() const { return completion_.wait(); }

 private:
  extension::ProviderCompletion<Tensor> completion_;
};

// B10 How scatter combines the compact values with the template's.
enum class ScatterReduction { Replace, Add };

// The residency budget a TiledEvictable takes when none is given: 512 MiB
// (docs/tiled_evictable.md, "The residency budget").
inline constexpr std::int64_t default_residency_bytes = std::int64_t{512} << 20;
inline constexpr std::int64_t default_prefetch_depth = 2;

struct TiledEvictableOptions {
  // Consulted before tiled work (B14); null: none.
  std::shared_ptr<ResidencyPolicy> residency_policy;
  // The residency budget in bytes (> 0, ValueError otherwise): the primary
  // memory the instance uses on its own initiative (see "The residency
  // budget" above).
  std::int64_t residency_bytes = default_residency_bytes;
  // How many uses ahead of the current one are staged while it computes
  // (>= 0, ValueError otherwise; 0: staged when needed). See "Prefetch".
  std::int64_t prefetch_depth = default_prefetch_depth;
};

// What an instance has moved and held since construction (monotonic but
// for peak_resident_bytes, the largest resident_bytes() seen).
struct TiledEvictableCounters {
  std::int64_t bytes_read = 0;     // from the secondary tier: promotions, staged tiles, reads of secondary tiles
  std::int64_t bytes_written = 0;  // to the secondary tier: evictions of dirty tiles
  std::int64_t peak_resident_bytes = 0;
  std::int64_t tiles_prefetched = 0;  // secondary tiles the prefetcher staged ahead of their use
  std::int64_t prefetch_hits = 0;     // uses that found their tile staged by the prefetcher, ready
  std::int64_t stalls = 0;            // uses of a secondary tile that waited for it (in flight, or read then)
  friend bool operator==(const TiledEvictableCounters&, const TiledEvictableCounters&) = default;
};

class STRIDEWEAVE_EXPORT TiledEvictable final : public extension::DefinedDependentCarrier {
  struct Init;

 public:
  // The instance over `primary` (the compute carrier) and `secondary` (the
  // backing carrier); see the checks above.
  static std::shared_ptr<TiledEvictable> create(const std::shared_ptr<Carrier>& primary,
                                                const std::shared_ptr<Carrier>& secondary,
                                                std::vector<std::int64_t> grid_shape,
                                                std::vector<std::int64_t> tile_shape,
                                                TiledEvictableOptions options = {});
  // For the framework's construction only (extension::create): Init is
  // private, so no one else can call them.
  TiledEvictable(extension::Construction key, const std::shared_ptr<Init>& init);
  // new_like / allocate_like: fresh tiers of the prototype's classes, the
  // same geometry and policy, every tile implicit zero.
  TiledEvictable(extension::Construction key, const TiledEvictable& prototype);
  ~TiledEvictable() override;

  const std::vector<std::int64_t>& grid_shape() const noexcept { return grid_shape_; }
  const std::vector<std::int64_t>& tile_shape() const noexcept { return tile_shape_; }
  const std::vector<std::int64_t>& logical_shape() const noexcept { return logical_shape_; }
  std::int64_t tile_size() const noexcept { return tile_size_; }
  std::int64_t tile_count() const noexcept { return tile_count_; }
  // The full logical Tensor's canonical Layout (see above) and the Tensor.
  const Layout& full_layout() const noexcept { return full_layout_; }
  Tensor full_tensor();
  // B2: ValueError (naming `what`) unless `tensor` is a full Tensor of this
  // carrier: on it, of logical_shape's extents, every tile's footprint exact.
  void check_full_tensor(const Tensor& tensor, const char* what) const;

  // The tiers as given at construction (the secondary may since have been
  // replaced by fresh storage of its class: secondary() answers the current).
  std::shared_ptr<Carrier> primary() const;
  std::shared_ptr<Carrier> secondary() const;
  const std::shared_ptr<ResidencyPolicy>& residency_policy() const noexcept { return policy_; }
  // The residency budget (bytes) and one tile's bytes in the primary.
  std::int64_t residency_bytes() const noexcept { return budget_; }
  std::int64_t prefetch_depth() const noexcept { return prefetch_depth_; }
  std::int64_t tile_bytes() const noexcept;
  // Primary bytes held now: every primary-resident tile plus the tiles
  // running operations have staged.
  std::int64_t resident_bytes() const;
  TiledEvictableCounters counters() const;

  TileSet primary_tiles() const;
  TileSet secondary_tiles() const;
  TileSet valid_tiles() const;
  TileSet dirty_tiles() const;
  TileSet implicit_tiles() const;
  // ValueError for a coordinate outside the grid.
  TileState tile_state(std::span<const std::int64_t> coordinate) const;

  AwaitResidency promote_async(const TileSet& tiles);
  AwaitResidency promote_async(const TileSelection& tiles);
  AwaitResidency evict_async(const TileSet& tiles);
  AwaitResidency evict_async(const TileSelection& tiles);
  void promote(const TileSet& tiles) { promote_async(tiles).wait(); }
  void promote(const TileSelection& tiles) { promote_async(tiles).wait(); }
  void evict(const TileSet& tiles) { evict_async(tiles).wait(); }
  void evict(const TileSelection& tiles) { evict_async(tiles).wait(); }
  // Every tile of the grid, as a TileSet.
  TileSet all_tiles() const;

  // B4, B5, B9: the selected tiles of the full Tensor `tensor`, packed in
  // selection.coordinates() order into one dense compact Tensor of the
  // primary's exact class: axis i has selection.per_axis()[i].size() *
  // tile_shape[i] elements, compact tile c holds source tile
  // (per_axis[0][c[0]], ...), and the within-tile placement is the source
  // Layout's. Checks, all before any work: `tensor` not on this carrier ->
  // TypeError; released -> RuntimeError; rank, range or footprint ->
  // ValueError; `destination` (null: fresh primary-class storage) of
  // another exact class or dtype -> TypeError, released or not publicly
  // mutable -> RuntimeError, smaller than the result and not an empty
  // carrier that can allocate -> ValueError. Starts promoting the selected
  // tiles and returns at once; wait() gathers (an invalid tile, or a write
  // to the source since project(): RuntimeError). With grad mode on (as it
  // was at project()) and a Float32 source, the result's one node is the
  // gather ("tiled_evictable.gather"): its backward scatters the cotangent
  // into a fresh TiledEvictable of the source's geometry, tier classes,
  // offset and Layout, unselected tiles implicit zero.
  AwaitProjection project(const Tensor& tensor, const TileSelection& selection,
                          const std::shared_ptr<Carrier>& destination = nullptr);
  // The registered name of the gather operation behind project().
  static constexpr const char* gather_operation_name = "tiled_evictable.gather";

  // B10, B11: a fresh full Tensor on a new TiledEvictable like `template_`
  // (its geometry, tier classes, offset and Layout) whose selected tiles
  // hold `compact`'s tiles (Replace) or the template's plus them (Add, the
  // central arithmetic: binary32, or checked int32), valid and dirty, every
  // other tile invalid; the inputs are untouched. `compact` has the
  // projection's shape, on the primary's exact class. Checks, all before any
  // change: `compact` on another class, `template_` not on this carrier, a
  // dtype that differs, or Add on Bool -> TypeError; released ->
  // RuntimeError; rank, range, footprint or shape -> ValueError. Returns at
  // once (Add starts promoting the template's selected tiles); wait()
  // commits. With grad mode on, the result's one node is the scatter
  // ("tiled_evictable.scatter", whose operands are the template and, on the
  // compute class, the compact Tensor): compact's gradient is the projection
  // of the cotangent at the selection, on the compute class; the template's
  // is the cotangent's selected tiles for Add, none for Replace.
  AwaitMove<Tensor> scatter(const Tensor& compact, const Tensor& template_, const TileSelection& selection,
                            ScatterReduction reduction = ScatterReduction::Replace);
  using Carrier::scatter;  // the carrier scatter of core-concepts 1.7
  static constexpr const char* scatter_operation_name = "tiled_evictable.scatter";

  Placement placement() const override { return placement_; }

 protected:
  bool released_size_is_zero() const noexcept override { return true; }

 private:
  friend struct TiledEvictableAccess;  // the definition's callbacks (src/extension_carriers/tiled_evictable/)
  struct Tile {
    std::shared_ptr<Carrier> block;  // the primary residency (null: none)
    std::int64_t block_offset = 0;   // the tile's first slot in `block`
    bool secondary_valid = false;    // the secondary holds the tile's current value
    bool implicit_zero = false;      // no storage: the value is zero
    mutable int users = 0;           // running work that reads or writes the tile (pins)
    bool busy = false;               // in an incomplete residency request
    bool prefetching = false;        // ... a best-effort one (project's, scatter's, a policy's): a gather waits
  };
  static TileState state_of(const Tile& tile) noexcept;
  std::int64_t tile_index(std::span<const std::int64_t> coordinate, const char* what) const;
  TileCoordinate coordinate_of(std::int64_t tile) const;
  TileSet tiles_where(bool (*pred)(const Tile&)) const;
  // A residency request. best_effort (prefetch, a policy's plan): tiles
  // that are busy, pinned, or already where the request would put them (or,
  // to promote, invalid) are left out instead of failing the request.
  AwaitResidency submit(const TileSet& tiles, bool promote, const char* what, bool best_effort = false);
  // The request's work on the worker thread; returns normally or throws
  // (the tiles are unmarked by the caller either way).
  void run_promote(const std::vector<std::int64_t>& tiles);
  void run_evict(const std::vector<std::int64_t>& tiles);
  void worker_loop();
  // Counts an unfinished projection or scatter (release() refuses while one
  // is) until the returned object is dropped.
  std::shared_ptr<void> hold_pending();
  // Gives the seed primary's storage back once no tile lives in it.
  void drop_block(Tile& tile, std::vector<std::shared_ptr<Carrier>>& to_release);
  // After resident_tiles_ or staged_bytes_ grew (mutex_ held): the peak.
  void note_resident_locked() noexcept;

  const std::vector<std::int64_t> grid_shape_, tile_shape_, logical_shape_, grid_strides_;
  const std::int64_t tile_size_, tile_count_;
  const Layout full_layout_;
  const Placement placement_;
  const std::shared_ptr<ResidencyPolicy> policy_;
  const std::int64_t budget_;
  const std::int64_t prefetch_depth_;
  std::shared_ptr<Carrier> primary_;  // the compute carrier as given (a seed block, and the class prototype)

  mutable std::mutex mutex_;  // guards everything below; never held across a tier call
  mutable std::condition_variable idle_;
  std::shared_ptr<Carrier> secondary_;
  std::vector<Tile> tiles_;
  std::int64_t seed_tiles_ = 0;      // tiles whose block is primary_
  std::int64_t resident_tiles_ = 0;  // tiles with a block
  std::int64_t staged_bytes_ = 0;    // tiles staged by running operations (stream.cpp)
  mutable TiledEvictableCounters counters_;  // statistics: also counted by const reads
  std::int64_t pending_requests_ = 0;  // residency requests, projections and scatters not yet complete
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
