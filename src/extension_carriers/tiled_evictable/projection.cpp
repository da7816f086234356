// TiledEvictable projection (carrier-composition B4, B5, B9): project(), the
// gather operation behind it ("tiled_evictable.gather", a user-defined
// OperationDefinition whose composite kernel and VJP live here) and its
// handle. See <strideweave/carriers/tiled_evictable.h> and
// docs/tiled_evictable.md. Public headers only.
#include "extension_carriers/tiled_evictable/access.h"
#include "extension_carriers/tiled_evictable/stream.h"

#include <strideweave/autograd.h>
#include <strideweave/errors.h>
#include <strideweave/move.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

namespace strideweave {

// ---------------------------------------------------------------- the selection as an option

std::vector<std::int64_t> encode_selection(const TileSelection& selection) {
  std::vector<std::int64_t> out{static_cast<std::int64_t>(selection.rank())};
  for (const auto& axis : selection.per_axis()) out.push_back(static_cast<std::int64_t>(axis.size()));
  for (const auto& axis : selection.per_axis()) out.insert(out.end(), axis.begin(), axis.end());
  return out;
}

TileSelection decode_selection(std::span<const std::int64_t> encoded, const char* what) {
  const auto malformed = [&] { return ValueError(fmt::format("{}: a malformed per_axis encoding", what)); };
  if (encoded.empty() || encoded[0] < 1 || static_cast<std::size_t>(encoded[0]) + 1 > encoded.size()) throw malformed();
  const auto rank = static_cast<std::size_t>(encoded[0]);
  std::vector<std::vector<std::int64_t>> per_axis(rank);
  std::size_t at = 1 + rank;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t n = encoded[1 + i];
    if (n < 0 || at + static_cast<std::size_t>(n) > encoded.size()) throw malformed();
    per_axis[i].assign(encoded.begin() + static_cast<std::ptrdiff_t>(at),
                       encoded.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n);
  }
  if (at != encoded.size()) throw malformed();
  return TileSelection(std::move(per_axis));
}

namespace {

// ---------------------------------------------------------------- the destination as an option

// project()'s destination travels to the composite as an opaque option
// value. Only tokens made here are accepted (a by-name call passing any
// other opaque value gets a TypeError, never a cast of a foreign object).
struct DestinationToken {
  std::shared_ptr<Carrier> carrier;
  ~DestinationToken();
};
std::mutex& token_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const void*>& live_tokens() {
  static std::unordered_set<const void*> s;
  return s;
}
DestinationToken::~DestinationToken() {
  const std::lock_guard lock(token_mutex());
  live_tokens().erase(this);
}
operation::OpaqueValue destination_option(const std::shared_ptr<Carrier>& carrier) {
  auto token = std::make_shared<DestinationToken>(DestinationToken{carrier});
  {
    const std::lock_guard lock(token_mutex());
    live_tokens().insert(token.get());
  }
  return operation::OpaqueValue{std::shared_ptr<const void>(token, token.get()), "TiledEvictable destination"};
}
std::shared_ptr<Carrier> destination_of(const operation::OptionValue& value) {
  if (std::holds_alternative<std::monostate>(value)) return nullptr;
  const auto* opaque = std::get_if<operation::OpaqueValue>(&value);
  if (opaque) {
    const std::lock_guard lock(token_mutex());
    if (live_tokens().count(opaque->value.get()))
      return static_cast<const DestinationToken*>(opaque->value.get())->carrier;
  }
  throw TypeError(fmt::format("{}: option 'destination' must be None (it is set by TiledEvictable.project)",
                              TiledEvictable::gather_operation_name));
}

Arithmetic copy_arithmetic(const SimpleDType& dtype) {
  return &dtype == &DType::Float32() ? Arithmetic::BINARY32 : Arithmetic::INT32_EXACT;
}

}  // namespace

// ---------------------------------------------------------------- the gather

std::vector<std::int64_t> projected_shape(const TiledEvictable& tiled, const TileSelection& selection) {
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i < selection.rank(); ++i)
    shape.push_back(static_cast<std::int64_t>(selection.per_axis()[i].size()) * tiled.tile_shape()[i]);
  return shape;
}

std::shared_ptr<TiledEvictable> TiledEvictableAccess::fresh_with_valid(const TiledEvictable& like,
                                                                       const TileSelection& selection) {
  auto fresh = std::static_pointer_cast<TiledEvictable>(
      like.allocate_like(like.tile_size_ * like.tile_count_, true, &like.dtype()));
  std::vector<bool> selected(static_cast<std::size_t>(like.tile_count_), false);
  for (const TileCoordinate& c : selection.coordinates())
    selected[static_cast<std::size_t>(like.tile_index(c, TiledEvictable::scatter_operation_name))] = true;
  const std::lock_guard lock(fresh->mutex_);
  for (std::int64_t t = 0; t < fresh->tile_count_; ++t)
    if (!selected[static_cast<std::size_t>(t)]) fresh->tiles_[t].implicit_zero = false;  // invalid
  return fresh;
}

