// Reading .npy and safetensors files: inspect_file, load_npy,
// load_safetensors (include/strideweave/formats.h; docs/storage.md, "File
// formats"). Every system call goes through sysio::system_io() (src/sysio/system_io.h);
// mapping a file goes through FileBacked::open.
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "formats/checked.h"
#include "formats/file_support.h"
#include "sysio/system_io.h"

#include <fcntl.h>

namespace strideweave {
namespace {


constexpr std::size_t kFirstRead = 64 * 1024;

// An open file, closed (errors ignored: it was only read) at scope exit.
struct ReadFile {
  std::string path;
  int fd = -1;
  std::int64_t bytes = 0;

  explicit ReadFile(std::string p) : path(std::move(p)) {
    if (const int error = sysio::system_io().open(path, O_RDONLY, 0, fd)) formats::throw_os_error(error, "open", path, std::nullopt);
    sysio::FileStatus status;
    if (const int error = sysio::system_io().status(fd, status)) {
      sysio::system_io().close(fd);
      formats::throw_os_error(error, "fstat", path, std::nullopt);
    }
    bytes = status.bytes;
    if (!status.regular) {
      sysio::system_io().close(fd);
      throw ValueError(fmt::format("'{}' is not a regular file", path));
    }
  }
  ~ReadFile() { sysio::system_io().close(fd); }
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  // Reads exactly `count` bytes at `offset` (short reads continue; the end
  // of the file first is a ValueError: the file is shorter than its header
  // said, or shrank while being read).
  void read_exactly(void* buffer, std::int64_t count, std::int64_t offset) const {
    auto* out = static_cast<std::byte*>(buffer);
    std::int64_t done = 0;
    while (done < count) {
      const auto want = static_cast<std::size_t>(std::min<std::int64_t>(count - done, std::int64_t{1} << 30));
      std::size_t got = 0;
      if (const int error = sysio::system_io().read_at(fd, out + done, want, offset + done, got))
        formats::throw_os_error(error, "pread", path, offset + done);
      if (got == 0)
        throw ValueError(fmt::format("'{}' ended at byte offset {} while {} more bytes were expected (truncated)",
                                     path, offset + done, count - done));
      done += static_cast<std::int64_t>(got);
    }
  }

