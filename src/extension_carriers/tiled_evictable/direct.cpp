// TiledEvictable's six direct operations, streamed (carrier-composition B8;
// issue 22 step 3; docs/tiled_evictable.md, "Streaming"): the dense result
// is allocated once and filled block by block, each block inside one tile of
// every operand, each operand's tiles made available by a Stager within its
// instance's budget. Public headers only.
#include "extension_carriers/tiled_evictable/access.h"
#include "extension_carriers/tiled_evictable/stream.h"

#include <strideweave/autograd.h>
#include <strideweave/call.h>
#include <strideweave/errors.h>
#include <strideweave/int128.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace strideweave {

namespace {

using tiled::Stager;
using tiled::TiledOperand;
using tiled::TileRun;

// Equal plans, or mul's (weak, tensor) plan and the (tensor, weak) plan the
// primary's front end runs for it (the mirrored capability).
bool same_plan(const OperationPlan& ran, const OperationPlan& admitted) {
  if (ran == admitted) return true;
  const auto a = ran.operands(), b = admitted.operands();
  return admitted.operation() == "mul" && ran.operation() == "mul" && a.size() == 2 && b.size() == 2 &&
         a[0] == b[1] && a[1] == b[0] && ran.compute() == admitted.compute() &&
         ran.accumulation() == admitted.accumulation() && ran.accumulator_dtype() == admitted.accumulator_dtype() &&
         &ran.output() == &admitted.output();
}

// The primary's operation on one block; the plan it resolves must be the
// admitted one (the options carry the execution choices): never a nearby
// plan. Records nothing: the direct call is the one node.
Tensor call_block(const operation::ResolvedInvocation& inv, std::span<const CallOperand> operands) {
  const GradModeGuard no_nodes(false);
  CallResult result = call_operation(inv.operation(), operands, inv.options());
  if (result.plans.empty() || !same_plan(result.plans.front(), inv.plan()))
    throw RuntimeError(fmt::format("TiledEvictable: the primary resolved {} for the admitted plan {}",
                                   result.plans.empty() ? std::string("no plan") : result.plans.front().to_string(),
                                   inv.plan().to_string()));
  return std::move(result.results.front());
}

// The operands' instances, each once, with one Stager each built from the
// uses that `schedule` reports (instance index, tile) in acquire order.
struct Streams {
  std::vector<std::shared_ptr<TiledEvictable>> instances;
  std::vector<std::size_t> instance_of;  // per tiled operand
  std::vector<std::shared_ptr<void>> holds;
  std::vector<std::unique_ptr<Stager>> stagers;

