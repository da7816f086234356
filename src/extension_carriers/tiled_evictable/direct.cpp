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

using operation::ResolvedInvocation;
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

// The operands' instances, each once; start() gives each a Stager over its
// uses (its tiles, in acquire order) and holds it against release().
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

// The leaf strides of a flat Layout (one leaf per axis), or nullopt.
std::optional<std::vector<std::int64_t>> flat_strides(const Layout& layout) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < layout.rank(); ++i) {
    const IntTuple& e = layout.shape().mode(i);
    const IntTuple& st = layout.stride().mode(i);
    if (!e.is_leaf() || !st.is_leaf()) return std::nullopt;
    out.push_back(st.value());
  }
  return out;
}

// `t` with a flat Layout (a compact copy when it has none).
Tensor flat(const Tensor& t) {
  if (flat_strides(t.layout())) return t;
  return Tensor(t.carrier()->new_like(t.values()), 0, Layout::compact(Shape::of(t.shape().extents())));
}

// The box [lo, lo + extent) of a flat Tensor whose box starts at `origin`.
Tensor sub_box(const Tensor& t, std::span<const std::int64_t> origin, std::span<const std::int64_t> lo,
               std::span<const std::int64_t> extent) {
  const std::vector<std::int64_t> strides = *flat_strides(t.layout());
  std::int64_t first = t.offset();
  for (std::size_t i = 0; i < strides.size(); ++i) first += (lo[i] - origin[i]) * strides[i];
  return Tensor(t.carrier(), first, Layout(Shape::of(extent), Stride::of(strides)));
}

// A region of a flat dense Tensor (the published result, the cotangent, a
// compact buffer) that a block covers: its axes are the Tensor's.
Tensor result_region(const Tensor& t, std::span<const std::int64_t> lo, std::span<const std::int64_t> extent) {
  const std::vector<std::int64_t> zero(lo.size(), 0);
  return sub_box(t, zero, lo, extent);
}

// What the backward (below) does with a forward block instead of computing
// it: the block's operands (views of the tiles, pinned), the result box and
// each tiled operand's box.
struct BlockBoxes {
  std::vector<std::int64_t> lo, extent;                               // the result box
  std::vector<std::vector<std::int64_t>> operand_lo, operand_extent;  // per tiled operand
};
using BlockVisitor = std::function<void(std::span<const CallOperand> operands, const BlockBoxes& boxes)>;

// ---------------------------------------------------------------- elementwise

