// bench/run --out-of-core's strideweave side (bench/out_of_core.py runs it,
// beside dd iflag=direct and numpy.memmap; docs/performance.md,
// "Out of core"). Each FILE holds an n x n Float32 matrix, tile-major
// (tile x tile tiles), written by the driver; it is streamed through a
// TiledEvictable over FileBacked::open(FILE) with a CPU compute tier.
//
//   bench_out_of_core reduce FILE BUDGET TILE DEPTH REPEATS
//     reduce_sum of the whole matrix.
//   bench_out_of_core add FILE_A FILE_B BUDGET TILE DEPTH REPEATS
//     add(a, b) into a dense CPU result.
//   bench_out_of_core matmul FILE BUDGET TILE DEPTH REPEATS M
//     matmul(a, b) with b an n x M TiledEvictable kept resident; then the
//     same matmul in memory (a moved whole into a CPU carrier first).
//
// BUDGET is the residency budget in bytes, DEPTH the prefetch depth. Before
// each repetition the files' pages are dropped from the page cache (fsync,
// posix_fadvise(DONTNEED)). Prints one JSON object per repetition with the
// seconds and the instance's counters. Never a threshold.
#include <strideweave/strideweave.h>

#include "bench_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sw = strideweave;

namespace {

using bench_files::clock_type;
using bench_files::drop_cached_pages;
using bench_files::seconds_since;

// The matrix's side: the file is n * n Float32 values, n a multiple of tile.
std::int64_t side_of(const std::string& path, std::int64_t tile) {
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  const auto n = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(bytes / 4))));
  if (n * n * 4 != bytes || n % tile != 0)
    throw std::runtime_error(fmt::format("{}: {} bytes is not an n x n Float32 matrix of {}-tiles", path, bytes, tile));
  return n;
}

std::shared_ptr<sw::TiledEvictable> open_tiled(const std::string& path, std::int64_t tile, std::int64_t budget,
                                               std::int64_t depth) {
  const std::int64_t grid = side_of(path, tile) / tile;
  sw::TiledEvictableOptions options;
  options.residency_bytes = budget;
  options.prefetch_depth = depth;
  return sw::TiledEvictable::create(sw::CPU::from_values({}, sw::DType::Float32()),
                                    sw::FileBacked::open(path, sw::DType::Float32(), /*mutable_=*/true), {grid, grid},
                                    {tile, tile}, options);
}

void print_run(const char* work, double seconds, const sw::TiledEvictableCounters& c, std::int64_t budget,
               std::int64_t depth, const std::string& extra = "") {
  std::printf("{\"work\": \"%s\", \"seconds\": %.6f, \"bytes_read\": %lld, \"peak_resident_bytes\": %lld, "
              "\"budget_bytes\": %lld, \"depth\": %lld, \"tiles_prefetched\": %lld, \"prefetch_hits\": %lld, "
              "\"stalls\": %lld%s}\n",
              work, seconds, static_cast<long long>(c.bytes_read), static_cast<long long>(c.peak_resident_bytes),
              static_cast<long long>(budget), static_cast<long long>(depth),
              static_cast<long long>(c.tiles_prefetched), static_cast<long long>(c.prefetch_hits),
              static_cast<long long>(c.stalls), extra.c_str());
  std::fflush(stdout);
}

int reduce(const std::string& path, std::int64_t budget, std::int64_t tile, std::int64_t depth, int repeats) {
  for (int rep = 0; rep < repeats; ++rep) {
    drop_cached_pages(path);
    auto x = open_tiled(path, tile, budget, depth);
    const auto t0 = clock_type::now();
    const float sum = sw::reduce_sum(x->full_tensor()).at_ordinal(0).f;
    const double seconds = seconds_since(t0);
    print_run("reduce", seconds, x->counters(), budget, depth, fmt::format(", \"sum\": {:.9g}", sum));
    x->release();
  }
  return 0;
}

