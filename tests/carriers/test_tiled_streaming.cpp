// TiledEvictable's out-of-core engine (issue 22, step 3: "Out of core for
// real"; docs/tiled_evictable.md, "Streaming" and "The residency budget").
// Suite names give the requirement of the step, test names its scenario.
// Carrier-composition B8 (the six direct operations mean the full logical
// Tensor) is checked against the dense operation on many geometries.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <cstring>
#include <memory>
#include <random>
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

std::shared_ptr<Carrier> cpu(const std::vector<float>& v) { return CPU::from_values(values_of(v), DType::Float32()); }
std::shared_ptr<Carrier> file_backed() { return FileBacked::create(std::nullopt, DType::Float32()); }

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (std::int64_t x : v) n *= x;
  return n;
}

// A tiled tensor of small integers (exact in every association), every tile
// evicted to a FileBacked secondary: an out-of-core tensor.
struct Fixture {
  std::shared_ptr<TiledEvictable> carrier;
  Tensor full;
  Tensor dense;  // the same values, dense on CPU
};

Fixture out_of_core(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile, std::mt19937& rng,
                    std::int64_t budget = default_residency_bytes, bool integers = true) {
  std::vector<std::int64_t> logical;
  for (std::size_t i = 0; i < grid.size(); ++i) logical.push_back(grid[i] * tile[i]);
  std::vector<float> slots(static_cast<std::size_t>(product(logical)));
  std::uniform_int_distribution<int> small(-4, 4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : slots) v = integers ? static_cast<float>(small(rng)) : normal(rng);
  TiledEvictableOptions options;
  options.residency_bytes = budget;
  // Seeded from a full secondary: every tile clean and secondary-only.
  auto c = TiledEvictable::create(CPU::from_values({}, DType::Float32()), file_backed()->new_like(values_of(slots)),
                                  grid, tile, options);
  const Tensor dense(cpu(strideweave::testing::tiled_logical(slots, grid, tile)), 0, Layout::compact(Shape::of(logical)));
  return {c, c->full_tensor(), dense};
}

void expect_same(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.carrier()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.layout(), want.layout());
  EXPECT_EQ(floats(got), floats(want));
}

// ---------------------------------------------------------------- the budget

TEST(TiledOutOfCore_EachInstanceHasAResidencyBudget, AConstructorOptionWithADocumentedDefault) {
  auto a = TiledEvictable::create(cpu(std::vector<float>(16)), file_backed(), {2, 2}, {2, 2});
  EXPECT_EQ(a->residency_bytes(), default_residency_bytes);
  EXPECT_EQ(default_residency_bytes, std::int64_t{512} << 20);
  EXPECT_EQ(a->tile_bytes(), 16);
  TiledEvictableOptions options;
  options.residency_bytes = 40;
  auto b = TiledEvictable::create(cpu(std::vector<float>(16)), file_backed(), {2, 2}, {2, 2}, options);
  EXPECT_EQ(b->residency_bytes(), 40);
  const std::shared_ptr<Carrier> like = b->allocate_like(16);
  EXPECT_EQ(std::static_pointer_cast<TiledEvictable>(like)->residency_bytes(), 40);
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}}) {
    options.residency_bytes = bad;
    auto primary = cpu(std::vector<float>(16));
    EXPECT_THROW((void)TiledEvictable::create(primary, file_backed(), {2, 2}, {2, 2}, options), ValueError);
    EXPECT_FALSE(primary->is_owned());  // nothing claimed
  }
}

TEST(TiledOutOfCore_EachInstanceHasAResidencyBudget, ResidentBytesAndCountersFollowTransitions) {
  auto a = TiledEvictable::create(cpu(std::vector<float>(16, 1.0f)), file_backed(), {2, 2}, {2, 2});
  EXPECT_EQ(a->resident_bytes(), 64);  // the seed: four tiles of 16 bytes
  EXPECT_EQ(a->counters().peak_resident_bytes, 64);
  a->evict(a->all_tiles());  // four dirty tiles written
  EXPECT_EQ(a->resident_bytes(), 0);
  EXPECT_EQ(a->counters().bytes_written, 64);
  a->promote(TileSet({{0, 0}}));
  EXPECT_EQ(a->resident_bytes(), 16);
  EXPECT_EQ(a->counters().bytes_read, 16);
  a->evict(TileSet({{0, 0}}));  // clean: evicts for free
  EXPECT_EQ(a->counters().bytes_written, 64);
  EXPECT_EQ(a->resident_bytes(), 0);
}