  std::vector<std::byte> read_prefix(std::int64_t count) const {
    std::vector<std::byte> out(static_cast<std::size_t>(std::max<std::int64_t>(0, std::min(count, bytes))));
    read_exactly(out.data(), static_cast<std::int64_t>(out.size()), 0);
    return out;
  }
};

bool looks_like_npy(const std::vector<std::byte>& start, const std::string& path) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (start.size() >= 6 && std::memcmp(start.data(), kMagic, 6) == 0) return true;
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

// The header of an open file, read in as few calls as its declared length
// allows, then validated by the pure parser.
FileHeader read_header(const ReadFile& file, bool npy) {
  std::vector<std::byte> prefix = file.read_prefix(static_cast<std::int64_t>(kFirstRead));
  std::int64_t needed = 0;
  if (npy && prefix.size() >= 12) {
    const int major = static_cast<int>(prefix[6]);
    const std::uint64_t length = major == 1 ? formats::little_endian(prefix, 8, 2) : formats::little_endian(prefix, 8, 4);
    if (length <= static_cast<std::uint64_t>(formats::kMaxNpyHeaderBytes)) needed = (major == 1 ? 10 : 12) + static_cast<std::int64_t>(length);
  } else if (!npy && prefix.size() >= 8) {
    const std::uint64_t length = formats::little_endian(prefix, 0, 8);
    if (length <= static_cast<std::uint64_t>(kMaxSafetensorsHeaderBytes)) needed = 8 + static_cast<std::int64_t>(length);
  }
  if (needed > static_cast<std::int64_t>(prefix.size()) && static_cast<std::int64_t>(prefix.size()) < file.bytes)
    prefix = file.read_prefix(needed);
  try {
    return npy ? parse_npy_header(prefix, file.bytes) : parse_safetensors_header(prefix, file.bytes);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("'{}': {}", file.path, e.message()));
  }
}

const SimpleDType& dtype_named(const std::string& name) {
  if (name == "float32") return DType::Float32();
  if (name == "int32") return DType::Int32();
  return DType::Bool();
}

Layout layout_of(const StoredTensor& t) {
  const Shape shape = Shape::of(t.shape);
  return t.fortran_order ? Layout::compact(shape) : Layout::row_major(shape);
}

Tensor load_into_cpu(const ReadFile& file, const StoredTensor& t) {
  const SimpleDType& dtype = dtype_named(t.dtype);
  auto carrier = CPU::create(t.element_count, dtype, true, /*empty=*/true);
  auto* data = carrier->data<std::byte>();
  file.read_exactly(data, t.data_bytes, t.data_offset);
  if (&dtype == &DType::Bool()) {
    const auto* raw = reinterpret_cast<const unsigned char*>(data);
    for (std::int64_t i = 0; i < t.data_bytes; ++i)
      if (raw[i] > 1)
        throw ValueError(fmt::format("'{}': bool element {} of '{}' at byte offset {} is {}, not 0 or 1", file.path, i,
                                     t.name, t.data_offset + i, static_cast<int>(raw[i])));
  }
  return Tensor(std::move(carrier), 0, layout_of(t));
}

Tensor load_into_file_backed(const ReadFile& file, const StoredTensor& t, const LoadOptions& options) {
  const SimpleDType& dtype = dtype_named(t.dtype);
  if (!FileBacked::supports(dtype))
    throw ValueError(fmt::format("'{}': tensor '{}' is {}, which FileBacked does not store (Float32, Int32); load it "
                                 "into CPU",
                                 file.path, t.name, dtype.name()));
  std::shared_ptr<FileBacked> carrier;
  if (t.data_offset % 4 == 0) {
    // The zero-copy path: the user's file, mapped where the data lies.
    carrier = FileBacked::open(file.path, dtype, options.mutable_, t.data_offset, t.element_count,
                               options.residency_bytes);
  } else {
    // Misaligned 4-byte data cannot be slots of a mapping: a copy in a
    // temporary file (read-only unless mutable_, as a mapping would be).
    std::vector<std::int32_t> words(static_cast<std::size_t>(t.element_count));
    file.read_exactly(words.data(), t.data_bytes, t.data_offset);
    std::vector<Value> values;
    values.reserve(words.size());
    for (const std::int32_t w : words) {
      if (&dtype == &DType::Int32()) {
        values.push_back(Value::from_int32(w));
      } else {
        float f;
        std::memcpy(&f, &w, sizeof f);
        values.push_back(Value::from_float32(f));
      }
    }
    carrier = FileBacked::from_values(values, dtype, options.mutable_);
  }
  return Tensor(std::move(carrier), 0, layout_of(t));
}

Tensor load_one(const ReadFile& file, const StoredTensor& t, const LoadOptions& options) {
  return options.carrier == LoadTarget::CPU ? load_into_cpu(file, t) : load_into_file_backed(file, t, options);
}

}  // namespace

FileHeader inspect_file(const std::filesystem::path& path) {
  const ReadFile file(path.string());
  const std::vector<std::byte> start = file.read_prefix(6);
  return read_header(file, looks_like_npy(start, file.path));
}

Tensor load_npy(const std::filesystem::path& path, const LoadOptions& options) {
  const ReadFile file(path.string());
  const FileHeader header = read_header(file, true);
  return load_one(file, header.tensors.front(), options);
}

std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path, const LoadOptions& options) {
  const ReadFile file(path.string());
  const FileHeader header = read_header(file, false);
  std::map<std::string, Tensor> out;
  for (const StoredTensor& t : header.tensors) out.emplace(t.name, load_one(file, t, options));
  return out;
}

}  // namespace strideweave
