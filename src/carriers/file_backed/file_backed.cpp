// FileBacked storage. See include/strideweave/carriers/file_backed.h and
// docs/storage.md; every system call goes through sysio::system_io() (src/sysio/system_io.h).
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <random>
#include <set>

#include <unistd.h>

#include "sysio/system_io.h"

#include <fcntl.h>
#include "carriers/file_backed/moves.h"
#include "execution/kernel_table.h"

namespace strideweave {
namespace {


constexpr std::int64_t kSlotBytes = 4;  // Float32 and Int32

[[noreturn]] void throw_os_error(int error, std::string_view call, const std::string& file,
                                 std::optional<std::int64_t> offset) {
  const std::string where = offset ? fmt::format(" at byte offset {}", *offset) : std::string();
  throw OSError(fmt::format("FileBacked: {} failed for '{}'{}: {}", call, file, where, std::strerror(error)), error,
                file, offset);
}

std::int64_t page_bytes() {
  static const std::int64_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::int64_t>(p) : std::int64_t{4096};
  }();
  return page;
}

std::int64_t checked_residency(std::int64_t residency_bytes, const char* what) {
  if (residency_bytes < 1)
    throw ValueError(fmt::format("{}: residency_bytes must be >= 1, got {}", what, residency_bytes));
  const std::int64_t page = page_bytes();
  if (residency_bytes > std::numeric_limits<std::int64_t>::max() - page)
    throw ValueError(fmt::format("{}: residency_bytes {} is too large", what, residency_bytes));
  return (residency_bytes + page - 1) / page * page;
}

std::int64_t checked_bytes(std::int64_t size, const char* what) {
  std::int64_t bytes = 0;
  if (size < 0) throw ValueError(fmt::format("{}: size must be >= 0, got {}", what, size));
  if (__builtin_mul_overflow(size, kSlotBytes, &bytes) || bytes > std::numeric_limits<off_t>::max())
    throw ValueError(fmt::format("{}: {} slots of 4 bytes pass the largest file offset", what, size));
  return bytes;
}

// ---- the process's private temporary directory

struct Session {
  std::mutex mutex;
  std::string directory;  // empty until created
  pid_t pid = 0;          // the process that created `directory`
  std::set<std::string> live_files;
  bool exit_hook_installed = false;
};

Session& session() {
  static Session* s = new Session();  // lives for the program (carriers may outlive statics)
  return *s;
}

// Removes what is left of this process's directory: files of carriers still
// alive at exit (their later release finds them gone and ignores that).
void remove_session_directory() {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  if (s.directory.empty() || s.pid != ::getpid()) return;
  sysio::SystemIo& io = sysio::system_io();
  for (const std::string& file : s.live_files) io.remove_file(file);
  s.live_files.clear();
  io.remove_directory(s.directory);
  s.directory.clear();
}

std::string session_directory_locked(Session& s) {
  if (!s.directory.empty() && s.pid == ::getpid()) return s.directory;
  // First use, or the first in a forked child: its own directory (the
  // parent's files stay the parent's).
  const char* tmpdir = std::getenv("TMPDIR");
  std::string root = tmpdir && *tmpdir ? tmpdir : "/tmp";
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::string path = root + "/strideweave-" + std::to_string(::getpid()) + "-XXXXXX";
  if (const int error = sysio::system_io().make_private_directory(path))
    throw_os_error(error, "mkdtemp (the private temporary directory)", path, std::nullopt);
  if (!s.exit_hook_installed) {
    if (std::atexit(&remove_session_directory) != 0) {
      sysio::system_io().remove_directory(path);
      throw RuntimeError("FileBacked: cannot register the temporary directory's removal at exit");
    }
    s.exit_hook_installed = true;
  }
  s.directory = path;
  s.pid = ::getpid();
  s.live_files.clear();
  return s.directory;
}

void forget_session_file(const std::string& path) noexcept {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  s.live_files.erase(path);
}

// ---- names

void check_bare_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw ValueError(fmt::format("FileBacked: filename '{}' must be a bare file name (no path components)", name));
}

std::string generated_name() {
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 random{std::random_device{}()};
  return fmt::format("{:016x}-{}.bin", random(), counter.fetch_add(1));
}

// ---- mapping

