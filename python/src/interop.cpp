// Data in and out without copies (docs/python.md, "numpy and DLPack").
//
//  - CPU tensors export their memory through the buffer protocol (Float32
//    "f", Int32 "i", Bool "?"), so numpy.asarray(tensor) and memoryview(tensor)
//    view it; the view is writable when the carrier is publicly mutable and
//    the layout injective (a broadcast view is read-only).
//  - CPU tensors export DLPack through the C++ entry point to_dlpack
//    (<strideweave/dlpack.h>; Debian libdlpack-dev, DLPack 0.6):
//    __dlpack__() / __dlpack_device__() == (1, 0), Float32 and Int32 only
//    (core-concepts.md 7.5); numpy.from_dlpack(tensor) views it.
//  - strideweave.asarray(obj) wraps the memory of any object exporting the
//    buffer protocol (a numpy array) in a CPU carrier without a copy,
//    keeping the exporter alive for as long as the carrier lives; a read-only
//    exporter gives an immutable carrier.
//  - strideweave.tensor(data, *, dtype=None, carrier=None), which copies
//    Python data and numpy arrays, is the literal reader (literal.cpp).
// Other carriers export nothing (BufferError), and a hierarchical mode that
// does not coalesce to one stride cannot be described (BufferError).
//
// Writes through an exported view bypass versioning, as core-concepts.md 2.2
// says of DLPack. While a view or capsule is alive, release() of the carrier
// raises BufferError instead of freeing memory the view points at.
#include "bindings.h"

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <unordered_map>

namespace strideweave::python {
namespace {

// ---- export accounting

std::mutex& exports_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::unordered_map<const Carrier*, std::int64_t>& exports() {
  static auto* e = new std::unordered_map<const Carrier*, std::int64_t>();
  return *e;
}
void add_export(const Carrier* c) {
  std::lock_guard lock(exports_mutex());
  ++exports()[c];
}
void remove_export(const Carrier* c) {
  std::lock_guard lock(exports_mutex());
  auto it = exports().find(c);
  if (it != exports().end() && --it->second == 0) exports().erase(it);
}

// ---- what an export describes

struct Description {
  std::shared_ptr<Carrier> carrier;
  char* data = nullptr;                // the element at the tensor's offset
  std::vector<std::int64_t> shape;     // top-level extents
  std::vector<std::int64_t> strides;   // in elements
  std::int64_t itemsize = 0;
  bool writable = false;
};

CPU& cpu_carrier(const Tensor& t, const char* what) {
  const Carrier& c = *t.carrier();
  if (!(c.exact_class() == carrier_class<CPU>()))
    throw BufferError(fmt::format("{}: a {} tensor does not export its memory; only CPU tensors do "
                                  "(core-concepts.md 7.5)",
                                  what, c.class_name()));
  c.require_live(what);
  return static_cast<CPU&>(*t.carrier());
}

Description describe(const Tensor& t, const char* what) {
  CPU& cpu = cpu_carrier(t, what);
  Description d;
  d.carrier = t.carrier();
  d.itemsize = static_cast<std::int64_t>(cpu.element_bytes());
  for (std::size_t axis = 0; axis < t.rank(); ++axis) {
    const std::optional<std::int64_t> s = t.layout().mode_stride(axis);
    if (!s)
      throw BufferError(fmt::format("{}: mode {} of the layout {} does not coalesce to one stride, so no strided "
                                    "array describes it",
                                    what, axis, t.layout().to_string()));
    d.shape.push_back(t.shape().extent(axis));
    d.strides.push_back(*s);
  }
  static char empty_storage alignas(64)[64];
  char* base = cpu.data<char>();
  d.data = base ? base + t.offset() * d.itemsize : empty_storage;
  d.writable = cpu.is_mutable() && t.layout().is_injective();
  return d;
}

bool contiguous(const Description& d, bool c_order) {
  std::int64_t expected = 1;
  const std::size_t n = d.shape.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t axis = c_order ? n - 1 - k : k;
    if (d.shape[axis] == 1) continue;
    if (d.shape[axis] == 0) return true;
    if (d.strides[axis] != expected) return false;
    expected *= d.shape[axis];
  }
  return true;
}

// ---- the buffer protocol of Tensor

struct BufferExport {
  std::shared_ptr<Carrier> carrier;
  std::vector<Py_ssize_t> shape;
  std::vector<Py_ssize_t> strides;
};

const char* buffer_format(const SimpleDType& d) {
  if (&d == &DType::Float32()) return "f";
  if (&d == &DType::Int32()) return "i";
  return "?";
}

int tensor_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    const Tensor& t = tensor_arg(obj, "buffer export");  // TypeError for a Tensor never initialised
    const Description d = describe(t, "buffer export");
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && !d.writable)
      throw BufferError(d.carrier->is_mutable() ? "buffer export: a broadcast view (stride 0) is exported read-only"
                                                : "buffer export: the carrier is not publicly mutable");
    const bool want_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    if ((((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS || !want_strides) && !contiguous(d, true)) ||
        ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !contiguous(d, false)) ||
        ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !contiguous(d, true) && !contiguous(d, false)))
      throw BufferError("buffer export: the consumer asked for a contiguous buffer and the layout is strided");
    auto* ex = new BufferExport{d.carrier, {}, {}};
    for (std::size_t i = 0; i < d.shape.size(); ++i) {
      ex->shape.push_back(static_cast<Py_ssize_t>(d.shape[i]));
      ex->strides.push_back(static_cast<Py_ssize_t>(d.strides[i] * d.itemsize));
    }
    view->buf = d.data;
    view->obj = obj;
    Py_INCREF(obj);
    view->len = static_cast<Py_ssize_t>(t.size() * d.itemsize);
    view->readonly = d.writable ? 0 : 1;
    view->itemsize = static_cast<Py_ssize_t>(d.itemsize);
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(t.dtype())) : nullptr;
    view->ndim = static_cast<int>(d.shape.size());
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? ex->shape.data() : nullptr;
    view->strides = want_strides ? ex->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = ex;
    add_export(ex->carrier.get());
    return 0;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const BufferError& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const RuntimeError& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  }
  return -1;
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) {
  auto* ex = static_cast<BufferExport*>(view->internal);
  remove_export(ex->carrier.get());
  delete ex;
}

