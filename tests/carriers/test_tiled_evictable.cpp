// TiledEvictable (carrier-composition.md Part B; backend-capabilities,
// "TiledEvictable"; operation-semantics, "The direct tiled operation set";
// docs/tiled_evictable.md). Suite names give the requirement
// (CarrierComposition_B<n>_<requirement>), test names its scenario.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "support/logical_values.h"
#include "support/tile_geometry.h"

namespace {

using namespace strideweave;
using strideweave::testing::floats;

std::vector<Value> values_of(const std::vector<float>& v) {
  std::vector<Value> out;
  for (float x : v) out.push_back(Value::from_float32(x));
  return out;
}
std::shared_ptr<Carrier> cpu(const std::vector<float>& v, bool mutable_ = true) {
  return CPU::from_values(values_of(v), DType::Float32(), mutable_);
}
std::shared_ptr<Carrier> cpu_empty() { return CPU::from_values(std::vector<Value>{}, DType::Float32()); }
std::shared_ptr<Carrier> file_backed() { return FileBacked::create(std::nullopt, DType::Float32()); }
TileSet tiles(std::vector<TileCoordinate> c) { return TileSet(std::move(c)); }
TileSelection selection(std::vector<std::vector<std::int64_t>> per_axis) { return TileSelection(std::move(per_axis)); }
std::vector<float> iota(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}
// A 4x4 logical tensor in 2x2 tiles of 2x2, seeded from a full CPU primary
// holding slots 0..15 (tile-major).
std::shared_ptr<TiledEvictable> tiled_4x4(TiledEvictableOptions options = {}) {
  return TiledEvictable::create(cpu(iota(16)), file_backed(), {2, 2}, {2, 2}, std::move(options));
}
// The logical values of the full Tensor, first axis fastest, computed by the
// geometry's definition (slot = tile * tile_size + within-tile index).
std::vector<float> expected_logical(const std::vector<float>& slots, std::vector<std::int64_t> grid,
                                    std::vector<std::int64_t> tile) {
  return strideweave::testing::tiled_logical(slots, grid, tile);
}

Tensor dense_cpu(const std::vector<float>& logical_values, std::int64_t rows, std::int64_t cols) {
  return Tensor(cpu(logical_values), 0, Layout::compact(Shape::of({rows, cols})));
}

// A Float32 carrier whose reads wait at a gate the test opens (a residency
// request kept in flight), and whose writes fail while `failing` is set.
class Gated final : public Carrier {
 public:
  explicit Gated(std::int64_t n) : Carrier(DType::Float32(), true), values_(iota(static_cast<std::size_t>(n))) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  static inline std::mutex mutex;
  static inline std::condition_variable cv;
  static inline bool closed = false;
  static inline bool waiting = false;
  static inline std::atomic<bool> failing{false};
  static void close() {
    std::lock_guard lock(mutex);
    closed = true;
    waiting = false;
  }
  static void open() {
    {
      std::lock_guard lock(mutex);
      closed = false;
    }
    cv.notify_all();
  }
  static void await_waiter() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [] { return waiting; });
  }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override {
    std::unique_lock lock(mutex);
    if (closed) {
      waiting = true;
      cv.notify_all();
      cv.wait(lock, [] { return !closed; });
    }
    return Value::from_float32(values_[static_cast<std::size_t>(i)]);
  }
  void write_slot(std::int64_t i, const Value& v) override {
    if (failing) throw OSError("Gated: the write failed", EIO, "", std::nullopt);
    values_[static_cast<std::size_t>(i)] = v.f;
  }
  void release_storage() override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool, const SimpleDType&, bool) const override {
    return std::make_shared<Gated>(n);
  }

 private:
  std::vector<float> values_;
};

// A policy that records its calls and answers a fixed plan.
class Recording final : public ResidencyPolicy {
 public:
  explicit Recording(ResidencyPlan answer) : answer_(std::move(answer)) {}
  ResidencyPlan plan(const TileSet& required, std::string_view purpose) override {
    calls.emplace_back(required, std::string(purpose));
    if (throws) throw ValueError("Recording: refused");
    return answer_;
  }
  std::vector<std::pair<TileSet, std::string>> calls;
  bool throws = false;

 private:
  ResidencyPlan answer_;
};

// ---------------------------------------------------------------- B1

