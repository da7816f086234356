// TiledEvictable (carrier-composition Part B): construction, geometry, tile
// states and residency requests. See <strideweave/carriers/tiled_evictable.h>
// and docs/tiled_evictable.md. The CarrierDefinition's callbacks (storage and
// the direct operations) are in definition.cpp. Public headers only.
#include "extension_carriers/tiled_evictable/access.h"
#include "extension_carriers/tiled_evictable/stream.h"

#include <strideweave/errors.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace strideweave {

struct TiledEvictable::Init {
  std::shared_ptr<Carrier> primary, secondary;
  std::vector<std::int64_t> grid, tile, logical;
  std::int64_t tile_size = 0, tile_count = 0;
  TiledEvictableOptions options;
};

namespace {

std::vector<std::int64_t> checked_geometry(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile,
                                           std::int64_t* tile_size, std::int64_t* tile_count) {
  if (grid.empty()) throw ValueError("TiledEvictable: grid_shape must have at least one axis");
  if (grid.size() != tile.size())
    throw ValueError(fmt::format("TiledEvictable: grid_shape has rank {}, tile_shape {}", grid.size(), tile.size()));
  std::vector<std::int64_t> logical;
  *tile_size = 1;
  *tile_count = 1;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] < 1) throw ValueError(fmt::format("TiledEvictable: grid_shape[{}] = {} must be >= 1", i, grid[i]));
    if (tile[i] < 1) throw ValueError(fmt::format("TiledEvictable: tile_shape[{}] = {} must be >= 1", i, tile[i]));
    logical.push_back(checked_mul(grid[i], tile[i], "TiledEvictable: the logical shape"));
    *tile_size = checked_mul(*tile_size, tile[i], "TiledEvictable: the tile size");
    *tile_count = checked_mul(*tile_count, grid[i], "TiledEvictable: the tile count");
  }
  (void)checked_mul(*tile_size, *tile_count, "TiledEvictable: the logical extent");
  return logical;
}

// Child i of a mode of a rank-`rank` layout built by the algebra (a rank-1
// layout's mode may come back as a leaf).
IntTuple child(const IntTuple& mode, std::size_t i) { return mode.is_leaf() ? mode : mode[i]; }

}  // namespace

// The full logical Tensor's Layout, by CuTe's algebra: logical_product(T, G)
// of the tile layout T = compact(tile_shape) and the grid layout
// G = compact(grid_shape) is (T, G'), G' walking whole tiles (stride
// tile_size in G's arrangement); zipping their modes axis by axis gives axis
// i = (tile_shape[i], grid_shape[i]) : (T's stride i, G''s stride i).
Layout TiledEvictableAccess::full_layout_of(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile) {
  const Layout t = Layout::compact(Shape::of(tile));
  const Layout g = Layout::compact(Shape::of(grid));
  const Layout product = t.logical_product(g);
  std::vector<IntTuple> shape, stride;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    shape.push_back(IntTuple{child(product.shape().mode(0), i), child(product.shape().mode(1), i)});
    stride.push_back(IntTuple{child(product.stride().mode(0), i), child(product.stride().mode(1), i)});
  }
  return Layout(Shape(std::move(shape)), Stride(std::move(stride)));
}

// ---------------------------------------------------------------- construction