TEST(TiledOutOfCore_EachInstanceHasAResidencyBudget, ProjectionPrefetchStaysWithinTheBudget) {
  std::mt19937 rng(7);
  Fixture f = out_of_core({4, 4}, {2, 2}, rng, /*budget=*/2 * 16);
  const Tensor compact = f.carrier->project(f.full, TileSelection({{0, 1, 2, 3}, {0, 1, 2, 3}})).wait();
  EXPECT_LE(f.carrier->primary_tiles().size(), 2u);  // best effort, within the budget
  EXPECT_EQ(floats(compact), floats(f.dense));
}

// ---------------------------------------------------------------- streaming

TEST(TiledOutOfCore_DirectOperationsStream, ElementwiseResultsEqualTheDenseOperationOnManyGeometries) {
  std::mt19937 rng(2026);
  const std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> geometries{
      {{3}, {5}}, {{2, 3}, {4, 2}}, {{1, 4}, {3, 1}}, {{2, 2, 2}, {2, 3, 1}}, {{5, 1}, {1, 7}}};
  for (const auto& [grid, tile] : geometries) {
    Fixture x = out_of_core(grid, tile, rng, /*budget=*/16);
    Fixture y = out_of_core(grid, tile, rng, /*budget=*/16);
    expect_same(add(x.full, y.full), add(x.dense, y.dense));
    expect_same(elementwise_mul(x.full, y.full), elementwise_mul(x.dense, y.dense));
    expect_same(mul(x.full, y.full), mul(x.dense, y.dense));
    expect_same(mul(x.full, WeakScalar(2.5)), mul(x.dense, WeakScalar(2.5)));
    expect_same(mul(WeakScalar(-3), y.full), mul(WeakScalar(-3), y.dense));
    expect_same(relu(x.full), relu(x.dense));
    expect_same(add(x.full, x.full), add(x.dense, x.dense));  // one instance twice
    EXPECT_TRUE(x.carrier->primary_tiles().empty());         // staging changes no tile's state
  }
}

TEST(TiledOutOfCore_DirectOperationsStream, OperandsOfDifferentTilingsAndBroadcasting) {
  std::mt19937 rng(11);
  Fixture x = out_of_core({2, 3}, {3, 2}, rng, 64);  // 6 x 6
  Fixture y = out_of_core({3, 2}, {2, 3}, rng, 64);  // 6 x 6, another tiling
  expect_same(add(x.full, y.full), add(x.dense, y.dense));
  Fixture row = out_of_core({1, 3}, {1, 2}, rng, 64);  // 1 x 6: broadcast down the rows
  expect_same(add(x.full, row.full), add(x.dense, row.dense));
  Fixture vec = out_of_core({2}, {3}, rng, 64);  // 6: trailing-axis broadcast
  expect_same(elementwise_mul(x.full, vec.full), elementwise_mul(x.dense, vec.dense));
}

TEST(TiledOutOfCore_DirectOperationsStream, ElementwiseReadsEachInputOnceWithinTheBudgetPlusAConstant) {
  std::mt19937 rng(3);
  const std::int64_t tile_bytes = 4 * 4 * 4;
  Fixture x = out_of_core({4, 4}, {4, 4}, rng, /*budget=*/2 * tile_bytes);  // 16 tiles, 8x the budget
  Fixture y = out_of_core({4, 4}, {4, 4}, rng, /*budget=*/2 * tile_bytes);
  const TiledEvictableCounters x0 = x.carrier->counters(), y0 = y.carrier->counters();
  expect_same(add(x.full, y.full), add(x.dense, y.dense));
  EXPECT_EQ(x.carrier->counters().bytes_read - x0.bytes_read, 16 * tile_bytes);  // each tile once
  EXPECT_EQ(y.carrier->counters().bytes_read - y0.bytes_read, 16 * tile_bytes);
  EXPECT_LE(x.carrier->counters().peak_resident_bytes, 2 * tile_bytes);
  EXPECT_EQ(x.carrier->resident_bytes(), 0);  // staged tiles are gone afterwards
}

