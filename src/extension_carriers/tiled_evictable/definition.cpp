// TiledEvictable's CarrierDefinition: the StorageProvider (slots read and
// written through each tile's residency), release, and the CompositeProvider
// of the six direct operations (carrier-composition B8, B14, B15). See
// <strideweave/carriers/tiled_evictable.h>. Public headers only.
#include "extension_carriers/tiled_evictable/access.h"

#include <strideweave/call.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace strideweave {

namespace {

// The bounded central surface a raw tiled Tensor reaches (B8.1); beside it
// the instance executes only project()'s gather and scatter()'s scatter.
constexpr std::array<std::string_view, 6> kDirectOperations{"add",  "elementwise_mul", "mul",
                                                            "relu", "reduce_sum",      "matmul"};

}  // namespace

// ---------------------------------------------------------------- storage

bool TiledEvictableAccess::supports(const TiledEvictable& c, const DType& dtype) noexcept {
  const std::shared_ptr<Carrier> secondary = c.secondary();
  return c.primary_->supports_storage_dtype(dtype) && secondary->supports_storage_dtype(dtype);
}

// Reads run by run, one tile's piece at a time: the tile is pinned (users)
// while its storage is read, so no residency request can move it meanwhile.
void TiledEvictableAccess::read_range(const TiledEvictable& c, std::int64_t first, std::span<Value> out) {
  const std::int64_t ts = c.tile_size_;
  std::int64_t done = 0;
  while (done < static_cast<std::int64_t>(out.size())) {
    const std::int64_t slot = first + done;
    const std::int64_t t = slot / ts;
    const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(out.size()) - done, (t + 1) * ts - slot);
    std::shared_ptr<Carrier> source;
    std::int64_t source_first = 0;
    {
      std::lock_guard lock(c.mutex_);
      const TiledEvictable::Tile& tile = c.tiles_[t];
      if (c.stopping_) throw RuntimeError("TiledEvictable: the carrier is released");
      if (tile.busy)
        throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is in an incomplete residency request",
                                       fmt::join(c.coordinate_of(t), ", ")));
      if (tile.block) {
        source = tile.block;
        source_first = tile.block_offset + (slot - t * ts);
      } else if (tile.secondary_valid) {
        source = c.secondary_;
        source_first = slot;
        c.counters_.bytes_read += n * (c.tile_bytes() / ts);
      } else if (!tile.implicit_zero) {
        throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is invalid: it has no value until it is promoted "
                                       "or scattered",
                                       fmt::join(c.coordinate_of(t), ", ")));
      }
      if (source) ++c.tiles_[t].users;
    }
    if (!source) {
      std::fill(out.begin() + done, out.begin() + done + n, *storage_zero(c.dtype()));
    } else {
      const auto unpin = [&] {
        {
          std::lock_guard lock(c.mutex_);
          --c.tiles_[t].users;
        }
        c.idle_.notify_all();
      };
      try {
        const std::vector<Value> values = source->read_values(source_first, n);
        std::copy(values.begin(), values.end(), out.begin() + done);
      } catch (...) {
        unpin();
        throw;
      }
      unpin();
    }
    done += n;
  }
}

