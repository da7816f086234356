// BlockDevice: the image, its free list, its one io_uring submission queue
// and its checksums. See include/strideweave/carriers/block_device.h and
// docs/storage.md; every system call goes through sysio::system_io() (src/sysio/system_io.h).
#include <strideweave/carriers/block_device.h>
#include <strideweave/errors.h>

#include <fmt/format.h>
#include <xxhash.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include "carriers/block_device/device_impl.h"

namespace strideweave {
namespace {

using State = BlockIoCompletion::State;

constexpr std::int64_t kBlock = BlockDevice::block_bytes;

std::uint64_t block_hash(const std::byte* block) { return XXH3_64bits(block, static_cast<std::size_t>(kBlock)); }

}  // namespace

[[noreturn]] void throw_block_error(const std::string& image, int error, const std::string& detail,
                                    std::optional<std::int64_t> offset) {
  const std::string where = offset ? fmt::format(" at byte offset {}", *offset) : std::string();
  throw OSError(fmt::format("BlockDevice: {} failed for '{}'{}: {}", detail, image, where, std::strerror(error)),
                error, image, offset);
}

// ---- opening

BlockDevice::BlockDevice(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

BlockDevice::~BlockDevice() = default;

BlockDevice::Impl::~Impl() {
  sysio::SystemIo& io = sysio::system_io();
  if (ring) {
    // Nothing is in flight: every transfer keeps the device alive.
    io.ring_destroy(ring);
  }
  if (fd >= 0) io.close(fd);
}

std::shared_ptr<BlockDevice> BlockDevice::open(const std::filesystem::path& path,
                                               std::optional<std::int64_t> create_bytes, bool checksums) {
  const std::string p = path.string();
  if (p.empty()) throw ValueError("BlockDevice: the image path must not be empty");
  if (create_bytes && (*create_bytes <= 0 || *create_bytes % kBlock != 0))
    throw ValueError(fmt::format("BlockDevice: size {} must be a positive multiple of {} bytes", *create_bytes, kBlock));
  sysio::SystemIo& io = sysio::system_io();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->path_string = p;
  impl->checksums = checksums;
  bool created = false;
  auto undo = [&]() noexcept {
    if (impl->ring) io.ring_destroy(impl->ring);
    impl->ring = nullptr;
    if (impl->fd >= 0) io.close(impl->fd);
    impl->fd = -1;
    if (created) io.remove_file(p);
  };
  const auto direct_io_error = [&](int error, const char* call) {
    if (error == EINVAL)
      throw OSError(fmt::format("BlockDevice: {} of '{}' with O_DIRECT failed: the file system holding it does not "
                                "support direct I/O (tmpfs does not); put the image on a disk file system",
                                call, p),
                    error, p, std::nullopt);
    throw_block_error(p, error, fmt::format("{} (O_DIRECT)", call), std::nullopt);
  };
  if (create_bytes) {
    if (const int error = io.open(p, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_NOFOLLOW, 0600, impl->fd)) direct_io_error(error, "open (create)");
    created = true;
  } else {
    if (const int error = io.open(p, O_RDWR | O_DIRECT, 0, impl->fd)) direct_io_error(error, "open");
  }
  try {
    if (const int error = io.lock(impl->fd)) {
      if (error == EWOULDBLOCK)
        throw OSError(fmt::format("BlockDevice: '{}' is in use by another BlockDevice (flock)", p), error, p,
                      std::nullopt);
      throw_block_error(p, error, "flock", std::nullopt);
    }
    if (create_bytes) {
      if (const int error = io.reserve(impl->fd, *create_bytes))
        throw_block_error(p, error, fmt::format("posix_fallocate of {} bytes", *create_bytes), std::int64_t{0});
    }
    sysio::FileStatus status;
    if (const int error = io.status(impl->fd, status)) throw_block_error(p, error, "fstat / BLKGETSIZE64", std::nullopt);
    if (!status.regular && !status.block_device)
      throw OSError(fmt::format("BlockDevice: '{}' is neither a regular file nor a block device", p), ENOTBLK, p,
                    std::nullopt);
    const std::int64_t bytes = status.bytes;
    impl->capacity_bytes = bytes / kBlock * kBlock;
    if (const int error = io.ring_create(queue_depth, impl->ring))
      throw_block_error(p, error, fmt::format("io_uring_queue_init({})", queue_depth), std::nullopt);
    const std::int64_t blocks = impl->capacity_bytes / kBlock;
    if (blocks > 0) impl->free_extents.emplace(0, blocks);
    if (checksums) {
      impl->block_sums.assign(static_cast<std::size_t>(blocks), 0);
      impl->block_known.assign(static_cast<std::size_t>(blocks), 0);
    }
    return std::make_shared<BlockDevice>(std::move(impl));
  } catch (const std::bad_alloc&) {
    undo();
    throw MemoryError(fmt::format("BlockDevice: cannot allocate the device state for '{}'", p));
  } catch (...) {
    undo();
    throw;
  }
}

const std::filesystem::path& BlockDevice::path() const noexcept { return impl_->path; }
std::int64_t BlockDevice::capacity_bytes() const noexcept { return impl_->capacity_bytes; }
bool BlockDevice::checksums() const noexcept { return impl_->checksums; }

std::int64_t BlockDevice::free_bytes() const {
  std::lock_guard lock(impl_->free_mutex);
  std::int64_t blocks = 0;
  for (const auto& [first, count] : impl_->free_extents) blocks += count;
  return blocks * kBlock;
}

std::int64_t BlockDevice::largest_free_extent_bytes() const {
  std::lock_guard lock(impl_->free_mutex);
  std::int64_t blocks = 0;
  for (const auto& [first, count] : impl_->free_extents) blocks = std::max(blocks, count);
  return blocks * kBlock;
}

AlignedFloats BlockDevice::aligned_buffer(std::int64_t slots) {
  if (slots < 0) throw ValueError(fmt::format("BlockDevice.aligned_buffer: slots must be >= 0, got {}", slots));
  const std::int64_t blocks = std::max<std::int64_t>(1, (slots + slots_per_block - 1) / slots_per_block);
  if (blocks > std::numeric_limits<std::int64_t>::max() / kBlock)
    throw ValueError(fmt::format("BlockDevice.aligned_buffer: {} slots overflow the addressable size", slots));
  const auto bytes = static_cast<std::size_t>(blocks * kBlock);
  void* p = std::aligned_alloc(static_cast<std::size_t>(kBlock), bytes);
  if (!p) throw MemoryError(fmt::format("BlockDevice: cannot allocate an aligned buffer of {} bytes", bytes));
  std::memset(p, 0, bytes);
  return AlignedFloats(static_cast<float*>(p));
}

// ---- the free list

std::optional<std::int64_t> BlockDevice::Impl::take_extent(std::int64_t blocks) {
  std::lock_guard lock(free_mutex);
  for (auto it = free_extents.begin(); it != free_extents.end(); ++it) {
    if (it->second < blocks) continue;  // first fit
    const std::int64_t first = it->first;
    const std::int64_t left = it->second - blocks;
    free_extents.erase(it);
    if (left > 0) free_extents.emplace(first + blocks, left);
    return first;
  }
  return std::nullopt;
}

void BlockDevice::Impl::give_back(std::int64_t first_block, std::int64_t blocks) noexcept {
  if (blocks <= 0) return;
  std::lock_guard lock(free_mutex);
  std::int64_t first = first_block;
  std::int64_t count = blocks;
  auto next = free_extents.lower_bound(first);
  if (next != free_extents.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == first) {
      first = previous->first;
      count += previous->second;
      free_extents.erase(previous);
    }
  }
  if (next != free_extents.end() && next->first == first_block + blocks) {
    count += next->second;
    free_extents.erase(next);
  }
  free_extents.emplace(first, count);
}

// ---- the shared submission queue

void BlockDevice::Impl::start(const std::shared_ptr<State>& state) {
  std::lock_guard lock(ring_mutex);
  state->next_offset = state->offset;
  state->submitting = state->bytes > 0;
  if (!state->submitting) {
    finish(*state);
    return;
  }
  submit_more(state);
  if (state->submitting && std::find(waiting_submission.begin(), waiting_submission.end(), state) ==
                               waiting_submission.end())
    waiting_submission.push_back(state);
}

void BlockDevice::Impl::submit_more(const std::shared_ptr<State>& state) {
  std::vector<sysio::RingRequest> batch;
  while (state->submitting && in_ring + batch.size() < queue_depth) {
    const std::int64_t end = state->offset + state->bytes;
    const auto bytes = static_cast<std::uint32_t>(std::min(request_bytes, end - state->next_offset));
    sysio::RingRequest r;
    r.write = state->write;
    r.fd = fd;
    r.buffer = state->buffer + (state->next_offset - state->offset);
    r.bytes = bytes;
    r.offset = state->next_offset;
    r.tag = next_tag++;
    batch.push_back(r);
    state->next_offset += bytes;
    if (state->next_offset == end) state->submitting = false;
  }
  if (batch.empty()) return;
  if (const int error = sysio::system_io().submit(ring, batch)) {
    // None of the batch is in flight.
    state->submitting = false;
    fail(*state, error, batch.front().offset,
         fmt::format("io_uring_submit of a {} of {} bytes", state->write ? "write" : "read", batch.front().bytes));
    maybe_finish(*state);
    return;
  }
  for (const sysio::RingRequest& r : batch) {
    pending.emplace(r.tag, Pending{state, r.offset, r.bytes});
    ++in_ring;
    ++state->outstanding;
  }
}

bool BlockDevice::Impl::reap_one(bool block) {
  sysio::RingCompletion c;
  if (const int error = sysio::system_io().reap(ring, block, c)) {
    if (error == EAGAIN) return false;
    // The completion queue cannot be read: every transfer in flight fails.
    // Their requests stay in the table (with their buffers) until the kernel
    // completes them and a later reap takes them.
    for (auto& [tag, p] : pending)
      if (!p.state->finished) {
        fail(*p.state, error, p.offset, "io_uring_wait_cqe");
        p.state->submitting = false;
        finish(*p.state);
      }
    return true;
  }
  if (in_ring > 0) --in_ring;
  auto it = pending.find(c.tag);
  if (it == pending.end()) return true;
  Pending p = std::move(it->second);
  pending.erase(it);
  State& s = *p.state;
  if (!s.finished) {
    --s.outstanding;
    if (c.result < 0) {
      fail(s, static_cast<int>(-c.result), p.offset,
           fmt::format("{} of {} bytes", s.write ? "write" : "read", p.bytes));
    } else if (c.result != static_cast<std::int64_t>(p.bytes)) {
      fail(s, EIO, p.offset,
           fmt::format("short {}: {} of {} bytes", s.write ? "write" : "read", c.result, p.bytes));
    }
    if (s.error) s.submitting = false;
    maybe_finish(s);
  }
  // Requests waiting for room in the queue.
  for (std::size_t i = 0; i < waiting_submission.size() && in_ring < queue_depth;) {
    std::shared_ptr<State> w = waiting_submission[i];
    if (w->submitting && !w->finished) submit_more(w);
    if (!w->submitting || w->finished)
      waiting_submission.erase(waiting_submission.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
  return true;
}

void BlockDevice::Impl::fail(State& state, int error, std::int64_t offset, std::string detail) {
  if (state.error) return;  // the first failure is the one reported
  state.error = error;
  state.error_offset = offset;
  state.error_detail = std::move(detail);
}

void BlockDevice::Impl::maybe_finish(State& state) {
  if (!state.finished && state.outstanding == 0 && !state.submitting) finish(state);
}

void BlockDevice::Impl::finish(State& state) {
  state.finished = true;
  const std::int64_t first_block = state.offset / kBlock;
  const std::int64_t blocks = state.bytes / kBlock;
  if (state.error) {
    if (state.write && checksums) forget_sums(state.offset, state.bytes);
    try {
      throw_block_error(path_string, state.error, fmt::format("{}: {}", state.what, state.error_detail),
                        state.error_offset);
    } catch (...) {
      state.failure = std::current_exception();
    }
    return;
  }
  if (checksums) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const auto index = static_cast<std::size_t>(first_block + b);
      const std::uint64_t sum = block_hash(state.buffer + b * kBlock);
      if (state.write) {
        block_sums[index] = sum;
        block_known[index] = 1;
      } else if (block_known[index] && block_sums[index] != sum) {
        const std::int64_t at = (first_block + b) * kBlock;
        state.failure = std::make_exception_ptr(OSError(
            fmt::format("BlockDevice: {}: xxHash checksum mismatch in the {}-byte block at byte offset {} of '{}': "
                        "the image changed behind the device",
                        state.what, kBlock, at, path_string),
            EBADMSG, path_string, at));
        return;
      }
    }
  }
  if (state.on_success) {
    try {
      state.on_success();
    } catch (...) {
      state.failure = std::current_exception();
    }
  }
}

void BlockDevice::Impl::forget_sums(std::int64_t offset, std::int64_t bytes) {
  if (!checksums) return;
  for (std::int64_t b = offset / kBlock; b < (offset + bytes) / kBlock; ++b) block_known[static_cast<std::size_t>(b)] = 0;
}

void BlockDevice::Impl::drive(State& state, bool block) {
  std::lock_guard lock(ring_mutex);
  if (block) {
    while (!state.finished) {
      if (state.outstanding == 0 && state.submitting) {
        // Waiting for room that other transfers hold: reap one of theirs.
        if (in_ring == 0) {
          for (const auto& w : waiting_submission)
            if (w.get() == &state) submit_more(w);
          continue;
        }
      }
      reap_one(true);
    }
  } else {
    while (!state.finished && reap_one(false)) {
    }
  }
}

void BlockDevice::Impl::settle(State& state) {
  std::lock_guard lock(ring_mutex);
  const auto in_flight = [&] {
    for (const auto& [tag, p] : pending)
      if (p.state.get() == &state) return true;
    return false;
  };
  // Each round reaps one completion; a reap that fails again gives up (the
  // requests are then still the kernel's).
  for (std::size_t rounds = 0; in_flight() && rounds <= queue_depth; ++rounds) {
    reap_one(true);
  }
}

void BlockDevice::Impl::run(const std::shared_ptr<State>& state) {
  start(state);
  drive(*state, true);
  if (state->failure) std::rethrow_exception(state->failure);
}

// ---- completions

bool BlockIoCompletion::done() const {
  state_->device->impl().drive(*state_, false);
  std::lock_guard lock(state_->device->impl().ring_mutex);
  return state_->finished;
}

void BlockIoCompletion::wait() const {
  state_->device->impl().drive(*state_, true);
  std::lock_guard lock(state_->device->impl().ring_mutex);
  if (state_->failure) std::rethrow_exception(state_->failure);
}

}  // namespace strideweave