// ---- DLPack: the C++ entry point strideweave::to_dlpack (<strideweave/dlpack.h>),
// wrapped so that the export is counted while the capsule or its consumer
// holds it (release() refuses meanwhile).

struct CountedExport {
  DLManagedTensor outer{};
  DLManagedTensor* inner = nullptr;  // to_dlpack's, which owns the arrays and the carrier reference
  const Carrier* carrier = nullptr;
};

void counted_deleter(DLManagedTensor* self) {
  auto* ex = static_cast<CountedExport*>(self->manager_ctx);
  remove_export(ex->carrier);
  if (ex->inner->deleter) ex->inner->deleter(ex->inner);
  delete ex;
}

void dlpack_capsule_destructor(PyObject* capsule) {
  // A capsule a consumer took is renamed "used_dltensor"; the consumer then
  // calls the deleter. An unconsumed one is ours to delete.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    managed->deleter(managed);
  } else {
    PyErr_Clear();
  }
}

// (device_type, device_id) from a Python pair: TypeError unless None, a
// tuple or a list; ValueError unless two elements.
std::optional<std::pair<long long, long long>> pair_arg(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  if (!PyTuple_Check(value.ptr()) && !PyList_Check(value.ptr()))
    throw TypeError(fmt::format("__dlpack__: {} must be None, a tuple or a list, got {}", what,
                                py::repr(value).cast<std::string>()));
  py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
  if (py::len(seq) != 2)
    throw ValueError(fmt::format("__dlpack__: {} must have two elements, got {}", what, py::len(seq)));
  return std::pair<long long, long long>{seq[0].cast<long long>(), seq[1].cast<long long>()};
}