void TiledEvictableAccess::write_range(TiledEvictable& c, std::int64_t first, std::span<const Value> values) {
  const std::int64_t ts = c.tile_size_;
  std::int64_t done = 0;
  while (done < static_cast<std::int64_t>(values.size())) {
    const std::int64_t slot = first + done;
    const std::int64_t t = slot / ts;
    const std::int64_t n =
        std::min<std::int64_t>(static_cast<std::int64_t>(values.size()) - done, (t + 1) * ts - slot);
    std::shared_ptr<Carrier> target;
    std::int64_t target_first = 0;
    // The checks and the pin happen in one locked section, so no residency
    // request can take the tile between them. An implicit tile that needs a
    // block is marked busy while the block is allocated (outside the lock),
    // then checked and pinned again.
    std::shared_ptr<Carrier> fresh;
    bool materialized = false;
    for (;;) {
      bool materialize = false;
      {
        std::lock_guard lock(c.mutex_);
        TiledEvictable::Tile& tile = c.tiles_[t];
        if (fresh) {  // our materialization: install the block (the tile is ours, busy)
          materialized = true;
          tile.block = std::move(fresh);
          tile.block_offset = 0;
          tile.implicit_zero = false;
          tile.busy = false;
          ++c.resident_tiles_;
          c.note_resident_locked();
          c.idle_.notify_all();
        }
        if (c.stopping_) throw RuntimeError("TiledEvictable: the carrier is released");
        if (tile.busy)
          throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is in an incomplete residency request or being "
                                         "materialized by another writer",
                                         fmt::join(c.coordinate_of(t), ", ")));
        if (!tile.block && !tile.secondary_valid && !tile.implicit_zero)
          throw RuntimeError(fmt::format("TiledEvictable: tile ({}) is invalid: promote or scatter it before writing "
                                         "part of it",
                                         fmt::join(c.coordinate_of(t), ", ")));
        if (!tile.block && !tile.secondary_valid) {
          // An implicit zero: writing zeros keeps it one (a gradient's
          // untouched tiles, B5); anything else gets a zeroed block first.
          const Value zero = *storage_zero(c.dtype());
          const auto piece = values.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(n));
          if (std::all_of(piece.begin(), piece.end(), [&](const Value& v) { return v == zero; })) break;
          materialize = true;
          tile.busy = true;
        } else {
          if (tile.block) {
            target = tile.block;
            target_first = tile.block_offset + (slot - t * ts);
            tile.secondary_valid = false;  // dirty from now on
          } else {
            target = c.secondary_;
            target_first = slot;
          }
          ++tile.users;
        }
      }
      if (!materialize) break;
      try {
        fresh = c.primary_->allocate_like(ts, true, nullptr, false);
      } catch (...) {
        {
          std::lock_guard lock(c.mutex_);
          c.tiles_[t].busy = false;
        }
        c.idle_.notify_all();
        throw;
      }
    }
    if (!target) {  // zeros into an implicit zero: nothing to write
      done += n;
      continue;
    }
    const auto unpin = [&] {
      {
        std::lock_guard lock(c.mutex_);
        --c.tiles_[t].users;
      }
      c.idle_.notify_all();
    };
    try {
      const DependentCarrier::OwnerAccess access = c.owner_access();  // the seed primary and the secondary are owned
      target->write_values(target_first, values.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(n)));
    } catch (...) {
      unpin();
      throw;
    }
    unpin();
    done += n;
    // Write-behind: a tile this write gave a block and filled whole, beyond
    // the budget, is saved to the secondary and its block dropped (best
    // effort: a tile in use stays, and a failed write-back leaves it primary
    // and dirty, its value intact). So filling an instance run by run
    // (new_like, a gradient) holds at most its budget plus one tile. A
    // partial write (element by element: scatter, write_slots) keeps its
    // block: the rest of the tile is likely to follow.
    if (materialized && slot == t * ts && n == ts && TiledEvictableAccess::exceeds_budget_with(c, 0)) {
      try {
        c.submit(TileSet({c.coordinate_of(t)}), false, "TiledEvictable (write-behind)", true).wait();
      } catch (...) {
      }
    }
  }
}