// Maps `bytes` of `fd` from file byte `offset` (any offset: the mapping
// starts at the page below it). Closes nothing.
FileBacked::Mapping map_range(int fd, const std::string& path, std::int64_t offset, std::int64_t bytes,
                              bool writable) {
  FileBacked::Mapping m;
  m.path = path;
  m.file_offset = offset / page_bytes() * page_bytes();
  m.lead_bytes = offset - m.file_offset;
  m.size = bytes / kSlotBytes;
  if (bytes == 0) return m;  // nothing to map (mmap refuses a zero length)
  m.mapped_bytes = static_cast<std::size_t>(m.lead_bytes + bytes);
  void* address = nullptr;
  if (const int error = sysio::system_io().map(fd, m.file_offset, m.mapped_bytes, writable, address))
    throw_os_error(error, "mmap", path, m.file_offset);
  m.base = static_cast<std::byte*>(address);
  return m;
}

// After a successful mapping: closes the descriptor (setting `fd` to -1
// first: a failed close(2) has still closed it) and completes `m`.
void finish_mapping(int& fd, FileBacked::Mapping& m, bool owns_file, std::int64_t residency) {
  const int to_close = fd;
  fd = -1;
  if (const int error = sysio::system_io().close(to_close)) throw_os_error(error, "close", m.path.string(), std::nullopt);
  m.owns_file = owns_file;
  m.residency_bytes = residency;
  m.creator_pid = static_cast<long>(::getpid());
}

// Inside a catch-all handler, after undoing: rethrows the error being
// handled, std::bad_alloc as a MemoryError naming the file.
[[noreturn]] void rethrow_with_memory_error(const char* what, const std::string& path) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("{}: cannot allocate the carrier for '{}'", what, path));
  }
}

// Undoes a creation that failed after the file existed.
void abandon_created(int fd, const std::string& path, void* base, std::size_t mapped_bytes) noexcept {
  sysio::SystemIo& io = sysio::system_io();
  if (base) io.unmap(base, mapped_bytes);
  if (fd >= 0) io.close(fd);
  io.remove_file(path);
}

}  // namespace

bool FileBacked::supports(const DType& dtype) noexcept {
  return &dtype == &DType::Float32() || &dtype == &DType::Int32();
}

FileBacked::FileBacked(Token, const SimpleDType& dtype, bool mutable_, Mapping m) noexcept
    : Carrier(dtype, mutable_),
      path_(std::move(m.path)),
      owns_file_(m.owns_file),
      base_(m.base),
      mapped_bytes_(m.mapped_bytes),
      lead_bytes_(m.lead_bytes),
      file_offset_(m.file_offset),
      size_(m.size),
      residency_bytes_(m.residency_bytes),
      creator_pid_(m.creator_pid),
      checksums_(m.checksums) {
  if (checksums_ && mapped_bytes_ > 0) {
    const auto windows =
        static_cast<std::size_t>((static_cast<std::int64_t>(mapped_bytes_) + residency_bytes_ - 1) / residency_bytes_);
    window_sums_.assign(windows, 0);
    window_known_.assign(windows, 0);
  }
}

FileBacked::~FileBacked() { close_storage(); }

std::filesystem::path FileBacked::session_directory() {
  Session& s = session();
  std::lock_guard lock(s.mutex);
  return session_directory_locked(s);
}

std::shared_ptr<FileBacked> FileBacked::create(std::optional<std::string> filename, const DType& dtype,
                                               bool mutable_, std::int64_t size, std::int64_t residency_bytes,
                                               bool checksums) {
  const SimpleDType& d = check_storage_dtype(dtype, "FileBacked", &FileBacked::supports);
  if (filename) check_bare_name(*filename);
  const std::int64_t bytes = checked_bytes(size, "FileBacked");
  const std::int64_t residency = checked_residency(residency_bytes, "FileBacked");
  sysio::SystemIo& io = sysio::system_io();

  Session& s = session();
  std::unique_lock lock(s.mutex);
  const std::string directory = session_directory_locked(s);
  std::string path;
  int fd = -1;
  // A generated name that happens to exist is skipped; a given one is the
  // caller's and is refused (EEXIST) without touching that file.
  for (int attempt = 0;; ++attempt) {
    path = directory + "/" + (filename ? *filename : generated_name());
    const int error = io.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, fd);
    if (error == 0) break;
    if (error != EEXIST || filename || attempt == 16) throw_os_error(error, "open (create)", path, std::nullopt);
  }
  s.live_files.insert(path);
  lock.unlock();

  Mapping m;
  try {
    if (const int error = io.reserve(fd, bytes))
      throw_os_error(error, fmt::format("posix_fallocate of {} bytes", bytes), path, std::int64_t{0});
    m = map_range(fd, path, 0, bytes, true);  // read-write: new_like fills an immutable result too
    finish_mapping(fd, m, true, residency);
    m.checksums = checksums;
    return std::make_shared<FileBacked>(Token{}, d, mutable_, std::move(m));
  } catch (...) {
    abandon_created(fd, path, m.base, m.mapped_bytes);
    forget_session_file(path);
    rethrow_with_memory_error("FileBacked", path);
  }
}