std::vector<Value> TiledEvictableAccess::gather_selected(const TiledEvictable& c, const Tensor& tensor,
                                                         const TileSelection& selection) {
  const std::int64_t ts = c.tile_size_;
  std::vector<std::int64_t> tiles;
  for (const TileCoordinate& coordinate : selection.coordinates())
    tiles.push_back(c.tile_index(coordinate, TiledEvictable::gather_operation_name));
  struct Source {
    std::shared_ptr<Carrier> carrier;  // null: implicit zero
    std::int64_t first = 0;
  };
  std::vector<Source> sources;
  {
    std::unique_lock lock(c.mutex_);
    // A best-effort transfer (another projection's prefetch) is waited for:
    // it is no caller's residency request, and it ends on its own.
    c.idle_.wait(lock, [&] {
      return std::none_of(tiles.begin(), tiles.end(), [&](std::int64_t t) { return c.tiles_[t].prefetching; });
    });
    if (c.stopping_) throw RuntimeError("TiledEvictable: the carrier is released");
    for (std::int64_t t : tiles) {
      const TiledEvictable::Tile& tile = c.tiles_[t];
      if (tile.busy)
        throw RuntimeError(fmt::format("{}: tile ({}) is in an incomplete residency request",
                                       TiledEvictable::gather_operation_name, fmt::join(c.coordinate_of(t), ", ")));
      if (tile.block) sources.push_back({tile.block, tile.block_offset});
      else if (tile.secondary_valid) {
        sources.push_back({c.secondary_, t * ts});
        c.counters_.bytes_read += c.tile_bytes();
      }
      else if (tile.implicit_zero) sources.push_back({});
      else
        throw RuntimeError(fmt::format("{}: tile ({}) is invalid: promote or scatter it first",
                                       TiledEvictable::gather_operation_name, fmt::join(c.coordinate_of(t), ", ")));
    }
    for (std::int64_t t : tiles) ++c.tiles_[t].users;
  }
  const auto unpin = [&] {
    {
      std::lock_guard lock(c.mutex_);
      for (std::int64_t t : tiles) --c.tiles_[t].users;
    }
    c.idle_.notify_all();
  };
  try {
    std::int64_t total = 1;
    for (std::int64_t e : projected_shape(c, selection)) total *= e;
    std::vector<Value> out(static_cast<std::size_t>(total), *storage_zero(c.dtype()));
    std::size_t loaded = tiles.size();  // the selected tile whose run `run` holds
    std::vector<Value> run;
    for_each_projected(c, tensor, selection, [&](std::size_t s, std::int64_t t, std::int64_t index, std::int64_t, std::int64_t slot) {
      if (!sources[s].carrier) return;  // implicit zero
      if (loaded != s) {
        run = sources[s].carrier->read_values(sources[s].first, ts);
        loaded = s;
      }
      out[static_cast<std::size_t>(index)] = run[static_cast<std::size_t>(slot - t * ts)];
    });
    unpin();
    return out;
  } catch (...) {
    unpin();
    throw;
  }
}

// The projection as one streamed pass (docs/tiled_evictable.md, "Prefetch"):
// the selected tiles in coordinates() order are the schedule; each is
// acquired through a Stager (resident in place, staged or prefetched within
// the budget, implicit as zeros) and its box copied into the fresh compact
// result.
Tensor project_streamed(const Tensor& tensor, const TileSelection& selection, const DType& dtype,
                        const Layout& result_layout) {
  const tiled::TiledOperand operand(tensor);
  const TiledEvictable& c = operand.instance();
  selection.check_against(c.grid_shape(), TiledEvictable::gather_operation_name);
  std::vector<std::int64_t> uses;
  for (const TileCoordinate& coordinate : selection.coordinates()) {
    std::vector<std::int64_t> origin(coordinate.size());
    for (std::size_t i = 0; i < coordinate.size(); ++i) origin[i] = coordinate[i] * c.tile_shape()[i];
    uses.push_back(operand.tile_at(origin));
  }
  TiledEvictableAccess::require_valid(c, uses, TiledEvictable::gather_operation_name);
  const std::vector<std::int64_t> extents = projected_shape(c, selection);
  std::int64_t total = 1;
  for (std::int64_t e : extents) total *= e;
  const std::shared_ptr<Carrier> result = c.primary()->allocate_like(total, true, &dtype, false);
  const std::size_t rank = selection.rank();
  const std::vector<std::int64_t>& tile = c.tile_shape();
  tiled::Stager stager(operand.shared(), uses);
  std::vector<std::int64_t> cc(rank, 0);  // the compact tile coordinate
  for (std::int64_t t : uses) {
    const tiled::TileRun run = stager.acquire();
    try {
      std::vector<std::int64_t> lo(rank);
      for (std::size_t i = 0; i < rank; ++i) lo[i] = cc[i] * tile[i];
      tiled::copy_into_box(operand.view(run, operand.tile_origin(t), tile), *result, extents, lo);
    } catch (...) {
      stager.release(t);
      throw;
    }
    stager.release(t);
    for (std::size_t i = 0; i < rank; ++i) {
      if (++cc[i] < static_cast<std::int64_t>(selection.per_axis()[i].size())) break;
      cc[i] = 0;
    }
  }
  return Tensor(result, 0, result_layout);
}

