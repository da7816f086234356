// The bulk CPU <-> FileBacked move routes (file_backed.h; docs/storage.md,
// "Movement"): one pread(2) / pwrite(2) per window through the replaceable
// FileIo, the destination's before-image in one bulk read.
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "carriers/file_backed/file_io.h"
#include "carriers/file_backed/moves.h"
#include "movement/host_memory.h"

namespace strideweave {
namespace {

using carriers::file_backed::file_io;
using carriers::file_backed::FileIo;

[[noreturn]] void throw_move_error(int error, const std::string& call, const std::string& file, std::int64_t offset) {
  throw OSError(fmt::format("move: {} failed for '{}' at byte offset {}: {}", call, file, offset,
                            std::strerror(error)),
                error, file, offset);
}

// An open descriptor of a FileBacked's file for the length of one transfer.
class OpenFile {
 public:
  OpenFile(const FileBacked& carrier, bool writable) : path_(carrier.path().string()) {
    if (const int error = file_io().open_existing(path_, writable, fd_))
      throw OSError(fmt::format("move: open failed for '{}': {}", path_, std::strerror(error)), error, path_,
                    std::nullopt);
  }
  ~OpenFile() {
    if (fd_ >= 0) file_io().close(fd_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  // Closes, reporting a failing close(2) (a deferred write-back error).
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (const int error = file_io().close(fd))
      throw OSError(fmt::format("move: close failed for '{}': {}", path_, std::strerror(error)), error, path_,
                    std::nullopt);
  }

  // Reads exactly `bytes` at `offset`, continuing short reads; the end of
  // the file first is EIO ("short read").
  void read_exactly(std::byte* to, std::int64_t bytes, std::int64_t offset) {
    FileIo& io = file_io();
    while (bytes > 0) {
      std::size_t done = 0;
      if (const int error = io.read_at(fd_, to, static_cast<std::size_t>(bytes), offset, done))
        throw_move_error(error, fmt::format("pread of {} bytes", bytes), path_, offset);
      if (done == 0) throw_move_error(EIO, fmt::format("pread of {} bytes (short read: end of file)", bytes), path_, offset);
      to += done;
      offset += static_cast<std::int64_t>(done);
      bytes -= static_cast<std::int64_t>(done);
    }
  }
  // Writes exactly `bytes` at `offset`, continuing short writes; a write
  // that makes no progress is EIO ("short write").
  void write_exactly(const std::byte* from, std::int64_t bytes, std::int64_t offset) {
    FileIo& io = file_io();
    while (bytes > 0) {
      std::size_t done = 0;
      if (const int error = io.write_at(fd_, from, static_cast<std::size_t>(bytes), offset, done))
        throw_move_error(error, fmt::format("pwrite of {} bytes", bytes), path_, offset);
      if (done == 0) throw_move_error(EIO, fmt::format("pwrite of {} bytes (short write: no progress)", bytes), path_, offset);
      from += done;
      offset += static_cast<std::int64_t>(done);
      bytes -= static_cast<std::int64_t>(done);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::byte* cpu_bytes(const Carrier& carrier) { return detail::host_memory_bytes(carrier); }

}  // namespace

// ---------------------------------------------------------------- CPU -> FileBacked

std::optional<CarrierClass> CpuToFileBackedMoveOperation::source_class() const { return detail::host_memory_class(); }
std::optional<CarrierClass> CpuToFileBackedMoveOperation::destination_class() const {
  return carrier_class<FileBacked>();
}

MoveSubmission CpuToFileBackedMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                   std::int64_t element_count, MoveContext& context) const {
  const auto& file = static_cast<const FileBacked&>(destination);
  const std::int64_t eb = context.element_bytes();
  const std::byte* from = cpu_bytes(*tensor.carrier()) + tensor.offset() * eb;
  OpenFile out(file, true);
  const std::int64_t window = context.window_elements();
  for (std::int64_t k = 0; k < element_count; k += window) {
    const std::int64_t n = std::min(window, element_count - k);
    out.write_exactly(from + k * eb, n * eb, file.slot_file_offset() + k * eb);
    context.advance(n);
  }
  out.close();
  return std::monostate{};
}

MoveRestore CpuToFileBackedMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                            MoveContext& context) const {
  auto& file = static_cast<FileBacked&>(destination);
  const std::int64_t bytes = element_count * context.element_bytes();
  auto image = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(bytes));
  {
    OpenFile in(file, false);
    in.read_exactly(image->data(), bytes, file.slot_file_offset());
    in.close();
  }
  return [&file, image, bytes] {
    OpenFile back(file, true);
    back.write_exactly(image->data(), bytes, file.slot_file_offset());
    back.close();
  };
}

// ---------------------------------------------------------------- FileBacked -> CPU

std::optional<CarrierClass> FileBackedToCpuMoveOperation::source_class() const { return carrier_class<FileBacked>(); }
std::optional<CarrierClass> FileBackedToCpuMoveOperation::destination_class() const { return detail::host_memory_class(); }

MoveSubmission FileBackedToCpuMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                   std::int64_t element_count, MoveContext& context) const {
  const auto& file = static_cast<const FileBacked&>(*tensor.carrier());
  const std::int64_t eb = context.element_bytes();
  std::byte* to = cpu_bytes(destination);
  OpenFile in(file, false);
  const std::int64_t base = file.slot_file_offset() + tensor.offset() * eb;
  const std::int64_t window = context.window_elements();
  for (std::int64_t k = 0; k < element_count; k += window) {
    const std::int64_t n = std::min(window, element_count - k);
    in.read_exactly(to + k * eb, n * eb, base + k * eb);
    context.advance(n);
  }
  in.close();
  return std::monostate{};
}

MoveRestore FileBackedToCpuMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                            MoveContext& context) const {
  std::byte* at = cpu_bytes(destination);
  const std::size_t bytes = static_cast<std::size_t>(element_count * context.element_bytes());
  auto image = std::make_shared<std::vector<std::byte>>(at, at + bytes);
  return [at, image] { std::memcpy(at, image->data(), image->size()); };
}

namespace carriers::file_backed {

void register_moves() {
  register_move_operation(detail::host_memory_class(), carrier_class<FileBacked>(),
                          std::make_shared<const CpuToFileBackedMoveOperation>());
  register_move_operation(carrier_class<FileBacked>(), detail::host_memory_class(),
                          std::make_shared<const FileBackedToCpuMoveOperation>());
}

}  // namespace carriers::file_backed
}  // namespace strideweave
