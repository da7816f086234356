// Internal: the one interface through which BlockDevice reaches the system
// (docs/storage.md, "BlockDeviceCarrier", "One I/O interface").
//
// Every system call and every io_uring call BlockDevice makes goes through
// BlockIo, so that a test can replace it (ScopedBlockIo) and make any call
// fail as the kernel would: EIO, ENOSPC, EINVAL (a file system without
// O_DIRECT), a short read or write. Each method returns 0 on success or the
// errno value of the failure and writes its out-parameters only on success.
// The methods are thin: they do not retry, log or throw; turning a failure
// into an OSError naming the image and the byte offset is the caller's job
// (block_device.cpp), as is undoing what it had done before the failure.
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace strideweave::carriers::block_device {

// One read or write of the image, as submitted to the ring.
struct BlockRequest {
  bool write = false;
  int fd = -1;
  void* buffer = nullptr;      // aligned to BlockDevice::block_bytes
  std::uint32_t bytes = 0;     // a multiple of BlockDevice::block_bytes
  std::int64_t offset = 0;     // byte offset in the image, block-aligned
  std::uint64_t tag = 0;       // returned with its completion
};

// One finished request: `result` is the byte count transferred (a short
// transfer is fewer than the request's bytes) or -errno.
struct BlockCompletion {
  std::uint64_t tag = 0;
  std::int64_t result = 0;
};

// An io_uring instance (opaque outside block_io.cpp).
struct Ring;

class STRIDEWEAVE_TEST_API BlockIo {
 public:
  virtual ~BlockIo() = default;

  // open(2) of an existing image, O_RDWR | O_DIRECT | O_CLOEXEC. A file
  // system without direct I/O (tmpfs) answers EINVAL.
  virtual int open_image(const std::string& path, int& fd) noexcept;
  // open(2) O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, mode 0600: a
  // fresh image (EEXIST when the name exists; nothing is touched then).
  virtual int create_image(const std::string& path, int& fd) noexcept;
  // posix_fallocate(3) of [0, bytes) of a fresh image (ENOSPC on a full disk).
  virtual int reserve(int fd, std::int64_t bytes) noexcept;
  // The image's size in bytes: fstat(2) for a regular file, the
  // BLKGETSIZE64 ioctl(2) for a block device; ENOTBLK for anything else.
  virtual int image_size(int fd, std::int64_t& bytes) noexcept;
  // flock(2) LOCK_EX | LOCK_NB: one BlockDevice per image (EWOULDBLOCK
  // when another holds it, in this process or another).
  virtual int lock(int fd) noexcept;
  // close(2).
  virtual int close(int fd) noexcept;
  // unlink(2) (undoing a creation that failed).
  virtual int remove_file(const std::string& path) noexcept;

  // io_uring_queue_init(entries).
  virtual int ring_create(unsigned entries, Ring*& ring) noexcept;
  // io_uring_queue_exit.
  virtual void ring_destroy(Ring* ring) noexcept;
  // io_uring_get_sqe + io_uring_prep_read/io_uring_prep_write per request,
  // then one io_uring_submit. All or none are submitted (EBUSY/EAGAIN/... on
  // failure; the prepared entries are then not in flight).
  virtual int submit(Ring* ring, std::span<const BlockRequest> requests) noexcept;
  // io_uring_wait_cqe (block) or io_uring_peek_cqe, then io_uring_cqe_seen:
  // one completion. EAGAIN when none is ready and `block` is false.
  virtual int reap(Ring* ring, bool block, BlockCompletion& out) noexcept;
};

// The BlockIo in use (the system's unless a ScopedBlockIo replaced it).
STRIDEWEAVE_TEST_API BlockIo& block_io() noexcept;

// Replaces the process's BlockIo for the guard's life (tests; not
// thread-safe against BlockDevice calls running concurrently). Guards nest.
class STRIDEWEAVE_TEST_API ScopedBlockIo {
 public:
  explicit ScopedBlockIo(BlockIo& replacement) noexcept;
  ~ScopedBlockIo();
  ScopedBlockIo(const ScopedBlockIo&) = delete;
  ScopedBlockIo& operator=(const ScopedBlockIo&) = delete;

 private:
  BlockIo* previous_;
};

}  // namespace strideweave::carriers::block_device