TEST(CarrierComposition_B1_TiledEvictableOwnsOneFlatLogicalExtent, ConstructAndExposeTheGeometry) {
  auto primary = cpu(iota(16));
  auto secondary = file_backed();
  auto t = TiledEvictable::create(primary, secondary, {2, 2}, {2, 2});
  EXPECT_EQ(t->class_name(), "TiledEvictable");
  EXPECT_TRUE(t->exact_class().traits().is_dependent);
  EXPECT_NE(extension::carrier_definition(t->exact_class()), nullptr);  // the one definition-backed shipped carrier
  EXPECT_EQ(t->grid_shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(t->tile_shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(t->logical_shape(), (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(t->size(), 16);
  EXPECT_EQ(t->primary(), primary);
  EXPECT_TRUE(primary->is_owned_by(*t));
  EXPECT_TRUE(secondary->is_owned_by(*t));
  const Tensor full = t->full_tensor();
  EXPECT_EQ(full.shape().extents()[0], 4);
  EXPECT_EQ(floats(full), expected_logical(iota(16), {2, 2}, {2, 2}));
}

TEST(CarrierComposition_B1_TiledEvictableOwnsOneFlatLogicalExtent, TheFullLayoutIsTheZippedTileAndGridProduct) {
  // Axis i = (tile_i, grid_i) : (T's stride, tile_size * G's stride).
  auto t = TiledEvictable::create(cpu(iota(24)), file_backed(), {3, 2}, {2, 2});
  EXPECT_EQ(t->full_layout(), Layout(Shape{IntTuple{2, 3}, IntTuple{2, 2}}, Stride{IntTuple{1, 4}, IntTuple{2, 12}}));
  auto one = TiledEvictable::create(cpu(iota(12)), file_backed(), {3}, {4});
  EXPECT_EQ(one->full_layout(), Layout(Shape{IntTuple{4, 3}}, Stride{IntTuple{1, 4}}));
  EXPECT_EQ(floats(one->full_tensor()), iota(12));
}

TEST(CarrierComposition_B1_TiledEvictableOwnsOneFlatLogicalExtent, ConstructionChecksInTheStatedOrder) {
  auto p = cpu(iota(16));
  auto s = file_backed();
  EXPECT_THROW(TiledEvictable::create(nullptr, s, {2, 2}, {2, 2}), TypeError);
  EXPECT_THROW(TiledEvictable::create(p, nullptr, {2, 2}, {2, 2}), TypeError);
  EXPECT_THROW(TiledEvictable::create(p, p, {2, 2}, {2, 2}), ValueError);
  auto released = cpu(iota(16));
  released->release();
  EXPECT_THROW(TiledEvictable::create(released, s, {2, 2}, {2, 2}), RuntimeError);
  auto owner = TiledEvictable::create(cpu(iota(4)), file_backed(), {1}, {4});
  EXPECT_THROW(TiledEvictable::create(owner->primary(), s, {1}, {4}), RuntimeError);
  EXPECT_THROW(TiledEvictable::create(CPU::from_values(std::vector<Value>{Value::from_int32(1)}, DType::Int32()), s, {1}, {1}),
               TypeError);
  EXPECT_THROW(TiledEvictable::create(p, s, {}, {}), ValueError);
  EXPECT_THROW(TiledEvictable::create(p, s, {2, 2}, {2}), ValueError);
  EXPECT_THROW(TiledEvictable::create(p, s, {2, 0}, {2, 2}), ValueError);
  EXPECT_THROW(TiledEvictable::create(p, s, {2, 2}, {2, 3}), ValueError);  // 24 slots, the primary holds 16
  EXPECT_THROW(TiledEvictable::create(p, cpu(iota(16), false), {2, 2}, {2, 2}), RuntimeError);
  // The order: a same-object pair is reported before a released tier.
  EXPECT_THROW(TiledEvictable::create(released, released, {2, 2}, {2, 2}), ValueError);
  // A failed check claims nothing.
  EXPECT_FALSE(p->is_owned());
  EXPECT_FALSE(s->is_owned());
}

TEST(CarrierComposition_B1_TiledEvictableOwnsOneFlatLogicalExtent, SeedFromThePrimaryElseTheSecondaryElseInvalid) {
  auto from_primary = TiledEvictable::create(cpu(iota(8)), cpu(std::vector<float>(8, 1.0f)), {2}, {4});
  EXPECT_EQ(from_primary->primary_tiles().size(), 2u);
  EXPECT_EQ(from_primary->dirty_tiles().size(), 2u);
  EXPECT_EQ(floats(from_primary->full_tensor()), iota(8));
  auto from_secondary = TiledEvictable::create(cpu_empty(), cpu(iota(8)), {2}, {4});
  EXPECT_EQ(from_secondary->secondary_tiles().size(), 2u);
  EXPECT_TRUE(from_secondary->dirty_tiles().empty());
  EXPECT_EQ(floats(from_secondary->full_tensor()), iota(8));
  auto none = TiledEvictable::create(cpu_empty(), file_backed(), {2}, {4});
  EXPECT_TRUE(none->valid_tiles().empty());
  EXPECT_EQ(none->tile_state(std::vector<std::int64_t>{1}).location, TileLocation::Invalid);
  EXPECT_THROW((void)none->get_value(0), RuntimeError);
}

TEST(CarrierComposition_B1_TiledEvictableOwnsOneFlatLogicalExtent, ResidencyNeverChangesShapeLayoutDtypeOrVersion) {
  auto t = tiled_4x4();
  const Tensor before = t->full_tensor();
  const std::uint64_t version = t->version();
  t->evict(t->all_tiles());
  t->promote(tiles({{1, 0}}));
  EXPECT_EQ(t->version(), version);
  EXPECT_EQ(t->size(), 16);
  EXPECT_EQ(&t->dtype(), &DType::Float32());
  EXPECT_EQ(t->full_tensor().layout(), before.layout());
  EXPECT_EQ(floats(t->full_tensor()), expected_logical(iota(16), {2, 2}, {2, 2}));
}

// ---------------------------------------------------------------- B2

TEST(CarrierComposition_B2_TensorLayoutCompatibilityPreservesExactTileFootprints, AcceptWithinTilePermutations) {
  auto t = tiled_4x4();
  EXPECT_NO_THROW(t->check_full_tensor(t->full_tensor(), "test"));
  // Each tile transposed in place: still exactly its own four slots.
  const Layout transposed(Shape{IntTuple{2, 2}, IntTuple{2, 2}}, Stride{IntTuple{2, 4}, IntTuple{1, 8}});
  EXPECT_NO_THROW(t->check_full_tensor(Tensor(t, 0, transposed), "test"));
  // A flat Layout with the same map as the nested one is a full Tensor too.
  auto one = TiledEvictable::create(cpu(iota(8)), file_backed(), {2}, {4});
  EXPECT_NO_THROW(one->check_full_tensor(Tensor(one, 0, Layout::compact(Shape::of({8}))), "test"));
  EXPECT_EQ(floats(relu(Tensor(one, 0, Layout::compact(Shape::of({8}))))), iota(8));
}

TEST(CarrierComposition_B2_TensorLayoutCompatibilityPreservesExactTileFootprints, RejectSpanningRepeatingOrShiftedFootprints) {
  auto t = tiled_4x4();
  // The plain compact 4x4 layout: tile (0,0) would cover slots 0, 1, 4, 5.
  EXPECT_THROW(t->check_full_tensor(Tensor(t, 0, Layout::compact(Shape::of({4, 4}))), "test"), ValueError);
  // Repeated slots (a broadcast).
  const Layout repeat(Shape{IntTuple{2, 2}, IntTuple{2, 2}}, Stride{IntTuple{0, 4}, IntTuple{2, 8}});
  EXPECT_THROW(t->check_full_tensor(Tensor(t, 0, repeat), "test"), ValueError);
  // Tiles swapped: tile (0,0)'s elements land on tile (1,0)'s slots.
  const Layout swapped(Shape{IntTuple{2, 2}, IntTuple{2, 2}}, Stride{IntTuple{1, 8}, IntTuple{2, 4}});
  EXPECT_THROW(t->check_full_tensor(Tensor(t, 0, swapped), "test"), ValueError);
  // Not the logical shape; another carrier.
  auto one = TiledEvictable::create(cpu(iota(8)), file_backed(), {2}, {4});
  EXPECT_THROW(one->check_full_tensor(Tensor(one, 0, Layout::compact(Shape::of({4}))), "test"), ValueError);
  EXPECT_THROW(one->check_full_tensor(Tensor(one, 4, Layout::compact(Shape::of({4, 2}))), "test"), ValueError);
  EXPECT_THROW(t->check_full_tensor(one->full_tensor(), "test"), TypeError);
  // A direct operation checks it before any work.
  EXPECT_THROW((void)relu(Tensor(t, 0, Layout::compact(Shape::of({4, 4})))), ValueError);
}

// ---------------------------------------------------------------- B3

TEST(CarrierComposition_B3_TileSelectionIsAnOrderedCartesianProduct, CoordinatesFirstAxisFastestInCallerOrder) {
  const TileSelection s({{7, 2}, {4, 9}});
  EXPECT_EQ(s.rank(), 2u);
  EXPECT_EQ(s.compact_grid_shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(s.coordinates(), (std::vector<TileCoordinate>{{7, 4}, {2, 4}, {7, 9}, {2, 9}}));
  EXPECT_EQ(s.tile_set().coordinates(), (std::vector<TileCoordinate>{{2, 4}, {7, 4}, {2, 9}, {7, 9}}));
}

TEST(CarrierComposition_B3_TileSelectionIsAnOrderedCartesianProduct, RejectEmptyDuplicateNegativeOrOutOfGrid) {
  EXPECT_THROW(selection({}), ValueError);
  EXPECT_THROW(selection({{1}, {}}), ValueError);
  EXPECT_THROW(selection({{1, 1}}), ValueError);
  EXPECT_THROW(selection({{-1}}), ValueError);
  const std::vector<std::int64_t> grid{2, 2};
  EXPECT_THROW(selection({{0}}).check_against(grid, "test"), ValueError);
  EXPECT_THROW(selection({{0}, {2}}).check_against(grid, "test"), ValueError);
  EXPECT_NO_THROW(selection({{1, 0}, {1}}).check_against(grid, "test"));
  auto t = tiled_4x4();
  EXPECT_THROW(t->evict(selection({{0}, {5}})), ValueError);
  EXPECT_EQ(t->primary_tiles().size(), 4u);
}

// ---------------------------------------------------------------- B6

TEST(CarrierComposition_B6_ResidencyStateIsIndependentOfSelectionShape, AnyResidentSubset) {
  auto t = tiled_4x4();
  t->evict(tiles({{0, 0}, {1, 1}}));  // a diagonal, not a product
  EXPECT_EQ(t->primary_tiles(), tiles({{1, 0}, {0, 1}}));
  EXPECT_EQ(t->secondary_tiles(), tiles({{0, 0}, {1, 1}}));
  EXPECT_EQ(t->tile_state(std::vector<std::int64_t>{0, 0}),
            (TileState{TileLocation::Secondary, true, false}));
  EXPECT_EQ(t->tile_state(std::vector<std::int64_t>{1, 0}), (TileState{TileLocation::Primary, true, true}));
  EXPECT_THROW((void)t->tile_state(std::vector<std::int64_t>{2, 0}), ValueError);
  EXPECT_EQ(floats(t->full_tensor()), expected_logical(iota(16), {2, 2}, {2, 2}));
}

TEST(CarrierComposition_B6_ResidencyStateIsIndependentOfSelectionShape, WritesFollowResidencyAndMakePrimaryTilesDirty) {
  auto t = tiled_4x4();
  t->evict(t->all_tiles());
  EXPECT_TRUE(t->dirty_tiles().empty());
  t->set_value(0, Value::from_float32(100));  // a secondary tile: written there, still clean
  EXPECT_TRUE(t->dirty_tiles().empty());
  t->promote(tiles({{1, 0}}));
  EXPECT_TRUE(t->dirty_tiles().empty());  // a promoted tile keeps its clean secondary copy
  t->set_value(4, Value::from_float32(200));  // tile (1,0)'s first slot
  EXPECT_EQ(t->dirty_tiles(), tiles({{1, 0}}));
  t->evict(t->all_tiles());
  EXPECT_EQ(t->get_value(0).f, 100.0f);
  EXPECT_EQ(t->get_value(4).f, 200.0f);
}

TEST(CarrierComposition_B6_ResidencyStateIsIndependentOfSelectionShape, NewLikeTakesTheRequestedDtype) {
  auto t = tiled_4x4();
  std::vector<Value> ints;
  for (int i = 0; i < 16; ++i) ints.push_back(Value::from_int32(i));
  auto like = std::static_pointer_cast<TiledEvictable>(t->new_like(ints, true, &DType::Int32()));
  EXPECT_EQ(&like->dtype(), &DType::Int32());
  EXPECT_EQ(like->get_value(7).i, 7);
}

TEST(CarrierComposition_B6_ResidencyStateIsIndependentOfSelectionShape, ImplicitTilesReadZeroAndMaterializeOnWrite) {
  auto t = tiled_4x4();
  auto like = std::static_pointer_cast<TiledEvictable>(t->allocate_like(16));
  EXPECT_EQ(like->implicit_tiles().size(), 4u);
  EXPECT_EQ(like->get_value(5).f, 0.0f);
  like->set_value(5, Value::from_float32(3));
  EXPECT_EQ(like->tile_state(std::vector<std::int64_t>{1, 0}), (TileState{TileLocation::Primary, true, true}));
  EXPECT_EQ(like->get_value(5).f, 3.0f);
  EXPECT_EQ(like->get_value(4).f, 0.0f);
  EXPECT_EQ(like->grid_shape(), t->grid_shape());
  EXPECT_EQ(like->primary()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(like->secondary()->exact_class(), carrier_class<FileBacked>());
}

// ---------------------------------------------------------------- B7, B13

TEST(CarrierComposition_B13_ResidencyTransitionsHaveAsynchronousAndBlockingForms, PromoteAndEvictAreIdempotent) {
  auto t = tiled_4x4();
  AwaitResidency handle = t->evict_async(selection({{0, 1}, {0}}));
  handle.wait();
  EXPECT_TRUE(handle.done());
  EXPECT_NO_THROW(handle.wait());  // idempotent
  EXPECT_EQ(t->secondary_tiles(), tiles({{0, 0}, {1, 0}}));
  t->evict(tiles({{0, 0}}));  // already evicted
  t->promote(tiles({{0, 0}}));
  t->promote(tiles({{0, 0}}));
  EXPECT_EQ(t->tile_state(std::vector<std::int64_t>{0, 0}), (TileState{TileLocation::Primary, true, false}));
  t->promote(TileSet());  // the empty set is valid
  EXPECT_EQ(floats(t->full_tensor()), expected_logical(iota(16), {2, 2}, {2, 2}));
}

TEST(CarrierComposition_B13_ResidencyTransitionsHaveAsynchronousAndBlockingForms, PromotingAnInvalidTileFailsAndChangesNothing) {
  auto t = TiledEvictable::create(cpu_empty(), file_backed(), {2}, {2});
  AwaitResidency h = t->promote_async(tiles({{0}}));
  EXPECT_THROW(h.wait(), RuntimeError);
  EXPECT_THROW(h.wait(), RuntimeError);  // every wait the same outcome
  EXPECT_TRUE(t->valid_tiles().empty());
  EXPECT_THROW(t->promote(tiles({{0, 0}})), ValueError);  // rank
}

TEST(CarrierComposition_B13_ResidencyTransitionsHaveAsynchronousAndBlockingForms, OverlappingAnIncompleteRequestIsARuntimeError) {
  auto secondary = std::make_shared<Gated>(8);
  auto t = TiledEvictable::create(cpu_empty(), secondary, {2}, {4});
  Gated::close();
  AwaitResidency pending = t->promote_async(tiles({{0}}));
  Gated::await_waiter();  // the request is reading the secondary now
  EXPECT_FALSE(pending.done());
  EXPECT_THROW(t->promote_async(tiles({{0}})), RuntimeError);
  EXPECT_THROW(t->evict_async(tiles({{0}})), RuntimeError);
  EXPECT_THROW((void)t->get_value(1), RuntimeError);
  EXPECT_THROW((void)relu(t->full_tensor()), RuntimeError);
  EXPECT_THROW(t->release(), RuntimeError);  // B15: nothing released
  EXPECT_FALSE(t->is_released());
  Gated::open();
  pending.wait();
  EXPECT_EQ(t->tile_state(std::vector<std::int64_t>{0}).location, TileLocation::Primary);
  EXPECT_NO_THROW(t->promote(tiles({{1}})));
}

TEST(CarrierComposition_B13_ResidencyTransitionsHaveAsynchronousAndBlockingForms, AFailedEvictionRestoresEveryTileAndCanBeRetried) {
  auto secondary = std::make_shared<Gated>(8);
  auto t = TiledEvictable::create(cpu(iota(8)), secondary, {2}, {4});
  Gated::failing = true;
  EXPECT_THROW(t->evict(t->all_tiles()), OSError);
  Gated::failing = false;
  EXPECT_EQ(t->primary_tiles().size(), 2u);
  EXPECT_EQ(t->dirty_tiles().size(), 2u);
  EXPECT_EQ(floats(t->full_tensor()), iota(8));
  t->evict(t->all_tiles());
  EXPECT_EQ(t->secondary_tiles().size(), 2u);
  EXPECT_EQ(floats(t->full_tensor()), iota(8));
}

TEST(CarrierComposition_B13_ResidencyTransitionsHaveAsynchronousAndBlockingForms, AnEmptySecondaryIsAllocatedAtTheFirstEviction) {
  auto secondary = file_backed();
  auto primary = cpu(iota(8));
  auto t = TiledEvictable::create(primary, secondary, {2}, {4});
  t->evict(tiles({{0}}));
  EXPECT_NE(t->secondary(), secondary);  // fresh storage of its class
  EXPECT_EQ(t->secondary()->exact_class(), carrier_class<FileBacked>());
  EXPECT_TRUE(secondary->is_released());
  EXPECT_FALSE(secondary->is_owned());
  EXPECT_FALSE(primary->is_released());  // tile 1 still lives in the seed primary
  t->evict(tiles({{1}}));
  EXPECT_TRUE(primary->is_released());  // no tile lives there any more
  EXPECT_EQ(floats(t->full_tensor()), iota(8));
}

// ---------------------------------------------------------------- B8

TEST(CarrierComposition_B8_ADirectTiledOperandMeansTheFullLogicalTensor, TheSixOperationsPublishDenseComputeResults) {
  auto a = tiled_4x4();
  std::vector<float> b_slots(16);
  for (std::size_t i = 0; i < 16; ++i) b_slots[i] = 0.5f * static_cast<float>(i) - 3.0f;
  auto b = TiledEvictable::create(cpu(b_slots), file_backed(), {2, 2}, {2, 2});
  a->evict(tiles({{0, 1}}));  // residency does not matter
  const Tensor x = a->full_tensor(), y = b->full_tensor();
  const Tensor dx = dense_cpu(expected_logical(iota(16), {2, 2}, {2, 2}), 4, 4);
  const Tensor dy = dense_cpu(expected_logical(b_slots, {2, 2}, {2, 2}), 4, 4);
  const auto same = [](const Tensor& got, const Tensor& want) {
    EXPECT_EQ(got.carrier()->exact_class(), carrier_class<CPU>());
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(floats(got), floats(want));
  };
  same(add(x, y), add(dx, dy));
  same(elementwise_mul(x, y), elementwise_mul(dx, dy));
  same(mul(x, y), mul(dx, dy));
  same(mul(x, WeakScalar(2.5)), mul(dx, WeakScalar(2.5)));
  same(mul(WeakScalar(-1.0), y), mul(WeakScalar(-1.0), dy));
  same(relu(y), relu(dy));
  same(reduce_sum(x), reduce_sum(dx));
  same(reduce_sum(y, Axes(1), true), reduce_sum(dy, Axes(1), true));
  same(matmul(x, y), matmul(dx, dy));
  EXPECT_EQ(a->secondary_tiles(), tiles({{0, 1}}));  // the operation changed no residency
}

TEST(CarrierComposition_B8_ADirectTiledOperandMeansTheFullLogicalTensor, AnyOtherNameIsUnsupported) {
  auto a = tiled_4x4();
  EXPECT_THROW((void)sub(a->full_tensor(), a->full_tensor()), UnsupportedOperationPlan);
  EXPECT_THROW((void)neg(a->full_tensor()), UnsupportedOperationPlan);
  for (const OperationCapability& c : a->operation_capabilities()) {
    const std::string& n = c.operation();
    EXPECT_TRUE(n == "add" || n == "elementwise_mul" || n == "mul" || n == "relu" || n == "reduce_sum" ||
                n == "matmul" || n == TiledEvictable::gather_operation_name ||
                n == TiledEvictable::scatter_operation_name)
        << n;
  }
  EXPECT_FALSE(a->operation_capabilities("matmul").empty());
}

TEST(CarrierComposition_B8_ADirectTiledOperandMeansTheFullLogicalTensor, TheCallIsTheOneNodeAndGradientsAreTiled) {
  auto a = tiled_4x4();
  const Tensor x = a->full_tensor();
  const Tensor y = mul(x, WeakScalar(3.0));
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "mul");
  reduce_sum(y).backward();
  ASSERT_TRUE(x.grad());
  const auto* g = dynamic_cast<const TiledEvictable*>(x.grad()->carrier().get());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->grid_shape(), a->grid_shape());
  EXPECT_EQ(g->secondary()->exact_class(), carrier_class<FileBacked>());
  EXPECT_EQ(floats(*x.grad()), std::vector<float>(16, 3.0f));
}

TEST(CarrierComposition_B8_ADirectTiledOperandMeansTheFullLogicalTensor, AGradientKeepsTheOperandsLayout) {
  // A gradient copied onto the operand's class keeps its Layout (its tile
  // footprints), element by element: d/dx sum(x * x) = 2x.
  auto a = tiled_4x4();
  const Tensor x = a->full_tensor();
  reduce_sum(elementwise_mul(x, x)).backward();
  ASSERT_TRUE(x.grad());
  EXPECT_EQ(x.grad()->layout(), x.layout());
  EXPECT_NO_THROW(std::static_pointer_cast<TiledEvictable>(x.grad()->carrier())->check_full_tensor(*x.grad(), "test"));
  std::vector<float> want = floats(x);
  for (float& v : want) v *= 2.0f;
  EXPECT_EQ(floats(*x.grad()), want);
}

TEST(CarrierComposition_B8_ADirectTiledOperandMeansTheFullLogicalTensor, AnInvalidTileFailsTheOperation) {
  auto t = TiledEvictable::create(cpu_empty(), file_backed(), {2}, {2});
  EXPECT_THROW((void)relu(t->full_tensor()), RuntimeError);
}

// ---------------------------------------------------------------- B4, B5, B9

// The projection a test expects: the full Tensor's logical values (dense,
// first axis fastest over the logical shape), tile by tile in selection order.
std::vector<float> expected_projection(const std::vector<float>& full, const std::vector<std::int64_t>& logical,
                                       const std::vector<std::int64_t>& tile, const TileSelection& s) {
  const std::size_t rank = logical.size();
  std::vector<std::int64_t> compact;
  std::int64_t n = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    compact.push_back(static_cast<std::int64_t>(s.per_axis()[i].size()) * tile[i]);
    n *= compact.back();
  }
  std::vector<float> out;
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t rest = k, key = 0, stride = 1;
    for (std::size_t i = 0; i < rank; ++i) {
      const std::int64_t y = rest % compact[i];
      rest /= compact[i];
      key += (s.per_axis()[i][static_cast<std::size_t>(y / tile[i])] * tile[i] + y % tile[i]) * stride;
      stride *= logical[i];
    }
    out.push_back(full[static_cast<std::size_t>(key)]);
  }
  return out;
}

TEST(CarrierComposition_B4_ProjectEagerlyReturnsACompletionHandle, ProjectACompactTensorOfTheComputeClass) {
  auto t = tiled_4x4();
  t->evict(t->all_tiles());
  const TileSelection s = selection({{1}, {0, 1}});
  AwaitProjection h = t->project(t->full_tensor(), s);
  const Tensor p = h.wait();
  EXPECT_TRUE(h.done());
  EXPECT_EQ(p.carrier()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(p.shape(), Shape::of({2, 4}));
  EXPECT_TRUE(p.layout().is_compact());
  EXPECT_EQ(floats(p), expected_projection(floats(t->full_tensor()), {4, 4}, {2, 2}, s));
  EXPECT_EQ(h.wait().carrier(), p.carrier());  // every wait the same Tensor
  EXPECT_EQ(t->primary_tiles(), tiles({{1, 0}, {1, 1}}));  // only the selected tiles moved
  EXPECT_EQ(t->secondary_tiles(), tiles({{0, 0}, {0, 1}}));
}

TEST(CarrierComposition_B4_ProjectEagerlyReturnsACompletionHandle, ChecksPrecedeWorkInTheStatedOrder) {
  auto t = tiled_4x4();
  auto other = tiled_4x4();
  const TileSelection s = selection({{0}, {0}});
  EXPECT_THROW((void)t->project(other->full_tensor(), s), TypeError);
  EXPECT_THROW((void)t->project(t->full_tensor(), selection({{0}})), ValueError);
  EXPECT_THROW((void)t->project(t->full_tensor(), selection({{2}, {0}})), ValueError);
  EXPECT_THROW((void)t->project(Tensor(t, 0, Layout::compact(Shape::of({4, 4}))), s), ValueError);
  EXPECT_THROW((void)t->project(t->full_tensor(), s, file_backed()), TypeError);
  auto released = cpu(iota(4));
  released->release();
  EXPECT_THROW((void)t->project(t->full_tensor(), s, released), RuntimeError);
  EXPECT_THROW((void)t->project(t->full_tensor(), s, cpu(iota(4), false)), RuntimeError);
  EXPECT_THROW((void)t->project(t->full_tensor(), s, CPU::from_values(std::vector<Value>(4, Value::from_int32(0)),
                                                                       DType::Int32())),
               TypeError);
  EXPECT_THROW((void)t->project(t->full_tensor(), s, cpu(iota(3))), ValueError);
  EXPECT_THROW((void)t->project(t->full_tensor(), s, cpu_empty()), ValueError);  // CPU cannot allocate when empty
  EXPECT_EQ(t->primary_tiles().size(), 4u);  // nothing moved
  auto destination = cpu(std::vector<float>(6, -1.0f));
  const Tensor p = t->project(t->full_tensor(), s, destination).wait();
  EXPECT_EQ(p.carrier(), destination);
  EXPECT_EQ(floats(p), expected_projection(floats(t->full_tensor()), {4, 4}, {2, 2}, s));
  EXPECT_EQ(destination->get_value(5).f, -1.0f);  // beyond the result: untouched
  t->release();
  EXPECT_THROW((void)t->project(Tensor(t, 0, t->full_layout()), s), RuntimeError);
}

TEST(CarrierComposition_B4_ProjectEagerlyReturnsACompletionHandle, ReturnsBeforeTheTransfersFinish) {
  auto secondary = std::make_shared<Gated>(8);
  auto t = TiledEvictable::create(cpu_empty(), secondary, {2}, {4});
  Gated::close();
  AwaitProjection h = t->project(t->full_tensor(), selection({{1}}));
  Gated::await_waiter();
  EXPECT_FALSE(h.done());
  Gated::open();
  EXPECT_EQ(floats(h.wait()), (std::vector<float>{4, 5, 6, 7}));
}

TEST(CarrierComposition_B4_ProjectEagerlyReturnsACompletionHandle, OverlappingProjectionsAndPrefetchNeverFailEachOther) {
  auto t = tiled_4x4();
  t->evict(t->all_tiles());
  const TileSelection s = selection({{0, 1}, {1}});
  AwaitProjection a = t->project(t->full_tensor(), s);
  AwaitProjection b = t->project(t->full_tensor(), s);  // its prefetch skips the tiles a's request holds
  EXPECT_EQ(floats(a.wait()), floats(b.wait()));
  // A tile that cannot be promoted (invalid) is left to the gather, which
  // reports it; a policy naming one does not fail the work (best effort).
  auto u = TiledEvictable::create(cpu(iota(8)), file_backed(), {2}, {4},
                                  {std::make_shared<Recording>(ResidencyPlan(tiles({{1}})))});
  const TileSelection first = selection({{0}});
  const Tensor r = u->scatter(u->project(u->full_tensor(), first).wait(), u->full_tensor(), first).wait();
  const auto out = std::dynamic_pointer_cast<TiledEvictable>(r.carrier());  // the policy came along
  EXPECT_EQ(out->tile_state(std::vector<std::int64_t>{1}).location, TileLocation::Invalid);
  EXPECT_EQ(floats(out->project(r, first).wait()), (std::vector<float>{0, 1, 2, 3}));
}

TEST(CarrierComposition_B4_ProjectEagerlyReturnsACompletionHandle, AWriteBeforeWaitFailsTheProjection) {
  auto t = tiled_4x4();
  AwaitProjection h = t->project(t->full_tensor(), selection({{0}, {0}}));
  t->set_value(15, Value::from_float32(1));
  EXPECT_THROW((void)h.wait(), RuntimeError);
}

TEST(CarrierComposition_B9_GatherPreservesPublicTileSelectionOrdering, CoordinatesOrderAndTheLayoutsWithinTilePlacement) {
  auto t = tiled_4x4();
  const TileSelection s = selection({{1, 0}, {1}});
  EXPECT_EQ(floats(t->project(t->full_tensor(), s).wait()),
            expected_projection(floats(t->full_tensor()), {4, 4}, {2, 2}, s));
  // Each tile transposed in place: the Layout fixes the within-tile placement.
  const Tensor transposed(t, 0, Layout(Shape{IntTuple{2, 2}, IntTuple{2, 2}}, Stride{IntTuple{2, 4}, IntTuple{1, 8}}));
  EXPECT_EQ(floats(t->project(transposed, s).wait()), expected_projection(floats(transposed), {4, 4}, {2, 2}, s));
  EXPECT_NE(floats(transposed), floats(t->full_tensor()));
}

TEST(CarrierComposition_B5_ProjectionIsAnAutogradVisibleGather, TheGatherNodeScattersIntoAFreshTiledGradient) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const Tensor p = t->project(x, selection({{1}, {0, 1}})).wait();
  ASSERT_TRUE(p.grad_fn());
  EXPECT_EQ(p.grad_fn()->name(), TiledEvictable::gather_operation_name);
  reduce_sum(mul(p, WeakScalar(2.0))).backward();
  ASSERT_TRUE(x.grad());
  const auto* g = dynamic_cast<const TiledEvictable*>(x.grad()->carrier().get());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(x.grad()->layout(), x.layout());
  EXPECT_EQ(g->implicit_tiles(), tiles({{0, 0}, {0, 1}}));  // untouched tiles: implicit zero
  std::vector<float> want(16, 0.0f);
  for (int k : {2, 3, 6, 7, 10, 11, 14, 15}) want[static_cast<std::size_t>(k)] = 2.0f;  // logical rows 2..3
  EXPECT_EQ(floats(*x.grad()), want);
}

TEST(CarrierComposition_B5_ProjectionIsAnAutogradVisibleGather, OverlappingProjectionsSum) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const Tensor a = t->project(x, selection({{0, 1}, {0}})).wait();
  const Tensor b = t->project(x, selection({{1}, {0, 1}})).wait();
  add(reduce_sum(a), reduce_sum(b)).backward();
  ASSERT_TRUE(x.grad());
  EXPECT_NE(dynamic_cast<const TiledEvictable*>(x.grad()->carrier().get()), nullptr);
  EXPECT_EQ(x.grad()->layout(), x.layout());
  // Logical (row, column), first axis fastest: tile (1,0) is in both.
  std::vector<float> want(16, 0.0f);
  for (std::int64_t r = 0; r < 4; ++r)
    for (std::int64_t c = 0; c < 4; ++c)
      want[static_cast<std::size_t>(r + 4 * c)] = static_cast<float>((c < 2 ? 1 : 0) + (r >= 2 ? 1 : 0));
  EXPECT_EQ(floats(*x.grad()), want);
}

TEST(CarrierComposition_B5_ProjectionIsAnAutogradVisibleGather, BackwardChecksSavedVersions) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const Tensor p = t->project(x, selection({{0}, {0}})).wait();
  t->set_value(0, Value::from_float32(9));
  EXPECT_THROW(reduce_sum(p).backward(), RuntimeError);
}