TEST(TiledOutOfCore_DirectOperationsStream, ResidentTilesAreReadInPlace) {
  std::mt19937 rng(5);
  Fixture x = out_of_core({2, 2}, {2, 2}, rng);
  x.carrier->promote(TileSet({{0, 0}, {1, 1}}));
  const std::int64_t before = x.carrier->counters().bytes_read;
  expect_same(relu(x.full), relu(x.dense));
  EXPECT_EQ(x.carrier->counters().bytes_read - before, 2 * x.carrier->tile_bytes());  // the other two
  EXPECT_EQ(x.carrier->primary_tiles(), TileSet({{0, 0}, {1, 1}}));
}

TEST(TiledOutOfCore_DirectOperationsStream, ImplicitTilesReadZero) {
  std::mt19937 rng(5);
  Fixture x = out_of_core({2, 2}, {2, 2}, rng);
  const std::shared_ptr<Carrier> zeros = x.carrier->allocate_like(16);  // every tile implicit
  const Tensor z(zeros, 0, x.full.layout());
  const Tensor dense_zeros(cpu(std::vector<float>(16, 0.0f)), 0, Layout::compact(Shape::of({4, 4})));
  expect_same(add(x.full, z), add(x.dense, dense_zeros));
  expect_same(matmul(z, x.full), matmul(dense_zeros, x.dense));
}

// ---------------------------------------------------------------- reduce_sum

TEST(TiledOutOfCore_ReduceSumCombinesTilesInAFixedOrder, TheAnswerDependsOnNeitherResidencyNorBudget) {
  std::mt19937 rng(99);
  const std::vector<std::int64_t> grid{3, 4}, tile{8, 5};
  const std::vector<std::int64_t> budgets{16, 160, default_residency_bytes};
  std::vector<std::vector<float>> seen_all, seen_rows, seen_f64;
  for (std::int64_t budget : budgets) {
    std::mt19937 same(99);  // the same values each time
    Fixture x = out_of_core(grid, tile, same, budget, /*integers=*/false);
    if (budget == 160) x.carrier->promote(TileSet({{0, 0}, {2, 3}, {1, 2}}));
    seen_all.push_back(floats(reduce_sum(x.full)));
    seen_rows.push_back(floats(reduce_sum(x.full, Axes(1), true)));
    seen_f64.push_back(floats(reduce_sum(x.full, Axes::all(), false, operation_execution_options("reduce_sum", &DType::Float64()))));
    EXPECT_NEAR(seen_all.back()[0], floats(reduce_sum(x.dense))[0], 1e-4);
    const std::vector<float> dense_rows = floats(reduce_sum(x.dense, Axes(1), true));
    for (std::size_t i = 0; i < dense_rows.size(); ++i) EXPECT_NEAR(seen_rows.back()[i], dense_rows[i], 1e-4);
  }
  for (std::size_t k = 1; k < budgets.size(); ++k) {  // bit for bit
    EXPECT_EQ(std::memcmp(seen_all[k].data(), seen_all[0].data(), sizeof(float)), 0);
    EXPECT_EQ(seen_rows[k], seen_rows[0]);
    EXPECT_EQ(seen_f64[k], seen_f64[0]);
  }
}

TEST(TiledOutOfCore_ReduceSumCombinesTilesInAFixedOrder, Float64AccumulationCombinesInBinary64) {
  // 2^24 + 1 + ... + 1 (six ones), one element per tile: binary32 loses
  // every 1, binary64 keeps them (2^24 + 6 is a binary32 value).
  std::vector<float> slots{16777216.0f, 1, 1, 1, 1, 1, 1, 0};
  TiledEvictableOptions options;
  options.residency_bytes = 8;
  auto c = TiledEvictable::create(cpu(slots), file_backed(), {8}, {1}, options);
  c->evict(c->all_tiles());
  const Tensor wide = reduce_sum(c->full_tensor(), Axes::all(), false,
                                 operation_execution_options("reduce_sum", &DType::Float64()));
  EXPECT_EQ(floats(wide)[0], 16777222.0f);
  EXPECT_EQ(floats(reduce_sum(c->full_tensor()))[0], 16777216.0f);  // binary32: each + 1 rounds away
}

