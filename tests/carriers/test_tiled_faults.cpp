// Nothing lost (issue 22, step 5; docs/tiled_evictable.md, "Failure"):
// fault injection on the tier I/O of TiledEvictable's evict, promote,
// project, scatter, direct operations and backward, and a seeded randomized
// stress test against an in-memory model. Suite names give the
// requirement, test names the scenario.
//
// The secondary tier is FileBacked with a one-page residency window, so a
// pass over the tiles moves the window many times. Its I/O surface is the
// memory mapping: a window move drops the old window's pages (madvise, which
// can fail: EIO here), and a fresh file is reserved (posix_fallocate:
// ENOSPC). Every such call goes through the replaceable SystemIo, and the
// injected failure is the nth call, for every n until the work runs clean.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/logical_values.h"
#include "support/tile_geometry.h"
#include "sysio/system_io.h"

namespace {

using namespace strideweave;
using strideweave::testing::float_values;
using strideweave::testing::floats;
using strideweave::testing::tiled_logical;

// Fails the nth call (0-based) of one kind with one errno. Thread-safe: the
// prefetcher's I/O thread calls it too.
class FailNth final : public sysio::SystemIo {
 public:
  enum Call { DropPages, Reserve };
  FailNth(Call call, int error, int nth) : call_(call), error_(error), nth_(nth) {}
  int drop_pages(void* address, std::size_t bytes) noexcept override {
    return hit(DropPages) ? error_ : SystemIo::drop_pages(address, bytes);
  }
  int reserve(int fd, std::int64_t bytes) noexcept override {
    return hit(Reserve) ? error_ : SystemIo::reserve(fd, bytes);
  }
  bool fired() const noexcept { return fired_.load(); }

 private:
  bool hit(Call call) noexcept {
    if (call != call_ || seen_.fetch_add(1) != nth_) return false;
    fired_ = true;
    return true;
  }
  const Call call_;
  const int error_, nth_;
  std::atomic<int> seen_{0};
  std::atomic<bool> fired_{false};
};

std::int64_t page_bytes() { return ::sysconf(_SC_PAGESIZE); }


std::vector<float> small_integers(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<float> out(n);
  for (float& v : out) v = static_cast<float>(d(rng));
  return out;
}

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (std::int64_t x : v) n *= x;
  return n;
}

// A tiled tensor over a one-page-window FileBacked secondary. `slots` are the
// values in slot (tile-major) order; dirty: seeded from the primary (every
// tile primary and dirty, the secondary empty), else from the secondary
// (every tile clean, secondary only).
struct Tiled {
  std::shared_ptr<TiledEvictable> carrier;
  Tensor full;
  std::vector<float> slots;  // the model
  std::vector<std::int64_t> grid, tile;
  Tensor dense() const {
    std::vector<std::int64_t> logical;
    for (std::size_t i = 0; i < grid.size(); ++i) logical.push_back(grid[i] * tile[i]);
    return Tensor(CPU::from_values(float_values(tiled_logical(slots, grid, tile)), DType::Float32()), 0,
                  Layout::compact(Shape::of(logical)));
  }
};

Tiled make_tiled(const std::vector<std::int64_t>& grid, const std::vector<std::int64_t>& tile, std::mt19937& rng,
                 bool dirty, std::int64_t budget, std::int64_t depth) {
  const std::int64_t n = product(grid) * product(tile);
  std::vector<float> slots = small_integers(static_cast<std::size_t>(n), rng);
  TiledEvictableOptions options;
  options.residency_bytes = budget;
  options.prefetch_depth = depth;
  std::shared_ptr<Carrier> primary = CPU::from_values(dirty ? float_values(slots) : std::vector<Value>{}, DType::Float32());
  std::shared_ptr<Carrier> secondary =
      FileBacked::create(std::nullopt, DType::Float32(), true, dirty ? 0 : n, page_bytes());
  if (!dirty) secondary->write_values(0, float_values(slots));
  auto c = TiledEvictable::create(primary, secondary, grid, tile, options);
  return {c, c->full_tensor(), std::move(slots), grid, tile};
}

// What a failure must leave as it was: each tile's state and the version.
struct States {
  TileSet primary, secondary, valid, dirty, implicit;
  std::uint64_t version = 0;
  friend bool operator==(const States&, const States&) = default;
};
States states_of(const TiledEvictable& c) {
  return {c.primary_tiles(), c.secondary_tiles(), c.valid_tiles(), c.dirty_tiles(), c.implicit_tiles(), c.version()};
}