OperationCapability gather_capability(const SimpleDType& dtype) {
  return OperationCapability::from_plan(OperationPlan(TiledEvictable::gather_operation_name,
                                                      {OperandPlan::tensor(dtype, dtype)}, copy_arithmetic(dtype),
                                                      std::nullopt, nullptr, dtype));
}

std::shared_ptr<const operation::OperationDefinition> gather_definition() {
  namespace op = operation;
  static const std::shared_ptr<const op::OperationDefinition> definition = op::define_operation(
      TiledEvictable::gather_operation_name,
      op::OperationSchema({op::OperandSpec("source", op::OperandKind::TENSOR, true)},
                          {op::OptionSpec("per_axis", op::REQUIRED, "the TileSelection, encoded", op::OptionKind::INTEGERS),
                           op::OptionSpec("destination", op::OptionValue{}, "set by TiledEvictable.project")}),
      [](const op::BoundOperationCall& call) {
        const Tensor& source = call.tensor(0);
        const TiledEvictable& tiled = tiled_of(source, TiledEvictable::gather_operation_name);
        const auto* encoded = std::get_if<std::vector<std::int64_t>>(&call.option("per_axis"));
        if (!encoded)
          throw TypeError(fmt::format("{}: option 'per_axis' must be a list of integers",
                                      TiledEvictable::gather_operation_name));
        const TileSelection selection = decode_selection(*encoded, TiledEvictable::gather_operation_name);
        selection.check_against(tiled.grid_shape(), TiledEvictable::gather_operation_name);
        tiled.check_full_tensor(source, TiledEvictable::gather_operation_name);
        (void)destination_of(call.option("destination"));
        const SimpleDType& dtype = static_cast<const SimpleDType&>(source.dtype());
        OperationPlan plan(TiledEvictable::gather_operation_name, {OperandPlan::tensor(dtype, dtype)},
                           copy_arithmetic(dtype), std::nullopt, nullptr, dtype);
        return op::ResolvedInvocation(call, plan,
                                      {op::ResultSpec::compact(dtype, Shape::of(projected_shape(tiled, selection)))});
      },
      std::nullopt,
      // B5: the adjoint scatters the cotangent into a fresh TiledEvictable of
      // the source's geometry and tier classes, under the source's offset and
      // Layout; tiles outside the selection stay implicit zero.
      op::VjpFn([](const op::VJPContext& ctx, std::span<const std::optional<Tensor>> cotangents) {
        std::vector<std::optional<Tensor>> out(1);
        if (!cotangents[0]) return out;
        const Tensor& source = std::get<Tensor>(ctx.invocation().operands()[0]);
        const TiledEvictable& tiled = tiled_of(source, TiledEvictable::gather_operation_name);
        const TileSelection selection = decode_selection(
            std::get<std::vector<std::int64_t>>(ctx.invocation().options().at("per_axis")),
            TiledEvictable::gather_operation_name);
        (void)policy_plan(tiled, selection.tile_set(), "backward");  // B14: asked; it reads no tile here
        const std::vector<Value> values = cotangents[0]->values();  // the compact result's logical order
        std::vector<std::int64_t> slots(values.size());
        for_each_projected(tiled, source, selection, [&](std::size_t, std::int64_t, std::int64_t index, std::int64_t, std::int64_t slot) {
          slots[static_cast<std::size_t>(index)] = slot;
        });
        std::shared_ptr<Carrier> gradient = tiled.allocate_like(tiled.tile_size() * tiled.tile_count(), true,
                                                                &DType::Float32());
        gradient->write_slots(slots, values);
        out[0] = Tensor(gradient, source.offset(), source.layout());
        return out;
      }));
  return definition;
}