std::shared_ptr<TiledEvictable> TiledEvictable::create(const std::shared_ptr<Carrier>& primary,
                                                       const std::shared_ptr<Carrier>& secondary,
                                                       std::vector<std::int64_t> grid_shape,
                                                       std::vector<std::int64_t> tile_shape,
                                                       TiledEvictableOptions options) {
  if (!primary) throw TypeError("TiledEvictable: primary must be a Carrier");
  if (!secondary) throw TypeError("TiledEvictable: secondary must be a Carrier");
  if (primary == secondary) throw ValueError("TiledEvictable: primary and secondary must be distinct carriers");
  if (primary->is_released()) throw RuntimeError("TiledEvictable: the primary carrier is released");
  if (secondary->is_released()) throw RuntimeError("TiledEvictable: the secondary carrier is released");
  if (primary->is_owned()) throw RuntimeError("TiledEvictable: the primary carrier is already owned by a composite");
  if (secondary->is_owned())
    throw RuntimeError("TiledEvictable: the secondary carrier is already owned by a composite");
  if (&primary->dtype() != &secondary->dtype())
    throw TypeError(fmt::format("TiledEvictable: the tiers' dtypes differ ({} and {})", primary->dtype().name(),
                                secondary->dtype().name()));
  std::int64_t tile_size = 0, tile_count = 0;
  std::vector<std::int64_t> logical = checked_geometry(grid_shape, tile_shape, &tile_size, &tile_count);
  if (options.residency_bytes <= 0)
    throw ValueError(fmt::format("TiledEvictable: residency_bytes must be positive, got {}", options.residency_bytes));
  if (options.prefetch_depth < 0)
    throw ValueError(fmt::format("TiledEvictable: prefetch_depth must be >= 0, got {}", options.prefetch_depth));
  const std::int64_t slots = tile_size * tile_count;
  for (const auto& [tier, name] : {std::pair{&primary, "primary"}, std::pair{&secondary, "secondary"}})
    if ((*tier)->size() != 0 && (*tier)->size() != slots)
      throw ValueError(fmt::format("TiledEvictable: the {} carrier holds {} slots; it must be empty or hold the "
                                   "logical extent ({} slots)",
                                   name, (*tier)->size(), slots));
  if (!secondary->is_mutable()) throw RuntimeError("TiledEvictable: the secondary carrier must be mutable");
  auto init = std::make_shared<Init>(Init{primary, secondary, std::move(grid_shape), std::move(tile_shape),
                                          std::move(logical), tile_size, tile_count, std::move(options)});
  return extension::create<TiledEvictable>(slots, primary->dtype(), primary->is_mutable(), init);
}

TiledEvictable::TiledEvictable(extension::Construction key, const std::shared_ptr<Init>& init)
    : DefinedDependentCarrier(std::move(key)),
      grid_shape_(init->grid),
      tile_shape_(init->tile),
      logical_shape_(init->logical),
      grid_strides_(tiled::compact_strides_of(grid_shape_)),
      tile_size_(init->tile_size),
      tile_count_(init->tile_count),
      full_layout_(TiledEvictableAccess::full_layout_of(grid_shape_, tile_shape_)),
      placement_(init->primary->placement()),
      policy_(init->options.residency_policy),
      budget_(init->options.residency_bytes),
      prefetch_depth_(init->options.prefetch_depth),
      primary_(init->primary),
      secondary_(init->secondary),
      tiles_(static_cast<std::size_t>(tile_count_)) {
  // All or nothing; a failure after this (establishing the storage, the
  // snapshot) destroys the instance, whose base relinquishes both claims.
  const std::shared_ptr<Carrier> tiers[] = {primary_, secondary_};
  claim(tiers);
  const std::int64_t slots = tile_size_ * tile_count_;
  if (primary_->size() == slots) {  // the primary seeds every tile (dirty)
    for (std::int64_t t = 0; t < tile_count_; ++t) {
      tiles_[t].block = primary_;
      tiles_[t].block_offset = t * tile_size_;
    }
    seed_tiles_ = resident_tiles_ = tile_count_;
    note_resident_locked();
  } else if (secondary_->size() == slots) {  // else the secondary (clean)
    for (Tile& tile : tiles_) tile.secondary_valid = true;
  }
}

TiledEvictable::TiledEvictable(extension::Construction key, const TiledEvictable& prototype)
    : DefinedDependentCarrier(std::move(key)),
      grid_shape_(prototype.grid_shape_),
      tile_shape_(prototype.tile_shape_),
      logical_shape_(prototype.logical_shape_),
      grid_strides_(prototype.grid_strides_),
      tile_size_(prototype.tile_size_),
      tile_count_(prototype.tile_count_),
      full_layout_(prototype.full_layout_),
      placement_(prototype.placement_),
      policy_(prototype.policy_),
      budget_(prototype.budget_),
      prefetch_depth_(prototype.prefetch_depth_),
      primary_(prototype.primary_->allocate_like(0, true, &dtype(), true)),  // the requested dtype
      secondary_(prototype.secondary()->allocate_like(0, true, &dtype(), true)),
      tiles_(static_cast<std::size_t>(tile_count_)) {
  const std::shared_ptr<Carrier> tiers[] = {primary_, secondary_};
  claim(tiers);
  for (Tile& tile : tiles_) tile.implicit_zero = true;
}

