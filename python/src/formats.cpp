// File formats (<strideweave/formats.h>; docs/storage.md, "File formats"):
// load_npy, save_npy, load_safetensors, save_safetensors, inspect_file and
// the pure header parsers parse_npy_header / parse_safetensors_header.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

std::filesystem::path path_arg(py::handle path) {
  return std::filesystem::path(py::str(py::module_::import("os").attr("fsdecode")(path)).cast<std::string>());
}

py::dict header_object(const FileHeader& h) {
  py::dict out;
  out["format"] = h.format == FileFormat::Npy ? "npy" : "safetensors";
  out["version"] = h.version.empty() ? py::object(py::none()) : py::object(py::str(h.version));
  out["header_bytes"] = h.header_bytes;
  out["file_bytes"] = h.file_bytes;
  py::list tensors;
  for (const StoredTensor& t : h.tensors) {
    py::dict d;
    d["name"] = t.name;
    d["dtype"] = dtype_object(DType::from_name(t.dtype));
    d["file_dtype"] = t.file_dtype;
    d["shape"] = py::tuple(py::cast(t.shape));
    d["fortran_order"] = t.fortran_order;
    d["element_count"] = t.element_count;
    d["data_offset"] = t.data_offset;
    d["data_bytes"] = t.data_bytes;
    tensors.append(std::move(d));
  }
  out["tensors"] = std::move(tensors);
  py::dict metadata;
  for (const auto& [k, v] : h.metadata) metadata[py::str(k)] = v;
  out["metadata"] = std::move(metadata);
  return out;
}

using Parser = FileHeader (*)(std::span<const std::byte>, std::int64_t);

py::dict parse_bytes(Parser parser, py::handle data, py::handle file_size, const char* what) {
  if (!PyBytes_Check(data.ptr()))
    throw TypeError(fmt::format("{}: data must be bytes, got {}", what, py::repr(data).cast<std::string>()));
  char* buffer = nullptr;
  Py_ssize_t length = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &length) != 0) throw py::error_already_set();
  const std::string_view view(buffer, static_cast<std::size_t>(length));
  const std::int64_t size =
      file_size.is_none() ? static_cast<std::int64_t>(view.size()) : integer_arg(file_size, what);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(view.data()), view.size());
  return header_object(parser(bytes, size));
}

LoadOptions load_options(py::handle carrier, py::handle mutable_, py::handle residency_bytes, const char* what) {
  LoadOptions o;
  if (carrier.is(py::type::of<CPU>())) {
    o.carrier = LoadTarget::CPU;
  } else if (carrier.is(py::type::of<FileBacked>())) {
    o.carrier = LoadTarget::FileBacked;
  } else {
    throw TypeError(fmt::format("{}: carrier must be strideweave.CPU or strideweave.FileBacked, got {}", what,
                                py::repr(carrier).cast<std::string>()));
  }
  o.mutable_ = bool_arg(mutable_, what);
  if (!residency_bytes.is_none()) o.residency_bytes = integer_arg(residency_bytes, what);
  return o;
}

SaveOptions save_options(py::handle progress, py::handle threshold, const char* what) {
  SaveOptions o;
  if (!threshold.is_none()) o.progress_threshold_bytes = integer_arg(threshold, what);
  if (!progress.is_none()) {
    if (!PyCallable_Check(progress.ptr()))
      throw TypeError(fmt::format("{}: progress must be callable or None, got {}", what,
                                  py::repr(progress).cast<std::string>()));
    auto callback = share(progress);
    o.progress = [callback](std::int64_t done, std::int64_t total) {
      py::gil_scoped_acquire gil;
      callback->object(done, total);
    };
  }
  return o;
}

}  // namespace

