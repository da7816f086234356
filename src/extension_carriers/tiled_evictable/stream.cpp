// The streaming engine of TiledEvictable's direct operations (stream.h):
// tile pins, staging within the residency budget with Belady's eviction
// rule, block views and block copies. Public headers only.
#include "extension_carriers/tiled_evictable/stream.h"

#include "extension_carriers/tiled_evictable/access.h"

#include <strideweave/carriers/shipped.h>
#include <strideweave/errors.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <limits>

namespace strideweave {

// ---------------------------------------------------------------- the instance's side

std::optional<std::pair<std::shared_ptr<Carrier>, std::int64_t>> TiledEvictableAccess::pin_tile(
    TiledEvictable& c, std::int64_t t, bool& implicit, std::shared_ptr<Carrier>& secondary) {
  implicit = false;
  std::unique_lock lock(c.mutex_);
  for (;;) {
    if (c.stopping_) throw RuntimeError("TiledEvictable: the carrier is released");
    const TiledEvictable::Tile& tile = c.tiles_[t];
    if (!tile.busy) break;
    if (!tile.prefetching)
      throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is in an incomplete residency request",
                                     fmt::join(c.coordinate_of(t), ", ")));
    c.idle_.wait(lock);  // our own best-effort prefetch: it finishes soon
  }
  TiledEvictable::Tile& tile = c.tiles_[t];
  if (tile.block) {
    ++tile.users;
    return std::pair{tile.block, tile.block_offset};
  }
  if (tile.secondary_valid) {
    ++tile.users;
    secondary = c.secondary_;
    return std::nullopt;
  }
  if (tile.implicit_zero) {
    ++tile.users;
    implicit = true;
    return std::nullopt;
  }
  throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is invalid: a direct operation needs every tile "
                                 "(promote or scatter it first)",
                                 fmt::join(c.coordinate_of(t), ", ")));
}

void TiledEvictableAccess::unpin_tile(TiledEvictable& c, std::int64_t t) noexcept {
  {
    const std::lock_guard lock(c.mutex_);
    --c.tiles_[t].users;
  }
  c.idle_.notify_all();
}

bool TiledEvictableAccess::exceeds_budget_with(const TiledEvictable& c, std::int64_t extra) {
  const std::lock_guard lock(c.mutex_);
  return c.resident_tiles_ * c.tile_bytes() + c.staged_bytes_ + extra > c.budget_;
}

void TiledEvictableAccess::note_staged(TiledEvictable& c, std::int64_t delta, std::int64_t read) noexcept {
  const std::lock_guard lock(c.mutex_);
  c.staged_bytes_ += delta;
  c.counters_.bytes_read += read;
  if (delta > 0) c.note_resident_locked();
}

void TiledEvictableAccess::note_prefetch(TiledEvictable& c, std::int64_t prefetched, std::int64_t hits,
                                         std::int64_t stalls) noexcept {
  const std::lock_guard lock(c.mutex_);
  c.counters_.tiles_prefetched += prefetched;
  c.counters_.prefetch_hits += hits;
  c.counters_.stalls += stalls;
}

void TiledEvictableAccess::install_block(TiledEvictable& c, std::int64_t t, std::shared_ptr<Carrier> block) {
  std::vector<std::shared_ptr<Carrier>> to_release;
  {
    const std::lock_guard lock(c.mutex_);
    TiledEvictable::Tile& tile = c.tiles_[t];
    if (tile.block) c.drop_block(tile, to_release);
    tile.block = std::move(block);
    tile.block_offset = 0;
    tile.implicit_zero = false;
    tile.secondary_valid = false;
    ++c.resident_tiles_;
    c.staged_bytes_ -= c.tile_bytes();
    c.note_resident_locked();
  }
  for (const std::shared_ptr<Carrier>& r : to_release) {
    const DependentCarrier::OwnerAccess access = c.owner_access();
    try {
      r->release();
    } catch (...) {
    }
  }
}