void expect_unchanged(const Tiled& t, const States& before) {
  EXPECT_TRUE(states_of(*t.carrier) == before) << "a tile's state or the version changed";
  EXPECT_EQ(floats(t.full), tiled_logical(t.slots, t.grid, t.tile));  // every value as before
}

// Runs `work` with the nth `call` failing with `error`, for n = 0, 1, ...
// until it runs without the fault firing; after each failure, `after(threw)`
// checks what must hold. Returns the number of faults injected.
int fail_each(FailNth::Call call, int error, const std::function<void()>& work,
              const std::function<void(bool threw)>& after) {
  for (int nth = 0; nth < 400; ++nth) {
    FailNth io(call, error, nth);
    bool threw = false;
    {
      const sysio::ScopedSystemIo scope(io);
      try {
        work();
      } catch (const OSError& e) {
        threw = true;
        EXPECT_EQ(e.error_number(), error);
      } catch (const std::exception& e) {
        threw = true;
        ADD_FAILURE() << "not an OSError: " << e.what();
      }
    }
    if (!io.fired()) {
      EXPECT_FALSE(threw);
      return nth;
    }
    after(threw);
  }
  ADD_FAILURE() << "the work never ran clean";
  return -1;
}

const std::vector<std::int64_t> kGrid{4, 4}, kTile{16, 16};  // 64 x 64: 16 tiles of 1 KiB, 4 per window

TEST(TiledNothingLost_FaultInjection, EvictKeepsEveryTileWhenTheTierFails) {
  std::mt19937 rng(1);
  Tiled x = make_tiled(kGrid, kTile, rng, /*dirty=*/true, default_residency_bytes, 2);
  const States before = states_of(*x.carrier);
  // The fresh secondary file cannot be reserved: ENOSPC, nothing changed.
  fail_each(FailNth::Reserve, ENOSPC, [&] { x.carrier->evict(x.carrier->all_tiles()); },
            [&](bool threw) {
              EXPECT_TRUE(threw);
              expect_unchanged(x, before);
            });
  EXPECT_TRUE(x.carrier->dirty_tiles().empty());  // usable again: the clean run evicted them
  EXPECT_EQ(floats(x.full), floats(x.dense()));
  // Dirty tiles written back over an existing secondary, the window failing
  // to move at every point in turn.
  x.carrier->promote(x.carrier->all_tiles());
  x.slots[5] += 1.0f;
  x.carrier->write_values(5, float_values({x.slots[5]}));  // tile 0 dirty again
  const States dirty = states_of(*x.carrier);
  const int faults = fail_each(FailNth::DropPages, EIO, [&] { x.carrier->evict(x.carrier->all_tiles()); },
                               [&](bool threw) {
                                 EXPECT_TRUE(threw);
                                 expect_unchanged(x, dirty);
                               });
  EXPECT_GE(faults, 1);
  EXPECT_TRUE(x.carrier->primary_tiles().empty());
  EXPECT_EQ(floats(x.full), floats(x.dense()));
}

TEST(TiledNothingLost_FaultInjection, PromoteIsAllOrNothingWhenTheTierFails) {
  std::mt19937 rng(2);
  Tiled x = make_tiled(kGrid, kTile, rng, false, default_residency_bytes, 2);
  const States before = states_of(*x.carrier);
  const int faults = fail_each(FailNth::DropPages, EIO, [&] { x.carrier->promote(x.carrier->all_tiles()); },
                               [&](bool threw) {
                                 EXPECT_TRUE(threw);
                                 expect_unchanged(x, before);
                               });
  EXPECT_GE(faults, 3);
  EXPECT_EQ(x.carrier->primary_tiles(), x.carrier->all_tiles());
}

TEST(TiledNothingLost_FaultInjection, ProjectAndScatterPublishNothingWhenTheTierFails) {
  std::mt19937 rng(3);
  // A budget below the gather's own stream: project() promotes nothing, so
  // every tile is staged by the gather (and prefetched).
  Tiled x = make_tiled(kGrid, kTile, rng, false, 2 * 1024, 2);
  const States before = states_of(*x.carrier);
  const TileSelection all({{0, 1, 2, 3}, {0, 1, 2, 3}});
  const std::vector<float> want = floats(x.dense());
  fail_each(FailNth::DropPages, EIO,
            [&] { EXPECT_EQ(floats(x.carrier->project(x.full, all).wait()), want); },
            [&](bool threw) {
              EXPECT_TRUE(threw);
              expect_unchanged(x, before);
            });
  const Tensor compact(CPU::from_values(float_values(small_integers(64 * 32, rng)), DType::Float32()), 0,
                       Layout::compact(Shape::of({64, 32})));
  const TileSelection half({{0, 1, 2, 3}, {1, 3}});
  std::optional<Tensor> published;
  fail_each(FailNth::DropPages, EIO,
            [&] { published = x.carrier->scatter(compact, x.full, half, ScatterReduction::Add).wait(); },
            [&](bool threw) {
              EXPECT_TRUE(threw);
              EXPECT_FALSE(published.has_value());  // nothing published
              expect_unchanged(x, before);
            });
  ASSERT_TRUE(published.has_value());
  auto* result = dynamic_cast<TiledEvictable*>(published->carrier().get());
  ASSERT_NE(result, nullptr);
  const Tensor template_part = x.carrier->project(x.full, half).wait();
  EXPECT_EQ(floats(result->project(*published, half).wait()), floats(add(template_part, compact)));
}