TiledEvictable::~TiledEvictable() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  idle_.notify_all();
  if (worker_.joinable()) worker_.join();  // runs every queued request first
}

// ---------------------------------------------------------------- geometry

Tensor TiledEvictable::full_tensor() {
  return Tensor(std::static_pointer_cast<Carrier>(shared_from_this()), 0, full_layout_);
}

std::int64_t TiledEvictable::tile_index(std::span<const std::int64_t> coordinate, const char* what) const {
  if (coordinate.size() != grid_shape_.size())
    throw ValueError(fmt::format("{}: tile coordinate ({}) has rank {}, the grid {}", what, fmt::join(coordinate, ", "),
                                 coordinate.size(), grid_shape_.size()));
  std::int64_t t = 0;
  for (std::size_t i = 0; i < coordinate.size(); ++i) {
    if (coordinate[i] < 0 || coordinate[i] >= grid_shape_[i])
      throw ValueError(fmt::format("{}: tile coordinate ({}) lies outside the grid ({})", what,
                                   fmt::join(coordinate, ", "), fmt::join(grid_shape_, ", ")));
    t += coordinate[i] * grid_strides_[i];
  }
  return t;
}

TileCoordinate TiledEvictable::coordinate_of(std::int64_t tile) const {
  TileCoordinate c(grid_shape_.size());
  for (std::size_t i = 0; i < grid_shape_.size(); ++i) {
    c[i] = tile % grid_shape_[i];
    tile /= grid_shape_[i];
  }
  return c;
}

// B2. A full Tensor's offset and Layout map each tile's logical coordinates
// injectively onto that tile's slots. With the algebra: zipped_divide by the
// tile shape splits the Layout into W (within a tile) and R (which tile), the
// index of (w, t) being W(w) + R(t); the footprints are exact iff W is a
// bijection onto [0, tile_size) and offset + R(t) == t * tile_size for every
// tile t. A Layout the division cannot split (a nested axis whose leaves the
// tile extent does not divide) is checked coordinate by coordinate.
void TiledEvictable::check_full_tensor(const Tensor& tensor, const char* what) const {
  if (tensor.carrier().get() != this)
    throw TypeError(fmt::format("{}: the Tensor is not on this TiledEvictable carrier", what));
  const Layout& layout = tensor.layout();
  const std::int64_t offset = tensor.offset();
  if (layout.rank() != logical_shape_.size() ||
      !std::equal(logical_shape_.begin(), logical_shape_.end(), layout.shape().extents().begin()))
    throw ValueError(fmt::format("{}: a full Tensor has the logical shape ({}), not {}", what,
                                 fmt::join(logical_shape_, ", "), layout.shape().to_string()));
  if (offset == 0 && layout == full_layout_) return;
  const auto not_exact = [&](std::string why) {
    return ValueError(fmt::format("{}: the Tensor's offset {} and Layout {} do not preserve the carrier's tile "
                                  "footprints: {}",
                                  what, offset, layout.to_string(), why));
  };
  std::optional<Layout> zipped;
  try {
    std::vector<Layout> tiler;
    for (std::int64_t e : tile_shape_) tiler.emplace_back(Shape::of({e}), Stride::of({1}));
    zipped = layout.zipped_divide(tiler);
  } catch (const ValueError&) {
  }
  if (zipped) {
    const Layout within(Shape{zipped->shape().mode(0)}, Stride{zipped->stride().mode(0)});
    const Layout across(Shape{zipped->shape().mode(1)}, Stride{zipped->stride().mode(1)});
    if (within.cosize() == tile_size_ && within.is_injective()) {
      for (std::int64_t t = 0; t < tile_count_; ++t)
        if (offset + across(t) != t * tile_size_)
          throw not_exact(fmt::format("tile ({}) starts at slot {}, its footprint at {}", fmt::join(coordinate_of(t), ", "),
                                      offset + across(t), t * tile_size_));
      return;
    }
    if (within.cosize() != tile_size_ && within.is_injective())
      throw not_exact("a tile's elements do not fill one tile's slots exactly");
  }
  // Coordinate by coordinate: each index must fall in its tile's run, once.
  const std::int64_t n = tile_size_ * tile_count_;
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  std::vector<std::int64_t> c(logical_shape_.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t t = 0;
    for (std::size_t i = 0; i < c.size(); ++i) t += (c[i] / tile_shape_[i]) * grid_strides_[i];
    const std::int64_t index = offset + layout(k);
    if (index < t * tile_size_ || index >= (t + 1) * tile_size_)
      throw not_exact(fmt::format("an element of tile ({}) maps to slot {}, outside its footprint",
                                  fmt::join(coordinate_of(t), ", "), index));
    if (seen[static_cast<std::size_t>(index)])
      throw not_exact(fmt::format("two elements map to slot {}", index));
    seen[static_cast<std::size_t>(index)] = true;
    for (std::size_t i = 0; i < c.size(); ++i) {  // first axis fastest
      if (++c[i] < logical_shape_[i]) break;
      c[i] = 0;
    }
  }
}