void bind_formats(py::module_& m) {
  m.def("parse_npy_header", [](py::handle data, py::handle file_size) {
          return parse_bytes(&parse_npy_header, data, file_size, "parse_npy_header");
        },
        py::arg("data"), py::arg("file_size") = py::none(), R"doc(
Validates a .npy header (the start of a file, as bytes) and describes it as a
dict (format, version, header_bytes, file_bytes, tensors, metadata);
file_size is the whole file's size (default len(data)). A pure function:
ValueError naming the problem for a bad header.)doc");
  m.def("parse_safetensors_header", [](py::handle data, py::handle file_size) {
          return parse_bytes(&parse_safetensors_header, data, file_size, "parse_safetensors_header");
        },
        py::arg("data"), py::arg("file_size") = py::none(),
        "Validates a safetensors header (the start of a file, as bytes) and describes it as parse_npy_header does.");
  m.def("inspect_file", [](py::handle path) {
          const std::filesystem::path p = path_arg(path);
          FileHeader h;
          {
            py::gil_scoped_release nogil;
            h = inspect_file(p);
          }
          return header_object(h);
        },
        py::arg("path"), "Reads and validates the header of a .npy or safetensors file (a dict, as parse_npy_header).");
  m.def("load_npy", [](py::handle path, py::handle carrier, py::handle mutable_, py::handle residency_bytes) {
          const std::filesystem::path p = path_arg(path);
          const LoadOptions o = load_options(carrier, mutable_, residency_bytes, "load_npy");
          std::optional<Tensor> t;
          {
            py::gil_scoped_release nogil;
            t.emplace(load_npy(p, o));
          }
          return tensor_object(std::move(*t));
        },
        py::arg("path"), py::kw_only(), py::arg("carrier") = py::type::of<CPU>(), py::arg("mutable") = false,
        py::arg("residency_bytes") = py::none(), R"doc(
Loads a .npy file (float32, int32 or bool). carrier=CPU reads it into fresh
CPU storage; carrier=FileBacked maps your file without a copy (read-only
unless mutable=True; never deleted). A Fortran-order array keeps its layout
(first axis fastest), no copy.)doc");
  m.def("load_safetensors", [](py::handle path, py::handle carrier, py::handle mutable_, py::handle residency_bytes) {
          const std::filesystem::path p = path_arg(path);
          const LoadOptions o = load_options(carrier, mutable_, residency_bytes, "load_safetensors");
          std::map<std::string, Tensor> ts;
          {
            py::gil_scoped_release nogil;
            ts = load_safetensors(p, o);
          }
          py::dict out;
          for (auto& [name, t] : ts) out[py::str(name)] = tensor_object(std::move(t));
          return out;
        },
        py::arg("path"), py::kw_only(), py::arg("carrier") = py::type::of<CPU>(), py::arg("mutable") = false,
        py::arg("residency_bytes") = py::none(),
        "Loads every tensor of a safetensors file into a dict by name (carrier and mutable as load_npy).");
  m.def("save_npy", [](py::handle path, py::handle tensor, py::handle progress, py::handle threshold) {
          const std::filesystem::path p = path_arg(path);
          const Tensor& t = tensor_arg(tensor, "save_npy: tensor");
          const SaveOptions o = save_options(progress, threshold, "save_npy");
          py::gil_scoped_release nogil;
          save_npy(p, t, o);
        },
        py::arg("path"), py::arg("tensor"), py::kw_only(), py::arg("progress") = py::none(),
        py::arg("progress_threshold_bytes") = py::none(), R"doc(
Writes the tensor (float32, int32 or bool; any carrier and layout) as a C-order
.npy file, atomically: a temporary file in the same directory, fsync, rename,
fsync of the directory. A save larger than progress_threshold_bytes (default
64 MiB) calls progress(done_bytes, total_bytes) as it writes.)doc");
  m.def("save_safetensors", [](py::handle path, py::handle tensors, py::handle metadata, py::handle progress,
                               py::handle threshold) {
          const std::filesystem::path p = path_arg(path);
          if (!PyDict_Check(tensors.ptr()))
            throw TypeError(fmt::format("save_safetensors: tensors must be a dict of str to Tensor, got {}",
                                        py::repr(tensors).cast<std::string>()));
          std::map<std::string, Tensor> ts;
          for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(tensors)) {
            if (!PyUnicode_Check(k.ptr()))
              throw TypeError(fmt::format("save_safetensors: a tensor name must be a str, got {}",
                                          py::repr(k).cast<std::string>()));
            ts.emplace(k.cast<std::string>(), tensor_arg(v, "save_safetensors: tensor"));
          }
          SaveOptions o = save_options(progress, threshold, "save_safetensors");
          if (!metadata.is_none()) {
            if (!PyDict_Check(metadata.ptr()))
              throw TypeError("save_safetensors: metadata must be a dict of str to str or None");
            for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(metadata)) {
              if (!PyUnicode_Check(k.ptr()) || !PyUnicode_Check(v.ptr()))
                throw TypeError("save_safetensors: metadata must be a dict of str to str or None");
              o.metadata.emplace(k.cast<std::string>(), v.cast<std::string>());
            }
          }
          py::gil_scoped_release nogil;
          save_safetensors(p, ts, o);
        },
        py::arg("path"), py::arg("tensors"), py::kw_only(), py::arg("metadata") = py::none(),
        py::arg("progress") = py::none(), py::arg("progress_threshold_bytes") = py::none(),
        "Writes a dict of named tensors as a safetensors file, atomically (as save_npy).");
}

}  // namespace strideweave::python
