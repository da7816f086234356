// `strideweave demo out-of-core [--budget-mib N] [--factor F] [--tile T]
// [--json]`: an out-of-core example a user can run (issue 22, step 6;
// docs/cli.md, docs/tiled_evictable.md). A FileBacked-tier TiledEvictable
// F times larger than its residency budget is streamed through reduce_sum
// and matmul with a progress bar; each result is checked against an
// in-memory computation on a sample of tile rows, and the run prints the
// bytes moved, the prefetcher's counters and the time beside the time a
// direct (O_DIRECT) read of the same file takes.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "cli.h"

namespace strideweave::cli {
namespace {

struct DemoArguments {
  std::int64_t budget_mib = 64;
  std::int64_t factor = 4;
  std::int64_t tile = 512;
  bool as_json = false;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A deterministic value in [-1, 1) for slot k (splitmix64): the file's
// content is reproducible without storing it anywhere else.
float value_at(std::uint64_t k) {
  std::uint64_t z = k + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1ull << 24) * 2.0 - 1.0);
}

// Drops the file's pages from the page cache (clean pages only: the file
// was flushed), so the streamed passes start cold. Best effort.
void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// The time to read the whole file with O_DIRECT in 8 MiB requests (what
// `dd iflag=direct` measures); buffered where the file system refuses
// O_DIRECT (tmpfs), which the result says.
struct DirectRead {
  double seconds = 0;
  bool direct = true;
};
DirectRead time_direct_read(const std::string& path, std::int64_t bytes) {
  DirectRead out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) {
    out.direct = false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw OSError(fmt::format("demo: cannot open {} to time a direct read", path), errno, path, 0);
  }
  constexpr std::size_t kChunk = std::size_t{8} << 20;
  void* raw = nullptr;
  if (::posix_memalign(&raw, 4096, kChunk) != 0) {
    ::close(fd);
    throw MemoryError("demo: no memory for the direct-read buffer");
  }
  const std::unique_ptr<void, decltype(&std::free)> buffer(raw, &std::free);
  const Clock::time_point start = Clock::now();
  std::int64_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, raw, kChunk, done);
    if (n <= 0) break;
    done += n;
  }
  out.seconds = seconds_since(start);
  ::close(fd);
  return out;
}

// Runs `work` while a thread draws a progress bar from the instance's
// bytes read (the streamed pass reads each tile once: `total` bytes).
template <class Work>
Tensor with_progress(const TiledEvictable& tiled, std::int64_t total, bool draw, const char* label, Work&& work) {
  const std::int64_t base = tiled.counters().bytes_read;
  std::atomic<bool> finished{false};
  if (draw) std::cerr << label << "\n";
  std::thread bar([&] {
    while (draw && !finished.load()) {
      draw_progress(std::min(total - 1, tiled.counters().bytes_read - base), total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  try {
    Tensor result = work();
    finished = true;
    bar.join();
    if (draw) draw_progress(total, total);
    return result;
  } catch (...) {
    finished = true;
    bar.join();
    if (draw) std::cerr << "\n";
    throw;
  }
}

// The largest |got - want| / bound over the elements, where bound[i] is the
// rounding error two Float32 summations of the same n terms in different
// orders may differ by: 2 n u sum|terms| (u = 2^-24; each order is within
// n u sum|terms| of the exact sum). Above 1 means a real difference.
double worst_over_bound(const std::vector<float>& got, const std::vector<float>& want,
                        const std::vector<float>& abs_sums, std::int64_t n) {
  if (got.size() != want.size() || got.size() != abs_sums.size()) return INFINITY;
  const double factor = 2.0 * static_cast<double>(n) * std::ldexp(1.0, -24);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = factor * abs_sums[i] + 1e-30;
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / bound);
  }
  return worst;
}

std::vector<float> float_values(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}

// |t| elementwise, as a fresh compact CPU tensor of t's shape.
Tensor abs_of(const Tensor& t) {
  std::vector<Value> values;
  for (const Value& v : t.values()) values.push_back(Value::from_float32(std::abs(v.f)));
  return Tensor(CPU::from_values(values, DType::Float32()), 0, Layout::compact(t.shape()));
}

// Rows [first, first + count) of a compact (first axis fastest) matrix with
// `rows` rows and `columns` columns, in logical order.
std::vector<float> row_block(const std::vector<float>& matrix, std::int64_t rows, std::int64_t columns,
                             std::int64_t first, std::int64_t count) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(count * columns));
  for (std::int64_t c = 0; c < columns; ++c)
    for (std::int64_t r = first; r < first + count; ++r) out.push_back(matrix[static_cast<std::size_t>(c * rows + r)]);
  return out;
}

// 0, 1, ..., grid - 1.
std::vector<std::int64_t> all_tile_rows(std::int64_t grid) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(grid));
  for (std::int64_t j = 0; j < grid; ++j) out[static_cast<std::size_t>(j)] = j;
  return out;
}