// ---------------------------------------------------------------- B10, B11

TEST(CarrierComposition_B10_ScatterIsTheAsynchronousProjectionCounterpart, ReplaceAndAddIntoAFreshInstance) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const TileSelection s = selection({{1}, {0, 1}});
  const Tensor compact = mul(t->project(x, s).wait(), WeakScalar(10.0));
  const std::uint64_t version = t->version();
  AwaitMove<Tensor> h = t->scatter(compact, x, s);
  EXPECT_FALSE(h.done());  // the scatter runs at the first wait
  const Tensor r = h.wait();
  EXPECT_TRUE(h.done());
  const auto out = std::dynamic_pointer_cast<TiledEvictable>(r.carrier());
  ASSERT_NE(out, nullptr);
  EXPECT_NE(out, t);
  EXPECT_EQ(r.layout(), x.layout());
  EXPECT_EQ(out->grid_shape(), t->grid_shape());
  EXPECT_EQ(out->secondary()->exact_class(), carrier_class<FileBacked>());
  EXPECT_EQ(out->valid_tiles(), s.tile_set());
  EXPECT_EQ(out->dirty_tiles(), s.tile_set());
  EXPECT_EQ(out->tile_state(std::vector<std::int64_t>{0, 0}).location, TileLocation::Invalid);
  EXPECT_EQ(out->version(), 1u);  // one commit
  EXPECT_EQ(floats(out->project(r, s).wait()), floats(compact));  // projecting returns compact
  EXPECT_EQ(t->version(), version);  // the inputs are untouched
  EXPECT_EQ(floats(x), expected_logical(iota(16), {2, 2}, {2, 2}));
  const Tensor added = t->scatter(compact, x, s, ScatterReduction::Add).wait();
  const auto a = std::dynamic_pointer_cast<TiledEvictable>(added.carrier());
  EXPECT_EQ(floats(a->project(added, s).wait()), floats(add(compact, t->project(x, s).wait())));
}