void TiledEvictableAccess::require_all_valid(const TiledEvictable& c, const char* what) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(c.tile_count_));
  for (std::int64_t t = 0; t < c.tile_count_; ++t) all[static_cast<std::size_t>(t)] = t;
  require_valid(c, all, what);
}

void TiledEvictableAccess::require_valid(const TiledEvictable& c, std::span<const std::int64_t> tiles,
                                         const char* what) {
  const std::lock_guard lock(c.mutex_);
  if (c.stopping_) throw RuntimeError(fmt::format("{}: the TiledEvictable carrier is released", what));
  for (std::int64_t t : tiles) {
    const TiledEvictable::Tile& tile = c.tiles_[t];
    if (!tile.block && !tile.secondary_valid && !tile.implicit_zero && !tile.busy)
      throw RuntimeError(fmt::format("{}: tile ({}) is invalid: the work needs its value (promote or scatter it "
                                     "first)",
                                     what, fmt::join(c.coordinate_of(t), ", ")));
  }
}

namespace tiled {

// ---------------------------------------------------------------- helpers

std::vector<std::int64_t> compact_strides_of(std::span<const std::int64_t> extents) {
  std::vector<std::int64_t> out(extents.size());
  std::int64_t s = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    out[i] = s;
    s *= extents[i];
  }
  return out;
}