int run_demo(const DemoArguments& a) {
  const bool draw = !a.as_json;
  const std::int64_t budget = a.budget_mib << 20;
  const std::int64_t tile = a.tile;
  // A square n x n Float32 matrix of about factor x budget bytes, whole tiles.
  const auto side = static_cast<std::int64_t>(std::sqrt(static_cast<double>(a.factor * budget) / 4.0));
  const std::int64_t grid = std::max<std::int64_t>(1, side / tile);
  const std::int64_t n = grid * tile;
  const std::int64_t slots = n * n, bytes = slots * 4, tile_bytes = tile * tile * 4;
  if (bytes <= budget) throw UsageError("demo: the data must be larger than the budget (raise --factor)");

  // The secondary tier: a temporary FileBacked file, filled tile-major.
  const std::shared_ptr<FileBacked> file = FileBacked::create(std::nullopt, DType::Float32(), true, slots);
  if (draw) std::cerr << fmt::format("writing {:.0f} MiB to {}\n", bytes / 1048576.0, file->path().string());
  {
    std::vector<float> chunk(static_cast<std::size_t>(tile * tile));
    for (std::int64_t t = 0; t < grid * grid; ++t) {
      for (std::int64_t k = 0; k < tile * tile; ++k)
        chunk[static_cast<std::size_t>(k)] = value_at(static_cast<std::uint64_t>(t * tile * tile + k));
      file->write_bytes(t * tile * tile, std::as_bytes(std::span<const float>(chunk)));
      if (draw && (t % 16 == 15 || t + 1 == grid * grid)) draw_progress((t + 1) * tile_bytes, bytes);
    }
  }
  file->flush();
  const std::string path = file->path().string();
  drop_cache(path);
  const DirectRead disk = time_direct_read(path, bytes);
  drop_cache(path);

  TiledEvictableOptions options;
  options.residency_bytes = budget;
  const std::shared_ptr<TiledEvictable> x =
      TiledEvictable::create(CPU::from_values({}, DType::Float32()), file, {grid, grid}, {tile, tile}, options);
  const Tensor full = x->full_tensor();

  // reduce_sum over axis 1: every tile read once.
  Clock::time_point start = Clock::now();
  const TiledEvictableCounters before_sum = x->counters();
  const Tensor sums =
      with_progress(*x, bytes, draw, "reduce_sum(x, axes=[1])", [&] { return reduce_sum(full, Axes(1)); });
  const double sum_seconds = seconds_since(start);
  const TiledEvictableCounters after_sum = x->counters();

  // matmul with a small resident right-hand side (n x 64): the result stays
  // resident, x streams once.
  const std::int64_t m = 64;
  std::vector<Value> b_values(static_cast<std::size_t>(n * m));
  for (std::size_t k = 0; k < b_values.size(); ++k) b_values[k] = Value::from_float32(value_at(1ull << 40 | k));
  const std::shared_ptr<TiledEvictable> b = TiledEvictable::create(
      CPU::from_values(b_values, DType::Float32()), FileBacked::create(std::nullopt, DType::Float32()),
      {grid, 1}, {tile, m});
  drop_cache(path);
  start = Clock::now();
  const Tensor product = with_progress(*x, bytes, draw, "matmul(x, b)  (b: n x 64, resident)",
                                       [&] { return matmul(full, b->full_tensor()); });
  const double matmul_seconds = seconds_since(start);
  const TiledEvictableCounters after_matmul = x->counters();

  // Checks on a sample of tile rows, computed in memory from their tiles.
  const std::vector<float> all_sums = float_values(sums), all_products = float_values(product);
  const Tensor dense_b = b->project(b->full_tensor(), TileSelection({all_tile_rows(grid), {0}})).wait();
  double sum_error = 0, matmul_error = 0;
  std::vector<std::int64_t> sample{0, grid / 2, grid - 1};
  for (std::int64_t r : sample) {
    const Tensor rows = x->project(full, TileSelection({{r}, all_tile_rows(grid)})).wait();  // tile x n, in memory
    const std::vector<float> want_sums = float_values(reduce_sum(rows, Axes(1)));
    sum_error = std::max(sum_error, worst_over_bound(std::vector<float>(all_sums.begin() + r * tile,
                                                                        all_sums.begin() + (r + 1) * tile),
                                                     want_sums, float_values(reduce_sum(abs_of(rows), Axes(1))), n));
    const std::vector<float> want_products = float_values(matmul(rows, dense_b));
    matmul_error = std::max(matmul_error,
                            worst_over_bound(row_block(all_products, n, m, r * tile, tile), want_products,
                                             float_values(matmul(abs_of(rows), abs_of(dense_b))), n));
  }
  const bool checked = sum_error <= 1.0 && matmul_error <= 1.0;

  const double gib = static_cast<double>(bytes) / (1 << 30);
  json out{{"data_bytes", bytes},
           {"budget_bytes", budget},
           {"tile_bytes", tile_bytes},
           {"shape", {n, n}},
           {"direct_read_seconds", disk.seconds},
           {"direct_read_is_o_direct", disk.direct},
           {"reduce_sum",
            {{"seconds", sum_seconds},
             {"bytes_read", after_sum.bytes_read - before_sum.bytes_read},
             {"tiles_prefetched", after_sum.tiles_prefetched - before_sum.tiles_prefetched},
             {"prefetch_hits", after_sum.prefetch_hits - before_sum.prefetch_hits},
             {"stalls", after_sum.stalls - before_sum.stalls},
             {"worst_error_over_bound", sum_error}}},
           {"matmul",
            {{"seconds", matmul_seconds},
             {"gflops", 2.0 * n * n * m / matmul_seconds / 1e9},
             {"bytes_read", after_matmul.bytes_read - after_sum.bytes_read},
             {"tiles_prefetched", after_matmul.tiles_prefetched - after_sum.tiles_prefetched},
             {"prefetch_hits", after_matmul.prefetch_hits - after_sum.prefetch_hits},
             {"stalls", after_matmul.stalls - after_sum.stalls},
             {"worst_error_over_bound", matmul_error}}},
           {"peak_resident_bytes", after_matmul.peak_resident_bytes},
           {"checked", checked}};
  if (a.as_json) {
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format(
        "\nx: {} x {} Float32 = {:.0f} MiB in a FileBacked tier, {} tiles of {:.2f} MiB; budget {:.0f} MiB ({}x "
        "smaller)\n",
        n, n, bytes / 1048576.0, grid * grid, tile_bytes / 1048576.0, budget / 1048576.0, bytes / budget);
    std::cout << fmt::format("direct read of the file{}: {:.2f} s ({:.2f} GiB/s)\n",
                             disk.direct ? " (O_DIRECT)" : " (buffered: the file system refuses O_DIRECT)",
                             disk.seconds, gib / disk.seconds);
    const auto report = [&](const char* name, const json& r) {
      std::cout << fmt::format(
          "{:<10} {:.2f} s ({:.2f}x the direct read)  read {:.0f} MiB ({:.3f}x the data)  prefetched {} tiles, "
          "{} hits, {} stalls  worst difference on the sample {:.3f}x its rounding bound\n",
          name, r["seconds"].get<double>(), r["seconds"].get<double>() / disk.seconds,
          r["bytes_read"].get<std::int64_t>() / 1048576.0,
          static_cast<double>(r["bytes_read"].get<std::int64_t>()) / static_cast<double>(bytes),
          r["tiles_prefetched"].get<std::int64_t>(), r["prefetch_hits"].get<std::int64_t>(),
          r["stalls"].get<std::int64_t>(), r["worst_error_over_bound"].get<double>());
    };
    report("reduce_sum", out["reduce_sum"]);
    report("matmul", out["matmul"]);
    std::cout << fmt::format("matmul: {:.1f} GFLOP/s; peak resident {:.1f} MiB of the {:.0f} MiB budget\n",
                             out["matmul"]["gflops"].get<double>(), after_matmul.peak_resident_bytes / 1048576.0,
                             budget / 1048576.0);
    std::cout << (checked ? "checked: both results agree with the in-memory computation on the sample\n"
                          : "CHECK FAILED: a result differs from the in-memory computation\n");
  }
  x->release();
  b->release();
  return checked ? 0 : 1;
}

}  // namespace

Command add_demo_command(CLI::App& app) {
  CLI::App* demo = app.add_subcommand("demo", "Runnable examples of what strideweave is for");
  demo->require_subcommand(1);
  CLI::App* sub = demo->add_subcommand(
      "out-of-core",
      "Stream a FileBacked TiledEvictable several times larger than its memory budget through reduce_sum and "
      "matmul, check the results on a sample, and report bytes moved, prefetch counters and time beside a direct "
      "read of the file");
  auto a = std::make_shared<DemoArguments>();
  sub->add_option("--budget-mib", a->budget_mib, "The residency budget in MiB")
      ->check(not_a_flag())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--factor", a->factor, "How many times larger than the budget the data is")
      ->check(not_a_flag())
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  sub->add_option("--tile", a->tile, "The tile's side (square tiles)")
      ->check(not_a_flag())
      ->check(CLI::Range(8, 4096))
      ->capture_default_str();
  sub->add_flag("--json", a->as_json, "Print the measurements as one JSON object (no progress bars)");
  sub->footer("Example: strideweave demo out-of-core --budget-mib 64");
  return {demo, [a] { return run_demo(*a); }};
}

}  // namespace strideweave::cli
