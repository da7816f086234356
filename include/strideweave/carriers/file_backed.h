// strideweave/carriers/file_backed.h — the FileBacked carrier: slots in a
// raw file, memory-mapped in residency windows (core-concepts.md 1.3, 1.7,
// 8.4; docs/storage.md).
//
// Storage only: Float32 and Int32 (4 bytes each, native byte order, no
// header); its capability set is sealed empty, so every computational
// operation on a FileBacked tensor raises UnsupportedOperationPlan (a
// NotImplementedError) at the gate, before any allocation, and carrier
// scatter (Carrier::scatter) raises NotImplementedError. The class is final.
//
// Two ways to get one:
//   create(filename, dtype, ...)  the specification's FileBacked(filename=None,
//       *, mutable=True, dtype): a fresh file in this process's private
//       temporary directory (created 0700 under $TMPDIR, else /tmp; files
//       0600), removed at release or destruction; the directory is removed
//       at process exit. `filename` is a bare name in that directory
//       (ValueError for "", ".", "..", a '/' or a NUL; OSError with EEXIST
//       when the name exists, leaving that file untouched); nullopt generates
//       a unique name. The size in slots is fixed at creation (0 unless
//       given) and every slot reads as zero: the file's blocks are reserved
//       up front, so a full disk is an OSError (ENOSPC) at creation rather
//       than a crash at a later store.
//   open(path, dtype, ...)  beyond the specification: maps a file the user
//       already has (the zero-copy path of format loaders), read-only unless
//       mutable is true, never deleted or resized by the carrier.
//
// Residency: the whole file is mapped (MAP_SHARED), but the carrier touches
// it only inside one window of `residency_bytes` (rounded up to whole pages).
// When an access falls outside the window, the window's pages are dropped
// from the process (madvise MADV_DONTNEED; their contents stay in the file)
// and the window moves to the aligned block holding the access. So a file
// larger than memory is usable, and this carrier's resident pages stay
// within one window (plus what the kernel maps around a read fault, 64 KiB
// by default on Linux).
//
// Errors: a failing system call is an OSError naming the call, the file and
// the byte offset; a failed creation leaves no file and no directory entry
// behind, a failed access changes no slot, version or window. Every system
// call goes through one replaceable interface (src/carriers/file_backed/
// file_io.h) so that tests inject faults.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/move_operation.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct ShippedCarrierAccess;  // src/carriers/carrier_list.cpp
}  // namespace detail

class FileBacked final : public Carrier {
 public:
  static constexpr std::string_view public_name = "FileBacked";
  static constexpr std::string_view description =
      "storage only: Float32/Int32 slots in a raw file, memory-mapped in residency windows; always built";
  // The residency window when none is given: 64 MiB.
  static constexpr std::int64_t default_residency_bytes = std::int64_t{64} << 20;

  // FileBacked(filename=None, *, mutable=True, dtype) with the size fixed at
  // creation (`size` slots, all zero) and the residency budget. ValueError:
  // an unsupported dtype, a filename with path components, size < 0, a byte
  // size past the file offset range, residency_bytes < 1. OSError: the
  // temporary directory, the file's creation (EEXIST for an existing name),
  // its reservation (ENOSPC) or its mapping failed; nothing is left behind.
  static std::shared_ptr<FileBacked> create(std::optional<std::string> filename, const DType& dtype,
                                            bool mutable_ = true, std::int64_t size = 0,
                                            std::int64_t residency_bytes = default_residency_bytes,
                                            bool checksums = false);
  // Maps `size` slots of the existing file `path` starting at byte `offset`
  // (a multiple of 4; ValueError otherwise); nullopt size = every whole slot
  // from `offset` to the end (ValueError unless the remaining bytes are a
  // multiple of 4). ValueError when offset + size * 4 passes the end of the
  // file. mutable_ = false maps read-only (the default); true maps it
  // read-write, and writes reach the user's file. The file is never deleted
  // or resized; release only unmaps it. OSError when opening, measuring or
  // mapping the file fails.
  static std::shared_ptr<FileBacked> open(const std::filesystem::path& path, const DType& dtype,
                                          bool mutable_ = false, std::int64_t offset = 0,
                                          std::optional<std::int64_t> size = std::nullopt,
                                          std::int64_t residency_bytes = default_residency_bytes,
                                          bool checksums = false);
  // A fresh temporary file holding `values` (the central carrier list's
  // factory): TypeError for a value of another dtype.
  static std::shared_ptr<FileBacked> from_values(std::span<const Value> values, const DType& dtype,
                                                 bool mutable_ = true);
  // Float32 and Int32.
  static bool supports(const DType& dtype) noexcept;
  bool supports_storage_dtype(const DType& dtype) const noexcept override { return supports(dtype); }