// add, elementwise_mul, mul and relu: every result element depends on one
// element of each operand, so any partition of the result is exact. Blocks
// never cross a tile of any operand (axis_cuts over every tiling), so each
// operand's piece is a view of one tile's run.
// With a visitor, each block goes to it instead (acquire = false: its
// boxes only, nothing read: the backward's counting pass).
std::optional<Tensor> run_elementwise(const operation::ResolvedInvocation& inv, const BlockVisitor* visit = nullptr,
                                      bool acquire = true) {
  if (!visit) require_compact_result(inv);
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
  if (acquire) streams.start(uses);
  std::shared_ptr<Carrier> result = visit ? nullptr : fresh_result(*streams.instances.front(), spec);
  BlockBoxes boxes;
  std::vector<CallOperand> block;  // the tiled operands' places are filled block by block
  for (const operation::CallOperand& o : inv.operands()) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) block.emplace_back(*t);
    else block.emplace_back(std::get<WeakScalar>(o));
  }
  std::vector<std::int64_t> held;
  for_each_block(cuts, order, [&](const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) {
    held.clear();
    boxes.operand_lo.clear();
    boxes.operand_extent.clear();
    const auto unpin = [&] {
      for (std::size_t o = 0; o < held.size(); ++o) streams.of(o).release(held[o]);
      held.clear();
    };
    if (!acquire) {
      for (std::size_t o = 0; o < operands.size(); ++o) {
        broadcast_box(operands[o], lo, extent, r - operands[o].rank(), xlo, xext);
        boxes.operand_lo.push_back(xlo);
        boxes.operand_extent.push_back(xext);
      }
      boxes.lo = lo;
      boxes.extent = extent;
      (*visit)({}, boxes);
      return;
    }
    try {
      for (std::size_t o = 0; o < operands.size(); ++o) {
        broadcast_box(operands[o], lo, extent, r - operands[o].rank(), xlo, xext);
        const TileRun run = streams.of(o).acquire();
        held.push_back(operands[o].tile_at(xlo));
        block[position[o]] = operands[o].view(run, xlo, xext);
        boxes.operand_lo.push_back(xlo);
        boxes.operand_extent.push_back(xext);
      }
      if (visit) {
        boxes.lo = lo;
        boxes.extent = extent;
        (*visit)(block, boxes);
        unpin();
        return;
      }
      const Tensor piece = call_block(inv, block);
      unpin();
      tiled::copy_into_box(piece, *result, result_extents, lo);
    } catch (...) {
      unpin();
      throw;
    }
  });
  if (visit) return std::nullopt;
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
template <class Acc, class Element>
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
  const std::int64_t tile_size = instance.tile_size(), tile_count = instance.tile_count();
  std::int64_t local_count = 1;
  std::vector<std::int64_t> local_stride(rank, 0);
  for (std::size_t i = 0; i < rank; ++i)
    if (!reduced[i]) {
      local_stride[i] = local_count;
      local_count *= tile[i];
    }
  // Tile t's elements in within-tile logical order: their slots in its run
  // (the same for every tile when the operand is affine: computed once) and
  // their outputs within the tile's block of outputs.
  std::vector<std::int64_t> slot_of(static_cast<std::size_t>(tile_size)), local_out(static_cast<std::size_t>(tile_size));
  const auto map_elements = [&](const std::vector<std::int64_t>& origin) {
    std::vector<std::int64_t> c = origin;
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
  };
  if (x.affine()) map_elements(x.tile_origin(0));
  std::vector<Acc> total(static_cast<std::size_t>(out_count), Acc(0));
  std::vector<Acc> partial(static_cast<std::size_t>(local_count));
  std::vector<Acc> flat;
  std::vector<Element> elements(static_cast<std::size_t>(tile_size));
  std::vector<std::int64_t> uses(static_cast<std::size_t>(tile_count));
  for (std::int64_t t = 0; t < tile_count; ++t) uses[static_cast<std::size_t>(t)] = t;
  std::vector<TiledOperand> one{x};
  Streams streams(one);
  streams.start({uses});
  for (std::int64_t t = 0; t < tile_count; ++t) {
    const std::vector<std::int64_t> origin = x.tile_origin(t);
    std::int64_t out_base = 0;
    for (std::size_t i = 0; i < rank; ++i) out_base += origin[i] * out_stride[i];
    if (!x.affine()) map_elements(origin);
    const TileRun run = streams.of(0).acquire();
    try {  // the tile's elements as bytes (the dtype's host representation)
      run.storage->read_bytes(run.first, std::as_writable_bytes(std::span<Element>(elements)));
    } catch (...) {
      streams.of(0).release(t);
      throw;
    }
    streams.of(0).release(t);
    const auto term = [&](std::int64_t k) -> Acc {
      return static_cast<Acc>(elements[static_cast<std::size_t>(slot_of[static_cast<std::size_t>(k)])]);
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
  const bool int32 = &x.instance().dtype() == &DType::Int32();
  if (plan.accumulation() == Accumulation::EXACT_INTEGER) {
    if (!int32) throw RuntimeError("TiledEvictable: reduce_sum's exact integer plan needs an Int32 operand");
    return reduce_streamed<int128, std::int32_t>(inv, x);
  }
  if (plan.accumulator_dtype() == &DType::Float64())
    return int32 ? reduce_streamed<double, std::int32_t>(inv, x) : reduce_streamed<double, float>(inv, x);
  return int32 ? reduce_streamed<float, std::int32_t>(inv, x) : reduce_streamed<float, float>(inv, x);
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
std::optional<Tensor> run_matmul(const operation::ResolvedInvocation& inv, const BlockVisitor* visit = nullptr,
                                 bool acquire = true) {
  if (!visit) require_compact_result(inv);
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
  if (acquire) streams.start(uses);
  std::shared_ptr<Carrier> result = visit ? nullptr : fresh_result(*streams.instances.front(), spec);

  // Whether a box lies in one tile along the contraction (always, when it
  // is cut at tile edges): its operand is then a pinned view.
  const auto in_one_tile = [](const TiledOperand& x, std::size_t k_axis, const std::vector<std::int64_t>& lo,
                              const std::vector<std::int64_t>& extent) {
    const std::int64_t te = x.tile_extent(k_axis);
    return lo[k_axis] / te == (lo[k_axis] + extent[k_axis] - 1) / te;
  };
  // One operand's box as a dense Tensor: a view of its one tile, or (across
  // the contraction) a panel assembled tile by tile.
  const auto operand_box = [&](std::size_t which, const TiledOperand& x, std::size_t k_axis,
                               const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent) -> Tensor {
    Stager& stager = streams.of(which);
    const std::int64_t end = lo[k_axis] + extent[k_axis];
    const std::int64_t te = x.tile_extent(k_axis);
    if (in_one_tile(x, k_axis, lo, extent)) {  // a view, pinned until the block is done
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
      if (!acquire) {
        (*visit)({}, BlockBoxes{lo, extent, {alo, blo}, {aext, bext}});
        return;
      }
      const bool a_view = in_one_tile(a, a_k, alo, aext);
      const bool b_view = in_one_tile(b, b_k, blo, bext);
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
        if (visit) {
          BlockBoxes block_boxes{lo, extent, {alo, blo}, {aext, bext}};
          (*visit)(operands, block_boxes);
        } else {
          piece = call_block(inv, operands);
        }
      } catch (...) {
        if (a_view) streams.of(0).release(a_tile);
        if (b_view) streams.of(1).release(b_tile);
        throw;
      }
      if (a_view) streams.of(0).release(a_tile);
      if (b_view) streams.of(1).release(b_tile);
      if (visit) return;
      if (p > 0) {  // binary32: the result so far plus this panel's product
        const Tensor so_far = result_region(Tensor(result, 0, spec.layout()), lo, extent);
        const GradModeGuard no_nodes(false);
        piece = add(so_far, *piece);
      }
      tiled::copy_into_box(*piece, *result, result_extents, lo);
    });
  if (visit) return std::nullopt;
  return Tensor(result, 0, spec.layout());
}

// ---------------------------------------------------------------- backward

// One tiled operand's gradient, built tile by tile: a fresh Float32
// TiledEvictable of the operand's geometry and tier classes (every tile an
// implicit zero until written), each tile accumulated in a compact primary
// buffer while contributions are due, then installed as the tile's (dirty)
// block and, beyond the budget, written back on the instance's worker while
// the backward goes on.
class GradientTiles {
 public:
  explicit GradientTiles(const TiledOperand& operand)
      : operand_(operand),
        gradient_(std::static_pointer_cast<TiledEvictable>(operand.instance().allocate_like(
            operand.instance().tile_size() * operand.instance().tile_count(), true, &DType::Float32()))) {}

  ~GradientTiles() {
    const std::int64_t held = static_cast<std::int64_t>(open_.size()) * gradient_->tile_bytes();
    if (held > 0) TiledEvictableAccess::note_staged(*gradient_, -held, 0);
  }

  Tensor tensor() const { return Tensor(gradient_, operand_.tensor().offset(), operand_.tensor().layout()); }

  // Calls f(tile, sub_lo, sub_extent) for each tile the box meets.
  template <class F>
  void for_each_tile(std::span<const std::int64_t> lo, std::span<const std::int64_t> extent, F&& f) const {
    const std::size_t rank = lo.size();
    std::vector<std::int64_t> first(rank), last(rank), k(rank), sub_lo(rank), sub_extent(rank);
    for (std::size_t i = 0; i < rank; ++i) {
      first[i] = lo[i] / operand_.tile_extent(i);
      last[i] = (lo[i] + extent[i] - 1) / operand_.tile_extent(i);
      k[i] = first[i];
    }
    for (;;) {
      for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t begin = std::max(lo[i], k[i] * operand_.tile_extent(i));
        const std::int64_t end = std::min(lo[i] + extent[i], (k[i] + 1) * operand_.tile_extent(i));
        sub_lo[i] = begin;
        sub_extent[i] = end - begin;
      }
      f(operand_.tile_at(sub_lo), sub_lo, sub_extent);
      std::size_t i = 0;
      for (; i < rank; ++i) {
        if (++k[i] <= last[i]) break;
        k[i] = first[i];
      }
      if (i == rank) return;
    }
  }

  void expect(std::span<const std::int64_t> lo, std::span<const std::int64_t> extent) {
    for_each_tile(lo, extent, [&](std::int64_t t, const auto&, const auto&) { ++remaining_[t]; });
  }

  // Adds the block gradient `g` (of the box [lo, lo + extent)) into the tiles.
  void add(const Tensor& g, std::span<const std::int64_t> lo, std::span<const std::int64_t> extent) {
    const Tensor block = flat(g);
    const std::vector<std::int64_t>& tile = operand_.instance().tile_shape();
    std::vector<std::int64_t> within(lo.size());
    for_each_tile(lo, extent, [&](std::int64_t t, const std::vector<std::int64_t>& sub_lo,
                                  const std::vector<std::int64_t>& sub_extent) {
      if (!open_.contains(t)) {
        std::shared_ptr<Carrier> fresh =
            gradient_->primary()->allocate_like(gradient_->tile_size(), true, &DType::Float32(), false);
        open_.emplace(t, std::move(fresh));
        TiledEvictableAccess::note_staged(*gradient_, gradient_->tile_bytes(), 0);
      }
      const std::shared_ptr<Carrier>& acc = open_.at(t);
      for (std::size_t i = 0; i < lo.size(); ++i) within[i] = sub_lo[i] % tile[i];
      const Tensor so_far = result_region(Tensor(acc, 0, Layout::compact(Shape::of(tile))), within, sub_extent);
      const GradModeGuard no_nodes(false);
      const Tensor sum = strideweave::add(so_far, sub_box(block, lo, sub_lo, sub_extent));
      tiled::copy_into_box(sum, *acc, tile, within);
      if (--remaining_[t] == 0) install(t);
    });
  }

  // Waits for the write-backs; any tile still open is installed first.
  Tensor finish() {
    while (!open_.empty()) install(open_.begin()->first);
    for (; waited_ < writebacks_.size(); ++waited_) settle(writebacks_[waited_]);
    return tensor();
  }

  // A write-back that failed changed nothing (evict is failure-atomic): the
  // tile stays primary and dirty, its value intact; the gradient stands.
  static void settle(const AwaitResidency& writeback) noexcept {
    try {
      writeback.wait();
    } catch (...) {
    }
  }

 private:
  void install(std::int64_t t) {
    auto it = open_.find(t);
    if (it == open_.end()) return;
    std::shared_ptr<Carrier> acc = it->second;  // stays open (counted) until installed
    // The gradient shares the operand's Layout: a within-tile permutation
    // puts the accumulated (compact) values in the operand's slot order.
    const TiledOperand& op = operand_;
    const std::vector<std::int64_t> origin = op.tile_origin(t);
    if (!op.within_is_compact()) {
      const std::vector<Value> compact = acc->read_values(0, gradient_->tile_size());
      std::vector<Value> slots(compact.size());
      std::vector<std::int64_t> c = origin;
      for (std::size_t k = 0; k < compact.size(); ++k) {
        slots[static_cast<std::size_t>(op.slot_in_tile(c))] = compact[k];
        for (std::size_t i = 0; i < c.size(); ++i) {
          if (++c[i] < origin[i] + op.tile_extent(i)) break;
          c[i] = origin[i];
        }
      }
      acc->write_values(0, slots);
    }
    open_.erase(it);
    TiledEvictableAccess::install_block(*gradient_, t, acc);
    if (gradient_->resident_bytes() > gradient_->residency_bytes()) {
      TileCoordinate coordinate = origin;
      for (std::size_t i = 0; i < coordinate.size(); ++i) coordinate[i] /= op.tile_extent(i);
      writebacks_.push_back(gradient_->evict_async(TileSet({coordinate})));
      // At most two write-backs in flight: the rest of the backward overlaps
      // them, and the tiles waiting for one stay a constant.
      while (writebacks_.size() - waited_ > 2) settle(writebacks_[waited_++]);
    }
  }
  TiledOperand operand_;
  std::shared_ptr<TiledEvictable> gradient_;
  std::map<std::int64_t, std::shared_ptr<Carrier>> open_;
  std::map<std::int64_t, std::int64_t> remaining_;
  std::vector<AwaitResidency> writebacks_;
  std::size_t waited_ = 0;  // writebacks_[0, waited_) are complete
};

