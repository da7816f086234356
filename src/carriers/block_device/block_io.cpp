// The system's BlockIo: each method is the system or liburing call its
// header names. See src/carriers/block_device/block_io.h.
#include "carriers/block_device/block_io.h"

#include <atomic>
#include <cerrno>
#include <cstdint>

#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strideweave::carriers::block_device {

struct Ring {
  io_uring ring{};
};

int BlockIo::open_image(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int BlockIo::create_image(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int BlockIo::reserve(int fd, std::int64_t bytes) noexcept {
  return bytes == 0 ? 0 : ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
}

int BlockIo::image_size(int fd, std::int64_t& bytes) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  if (S_ISREG(st.st_mode)) {
    bytes = static_cast<std::int64_t>(st.st_size);
    return 0;
  }
  if (S_ISBLK(st.st_mode)) {
    std::uint64_t size = 0;
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return errno;
    bytes = static_cast<std::int64_t>(size);
    return 0;
  }
  return ENOTBLK;
}

int BlockIo::lock(int fd) noexcept { return ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno; }

int BlockIo::close(int fd) noexcept { return ::close(fd) == 0 ? 0 : errno; }

int BlockIo::remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

namespace {
// Orders every use of a destroyed ring before the creation of the next one
// (as src/carriers/file_backed/file_io.cpp does for its rings): liburing
// maps and unmaps the queues with raw system calls that ThreadSanitizer
// does not see, so a device's ring mapped where another device's ring was,
// last used on another thread, would look like a race with it.
std::atomic<std::uint64_t> rings_destroyed{0};
}  // namespace

int BlockIo::ring_create(unsigned entries, Ring*& ring) noexcept {
  auto* r = new (std::nothrow) Ring;
  if (!r) return ENOMEM;
  if (const int error = io_uring_queue_init(entries, &r->ring, 0); error < 0) {
    delete r;
    return -error;
  }
  (void)rings_destroyed.load(std::memory_order_acquire);
  ring = r;
  return 0;
}

void BlockIo::ring_destroy(Ring* ring) noexcept {
  if (!ring) return;
  rings_destroyed.fetch_add(1, std::memory_order_acq_rel);  // before the queues are unmapped
  io_uring_queue_exit(&ring->ring);
  delete ring;
}

int BlockIo::submit(Ring* ring, std::span<const BlockRequest> requests) noexcept {
  if (requests.empty()) return 0;
  if (io_uring_sq_space_left(&ring->ring) < requests.size()) return EBUSY;
  for (const BlockRequest& r : requests) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring->ring);
    if (r.write)
      io_uring_prep_write(sqe, r.fd, r.buffer, r.bytes, static_cast<__u64>(r.offset));
    else
      io_uring_prep_read(sqe, r.fd, r.buffer, r.bytes, static_cast<__u64>(r.offset));
    io_uring_sqe_set_data64(sqe, r.tag);
  }
  int submitted = io_uring_submit(&ring->ring);
  if (submitted < 0) return -submitted;
  // A partial submission leaves entries queued; the next submit takes them.
  while (static_cast<std::size_t>(submitted) < requests.size()) {
    const int more = io_uring_submit(&ring->ring);
    if (more < 0) return -more;
    submitted += more;
  }
  return 0;
}

int BlockIo::reap(Ring* ring, bool block, BlockCompletion& out) noexcept {
  io_uring_cqe* cqe = nullptr;
  int error = 0;
  do {
    error = block ? io_uring_wait_cqe(&ring->ring, &cqe) : io_uring_peek_cqe(&ring->ring, &cqe);
  } while (error == -EINTR);
  if (error < 0) return -error;
  out.tag = io_uring_cqe_get_data64(cqe);
  out.result = cqe->res;
  io_uring_cqe_seen(&ring->ring, cqe);
  return 0;
}

namespace {
BlockIo& system_io() {
  static BlockIo* io = new BlockIo();  // lives for the program (devices may outlive statics)
  return *io;
}
std::atomic<BlockIo*> current{nullptr};
}  // namespace

BlockIo& block_io() noexcept {
  BlockIo* io = current.load(std::memory_order_acquire);
  return io ? *io : system_io();
}

ScopedBlockIo::ScopedBlockIo(BlockIo& replacement) noexcept
    : previous_(current.exchange(&replacement, std::memory_order_acq_rel)) {}

ScopedBlockIo::~ScopedBlockIo() { current.store(previous_, std::memory_order_release); }

}  // namespace strideweave::carriers::block_device
