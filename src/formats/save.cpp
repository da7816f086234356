// Writing .npy and safetensors files: save_npy, save_safetensors
// (include/strideweave/formats.h; docs/storage.md, "File formats").
//
// Atomic replacement: the bytes go to a fresh temporary file in the
// destination's directory (".NAME.tmp-<random>"), which is fsynced, closed and
// renamed over the destination; then the directory is fsynced so that the
// rename itself is durable. Until the rename the destination is untouched;
// any failure before it removes the temporary file. Every system call goes
// through sysio::system_io() (src/sysio/system_io.h).
#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/checked.h"
#include "formats/file_support.h"
#include "sysio/system_io.h"

#include <fcntl.h>

namespace strideweave {
namespace {


constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

// The temporary file and its replacement of the destination.
class AtomicFile {
 public:
  AtomicFile(const std::filesystem::path& destination, std::int64_t total_bytes, const SaveOptions& options)
      : destination_(destination.string()),
        total_(total_bytes),
        progress_(total_bytes > options.progress_threshold_bytes ? options.progress : SaveProgress()) {
    const std::filesystem::path parent = destination.parent_path();
    directory_ = parent.empty() ? std::string(".") : parent.string();
    const std::string name = destination.filename().string();
    if (name.empty() || name == "." || name == "..")
      throw ValueError(fmt::format("'{}' does not name a file to write", destination_));
    static std::atomic<std::uint64_t> counter{0};
    thread_local std::mt19937_64 random{std::random_device{}()};
    for (int attempt = 0;; ++attempt) {
      temporary_ = (parent / fmt::format(".{}.tmp-{:016x}-{}", name, random(), counter.fetch_add(1))).string();
      const int error = sysio::system_io().open(temporary_, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666, fd_);
      if (error == 0) break;
      if (error != EEXIST || attempt == 16)
        formats::throw_os_error(error, "open (create the temporary file)", temporary_, std::nullopt);
    }
  }

  ~AtomicFile() {
    if (fd_ >= 0) sysio::system_io().close(fd_);
    if (!renamed_) sysio::system_io().remove_file(temporary_);
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t count) {
    const auto* p = static_cast<const std::byte*>(data);
    while (count > 0) {
      std::size_t written = 0;
      if (const int error = sysio::system_io().write(fd_, p, count, written))
        formats::throw_os_error(error, "write", temporary_, offset_);
      if (written == 0) formats::throw_os_error(EIO, "write (no progress)", temporary_, offset_);
      p += written;
      count -= written;
      offset_ += static_cast<std::int64_t>(written);
    }
    if (progress_) progress_(offset_, total_);
  }

  // fsync, close, rename over the destination, fsync the directory.
  void commit() {
    if (offset_ != total_)
      throw RuntimeError(fmt::format("save: wrote {} bytes of '{}' but planned {}", offset_, destination_, total_));
    if (const int error = sysio::system_io().sync(fd_)) formats::throw_os_error(error, "fsync", temporary_, std::nullopt);
    const int fd = fd_;
    fd_ = -1;  // a failed close(2) has still closed it
    if (const int error = sysio::system_io().close(fd)) formats::throw_os_error(error, "close", temporary_, std::nullopt);
    if (const int error = sysio::system_io().rename(temporary_, destination_))
      formats::throw_os_error(error, fmt::format("rename of '{}'", temporary_), destination_, std::nullopt);
    renamed_ = true;
    // The new file is complete and in place; what follows makes the rename
    // durable. A failure is reported (the rename may not survive a crash).
    int directory_fd = -1;
    if (const int error = sysio::system_io().open(directory_, O_RDONLY | O_DIRECTORY, 0, directory_fd))
      formats::throw_os_error(error, "open (the directory, to fsync the rename)", directory_, std::nullopt);
    const int sync_error = sysio::system_io().sync(directory_fd);
    const int close_error = sysio::system_io().close(directory_fd);
    if (sync_error) formats::throw_os_error(sync_error, "fsync (the directory)", directory_, std::nullopt);
    if (close_error) formats::throw_os_error(close_error, "close (the directory)", directory_, std::nullopt);
  }