  explicit Streams(const std::vector<TiledOperand>& operands) {
    for (const TiledOperand& op : operands) {
      auto it = std::find(instances.begin(), instances.end(), op.shared());
      instance_of.push_back(static_cast<std::size_t>(it - instances.begin()));
      if (it == instances.end()) instances.push_back(op.shared());
    }
  }
  void start(const std::vector<std::vector<std::int64_t>>& uses) {
    for (std::size_t i = 0; i < instances.size(); ++i) {
      TiledEvictableAccess::require_all_valid(*instances[i], "TiledEvictable");
      holds.push_back(TiledEvictableAccess::hold(*instances[i]));
      stagers.push_back(std::make_unique<Stager>(instances[i], uses[i]));
    }
  }
  Stager& of(std::size_t operand) { return *stagers[instance_of[operand]]; }
};

std::vector<std::int64_t> extents_of(const Shape& shape) {
  const auto e = shape.extents();
  return {e.begin(), e.end()};
}

void require_compact_result(const operation::ResolvedInvocation& inv) {
  const operation::ResultSpec& spec = inv.results()[0];
  if (!(spec.layout() == Layout::compact(Shape::of(extents_of(spec.shape())))))
    throw RuntimeError(fmt::format("TiledEvictable: {} promises the Layout {}, not the compact one the stream fills",
                                   inv.operation(), spec.layout().to_string()));
}

std::shared_ptr<Carrier> fresh_result(const TiledEvictable& any, const operation::ResultSpec& spec) {
  return any.primary()->allocate_like(std::max<std::int64_t>(spec.shape().size(), 0), true, &spec.dtype(), true);
}

// Calls f(lo, extent) for every block of the grid the per-axis cuts make,
// first axis fastest (or in `order`, the axes from fastest to slowest).
void for_each_block(const std::vector<std::vector<std::int64_t>>& cuts, const std::vector<std::size_t>& order,
                    const std::function<void(const std::vector<std::int64_t>&, const std::vector<std::int64_t>&)>& f) {
  const std::size_t rank = cuts.size();
  std::vector<std::size_t> k(rank, 0);
  std::vector<std::int64_t> lo(rank), extent(rank);
  for (;;) {
    for (std::size_t i = 0; i < rank; ++i) {
      lo[i] = cuts[i][k[i]];
      extent[i] = cuts[i][k[i] + 1] - cuts[i][k[i]];
    }
    f(lo, extent);
    std::size_t j = 0;
    for (; j < rank; ++j) {
      const std::size_t axis = order[j];
      if (++k[axis] + 1 < cuts[axis].size()) break;
      k[axis] = 0;
    }
    if (j == rank) return;
  }
}

std::vector<std::size_t> natural_order(std::size_t rank) {
  std::vector<std::size_t> order(rank);
  for (std::size_t i = 0; i < rank; ++i) order[i] = i;
  return order;
}

// The box of an operand of rank `rx` that a result block [lo, lo + extent)
// of rank r reads, under broadcasting (trailing axes aligned; an extent-1
// axis reads its one element).
void broadcast_box(const TiledOperand& x, const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent,
                   std::size_t first_result_axis, std::vector<std::int64_t>& xlo, std::vector<std::int64_t>& xext) {
  const std::size_t rx = x.rank();
  xlo.assign(rx, 0);
  xext.assign(rx, 1);
  for (std::size_t i = 0; i < rx; ++i) {
    const std::size_t j = first_result_axis + i;
    if (x.extent(i) == 1) continue;
    xlo[i] = lo[j];
    xext[i] = extent[j];
  }
}

// ---------------------------------------------------------------- elementwise

// add, elementwise_mul, mul and relu: every result element depends on one
// element of each operand, so any partition of the result is exact. Blocks
// never cross a tile of any operand (axis_cuts over every tiling), so each
// operand's piece is a view of one tile's run.
Tensor run_elementwise(const operation::ResolvedInvocation& inv) {
  require_compact_result(inv);
  const operation::ResultSpec& spec = inv.results()[0];
  const std::vector<std::int64_t> result_extents = extents_of(spec.shape());
  const std::size_t r = result_extents.size();
  std::vector<TiledOperand> operands;
  std::vector<std::size_t> position;  // operand index of each tiled operand
  for (std::size_t i = 0; i < inv.operands().size(); ++i)
    if (const Tensor* t = std::get_if<Tensor>(&inv.operands()[i])) {
      operands.emplace_back(*t);
      position.push_back(i);
    }
  std::vector<std::vector<std::int64_t>> cuts(r);
  for (std::size_t j = 0; j < r; ++j) {
    std::vector<std::int64_t> tilings;
    for (const TiledOperand& x : operands) {
      const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(j) - static_cast<std::ptrdiff_t>(r - x.rank());
      if (i >= 0 && x.extent(static_cast<std::size_t>(i)) == result_extents[j])
        tilings.push_back(x.tile_extent(static_cast<std::size_t>(i)));
    }
    cuts[j] = tiled::axis_cuts(result_extents[j], tilings);
  }
  const std::vector<std::size_t> order = natural_order(r);
  Streams streams(operands);
  std::vector<std::vector<std::int64_t>> uses(streams.instances.size());
  std::vector<std::int64_t> xlo, xext;
  for_each_block(cuts, order, [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) {
    for (std::size_t o = 0; o < operands.size(); ++o) {
      broadcast_box(operands[o], lo, extent, r - operands[o].rank(), xlo, xext);
      uses[streams.instance_of[o]].push_back(operands[o].tile_at(xlo));
    }
  });
  streams.start(uses);
  std::shared_ptr<Carrier> result = fresh_result(*streams.instances.front(), spec);
  std::vector<CallOperand> block;  // the tiled operands' places are filled block by block
  for (const operation::CallOperand& o : inv.operands()) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) block.emplace_back(*t);
    else block.emplace_back(std::get<WeakScalar>(o));
  }
  std::vector<std::int64_t> held;
  for_each_block(cuts, order, [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) {
    held.clear();
    for (std::size_t o = 0; o < operands.size(); ++o) {
      broadcast_box(operands[o], lo, extent, r - operands[o].rank(), xlo, xext);
      const TileRun run = streams.of(o).acquire();
      held.push_back(operands[o].tile_at(xlo));
      block[position[o]] = operands[o].view(run, xlo, xext);
    }
    const Tensor piece = call_block(inv, block);
    for (std::size_t o = 0; o < operands.size(); ++o) streams.of(o).release(held[o]);
    tiled::copy_into_box(piece, *result, result_extents, lo);
  });
  return Tensor(result, 0, spec.layout());
}