TEST(TiledOutOfCore_ReduceSumCombinesTilesInAFixedOrder, Int32IsExactWithOneCheckedNarrowing) {
  const std::int32_t big = 2'000'000'000;
  std::vector<Value> slots{Value::from_int32(big), Value::from_int32(big), Value::from_int32(-big),
                           Value::from_int32(-big + 5)};
  auto c = TiledEvictable::create(CPU::from_values(slots, DType::Int32()),
                                  FileBacked::create(std::nullopt, DType::Int32()), {2}, {2});
  c->evict(c->all_tiles());
  // Tile 0 alone (4e9) leaves Int32; the whole sum (5) does not.
  const Tensor s = reduce_sum(c->full_tensor());
  EXPECT_EQ(s.values()[0].i, 5);
  std::vector<Value> over{Value::from_int32(big), Value::from_int32(big)};
  auto d = TiledEvictable::create(CPU::from_values(over, DType::Int32()),
                                  FileBacked::create(std::nullopt, DType::Int32()), {2}, {1});
  EXPECT_THROW((void)reduce_sum(d->full_tensor()), OverflowError);
}

// ---------------------------------------------------------------- matmul

TEST(TiledOutOfCore_MatmulStreamsPanels, ResultsEqualTheDenseMatmulOnManyGeometries) {
  std::mt19937 rng(17);
  struct Case {
    std::vector<std::int64_t> ag, at, bg, bt;
  };
  const std::vector<Case> cases{
      {{2, 3}, {3, 2}, {3, 2}, {2, 4}},  // matching contraction tiles
      {{2, 2}, {3, 3}, {3, 1}, {2, 5}},  // mismatched contraction tiles (k = 6)
      {{1, 1}, {4, 4}, {1, 1}, {4, 4}},  // one tile each
      {{3}, {2}, {3, 2}, {2, 3}},        // a vector times a matrix
      {{2, 2}, {2, 3}, {2}, {3}},        // a matrix times a vector
  };
  for (const Case& c : cases) {
    Fixture a = out_of_core(c.ag, c.at, rng, 32);
    Fixture b = out_of_core(c.bg, c.bt, rng, 32);
    expect_same(matmul(a.full, b.full), matmul(a.dense, b.dense));
    const auto wide = operation_execution_options("matmul", &DType::Float64());
    expect_same(matmul(a.full, b.full, wide), matmul(a.dense, b.dense, wide));
  }
  Fixture batched_a = out_of_core({2, 2, 2}, {1, 2, 3}, rng, 32);  // 2 x 4 x 6
  Fixture batched_b = out_of_core({1, 3, 2}, {1, 2, 2}, rng, 32);  // 1 x 6 x 4, broadcast over the batch
  expect_same(matmul(batched_a.full, batched_b.full), matmul(batched_a.dense, batched_b.dense));
}

TEST(TiledOutOfCore_MatmulStreamsPanels, EachInputTileIsReadOnceWhenAPanelFits) {
  std::mt19937 rng(23);
  // a: 8 x 12 in 4x4 tiles (2 x 3), b: 12 x 16 in 4x4 tiles (3 x 4); a's
  // k-panel (2 tiles) fits the budget, so each tile is read exactly once.
  const std::int64_t tile_bytes = 64;
  Fixture a = out_of_core({2, 3}, {4, 4}, rng, 3 * tile_bytes);
  Fixture b = out_of_core({3, 4}, {4, 4}, rng, 3 * tile_bytes);
  const std::int64_t a0 = a.carrier->counters().bytes_read, b0 = b.carrier->counters().bytes_read;
  expect_same(matmul(a.full, b.full), matmul(a.dense, b.dense));
  EXPECT_EQ(a.carrier->counters().bytes_read - a0, 6 * tile_bytes);
  EXPECT_EQ(b.carrier->counters().bytes_read - b0, 12 * tile_bytes);
  EXPECT_LE(a.carrier->counters().peak_resident_bytes, 3 * tile_bytes);
  // A budget below one panel still gives the same result (reading more).
  Fixture small_a = out_of_core({2, 3}, {4, 4}, rng, 1);
  Fixture small_b = out_of_core({3, 4}, {4, 4}, rng, 1);
  expect_same(matmul(small_a.full, small_b.full), matmul(small_a.dense, small_b.dense));
}

