// The streaming engine of TiledEvictable's direct operations: a full tiled
// operand resolved for block access, and the Stager that makes one
// operation's tiles available within the instance's residency budget. See
// docs/tiled_evictable.md, "Streaming". Internal to
// src/extension_carriers/tiled_evictable/.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <strideweave/carriers/tiled_evictable.h>
#include <strideweave/tensor.h>

namespace strideweave::tiled {

// A tile's run of slots while it is pinned: its primary block, a staged copy
// or the operation's zero tile. Slot `first + k` holds the tile's slot k.
struct TileRun {
  std::shared_ptr<Carrier> storage;
  std::int64_t first = 0;
};

// A full tiled Tensor (checked by the caller) resolved for block access.
// Its within-tile placement is *affine* when the Tensor's Layout divides by
// the tile shape into per-axis leaves (the canonical full Layout, and any
// within-tile axis permutation of it): element w of a tile then sits at slot
// sum(w[i] * within_stride[i]) of the tile's run. Any other full Layout is
// served element by element (slot_in_tile), correct but slow.
class TiledOperand {
 public:
  explicit TiledOperand(const Tensor& tensor);

  TiledEvictable& instance() const noexcept { return *instance_; }
  const std::shared_ptr<TiledEvictable>& shared() const noexcept { return instance_; }
  const Tensor& tensor() const noexcept { return tensor_; }
  std::size_t rank() const noexcept { return instance_->logical_shape().size(); }
  std::int64_t extent(std::size_t axis) const { return instance_->logical_shape()[axis]; }
  std::int64_t tile_extent(std::size_t axis) const { return instance_->tile_shape()[axis]; }
  // The tile holding logical coordinate `c`.
  std::int64_t tile_at(std::span<const std::int64_t> c) const;
  // The slot, within its tile's run, of logical coordinate `c`.
  std::int64_t slot_in_tile(std::span<const std::int64_t> c) const;
  // Whether a tile's slots are the same function of the within-tile
  // coordinate for every tile (affine), and whether that function is the
  // compact one (first axis fastest: slot order == within-tile logical order).
  bool affine() const noexcept { return affine_; }
  bool within_is_compact() const noexcept { return within_is_compact_; }
  // The logical coordinate of tile t's first element.
  std::vector<std::int64_t> tile_origin(std::int64_t t) const;
  // A dense view of the box [lo, lo + extent), which lies in one tile whose
  // run is `run`: a strided view of the run when affine, else a fresh
  // primary-class copy of the box.
  Tensor view(const TileRun& run, std::span<const std::int64_t> lo, std::span<const std::int64_t> extent) const;

 private:
  std::shared_ptr<TiledEvictable> instance_;
  Tensor tensor_;
  bool affine_ = false;
  bool within_is_compact_ = false;
  std::vector<std::int64_t> within_strides_;  // per axis, when affine
  std::vector<std::int64_t> grid_strides_;    // tile numbering, first axis fastest
};

struct Fetch;       // one staging read on the I/O thread (stream.cpp)
class Prefetcher;   // the I/O thread of one Stager (stream.cpp)

// One operation's access to one instance's tiles, in a schedule known in
// advance: `uses` lists the tile of every acquire() in order. A
// primary-resident tile is read in place; an implicit tile reads the
// operation's zero tile; any other valid tile is staged (copied, as bytes,
// from the secondary into a tile-sized primary buffer, counted in the
// instance's resident bytes and bytes read). A staged tile is kept for its
// next use while the instance's resident bytes fit its budget; beyond that,
// the staged, unpinned tile whose next use is furthest away is dropped
// (Belady's rule: the schedule is known). A tile is pinned from acquire()
// to release(), so no residency request moves it meanwhile.
//
// Prefetch: after each acquire() the next `prefetch_depth()` uses are
// pinned too and their secondary tiles staged on an I/O thread (a
// Prefetcher) while the caller computes: a fetch takes free budget or the
// buffer of a staged tile needed after it, and lookahead stops at the first
// use that finds neither. Only where both tiers are shipped classes (see
// tiled_evictable.h, "Prefetch"). acquire() and release() are called by
// one thread.
class Stager {
 public:
  Stager(const std::shared_ptr<TiledEvictable>& instance, std::vector<std::int64_t> uses);
  // Waits for fetches in flight, then unpins everything and gives back the
  // staged bytes.
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // The next use's tile (uses[k] for the k-th call), pinned. RuntimeError
  // when the instance is released, the tile is invalid, or it is in another
  // caller's incomplete residency request (a best-effort prefetch is waited
  // for); a failed fetch's error; nothing stays pinned for the use then.
  TileRun acquire();
  // Unpins one acquire() of `tile`.
  void release(std::int64_t tile) noexcept;

