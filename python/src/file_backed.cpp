// FileBacked (core-concepts.md 8.4; docs/storage.md): the constructor with
// the specification's signature, `path`, the open-existing entry point
// FileBacked.open, flush, and the residency budget.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

py::object path_object(const std::filesystem::path& p) {
  return py::module_::import("pathlib").attr("Path")(p.string());
}

std::int64_t residency_arg(py::handle value, const char* what) {
  return value.is_none() ? FileBacked::default_residency_bytes : integer_arg(value, what);
}

}  // namespace

void bind_file_backed(py::module_& m) {
  py::class_<FileBacked, Carrier, std::shared_ptr<FileBacked>>(m, "FileBacked", py::is_final(), R"doc(
FileBacked(filename=None, *, mutable=True, dtype, size=0, residency_bytes=None, checksums=False):
storage only (core-concepts.md 8.4): Float32 or Int32 slots in a raw file in
this process's private temporary directory (0700, under TMPDIR, else /tmp;
files 0600), removed at release, destruction or process exit. `filename` is a
bare name in that directory (ValueError for path components; FileExistsError
when the name exists, leaving that file alone); None generates a unique name.
`size` slots, all zero, fixed at creation. The file is memory-mapped and
touched one window of `residency_bytes` (default 64 MiB) at a time, so a file
larger than memory is usable. No operation runs on it (NotImplementedError);
move its tensors to CPU. FileBacked.open maps a file you already have.
Closed to subclassing.)doc")
      .def(py::init([](py::handle filename, py::handle mutable_, py::handle dtype, py::handle size,
                       py::handle residency_bytes, py::handle checksums) {
             std::optional<std::string> name;
             if (!filename.is_none()) {
               if (!PyUnicode_Check(filename.ptr()))
                 throw TypeError(fmt::format("FileBacked: filename must be a str or None, got {}",
                                             py::repr(filename).cast<std::string>()));
               name = filename.cast<std::string>();
             }
             const DType& d = dtype_arg(dtype, "FileBacked: dtype");
             const bool m_ = bool_arg(mutable_, "FileBacked: mutable");
             const std::int64_t n = integer_arg(size, "FileBacked: size");
             const std::int64_t r = residency_arg(residency_bytes, "FileBacked: residency_bytes");
             const bool sums = bool_arg(checksums, "FileBacked: checksums");
             py::gil_scoped_release nogil;
             return FileBacked::create(std::move(name), d, m_, n, r, sums);
           }),
           py::arg("filename") = py::none(), py::kw_only(), py::arg("mutable") = true, py::arg("dtype"),
           py::arg("size") = 0, py::arg("residency_bytes") = py::none(), py::arg("checksums") = false)
      .def_static("open", [](py::handle path, py::handle dtype, py::handle mutable_, py::handle offset, py::handle size,
                             py::handle residency_bytes, py::handle checksums) {
             const std::string p = py::str(py::module_::import("os").attr("fsdecode")(path));
             const DType& d = dtype_arg(dtype, "FileBacked.open: dtype");
             const bool m_ = bool_arg(mutable_, "FileBacked.open: mutable");
             const std::int64_t o = integer_arg(offset, "FileBacked.open: offset");
             std::optional<std::int64_t> n;
             if (!size.is_none()) n = integer_arg(size, "FileBacked.open: size");
             const std::int64_t r = residency_arg(residency_bytes, "FileBacked.open: residency_bytes");
             const bool sums = bool_arg(checksums, "FileBacked.open: checksums");
             py::gil_scoped_release nogil;
             return FileBacked::open(p, d, m_, o, n, r, sums);
           },
           py::arg("path"), py::kw_only(), py::arg("dtype"), py::arg("mutable") = false, py::arg("offset") = 0,
           py::arg("size") = py::none(), py::arg("residency_bytes") = py::none(), py::arg("checksums") = false, R"doc(
Maps `size` slots of an existing file from byte `offset` (a multiple of 4)
without copying: the zero-copy path of format loaders, beyond the
specification. size=None takes every whole slot to the end of the file.
Read-only unless mutable=True (then writes reach your file; call flush() to
see write-back errors). The file is never deleted or resized.)doc")
      .def_property_readonly("path", [](const FileBacked& c) { return path_object(c.path()); },
                             "The file's location (pathlib.Path).")
      .def_property_readonly("owns_file", &FileBacked::owns_file,
                             "True when the carrier created the file (and removes it at release).")
      .def_property_readonly("residency_bytes", &FileBacked::residency_bytes,
                             "The residency window in bytes (rounded up to whole pages).")
      .def_property_readonly("checksums", &FileBacked::checksums,
                             "Per-window xxHash checksums: a region that changed behind the carrier while the window "
                             "was elsewhere is an OSError (errno EBADMSG) before any of its slots is used.")
      .def("flush", [](FileBacked& c) {
             py::gil_scoped_release nogil;
             c.flush();
           },
           "Writes modified pages back to the file and waits (msync): OSError when write-back fails.")
      .def_static("session_directory", [] { return path_object(FileBacked::session_directory()); },
                  "This process's private temporary directory (created on first use).");
}

}  // namespace strideweave::python
