// TiledEvictable's prefetcher (issue 22, step 4: "Prefetch from the known
// schedule"; docs/tiled_evictable.md, "Prefetch"). Suite names give the
// requirement, test names the scenario. Results never depend on the depth;
// the counters say what the prefetcher did.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "support/logical_values.h"
#include "support/tile_geometry.h"

namespace {

using namespace strideweave;
using strideweave::testing::float_values;
using strideweave::testing::floats;


// An out-of-core tensor: every tile clean and only in a FileBacked secondary.
struct Tiled {
  std::shared_ptr<TiledEvictable> carrier;
  Tensor full;
  Tensor dense;  // the same values, dense on CPU
};

Tiled out_of_core(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile, std::uint32_t seed,
                  std::int64_t depth, std::int64_t budget = default_residency_bytes) {
  std::vector<std::int64_t> logical;
  std::int64_t n = 1;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    logical.push_back(grid[i] * tile[i]);
    n *= grid[i] * tile[i];
  }
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> slots(static_cast<std::size_t>(n));
  for (float& v : slots) v = normal(rng);
  TiledEvictableOptions options;
  options.residency_bytes = budget;
  options.prefetch_depth = depth;
  auto c = TiledEvictable::create(CPU::from_values({}, DType::Float32()),
                                  FileBacked::from_values(float_values(slots), DType::Float32()), grid, tile, options);
  const Tensor dense(CPU::from_values(float_values(strideweave::testing::tiled_logical(slots, grid, tile)),
                                      DType::Float32()),
                     0, Layout::compact(Shape::of(logical)));
  return {c, c->full_tensor(), dense};
}

TEST(TiledPrefetch_AConfigurableDepth, AConstructorOptionWithADocumentedDefault) {
  Tiled x = out_of_core({2, 2}, {2, 2}, 1, default_prefetch_depth);
  EXPECT_EQ(default_prefetch_depth, 2);
  EXPECT_EQ(x.carrier->prefetch_depth(), 2);
  Tiled y = out_of_core({2, 2}, {2, 2}, 1, 0);
  EXPECT_EQ(y.carrier->prefetch_depth(), 0);
  EXPECT_EQ(std::static_pointer_cast<TiledEvictable>(y.carrier->allocate_like(16))->prefetch_depth(), 0);
  TiledEvictableOptions bad;
  bad.prefetch_depth = -1;
  auto primary = CPU::from_values(std::vector<Value>(16, Value::from_float32(0)), DType::Float32());
  EXPECT_THROW((void)TiledEvictable::create(primary, FileBacked::create(std::nullopt, DType::Float32()), {2, 2},
                                            {2, 2}, bad),
               ValueError);
  EXPECT_FALSE(primary->is_owned());  // nothing claimed
}

TEST(TiledPrefetch_TilesAreStagedAheadOfTheirUse, EveryTileButTheFirstIsPrefetchedAndEachUseIsAHitOrAStall) {
  Tiled x = out_of_core({4, 4}, {8, 8}, 2, /*depth=*/2);  // 16 tiles, ample budget
  const TiledEvictableCounters before = x.carrier->counters();
  EXPECT_EQ(before.tiles_prefetched, 0);
  (void)reduce_sum(x.full);
  const TiledEvictableCounters after = x.carrier->counters();
  EXPECT_EQ(after.tiles_prefetched, 15);  // the first use found nothing ahead of it
  EXPECT_EQ(after.prefetch_hits + after.stalls, 16);
  EXPECT_GE(after.stalls, 1);
  EXPECT_EQ(after.bytes_read, 16 * x.carrier->tile_bytes());  // each tile once
  EXPECT_EQ(x.carrier->resident_bytes(), 0);
}

TEST(TiledPrefetch_TilesAreStagedAheadOfTheirUse, DepthZeroStagesEachTileWhenNeeded) {
  Tiled x = out_of_core({4, 4}, {8, 8}, 2, /*depth=*/0);
  (void)reduce_sum(x.full);
  const TiledEvictableCounters c = x.carrier->counters();
  EXPECT_EQ(c.tiles_prefetched, 0);
  EXPECT_EQ(c.prefetch_hits, 0);
  EXPECT_EQ(c.stalls, 16);
}

TEST(TiledPrefetch_ResultsDoNotDependOnTheDepth, TheSixOperationsAndBackwardAreBitIdenticalAcrossDepthsAndBudgets) {
  const std::vector<std::int64_t> depths{0, 1, 2, 4};
  const std::int64_t tile_bytes = 4 * 3 * 4;
  const std::vector<std::int64_t> budgets{tile_bytes, 3 * tile_bytes, default_residency_bytes};
  std::vector<std::vector<std::vector<float>>> seen;  // per (depth, budget): each result
  for (std::int64_t budget : budgets) {
    for (std::int64_t depth : depths) {
      Tiled a = out_of_core({3, 2}, {4, 3}, 7, depth, budget);  // 12 x 6
      Tiled b = out_of_core({2, 3}, {3, 4}, 8, depth, budget);  // 6 x 12
      Tiled c = out_of_core({3, 2}, {4, 3}, 9, depth, budget);  // 12 x 6
      std::vector<std::vector<float>> results{
          floats(add(a.full, c.full)),         floats(elementwise_mul(a.full, c.full)),
          floats(mul(a.full, WeakScalar(3))), floats(relu(c.full)),
          floats(reduce_sum(a.full, Axes(1), false)),
          floats(matmul(a.full, b.full))};
      reduce_sum(matmul(a.full, b.full)).backward();
      results.push_back(floats(*a.full.grad()));
      results.push_back(floats(*b.full.grad()));
      seen.push_back(std::move(results));
      if (depth == 2 && budget == default_residency_bytes) {  // against the dense operations once
        EXPECT_EQ(seen.back()[0], floats(add(a.dense, c.dense)));
        EXPECT_EQ(seen.back()[3], floats(relu(c.dense)));
      }
    }
  }
  for (std::size_t k = 1; k < seen.size(); ++k) EXPECT_EQ(seen[k], seen[0]) << "case " << k;
}