std::vector<std::int64_t> axis_cuts(std::int64_t extent, std::span<const std::int64_t> tile_extents) {
  std::vector<std::int64_t> cuts{0, extent};
  for (std::int64_t t : tile_extents)
    for (std::int64_t x = t; x < extent; x += t) cuts.push_back(x);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

void copy_into_box(const Tensor& block, Carrier& result, std::span<const std::int64_t> result_extents,
                   std::span<const std::int64_t> lo) {
  const std::span<const std::int64_t> extent = block.shape().extents();
  const std::size_t rank = extent.size();
  const std::vector<std::int64_t> dst_strides = compact_strides_of(result_extents);
  std::int64_t base = 0;
  for (std::size_t i = 0; i < rank; ++i) base += lo[i] * dst_strides[i];
  const std::int64_t count = block.size();
  if (count == 0) return;
  if (rank == 0) {
    result.copy_range(*block.carrier(), block.offset() + block.layout()(0), base, 1);
    return;
  }
  // Kernels publish compact results (first axis fastest): runs along axis 0
  // are contiguous on both sides. Anything else goes through its values.
  const bool compact = block.layout().is_compact();
  std::vector<Value> values;
  if (!compact) values = block.values();
  const std::int64_t run = extent[0];
  std::vector<std::int64_t> c(rank, 0);  // c[0] stays 0
  for (std::int64_t done = 0; done < count; done += run) {
    std::int64_t dst = base;
    for (std::size_t i = 1; i < rank; ++i) dst += c[i] * dst_strides[i];
    if (compact)
      result.copy_range(*block.carrier(), block.offset() + done, dst, run);
    else
      result.write_values(dst, std::span<const Value>(values).subspan(static_cast<std::size_t>(done),
                                                                      static_cast<std::size_t>(run)));
    for (std::size_t i = 1; i < rank; ++i) {
      if (++c[i] < extent[i]) break;
      c[i] = 0;
    }
  }
}

// ---------------------------------------------------------------- TiledOperand

TiledOperand::TiledOperand(const Tensor& tensor)
    : instance_(std::static_pointer_cast<TiledEvictable>(std::const_pointer_cast<Carrier>(tensor.carrier()))),
      tensor_(tensor),
      grid_strides_(compact_strides_of(instance_->grid_shape())) {
  const std::vector<std::int64_t>& tile = instance_->tile_shape();
  try {
    std::vector<Layout> tiler;
    for (std::int64_t e : tile) tiler.emplace_back(Shape::of({e}), Stride::of({1}));
    const Layout zipped = tensor.layout().zipped_divide(tiler);
    const IntTuple& shapes = zipped.shape().mode(0);
    const IntTuple& strides = zipped.stride().mode(0);
    affine_ = true;
    for (std::size_t i = 0; i < tile.size(); ++i) {
      const IntTuple& e = shapes.is_leaf() ? shapes : shapes[i];
      const IntTuple& s = strides.is_leaf() ? strides : strides[i];
      if (!e.is_leaf() || !s.is_leaf()) {
        affine_ = false;
        break;
      }
      within_strides_.push_back(s.value());
    }
  } catch (const ValueError&) {
    affine_ = false;
  }
  if (!affine_) within_strides_.clear();
  within_is_compact_ = affine_;
  const std::vector<std::int64_t> compact = compact_strides_of(tile);
  for (std::size_t i = 0; i < within_strides_.size(); ++i)  // an extent-1 axis's stride is never used
    if (tile[i] != 1 && within_strides_[i] != compact[i]) within_is_compact_ = false;
}

std::vector<std::int64_t> TiledOperand::tile_origin(std::int64_t t) const {
  const std::vector<std::int64_t>& grid = instance_->grid_shape();
  std::vector<std::int64_t> origin(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    origin[i] = (t % grid[i]) * tile_extent(i);
    t /= grid[i];
  }
  return origin;
}

std::int64_t TiledOperand::tile_at(std::span<const std::int64_t> c) const {
  std::int64_t t = 0;
  for (std::size_t i = 0; i < c.size(); ++i) t += (c[i] / tile_extent(i)) * grid_strides_[i];
  return t;
}

std::int64_t TiledOperand::slot_in_tile(std::span<const std::int64_t> c) const {
  if (affine_) {
    std::int64_t s = 0;
    for (std::size_t i = 0; i < c.size(); ++i) s += (c[i] % tile_extent(i)) * within_strides_[i];
    return s;
  }
  std::int64_t key = 0, stride = 1;
  for (std::size_t i = 0; i < c.size(); ++i) {
    key += c[i] * stride;
    stride *= extent(i);
  }
  return tensor_.offset() + tensor_.layout()(key) - tile_at(c) * instance_->tile_size();
}

Tensor TiledOperand::view(const TileRun& run, std::span<const std::int64_t> lo,
                          std::span<const std::int64_t> extent) const {
  const std::size_t rank = lo.size();
  if (affine_) {
    std::int64_t first = run.first;
    for (std::size_t i = 0; i < rank; ++i) first += (lo[i] % tile_extent(i)) * within_strides_[i];
    return Tensor(run.storage, first, Layout(Shape::of(extent), Stride::of(within_strides_)));
  }
  // Element by element into a fresh compact box (first axis fastest).
  std::int64_t count = 1;
  for (std::int64_t e : extent) count *= e;
  const std::vector<Value> tile_values = run.storage->read_values(run.first, instance_->tile_size());
  std::vector<Value> values;
  values.reserve(static_cast<std::size_t>(count));
  std::vector<std::int64_t> c(lo.begin(), lo.end());
  for (std::int64_t k = 0; k < count; ++k) {
    values.push_back(tile_values[static_cast<std::size_t>(slot_in_tile(c))]);
    for (std::size_t i = 0; i < rank; ++i) {
      if (++c[i] < lo[i] + extent[i]) break;
      c[i] = lo[i];
    }
  }
  return Tensor(run.storage->new_like(values), 0, Layout::compact(Shape::of(extent)));
}

// ---------------------------------------------------------------- Prefetcher

// One staging read: `buffer`'s slots [0, count) from `secondary`'s
// [first, first + count). done and error are written under the
// Prefetcher's mutex.
struct Fetch {
  std::shared_ptr<Carrier> secondary, buffer;
  std::int64_t first = 0, count = 0;
  bool done = false;
  std::exception_ptr error;
};

// One Stager's I/O thread: runs fetches in submission order (the schedule's
// order). A thread of its own rather than a pool: an out-of-core operation
// runs for milliseconds at least, and the thread's life is the Stager's.
class Prefetcher {
 public:
  explicit Prefetcher(std::shared_ptr<TiledEvictable> instance)
      : instance_(std::move(instance)), thread_([this] { run(); }) {}
  // Abandons fetches not yet started (the Stager is going away) and waits
  // for the one running.
  ~Prefetcher() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void submit(std::shared_ptr<Fetch> fetch) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back(std::move(fetch));
    }
    work_.notify_all();
  }
  bool finished(const Fetch& fetch) {
    const std::lock_guard lock(mutex_);
    return fetch.done;
  }
  // Whether it had to wait.
  bool wait(const Fetch& fetch) {
    std::unique_lock lock(mutex_);
    if (fetch.done) return false;
    done_.wait(lock, [&] { return fetch.done; });
    return true;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      const std::shared_ptr<Fetch> fetch = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      try {
        fetch->buffer->copy_range(*fetch->secondary, fetch->first, 0, fetch->count);
      } catch (...) {
        error = std::current_exception();
      }
      if (!error) {
        TiledEvictableAccess::note_staged(*instance_, 0, instance_->tile_bytes());
        TiledEvictableAccess::note_prefetch(*instance_, 1, 0, 0);
      }
      lock.lock();
      fetch->done = true;
      fetch->error = error;
      done_.notify_all();
    }
  }

  std::shared_ptr<TiledEvictable> instance_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::shared_ptr<Fetch>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is built
};