// ---------------------------------------------------------------- state queries

TileState TiledEvictable::state_of(const Tile& tile) noexcept {
  TileState s;
  if (tile.block) s.location = TileLocation::Primary;
  else if (tile.secondary_valid) s.location = TileLocation::Secondary;
  else if (tile.implicit_zero) s.location = TileLocation::Implicit;
  s.valid = s.location != TileLocation::Invalid;
  s.dirty = tile.block && !tile.secondary_valid;
  return s;
}

TileSet TiledEvictable::tiles_where(bool (*pred)(const Tile&)) const {
  std::vector<TileCoordinate> out;
  const std::lock_guard lock(mutex_);
  for (std::int64_t t = 0; t < tile_count_; ++t)
    if (pred(tiles_[t])) out.push_back(coordinate_of(t));
  return TileSet(std::move(out));
}

TileSet TiledEvictable::primary_tiles() const {
  return tiles_where([](const Tile& t) { return state_of(t).location == TileLocation::Primary; });
}
TileSet TiledEvictable::secondary_tiles() const {
  return tiles_where([](const Tile& t) { return state_of(t).location == TileLocation::Secondary; });
}
TileSet TiledEvictable::valid_tiles() const {
  return tiles_where([](const Tile& t) { return state_of(t).valid; });
}
TileSet TiledEvictable::dirty_tiles() const {
  return tiles_where([](const Tile& t) { return state_of(t).dirty; });
}
TileSet TiledEvictable::implicit_tiles() const {
  return tiles_where([](const Tile& t) { return state_of(t).location == TileLocation::Implicit; });
}
TileSet TiledEvictable::all_tiles() const {
  return tiles_where([](const Tile&) { return true; });
}

TileState TiledEvictable::tile_state(std::span<const std::int64_t> coordinate) const {
  const std::int64_t t = tile_index(coordinate, "TiledEvictable.tile_state");
  const std::lock_guard lock(mutex_);
  return state_of(tiles_[t]);
}

std::shared_ptr<Carrier> TiledEvictable::primary() const { return primary_; }

std::int64_t TiledEvictable::tile_bytes() const noexcept {
  return tile_size_ * ((dtype().bits().value_or(8) + 7) / 8);
}

std::int64_t TiledEvictable::resident_bytes() const {
  const std::lock_guard lock(mutex_);
  return resident_tiles_ * tile_bytes() + staged_bytes_;
}

TiledEvictableCounters TiledEvictable::counters() const {
  const std::lock_guard lock(mutex_);
  return counters_;
}

void TiledEvictable::note_resident_locked() noexcept {
  counters_.peak_resident_bytes =
      std::max(counters_.peak_resident_bytes, resident_tiles_ * tile_bytes() + staged_bytes_);
}

std::shared_ptr<Carrier> TiledEvictable::secondary() const {
  const std::lock_guard lock(mutex_);
  return secondary_;
}

