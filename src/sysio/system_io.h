// Internal: the one seam between strideweave and the operating system's I/O
// (docs/storage.md, "One I/O interface"). FileBacked, BlockDevice and the
// file formats make every system call and every io_uring call through
// SystemIo. A test replaces it (ScopedSystemIo) and makes any call fail as
// the kernel would: EIO, ENOSPC, EEXIST, EINVAL for a file system without
// O_DIRECT, a short read or write. There is one fault-injection interface
// for all three: a test derives from SystemIo and overrides the calls it
// fails.
//
// The rules, written once here and nowhere else:
//  - Results. Each method returns 0 on success or the errno value of the
//    failure. It writes its out-parameters only on success. The methods do
//    not log or throw. Turning a failure into an OSError that names the file
//    and the offset is the caller's job, and so is undoing what it had done
//    before the failure.
//  - EINTR. A call a signal interrupted before it did anything is retried
//    here, so no caller ever sees EINTR: open, fstat, fallocate, ftruncate,
//    flock, pread, pwrite, write, fsync, msync, io_uring_submit and
//    io_uring_wait_cqe. close(2) is the exception and is never retried. On
//    Linux the descriptor is released even when close reports EINTR, and
//    closing it again could close a descriptor another thread has just
//    opened. Short transfers are not retried here; the caller continues
//    them from where they stopped.
//  - Rings. ring_create and ring_destroy order every use of a destroyed ring
//    before the next ring's creation. The kernel already does this, but
//    liburing maps and unmaps the queues with raw system calls that
//    ThreadSanitizer cannot see. When the queue lacks room for a batch,
//    submit returns EBUSY before it prepares anything. io_uring_submit
//    itself can still fail after the batch was prepared (a full completion
//    queue, EAGAIN); its entries then stay queued, and some may already be
//    in flight. A caller must not assume none is.
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace strideweave::sysio {

// What fstat(2) says of a descriptor. For a block device, `bytes` is the
// device's size from the BLKGETSIZE64 ioctl(2).
struct FileStatus {
  std::int64_t bytes = 0;
  bool regular = false;
  bool block_device = false;
};

// One read or write submitted to a ring. With O_DIRECT, `buffer`, `bytes`
// and `offset` are multiples of the device's alignment.
struct RingRequest {
  bool write = false;
  int fd = -1;
  void* buffer = nullptr;
  std::uint32_t bytes = 0;
  std::int64_t offset = 0;
  std::uint64_t tag = 0;  // returned with its completion
};

// One finished request. `result` is the number of bytes transferred (fewer
// than requested is a short transfer) or -errno.
struct RingCompletion {
  std::uint64_t tag = 0;
  std::int64_t result = 0;
};

// An io_uring instance (opaque outside system_io.cpp).
struct Ring;

class STRIDEWEAVE_TEST_API SystemIo {
 public:
  virtual ~SystemIo() = default;

  // ---- descriptors
  // open(2) with `flags` (O_CLOEXEC is always added) and `mode` (used with
  // O_CREAT). EEXIST for O_CREAT | O_EXCL on an existing name, in which case
  // nothing is created or opened. EINVAL for O_DIRECT on a file system
  // without direct I/O, such as tmpfs.
  virtual int open(const std::string& path, int flags, unsigned mode, int& fd) noexcept;
  // close(2). Never retried (see EINTR above). A failed close has still
  // closed the descriptor.
  virtual int close(int fd) noexcept;
  // fstat(2), plus BLKGETSIZE64 for a block device.
  virtual int status(int fd, FileStatus& out) noexcept;
  // posix_fallocate(3) of [0, bytes). The blocks are reserved and read as
  // zero, so a full disk is ENOSPC here and never a SIGBUS at a later store
  // through a mapping. Nothing happens for 0 bytes.
  virtual int reserve(int fd, std::int64_t bytes) noexcept;
  // ftruncate(2).
  virtual int truncate(int fd, std::int64_t bytes) noexcept;
  // flock(2) LOCK_EX | LOCK_NB. EWOULDBLOCK when another holder has it, in
  // this process or another.
  virtual int lock(int fd) noexcept;
  // pread(2) of at most `bytes` at `offset`. `done` may be short, and is 0
  // at the end of the file.
  virtual int read_at(int fd, void* buffer, std::size_t bytes, std::int64_t offset, std::size_t& done) noexcept;
  // pwrite(2) of at most `bytes` at `offset`. `done` may be short.
  virtual int write_at(int fd, const void* buffer, std::size_t bytes, std::int64_t offset,
                       std::size_t& done) noexcept;
  // write(2) of at most `bytes` at the descriptor's position. `done` may be
  // short.
  virtual int write(int fd, const void* buffer, std::size_t bytes, std::size_t& done) noexcept;
  // fsync(2) of a file or a directory.
  virtual int sync(int fd) noexcept;

  // ---- names
  // unlink(2).
  virtual int remove_file(const std::string& path) noexcept;
  // rename(2): atomically replaces `to`.
  virtual int rename(const std::string& from, const std::string& to) noexcept;
  // mkdtemp(3): creates a fresh directory with mode 0700 from
  // `path_template`, whose trailing XXXXXX is replaced in place.
  virtual int make_private_directory(std::string& path_template) noexcept;
  // rmdir(2).
  virtual int remove_directory(const std::string& path) noexcept;

  // ---- mappings
  // mmap(2) MAP_SHARED of `bytes` from file offset `offset` (a page
  // multiple), read-only or read-write.
  virtual int map(int fd, std::int64_t offset, std::size_t bytes, bool writable, void*& address) noexcept;
  // munmap(2).
  virtual int unmap(void* address, std::size_t bytes) noexcept;
  // madvise(2) MADV_DONTNEED. The range's pages leave this process's
  // resident set; a shared file mapping keeps their contents in the file.
  virtual int drop_pages(void* address, std::size_t bytes) noexcept;
  // msync(2) MS_SYNC. Write-back errors of the range surface here.
  virtual int sync_mapping(void* address, std::size_t bytes) noexcept;

  // ---- io_uring
  // io_uring_queue_init(entries). ENOSYS or EPERM when the kernel or a
  // sandbox refuses io_uring.
  virtual int ring_create(unsigned entries, Ring*& ring) noexcept;
  // io_uring_queue_exit. Nothing happens for a null ring.
  virtual void ring_destroy(Ring* ring) noexcept;
  // Calls io_uring_get_sqe and prepares a read or write for each request,
  // then calls io_uring_submit until all are in flight. EBUSY when the queue
  // lacks room for them all; nothing is prepared then. Any other error comes
  // from io_uring_submit after the batch was prepared (see "Rings" above).
  virtual int submit(Ring* ring, std::span<const RingRequest> requests) noexcept;
  // One completion, then io_uring_cqe_seen. With `block`, io_uring_wait_cqe
  // waits until one is ready. Without it, io_uring_peek_cqe returns EAGAIN
  // when none is.
  virtual int reap(Ring* ring, bool block, RingCompletion& out) noexcept;
};

// The SystemIo in use: the system's, unless a ScopedSystemIo replaced it.
STRIDEWEAVE_TEST_API SystemIo& system_io() noexcept;

// Replaces the process's SystemIo for the guard's life. For tests only: it
// is not thread-safe against I/O that is already running. Guards nest.
class STRIDEWEAVE_TEST_API ScopedSystemIo {
 public:
  explicit ScopedSystemIo(SystemIo& replacement) noexcept;
  ~ScopedSystemIo();
  ScopedSystemIo(const ScopedSystemIo&) = delete;
  ScopedSystemIo& operator=(const ScopedSystemIo&) = delete;

 private:
  SystemIo* previous_;
};

}  // namespace strideweave::sysio