std::shared_ptr<FileBacked> FileBacked::open(const std::filesystem::path& file, const DType& dtype, bool mutable_,
                                             std::int64_t offset, std::optional<std::int64_t> size,
                                             std::int64_t residency_bytes, bool checksums) {
  const SimpleDType& d = check_storage_dtype(dtype, "FileBacked.open", &FileBacked::supports);
  const std::string path = file.string();
  if (offset < 0 || offset % kSlotBytes != 0)
    throw ValueError(fmt::format("FileBacked.open: offset {} must be a non-negative multiple of 4", offset));
  if (size) checked_bytes(*size, "FileBacked.open");
  const std::int64_t residency = checked_residency(residency_bytes, "FileBacked.open");
  sysio::SystemIo& io = sysio::system_io();
  int fd = -1;
  if (const int error = io.open(path, (mutable_) ? O_RDWR : O_RDONLY, 0, fd)) throw_os_error(error, "open", path, std::nullopt);
  Mapping m;
  try {
    sysio::FileStatus status;
    if (const int error = io.status(fd, status)) throw_os_error(error, "fstat", path, std::nullopt);
    const std::int64_t file_bytes = status.bytes;
    if (offset > file_bytes)
      throw ValueError(fmt::format("FileBacked.open: offset {} is past the end of '{}' ({} bytes)", offset, path,
                                   file_bytes));
    const std::int64_t remaining = file_bytes - offset;
    std::int64_t bytes = 0;
    if (size) {
      bytes = *size * kSlotBytes;
      if (bytes > remaining)
        throw ValueError(fmt::format("FileBacked.open: {} slots from byte {} pass the end of '{}' ({} bytes)", *size,
                                     offset, path, file_bytes));
    } else {
      if (remaining % kSlotBytes != 0)
        throw ValueError(fmt::format("FileBacked.open: the {} bytes of '{}' after byte {} are not whole 4-byte "
                                     "slots; give the size",
                                     remaining, path, offset));
      bytes = remaining;
    }
    m = map_range(fd, path, offset, bytes, mutable_);
    finish_mapping(fd, m, false, residency);
    m.checksums = checksums;
    return std::make_shared<FileBacked>(Token{}, d, mutable_, std::move(m));
  } catch (...) {
    if (m.base) io.unmap(m.base, m.mapped_bytes);
    if (fd >= 0) io.close(fd);
    rethrow_with_memory_error("FileBacked.open", path);
  }
}

std::shared_ptr<FileBacked> FileBacked::from_values(std::span<const Value> values, const DType& dtype,
                                                    bool mutable_) {
  const SimpleDType& d = check_storage_dtype(dtype, "FileBacked", &FileBacked::supports);
  for (const Value& v : values)
    if (&dtype_of(v.kind) != &d)
      throw TypeError(fmt::format("FileBacked: a {} value cannot be stored as {}", element_kind_name(v.kind), d.name()));
  auto out = create(std::nullopt, d, mutable_, static_cast<std::int64_t>(values.size()));
  // Construction, not a versioned public write: fill through the hook.
  for (std::size_t i = 0; i < values.size(); ++i) out->write_slot(static_cast<std::int64_t>(i), values[i]);
  return out;
}

