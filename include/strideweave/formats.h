// strideweave/formats.h — the file formats people already have: NumPy's .npy
// and safetensors (docs/storage.md, "File formats").
//
// Reading. parse_npy_header / parse_safetensors_header are pure functions
// over bytes (no I/O, no global state; the fuzz targets in fuzz/ call them):
// they validate a header strictly and describe every stored tensor, or raise
// ValueError naming the problem (wrong magic, unsupported version, truncated
// header or data, a shape or offset whose int64 product overflows,
// overlapping, out-of-file or non-contiguous tensors, an unsupported dtype,
// malformed JSON, a duplicate name). inspect_file reads a file's header.
// load_npy / load_safetensors make tensors:
//   - on CPU by reading the data into fresh CPU storage;
//   - on FileBacked by mapping the user's file where the data lies, without
//     a copy (FileBacked::open at the data's byte offset; read-only unless
//     `mutable_`; the file is never deleted or resized). Data whose offset is
//     not a multiple of 4 cannot be mapped as 4-byte slots: it is copied into
//     a temporary FileBacked file (owns_file() true). Bool is refused on
//     FileBacked (it stores Float32 and Int32 only).
// A C-order .npy array becomes a row-major Layout, a Fortran-order one the
// canonical first-mode-fastest Layout: no copy either way.
//
// Writing. save_npy / save_safetensors write the tensors (any carrier,
// Float32, Int32 or Bool, any layout; C order) to a temporary file in the
// destination's directory, fsync it, rename it over the destination and
// fsync the directory: a crash or an error leaves the old file or the new
// one, never part of one, and an error removes the temporary file. A save
// of more than `progress_threshold_bytes` calls `progress` as data is
// written (throwing from it aborts the save as any error does).
//
// Errors: OSError (errno, file, byte offset) for a failed system call;
// ValueError for a bad header, a bad name or an unsupported dtype;
// TypeError for a wrong target carrier. Every system call the format code
// makes goes through one replaceable interface (src/formats/format_io.h),
// which the fault-injection tests replace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <strideweave/carriers/file_backed.h>
#include <strideweave/export.h>
#include <strideweave/tensor.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

enum class FileFormat { Npy, Safetensors };

// The largest safetensors JSON header accepted (as the reference
// implementation: 100 MB); a larger declared length is a ValueError.
inline constexpr std::int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// One tensor as a file stores it.
struct StoredTensor {
  std::string name;                 // the safetensors key; "" for .npy
  std::string dtype;                // strideweave's name: "float32", "int32" or "bool"
  std::string file_dtype;           // as the file spells it: "<f4", "F32", ...
  std::vector<std::int64_t> shape;  // in the file's order (row-major axes)
  bool fortran_order = false;       // .npy only: first axis fastest
  std::int64_t element_count = 0;
  std::int64_t data_offset = 0;     // absolute byte offset of the data in the file
  std::int64_t data_bytes = 0;
};

struct FileHeader {
  FileFormat format = FileFormat::Npy;
  std::string version;               // .npy: "1.0", "2.0" or "3.0"; safetensors: ""
  std::int64_t header_bytes = 0;     // where the data region starts
  std::int64_t file_bytes = 0;       // the file's size the header was checked against
  std::vector<StoredTensor> tensors; // .npy: one; safetensors: by data offset
  std::map<std::string, std::string> metadata;  // safetensors' "__metadata__"
};

// `bytes` is the start of the file (at least the whole header; more is
// ignored), `file_bytes` the file's whole size (the data must fit in it).
FileHeader parse_npy_header(std::span<const std::byte> bytes, std::int64_t file_bytes);
FileHeader parse_safetensors_header(std::span<const std::byte> bytes, std::int64_t file_bytes);

// Reads and validates the header of `path`: .npy when the file starts with
// NumPy's magic or its name ends in ".npy", safetensors otherwise.
FileHeader inspect_file(const std::filesystem::path& path);

enum class LoadTarget { CPU, FileBacked };

struct LoadOptions {
  LoadTarget carrier = LoadTarget::CPU;
  // FileBacked: map the user's file read-write (writes reach it). CPU
  // tensors are always fresh, mutable copies.
  bool mutable_ = false;
  std::int64_t residency_bytes = FileBacked::default_residency_bytes;
};

Tensor load_npy(const std::filesystem::path& path, const LoadOptions& options = {});
// Every tensor of the file by name.
std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path, const LoadOptions& options = {});

// (bytes written so far, total bytes of the file being written).
using SaveProgress = std::function<void(std::int64_t done_bytes, std::int64_t total_bytes)>;

struct SaveOptions {
  SaveProgress progress;  // called only when the file is larger than the threshold
  std::int64_t progress_threshold_bytes = std::int64_t{64} << 20;
  std::map<std::string, std::string> metadata;  // safetensors' "__metadata__"
};

void save_npy(const std::filesystem::path& path, const Tensor& tensor, const SaveOptions& options = {});
// Names must be non-empty, unique (a map) and not "__metadata__".
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SaveOptions& options = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