 private:
  std::string destination_;
  std::string directory_;
  std::string temporary_;
  int fd_ = -1;
  std::int64_t offset_ = 0;
  std::int64_t total_;
  SaveProgress progress_;
  bool renamed_ = false;
};

std::int64_t item_bytes(const Tensor& t, const char* what) {
  const SimpleDType& d = t.dtype();
  if (&d == &DType::Float32() || &d == &DType::Int32()) return 4;
  if (&d == &DType::Bool()) return 1;
  throw ValueError(fmt::format("{}: dtype {} cannot be saved (float32, int32 and bool can)", what, d.name()));
}

std::int64_t data_bytes(const Tensor& t, const char* what) {
  const auto bytes = formats::checked_mul(t.size(), item_bytes(t, what));
  if (!bytes) throw ValueError(fmt::format("{}: the tensor's byte size overflows int64", what));
  return *bytes;
}

// The tensor's elements in row-major (C) order, in chunks.
void write_elements(AtomicFile& out, const Tensor& t) {
  const std::int64_t item = &t.dtype() == &DType::Bool() ? 1 : 4;
  if (const auto* cpu = dynamic_cast<const CPU*>(t.carrier().get());
      cpu && t.layout() == Layout::row_major(t.shape())) {
    const auto* base = cpu->data<std::byte>() + t.offset() * item;
    const std::int64_t total = t.size() * item;
    for (std::int64_t done = 0; done < total;) {
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(total - done, kChunkBytes));
      out.write(base + done, n);
      done += static_cast<std::int64_t>(n);
    }
    return;
  }
  // Any other carrier or layout: element by element through the carrier.
  // The reversed axes expand first mode fastest = the original's last axis
  // fastest, which is C order.
  std::vector<std::int64_t> reversed(t.rank());
  for (std::size_t i = 0; i < t.rank(); ++i) reversed[i] = static_cast<std::int64_t>(t.rank() - 1 - i);
  const Layout c_order = t.layout().permute(reversed);
  const Carrier& carrier = *t.carrier();
  std::vector<std::byte> buffer;
  buffer.reserve(kChunkBytes);
  for (std::int64_t k = 0; k < t.size(); ++k) {
    const Value v = carrier.get_value(t.offset() + c_order(k));
    std::byte bytes[4];
    if (v.kind == ElementKind::Bool) {
      bytes[0] = static_cast<std::byte>(v.b ? 1 : 0);
    } else if (v.kind == ElementKind::Int32) {
      std::memcpy(bytes, &v.i, 4);
    } else {
      std::memcpy(bytes, &v.f, 4);
    }
    buffer.insert(buffer.end(), bytes, bytes + item);
    if (buffer.size() >= kChunkBytes) {
      out.write(buffer.data(), buffer.size());
      buffer.clear();
    }
  }
  if (!buffer.empty()) out.write(buffer.data(), buffer.size());
}

std::vector<std::int64_t> extents_of(const Tensor& t) {
  const auto e = t.shape().extents();
  return {e.begin(), e.end()};
}

std::string npy_header(const Tensor& t) {
  const char* descr = &t.dtype() == &DType::Bool() ? "|b1" : &t.dtype() == &DType::Int32() ? "<i4" : "<f4";
  const std::vector<std::int64_t> shape = extents_of(t);
  const std::string shape_text = shape.size() == 1 ? fmt::format("{},", shape[0]) : fmt::format("{}", fmt::join(shape, ", "));
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape_text);
  // Version 1.0 (a 2-byte length) unless the header needs more; padded with
  // spaces and ended by '\n' so that the data starts at a multiple of 64.
  const bool v1 = dict.size() + 1 + 64 <= 65535;
  const std::size_t prelude = v1 ? 10 : 12;
  const std::size_t unpadded = prelude + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(v1 ? 1 : 2));
  out.push_back('\0');
  const std::size_t length = dict.size();
  for (std::size_t i = 0; i < (v1 ? 2u : 4u); ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + dict;
}

void check_live(const Tensor& t, const char* what) { t.carrier()->require_live(what); }

}  // namespace

void save_npy(const std::filesystem::path& path, const Tensor& tensor, const SaveOptions& options) {
  check_live(tensor, "save_npy");
  const std::int64_t bytes = data_bytes(tensor, "save_npy");
  const std::string header = npy_header(tensor);
  AtomicFile out(path, static_cast<std::int64_t>(header.size()) + bytes, options);
  out.write(header.data(), header.size());
  write_elements(out, tensor);
  out.commit();
}

void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SaveOptions& options) {
  // 4-byte dtypes first, then bools, each by name: every 4-byte tensor then
  // starts at a multiple of 4 (the header is padded to a multiple of 8), so
  // load_safetensors can map it without a copy.
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty()) throw ValueError("save_safetensors: a tensor name must not be empty");
    if (name == "__metadata__") throw ValueError("save_safetensors: '__metadata__' is reserved, not a tensor name");
    check_live(tensor, "save_safetensors");
    item_bytes(tensor, "save_safetensors");
    order.emplace_back(&name, &tensor);
  }
  std::stable_partition(order.begin(), order.end(), [](const auto& e) { return &e.second->dtype() != &DType::Bool(); });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!options.metadata.empty()) header["__metadata__"] = options.metadata;
  std::int64_t offset = 0;
  for (const auto& [name, tensor] : order) {
    const std::int64_t bytes = data_bytes(*tensor, "save_safetensors");
    const auto end = formats::checked_add(offset, bytes);
    if (!end) throw ValueError("save_safetensors: the data's byte size overflows int64");
    const char* dtype = &tensor->dtype() == &DType::Bool() ? "BOOL" : &tensor->dtype() == &DType::Int32() ? "I32" : "F32";
    header[*name] = {{"dtype", dtype}, {"shape", extents_of(*tensor)}, {"data_offsets", {offset, *end}}};
    offset = *end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(fmt::format("save_safetensors: a name or metadata string is not valid UTF-8 ({})", e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string prefix;
  for (std::size_t i = 0; i < 8; ++i) prefix.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  prefix += text;
  const auto total = formats::checked_add(static_cast<std::int64_t>(prefix.size()), offset);
  if (!total) throw ValueError("save_safetensors: the file's byte size overflows int64");
  AtomicFile out(path, *total, options);
  out.write(prefix.data(), prefix.size());
  for (const auto& entry : order) write_elements(out, *entry.second);
  out.commit();
}

}  // namespace strideweave