py::capsule to_dlpack_capsule(const Tensor& t, py::handle max_version, py::handle dl_device, py::handle copy) {
  // The carrier's opt-in first (BufferError for a carrier that is not CPU).
  const std::pair<int, int> device = dlpack_device(t);
  if (auto v = pair_arg(max_version, "max_version")) {
    if (v->first < 0 || v->second < 0)
      throw ValueError("__dlpack__: max_version's components must be non-negative");
    // Debian's dlpack.h is DLPack 0.6: the legacy structure is produced for
    // every ceiling (docs/storage.md, "DLPack export").
  }
  if (auto d = pair_arg(dl_device, "dl_device")) {
    if (d->first != device.first || d->second != device.second)
      throw BufferError(fmt::format("__dlpack__: dl_device ({}, {}) is not the tensor's device ({}, {}); "
                                    "cross-device export is not implemented",
                                    d->first, d->second, device.first, device.second));
  }
  if (!copy.is_none() && py::bool_(py::reinterpret_borrow<py::object>(copy)))
    throw BufferError("__dlpack__: copy=True is not implemented (export is zero-copy only)");
  DLManagedTensor* inner = nullptr;
  {
    py::gil_scoped_release nogil;
    inner = strideweave::to_dlpack(t);
  }
  auto* ex = new CountedExport;
  ex->inner = inner;
  ex->carrier = t.carrier().get();
  ex->outer.dl_tensor = inner->dl_tensor;
  ex->outer.manager_ctx = ex;
  ex->outer.deleter = &counted_deleter;
  add_export(ex->carrier);
  PyObject* capsule = PyCapsule_New(&ex->outer, "dltensor", &dlpack_capsule_destructor);
  if (!capsule) {
    counted_deleter(&ex->outer);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// ---- strided host memory as a CPU tensor (asarray, from_dlpack)

// Element strides of an exporter's array and the slots they reach: the
// extents and non-negative element strides as given (none: row-major
// compact), the cosize (0 for an empty array), products checked against
// 64-bit overflow. The caller checked the strides' signs and units.
struct HostArrayLayout {
  std::vector<std::int64_t> extents, strides;
  std::int64_t cosize = 0;
};
HostArrayLayout host_array_layout(const char* what, std::vector<std::int64_t> extents,
                                  std::optional<std::vector<std::int64_t>> strides) {
  HostArrayLayout out;
  const auto overflow = [what] {
    return ValueError(fmt::format("{}: the producer's shape and strides overflow 64 bits", what));
  };
  std::int64_t compact = 1, cosize = 1;
  bool empty = false;
  out.strides.resize(extents.size());
  for (std::size_t k = extents.size(); k-- > 0;) {
    if (extents[k] < 0) throw ValueError(fmt::format("{}: the producer's shape has a negative extent", what));
    out.strides[k] = strides ? (*strides)[k] : compact;
    if (__builtin_mul_overflow(compact, std::max<std::int64_t>(extents[k], 1), &compact)) throw overflow();
    if (extents[k] == 0) empty = true;
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(std::max<std::int64_t>(extents[k] - 1, 0), out.strides[k], &reach) ||
        __builtin_add_overflow(cosize, reach, &cosize))
      throw overflow();
  }
  out.extents = std::move(extents);
  out.cosize = empty ? 0 : cosize;
  return out;
}

// A CPU tensor over `data` (null for an empty array) laid out as `layout`;
// its carrier keeps `owner` (which releases the exporter's memory when it
// dies) alive. Owner has a `std::shared_ptr<CPU> cpu` it drops first.
template <class Owner>
Tensor wrap_host_array(const std::shared_ptr<Owner>& owner, void* data, HostArrayLayout layout,
                       const SimpleDType& dtype, bool writable) {
  static char empty_storage alignas(64)[64];
  owner->cpu = CPU::wrap(data ? data : empty_storage, layout.cosize, dtype, writable);
  std::shared_ptr<Carrier> carrier(owner, owner->cpu.get());
  return Tensor(std::move(carrier), 0, Layout(Shape::of(layout.extents), Stride::of(layout.strides)));
}

// ---- asarray

// The exporter's buffer, released (with the GIL) when the carrier dies.
struct WrappedBuffer {
  Py_buffer view{};
  std::shared_ptr<CPU> cpu;
  WrappedBuffer() = default;
  WrappedBuffer(const WrappedBuffer&) = delete;
  WrappedBuffer& operator=(const WrappedBuffer&) = delete;
  ~WrappedBuffer() {
    cpu.reset();
    if (!view.obj) return;
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    PyBuffer_Release(&view);
  }
};

const SimpleDType& dtype_of_format(const char* format, Py_ssize_t itemsize) {
  std::string f = format ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.erase(0, 1);
  if (f == "f" && itemsize == 4) return DType::Float32();
  if ((f == "i" || f == "l") && itemsize == 4) return DType::Int32();
  if (f == "?" && itemsize == 1) return DType::Bool();
  throw ValueError(fmt::format("asarray: elements of format '{}' ({} bytes) have no strideweave storage dtype "
                               "(float32, int32, bool); convert first, e.g. array.astype(numpy.float32)",
                               format ? format : "B", itemsize));
}

Tensor asarray(py::handle obj) {
  auto wrapped = std::make_shared<WrappedBuffer>();
  bool writable = true;
  if (PyObject_GetBuffer(obj.ptr(), &wrapped->view, PyBUF_RECORDS) != 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(obj.ptr(), &wrapped->view, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      wrapped->view.obj = nullptr;
      throw TypeError(fmt::format("asarray: {} does not export its memory (the buffer protocol); build a tensor "
                                  "from Python data with strideweave.tensor(data)",
                                  py::repr(obj).cast<std::string>()));
    }
  }
  const Py_buffer& v = wrapped->view;
  const SimpleDType& dtype = dtype_of_format(v.format, v.itemsize);
  std::vector<std::int64_t> extents(v.shape, v.shape + v.ndim);
  std::optional<std::vector<std::int64_t>> strides;  // none: C-contiguous
  if (v.strides) {
    strides.emplace();
    for (int i = 0; i < v.ndim; ++i) {
      const std::int64_t s = v.strides[i];
      if (s < 0)
        throw ValueError("asarray: a negative stride has no strideweave layout (strides are non-negative); use "
                         "numpy.ascontiguousarray first");
      if (s % v.itemsize != 0)
        throw ValueError(fmt::format("asarray: the stride {} is not a multiple of the element size {}", s, v.itemsize));
      strides->push_back(s / v.itemsize);
    }
  }
  return wrap_host_array(wrapped, v.buf, host_array_layout("asarray", std::move(extents), std::move(strides)), dtype,
                         writable && !v.readonly);
}

// ---- from_dlpack

// A producer's DLManagedTensor, its deleter called (with the GIL: a Python
// producer's deleter may touch Python objects) when the carrier dies.
struct WrappedDlpack {
  DLManagedTensor* managed = nullptr;
  std::shared_ptr<CPU> cpu;
  WrappedDlpack() = default;
  WrappedDlpack(const WrappedDlpack&) = delete;
  WrappedDlpack& operator=(const WrappedDlpack&) = delete;
  ~WrappedDlpack() {
    cpu.reset();
    if (!managed || !managed->deleter) return;
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    managed->deleter(managed);
  }
};

const SimpleDType& dtype_of_dlpack(const DLDataType& t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::Float32();
    if (t.code == kDLInt && t.bits == 32) return DType::Int32();
    if (t.code == 6 /* kDLBool: DLPack 0.8, after Debian's header */ && t.bits == 8) return DType::Bool();
  }
  throw ValueError(fmt::format("from_dlpack: elements of DLPack type (code {}, {} bits, {} lanes) have no "
                               "strideweave storage dtype (float32, int32, bool); convert first",
                               static_cast<int>(t.code), static_cast<int>(t.bits), static_cast<int>(t.lanes)));
}