  // The file's location (also after release, when a created file no longer
  // exists there).
  const std::filesystem::path& path() const noexcept { return path_; }
  // True for a file create() made (removed at release), false for open()'s.
  bool owns_file() const noexcept { return owns_file_; }
  // The byte offset in the file of slot 0 (0 for a created file; open()'s
  // `offset`). Movement's bulk routes read and write the file there.
  std::int64_t slot_file_offset() const noexcept { return file_offset_ + lead_bytes_; }
  // The residency window in bytes, as rounded up to whole pages.
  std::int64_t residency_bytes() const noexcept { return residency_bytes_; }
  // Per-window checksums (create/open's `checksums`, docs/storage.md,
  // "Checksums"): when the window leaves a region, the region's xxHash
  // (XXH3-64) is recorded; when it comes back, the region is verified
  // before any slot of it is read or written, and a mismatch (the file
  // changed behind the carrier) is an OSError with errno EBADMSG naming the
  // file and the region's byte offset. A region's first visit records its
  // hash (trust on first use).
  bool checksums() const noexcept { return checksums_; }
  // Writes the mapping's modified pages back to the file and waits (msync):
  // OSError (EIO, ...) naming the file when write-back fails; RuntimeError
  // after release. Release itself never reports write-back errors: call
  // flush() first when they matter (an open()ed, mutable file).
  void flush();

  // This process's private temporary directory, created on first use.
  // OSError when it cannot be created.
  static std::filesystem::path session_directory();

  ~FileBacked() override;

 protected:
  std::int64_t storage_size() const noexcept override { return size_; }
  Value read_slot(std::int64_t index) const override;
  void write_slot(std::int64_t index, const Value& value) override;
  // Runs are copied window by window (one memcpy per residency window the
  // run crosses), so the residency budget holds for range access too.
  void read_range(std::int64_t first, std::int64_t count, Value* out) const override;
  void write_range(std::int64_t first, std::span<const Value> values) override;
  // The same windows, as bytes (the file holds the host representation).
  bool read_range_bytes(std::int64_t first, std::int64_t count, std::byte* out) const override;
  bool write_range_bytes(std::int64_t first, std::int64_t count, const std::byte* data) override;
  void release_storage() noexcept override;
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override;
  // An empty created file (size 0) is sized by a move (core-concepts.md
  // 7.1): the file is extended (its blocks reserved: ENOSPC is an OSError
  // here) and mapped; discard_allocation() truncates it back to empty. An
  // open()ed file is the user's and is never resized.
  bool supports_allocation() const noexcept override;
  void allocate_empty_storage(std::int64_t slots) override;
  void discard_allocation() noexcept override;
  // Carrier scatter is a NotImplementedError (core-concepts.md 1.7).
  bool implements_carrier_scatter() const noexcept override { return false; }

 private:
  friend struct detail::ShippedCarrierAccess;
  // Publishes FileBacked's empty kernel table (its sealed empty capability
  // set), once, from the library bootstrap.
  static void register_kernels();
  struct Token {};