// The definition's own VJP applied to one block: the block's call is bound
// and resolved afresh from its operands (views of the tiles), its output is
// the published result's region, its cotangent the cotangent's region.
std::vector<std::optional<Tensor>> block_vjp(const operation::VJPContext& context,
                                             std::span<const CallOperand> operands, const Tensor& output_region,
                                             const Tensor& cotangent_region) {
  const ResolvedInvocation& inv = context.invocation();
  const operation::OperationDefinition& definition = inv.definition();
  std::vector<operation::CallOperand> call_operands;
  std::vector<Tensor> saved;
  for (const CallOperand& o : operands) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) {
      call_operands.emplace_back(*t);
      saved.push_back(*t);
    } else {
      call_operands.emplace_back(std::get<WeakScalar>(o));
    }
  }
  const GradModeGuard no_nodes(false);
  const std::shared_ptr<const operation::BoundOperationCall> call =
      operation::bind(definition, std::move(call_operands), inv.options());
  auto block = std::make_shared<const ResolvedInvocation>(definition.resolve()(*call));
  std::vector<bool> needs(inv.operands().size());
  for (std::size_t i = 0; i < needs.size(); ++i) needs[i] = context.needs_grad(i);
  const operation::VJPContext block_context(block, {output_region}, std::move(saved), {}, {}, needs);
  const std::optional<Tensor> cotangent[] = {cotangent_region};
  return std::get<operation::VjpFn>(definition.vjp())(block_context, cotangent);
}

}  // namespace