// A CPU tensor over the memory of `obj`'s DLPack capsule (obj.__dlpack__()),
// without a copy. The capsule is consumed (renamed "used_dltensor") only
// once every check passed; before that nothing of the producer's is kept.
Tensor from_dlpack(py::handle obj) {
  if (!py::hasattr(obj, "__dlpack__"))
    throw TypeError(fmt::format("from_dlpack: {} has no __dlpack__ method", py::repr(obj).cast<std::string>()));
  if (py::hasattr(obj, "__dlpack_device__")) {
    const py::tuple device = obj.attr("__dlpack_device__")();
    if (device.size() != 2 || device[0].cast<int>() != kDLCPU)
      throw BufferError(fmt::format("from_dlpack: the producer's device {} is not the CPU (1, 0); move it to host "
                                    "memory first",
                                    py::repr(device).cast<std::string>()));
  }
  py::object capsule = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw TypeError("from_dlpack: __dlpack__ did not return an unconsumed \"dltensor\" capsule");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU)
    throw BufferError(fmt::format("from_dlpack: the tensor is on DLPack device type {}, not the CPU",
                                  static_cast<int>(t.device.device_type)));
  const SimpleDType& dtype = dtype_of_dlpack(t.dtype);
  const std::int64_t itemsize = t.dtype.bits / 8;
  if (t.byte_offset % static_cast<std::uint64_t>(itemsize) != 0)
    throw ValueError("from_dlpack: the byte offset is not a multiple of the element size");
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) throw ValueError("from_dlpack: the producer's shape is malformed");
  std::optional<std::vector<std::int64_t>> strides;  // none: row-major compact
  if (t.strides) {
    strides.emplace(t.strides, t.strides + t.ndim);
    for (std::int64_t s : *strides)
      if (s < 0)
        throw ValueError("from_dlpack: a negative stride has no strideweave layout (strides are non-negative)");
  }
  HostArrayLayout layout =
      host_array_layout("from_dlpack", std::vector<std::int64_t>(t.shape, t.shape + t.ndim), std::move(strides));
  auto wrapped = std::make_shared<WrappedDlpack>();
  // DLPack 0.6 has no read-only flag: the memory is writable, as numpy's
  // and torch's own from_dlpack take it.
  Tensor tensor = wrap_host_array(wrapped, t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr,
                                  std::move(layout), dtype, true);
  // Every check passed: take the capsule's ownership (from here nothing throws).
  if (PyCapsule_SetName(capsule.ptr(), "used_dltensor") != 0) throw py::error_already_set();
  wrapped->managed = managed;
  return tensor;
}

}  // namespace

