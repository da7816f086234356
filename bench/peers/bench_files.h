// Helpers shared by bench/run's storage programs (bench_storage.cpp,
// bench_out_of_core.cpp): a monotonic timer, and dropping a file's clean
// pages from the page cache so that the next buffered read comes from disk.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace bench_files {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// fsync + POSIX_FADV_DONTNEED: the file's clean pages leave the page cache.
inline void drop_cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(fmt::format("open {} failed", path));
  ::fsync(fd);
  const int error = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (error != 0) throw std::runtime_error(fmt::format("posix_fadvise {} failed: {}", path, error));
}

}  // namespace bench_files
