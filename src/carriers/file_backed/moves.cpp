// The bulk CPU <-> FileBacked move routes (file_backed.h; docs/storage.md,
// "Movement"): CPU -> FileBacked is one pwrite(2) per window; FileBacked ->
// CPU reads the page-aligned interior with O_DIRECT reads through io_uring,
// several in flight, straight into the CPU memory (buffered pread(2) for
// the unaligned head and tail, and for everything when the file system
// refuses O_DIRECT or the kernel refuses io_uring). The direct route is
// asynchronous: _copy submits the first reads and returns a pending
// completion that a reaper thread per move settles. Every call goes through
// the replaceable sysio::SystemIo; the destination's before-image is one bulk read.
#include <strideweave/carriers/file_backed.h>
#include <strideweave/completion.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sysio/system_io.h"

#include <fcntl.h>
#include "carriers/file_backed/moves.h"
#include "movement/host_image.h"
#include "movement/host_memory.h"

namespace strideweave {
namespace {


// The direct route's shape (docs/storage.md, "FileBacked -> CPU reads").
constexpr std::int64_t kDirectAlignment = 4096;        // buffer, offset and length of every O_DIRECT read
constexpr std::int64_t kDirectRequestBytes = 4 << 20;  // one read
constexpr unsigned kDirectDepth = 8;                   // reads in flight
constexpr std::int64_t kDirectMinimumBytes = 1 << 20;  // smaller aligned interiors read buffered

[[noreturn]] void throw_move_error(int error, const std::string& call, const std::string& file, std::int64_t offset) {
  throw OSError(fmt::format("move: {} failed for '{}' at byte offset {}: {}", call, file, offset,
                            std::strerror(error)),
                error, file, offset);
}

// An open descriptor of a FileBacked's file for the length of one transfer.
class OpenFile {
 public:
  OpenFile(const FileBacked& carrier, bool writable) : path_(carrier.path().string()) {
    if (const int error = sysio::system_io().open(path_, (writable) ? O_RDWR : O_RDONLY, 0, fd_))
      throw OSError(fmt::format("move: open failed for '{}': {}", path_, std::strerror(error)), error, path_,
                    std::nullopt);
  }
  ~OpenFile() {
    if (fd_ >= 0) sysio::system_io().close(fd_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  // Closes, reporting a failing close(2) (a deferred write-back error).
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (const int error = sysio::system_io().close(fd))
      throw OSError(fmt::format("move: close failed for '{}': {}", path_, std::strerror(error)), error, path_,
                    std::nullopt);
  }

  // Reads exactly `bytes` at `offset`, continuing short reads; the end of
  // the file first is EIO ("short read").
  void read_exactly(std::byte* to, std::int64_t bytes, std::int64_t offset) {
    sysio::SystemIo& io = sysio::system_io();
    while (bytes > 0) {
      std::size_t done = 0;
      if (const int error = io.read_at(fd_, to, static_cast<std::size_t>(bytes), offset, done))
        throw_move_error(error, fmt::format("pread of {} bytes", bytes), path_, offset);
      if (done == 0) throw_move_error(EIO, fmt::format("pread of {} bytes (short read: end of file)", bytes), path_, offset);
      to += done;
      offset += static_cast<std::int64_t>(done);
      bytes -= static_cast<std::int64_t>(done);
    }
  }
  // Writes exactly `bytes` at `offset`, continuing short writes; a write
  // that makes no progress is EIO ("short write").
  void write_exactly(const std::byte* from, std::int64_t bytes, std::int64_t offset) {
    sysio::SystemIo& io = sysio::system_io();
    while (bytes > 0) {
      std::size_t done = 0;
      if (const int error = io.write_at(fd_, from, static_cast<std::size_t>(bytes), offset, done))
        throw_move_error(error, fmt::format("pwrite of {} bytes", bytes), path_, offset);
      if (done == 0) throw_move_error(EIO, fmt::format("pwrite of {} bytes (short write: no progress)", bytes), path_, offset);
      from += done;
      offset += static_cast<std::int64_t>(done);
      bytes -= static_cast<std::int64_t>(done);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::byte* cpu_bytes(const Carrier& carrier) { return detail::host_memory_bytes(carrier); }

// Reports progress of a read whose parts finish out of order: whole windows
// as the finished prefix of the range (every byte before it read) passes
// them, the remainder at the end; so a failed window is never reported.
class WindowProgress {
 public:
  WindowProgress(MoveContext& context, std::int64_t element_count)
      : context_(context), eb_(context.element_bytes()), window_(context.window_elements()), total_(element_count) {}
  // Every byte before `prefix_bytes` (from the range's start) is read.
  void read_up_to(std::int64_t prefix_bytes) {
    const std::int64_t slots = prefix_bytes / eb_;
    const std::int64_t target = slots >= total_ ? total_ : (slots / window_) * window_;
    if (target > reported_) {
      const std::int64_t n = target - reported_;
      reported_ = target;
      context_.advance(n);
    }
  }

 private:
  MoveContext& context_;
  std::int64_t eb_, window_, total_;
  std::int64_t reported_ = 0;
};

// An O_DIRECT descriptor and an io_uring of kDirectDepth entries reading
// one range: start() submits the first kDirectDepth reads (on the caller's
// thread), complete() reaps them and keeps kDirectDepth in flight until the
// range is read (on the move's reaper thread). The destructor first waits
// for every read still in flight (so no read lands in the destination after
// a failed move rolled it back), then destroys the ring and closes the
// descriptor. Used by one thread at a time.
class DirectReads {
 public:
  DirectReads(std::string path, int fd, sysio::Ring* ring) : path_(std::move(path)), fd_(fd), ring_(ring) {}
  ~DirectReads() {
    sysio::SystemIo& io = sysio::system_io();
    sysio::RingCompletion c;
    while (in_flight_ > 0 && io.reap(ring_, true, c) == 0) --in_flight_;
    io.ring_destroy(ring_);
    io.close(fd_);
  }
  DirectReads(const DirectReads&) = delete;
  DirectReads& operator=(const DirectReads&) = delete;

  // Starts reading [offset, offset + bytes) of the file (both multiples of
  // kDirectAlignment) into `to`: straight into it when `to` is aligned to
  // kDirectAlignment, else through kDirectDepth aligned bounce buffers.
  // Submits the first kDirectDepth reads and returns.
  void start(std::byte* to, std::int64_t bytes, std::int64_t offset) {
    to_ = to;
    bytes_ = bytes;
    offset_ = offset;
    bounce_needed_ = reinterpret_cast<std::uintptr_t>(to) % static_cast<std::uintptr_t>(kDirectAlignment) != 0;
    if (bounce_needed_) {
      bounce_.reset(static_cast<std::byte*>(
          std::aligned_alloc(kDirectAlignment, static_cast<std::size_t>(kDirectRequestBytes) * kDirectDepth)));
      if (!bounce_) throw std::bad_alloc();
    }
    free_slots_.clear();
    for (unsigned k = kDirectDepth; k-- > 0;) free_slots_.push_back(k);
    requests_ = (bytes + kDirectRequestBytes - 1) / kDirectRequestBytes;
    next_ = 0;
    oldest_ = 0;
    finished_.assign(static_cast<std::size_t>(requests_), false);
    submit_up_to_depth();
  }

  // Completes the range start() began: reaps every read, submitting the
  // rest as reads finish. A short read's remainder is read with `in`
  // (buffered), where the end of the file is EIO. `progress` hears of the
  // read prefix as `prefix_before` + its bytes.
  void complete(OpenFile& in, WindowProgress& progress, std::int64_t prefix_before) {
    sysio::SystemIo& io = sysio::system_io();
    while (in_flight_ > 0) {
      sysio::RingCompletion c;
      if (const int error = io.reap(ring_, true, c))
        throw_move_error(error, "io_uring_wait_cqe of an O_DIRECT read", path_,
                         offset_ + oldest_ * kDirectRequestBytes);
      --in_flight_;
      const auto k = static_cast<std::int64_t>(c.tag / kDirectDepth);
      const auto slot = static_cast<unsigned>(c.tag % kDirectDepth);
      const sysio::RingRequest r = request(k, slot);
      if (c.result < 0)
        throw_move_error(static_cast<int>(-c.result), fmt::format("O_DIRECT read of {} bytes (io_uring)", r.bytes),
                         path_, r.offset);
      std::byte* destination = to_ + k * kDirectRequestBytes;
      const std::int64_t got = std::min<std::int64_t>(c.result, r.bytes);
      if (bounce_needed_) std::memcpy(destination, r.buffer, static_cast<std::size_t>(got));
      if (got < static_cast<std::int64_t>(r.bytes)) in.read_exactly(destination + got, r.bytes - got, r.offset + got);
      free_slots_.push_back(slot);
      finished_[static_cast<std::size_t>(k)] = true;
      while (oldest_ < requests_ && finished_[static_cast<std::size_t>(oldest_)]) ++oldest_;
      progress.read_up_to(prefix_before + std::min(bytes_, oldest_ * kDirectRequestBytes));
      submit_up_to_depth();
    }
  }

 private:
  // Request k (its tag: k * kDirectDepth + its bounce slot).
  sysio::RingRequest request(std::int64_t k, unsigned slot) const {
    sysio::RingRequest r;
    r.fd = fd_;
    r.buffer = bounce_needed_ ? bounce_.get() + static_cast<std::int64_t>(slot) * kDirectRequestBytes
                              : to_ + k * kDirectRequestBytes;
    r.bytes = static_cast<std::uint32_t>(std::min(kDirectRequestBytes, bytes_ - k * kDirectRequestBytes));
    r.offset = offset_ + k * kDirectRequestBytes;
    r.tag = static_cast<std::uint64_t>(k) * kDirectDepth + slot;
    return r;
  }
  void submit_up_to_depth() {
    std::vector<sysio::RingRequest> batch;
    while (next_ < requests_ && in_flight_ + batch.size() < kDirectDepth) {
      batch.push_back(request(next_++, free_slots_.back()));
      free_slots_.pop_back();
    }
    if (batch.empty()) return;
    if (const int error = sysio::system_io().submit(ring_, batch))
      throw_move_error(error, fmt::format("io_uring_submit of {} O_DIRECT read(s) of up to {} bytes", batch.size(),
                                          kDirectRequestBytes),
                       path_, batch.front().offset);
    in_flight_ += batch.size();
  }

  std::string path_;
  int fd_;
  sysio::Ring* ring_;
  std::size_t in_flight_ = 0;
  struct FreeBytes {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, FreeBytes> bounce_;
  // The range start() began.
  std::byte* to_ = nullptr;
  std::int64_t bytes_ = 0, offset_ = 0;
  bool bounce_needed_ = false;
  std::vector<unsigned> free_slots_;  // bounce buffers not in use
  std::int64_t requests_ = 0;
  std::int64_t next_ = 0;    // the next request to submit
  std::int64_t oldest_ = 0;  // the first unfinished request (for progress, and for naming a failing wait)
  std::vector<bool> finished_;
};

// The direct reader for `file`, or nullopt when the file system refuses
// O_DIRECT (EINVAL) or the kernel refuses io_uring (ENOSYS, EPERM): the
// caller then reads buffered. Any other failure is an OSError.
std::unique_ptr<DirectReads> open_direct_reads(const std::string& path) {
  sysio::SystemIo& io = sysio::system_io();
  int fd = -1;
  if (const int error = io.open(path, O_RDONLY | O_DIRECT, 0, fd)) {
    if (error == EINVAL) return nullptr;
    throw OSError(fmt::format("move: open (O_DIRECT) failed for '{}': {}", path, std::strerror(error)), error, path,
                  std::nullopt);
  }
  sysio::Ring* ring = nullptr;
  if (const int error = io.ring_create(kDirectDepth, ring)) {
    io.close(fd);
    if (error == ENOSYS || error == EPERM) return nullptr;
    throw OSError(fmt::format("move: io_uring_queue_init({}) failed for '{}': {}", kDirectDepth, path,
                              std::strerror(error)),
                  error, path, std::nullopt);
  }
  return std::make_unique<DirectReads>(path, fd, ring);
}

// One asynchronous direct move after move_async returned: its buffered
// descriptor, its direct reader, its progress, and what is left to read.
// Destroying it waits for the reads in flight and closes both descriptors.
struct DirectMove {
  DirectMove(std::unique_ptr<OpenFile> in_, std::unique_ptr<DirectReads> direct_, MoveContext& context,
             std::int64_t element_count)
      : in(std::move(in_)), direct(std::move(direct_)), progress(context, element_count) {}
  struct Range {
    std::byte* to = nullptr;
    std::int64_t bytes = 0;
    std::int64_t offset = 0;
  };
  std::unique_ptr<OpenFile> in;
  std::unique_ptr<DirectReads> direct;  // destroyed before `in` (declared after it)
  WindowProgress progress;
  std::int64_t head_bytes = 0;  // the head's bytes, read before the interior
  Range tail;                   // the unaligned tail, read buffered after it
  std::int64_t bytes = 0;       // the whole range
};

// The reaper of one direct move: completes the interior's reads, reads the
// tail, closes every descriptor, and only then settles the completion (so a
// failure reaches the framework's rollback with no read in flight and no
// call through SystemIo left). Runs on a thread of its own (on the caller's
// when no thread can be started).
extension::ProviderCompletion<void> complete_later(std::unique_ptr<DirectMove> job) {
  extension::ProviderPromise<void> promise;
  auto completion = promise.completion();
  // The reaper owns the move outright (a raw pointer passed to the thread):
  // its last step is the promise, nothing of the move outlives it.
  auto reap = [](extension::ProviderPromise<void> settle, DirectMove* raw) noexcept {
    std::unique_ptr<DirectMove> move(raw);
    std::exception_ptr error;
    try {
      move->direct->complete(*move->in, move->progress, move->head_bytes);
      move->direct.reset();  // closes the O_DIRECT descriptor and the ring
      move->in->read_exactly(move->tail.to, move->tail.bytes, move->tail.offset);
      move->progress.read_up_to(move->bytes);
      move->in->close();
    } catch (...) {
      error = std::current_exception();
    }
    move.reset();  // waits for reads still in flight, closes what is open
    try {
      if (error) {
        settle.set_exception(error);
      } else {
        settle.set_value();
      }
    } catch (...) {  // settled once, here only
    }
  };
  DirectMove* raw = job.release();
  try {
    std::thread(reap, promise, raw).detach();
  } catch (...) {  // no thread: complete it here
    reap(promise, raw);
  }
  return completion;
}

}  // namespace

// ---------------------------------------------------------------- CPU -> FileBacked

std::optional<CarrierClass> CpuToFileBackedMoveOperation::source_class() const { return detail::host_memory_class(); }
std::optional<CarrierClass> CpuToFileBackedMoveOperation::destination_class() const {
  return carrier_class<FileBacked>();
}

MoveSubmission CpuToFileBackedMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                   std::int64_t element_count, MoveContext& context) const {
  const auto& file = static_cast<const FileBacked&>(destination);
  const std::int64_t eb = context.element_bytes();
  const std::byte* from = cpu_bytes(*tensor.carrier()) + tensor.offset() * eb;
  OpenFile out(file, true);
  const std::int64_t window = context.window_elements();
  for (std::int64_t k = 0; k < element_count; k += window) {
    const std::int64_t n = std::min(window, element_count - k);
    out.write_exactly(from + k * eb, n * eb, file.slot_file_offset() + k * eb);
    context.advance(n);
  }
  out.close();
  return std::monostate{};
}

MoveRestore CpuToFileBackedMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                            MoveContext& context) const {
  auto& file = static_cast<FileBacked&>(destination);
  const std::int64_t bytes = element_count * context.element_bytes();
  auto image = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(bytes));
  {
    OpenFile in(file, false);
    in.read_exactly(image->data(), bytes, file.slot_file_offset());
    in.close();
  }
  return [&file, image, bytes] {
    OpenFile back(file, true);
    back.write_exactly(image->data(), bytes, file.slot_file_offset());
    back.close();
  };
}

// ---------------------------------------------------------------- FileBacked -> CPU

std::optional<CarrierClass> FileBackedToCpuMoveOperation::source_class() const { return carrier_class<FileBacked>(); }
std::optional<CarrierClass> FileBackedToCpuMoveOperation::destination_class() const { return detail::host_memory_class(); }

MoveSubmission FileBackedToCpuMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                   std::int64_t element_count, MoveContext& context) const {
  const auto& file = static_cast<const FileBacked&>(*tensor.carrier());
  const std::int64_t eb = context.element_bytes();
  std::byte* to = cpu_bytes(destination);
  auto in = std::make_unique<OpenFile>(file, false);
  const std::int64_t base = file.slot_file_offset() + tensor.offset() * eb;
  const std::int64_t bytes = element_count * eb;
  // The page-aligned interior [head, tail) of the file range is read with
  // O_DIRECT (into the CPU memory when it is aligned the same way, else
  // through bounce buffers).
  const std::int64_t head = std::min(base + bytes, (base + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment);
  const std::int64_t tail = std::max(head, (base + bytes) / kDirectAlignment * kDirectAlignment);
  std::unique_ptr<DirectReads> direct;
  if (tail - head >= kDirectMinimumBytes) {
    // The carrier's own writes may sit in dirty pages of its mapping that an
    // O_DIRECT read would not see: write them back first (msync).
    const_cast<FileBacked&>(file).flush();
    direct = open_direct_reads(file.path().string());
  }
  if (direct) {
    // The first reads are submitted, the head is read while they run, and
    // the move's reaper thread completes the rest (docs/storage.md,
    // "FileBacked -> CPU reads").
    auto job = std::make_unique<DirectMove>(std::move(in), std::move(direct), context, element_count);
    job->direct->start(to + (head - base), tail - head, head);
    job->in->read_exactly(to, head - base, base);
    job->progress.read_up_to(head - base);
    job->head_bytes = head - base;
    job->tail = {to + (tail - base), base + bytes - tail, tail};
    job->bytes = bytes;
    return complete_later(std::move(job));
  }
  const std::int64_t window = context.window_elements();
  for (std::int64_t k = 0; k < element_count; k += window) {
    const std::int64_t n = std::min(window, element_count - k);
    in->read_exactly(to + k * eb, n * eb, base + k * eb);
    context.advance(n);
  }
  in->close();
  return std::monostate{};
}

// The before-image of the CPU destination is sparse (movement/host_image.h):
// blocks that read as zero (a fresh destination's untouched pages) are
// recorded as such, only the others are copied; the restore writes back
// exactly the bytes that were there. (A full copy of a fresh multi-GiB
// destination costs as much as the read itself: docs/storage.md,
// "FileBacked -> CPU reads".)
MoveRestore FileBackedToCpuMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                            MoveContext& context) const {
  auto image = std::make_shared<detail::HostImage>(destination);
  image->capture(cpu_bytes(destination), 0, static_cast<std::size_t>(element_count * context.element_bytes()));
  return [image] { image->restore(); };
}

namespace carriers::file_backed {

void register_moves() {
  register_move_operation(detail::host_memory_class(), carrier_class<FileBacked>(),
                          std::make_shared<const CpuToFileBackedMoveOperation>());
  register_move_operation(carrier_class<FileBacked>(), detail::host_memory_class(),
                          std::make_shared<const FileBackedToCpuMoveOperation>());
}

}  // namespace carriers::file_backed
}  // namespace strideweave