TEST(CarrierComposition_B10_ScatterIsTheAsynchronousProjectionCounterpart, ChecksPrecedeAnyChange) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const TileSelection s = selection({{0}, {0}});
  const Tensor compact = t->project(x, s).wait();
  EXPECT_THROW((void)t->scatter(Tensor(Generic::create(values_of(iota(4)), DType::Float32()), 0, compact.layout()), x, s),
               TypeError);
  EXPECT_THROW((void)t->scatter(compact, tiled_4x4()->full_tensor(), s), TypeError);
  EXPECT_THROW((void)t->scatter(Tensor(CPU::from_values(std::vector<Value>(4, Value::from_int32(0)), DType::Int32()), 0,
                                       compact.layout()),
                                x, s),
               TypeError);
  EXPECT_THROW((void)t->scatter(compact, x, selection({{0, 1}, {0}})), ValueError);  // shape
  EXPECT_THROW((void)t->scatter(compact, x, selection({{2}, {0}})), ValueError);     // range
  EXPECT_THROW((void)t->scatter(compact, Tensor(t, 0, Layout::compact(Shape::of({4, 4}))), s), ValueError);
  EXPECT_EQ(t->primary_tiles().size(), 4u);
}

TEST(CarrierComposition_B11_ScatterParticipatesInAutograd, AddGivesBothContributorsTheSelectedCotangent) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const TileSelection s = selection({{1}, {0, 1}});
  const Tensor compact = Tensor(cpu(std::vector<float>(8, 0.5f)), 0, Layout::compact(Shape::of({2, 4})));
  const Tensor r = t->scatter(compact, x, s, ScatterReduction::Add).wait();
  ASSERT_TRUE(r.grad_fn());
  EXPECT_EQ(r.grad_fn()->name(), TiledEvictable::scatter_operation_name);
  const auto out = std::dynamic_pointer_cast<TiledEvictable>(r.carrier());
  reduce_sum(mul(out->project(r, s).wait(), WeakScalar(3.0))).backward();
  ASSERT_TRUE(compact.grad());
  EXPECT_EQ(compact.grad()->carrier()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(floats(*compact.grad()), std::vector<float>(8, 3.0f));
  ASSERT_TRUE(x.grad());
  const auto* g = dynamic_cast<const TiledEvictable*>(x.grad()->carrier().get());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->implicit_tiles(), tiles({{0, 0}, {0, 1}}));
  std::vector<float> want(16, 0.0f);
  for (int k : {2, 3, 6, 7, 10, 11, 14, 15}) want[static_cast<std::size_t>(k)] = 3.0f;
  EXPECT_EQ(floats(*x.grad()), want);
}