// B15: nothing is released while a request, a projection or scatter, a
// materializing write or running work holds a tile. The tiers are released
// before the tile table is wiped: a tier whose release fails leaves the
// instance live and as it was (the framework then keeps it unreleased).
void TiledEvictableAccess::release(TiledEvictable& c) {
  std::vector<std::shared_ptr<Carrier>> tiers;
  {
    std::lock_guard lock(c.mutex_);
    if (c.pending_requests_ > 0)
      throw RuntimeError("TiledEvictable.release: a residency request, projection, scatter or operation is "
                         "incomplete; wait for it first");
    for (const TiledEvictable::Tile& tile : c.tiles_)
      if (tile.users > 0 || tile.busy) throw RuntimeError("TiledEvictable.release: work on the carrier is still running");
    c.stopping_ = true;
    tiers = {c.secondary_, c.primary_};
  }
  c.idle_.notify_all();
  if (c.worker_.joinable()) c.worker_.join();
  try {
    const DependentCarrier::OwnerAccess access = c.owner_access();
    for (const std::shared_ptr<Carrier>& tier : tiers)
      if (!tier->is_released()) tier->release();
  } catch (...) {
    {
      std::lock_guard lock(c.mutex_);
      c.stopping_ = false;
    }
    throw;
  }
  {
    std::lock_guard lock(c.mutex_);
    for (TiledEvictable::Tile& tile : c.tiles_) tile = TiledEvictable::Tile{};
    c.seed_tiles_ = c.resident_tiles_ = 0;
  }
  for (const std::shared_ptr<Carrier>& tier : tiers) c.relinquish(*tier);
}

// ---------------------------------------------------------------- direct operations

// The primary class's plans of the six names whose output it can store. The
// primary's front end runs mul(weak, tensor) as mul(tensor, weak), so its
// class lists only the latter; the direct surface offers both overloads
// (B8.1), so each (tensor, weak) plan of mul is mirrored.
std::vector<OperationCapability> TiledEvictableAccess::capabilities(const TiledEvictable& c) {
  std::vector<OperationCapability> out;
  for (OperationCapability& cap : c.primary_->operation_capabilities()) {
    if (std::find(kDirectOperations.begin(), kDirectOperations.end(), cap.operation()) == kDirectOperations.end() ||
        !c.primary_->supports_storage_dtype(cap.output()))
      continue;
    const std::span<const OperandCapability> ops = cap.operands();
    if (cap.operation() == "mul" && ops.size() == 2 && ops[0].role() == OperandRole::TENSOR &&
        ops[1].role() == OperandRole::WEAK_SCALAR) {
      OperationCapability mirrored(cap.operation(), {ops[1], ops[0]}, cap.compute(), cap.accumulation(),
                                   cap.accumulator_dtype(), &cap.output());
      const auto same = [&](const OperationCapability& o) { return o == mirrored; };
      if (std::none_of(out.begin(), out.end(), same)) out.push_back(std::move(mirrored));
    }
    const auto same = [&](const OperationCapability& o) { return o == cap; };
    if (std::none_of(out.begin(), out.end(), same)) out.push_back(std::move(cap));
  }
  out.push_back(gather_capability(c.dtype()));  // project()'s gather (B4)
  // scatter()'s operation (B10): one plan per reduction (Float32's two
  // share one plan shape; Bool has no 'add').
  for (ScatterReduction r : {ScatterReduction::Replace, ScatterReduction::Add}) {
    if (r == ScatterReduction::Add && &c.dtype() == &DType::Bool()) continue;
    OperationCapability cap = scatter_capability(c.dtype(), r);
    if (std::none_of(out.begin(), out.end(), [&](const OperationCapability& o) { return o == cap; }))
      out.push_back(std::move(cap));
  }
  return out;
}

// Within the budget: only as many tiles as fit beside what is resident are
// promoted (the others are read from the secondary when needed).
AwaitResidency TiledEvictableAccess::prefetch(TiledEvictable& c, const TileSet& tiles, std::int64_t reserve_bytes,
                                              TileSet* submitted) {
  std::vector<TileCoordinate> fitting;
  {
    const std::lock_guard lock(c.mutex_);
    std::int64_t room = c.budget_ - c.resident_tiles_ * c.tile_bytes() - c.staged_bytes_ - reserve_bytes;
    for (const TileCoordinate& coordinate : tiles.coordinates()) {
      const TiledEvictable::Tile& tile = c.tiles_[c.tile_index(coordinate, "TiledEvictable (prefetch)")];
      // What submit() keeps of a best-effort promotion (so `submitted` is
      // what this call promotes: a tile another request holds is left out).
      if (tile.block || !tile.secondary_valid || tile.busy || tile.users > 0) continue;
      if (room < c.tile_bytes()) break;
      room -= c.tile_bytes();
      fitting.push_back(coordinate);
    }
  }
  if (fitting.empty()) return AwaitResidency(extension::ProviderCompletion<void>::ready());
  TileSet set(std::move(fitting));
  AwaitResidency handle = c.submit(set, true, "TiledEvictable (prefetch)", true);
  if (submitted) *submitted = std::move(set);
  return handle;
}