void require_no_exports(const Carrier& carrier, const char* what) {
  std::lock_guard lock(exports_mutex());
  auto it = exports().find(&carrier);
  if (it != exports().end())
    throw BufferError(fmt::format("{}: {} exported view(s) (numpy arrays, memoryviews or DLPack capsules) still "
                                  "point at this {} carrier's memory",
                                  what, it->second, carrier.class_name()));
}

void bind_interop(py::module_& m) {
  // The buffer protocol of Tensor, installed on the heap type pybind11 made
  // with py::buffer_protocol() (its own getbuffer cannot keep a reference on
  // the carrier or count exports).
  py::object tensor = m.attr("Tensor");
  auto* heap = reinterpret_cast<PyHeapTypeObject*>(tensor.ptr());
  heap->as_buffer.bf_getbuffer = &tensor_getbuffer;
  heap->as_buffer.bf_releasebuffer = &tensor_releasebuffer;

  py::class_<Tensor, TensorHolder> cls = py::reinterpret_borrow<py::class_<Tensor, TensorHolder>>(tensor);
  cls.def("__dlpack__", [](const Tensor& t, py::handle, py::handle max_version, py::handle dl_device,
                           py::handle copy) { return to_dlpack_capsule(t, max_version, dl_device, copy); },
          py::arg("stream") = py::none(), py::kw_only(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule aliasing this CPU tensor's memory (Float32, Int32; strideweave::to_dlpack): zero-copy, "
          "one dimension per leaf mode, byte_offset = offset * 4; writes through it bypass versioning. stream is "
          "accepted and ignored; dl_device must be the tensor's; copy=True is a BufferError. BufferError for "
          "another carrier or dtype.");
  cls.def("__dlpack_device__", [](const Tensor& t) {
        const std::pair<int, int> d = dlpack_device(t);
        return py::make_tuple(d.first, d.second);
      }, "(1, 0): kDLCPU, device 0, for any CPU tensor. BufferError for a tensor that is not on CPU.");

  m.def("from_dlpack", [](py::handle obj) { return tensor_object(from_dlpack(obj)); }, py::arg("obj"), R"doc(
from_dlpack(obj): a CPU tensor over the memory of obj's DLPack capsule
(obj.__dlpack__(): numpy arrays, torch tensors on the CPU, ...) without a
copy; the producer's memory lives as long as the tensor. float32, int32 and
bool elements; the producer's shape and strides (none: row-major); a
negative stride is a ValueError; a producer on another device a
BufferError.)doc");
  m.def("asarray", [](py::handle obj) -> py::object {
        if (is_tensor(obj)) return py::reinterpret_borrow<py::object>(obj);
        // The buffer protocol first (numpy: byte order, read-only flags);
        // then DLPack (torch tensors, other producers without a buffer).
        if (PyObject_CheckBuffer(obj.ptr()) || !py::hasattr(obj, "__dlpack__")) return tensor_object(asarray(obj));
        return tensor_object(from_dlpack(obj));
      }, py::arg("obj"), R"doc(
asarray(obj): a CPU tensor over the memory of `obj` (a numpy array, any
object exporting the buffer protocol, or any object with __dlpack__ such as
a torch tensor on the CPU: from_dlpack) without a copy. The tensor has obj's
shape and strides; the carrier keeps obj alive. float32, int32 and bool
elements only (ValueError otherwise: convert first); negative strides are a
ValueError; a read-only obj gives an immutable carrier. A Tensor is returned
as it is.)doc");
}

}  // namespace strideweave::python