std::vector<std::optional<Tensor>> run_direct_backward(const operation::VJPContext& context,
                                                       std::span<const std::optional<Tensor>> cotangents) {
  const ResolvedInvocation& inv = context.invocation();
  const operation::OperationDefinition& definition = inv.definition();
  const auto& vjp = std::get<operation::VjpFn>(definition.vjp());
  const std::string& name = inv.operation();
  if (name == TiledEvictable::gather_operation_name || name == TiledEvictable::scatter_operation_name)
    return vjp(context, cotangents);  // their own adjoints (projection.cpp, scatter.cpp)
  const std::span<const operation::OperandSpec> specs = definition.schema().operands();
  std::vector<std::size_t> differentiable;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].differentiable()) differentiable.push_back(i);
  std::vector<std::optional<Tensor>> out(differentiable.size());
  if (cotangents.empty() || !cotangents[0]) return out;
  const Tensor g = flat(*cotangents[0]);
  const Tensor published = flat(context.outputs()[0]);
  std::vector<std::size_t> position;  // schema index of each tiled operand
  std::vector<std::unique_ptr<GradientTiles>> gradients;  // per tiled operand (null: not wanted)
  std::vector<std::shared_ptr<TiledEvictable>> instances;
  for (std::size_t i = 0; i < inv.operands().size(); ++i)
    if (const Tensor* t = std::get_if<Tensor>(&inv.operands()[i])) {
      position.push_back(i);
      const TiledOperand operand(*t);
      if (std::find(instances.begin(), instances.end(), operand.shared()) == instances.end())
        instances.push_back(operand.shared());
      gradients.push_back(context.needs_grad(i) && specs[i].differentiable() ? std::make_unique<GradientTiles>(operand)
                                                                              : nullptr);
    }
  // B14: each instance's policy is asked once for the backward's tiles, as
  // for the forward: its promotions before the work, its evictions after.
  std::vector<std::pair<std::shared_ptr<TiledEvictable>, ResidencyPlan>> plans;
  for (const auto& instance : instances)
    if (instance->residency_policy()) plans.emplace_back(instance, policy_plan(*instance, instance->all_tiles(), "backward"));
  TiledEvictableAccess::PromotionsUndoneOnFailure promotions;  // a failed backward undoes them
  for (const auto& [instance, plan] : plans) promotions.prefetch(instance, plan.promote()).wait();
  const auto slot_of = [&](std::size_t schema_index) -> std::optional<std::size_t> {
    for (std::size_t d = 0; d < differentiable.size(); ++d)
      if (differentiable[d] == schema_index) return d;
    return std::nullopt;
  };
  const auto accumulate = [&](const std::vector<std::optional<Tensor>>& grads, const BlockBoxes& boxes) {
    for (std::size_t o = 0; o < position.size(); ++o) {
      if (!gradients[o]) continue;
      const std::optional<std::size_t> d = slot_of(position[o]);
      if (d && grads[*d]) gradients[o]->add(*grads[*d], boxes.operand_lo[o], boxes.operand_extent[o]);
    }
  };
  if (name == "reduce_sum") {
    // Per tile: the block is reduce_sum of the tile; its output and cotangent
    // are the result's region that tile reduces into.
    const TiledOperand x(std::get<Tensor>(inv.operands()[0]));
    const std::vector<bool> reduced = reduced_axes(inv, x.rank());
    const bool keepdims = published.layout().rank() == x.rank();
    const std::vector<std::int64_t>& tile = x.instance().tile_shape();
    std::vector<std::int64_t> uses(static_cast<std::size_t>(x.instance().tile_count()));
    for (std::size_t t = 0; t < uses.size(); ++t) uses[t] = static_cast<std::int64_t>(t);
    std::vector<TiledOperand> one{x};
    Streams streams(one);
    streams.start({uses});
    for (std::int64_t t = 0; t < x.instance().tile_count(); ++t) {
      const std::vector<std::int64_t> origin = x.tile_origin(t);
      std::vector<std::int64_t> out_lo, out_extent;
      for (std::size_t i = 0; i < x.rank(); ++i) {
        if (!reduced[i]) {
          out_lo.push_back(origin[i]);
          out_extent.push_back(tile[i]);
        } else if (keepdims) {
          out_lo.push_back(0);
          out_extent.push_back(1);
        }
      }
      if (gradients[0]) gradients[0]->expect(origin, tile);
      const TileRun run = streams.of(0).acquire();
      try {
        const CallOperand operand = x.view(run, origin, tile);
        const std::vector<std::optional<Tensor>> grads = block_vjp(
            context, std::span<const CallOperand>(&operand, 1), result_region(published, out_lo, out_extent),
            result_region(g, out_lo, out_extent));
        BlockBoxes boxes{out_lo, out_extent, {origin}, {tile}};
        accumulate(grads, boxes);
      } catch (...) {
        streams.of(0).release(t);
        throw;
      }
      streams.of(0).release(t);
    }
  } else {
    const BlockVisitor count = [&](std::span<const CallOperand>, const BlockBoxes& boxes) {
      for (std::size_t o = 0; o < position.size(); ++o)
        if (gradients[o]) gradients[o]->expect(boxes.operand_lo[o], boxes.operand_extent[o]);
    };
    const BlockVisitor run = [&](std::span<const CallOperand> operands, const BlockBoxes& boxes) {
      accumulate(block_vjp(context, operands, result_region(published, boxes.lo, boxes.extent),
                           result_region(g, boxes.lo, boxes.extent)),
                 boxes);
    };
    if (name == "matmul") {
      (void)run_matmul(inv, &count, false);
      (void)run_matmul(inv, &run);
    } else {
      (void)run_elementwise(inv, &count, false);
      (void)run_elementwise(inv, &run);
    }
  }
  for (std::size_t o = 0; o < position.size(); ++o) {
    if (!gradients[o]) continue;
    if (const std::optional<std::size_t> d = slot_of(position[o])) out[*d] = gradients[o]->finish();
  }
  promotions.dismiss();
  for (const auto& [instance, plan] : plans) TiledEvictableAccess::evict_if_possible(*instance, plan.evict());
  return out;
}

Tensor run_direct_operation(const operation::ResolvedInvocation& inv) {
  const std::string& name = inv.operation();
  if (name == "reduce_sum") return run_reduce_sum(inv);
  if (name == "matmul") return *run_matmul(inv);
  return *run_elementwise(inv);
}

}  // namespace strideweave