void TiledEvictableAccess::undo_promotions(TiledEvictable& c, const TileSet& promoted) noexcept {
  try {
    std::vector<TileCoordinate> clean;
    {
      const std::lock_guard lock(c.mutex_);
      for (const TileCoordinate& coordinate : promoted.coordinates()) {
        const TiledEvictable::Tile& tile = c.tiles_[c.tile_index(coordinate, "TiledEvictable (undo)")];
        if (tile.block && tile.secondary_valid && tile.users == 0 && !tile.busy) clean.push_back(coordinate);
      }
    }
    evict_if_possible(c, TileSet(std::move(clean)));
  } catch (...) {  // best effort: a tile left primary and clean holds the same value
  }
}

void TiledEvictableAccess::evict_if_possible(TiledEvictable& c, const TileSet& tiles) noexcept {
  if (tiles.empty()) return;
  try {
    c.submit(tiles, false, "TiledEvictable (policy eviction)", true).wait();
  } catch (...) {  // nothing changed (failure-atomic); an optimisation that could not run
  }
}

ResidencyPlan policy_plan(const TiledEvictable& instance, const TileSet& required, const char* purpose) {
  if (!instance.residency_policy()) return ResidencyPlan();
  ResidencyPlan plan = instance.residency_policy()->plan(required, purpose);
  for (const TileSet* set : {&plan.promote(), &plan.retain(), &plan.evict()})
    set->check_against(instance.grid_shape(), "TiledEvictable: the residency policy's plan");
  return plan;
}

const TiledEvictable& tiled_of(const Tensor& tensor, const char* what) {
  const auto* tiled = dynamic_cast<const TiledEvictable*>(tensor.carrier().get());
  if (!tiled)
    throw TypeError(fmt::format("{}: expected a TiledEvictable Tensor, got a {} one", what,
                                tensor.carrier()->class_name()));
  return *tiled;
}

TileSet tile_union(const TileSet& a, const TileSet& b) {
  std::vector<TileCoordinate> all = a.coordinates();
  for (const TileCoordinate& c : b.coordinates())
    if (!a.contains(c)) all.push_back(c);
  return TileSet(std::move(all));
}

