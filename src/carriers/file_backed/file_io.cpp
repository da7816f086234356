// The system's FileIo: each method is the one system call its header names.
// See src/carriers/file_backed/file_io.h.
#include "carriers/file_backed/file_io.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strideweave::carriers::file_backed {

struct ReadRing {
  io_uring ring{};
};

int FileIo::make_private_directory(std::string& path_template) noexcept {
  return ::mkdtemp(path_template.data()) ? 0 : errno;
}

int FileIo::remove_directory(const std::string& path) noexcept { return ::rmdir(path.c_str()) == 0 ? 0 : errno; }

int FileIo::create_exclusive(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int FileIo::open_existing(const std::string& path, bool writable, int& fd) noexcept {
  const int opened = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int FileIo::file_size(int fd, std::int64_t& bytes) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  bytes = static_cast<std::int64_t>(st.st_size);
  return 0;
}

int FileIo::reserve(int fd, std::int64_t bytes) noexcept {
  // posix_fallocate returns the error number rather than setting errno.
  return bytes == 0 ? 0 : ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
}

int FileIo::map(int fd, std::int64_t offset, std::size_t bytes, bool writable, void*& address) noexcept {
  void* p = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) return errno;
  address = p;
  return 0;
}

int FileIo::unmap(void* address, std::size_t bytes) noexcept { return ::munmap(address, bytes) == 0 ? 0 : errno; }

int FileIo::drop_pages(void* address, std::size_t bytes) noexcept {
  return ::madvise(address, bytes, MADV_DONTNEED) == 0 ? 0 : errno;
}

int FileIo::sync(void* address, std::size_t bytes) noexcept {
  return ::msync(address, bytes, MS_SYNC) == 0 ? 0 : errno;
}

int FileIo::close(int fd) noexcept { return ::close(fd) == 0 ? 0 : errno; }

int FileIo::read_at(int fd, void* buffer, std::size_t bytes, std::int64_t offset, std::size_t& done) noexcept {
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, bytes, static_cast<off_t>(offset));
    if (n >= 0) {
      done = static_cast<std::size_t>(n);
      return 0;
    }
    if (errno != EINTR) return errno;
  }
}

int FileIo::write_at(int fd, const void* buffer, std::size_t bytes, std::int64_t offset,
                     std::size_t& done) noexcept {
  for (;;) {
    const ssize_t n = ::pwrite(fd, buffer, bytes, static_cast<off_t>(offset));
    if (n >= 0) {
      done = static_cast<std::size_t>(n);
      return 0;
    }
    if (errno != EINTR) return errno;
  }
}

int FileIo::truncate(int fd, std::int64_t bytes) noexcept {
  return ::ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
}

int FileIo::remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

int FileIo::open_direct(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

namespace {
// Orders every use of a destroyed ring before the creation of the next
// ring. The kernel already does (the old queues are unmapped before a new
// ring can be mapped at their address), but liburing maps and unmaps with
// raw system calls that ThreadSanitizer does not see: when a move's ring is
// created where a finished reaper's ring was, the new ring's accesses would
// look like a race with the old ring's. A release before the unmap and an
// acquire after the map make that order visible to it (one atomic operation
// per ring, so nothing measurable beside a move).
std::atomic<std::uint64_t> rings_destroyed{0};
}  // namespace

int FileIo::ring_create(unsigned entries, ReadRing*& ring) noexcept {
  auto* r = new (std::nothrow) ReadRing;
  if (!r) return ENOMEM;
  if (const int error = io_uring_queue_init(entries, &r->ring, 0); error < 0) {
    delete r;
    return -error;
  }
  (void)rings_destroyed.load(std::memory_order_acquire);
  ring = r;
  return 0;
}

void FileIo::ring_destroy(ReadRing* ring) noexcept {
  if (!ring) return;
  rings_destroyed.fetch_add(1, std::memory_order_acq_rel);  // before the queues are unmapped
  io_uring_queue_exit(&ring->ring);
  delete ring;
}

int FileIo::submit_reads(ReadRing* ring, std::span<const DirectRead> requests) noexcept {
  if (requests.empty()) return 0;
  if (io_uring_sq_space_left(&ring->ring) < requests.size()) return EBUSY;
  for (const DirectRead& r : requests) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring->ring);
    io_uring_prep_read(sqe, r.fd, r.buffer, r.bytes, static_cast<__u64>(r.offset));
    io_uring_sqe_set_data64(sqe, r.tag);
  }
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

int FileIo::reap(ReadRing* ring, ReadCompletion& out) noexcept {
  io_uring_cqe* cqe = nullptr;
  int error = 0;
  do {
    error = io_uring_wait_cqe(&ring->ring, &cqe);
  } while (error == -EINTR);
  if (error < 0) return -error;
  out.tag = io_uring_cqe_get_data64(cqe);
  out.result = cqe->res;
  io_uring_cqe_seen(&ring->ring, cqe);
  return 0;
}

namespace {
FileIo& system_io() {
  static FileIo* io = new FileIo();  // lives for the program (carriers may outlive statics)
  return *io;
}
std::atomic<FileIo*> current{nullptr};
}  // namespace

FileIo& file_io() noexcept {
  FileIo* io = current.load(std::memory_order_acquire);
  return io ? *io : system_io();
}

ScopedFileIo::ScopedFileIo(FileIo& replacement) noexcept
    : previous_(current.exchange(&replacement, std::memory_order_acq_rel)) {}

ScopedFileIo::~ScopedFileIo() { current.store(previous_, std::memory_order_release); }

}  // namespace strideweave::carriers::file_backed