TEST(TiledNothingLost_FaultInjection, BestEffortPromotionsNeverTurnImplicitTilesIntoDirtyBlocks) {
  // project() promotes its selected tiles best effort; an implicit tile has
  // nothing to read, and promoting it would leave a dirty zero block behind
  // (also when the projection then fails).
  std::mt19937 rng(6);
  Tiled x = make_tiled(kGrid, kTile, rng, false, default_residency_bytes, 2);
  const std::shared_ptr<TiledEvictable> zeros =
      std::static_pointer_cast<TiledEvictable>(x.carrier->allocate_like(x.carrier->size()));
  const Tensor z(zeros, 0, x.full.layout());
  const Tensor compact = zeros->project(z, TileSelection({{0, 1, 2, 3}, {0, 1, 2, 3}})).wait();
  EXPECT_EQ(floats(compact), std::vector<float>(static_cast<std::size_t>(compact.size()), 0.0f));
  EXPECT_EQ(zeros->implicit_tiles(), zeros->all_tiles());
  EXPECT_TRUE(zeros->dirty_tiles().empty());
  EXPECT_EQ(zeros->resident_bytes(), 0);
}

TEST(TiledNothingLost_FaultInjection, DirectOperationsPublishNothingWhenTheTierFails) {
  std::mt19937 rng(4);
  for (std::int64_t depth : {0, 2}) {
    SCOPED_TRACE(depth);
    Tiled x = make_tiled(kGrid, kTile, rng, false, 3 * 1024, depth);
    Tiled y = make_tiled(kGrid, kTile, rng, false, 3 * 1024, depth);
    const States bx = states_of(*x.carrier), by = states_of(*y.carrier);
    const auto check = [&](bool threw) {
      EXPECT_TRUE(threw);
      expect_unchanged(x, bx);
      expect_unchanged(y, by);
    };
    const Tensor dx = x.dense(), dy = y.dense();
    const std::vector<std::pair<std::string, std::function<Tensor()>>> ops{
        {"add", [&] { return add(x.full, y.full); }},
        {"elementwise_mul", [&] { return elementwise_mul(x.full, y.full); }},
        {"mul", [&] { return mul(x.full, WeakScalar(2)); }},
        {"relu", [&] { return relu(x.full); }},
        {"reduce_sum", [&] { return reduce_sum(x.full, Axes(0)); }},
        {"matmul", [&] { return matmul(x.full, y.full); }}};
    const std::vector<Tensor> want{add(dx, dy), elementwise_mul(dx, dy), mul(dx, WeakScalar(2)), relu(dx),
                                   reduce_sum(dx, Axes(0)), matmul(dx, dy)};
    for (std::size_t k = 0; k < ops.size(); ++k) {
      SCOPED_TRACE(ops[k].first);
      const int faults = fail_each(FailNth::DropPages, EIO,
                                   [&] { EXPECT_EQ(floats(ops[k].second()), floats(want[k])); }, check);
      EXPECT_GE(faults, 1);
    }
  }
}

TEST(TiledNothingLost_FaultInjection, BackwardPublishesNoGradientWhenTheTierFails) {
  std::mt19937 rng(5);
  Tiled a = make_tiled(kGrid, kTile, rng, false, 3 * 1024, 2);
  Tiled b = make_tiled(kGrid, kTile, rng, false, 3 * 1024, 2);
  const States ba = states_of(*a.carrier), bb = states_of(*b.carrier);
  Tensor da = a.dense(), db = b.dense();
  reduce_sum(matmul(da, db)).backward();
  const std::vector<float> ga = floats(*da.grad()), gb = floats(*db.grad());
  const auto expect_gradients = [&] {
    ASSERT_TRUE(a.full.grad().has_value() && b.full.grad().has_value());
    EXPECT_EQ(floats(*a.full.grad()), ga);  // read with the tier healthy
    EXPECT_EQ(floats(*b.full.grad()), gb);
  };
  const int faults = fail_each(
      FailNth::DropPages, EIO, [&] { reduce_sum(matmul(a.full, b.full)).backward(); },
      [&](bool threw) {
        if (threw) {
          EXPECT_FALSE(a.full.grad().has_value());  // no gradient published
          EXPECT_FALSE(b.full.grad().has_value());
        } else {  // a failed write-back of a finished gradient tile is absorbed: the tile stays primary
          expect_gradients();
        }
        expect_unchanged(a, ba);
        expect_unchanged(b, bb);
        a.full.set_grad(std::nullopt);
        b.full.set_grad(std::nullopt);
      });
  expect_gradients();
  EXPECT_GE(faults, 1);
}