 public:
  // What create()/open() mapped; internal (src/carriers/file_backed/).
  struct Mapping {
    std::filesystem::path path;
    bool owns_file = false;
    std::byte* base = nullptr;        // the mapping (page-aligned); null when empty
    std::size_t mapped_bytes = 0;     // its length
    std::int64_t lead_bytes = 0;      // slot 0's distance from base
    std::int64_t file_offset = 0;     // base's offset in the file
    std::int64_t size = 0;            // slots
    std::int64_t residency_bytes = 0; // page multiple
    long creator_pid = 0;             // only this process removes the file
    bool checksums = false;
  };
  FileBacked(Token, const SimpleDType& dtype, bool mutable_, Mapping mapping) noexcept;

 private:
  // The slot's byte address, with the window moved over it first (OSError
  // if the old window's pages cannot be dropped; then nothing moved).
  std::byte* slot_address(std::int64_t index) const;
  // Calls piece_fn(address, done, piece) for each piece of the run
  // [first, first + count) inside one residency window, in order: slots
  // [first + done, first + done + piece) start at `address`.
  void for_each_window(std::int64_t first, std::int64_t count,
                       const std::function<void(std::byte*, std::int64_t, std::int64_t)>& piece_fn) const;
  // Unmaps, and removes a created file; idempotent.
  void close_storage() noexcept;

  std::filesystem::path path_;
  bool owns_file_;
  std::byte* base_;
  std::size_t mapped_bytes_;
  std::int64_t lead_bytes_;
  std::int64_t file_offset_;
  std::int64_t size_;
  std::int64_t residency_bytes_;
  long creator_pid_;
  bool closed_ = false;  // close_storage() ran
  mutable std::mutex window_mutex_;
  mutable std::int64_t window_start_ = -1;  // mapping-relative; -1: no window yet
  bool checksums_ = false;
  // Per window (window_start_ / residency_bytes_): its recorded hash, and
  // whether one is recorded. Under window_mutex_.
  mutable std::vector<std::uint64_t> window_sums_;
  mutable std::vector<std::uint8_t> window_known_;
};

// The built-in bulk routes of the move registry (interop-movement, "Move
// dispatches on the exact carrier class pair"), registered for (CPU,
// FileBacked) and (FileBacked, CPU) by FileBacked's own folder. Each copies
// the tensor's whole physical span (layout holes included). CPU -> FileBacked
// writes one pwrite(2) per window of MoveOptions::window_bytes; FileBacked ->
// CPU reads the page-aligned interior with O_DIRECT through io_uring, several
// reads in flight, straight into the CPU memory (or through aligned bounce
// buffers), and the head and tail with pread(2); without O_DIRECT or io_uring
// (tmpfs, a refused ring) it reads one pread(2) per window (docs/storage.md,
// "FileBacked -> CPU reads"). The direct read is asynchronous: move_async
// submits the first reads, reads the head and returns; a reaper thread of
// the move completes the rest (the progress callback runs there), and a
// failure after move_async returned surfaces at AwaitMove::wait() / done()
// with the move rolled back. The buffered fallback and CPU -> FileBacked
// finish before move_async returns. Short transfers are continued; every
// call goes through the replaceable I/O interface; a failing call is an
// OSError naming the call, the file and the byte offset, and the move rolls
// back. The before-image of a non-empty destination records all-zero blocks
// instead of copying them.
class STRIDEWEAVE_EXPORT CpuToFileBackedMoveOperation final : public MoveOperation {
 public:
  std::string name() const override { return "CpuToFileBackedMoveOperation"; }
  std::optional<CarrierClass> source_class() const override;
  std::optional<CarrierClass> destination_class() const override;

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext& context) const override;
  MoveRestore _save_destination(Carrier& destination, std::int64_t element_count,
                                MoveContext& context) const override;
};

class STRIDEWEAVE_EXPORT FileBackedToCpuMoveOperation final : public MoveOperation {
 public:
  std::string name() const override { return "FileBackedToCpuMoveOperation"; }
  std::optional<CarrierClass> source_class() const override;
  std::optional<CarrierClass> destination_class() const override;

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext& context) const override;
  MoveRestore _save_destination(Carrier& destination, std::int64_t element_count,
                                MoveContext& context) const override;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