// ---------------------------------------------------------------- reduce_sum

// The reduced axes of a reduce_sum call, ascending (its "axes" option; None:
// every axis).
std::vector<bool> reduced_axes(const operation::ResolvedInvocation& inv, std::size_t rank) {
  std::vector<bool> reduced(rank, true);
  const auto it = inv.options().find("axes");
  if (it == inv.options().end()) return reduced;
  const auto* list = std::get_if<std::vector<std::int64_t>>(&it->second);
  if (!list) return reduced;
  reduced.assign(rank, false);
  for (std::int64_t a : *list) reduced[static_cast<std::size_t>(a < 0 ? a + static_cast<std::int64_t>(rank) : a)] = true;
  return reduced;
}

// Pairwise summation in Acc over values[first, first + n): error grows with
// log n, not n. The association is fixed by n alone.
template <class Acc>
Acc pairwise(const std::vector<Acc>& values, std::size_t first, std::size_t n) {
  if (n <= 8) {
    Acc s = Acc(0);
    for (std::size_t k = 0; k < n; ++k) s += values[first + k];
    return s;
  }
  const std::size_t half = n / 2;
  return pairwise(values, first, half) + pairwise(values, first + half, n - half);
}

// FLOATING accumulation combines in the plan's accumulator dtype (binary32
// or binary64), EXACT_INTEGER over exact integers with one checked
// narrowing (operation-dtype-policy R2). Each tile's partial sums come from
// its elements in within-tile logical order (pairwise when the tile reduces
// to one value), combined across tiles in ascending tile order: the answer
// depends on the geometry alone, never on residency, staging or the budget.
template <class Acc>
Tensor reduce_streamed(const operation::ResolvedInvocation& inv, const TiledOperand& x) {
  const operation::ResultSpec& spec = inv.results()[0];
  const std::size_t rank = x.rank();
  const std::vector<bool> reduced = reduced_axes(inv, rank);
  std::vector<std::int64_t> out_stride(rank, 0);
  std::int64_t out_count = 1;
  for (std::size_t i = 0; i < rank; ++i)
    if (!reduced[i]) {
      out_stride[i] = out_count;
      out_count *= x.extent(i);
    }
  if (out_count != spec.shape().size())
    throw RuntimeError(fmt::format("TiledEvictable: reduce_sum's result holds {} elements, the axes give {}",
                                   spec.shape().size(), out_count));
  const TiledEvictable& instance = x.instance();
  const std::vector<std::int64_t>& tile = instance.tile_shape();
  const std::vector<std::int64_t>& grid = instance.grid_shape();
  const std::int64_t tile_size = instance.tile_size(), tile_count = instance.tile_count();
  // Each tile's elements in within-tile logical order: their slots in the run.
  std::vector<std::int64_t> slot_of(static_cast<std::size_t>(tile_size)), local_out(static_cast<std::size_t>(tile_size));
  std::int64_t local_count = 1;
  std::vector<std::int64_t> local_stride(rank, 0);
  for (std::size_t i = 0; i < rank; ++i)
    if (!reduced[i]) {
      local_stride[i] = local_count;
      local_count *= tile[i];
    }
  std::vector<Acc> total(static_cast<std::size_t>(out_count), Acc(0));
  std::vector<Acc> partial(static_cast<std::size_t>(local_count));
  std::vector<Acc> flat;
  std::vector<std::int64_t> uses(static_cast<std::size_t>(tile_count));
  for (std::int64_t t = 0; t < tile_count; ++t) uses[static_cast<std::size_t>(t)] = t;
  std::vector<TiledOperand> one{x};
  Streams streams(one);
  streams.start({uses});
  std::vector<std::int64_t> origin(rank), c(rank);
  for (std::int64_t t = 0; t < tile_count; ++t) {
    std::int64_t rest = t, out_base = 0;
    for (std::size_t i = 0; i < rank; ++i) {
      origin[i] = (rest % grid[i]) * tile[i];
      rest /= grid[i];
      out_base += origin[i] * out_stride[i];
    }
    c = origin;
    for (std::int64_t k = 0; k < tile_size; ++k) {
      slot_of[static_cast<std::size_t>(k)] = x.slot_in_tile(c);
      std::int64_t local = 0;
      for (std::size_t i = 0; i < rank; ++i) local += (c[i] - origin[i]) * local_stride[i];
      local_out[static_cast<std::size_t>(k)] = local;
      for (std::size_t i = 0; i < rank; ++i) {
        if (++c[i] < origin[i] + tile[i]) break;
        c[i] = origin[i];
      }
    }
    const TileRun run = streams.of(0).acquire();
    std::vector<Value> values;
    try {
      values = run.storage->read_values(run.first, tile_size);
    } catch (...) {
      streams.of(0).release(t);
      throw;
    }
    streams.of(0).release(t);
    const auto term = [&](std::int64_t k) -> Acc {
      const Value& v = values[static_cast<std::size_t>(slot_of[static_cast<std::size_t>(k)])];
      if constexpr (std::is_same_v<Acc, int128>) return static_cast<int128>(v.i);
      else return static_cast<Acc>(v.f);
    };
    if (local_count == 1) {
      flat.resize(static_cast<std::size_t>(tile_size));
      for (std::int64_t k = 0; k < tile_size; ++k) flat[static_cast<std::size_t>(k)] = term(k);
      total[static_cast<std::size_t>(out_base)] += pairwise(flat, 0, flat.size());
      continue;
    }
    std::fill(partial.begin(), partial.end(), Acc(0));
    for (std::int64_t k = 0; k < tile_size; ++k) partial[static_cast<std::size_t>(local_out[static_cast<std::size_t>(k)])] += term(k);
    // local output l -> the global output out_base + sum over kept axes.
    for (std::int64_t l = 0; l < local_count; ++l) {
      std::int64_t rest2 = l, out = out_base;
      for (std::size_t i = 0; i < rank; ++i)
        if (!reduced[i]) {
          out += (rest2 % tile[i]) * out_stride[i];
          rest2 /= tile[i];
        }
      total[static_cast<std::size_t>(out)] += partial[static_cast<std::size_t>(l)];
    }
  }
  std::vector<Value> out(static_cast<std::size_t>(out_count));
  for (std::size_t k = 0; k < out.size(); ++k) {
    if constexpr (std::is_same_v<Acc, int128>) {
      if (total[k] < std::numeric_limits<std::int32_t>::min() || total[k] > std::numeric_limits<std::int32_t>::max())
        throw OverflowError("reduce_sum: the exact sum leaves Int32");
      out[k] = Value::from_int32(static_cast<std::int32_t>(total[k]));
    } else {
      out[k] = Value::from_float32(static_cast<float>(total[k]));
    }
  }
  return Tensor(instance.primary()->new_like(out, true, &spec.dtype()), 0, spec.layout());
}