TEST(TiledPrefetch_FetchesStayWithinTheBudget, APrefetchNeverTakesThePlaceOfATileNeededSooner) {
  const std::int64_t tile_bytes = 4 * 4 * 4;
  for (std::int64_t depth : {1, 4, 16}) {
    SCOPED_TRACE(depth);
    Tiled x = out_of_core({4, 4}, {4, 4}, 3, depth, /*budget=*/2 * tile_bytes);  // 16 tiles, 8x the budget
    Tiled y = out_of_core({4, 4}, {4, 4}, 4, depth, /*budget=*/2 * tile_bytes);
    EXPECT_EQ(floats(add(x.full, y.full)), floats(add(x.dense, y.dense)));
    EXPECT_EQ(x.carrier->counters().bytes_read, 16 * tile_bytes);  // each tile once: nothing fetched twice
    EXPECT_LE(x.carrier->counters().peak_resident_bytes, 2 * tile_bytes);
    EXPECT_GE(x.carrier->counters().tiles_prefetched, 1);
  }
  // matmul: the re-read panel is kept, so prefetching adds no reads.
  Tiled a = out_of_core({2, 3}, {4, 4}, 5, 4, 3 * tile_bytes);
  Tiled b = out_of_core({3, 4}, {4, 4}, 6, 4, 3 * tile_bytes);
  (void)matmul(a.full, b.full);
  EXPECT_EQ(a.carrier->counters().bytes_read, 6 * tile_bytes);
  EXPECT_EQ(b.carrier->counters().bytes_read, 12 * tile_bytes);
  EXPECT_LE(a.carrier->counters().peak_resident_bytes, 3 * tile_bytes);
}

TEST(TiledPrefetch_FetchesStayWithinTheBudget, AUseThatFoundNoRoomIsFetchedFirstOnceRoomIsFree) {
  // Budget: two tiles. Each use's fetch must wait for the previous tile's
  // buffer; the lookahead then resumes at the use it could not fetch, so
  // every use after the first is prefetched (before, every other use was
  // skipped and staged when needed).
  const std::int64_t tile_bytes = 8 * 8 * 4;
  Tiled x = out_of_core({4, 4}, {8, 8}, 9, /*depth=*/2, /*budget=*/2 * tile_bytes);
  (void)reduce_sum(x.full);
  const TiledEvictableCounters c = x.carrier->counters();
  EXPECT_EQ(c.tiles_prefetched, 15);
  EXPECT_EQ(c.bytes_read, 16 * tile_bytes);
  EXPECT_LE(c.peak_resident_bytes, 2 * tile_bytes);
}

TEST(TiledPrefetch_TilesAreStagedAheadOfTheirUse, ResidentAndImplicitTilesNeedNoFetch) {
  Tiled x = out_of_core({2, 2}, {2, 2}, 5, 2);
  x.carrier->promote(x.carrier->all_tiles());
  const TiledEvictableCounters before = x.carrier->counters();
  EXPECT_EQ(floats(relu(x.full)), floats(relu(x.dense)));
  const TiledEvictableCounters after = x.carrier->counters();
  EXPECT_EQ(after.tiles_prefetched, before.tiles_prefetched);
  EXPECT_EQ(after.stalls, before.stalls);
  EXPECT_EQ(after.bytes_read, before.bytes_read);
}

TEST(TiledPrefetch_TilesAreStagedAheadOfTheirUse, ProjectionsStreamTheirSelectedTilesThroughThePrefetcher) {
  const std::int64_t tile_bytes = 4 * 4 * 4;
  Tiled x = out_of_core({4, 4}, {4, 4}, 6, 2, /*budget=*/4 * tile_bytes);  // 16 tiles, 4x the budget
  const Tensor compact = x.carrier->project(x.full, TileSelection({{0, 1, 2, 3}, {0, 1, 2, 3}})).wait();
  EXPECT_EQ(floats(compact), floats(x.dense));
  const TiledEvictableCounters c = x.carrier->counters();
  EXPECT_EQ(c.bytes_read, 16 * tile_bytes);  // promoted best-effort or staged: each tile once
  EXPECT_GE(c.tiles_prefetched, 1);
  EXPECT_LE(c.peak_resident_bytes, 4 * tile_bytes);
  // A selection in another order, with repeats across axes.
  const Tensor some = x.carrier->project(x.full, TileSelection({{3, 0}, {2}})).wait();
  const Tensor again = x.carrier->project(x.full, TileSelection({{3, 0}, {2}})).wait();
  EXPECT_EQ(floats(some), floats(again));
  EXPECT_EQ(some.shape(), Shape::of({8, 4}));
}

}  // namespace