TEST(CarrierComposition_B11_ScatterParticipatesInAutograd, ReplaceGivesTheTemplateNoGradient) {
  auto t = tiled_4x4();
  const Tensor x = t->full_tensor();
  const TileSelection s = selection({{0}, {1}});
  const Tensor compact = Tensor(cpu(std::vector<float>(4, 1.0f)), 0, Layout::compact(Shape::of({2, 2})));
  const Tensor r = t->scatter(compact, x, s).wait();
  const auto out = std::dynamic_pointer_cast<TiledEvictable>(r.carrier());
  reduce_sum(out->project(r, s).wait()).backward();
  ASSERT_TRUE(compact.grad());
  EXPECT_EQ(floats(*compact.grad()), std::vector<float>(4, 1.0f));
  EXPECT_FALSE(x.grad());
}

// ---------------------------------------------------------------- B12

TEST(CarrierComposition_B12_ResidencyRequestsUseArbitraryImmutableTileSets, TileSetsSortAndValidate) {
  const TileSet s({{1, 0}, {0, 1}, {0, 0}});
  EXPECT_EQ(s.coordinates(), (std::vector<TileCoordinate>{{0, 0}, {1, 0}, {0, 1}}));
  EXPECT_EQ(s.rank(), 2u);
  EXPECT_FALSE(TileSet().rank().has_value());
  EXPECT_THROW(tiles({{0}, {0, 1}}), ValueError);
  EXPECT_THROW(tiles({{-1}}), ValueError);
  EXPECT_THROW(tiles({{2}, {2}}), ValueError);
  const std::vector<std::int64_t> grid{2, 2};
  EXPECT_THROW(tiles({{0}}).check_against(grid, "test"), ValueError);
}