TEST(TiledOutOfCore_MatmulStreamsPanels, Int32IsExactAcrossTheWholeContraction) {
  // Each k-tile's product leaves Int32; the whole contraction does not.
  const std::int32_t big = 2'000'000'000;
  auto ints = [](std::vector<std::int32_t> v) {
    std::vector<Value> out;
    for (std::int32_t x : v) out.push_back(Value::from_int32(x));
    return CPU::from_values(out, DType::Int32());
  };
  auto a = TiledEvictable::create(ints({big, big, -big, -big + 7}), FileBacked::create(std::nullopt, DType::Int32()),
                                  {1, 2}, {1, 2});  // 1 x 4
  auto b = TiledEvictable::create(ints({1, 1, 1, 1}), FileBacked::create(std::nullopt, DType::Int32()), {2, 1},
                                  {2, 1});  // 4 x 1
  a->evict(a->all_tiles());
  const Tensor p = matmul(a->full_tensor(), b->full_tensor());
  EXPECT_EQ(p.values()[0].i, 7);
}

}  // namespace

// ---------------------------------------------------------------- backward

namespace backward_support {

// d/d(operands) of sum(op(...) * w), on the tiled operands and on their
// dense twins: the same values.
void expect_same_gradients(const std::function<Tensor(const Tensor&, const Tensor&)>& op, Fixture& x, Fixture& y,
                           std::mt19937& rng) {
  const Tensor probe = op(x.dense, y.dense);
  std::vector<float> w(static_cast<std::size_t>(probe.size()));
  std::uniform_int_distribution<int> small(-3, 3);
  for (float& v : w) v = static_cast<float>(small(rng));
  const Tensor weights(cpu(w), 0, Layout::compact(Shape::of(probe.shape().extents())));
  reduce_sum(elementwise_mul(op(x.full, y.full), weights)).backward();
  reduce_sum(elementwise_mul(op(x.dense, y.dense), weights)).backward();
  for (Fixture* f : {&x, &y}) {
    ASSERT_TRUE(f->full.grad().has_value());
    const auto* g = dynamic_cast<const TiledEvictable*>(f->full.grad()->carrier().get());
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->grid_shape(), f->carrier->grid_shape());
    EXPECT_EQ(f->full.grad()->layout(), f->full.layout());
    ASSERT_TRUE(f->dense.grad().has_value());
    EXPECT_EQ(floats(*f->full.grad()), floats(*f->dense.grad()));
  }
}

}  // namespace backward_support

TEST(TiledOutOfCore_BackwardUsesTheSameMachinery, GradientsEqualTheDenseBackwardForTheSixOperations) {
  using backward_support::expect_same_gradients;
  std::mt19937 rng(31);
  const auto run = [&](const std::vector<std::int64_t>& xg, const std::vector<std::int64_t>& xt,
                       const std::vector<std::int64_t>& yg, const std::vector<std::int64_t>& yt,
                       const std::function<Tensor(const Tensor&, const Tensor&)>& op) {
    Fixture x = out_of_core(xg, xt, rng, 32);
    Fixture y = out_of_core(yg, yt, rng, 32);
    expect_same_gradients(op, x, y, rng);
  };
  const auto add_op = [](const Tensor& a, const Tensor& b) { return add(a, b); };
  const auto product = [](const Tensor& a, const Tensor& b) { return elementwise_mul(a, b); };
  const auto scaled = [](const Tensor& a, const Tensor& b) { return add(mul(a, WeakScalar(2.5)), relu(b)); };
  const auto summed = [](const Tensor& a, const Tensor& b) {
    return add(reduce_sum(a, Axes(0)), reduce_sum(b, Axes(0), true));
  };
  const auto product_matmul = [](const Tensor& a, const Tensor& b) { return matmul(a, b); };
  const auto wide_matmul = [](const Tensor& a, const Tensor& b) {
    return matmul(a, b, operation_execution_options("matmul", &DType::Float64()));
  };
  run({2, 3}, {3, 2}, {3, 2}, {2, 3}, add_op);       // 6 x 6, different tilings
  run({2, 3}, {3, 2}, {1, 3}, {1, 2}, product);      // broadcast rows
  run({2, 2}, {2, 2}, {2, 2}, {2, 2}, scaled);       // mul by a weak scalar, relu
  run({2, 3}, {3, 2}, {3, 3}, {2, 2}, summed);       // reduce_sum over axes
  run({2, 3}, {3, 2}, {3, 2}, {2, 4}, product_matmul);  // the contraction cut at tile edges
  run({2, 2}, {2, 3}, {3, 1}, {2, 5}, wide_matmul);     // whole-contraction panels
}

