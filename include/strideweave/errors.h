// strideweave/errors.h — the one exception hierarchy.
//
// Contract (cpp-mapping.md, "Errors"): every error the specifications name in
// Python spelling is a C++ class of the same name deriving from
// strideweave::Error (itself a std::exception), so that the later Python
// binding maps each one to the built-in of the same name.
//
// Additions beyond cpp-mapping.md's list (documented in docs/errors.md):
//   LookupError  - core-concepts names it (dtype name resolution);
//   IndexError   - core-concepts names it (carrier index out of range); it
//                  derives from LookupError exactly as in Python.
//   MemoryError  - storage that cannot be allocated (std::bad_alloc never
//                  escapes the library; the Python binding raises Python's
//                  MemoryError).
//   OSError      - a system call on a file failed (FileBacked): carries the
//                  errno, the file and the byte offset concerned; the Python
//                  binding raises Python's OSError (whose errno picks the
//                  subclass: FileExistsError for EEXIST, ...).
//
// Every message names the operation or entity it concerns. A thrown error
// leaves registries, carriers, versions and tensors exactly as they were.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }
  // The Python-style class name ("TypeError", ...), used by the command line
  // and the later Python binding.
  virtual const char* type_name() const noexcept { return "Error"; }

 private:
  std::string message_;
};

#define STRIDEWEAVE_DECLARE_ERROR(Name, Base)                     \
  class Name : public Base {                                      \
   public:                                                        \
    using Base::Base;                                             \
    const char* type_name() const noexcept override { return #Name; } \
  };

STRIDEWEAVE_DECLARE_ERROR(TypeError, Error)
STRIDEWEAVE_DECLARE_ERROR(ValueError, Error)
STRIDEWEAVE_DECLARE_ERROR(RuntimeError, Error)
STRIDEWEAVE_DECLARE_ERROR(NotImplementedError, RuntimeError)
STRIDEWEAVE_DECLARE_ERROR(OverflowError, Error)
STRIDEWEAVE_DECLARE_ERROR(AttributeError, Error)
STRIDEWEAVE_DECLARE_ERROR(BufferError, Error)
STRIDEWEAVE_DECLARE_ERROR(LookupError, Error)
STRIDEWEAVE_DECLARE_ERROR(IndexError, LookupError)
STRIDEWEAVE_DECLARE_ERROR(KeyError, LookupError)
STRIDEWEAVE_DECLARE_ERROR(MemoryError, Error)

#undef STRIDEWEAVE_DECLARE_ERROR

// Provider output that conflicts with a resolved invocation
// (operation-semantics.md, "Result publication validates provider output").
// field() names the conflicting field: "count", "carrier", "physical size",
// "dtype", "shape", "layout", "alias", "mutation" or "completion".
class ProviderContractError : public RuntimeError {
 public:
  ProviderContractError(std::string field, std::string message)
      : RuntimeError(std::move(message)), field_(std::move(field)) {}
  const char* type_name() const noexcept override { return "ProviderContractError"; }
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// A failed system call on a file (docs/storage.md, "Errors"). error_number()
// is the errno the call reported (ENOSPC, EIO, EEXIST, ...), filename() the
// file (or directory) concerned, offset() the byte offset in it where the
// failing call worked, when there is one. The message names all three and
// the call.
class OSError : public Error {
 public:
  OSError(std::string message, int error_number, std::string filename, std::optional<std::int64_t> offset)
      : Error(std::move(message)), error_number_(error_number), filename_(std::move(filename)), offset_(offset) {}
  const char* type_name() const noexcept override { return "OSError"; }
  int error_number() const noexcept { return error_number_; }
  const std::string& filename() const noexcept { return filename_; }
  std::optional<std::int64_t> offset() const noexcept { return offset_; }

 private:
  int error_number_;
  std::string filename_;
  std::optional<std::int64_t> offset_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