TEST(CarrierComposition_B12_ResidencyRequestsUseArbitraryImmutableTileSets, ResidencyPlansHoldDisjointSets) {
  const ResidencyPlan empty;
  EXPECT_TRUE(empty.promote().empty() && empty.retain().empty() && empty.evict().empty());
  EXPECT_THROW(ResidencyPlan(tiles({{0}}), TileSet(), tiles({{0}})), ValueError);
  EXPECT_THROW(ResidencyPlan(tiles({{0}}), tiles({{0, 1}})), ValueError);
  EXPECT_NO_THROW(ResidencyPlan(tiles({{0}}), tiles({{1}}), tiles({{2}})));
}

// ---------------------------------------------------------------- B14


TEST(CarrierComposition_B14_ResidencyPolicyCanOptimizeButCannotDefineCorrectness, ThePolicyIsAskedAndItsPlanApplied) {
  auto policy = std::make_shared<Recording>(ResidencyPlan(tiles({{0, 0}}), TileSet(), tiles({{1, 1}})));
  auto t = tiled_4x4({policy});
  t->evict(t->all_tiles());
  const Tensor r = reduce_sum(t->full_tensor());
  EXPECT_EQ(floats(r), (std::vector<float>{120.0f}));
  ASSERT_EQ(policy->calls.size(), 1u);
  EXPECT_EQ(policy->calls[0].first, t->all_tiles());
  EXPECT_EQ(policy->calls[0].second, "operation");
  EXPECT_EQ(t->primary_tiles(), tiles({{0, 0}}));  // promoted before, (1,1) evicted after
}