namespace {

// Whether a carrier's exact class is one strideweave ships: its storage
// I/O never calls back into user code (which may need a lock, such as
// Python's, that the operation's thread holds), so it may run on the I/O
// thread.
template <class... C>
bool is_one_of(const CarrierClass& cls, CarrierTypeList<C...>) {
  return ((cls == carrier_class<C>()) || ...);
}

bool is_shipped(const Carrier& carrier) {
  const CarrierClass cls = carrier.exact_class();
  return is_one_of(cls, ShippedCarrierTypes{}) || is_one_of(cls, ShippedStorageCarrierTypes{});
}

}  // namespace

// ---------------------------------------------------------------- Stager

Stager::Stager(const std::shared_ptr<TiledEvictable>& instance, std::vector<std::int64_t> uses)
    : instance_(instance), uses_(std::move(uses)) {
  for (std::size_t k = 0; k < uses_.size(); ++k) positions_[uses_[k]].push_back(static_cast<std::int64_t>(k));
  pinned_.reserve(uses_.size());  // recording a pin never allocates (never throws)
  if (instance_->prefetch_depth() > 0 && is_shipped(*instance_->primary()) && is_shipped(*instance_->secondary()))
    depth_ = static_cast<std::size_t>(instance_->prefetch_depth());
}

Stager::~Stager() {
  io_.reset();  // no fetch runs after this
  for (std::int64_t t : pinned_) TiledEvictableAccess::unpin_tile(*instance_, t);
  const std::int64_t held =
      static_cast<std::int64_t>(staged_.size() + (zero_ ? 1 : 0) + (spare_ ? 1 : 0)) * instance_->tile_bytes();
  if (held > 0) TiledEvictableAccess::note_staged(*instance_, -held, 0);
}

std::int64_t Stager::next_use(std::int64_t tile) const {
  const auto it = positions_.find(tile);
  if (it == positions_.end()) return std::numeric_limits<std::int64_t>::max();
  const auto next = std::lower_bound(it->second.begin(), it->second.end(), static_cast<std::int64_t>(cursor_));
  return next == it->second.end() ? std::numeric_limits<std::int64_t>::max() : *next;
}

bool Stager::settled(const Staged& staged) const { return !staged.fetch || io_->finished(*staged.fetch); }