std::byte* FileBacked::slot_address(std::int64_t index) const {
  const std::int64_t at = lead_bytes_ + index * kSlotBytes;  // mapping-relative
  std::lock_guard lock(window_mutex_);
  if (window_start_ < 0 || at < window_start_ || at >= window_start_ + residency_bytes_) {
    const auto window_length = [&](std::int64_t start) {
      return std::min(residency_bytes_, static_cast<std::int64_t>(mapped_bytes_) - start);
    };
    if (window_start_ >= 0) {
      const std::int64_t length = window_length(window_start_);
      // The region leaving the window: its hash, with this carrier's writes.
      const std::uint64_t sum =
          checksums_ ? XXH3_64bits(base_ + window_start_, static_cast<std::size_t>(length)) : 0;
      if (const int error = sysio::system_io().drop_pages(base_ + window_start_, static_cast<std::size_t>(length)))
        throw_os_error(error, "madvise(MADV_DONTNEED) of the residency window", path_.string(),
                       file_offset_ + window_start_);
      if (checksums_) {
        const auto k = static_cast<std::size_t>(window_start_ / residency_bytes_);
        window_sums_[k] = sum;
        window_known_[k] = 1;
      }
    }
    const std::int64_t start = at / residency_bytes_ * residency_bytes_;
    if (checksums_) {
      // Verified before any slot of the region is used; a mismatch leaves no
      // window (the next access verifies again).
      window_start_ = -1;
      const auto k = static_cast<std::size_t>(start / residency_bytes_);
      const std::uint64_t sum = XXH3_64bits(base_ + start, static_cast<std::size_t>(window_length(start)));
      if (window_known_[k] && window_sums_[k] != sum)
        throw OSError(fmt::format("FileBacked: xxHash checksum mismatch in the {}-byte region at byte offset {} of "
                                  "'{}': the file changed behind the carrier",
                                  window_length(start), file_offset_ + start, path_.string()),
                      EBADMSG, path_.string(), file_offset_ + start);
      window_sums_[k] = sum;
      window_known_[k] = 1;
    }
    window_start_ = start;
  }
  return base_ + at;
}

Value FileBacked::read_slot(std::int64_t index) const {
  const std::byte* p = slot_address(index);
  if (&dtype() == &DType::Int32()) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return Value::from_int32(v);
  }
  float v;
  std::memcpy(&v, p, sizeof v);
  return Value::from_float32(v);
}

void FileBacked::write_slot(std::int64_t index, const Value& value) {
  std::byte* p = slot_address(index);
  if (value.kind == ElementKind::Int32)
    std::memcpy(p, &value.i, sizeof value.i);
  else
    std::memcpy(p, &value.f, sizeof value.f);
}

// A run crosses windows at multiples of residency_bytes_ (mapping-relative,
// slot-aligned: lead_bytes_ and the window length are multiples of 4): each
// piece is one slot_address (which moves the window) and one copy.
void FileBacked::for_each_window(std::int64_t first, std::int64_t count,
                                 const std::function<void(std::byte*, std::int64_t, std::int64_t)>& piece_fn) const {
  std::int64_t done = 0;
  while (done < count) {
    std::byte* p = slot_address(first + done);
    const std::int64_t at = lead_bytes_ + (first + done) * kSlotBytes;
    const std::int64_t window_end = (at / residency_bytes_ + 1) * residency_bytes_;
    const std::int64_t piece = std::min(count - done, (window_end - at) / kSlotBytes);
    piece_fn(p, done, piece);
    done += piece;
  }
}

void FileBacked::read_range(std::int64_t first, std::int64_t count, Value* out) const {
  const bool int32 = &dtype() == &DType::Int32();
  for_each_window(first, count, [&](const std::byte* p, std::int64_t done, std::int64_t piece) {
    for (std::int64_t k = 0; k < piece; ++k) {
      if (int32) {
        std::int32_t v;
        std::memcpy(&v, p + k * kSlotBytes, sizeof v);
        out[done + k] = Value::from_int32(v);
      } else {
        float v;
        std::memcpy(&v, p + k * kSlotBytes, sizeof v);
        out[done + k] = Value::from_float32(v);
      }
    }
  });
}

void FileBacked::write_range(std::int64_t first, std::span<const Value> values) {
  for_each_window(first, static_cast<std::int64_t>(values.size()),
                  [&](std::byte* p, std::int64_t done, std::int64_t piece) {
                    for (std::int64_t k = 0; k < piece; ++k) {
                      const Value& v = values[static_cast<std::size_t>(done + k)];
                      if (v.kind == ElementKind::Int32)
                        std::memcpy(p + k * kSlotBytes, &v.i, sizeof v.i);
                      else
                        std::memcpy(p + k * kSlotBytes, &v.f, sizeof v.f);
                    }
                  });
}

bool FileBacked::read_range_bytes(std::int64_t first, std::int64_t count, std::byte* out) const {
  for_each_window(first, count, [&](const std::byte* p, std::int64_t done, std::int64_t piece) {
    std::memcpy(out + done * kSlotBytes, p, static_cast<std::size_t>(piece * kSlotBytes));
  });
  return true;
}