// ---------------------------------------------------------------- residency requests

AwaitResidency TiledEvictable::promote_async(const TileSet& tiles) {
  return submit(tiles, true, "TiledEvictable.promote");
}
AwaitResidency TiledEvictable::promote_async(const TileSelection& tiles) {
  require_live("TiledEvictable.promote");
  tiles.check_against(grid_shape_, "TiledEvictable.promote");
  return submit(tiles.tile_set(), true, "TiledEvictable.promote");
}
AwaitResidency TiledEvictable::evict_async(const TileSet& tiles) { return submit(tiles, false, "TiledEvictable.evict"); }
AwaitResidency TiledEvictable::evict_async(const TileSelection& tiles) {
  require_live("TiledEvictable.evict");
  tiles.check_against(grid_shape_, "TiledEvictable.evict");
  return submit(tiles.tile_set(), false, "TiledEvictable.evict");
}

AwaitResidency TiledEvictable::submit(const TileSet& tiles, bool promote, const char* what, bool best_effort) {
  require_live(what);
  tiles.check_against(grid_shape_, what);
  std::vector<std::int64_t> indices;
  for (const TileCoordinate& c : tiles.coordinates()) indices.push_back(tile_index(c, what));
  extension::ProviderPromise<void> promise;
  extension::ProviderCompletion<void> completion = promise.completion();
  {
    const std::lock_guard lock(mutex_);
    if (stopping_) throw RuntimeError(fmt::format("{}: the carrier is released", what));
    if (best_effort) {
      std::erase_if(indices, [&](std::int64_t t) {
        const Tile& tile = tiles_[t];
        if (tile.busy || tile.users > 0) return true;
        // A best-effort promotion reads secondary tiles only: an implicit
        // tile would become a dirty zero block (and streams read zeros
        // without one).
        if (promote) return tile.block != nullptr || !tile.secondary_valid;
        return tile.block == nullptr;
      });
      if (indices.empty()) return AwaitResidency(extension::ProviderCompletion<void>::ready());
    }
    for (std::int64_t t : indices) {
      if (tiles_[t].busy)
        throw RuntimeError(fmt::format("{}: tile ({}) is in another caller's incomplete residency request", what,
                                       fmt::join(coordinate_of(t), ", ")));
      if (tiles_[t].users > 0)
        throw RuntimeError(fmt::format("{}: tile ({}) is in use by running work", what,
                                       fmt::join(coordinate_of(t), ", ")));
    }
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
    queue_.push_back([this, indices, promise, promote]() mutable {
      std::exception_ptr error;
      try {
        if (promote) run_promote(indices);
        else run_evict(indices);
      } catch (...) {
        error = std::current_exception();
      }
      {
        const std::lock_guard done(mutex_);
        for (std::int64_t t : indices) tiles_[t].busy = tiles_[t].prefetching = false;
        --pending_requests_;
      }
      idle_.notify_all();
      if (error) promise.set_exception(error);
      else promise.set_value();
    });
    for (std::int64_t t : indices) {
      tiles_[t].busy = true;
      tiles_[t].prefetching = best_effort;
    }
    ++pending_requests_;
  }
  idle_.notify_all();
  return AwaitResidency(std::move(completion));
}

std::shared_ptr<void> TiledEvictable::hold_pending() {
  {
    const std::lock_guard lock(mutex_);
    ++pending_requests_;
  }
  // The deleter runs when the last copy goes (the handle's work finished, or
  // the handle was dropped), also for the null pointer it owns.
  // The deleter keeps the instance alive until it has run.
  auto self = std::static_pointer_cast<TiledEvictable>(shared_from_this());
  return std::shared_ptr<void>(nullptr, [self](void*) {
    {
      const std::lock_guard lock(self->mutex_);
      --self->pending_requests_;
    }
    self->idle_.notify_all();
  });
}

void TiledEvictable::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    idle_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
  }
}

