// Internal: the one interface through which FileBacked reaches the file
// system (docs/storage.md, "One I/O interface").
//
// Every system call FileBacked makes goes through FileIo, so that a test can
// replace it (ScopedFileIo) and make any call fail as the kernel would: EIO,
// ENOSPC, EEXIST, ENOMEM, ... Each method returns 0 on success or the errno
// value of the failure, and writes its result through its out-parameter only
// on success. The methods are thin: they do not retry, log or throw; turning
// a failure into an OSError naming the file and the offset is the caller's
// job (file_backed.cpp), as is undoing what it had done before the failure.
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace strideweave::carriers::file_backed {

// One O_DIRECT read submitted to a ring (the FileBacked -> CPU route,
// moves.cpp): `buffer`, `bytes` and `offset` are multiples of the direct
// I/O alignment.
struct DirectRead {
  int fd = -1;
  void* buffer = nullptr;
  std::uint32_t bytes = 0;
  std::int64_t offset = 0;
  std::uint64_t tag = 0;  // returned with its completion
};

// One finished read: `result` is the byte count read (fewer than asked is a
// short read) or -errno.
struct ReadCompletion {
  std::uint64_t tag = 0;
  std::int64_t result = 0;
};

// An io_uring instance (opaque outside file_io.cpp).
struct ReadRing;

class STRIDEWEAVE_TEST_API FileIo {
 public:
  virtual ~FileIo() = default;

  // mkdtemp(3): creates a fresh directory from `path_template` (ending in
  // XXXXXX, replaced in place) with mode 0700.
  virtual int make_private_directory(std::string& path_template) noexcept;
  // rmdir(2).
  virtual int remove_directory(const std::string& path) noexcept;
  // open(2) with O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW and mode
  // 0600: EEXIST when the name exists (nothing is opened or changed then).
  virtual int create_exclusive(const std::string& path, int& fd) noexcept;
  // open(2) of an existing file, O_RDONLY or O_RDWR, O_CLOEXEC.
  virtual int open_existing(const std::string& path, bool writable, int& fd) noexcept;
  // fstat(2): the file's size in bytes.
  virtual int file_size(int fd, std::int64_t& bytes) noexcept;
  // posix_fallocate(3) of [0, bytes): the file's blocks are reserved (so a
  // full disk is ENOSPC here, never a SIGBUS at a later store through the
  // mapping) and read as zero.
  virtual int reserve(int fd, std::int64_t bytes) noexcept;
  // mmap(2) of `bytes` from file offset `offset` (a page multiple),
  // MAP_SHARED, read-only or read-write.
  virtual int map(int fd, std::int64_t offset, std::size_t bytes, bool writable, void*& address) noexcept;
  // munmap(2).
  virtual int unmap(void* address, std::size_t bytes) noexcept;
  // madvise(2) MADV_DONTNEED: the range's pages leave this process's
  // resident set (a shared file mapping keeps their contents in the file).
  virtual int drop_pages(void* address, std::size_t bytes) noexcept;
  // msync(2) MS_SYNC: write-back errors of the range surface here.
  virtual int sync(void* address, std::size_t bytes) noexcept;
  // close(2).
  virtual int close(int fd) noexcept;
  // pread(2) of at most `bytes` at file `offset` into `buffer`: `done` is the
  // count read (0 at the end of the file; fewer than asked is a short read
  // the caller continues). Movement's bulk routes (moves.cpp).
  virtual int read_at(int fd, void* buffer, std::size_t bytes, std::int64_t offset, std::size_t& done) noexcept;
  // pwrite(2) of at most `bytes` from `buffer` at file `offset`: `done` is
  // the count written (fewer than asked is a short write).
  virtual int write_at(int fd, const void* buffer, std::size_t bytes, std::int64_t offset,
                       std::size_t& done) noexcept;
  // ftruncate(2): a failed move's rollback of an allocation.
  virtual int truncate(int fd, std::int64_t bytes) noexcept;
  // unlink(2).
  virtual int remove_file(const std::string& path) noexcept;

  // open(2) O_RDONLY | O_DIRECT | O_CLOEXEC: a second descriptor for
  // reads past the page cache. A file system without direct I/O (tmpfs)
  // answers EINVAL.
  virtual int open_direct(const std::string& path, int& fd) noexcept;
  // io_uring_queue_init(entries). ENOSYS / EPERM when the kernel or a
  // sandbox refuses io_uring.
  virtual int ring_create(unsigned entries, ReadRing*& ring) noexcept;
  // io_uring_queue_exit.
  virtual void ring_destroy(ReadRing* ring) noexcept;
  // io_uring_get_sqe + io_uring_prep_read per request, then io_uring_submit
  // until all are submitted. EBUSY when the queue lacks room for them all
  // (nothing is prepared then).
  virtual int submit_reads(ReadRing* ring, std::span<const DirectRead> requests) noexcept;
  // io_uring_wait_cqe (continuing EINTR) and io_uring_cqe_seen: one
  // completion, blocking until one is ready.
  virtual int reap(ReadRing* ring, ReadCompletion& out) noexcept;
};

// The FileIo in use (the system's unless a ScopedFileIo replaced it).
STRIDEWEAVE_TEST_API FileIo& file_io() noexcept;

// Replaces the process's FileIo for the guard's life (tests; not
// thread-safe against FileBacked calls running concurrently). Guards nest.
class STRIDEWEAVE_TEST_API ScopedFileIo {
 public:
  explicit ScopedFileIo(FileIo& replacement) noexcept;
  ~ScopedFileIo();
  ScopedFileIo(const ScopedFileIo&) = delete;
  ScopedFileIo& operator=(const ScopedFileIo&) = delete;

 private:
  FileIo* previous_;
};

}  // namespace strideweave::carriers::file_backed