Tensor run_reduce_sum(const operation::ResolvedInvocation& inv) {
  require_compact_result(inv);
  const TiledOperand x(std::get<Tensor>(inv.operands()[0]));
  const OperationPlan& plan = inv.plan();
  if (plan.accumulation() == Accumulation::EXACT_INTEGER) return reduce_streamed<int128>(inv, x);
  if (plan.accumulator_dtype() == &DType::Float64()) return reduce_streamed<double>(inv, x);
  return reduce_streamed<float>(inv, x);
}

// ---------------------------------------------------------------- matmul

// matmul's axes: the result's batch axes (broadcast between the operands'
// leading axes), then m (unless a is a vector), then n (unless b is one); k
// is contracted. With Float32 accumulation the contraction is cut at every
// tile edge of both operands and the partial products are summed in
// binary32, panel after panel (the plan lets the backend associate); with a
// Float64 accumulator or Int32 operands a block's product runs over the
// whole contraction at once (the operands' k-panels assembled), so the
// plan's accumulation is the primary's own.
Tensor run_matmul(const operation::ResolvedInvocation& inv) {
  require_compact_result(inv);
  const operation::ResultSpec& spec = inv.results()[0];
  const std::vector<std::int64_t> result_extents = extents_of(spec.shape());
  const std::size_t r = result_extents.size();
  const TiledOperand a(std::get<Tensor>(inv.operands()[0])), b(std::get<Tensor>(inv.operands()[1]));
  const std::size_t ra = a.rank(), rb = b.rank();
  const bool has_m = ra >= 2, has_n = rb >= 2;
  const std::size_t batch = r - (has_m ? 1 : 0) - (has_n ? 1 : 0);
  const std::size_t a_batch = has_m ? ra - 2 : 0, b_batch = has_n ? rb - 2 : 0;
  const std::size_t a_k = ra - 1, b_k = has_n ? rb - 2 : 0;
  const std::int64_t k_extent = a.extent(a_k);
  const OperationPlan& plan = inv.plan();
  const bool split_k = plan.accumulation() == Accumulation::FLOATING && plan.accumulator_dtype() == &DType::Float32();

  // Result-axis cuts: the tilings of the operand axes each result axis reads.
  std::vector<std::vector<std::int64_t>> cuts(r);
  for (std::size_t j = 0; j < r; ++j) {
    std::vector<std::int64_t> tilings;
    if (j < batch) {
      const std::ptrdiff_t ia = static_cast<std::ptrdiff_t>(j) - static_cast<std::ptrdiff_t>(batch - a_batch);
      const std::ptrdiff_t ib = static_cast<std::ptrdiff_t>(j) - static_cast<std::ptrdiff_t>(batch - b_batch);
      if (ia >= 0 && a.extent(static_cast<std::size_t>(ia)) == result_extents[j])
        tilings.push_back(a.tile_extent(static_cast<std::size_t>(ia)));
      if (ib >= 0 && b.extent(static_cast<std::size_t>(ib)) == result_extents[j])
        tilings.push_back(b.tile_extent(static_cast<std::size_t>(ib)));
    } else if (has_m && j == batch) {
      tilings.push_back(a.tile_extent(ra - 2));
    } else {
      tilings.push_back(b.tile_extent(rb - 1));
    }
    cuts[j] = tiled::axis_cuts(result_extents[j], tilings);
  }
  const std::vector<std::int64_t> k_cuts =
      split_k ? tiled::axis_cuts(k_extent, std::vector<std::int64_t>{a.tile_extent(a_k), b.tile_extent(b_k)})
              : std::vector<std::int64_t>{0, k_extent};
  // Block order: the operand whose k-panel is smaller is the one re-read
  // across the inner loop (so it is the one the stager keeps): m fastest
  // re-reads a's panel for every n block, n fastest b's.
  std::vector<std::size_t> order = natural_order(r);
  if (has_m && has_n) {
    const std::int64_t m = result_extents[batch], n = result_extents[batch + 1];
    if (n < m) std::swap(order[batch], order[batch + 1]);
  }

  // The boxes a (result block, k block) reads: a = (batch..., m, k), b =
  // (batch..., k, n) with the vector forms dropping m or n.
  const auto boxes = [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent, std::int64_t k0,
                         std::int64_t k1, std::vector<std::int64_t>& alo, std::vector<std::int64_t>& aext,
                         std::vector<std::int64_t>& blo, std::vector<std::int64_t>& bext) {
    alo.assign(ra, 0);
    aext.assign(ra, 1);
    blo.assign(rb, 0);
    bext.assign(rb, 1);
    for (std::size_t i = 0; i < a_batch; ++i) {
      const std::size_t j = batch - a_batch + i;
      if (a.extent(i) != 1) alo[i] = lo[j], aext[i] = extent[j];
    }
    for (std::size_t i = 0; i < b_batch; ++i) {
      const std::size_t j = batch - b_batch + i;
      if (b.extent(i) != 1) blo[i] = lo[j], bext[i] = extent[j];
    }
    if (has_m) alo[ra - 2] = lo[batch], aext[ra - 2] = extent[batch];
    if (has_n) blo[rb - 1] = lo[r - 1], bext[rb - 1] = extent[r - 1];
    alo[a_k] = k0, aext[a_k] = k1 - k0;
    blo[b_k] = k0, bext[b_k] = k1 - k0;
  };
  // The tiles a box spans along its k axis (one when split), in order.
  const auto k_tiles = [&](const TiledOperand& x, std::size_t k_axis, std::vector<std::int64_t> lo,
                           const std::vector<std::int64_t>& extent, std::vector<std::int64_t>& out) {
    const std::int64_t end = lo[k_axis] + extent[k_axis];
    for (std::int64_t k = lo[k_axis]; k < end; k = (k / x.tile_extent(k_axis) + 1) * x.tile_extent(k_axis)) {
      lo[k_axis] = k;
      out.push_back(x.tile_at(lo));
    }
  };

  std::vector<TiledOperand> both{a, b};
  Streams streams(both);
  std::vector<std::vector<std::int64_t>> uses(streams.instances.size());
  std::vector<std::int64_t> alo, aext, blo, bext;
  for (std::size_t p = 0; p + 1 < k_cuts.size(); ++p)
    for_each_block(cuts, order, [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) {
      boxes(lo, extent, k_cuts[p], k_cuts[p + 1], alo, aext, blo, bext);
      k_tiles(a, a_k, alo, aext, uses[streams.instance_of[0]]);
      k_tiles(b, b_k, blo, bext, uses[streams.instance_of[1]]);
    });
  streams.start(uses);
  std::shared_ptr<Carrier> result = fresh_result(*streams.instances.front(), spec);
  const std::vector<std::int64_t> result_strides = tiled::compact_strides_of(result_extents);

  // One operand's box as a dense Tensor: a view of its one tile, or (across
  // the contraction) a panel assembled tile by tile.
  const auto operand_box = [&](std::size_t which, const TiledOperand& x, std::size_t k_axis,
                               const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) -> Tensor {
    Stager& stager = streams.of(which);
    const std::int64_t end = lo[k_axis] + extent[k_axis];
    const std::int64_t te = x.tile_extent(k_axis);
    if (lo[k_axis] / te == (end - 1) / te) {  // one tile: a view (pinned until the block is done)
      const TileRun run = stager.acquire();
      Tensor view = x.view(run, lo, extent);
      return view;
    }
    std::int64_t count = 1;
    for (std::int64_t e : extent) count *= e;
    std::shared_ptr<Carrier> panel = x.instance().primary()->allocate_like(count, true, &x.instance().dtype(), true);
    std::vector<std::int64_t> plo = lo, pext = extent, at(extent.size(), 0);
    for (std::int64_t k = lo[k_axis]; k < end; k = (k / te + 1) * te) {
      plo[k_axis] = k;
      pext[k_axis] = std::min(end, (k / te + 1) * te) - k;
      at[k_axis] = k - lo[k_axis];
      const TileRun run = stager.acquire();
      const std::int64_t tile = x.tile_at(plo);
      try {
        tiled::copy_into_box(x.view(run, plo, pext), *panel, extent, at);
      } catch (...) {
        stager.release(tile);
        throw;
      }
      stager.release(tile);
    }
    return Tensor(panel, 0, Layout::compact(Shape::of(extent)));
  };

  for (std::size_t p = 0; p + 1 < k_cuts.size(); ++p)
    for_each_block(cuts, order, [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) {
      boxes(lo, extent, k_cuts[p], k_cuts[p + 1], alo, aext, blo, bext);
      const bool a_view = split_k || aext[a_k] <= a.tile_extent(a_k) - alo[a_k] % a.tile_extent(a_k);
      const bool b_view = split_k || bext[b_k] <= b.tile_extent(b_k) - blo[b_k] % b.tile_extent(b_k);
      std::vector<CallOperand> operands;
      operands.emplace_back(operand_box(0, a, a_k, alo, aext));
      std::int64_t a_tile = a.tile_at(alo);
      try {
        operands.emplace_back(operand_box(1, b, b_k, blo, bext));
      } catch (...) {
        if (a_view) streams.of(0).release(a_tile);
        throw;
      }
      const std::int64_t b_tile = b.tile_at(blo);
      std::optional<Tensor> piece;
      try {
        piece = call_block(inv, operands);
      } catch (...) {
        if (a_view) streams.of(0).release(a_tile);
        if (b_view) streams.of(1).release(b_tile);
        throw;
      }
      if (a_view) streams.of(0).release(a_tile);
      if (b_view) streams.of(1).release(b_tile);
      if (p > 0) {  // binary32: the result so far plus this panel's product
        std::int64_t first = 0;
        for (std::size_t j = 0; j < r; ++j) first += lo[j] * result_strides[j];
        const Tensor so_far(result, first, Layout(Shape::of(extent), Stride::of(result_strides)));
        const GradModeGuard no_nodes(false);
        piece = add(so_far, *piece);
      }
      tiled::copy_into_box(*piece, *result, result_extents, lo);
    });
  return Tensor(result, 0, spec.layout());
}

}  // namespace

Tensor run_direct_operation(const operation::ResolvedInvocation& inv) {
  const std::string& name = inv.operation();
  if (name == "reduce_sum") return run_reduce_sum(inv);
  if (name == "matmul") return run_matmul(inv);
  return run_elementwise(inv);
}

}  // namespace strideweave