namespace {

extension::CompositeProvider::Prepared prepare_direct(const Carrier&, const operation::ResolvedInvocation& inv) {
  if (inv.operation() == TiledEvictable::gather_operation_name) return prepare_gather(inv);
  if (inv.operation() == TiledEvictable::scatter_operation_name) return prepare_scatter(inv);
  // B2 first: every tiled operand must be a full Tensor.
  std::vector<std::shared_ptr<TiledEvictable>> instances;
  for (const operation::CallOperand& operand : inv.operands()) {
    if (std::holds_alternative<operation::Structural>(operand))
      throw TypeError(fmt::format("{}: a direct tiled operation takes no structural operand", inv.operation()));
    const Tensor* t = std::get_if<Tensor>(&operand);
    if (!t) continue;
    const TiledEvictable& tiled = tiled_of(*t, inv.operation().c_str());
    tiled.check_full_tensor(*t, inv.operation().c_str());
    auto instance = std::static_pointer_cast<TiledEvictable>(std::const_pointer_cast<Carrier>(tiled.shared_from_this()));
    if (std::find(instances.begin(), instances.end(), instance) == instances.end()) instances.push_back(instance);
  }
  // B14: each instance's policy, asked before any work; its plan must fit the
  // grid (ValueError).
  std::vector<std::pair<std::shared_ptr<TiledEvictable>, ResidencyPlan>> plans;
  for (const auto& instance : instances)
    if (instance->residency_policy()) plans.emplace_back(instance, policy_plan(*instance, instance->all_tiles(), "operation"));
  return extension::PreparedComposite([inv = &inv, plans = std::move(plans)]() -> extension::ResultSubmission {
    TiledEvictableAccess::PromotionsUndoneOnFailure promotions;  // a failed operation undoes them
    for (const auto& [instance, plan] : plans) promotions.prefetch(instance, plan.promote()).wait();
    Tensor result = run_direct_operation(*inv);  // streamed (direct.cpp)
    promotions.dismiss();
    // The policy's evictions, deferred until the work no longer needs them.
    for (const auto& [instance, plan] : plans) TiledEvictableAccess::evict_if_possible(*instance, plan.evict());
    return extension::ProviderResult({std::move(result)});
  });
}

}  // namespace

void register_tiled_evictable_definition() {
  (void)gather_definition();  // project()'s and scatter()'s operations, registered with the carrier
  (void)scatter_definition();
  using extension::StorageProvider;
  const auto self = [](const Carrier& c) -> const TiledEvictable& { return static_cast<const TiledEvictable&>(c); };
  const auto mut = [](Carrier& c) -> TiledEvictable& { return static_cast<TiledEvictable&>(c); };
  StorageProvider storage(
      [self](const Carrier& c, const DType& dtype) { return TiledEvictableAccess::supports(self(c), dtype); },
      [self](const Carrier& c) { return self(c).tile_size() * self(c).tile_count(); },
      [self](Carrier& c, std::int64_t slots) {
        if (slots != self(c).tile_size() * self(c).tile_count())
          throw ValueError(fmt::format("TiledEvictable: {} slots requested, the geometry holds {}", slots,
                                       self(c).tile_size() * self(c).tile_count()));
      },
      [mut](Carrier& c) { TiledEvictableAccess::release(mut(c)); },
      [self](const Carrier& c, std::int64_t index) {
        Value v{};
        TiledEvictableAccess::read_range(self(c), index, std::span<Value>(&v, 1));
        return v;
      },
      [mut](Carrier& c, std::int64_t index, const Value& value) {
        TiledEvictableAccess::write_range(mut(c), index, std::span<const Value>(&value, 1));
      },
      /*elementwise_fallback=*/true);
  storage = storage.with_ranges(
      [self](const Carrier& c, std::int64_t first, std::span<Value> out) {
        TiledEvictableAccess::read_range(self(c), first, out);
      },
      [mut](Carrier& c, std::int64_t first, std::span<const Value> values) {
        TiledEvictableAccess::write_range(mut(c), first, values);
      });
  extension::CompositeProvider composite(
      [self](const Carrier& c) { return TiledEvictableAccess::capabilities(self(c)); },
      [self](const Carrier& c, const operation::ResolvedInvocation& inv) {
        // A scatter publishes a new TiledEvictable; everything else a dense
        // primary-class result.
        const CarrierClass cls = inv.operation() == TiledEvictable::scatter_operation_name
                                     ? carrier_class<TiledEvictable>()
                                     : self(c).primary()->exact_class();
        return std::vector<CarrierClass>(inv.results().size(), cls);
      },
      &prepare_direct);
  composite = composite.with_backward(
      [](const Carrier&, const operation::VJPContext& context, std::span<const std::optional<Tensor>> cotangents) {
        return run_direct_backward(context, cotangents);
      });
  extension::register_carrier_definition(carrier_class<TiledEvictable>(),
                                         extension::CarrierDefinition(storage, std::nullopt, {}, composite));
}

}  // namespace strideweave