int add(const std::string& a_path, const std::string& b_path, std::int64_t budget, std::int64_t tile,
        std::int64_t depth, int repeats) {
  for (int rep = 0; rep < repeats; ++rep) {
    drop_cached_pages(a_path);
    drop_cached_pages(b_path);
    auto a = open_tiled(a_path, tile, budget, depth), b = open_tiled(b_path, tile, budget, depth);
    const auto t0 = clock_type::now();
    const sw::Tensor c = sw::add(a->full_tensor(), b->full_tensor());
    const double seconds = seconds_since(t0);
    sw::TiledEvictableCounters both = a->counters();
    const sw::TiledEvictableCounters cb = b->counters();
    both.bytes_read += cb.bytes_read;
    both.peak_resident_bytes = std::max(both.peak_resident_bytes, cb.peak_resident_bytes);
    both.tiles_prefetched += cb.tiles_prefetched;
    both.prefetch_hits += cb.prefetch_hits;
    both.stalls += cb.stalls;
    print_run("add", seconds, both, budget, depth,
              fmt::format(", \"first\": {:.9g}", static_cast<double>(c.at_ordinal(0).f)));
    a->release();
    b->release();
  }
  return 0;
}

int matmul(const std::string& path, std::int64_t budget, std::int64_t tile, std::int64_t depth, int repeats,
           std::int64_t m) {
  const std::int64_t n = side_of(path, tile);
  std::vector<sw::Value> b_values(static_cast<std::size_t>(n * m));
  for (std::size_t k = 0; k < b_values.size(); ++k)
    b_values[k] = sw::Value::from_float32(static_cast<float>(k % 97) * 0.01f - 0.48f);
  for (int rep = 0; rep < repeats; ++rep) {
    drop_cached_pages(path);
    auto a = open_tiled(path, tile, budget, depth);
    auto b = sw::TiledEvictable::create(sw::CPU::from_values(b_values, sw::DType::Float32()),
                                        sw::FileBacked::create(std::nullopt, sw::DType::Float32()), {n / tile, 1},
                                        {tile, m});
    auto t0 = clock_type::now();
    (void)sw::matmul(a->full_tensor(), b->full_tensor());
    const double seconds = seconds_since(t0);
    // The same product in memory: a whole in a CPU carrier (compact n x n).
    auto dense_a_storage = sw::CPU::create(n * n, sw::DType::Float32(), true, /*empty=*/true);
    dense_a_storage->copy_range(*a->secondary(), 0, 0, n * n);
    const sw::Tensor dense_a(dense_a_storage, 0, sw::Layout::compact(sw::Shape::of({n, n})));
    const sw::Tensor dense_b(sw::CPU::from_values(b_values, sw::DType::Float32()), 0,
                             sw::Layout::compact(sw::Shape::of({n, m})));
    t0 = clock_type::now();
    (void)sw::matmul(dense_a, dense_b);
    const double memory_seconds = seconds_since(t0);
    print_run("matmul", seconds, a->counters(), budget, depth,
              fmt::format(", \"in_memory_seconds\": {:.6f}, \"flops\": {:.6g}, \"compulsory_bytes\": {}",
                          memory_seconds, 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(m),
                          n * n * 4));
    a->release();
    b->release();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: bench_out_of_core reduce FILE BUDGET TILE DEPTH REPEATS | add FILE_A FILE_B BUDGET TILE DEPTH REPEATS "
      "| matmul FILE BUDGET TILE DEPTH REPEATS M\n";
  try {
    const std::string what = argc > 1 ? argv[1] : "";
    if (what == "reduce" && argc == 7)
      return reduce(argv[2], std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5]), std::atoi(argv[6]));
    if (what == "add" && argc == 8)
      return add(argv[2], argv[3], std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6]), std::atoi(argv[7]));
    if (what == "matmul" && argc == 8)
      return matmul(argv[2], std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5]), std::atoi(argv[6]),
                    std::atoll(argv[7]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_out_of_core: %s\n", e.what());
    return 1;
  }
  std::fputs(usage.c_str(), stderr);
  return 2;
}