TEST(TiledOutOfCore_BackwardUsesTheSameMachinery, GradientTilesStreamToTheSecondaryWithinTheBudget) {
  std::mt19937 rng(37);
  const std::int64_t tile_bytes = 4 * 4 * 4;
  Fixture x = out_of_core({4, 4}, {4, 4}, rng, 2 * tile_bytes);  // 16 tiles, 8x the budget
  Fixture y = out_of_core({4, 4}, {4, 4}, rng, 2 * tile_bytes);
  reduce_sum(elementwise_mul(x.full, y.full)).backward();
  reduce_sum(elementwise_mul(x.dense, y.dense)).backward();
  ASSERT_TRUE(x.full.grad().has_value());
  auto g = std::static_pointer_cast<TiledEvictable>(x.full.grad()->carrier());
  EXPECT_EQ(g->residency_bytes(), 2 * tile_bytes);
  EXPECT_LE(g->counters().peak_resident_bytes, 2 * tile_bytes + 4 * tile_bytes);  // budget + constant
  EXPECT_GE(g->secondary_tiles().size(), 12u);  // written back as it went
  EXPECT_EQ(g->counters().bytes_written, static_cast<std::int64_t>(g->secondary_tiles().size()) * tile_bytes);
  EXPECT_LE(x.carrier->counters().peak_resident_bytes, 2 * tile_bytes + 2 * tile_bytes);
  EXPECT_EQ(floats(*x.full.grad()), floats(*x.dense.grad()));
}

TEST(TiledOutOfCore_EachInstanceHasAResidencyBudget, WriteBehindSavesWholeTileWritesOnly) {
  const std::int64_t tile_bytes = 16;
  TiledEvictableOptions options;
  options.residency_bytes = 2 * tile_bytes;
  auto prototype = TiledEvictable::create(cpu(std::vector<float>(64, 1.0f)), file_backed(), {4, 4}, {2, 2}, options);
  // A run-by-run fill (new_like): whole tiles beyond the budget go to the
  // secondary as they are written.
  std::vector<float> values(64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  auto filled = std::static_pointer_cast<TiledEvictable>(prototype->new_like(values_of(values)));
  EXPECT_LE(filled->counters().peak_resident_bytes, 3 * tile_bytes);
  EXPECT_GE(filled->secondary_tiles().size(), 13u);
  EXPECT_EQ(floats(Tensor(filled, 0, Layout::compact(Shape::of({64})))), values);
  // Element-by-element writes (a scatter) keep their blocks: B10's selected
  // tiles are valid and dirty.
  const Tensor compact(cpu(std::vector<float>(16, 2.0f)), 0, Layout::compact(Shape::of({4, 4})));
  const Tensor scattered =
      prototype->scatter(compact, prototype->full_tensor(), TileSelection({{0, 1}, {0, 1}})).wait();
  auto result = std::static_pointer_cast<TiledEvictable>(scattered.carrier());
  EXPECT_EQ(result->dirty_tiles(), TileSet({{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
}

TEST(TiledOutOfCore_DirectOperationsStream, StagedTilesAreDroppedAtTheirLastUse) {
  std::mt19937 rng(13);
  const std::int64_t tile_bytes = 4 * 4 * 4;
  Fixture x = out_of_core({4, 4}, {4, 4}, rng, /*budget=*/8 * tile_bytes);
  (void)reduce_sum(x.full);
  (void)relu(x.full);
  // Each tile is used once: the tile in use, the prefetch depth's tiles
  // ahead of it and one spare at most, however large the budget.
  EXPECT_LE(x.carrier->counters().peak_resident_bytes, (2 + default_prefetch_depth) * tile_bytes);
}