// ---------------------------------------------------------------- stress

// The steps of the randomized stress test: STRIDEWEAVE_TILED_STRESS_STEPS
// (the long run documented in docs/tiled_evictable.md), else a short run.
int stress_steps() {
  const char* env = std::getenv("STRIDEWEAVE_TILED_STRESS_STEPS");
  return env ? std::atoi(env) : 150;
}

TileSet random_tiles(const std::vector<std::int64_t>& grid, std::mt19937& rng) {
  std::vector<TileCoordinate> out;
  std::bernoulli_distribution take(0.4);
  for (std::int64_t i = 0; i < grid[0]; ++i)
    for (std::int64_t j = 0; j < grid[1]; ++j)
      if (take(rng)) out.push_back({i, j});
  return TileSet(std::move(out));
}

TileSelection random_selection(const std::vector<std::int64_t>& grid, std::mt19937& rng) {
  std::vector<std::vector<std::int64_t>> per_axis(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(grid[i]));
    for (std::int64_t k = 0; k < grid[i]; ++k) all[static_cast<std::size_t>(k)] = k;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(std::uniform_int_distribution<std::size_t>(1, all.size())(rng));
    per_axis[i] = all;
  }
  return TileSelection(per_axis);
}

// The model of a projection: the selected tiles' slots, in coordinates()
// order, as a compact tiled tensor's logical values.
std::vector<float> model_projection(const Tiled& t, const TileSelection& selection) {
  const std::int64_t ts = product(t.tile);
  std::vector<float> packed;
  for (const TileCoordinate& c : selection.coordinates()) {
    const std::int64_t tile = c[0] + c[1] * t.grid[0];
    packed.insert(packed.end(), t.slots.begin() + tile * ts, t.slots.begin() + (tile + 1) * ts);
  }
  std::vector<std::int64_t> sel_grid;
  for (const auto& axis : selection.per_axis()) sel_grid.push_back(static_cast<std::int64_t>(axis.size()));
  return tiled_logical(packed, sel_grid, t.tile);
}