TEST(CarrierComposition_B14_ResidencyPolicyCanOptimizeButCannotDefineCorrectness, EveryPurposeIsAsked) {
  auto policy = std::make_shared<Recording>(ResidencyPlan(TileSet(), TileSet(), tiles({{1, 1}})));
  auto t = tiled_4x4({policy});
  const Tensor x = t->full_tensor();
  const TileSelection s = selection({{0}, {0}});
  const Tensor p = t->project(x, s).wait();
  EXPECT_EQ(t->tile_state(std::vector<std::int64_t>{1, 1}).location, TileLocation::Secondary);  // evicted after
  const Tensor r = t->scatter(p, x, s, ScatterReduction::Add).wait();
  reduce_sum(p).backward();
  std::vector<std::string> purposes;
  for (const auto& [required, purpose] : policy->calls) purposes.push_back(purpose);
  EXPECT_EQ(purposes, (std::vector<std::string>{"projection", "scatter", "backward"}));
  EXPECT_EQ(policy->calls[0].first, s.tile_set());
  EXPECT_EQ(floats(std::static_pointer_cast<TiledEvictable>(r.carrier())->project(r, s).wait()),
            floats(mul(p, WeakScalar(2.0))));
}

TEST(CarrierComposition_B14_ResidencyPolicyCanOptimizeButCannotDefineCorrectness, ABadPlanOrAnExceptionStopsBeforeWork) {
  auto outside = std::make_shared<Recording>(ResidencyPlan(tiles({{5, 0}})));
  auto t = tiled_4x4({outside});
  EXPECT_THROW((void)relu(t->full_tensor()), ValueError);
  EXPECT_EQ(t->primary_tiles().size(), 4u);
  auto refusing = std::make_shared<Recording>(ResidencyPlan());
  refusing->throws = true;
  auto u = tiled_4x4({refusing});
  EXPECT_THROW((void)relu(u->full_tensor()), ValueError);
  // Without a policy every result is the same.
  EXPECT_EQ(floats(relu(tiled_4x4()->full_tensor())), floats(relu(tiled_4x4({std::make_shared<Recording>(
                                                              ResidencyPlan(TileSet(), TileSet(), t->all_tiles()))})
                                                                             ->full_tensor())));
}

