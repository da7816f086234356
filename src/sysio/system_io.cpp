// The system's SystemIo: each method is the system or liburing call its
// header names, under the header's one EINTR rule. See src/sysio/system_io.h.
#include "sysio/system_io.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strideweave::sysio {

struct Ring {
  io_uring ring{};
};

namespace {

// The EINTR rule for calls that report through errno and return -1: retried
// until the call did something or failed for another reason.
template <class Call>
auto retrying(Call&& call) {
  for (;;) {
    const auto result = call();
    if (result != -1 || errno != EINTR) return result;
  }
}

// 0 or errno for a call that returns 0 / -1.
template <class Call>
int checked(Call&& call) {
  return retrying(call) == 0 ? 0 : errno;
}

}  // namespace

// ---- descriptors

int SystemIo::open(const std::string& path, int flags, unsigned mode, int& fd) noexcept {
  const int opened = retrying([&] { return ::open(path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode)); });
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int SystemIo::close(int fd) noexcept { return ::close(fd) == 0 ? 0 : errno; }  // never retried

int SystemIo::status(int fd, FileStatus& out) noexcept {
  struct stat st {};
  if (checked([&] { return ::fstat(fd, &st); }) != 0) return errno;
  FileStatus s;
  s.regular = S_ISREG(st.st_mode);
  s.block_device = S_ISBLK(st.st_mode);
  s.bytes = static_cast<std::int64_t>(st.st_size);
  if (s.block_device) {
    std::uint64_t size = 0;
    if (checked([&] { return ::ioctl(fd, BLKGETSIZE64, &size); }) != 0) return errno;
    s.bytes = static_cast<std::int64_t>(size);
  }
  out = s;
  return 0;
}

int SystemIo::reserve(int fd, std::int64_t bytes) noexcept {
  if (bytes == 0) return 0;
  // posix_fallocate returns the error number rather than setting errno.
  for (;;) {
    const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (error != EINTR) return error;
  }
}

int SystemIo::truncate(int fd, std::int64_t bytes) noexcept {
  return checked([&] { return ::ftruncate(fd, static_cast<off_t>(bytes)); });
}

int SystemIo::lock(int fd) noexcept { return checked([&] { return ::flock(fd, LOCK_EX | LOCK_NB); }); }

int SystemIo::read_at(int fd, void* buffer, std::size_t bytes, std::int64_t offset, std::size_t& done) noexcept {
  const ssize_t n = retrying([&] { return ::pread(fd, buffer, bytes, static_cast<off_t>(offset)); });
  if (n < 0) return errno;
  done = static_cast<std::size_t>(n);
  return 0;
}

int SystemIo::write_at(int fd, const void* buffer, std::size_t bytes, std::int64_t offset,
                       std::size_t& done) noexcept {
  const ssize_t n = retrying([&] { return ::pwrite(fd, buffer, bytes, static_cast<off_t>(offset)); });
  if (n < 0) return errno;
  done = static_cast<std::size_t>(n);
  return 0;
}

int SystemIo::write(int fd, const void* buffer, std::size_t bytes, std::size_t& done) noexcept {
  const ssize_t n = retrying([&] { return ::write(fd, buffer, bytes); });
  if (n < 0) return errno;
  done = static_cast<std::size_t>(n);
  return 0;
}

int SystemIo::sync(int fd) noexcept { return checked([&] { return ::fsync(fd); }); }

// ---- names

int SystemIo::remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

int SystemIo::rename(const std::string& from, const std::string& to) noexcept {
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int SystemIo::make_private_directory(std::string& path_template) noexcept {
  return ::mkdtemp(path_template.data()) ? 0 : errno;
}

int SystemIo::remove_directory(const std::string& path) noexcept { return ::rmdir(path.c_str()) == 0 ? 0 : errno; }

// ---- mappings

int SystemIo::map(int fd, std::int64_t offset, std::size_t bytes, bool writable, void*& address) noexcept {
  void* p = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) return errno;
  address = p;
  return 0;
}

int SystemIo::unmap(void* address, std::size_t bytes) noexcept { return ::munmap(address, bytes) == 0 ? 0 : errno; }

int SystemIo::drop_pages(void* address, std::size_t bytes) noexcept {
  return ::madvise(address, bytes, MADV_DONTNEED) == 0 ? 0 : errno;
}

int SystemIo::sync_mapping(void* address, std::size_t bytes) noexcept {
  return checked([&] { return ::msync(address, bytes, MS_SYNC); });
}

// ---- io_uring

namespace {
// The ring-teardown order (system_io.h, "Rings"): a release before a ring's
// queues are unmapped and an acquire after the next ring's are mapped. That
// is one atomic operation per ring, which is not measurable beside a move.
std::atomic<std::uint64_t> rings_destroyed{0};
}  // namespace

int SystemIo::ring_create(unsigned entries, Ring*& ring) noexcept {
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

void SystemIo::ring_destroy(Ring* ring) noexcept {
  if (!ring) return;
  rings_destroyed.fetch_add(1, std::memory_order_acq_rel);  // before the queues are unmapped
  io_uring_queue_exit(&ring->ring);
  delete ring;
}

int SystemIo::submit(Ring* ring, std::span<const RingRequest> requests) noexcept {
  if (requests.empty()) return 0;
  if (io_uring_sq_space_left(&ring->ring) < requests.size()) return EBUSY;
  for (const RingRequest& r : requests) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring->ring);
    if (r.write)
      io_uring_prep_write(sqe, r.fd, r.buffer, r.bytes, static_cast<__u64>(r.offset));
    else
      io_uring_prep_read(sqe, r.fd, r.buffer, r.bytes, static_cast<__u64>(r.offset));
    io_uring_sqe_set_data64(sqe, r.tag);
  }
  // A partial submission leaves entries queued; the next submit takes them.
  std::size_t submitted = 0;
  while (submitted < requests.size()) {
    const int more = io_uring_submit(&ring->ring);
    if (more < 0) {
      if (more == -EINTR) continue;
      return -more;
    }
    submitted += static_cast<std::size_t>(more);
  }
  return 0;
}

int SystemIo::reap(Ring* ring, bool block, RingCompletion& out) noexcept {
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

// ---- the replaceable instance

namespace {
SystemIo& system_instance() {
  static SystemIo* io = new SystemIo();  // lives for the program (carriers may outlive statics)
  return *io;
}
std::atomic<SystemIo*> current{nullptr};
}  // namespace

SystemIo& system_io() noexcept {
  SystemIo* io = current.load(std::memory_order_acquire);
  return io ? *io : system_instance();
}

ScopedSystemIo::ScopedSystemIo(SystemIo& replacement) noexcept
    : previous_(current.exchange(&replacement, std::memory_order_acq_rel)) {}

ScopedSystemIo::~ScopedSystemIo() { current.store(previous_, std::memory_order_release); }

}  // namespace strideweave::sysio