// Promote: fresh blocks first (nothing visible changes), then one commit.
void TiledEvictable::run_promote(const std::vector<std::int64_t>& tiles) {
  std::vector<std::pair<std::int64_t, std::shared_ptr<Carrier>>> fresh;
  for (std::int64_t t : tiles) {
    bool resident, from_secondary, implicit;
    std::shared_ptr<Carrier> secondary;
    {
      const std::lock_guard lock(mutex_);
      resident = tiles_[t].block != nullptr;
      from_secondary = tiles_[t].secondary_valid;
      implicit = tiles_[t].implicit_zero;
      secondary = secondary_;
    }
    if (resident) continue;  // idempotent
    if (!from_secondary && !implicit)
      throw RuntimeError(fmt::format("TiledEvictable.promote: tile ({}) is invalid: it has no value to promote",
                                     fmt::join(coordinate_of(t), ", ")));
    std::shared_ptr<Carrier> block = primary_->allocate_like(tile_size_, true, nullptr, from_secondary);
    if (from_secondary) block->copy_range(*secondary, t * tile_size_, 0, tile_size_);
    fresh.emplace_back(t, std::move(block));
  }
  const std::lock_guard lock(mutex_);
  for (auto& [t, block] : fresh) {
    if (tiles_[t].secondary_valid) counters_.bytes_read += tile_bytes();
    tiles_[t].block = std::move(block);
    tiles_[t].block_offset = 0;
    tiles_[t].implicit_zero = false;
  }
  resident_tiles_ += static_cast<std::int64_t>(fresh.size());
  note_resident_locked();
}

void TiledEvictable::drop_block(Tile& tile, std::vector<std::shared_ptr<Carrier>>& to_release) {
  if (tile.block == primary_ && --seed_tiles_ == 0) to_release.push_back(primary_);
  tile.block.reset();
  tile.block_offset = 0;
  --resident_tiles_;
}

// Evict: save the dirty tiles (into fresh full-extent secondary storage when
// the secondary is empty), then one commit drops the blocks. A failure
// before the commit changes no tile's state: the runs written belong to
// tiles whose secondary copy was not valid anyway.
void TiledEvictable::run_evict(const std::vector<std::int64_t>& tiles) {
  struct Dirty {
    std::int64_t tile;
    std::shared_ptr<Carrier> block;
    std::int64_t offset;
  };
  std::vector<Dirty> dirty;
  std::shared_ptr<Carrier> secondary;
  {
    const std::lock_guard lock(mutex_);
    for (std::int64_t t : tiles)
      if (tiles_[t].block && !tiles_[t].secondary_valid) dirty.push_back({t, tiles_[t].block, tiles_[t].block_offset});
    secondary = secondary_;
  }
  const std::int64_t slots = tile_size_ * tile_count_;
  std::shared_ptr<Carrier> fresh;
  if (!dirty.empty() && secondary->size() != slots) {
    fresh = secondary->allocate_like(slots, true, nullptr, true);
    claim(fresh);
    secondary = fresh;
  }
  try {
    const OwnerAccess access = owner_access();
    for (const Dirty& d : dirty) secondary->copy_range(*d.block, d.offset, d.tile * tile_size_, tile_size_);
  } catch (...) {
    if (fresh) {
      const OwnerAccess access = owner_access();
      try {
        fresh->release();
      } catch (...) {
      }
      relinquish(*fresh);
    }
    throw;
  }
  std::vector<std::shared_ptr<Carrier>> to_release;
  std::shared_ptr<Carrier> replaced;
  {
    const std::lock_guard lock(mutex_);
    if (fresh) {
      replaced = std::move(secondary_);
      secondary_ = fresh;
    }
    counters_.bytes_written += static_cast<std::int64_t>(dirty.size()) * tile_bytes();
    for (std::int64_t t : tiles) {
      if (!tiles_[t].block) continue;
      tiles_[t].secondary_valid = true;
      drop_block(tiles_[t], to_release);
    }
  }
  const OwnerAccess access = owner_access();
  if (replaced) to_release.push_back(replaced);
  for (const std::shared_ptr<Carrier>& c : to_release) {
    try {  // storage given back; the values live elsewhere now
      if (!c->is_released()) c->release();
    } catch (...) {
    }
  }
  if (replaced) relinquish(*replaced);
}

}  // namespace strideweave