extension::CompositeProvider::Prepared prepare_gather(const operation::ResolvedInvocation& invocation) {
  const Tensor& source = std::get<Tensor>(invocation.operands()[0]);
  (void)tiled_of(source, TiledEvictable::gather_operation_name);  // TypeError for another carrier, before any work
  TileSelection selection = decode_selection(std::get<std::vector<std::int64_t>>(invocation.options().at("per_axis")),
                                             TiledEvictable::gather_operation_name);
  std::shared_ptr<Carrier> destination = destination_of(invocation.options().at("destination"));
  return extension::PreparedComposite([inv = &invocation, selection = std::move(selection),
                                       destination]() -> extension::ResultSubmission {
    const Tensor& src = std::get<Tensor>(inv->operands()[0]);
    const operation::ResultSpec& spec = inv->results()[0];
    Tensor result = project_streamed(src, selection, spec.dtype(), spec.layout());
    if (destination) {
      const NoGradGuard nothing_recorded;  // the gather is the call's one node
      result = move(result, destination);
    }
    return extension::ProviderResult({result});
  });
}

// ---------------------------------------------------------------- project()

AwaitProjection TiledEvictable::project(const Tensor& tensor, const TileSelection& selection,
                                        const std::shared_ptr<Carrier>& destination) {
  static constexpr const char* what = "TiledEvictable.project";
  if (tensor.carrier().get() != this)
    throw TypeError(fmt::format("{}: the Tensor is not on this TiledEvictable carrier", what));
  require_live(what);
  selection.check_against(grid_shape_, what);
  check_full_tensor(tensor, what);
  std::int64_t needed = 1;
  for (std::size_t i = 0; i < selection.rank(); ++i)
    needed *= static_cast<std::int64_t>(selection.per_axis()[i].size()) * tile_shape_[i];
  if (destination) {
    if (!(destination->exact_class() == primary_->exact_class()))
      throw TypeError(fmt::format("{}: the destination is a {}, not the compute carrier's {}", what,
                                  destination->class_name(), primary_->class_name()));
    destination->require_live(what);
    if (!destination->is_mutable()) throw RuntimeError(fmt::format("{}: the destination is not mutable", what));
    if (&destination->dtype() != &dtype())
      throw TypeError(fmt::format("{}: the destination has dtype {}, the source {}", what, destination->dtype().name(),
                                  dtype().name()));
    if (destination->size() < needed && !(destination->size() == 0 && destination->allocates_when_empty()))
      throw ValueError(fmt::format("{}: the destination holds {} slots, the projection needs {}", what,
                                   destination->size(), needed));
  }
  // B14: the policy's promotions join the transfers; its evictions wait
  // until the gather is done with the tiles.
  const ResidencyPlan plan = policy_plan(*this, selection.tile_set(), "projection");
  // The transfers start now; the gather runs at the first wait(), with the
  // grad mode of this call, and refuses a source written in between. Until
  // the handle completes (or is dropped) release() refuses (B15).
  // They promote what fits beside room for the gather's own stream (the
  // tile in use and prefetch_depth tiles ahead), which stages the rest.
  // A failed wait() undoes them (docs/tiled_evictable.md, "Failure").
  TileSet promoted;
  const AwaitResidency transfers = TiledEvictableAccess::prefetch(
      *this, tile_union(selection.tile_set(), plan.promote()), (prefetch_depth_ + 1) * tile_bytes(), &promoted);
  const std::shared_ptr<void> pending = hold_pending();
  const bool grad = is_grad_enabled();
  const std::uint64_t version = this->version();
  operation::OptionMap options{{"per_axis", encode_selection(selection)}};
  if (destination) options.emplace("destination", destination_option(destination));
  auto self = std::static_pointer_cast<TiledEvictable>(shared_from_this());
  return AwaitProjection(extension::ProviderCompletion<Tensor>::deferred(
      [self, transfers, pending, grad, version, tensor, evict = plan.evict(), promoted = std::move(promoted),
       options = std::move(options)]() -> Tensor {
        try {
          transfers.wait();
          if (self->version() != version)
            throw RuntimeError(fmt::format("{}: the source was written after project() and before wait()", what));
          Tensor result = [&] {
            const GradModeGuard mode(grad);
            return (*gather_definition())({tensor}, options).front();
          }();
          TiledEvictableAccess::evict_if_possible(*self, evict);
          return result;
        } catch (...) {
          TiledEvictableAccess::undo_promotions(*self, promoted);
          throw;
        }
      }));
}

}  // namespace strideweave