TEST(TiledNothingLost_Stress, RandomInterleavingsAgreeWithAnInMemoryModel) {
  std::mt19937 rng(20261207);
  // x, y: 48 x 64, z: 64 x 48, in 1 KiB tiles: three one-page windows each.
  const std::vector<std::int64_t> grid{3, 4}, tile{16, 16}, grid_t{4, 3}, tile_t{16, 16};
  const std::int64_t tile_bytes = 16 * 16 * 4;
  const auto fresh = [&](const std::vector<std::int64_t>& g, const std::vector<std::int64_t>& t) {
    const std::int64_t budget = std::uniform_int_distribution<std::int64_t>(1, 14)(rng) * tile_bytes;
    const std::int64_t depth = std::uniform_int_distribution<std::int64_t>(0, 4)(rng);
    return make_tiled(g, t, rng, std::bernoulli_distribution(0.5)(rng), budget, depth);
  };
  Tiled x = fresh(grid, tile), y = fresh(grid, tile), z = fresh(grid_t, tile_t);
  int failures = 0, mismatches = 0;
  const int steps = stress_steps();
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE(step);
    const int op = std::uniform_int_distribution<int>(0, 12)(rng);
    Tiled& t = std::bernoulli_distribution(0.5)(rng) ? x : y;
    // About a third of the steps run with one window move failing.
    const bool faulty = std::bernoulli_distribution(0.35)(rng);
    FailNth io(FailNth::DropPages, EIO, std::uniform_int_distribution<int>(0, 12)(rng));
    const States sx = states_of(*x.carrier), sy = states_of(*y.carrier), sz = states_of(*z.carrier);
    const auto dx = x.dense(), dy = y.dense(), dz = z.dense();
    std::vector<float> want, got;
    bool threw = false;
    Tiled* released = nullptr;
    {
      std::optional<sysio::ScopedSystemIo> scope;
      if (faulty) scope.emplace(io);
      try {
        switch (op) {
          case 0: t.carrier->evict(random_tiles(t.grid, rng)); break;
          case 1: t.carrier->promote(random_tiles(t.grid, rng)); break;
          case 2: {
            const TileSelection s = random_selection(t.grid, rng);
            want = model_projection(t, s);
            got = floats(t.carrier->project(t.full, s).wait());
            break;
          }
          case 3: {
            const TileSelection s = random_selection(t.grid, rng);
            const std::vector<float> before = model_projection(t, s);
            std::vector<float> values = small_integers(before.size(), rng);
            const std::vector<std::int64_t> extents{
                static_cast<std::int64_t>(s.per_axis()[0].size()) * t.tile[0],
                static_cast<std::int64_t>(s.per_axis()[1].size()) * t.tile[1]};
            const Tensor compact(CPU::from_values(float_values(values), DType::Float32()), 0,
                                 Layout::compact(Shape::of(extents)));
            const bool add_mode = std::bernoulli_distribution(0.5)(rng);
            const Tensor r =
                t.carrier->scatter(compact, t.full, s, add_mode ? ScatterReduction::Add : ScatterReduction::Replace)
                    .wait();
            want = values;
            if (add_mode)
              for (std::size_t k = 0; k < want.size(); ++k) want[k] += before[k];
            got = floats(std::static_pointer_cast<TiledEvictable>(std::const_pointer_cast<Carrier>(r.carrier()))
                             ->project(r, s)
                             .wait());
            break;
          }
          case 4: {  // a write: the model follows
            const std::int64_t first = std::uniform_int_distribution<std::int64_t>(
                0, static_cast<std::int64_t>(t.slots.size()) - 8)(rng);
            const std::vector<float> values = small_integers(8, rng);
            t.carrier->write_values(first, float_values(values));
            std::copy(values.begin(), values.end(), t.slots.begin() + first);
            break;
          }
          case 5: want = floats(add(dx, dy)), got = floats(add(x.full, y.full)); break;
          case 6: want = floats(elementwise_mul(dx, dy)), got = floats(elementwise_mul(x.full, y.full)); break;
          case 7: want = floats(mul(t.dense(), WeakScalar(-2))), got = floats(mul(t.full, WeakScalar(-2))); break;
          case 8: want = floats(relu(t.dense())), got = floats(relu(t.full)); break;
          case 9: want = floats(reduce_sum(t.dense(), Axes(1))), got = floats(reduce_sum(t.full, Axes(1))); break;
          case 10: want = floats(matmul(dx, dz)), got = floats(matmul(x.full, z.full)); break;
          case 11: {
            reduce_sum(matmul(x.full, z.full)).backward();
            Tensor mx = dx, mz = dz;
            reduce_sum(matmul(mx, mz)).backward();
            want = floats(*mx.grad());
            got = floats(*x.full.grad());
            x.full.set_grad(std::nullopt);
            z.full.set_grad(std::nullopt);
            break;
          }
          case 12: {  // release: everything afterwards refuses, then a fresh instance
            t.carrier->release();
            EXPECT_THROW((void)relu(t.full), RuntimeError);
            EXPECT_THROW(t.carrier->promote(t.carrier->all_tiles()), RuntimeError);
            released = &t;  // replaced below, with the tier healthy
            break;
          }
        }
      } catch (const OSError& e) {
        threw = true;
        EXPECT_TRUE(faulty && io.fired()) << "an OSError without an injected fault: " << e.what();
      }
    }
    if (released) *released = fresh(grid, tile);
    if (threw) {
      ++failures;  // (a failed write changed nothing: the model did not follow it)
      // Nothing lost: values, versions and every state that is not a
      // best-effort promotion are as before.
      for (auto [tt, s] : {std::pair{&x, &sx}, std::pair{&y, &sy}, std::pair{&z, &sz}}) {
        const States now = states_of(*tt->carrier);
        EXPECT_EQ(now.valid, s->valid);
        EXPECT_EQ(now.dirty, s->dirty);
        EXPECT_EQ(now.implicit, s->implicit);
        EXPECT_EQ(now.version, s->version);
        EXPECT_EQ(floats(tt->full), tiled_logical(tt->slots, tt->grid, tt->tile));
      }
      x.full.set_grad(std::nullopt);
      z.full.set_grad(std::nullopt);
      continue;
    }
    if (want != got) ++mismatches;
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(failures, 0);  // the injection reached the tier
  RecordProperty("injected_failures", failures);
}

}  // namespace