bool FileBacked::write_range_bytes(std::int64_t first, std::int64_t count, const std::byte* data) {
  for_each_window(first, count, [&](std::byte* p, std::int64_t done, std::int64_t piece) {
    std::memcpy(p, data + done * kSlotBytes, static_cast<std::size_t>(piece * kSlotBytes));
  });
  return true;
}

void FileBacked::flush() {
  require_live("FileBacked.flush");
  if (!base_) return;
  if (const int error = sysio::system_io().sync_mapping(base_, mapped_bytes_))
    throw_os_error(error, fmt::format("msync of {} bytes", mapped_bytes_), path_.string(), file_offset_);
}

void FileBacked::close_storage() noexcept {
  std::lock_guard lock(window_mutex_);
  if (closed_) return;
  closed_ = true;
  sysio::SystemIo& io = sysio::system_io();
  if (base_) io.unmap(base_, mapped_bytes_);
  base_ = nullptr;
  mapped_bytes_ = 0;
  size_ = 0;
  window_start_ = -1;
  if (owns_file_ && creator_pid_ == static_cast<long>(::getpid())) {
    io.remove_file(path_.string());  // ENOENT after the exit hook: nothing left to do
    forget_session_file(path_.string());
  }
}

void FileBacked::release_storage() noexcept { close_storage(); }

std::shared_ptr<Carrier> FileBacked::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                               bool) const {
  // Always zeroed (the reserved blocks read as zero); a fresh temporary file
  // with this carrier's residency budget and checksum choice, also from an
  // open()ed prototype.
  return create(std::nullopt, dtype, mutable_, size, residency_bytes_, checksums_);
}

bool FileBacked::supports_allocation() const noexcept { return owns_file_ && size_ == 0 && !closed_; }

void FileBacked::allocate_empty_storage(std::int64_t slots) {
  const std::int64_t bytes = checked_bytes(slots, "FileBacked (allocation by a move)");
  std::lock_guard lock(window_mutex_);
  if (!owns_file_ || size_ != 0 || closed_)
    throw RuntimeError(fmt::format("FileBacked: only an empty created file is allocated ('{}')", path_.string()));
  if (bytes == 0) return;
  sysio::SystemIo& io = sysio::system_io();
  const std::string path = path_.string();
  int fd = -1;
  if (const int error = io.open(path, (true) ? O_RDWR : O_RDONLY, 0, fd)) throw_os_error(error, "open", path, std::nullopt);
  Mapping m;
  try {
    if (const int error = io.reserve(fd, bytes))
      throw_os_error(error, fmt::format("posix_fallocate of {} bytes", bytes), path, std::int64_t{0});
    m = map_range(fd, path, 0, bytes, true);
    const int to_close = fd;
    fd = -1;
    if (const int error = io.close(to_close)) throw_os_error(error, "close", path, std::nullopt);
  } catch (...) {
    if (m.base) io.unmap(m.base, m.mapped_bytes);
    if (fd < 0) io.open(path, (true) ? O_RDWR : O_RDONLY, 0, fd);
    if (fd >= 0) {
      io.truncate(fd, 0);
      io.close(fd);
    }
    rethrow_with_memory_error("FileBacked", path);
  }
  base_ = m.base;
  mapped_bytes_ = m.mapped_bytes;
  lead_bytes_ = m.lead_bytes;
  file_offset_ = m.file_offset;
  size_ = m.size;
  window_start_ = -1;
}

void FileBacked::discard_allocation() noexcept {
  std::lock_guard lock(window_mutex_);
  if (closed_ || !owns_file_ || size_ == 0) return;
  sysio::SystemIo& io = sysio::system_io();
  if (base_) io.unmap(base_, mapped_bytes_);
  base_ = nullptr;
  mapped_bytes_ = 0;
  lead_bytes_ = 0;
  file_offset_ = 0;
  size_ = 0;
  window_start_ = -1;
  int fd = -1;
  if (io.open(path_.string(), (true) ? O_RDWR : O_RDONLY, 0, fd) == 0) {
    io.truncate(fd, 0);
    io.close(fd);
  }
}

void FileBacked::register_kernels() {
  register_kernel_table(carrier_class<FileBacked>(), KernelTable{});
  carriers::file_backed::register_moves();  // (CPU, FileBacked) and (FileBacked, CPU): moves.cpp
}

}  // namespace strideweave