// ---------------------------------------------------------------- B15

TEST(CarrierComposition_B15_TiledReleaseEndsAllOwnedResidency, ReleaseFreesTiersAndRefusesLaterWork) {
  auto primary = cpu(iota(16));
  auto secondary = file_backed();
  auto t = TiledEvictable::create(primary, secondary, {2, 2}, {2, 2});
  t->evict(tiles({{0, 0}}));
  const std::shared_ptr<Carrier> current_secondary = t->secondary();
  t->release();
  EXPECT_TRUE(t->is_released());
  EXPECT_EQ(t->size(), 0);
  EXPECT_TRUE(primary->is_released());
  EXPECT_TRUE(current_secondary->is_released());
  EXPECT_FALSE(primary->is_owned());
  EXPECT_NO_THROW(t->release());  // idempotent
  EXPECT_THROW(t->promote(tiles({{0, 0}})), RuntimeError);
  EXPECT_THROW(t->evict(tiles({{0, 0}})), RuntimeError);
  EXPECT_THROW((void)t->get_value(0), RuntimeError);
  EXPECT_THROW((void)relu(Tensor(t, 0, t->full_layout())), RuntimeError);
}

TEST(CarrierComposition_B15_TiledReleaseEndsAllOwnedResidency, AnUnfinishedProjectionOrScatterBlocksRelease) {
  auto t = tiled_4x4();
  const TileSelection s = selection({{0}, {0}});
  {
    AwaitProjection h = t->project(t->full_tensor(), s);
    EXPECT_THROW(t->release(), RuntimeError);
    EXPECT_FALSE(t->is_released());
    const Tensor p = h.wait();
    AwaitMove<Tensor> m = t->scatter(p, t->full_tensor(), s);
    EXPECT_THROW(t->release(), RuntimeError);
    (void)m.wait();
  }
  {
    AwaitProjection dropped = t->project(t->full_tensor(), s);  // dropping a handle ends its hold
  }
  EXPECT_NO_THROW(t->release());
  EXPECT_TRUE(t->is_released());
}

TEST(CarrierComposition_B15_TiledReleaseEndsAllOwnedResidency, DestroyingWithoutReleaseGivesTheTiersBack) {
  auto primary = cpu(iota(16));
  auto secondary = file_backed();
  {
    auto t = TiledEvictable::create(primary, secondary, {2, 2}, {2, 2});
    (void)t->evict_async(tiles({{1, 1}}));  // a dropped handle neither cancels nor blocks
  }
  EXPECT_FALSE(primary->is_owned());
  EXPECT_FALSE(primary->is_released());
}

// ---------------------------------------------------------------- threads

TEST(CarrierComposition_TiledThreads, RequestsReadsAndOperationsRaceSafely) {
  auto t = TiledEvictable::create(cpu(iota(64)), file_backed(), {4, 4}, {2, 2});
  const std::vector<float> expected = expected_logical(iota(64), {4, 4}, {2, 2});
  std::atomic<int> mismatches{0};
  std::thread mover([&] {
    for (int i = 0; i < 200; ++i) {
      const std::int64_t g = i % 4;
      try {
        t->evict(tiles({{g, (g + 1) % 4}, {(g + 2) % 4, g}}));
        t->promote(tiles({{g, (g + 1) % 4}}));
      } catch (const RuntimeError&) {  // overlapped running work: refused at once
      }
    }
  });
  for (int i = 0; i < 200; ++i) {
    try {
      if (floats(relu(t->full_tensor())) != expected) ++mismatches;
      if (t->get_value(17).f != 17.0f) ++mismatches;
    } catch (const RuntimeError&) {
    }
  }
  mover.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(floats(t->full_tensor()), expected);
}

TEST(CarrierComposition_TiledThreads, WritesRacingTransitionsAreNeverLost) {
  // A write pins its tile in the same locked step as its checks, so an
  // evict or promote either refuses it or waits for nothing: no write lands
  // in a block a transition has already copied and drops.
  auto t = TiledEvictable::create(cpu(iota(64)), file_backed(), {4, 4}, {2, 2});
  std::atomic<bool> done{false};
  std::thread mover([&] {
    for (int i = 0; !done.load(); ++i) {
      try {
        t->evict(t->all_tiles());
        t->promote(t->all_tiles());
      } catch (const RuntimeError&) {
      }
    }
  });
  for (std::int64_t k = 0; k < 64; ++k) {
    for (;;) {
      try {
        t->set_value(k, Value::from_float32(1000.0f + static_cast<float>(k)));
        break;
      } catch (const RuntimeError&) {  // the tile was in a request: try again
      }
    }
  }
  done = true;
  mover.join();
  for (std::int64_t k = 0; k < 64; ++k) EXPECT_EQ(t->get_value(k).f, 1000.0f + static_cast<float>(k)) << k;
}

}  // namespace
