// bench/run --storage's strideweave side (bench/storage.py runs it, beside
// dd and numpy.memmap; docs/storage.md, "Measured").
//
//   bench_storage move-reduce FILE REPEATS
//     FileBacked::open(FILE) -> move to a fresh CPU carrier -> reduce_sum, timed
//     from the CPU carrier's creation to the sum. Before each repetition the
//     file's pages are dropped from the page cache (fsync, then
//     posix_fadvise(POSIX_FADV_DONTNEED)) so that the reads come from the disk.
//   bench_storage stream-reduce FILE REPEATS SLICE_BYTES IN_FLIGHT EMPTY
//     The same file as slices of SLICE_BYTES (the last one shorter), each
//     opened with FileBacked::open(FILE, Float32, false, offset, size),
//     IN_FLIGHT move_async to fresh CPU carriers in flight (created with
//     empty=EMPTY, 0 or 1), each landed slice reduced (reduce_sum) while the
//     next ones read, the slices' sums added in double; timed from the first
//     open to the total (docs/storage.md, "Streaming a large file").
//   bench_storage block-device IMAGE BYTES REPEATS
//     BlockDevice::open(IMAGE, BYTES) (a new image, removed at the end), one
//     carrier over the whole image; write_aligned then read_aligned of the
//     whole carrier from one aligned buffer, timed. O_DIRECT: no page cache.
//
// Prints one JSON object per repetition: {"work": ..., "bytes": ...,
// "seconds": ..., ...}. Never a threshold: the figures are reported, not judged.
#include <strideweave/strideweave.h>

#include "bench_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>

namespace sw = strideweave;

namespace {

using bench_files::clock_type;
using bench_files::drop_cached_pages;
using bench_files::seconds_since;

int move_reduce(const std::string& path, int repeats) {
  const std::int64_t bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  const std::int64_t n = bytes / 4;
  for (int rep = 0; rep < repeats; ++rep) {
    drop_cached_pages(path);
    auto file = sw::FileBacked::open(path, sw::DType::Float32());
    const sw::Tensor on_file(file, sw::Shape{n});
    const auto t0 = clock_type::now();
    auto cpu = sw::CPU::create(n, sw::DType::Float32(), true, /*empty=*/true);
    const sw::Tensor on_cpu = sw::move(on_file, cpu);
    const double move_seconds = seconds_since(t0);
    const float sum = sw::reduce_sum(on_cpu).at_ordinal(0).f;
    const double seconds = seconds_since(t0);
    std::printf("{\"work\": \"move_reduce\", \"bytes\": %lld, \"seconds\": %.6f, \"move_seconds\": %.6f, \"sum\": %.9g}\n",
                static_cast<long long>(n * 4), seconds, move_seconds, static_cast<double>(sum));
    std::fflush(stdout);
  }
  return 0;
}

int stream_reduce(const std::string& path, int repeats, std::int64_t slice_bytes, int in_flight, bool empty) {
  const std::int64_t bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  const std::int64_t n = bytes / 4;
  const std::int64_t slice = std::max<std::int64_t>(1, slice_bytes / 4);
  if (in_flight < 1) throw std::runtime_error("stream-reduce: IN_FLIGHT must be at least 1");
  for (int rep = 0; rep < repeats; ++rep) {
    drop_cached_pages(path);
    const auto t0 = clock_type::now();
    std::deque<sw::AwaitMove<sw::Tensor>> pending;
    std::int64_t next = 0;  // the next slice's first slot
    auto start_next = [&] {
      const std::int64_t m = std::min(slice, n - next);
      auto file = sw::FileBacked::open(path, sw::DType::Float32(), false, next * 4, m);
      pending.push_back(sw::move_async(sw::Tensor(file, sw::Shape{m}), sw::CPU::create(m, sw::DType::Float32(), true, empty)));
      next += m;
    };
    while (next < n && static_cast<int>(pending.size()) < in_flight) start_next();
    double sum = 0;
    int slices = 0;
    while (!pending.empty()) {
      const sw::Tensor landed = pending.front().wait();
      pending.pop_front();
      if (next < n) start_next();  // keep IN_FLIGHT reading while this one is reduced
      sum += static_cast<double>(sw::reduce_sum(landed).at_ordinal(0).f);
      ++slices;
    }
    const double seconds = seconds_since(t0);
    std::printf("{\"work\": \"stream_reduce\", \"bytes\": %lld, \"seconds\": %.6f, \"slices\": %d, \"in_flight\": %d, "
                "\"empty\": %s, \"sum\": %.17g}\n",
                static_cast<long long>(n * 4), seconds, slices, in_flight, empty ? "true" : "false", sum);
    std::fflush(stdout);
  }
  return 0;
}

int block_device(const std::string& image, std::int64_t bytes, int repeats) {
  bytes -= bytes % sw::BlockDevice::block_bytes;
  const std::int64_t n = bytes / 4;
  {
    auto device = sw::BlockDevice::open(image, bytes);
    auto carrier = device->allocate(n, true, sw::DType::Float32(), /*empty=*/true);
    auto buffer = sw::BlockDevice::aligned_buffer(carrier->padded_size());
    for (std::int64_t i = 0; i < carrier->padded_size(); ++i) buffer[i] = static_cast<float>(i % 1000) * 0.001f;
    const std::span<float> all(buffer.get(), static_cast<std::size_t>(carrier->padded_size()));
    for (int rep = 0; rep < repeats; ++rep) {
      auto t0 = clock_type::now();
      carrier->write_aligned(0, all);
      const double write_seconds = seconds_since(t0);
      t0 = clock_type::now();
      carrier->read_aligned(0, all);
      const double read_seconds = seconds_since(t0);
      std::printf("{\"work\": \"block_device_write\", \"bytes\": %lld, \"seconds\": %.6f}\n"
                  "{\"work\": \"block_device_read\", \"bytes\": %lld, \"seconds\": %.6f}\n",
                  static_cast<long long>(bytes), write_seconds, static_cast<long long>(bytes), read_seconds);
      std::fflush(stdout);
    }
    carrier->release();
  }
  std::filesystem::remove(image);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: bench_storage move-reduce FILE REPEATS | stream-reduce FILE REPEATS SLICE_BYTES IN_FLIGHT EMPTY | "
      "block-device IMAGE BYTES REPEATS\n";
  try {
    const std::string what = argc > 1 ? argv[1] : "";
    if (what == "move-reduce" && argc == 4) return move_reduce(argv[2], std::atoi(argv[3]));
    if (what == "stream-reduce" && argc == 7)
      return stream_reduce(argv[2], std::atoi(argv[3]), std::atoll(argv[4]), std::atoi(argv[5]),
                           std::atoi(argv[6]) != 0);
    if (what == "block-device" && argc == 5) return block_device(argv[2], std::atoll(argv[3]), std::atoi(argv[4]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_storage: %s\n", e.what());
    return 1;
  }
  std::fputs(usage.c_str(), stderr);
  return 2;
}