void Stager::drop(std::unordered_map<std::int64_t, Staged>::iterator it) {
  if (spare_) TiledEvictableAccess::note_staged(*instance_, -instance_->tile_bytes(), 0);
  spare_ = std::move(it->second.buffer);
  staged_.erase(it);
}

std::unordered_map<std::int64_t, Stager::Staged>::iterator Stager::furthest_droppable(std::int64_t after) {
  auto victim = staged_.end();
  std::int64_t furthest = after;
  for (auto it = staged_.begin(); it != staged_.end(); ++it) {
    if (it->second.pins > 0 || !settled(it->second)) continue;
    const std::int64_t n = next_use(it->first);
    if (n > furthest) {
      furthest = n;
      victim = it;
    }
  }
  return victim;
}

std::shared_ptr<Carrier> Stager::make_room() {
  std::shared_ptr<Carrier> spare = std::move(spare_);  // a buffer dropped at its last use
  const std::int64_t bytes = instance_->tile_bytes();
  while (TiledEvictableAccess::exceeds_budget_with(*instance_, spare ? 0 : bytes)) {
    const auto victim = furthest_droppable(-1);
    if (victim == staged_.end()) break;  // everything staged is in use: one tile over, by design
    if (spare) TiledEvictableAccess::note_staged(*instance_, -bytes, 0);  // a second drop frees memory
    spare = std::move(victim->second.buffer);
    staged_.erase(victim);
  }
  return spare;
}

std::shared_ptr<Carrier> Stager::room_for_fetch(std::int64_t use) {
  if (spare_) return std::move(spare_);
  const std::int64_t bytes = instance_->tile_bytes();
  if (!TiledEvictableAccess::exceeds_budget_with(*instance_, bytes)) {
    std::shared_ptr<Carrier> buffer =
        instance_->primary()->allocate_like(instance_->tile_size(), true, &instance_->dtype(), true);
    TiledEvictableAccess::note_staged(*instance_, bytes, 0);
    return buffer;
  }
  const auto victim = furthest_droppable(use);  // Belady: only a tile needed after this use gives its place
  if (victim == staged_.end()) return nullptr;
  std::shared_ptr<Carrier> buffer = std::move(victim->second.buffer);
  staged_.erase(victim);
  return buffer;  // still counted
}

Stager::Pin Stager::pin(std::int64_t t) {
  Pin p;
  auto resident = TiledEvictableAccess::pin_tile(*instance_, t, p.implicit, p.secondary);
  pinned_.push_back(t);  // every tile pin_tile returns is pinned
  if (resident) p.resident = TileRun{std::move(resident->first), resident->second};
  return p;
}

void Stager::look_ahead() noexcept {
  if (depth_ == 0) return;
  const std::int64_t size = instance_->tile_size();
  try {
    while (ahead_.size() < depth_ && cursor_ + ahead_.size() < uses_.size()) {
      const std::size_t use = cursor_ + ahead_.size();
      const std::int64_t t = uses_[use];
      ahead_.push_back(pin(t));
      const Pin& p = ahead_.back();
      if (!p.secondary || staged_.contains(t)) continue;
      std::shared_ptr<Carrier> buffer = room_for_fetch(static_cast<std::int64_t>(use));
      if (!buffer) {
        // No room: the later uses are needed later still. This use is left
        // unpinned, so the next lookahead starts with it again.
        ahead_.pop_back();
        pinned_.erase(std::find(pinned_.begin(), pinned_.end(), t));
        TiledEvictableAccess::unpin_tile(*instance_, t);
        break;
      }
      try {
        if (!io_) io_ = std::make_unique<Prefetcher>(instance_);
        auto fetch = std::make_shared<Fetch>();
        fetch->secondary = p.secondary;
        fetch->buffer = buffer;
        fetch->first = t * size;
        fetch->count = size;
        const auto entry = staged_.emplace(t, Staged{buffer, 0, fetch}).first;
        try {
          io_->submit(std::move(fetch));
        } catch (...) {
          staged_.erase(entry);
          throw;
        }
      } catch (...) {
        if (spare_) TiledEvictableAccess::note_staged(*instance_, -instance_->tile_bytes(), 0);
        spare_ = std::move(buffer);
        throw;
      }
    }
  } catch (...) {
    // Best effort: the uses not fetched are staged when needed, and a pin
    // that failed here fails again, with its error, at its acquire().
  }
}

