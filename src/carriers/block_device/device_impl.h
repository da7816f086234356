// Internal: a BlockDevice's state — the image, the free list of extents, the
// one shared io_uring submission queue and the per-block checksums — and the
// state of one transfer (docs/storage.md, "BlockDeviceCarrier").
//
// Locks: a carrier's io_mutex_ is taken before the ring mutex; the ring mutex
// guards the ring, the table of requests in flight and the checksum table;
// the free-list mutex is taken alone.
#pragma once

#include <strideweave/carriers/block_device.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sysio/system_io.h"

namespace strideweave {

// One transfer: a contiguous, block-aligned byte range of the image, split
// into requests of at most BlockDevice::request_bytes.
struct BlockIoCompletion::State {
  std::shared_ptr<BlockDevice> device;  // kept alive while in flight
  bool write = false;
  std::byte* buffer = nullptr;
  std::int64_t offset = 0;  // image byte offset
  std::int64_t bytes = 0;
  std::string what;         // the entry point, for messages
  // A bounce buffer the transfer owns (indexed access), freed with it.
  AlignedFloats owned_buffer;
  // Runs under the ring mutex after a successful transfer (a bulk write's
  // version step); an exception it throws becomes the transfer's failure.
  std::function<void()> on_success;

  // Under the ring mutex.
  std::size_t outstanding = 0;  // requests in flight
  bool submitting = true;       // requests remain to be submitted,
  std::int64_t next_offset = 0; // from this image offset
  bool finished = false;
  int error = 0;                // the first failure: errno,
  std::int64_t error_offset = 0;  // image offset,
  std::string error_detail;     // what failed
  std::exception_ptr failure;   // the OSError (or the on_success error) wait() rethrows
};

struct BlockDevice::Impl {
  std::filesystem::path path;
  std::string path_string;
  int fd = -1;
  std::int64_t capacity_bytes = 0;  // whole blocks
  bool checksums = false;

  // The free list: first block -> block count, coalesced.
  mutable std::mutex free_mutex;
  std::map<std::int64_t, std::int64_t> free_extents;

  // The shared submission queue.
  std::mutex ring_mutex;
  sysio::Ring* ring = nullptr;
  unsigned in_ring = 0;  // requests submitted and not yet reaped (orphans too)
  std::uint64_t next_tag = 1;
  struct Pending {
    std::shared_ptr<BlockIoCompletion::State> state;
    std::int64_t offset;
    std::uint32_t bytes;
  };
  std::unordered_map<std::uint64_t, Pending> pending;
  // Per-block XXH3-64 of what the device last wrote; known[b] false when the
  // block's content is not known (never written, an `empty` allocation, a
  // failed write).
  std::vector<std::uint64_t> block_sums;
  std::vector<std::uint8_t> block_known;

  ~Impl();

  // Extents (block units). nullopt when no free extent is large enough.
  std::optional<std::int64_t> take_extent(std::int64_t blocks);
  void give_back(std::int64_t first_block, std::int64_t blocks) noexcept;

  // Starts a transfer (submits what the queue takes; the rest is submitted
  // as requests complete, by whoever drives the ring).
  void start(const std::shared_ptr<BlockIoCompletion::State>& state);
  // Drives the ring until `state` finished (block) or nothing more is ready.
  void drive(BlockIoCompletion::State& state, bool block);
  // Reaps until none of `state`'s requests is in flight any more (after a
  // failed reap, its requests may still be running in the kernel).
  void settle(BlockIoCompletion::State& state);
  // start + drive(block) + rethrow.
  void run(const std::shared_ptr<BlockIoCompletion::State>& state);
  // Marks [offset, offset + bytes) as unknown (no checksum to verify).
  void forget_sums(std::int64_t offset, std::int64_t bytes);

 private:
  // Under ring_mutex.
  void submit_more(const std::shared_ptr<BlockIoCompletion::State>& state);
  bool reap_one(bool block);
  void fail(BlockIoCompletion::State& state, int error, std::int64_t offset, std::string detail);
  void maybe_finish(BlockIoCompletion::State& state);
  void finish(BlockIoCompletion::State& state);
  std::vector<std::shared_ptr<BlockIoCompletion::State>> waiting_submission;
};

// OSError naming the image, the call and the offset.
[[noreturn]] void throw_block_error(const std::string& image, int error, const std::string& detail,
                                    std::optional<std::int64_t> offset);

}  // namespace strideweave
