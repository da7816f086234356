// Internal: the one interface through which the format code (src/formats/)
// reaches the file system (docs/storage.md, "File formats", "Faults").
//
// Every system call the .npy and safetensors loaders and savers make goes
// through FormatIo, so that a test can replace it (ScopedFormatIo) and make
// any call fail as the kernel would (EIO, ENOSPC, ...) or return short.
// Each method is one system call and returns 0 on success or the errno of
// the failure; results go through out-parameters only on success. Turning a
// failure into an OSError naming the file and offset, retrying short reads
// and writes, and undoing (removing a temporary file) is the caller's job.
// (FileBacked's own calls, made when a loader maps a file, go through
// FileBacked's interface, src/carriers/file_backed/file_io.h.)
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace strideweave::formats {

class STRIDEWEAVE_TEST_API FormatIo {
 public:
  virtual ~FormatIo() = default;

  // open(2) O_RDONLY | O_CLOEXEC of an existing file.
  virtual int open_read(const std::string& path, int& fd) noexcept;
  // fstat(2): the size in bytes; EISDIR-like refusals are the caller's.
  virtual int file_size(int fd, std::int64_t& bytes, bool& regular) noexcept;
  // pread(2) of up to `count` bytes at `offset`: `got` may be short (0 at
  // the end of the file).
  virtual int read_at(int fd, void* buffer, std::size_t count, std::int64_t offset, std::size_t& got) noexcept;
  // open(2) O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode 0666
  // (less the umask): EEXIST when the name exists.
  virtual int create_exclusive(const std::string& path, int& fd) noexcept;
  // write(2) of up to `count` bytes: `written` may be short.
  virtual int write(int fd, const void* buffer, std::size_t count, std::size_t& written) noexcept;
  // fsync(2) of a file or a directory.
  virtual int sync(int fd) noexcept;
  // close(2).
  virtual int close(int fd) noexcept;
  // rename(2): atomically replaces `to`.
  virtual int rename(const std::string& from, const std::string& to) noexcept;
  // open(2) O_RDONLY | O_DIRECTORY | O_CLOEXEC (to fsync the directory).
  virtual int open_directory(const std::string& path, int& fd) noexcept;
  // unlink(2).
  virtual int remove_file(const std::string& path) noexcept;
};

// The FormatIo in use (the system's unless a ScopedFormatIo replaced it).
STRIDEWEAVE_TEST_API FormatIo& format_io() noexcept;

// Replaces the process's FormatIo for the guard's life (tests; not
// thread-safe against format calls running concurrently). Guards nest.
class STRIDEWEAVE_TEST_API ScopedFormatIo {
 public:
  explicit ScopedFormatIo(FormatIo& replacement) noexcept;
  ~ScopedFormatIo();
  ScopedFormatIo(const ScopedFormatIo&) = delete;
  ScopedFormatIo& operator=(const ScopedFormatIo&) = delete;

 private:
  FormatIo* previous_;
};

}  // namespace strideweave::formats