 private:
  struct Staged {
    std::shared_ptr<Carrier> buffer;
    int pins = 0;
    std::shared_ptr<Fetch> fetch;  // while staged by the prefetcher and not yet used
  };
  // A use's pin, taken ahead of its acquire(): the tile's primary run, or
  // none with `implicit` or a secondary tile (`secondary` set).
  struct Pin {
    std::optional<TileRun> resident;
    bool implicit = false;
    std::shared_ptr<Carrier> secondary;
  };
  Pin pin(std::int64_t tile);
  std::int64_t next_use(std::int64_t tile) const;  // after the current use; INT64_MAX for none
  // The staged, unpinned, settled tile whose next use is the furthest and
  // after use `after`; staged_.end() for none.
  std::unordered_map<std::int64_t, Staged>::iterator furthest_droppable(std::int64_t after);
  // Drops staged, unpinned, settled tiles (furthest next use first) until
  // one more tile fits the budget or none is left to drop; returns one
  // dropped buffer for reuse (null if none).
  std::shared_ptr<Carrier> make_room();
  // A counted buffer for a fetch for use `use`: the spare, free budget, or
  // a settled, unpinned staged tile next needed after `use` (dropped). Null
  // when none qualifies.
  std::shared_ptr<Carrier> room_for_fetch(std::int64_t use);
  // Pins uses [cursor_, cursor_ + depth) not yet pinned and starts fetches
  // for their secondary tiles, best effort: any failure just ends it.
  void look_ahead() noexcept;
  // Waits for a staged tile's fetch, if any (a stall unless it had
  // finished; else a prefetch hit) and settles it: a failed fetch's entry
  // is dropped and its error thrown.
  void settle(std::unordered_map<std::int64_t, Staged>::iterator it);
  // Whether a staged tile's buffer is free to drop or reuse (no fetch
  // writing into it).
  bool settled(const Staged& staged) const;
  // The use's tile made available (the body of acquire()).
  TileRun take(std::int64_t tile, const Pin& pin);
  // Drops staged_[tile] and gives back its bytes (or keeps its buffer as
  // the spare).
  void drop(std::unordered_map<std::int64_t, Staged>::iterator it);

  std::shared_ptr<TiledEvictable> instance_;
  std::vector<std::int64_t> uses_;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> positions_;  // tile -> its use indices, ascending
  std::size_t cursor_ = 0;                                                 // uses acquired so far
  std::unordered_map<std::int64_t, Staged> staged_;
  std::shared_ptr<Carrier> zero_;   // the zero tile, once an implicit tile is read
  std::shared_ptr<Carrier> spare_;  // a staged buffer dropped at its last use, for reuse (counted)
  std::vector<std::int64_t> pinned_;  // tiles pinned on the instance (block or staged), one entry per pin
  std::deque<Pin> ahead_;             // the pins of uses [cursor_, cursor_ + ahead_.size())
  std::size_t depth_ = 0;             // the prefetch depth; 0 without an I/O thread
  std::unique_ptr<Prefetcher> io_;    // started at the first fetch
};

// Copies `block` (a dense Tensor of shape `extent`, any Layout) into the
// box [lo, lo + extent) of `result`, a fresh compact (first axis fastest)
// carrier of the logical extents `result_extents`: run by run along axis 0.
void copy_into_box(const Tensor& block, Carrier& result, std::span<const std::int64_t> result_extents,
                   std::span<const std::int64_t> lo);

// The cut points of one axis of `extent`: 0, every multiple of each of
// `tile_extents` and `extent`, ascending, each once. A block between two
// consecutive cuts lies inside one tile of every operand that has them.
std::vector<std::int64_t> axis_cuts(std::int64_t extent, std::span<const std::int64_t> tile_extents);

// The compact (first axis fastest) strides of `extents`.
std::vector<std::int64_t> compact_strides_of(std::span<const std::int64_t> extents);

}  // namespace strideweave::tiled