void Stager::settle(std::unordered_map<std::int64_t, Staged>::iterator it) {
  if (!it->second.fetch) return;  // kept from an earlier use, or staged when needed
  const std::shared_ptr<Fetch> fetch = std::move(it->second.fetch);
  const bool waited = io_->wait(*fetch);
  if (fetch->error) {
    drop(it);
    std::rethrow_exception(fetch->error);
  }
  TiledEvictableAccess::note_prefetch(*instance_, 0, waited ? 0 : 1, waited ? 1 : 0);
}

TileRun Stager::take(std::int64_t t, const Pin& pin) {
  if (pin.resident) return *pin.resident;
  const std::int64_t bytes = instance_->tile_bytes();
  const std::int64_t size = instance_->tile_size();
  if (pin.implicit) {
    if (!zero_) {
      zero_ = instance_->primary()->allocate_like(size, true, &instance_->dtype(), false);
      TiledEvictableAccess::note_staged(*instance_, bytes, 0);
    }
    return TileRun{zero_, 0};
  }
  // A secondary tile: staged already (or being staged), or staged now.
  if (auto it = staged_.find(t); it != staged_.end()) {
    settle(it);
    ++it->second.pins;
    return TileRun{it->second.buffer, 0};
  }
  TiledEvictableAccess::note_prefetch(*instance_, 0, 0, 1);
  std::shared_ptr<Carrier> buffer = make_room();  // a dropped staged buffer, still counted
  const bool counted = buffer != nullptr;
  try {
    if (!buffer) buffer = instance_->primary()->allocate_like(size, true, &instance_->dtype(), true);
    buffer->copy_range(*pin.secondary, t * size, 0, size);
    staged_.emplace(t, Staged{buffer, 1, nullptr});
  } catch (...) {
    if (counted) TiledEvictableAccess::note_staged(*instance_, -bytes, 0);
    throw;
  }
  TiledEvictableAccess::note_staged(*instance_, counted ? 0 : bytes, bytes);
  return TileRun{std::move(buffer), 0};
}

TileRun Stager::acquire() {
  if (cursor_ >= uses_.size()) throw RuntimeError("TiledEvictable: the stream acquired past its schedule");
  const std::int64_t t = uses_[cursor_++];
  Pin p;
  if (!ahead_.empty()) {
    p = std::move(ahead_.front());
    ahead_.pop_front();
  } else {
    p = pin(t);  // nothing pinned when it throws
  }
  TileRun run;
  try {
    run = take(t, p);
  } catch (...) {
    pinned_.erase(std::find(pinned_.begin(), pinned_.end(), t));
    TiledEvictableAccess::unpin_tile(*instance_, t);
    throw;
  }
  look_ahead();  // the next uses' fetches run while the caller computes on this one
  return run;
}

void Stager::release(std::int64_t tile) noexcept {
  const auto pin = std::find(pinned_.begin(), pinned_.end(), tile);
  if (pin == pinned_.end()) return;  // not pinned by this stager
  pinned_.erase(pin);
  if (auto it = staged_.find(tile); it != staged_.end() && it->second.pins > 0 && --it->second.pins == 0 &&
                                    next_use(tile) == std::numeric_limits<std::int64_t>::max()) {
    // Never needed again: dropped now (one buffer is kept for the next
    // staging, still counted), so dead copies never crowd the budget.
    drop(it);
  }
  TiledEvictableAccess::unpin_tile(*instance_, tile);
}

}  // namespace tiled
}  // namespace strideweave
