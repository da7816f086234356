// The system's FormatIo: each method is the one system call its header
// names. See src/formats/format_io.h.
#include "formats/format_io.h"

#include <atomic>
#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strideweave::formats {

int FormatIo::open_read(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int FormatIo::file_size(int fd, std::int64_t& bytes, bool& regular) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  bytes = static_cast<std::int64_t>(st.st_size);
  regular = S_ISREG(st.st_mode);
  return 0;
}

int FormatIo::read_at(int fd, void* buffer, std::size_t count, std::int64_t offset, std::size_t& got) noexcept {
  const ssize_t n = ::pread(fd, buffer, count, static_cast<off_t>(offset));
  if (n < 0) return errno;
  got = static_cast<std::size_t>(n);
  return 0;
}

int FormatIo::create_exclusive(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int FormatIo::write(int fd, const void* buffer, std::size_t count, std::size_t& written) noexcept {
  const ssize_t n = ::write(fd, buffer, count);
  if (n < 0) return errno;
  written = static_cast<std::size_t>(n);
  return 0;
}

int FormatIo::sync(int fd) noexcept { return ::fsync(fd) == 0 ? 0 : errno; }

int FormatIo::close(int fd) noexcept { return ::close(fd) == 0 ? 0 : errno; }

int FormatIo::rename(const std::string& from, const std::string& to) noexcept {
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int FormatIo::open_directory(const std::string& path, int& fd) noexcept {
  const int opened = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (opened < 0) return errno;
  fd = opened;
  return 0;
}

int FormatIo::remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

namespace {
FormatIo& system_io() {
  static FormatIo* io = new FormatIo();  // lives for the program
  return *io;
}
std::atomic<FormatIo*> current{nullptr};
}  // namespace

FormatIo& format_io() noexcept {
  FormatIo* io = current.load(std::memory_order_acquire);
  return io ? *io : system_io();
}

ScopedFormatIo::ScopedFormatIo(FormatIo& replacement) noexcept
    : previous_(current.exchange(&replacement, std::memory_order_acq_rel)) {}

ScopedFormatIo::~ScopedFormatIo() { current.store(previous_, std::memory_order_release); }

}  // namespace strideweave::formats
