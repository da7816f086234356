// strideweave.tensor(data, *, dtype=None, carrier=None): the literal reader
// (docs/python.md, "Tensors from Python data").
//
// This file only walks Python objects; the shape, raggedness, dtype
// inference, conversion and ordering rules are LiteralBuilder's
// (include/strideweave/literal.h). `data` is read once, depth first:
//  - a number (bool, int, float, numpy scalars, numbers.Real) is a leaf;
//  - a list or tuple is one axis; so is any other iterable (range,
//    generators, numpy object arrays, ...), materialised once as a tuple;
//    a str, bytes, bytearray, mapping, set or Tensor is none of these: it
//    is a leaf that is not a number (a TypeError when it is converted);
//  - an object exporting the buffer protocol with a numeric element format
//    (a numpy array of bool, any integer or float16/32/64 dtype) is its
//    whole shape at once, read from its memory by the builder; another
//    element format is a TypeError (object arrays are iterated); a numpy
//    scalar (numpy.generic) is a leaf, never an array.
// Every list is snapshotted as a tuple before its items are looked at, and
// the reader owns every container it descends into (and every buffer, until
// the builder has read it), so no Python code run meanwhile (an item's
// __index__, a generator) can free an item it still reads. The builder
// refuses nesting deeper than kMaxLiteralRank before the C stack can
// overflow (a self-containing list included).
#include "bindings.h"

#include <fmt/format.h>

#include <bit>

namespace strideweave::python {
namespace {

// A buffer held until the builder has read it (the reader runs with the GIL).
struct HeldBuffer {
  Py_buffer view{};
  HeldBuffer() = default;
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  ~HeldBuffer() {
    if (view.obj) PyBuffer_Release(&view);
  }
};

struct Reader {
  LiteralBuilder builder{"tensor"};
  std::vector<py::object> containers;  // the tuples whose items are read
  std::vector<std::unique_ptr<HeldBuffer>> buffers;
};

std::string format_text(const Py_buffer& v) { return v.format ? v.format : "B"; }

// The element of a struct-module format ("<i", "=f", "?", "l", ...), or
// nullopt for one that holds no real numbers. "O" (objects) is handled by
// the caller.
std::optional<HostElement> host_element(const Py_buffer& v, bool& swap) {
  std::string_view f = v.format ? v.format : "B";
  swap = false;
  if (!f.empty() && std::string_view("@=<>!").find(f.front()) != std::string_view::npos) {
    const char order = f.front();
    if (order == '<') swap = std::endian::native != std::endian::little;
    if (order == '>' || order == '!') swap = std::endian::native != std::endian::big;
    f.remove_prefix(1);
  }
  if (f.size() != 1) return std::nullopt;
  const auto size = v.itemsize;
  using E = HostElement;
  auto sized = [size](E e1, E e2, E e4, E e8) -> std::optional<E> {
    switch (size) {
      case 1: return e1;
      case 2: return e2;
      case 4: return e4;
      case 8: return e8;
      default: return std::nullopt;
    }
  };
  switch (f.front()) {
    case '?': return size == 1 ? std::optional(E::Bool) : std::nullopt;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return sized(E::Int8, E::Int16, E::Int32, E::Int64);
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
      return sized(E::UInt8, E::UInt16, E::UInt32, E::UInt64);
    case 'e': case 'f': case 'd':
      return size == 1 ? std::nullopt : sized(E::UInt8, E::Float16, E::Float32, E::Float64);
    default: return std::nullopt;
  }
}

// A numpy scalar (numpy.generic): a number, or a leaf that is not one.
// Its buffer is its raw bytes (a datetime64 exports eight uint8), so it
// never takes the array path. numpy is not imported for this: without it
// in sys.modules no numpy object exists.
bool is_numpy_scalar(py::handle item) {
  static PyObject* generic = nullptr;  // a strong reference, kept for the process
  if (!generic) {
    PyObject* numpy = PyDict_GetItemString(PySys_GetObject("modules"), "numpy");
    if (!numpy) return false;
    generic = PyObject_GetAttrString(numpy, "generic");
    if (!generic) throw py::error_already_set();
  }
  const int r = PyObject_IsInstance(item.ptr(), generic);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

bool is_leaf_by_type(py::handle item) {
  PyObject* o = item.ptr();
  if (PyFloat_Check(o) || PyLong_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) ||
      PyDict_Check(o) || PyAnySet_Check(o) || is_tensor(item))
    return true;
  return is_real_number(item) || is_numpy_scalar(item);
}

bool is_mapping(py::handle item) {
  static py::object* mapping = new py::object(py::module_::import("collections.abc").attr("Mapping"));
  return py::isinstance(item, *mapping);
}

// Hands a buffer with a numeric element format to the builder and returns
// true; false for no buffer or an object array (iterate it instead).
// TypeError for another element format.
bool read_array(py::handle item, Reader& r) {
  if (!PyObject_CheckBuffer(item.ptr())) return false;
  auto held = std::make_unique<HeldBuffer>();
  if (PyObject_GetBuffer(item.ptr(), &held->view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    held->view.obj = nullptr;
    return false;
  }
  const Py_buffer& v = held->view;
  const std::string format = format_text(v);
  if (format == "O" || format == "@O" || format == "=O") return false;
  HostArrayView view;
  std::optional<HostElement> element = host_element(v, view.byte_swapped);
  if (!element) {
    const std::string type = py::repr(py::type::handle_of(item)).cast<std::string>();
    if (format.find('g') != std::string::npos)
      throw TypeError(fmt::format("tensor: {} holds long doubles (element format '{}'); convert first, e.g. "
                                  "array.astype(numpy.float64), so that the value is rounded to Float32 once, "
                                  "knowingly",
                                  type, format));
    throw TypeError(fmt::format("tensor: {} of element format '{}' ({} bytes) holds no real numbers (bool, "
                                "integer or float16/32/64 elements)",
                                type, format, v.itemsize));
  }
  view.element = *element;
  view.data = v.buf;
  if (v.shape) view.shape.assign(v.shape, v.shape + v.ndim);
  else if (v.ndim == 1) view.shape.push_back(v.len / v.itemsize);
  if (v.strides) {
    view.byte_strides.assign(v.strides, v.strides + v.ndim);
  } else {  // C-contiguous where the exporter gave no strides
    view.byte_strides.resize(view.shape.size());
    std::int64_t stride = v.itemsize;
    for (std::size_t i = view.shape.size(); i-- > 0;) {
      view.byte_strides[i] = stride;
      stride *= view.shape[i];
    }
  }
  r.buffers.reserve(r.buffers.size() + 1);  // the push below cannot fail once the builder holds the view
  r.builder.array(std::move(view));
  r.buffers.push_back(std::move(held));
  return true;
}

// A leaf: a number for the builder, or a leaf that is no number.
void read_leaf(py::handle item, Reader& r) {
  if (!is_real_number(item)) {
    r.builder.not_a_number(py::repr(item).cast<std::string>(),
                           py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
    return;
  }
  try {
    r.builder.number(weak_scalar_arg(item, "tensor"));
  } catch (const OverflowError&) {  // an integer beyond (-2**127, 2**127)
    const int negative = PyObject_RichCompareBool(item.ptr(), py::int_(0).ptr(), Py_LT);
    if (negative < 0) throw py::error_already_set();
    r.builder.integer_beyond_int128(negative == 1, py::str(item).cast<std::string>());
  }
}

void read(py::handle item, Reader& r);

void read_container(py::tuple items, Reader& r) {
  const auto n = static_cast<std::int64_t>(PyTuple_GET_SIZE(items.ptr()));
  r.builder.open(n);  // refuses a ragged length or nesting too deep before descending
  PyObject* tuple = items.ptr();
  r.containers.push_back(std::move(items));  // owns the items from here on
  for (Py_ssize_t i = 0; i < n; ++i) read(PyTuple_GET_ITEM(tuple, i), r);
  r.builder.close();
}

void read(py::handle item, Reader& r) {
  PyObject* o = item.ptr();
  if (PyList_Check(o)) return read_container(py::reinterpret_steal<py::tuple>(PyList_AsTuple(o)), r);
  if (PyTuple_Check(o)) return read_container(py::reinterpret_borrow<py::tuple>(o), r);
  if (!is_leaf_by_type(item)) {
    if (read_array(item, r)) return;
    if (!is_mapping(item)) {
      py::object iterator = py::reinterpret_steal<py::object>(PyObject_GetIter(o));
      if (iterator) {
        // The iteration's own errors (a generator's) propagate as they are.
        PyObject* tuple = PySequence_Tuple(iterator.ptr());
        if (!tuple) throw py::error_already_set();
        return read_container(py::reinterpret_steal<py::tuple>(tuple), r);
      }
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
      PyErr_Clear();  // not iterable: a leaf, refused when converted unless it is a number
    }
  }
  read_leaf(item, r);
}

// The storage for `carrier`: None (CPU), a shipped class, or a prototype.
Tensor build(const Reader& r, py::handle dtype, py::handle carrier) {
  const SimpleDType& d = dtype.is_none() ? r.builder.inferred_dtype() : simple_dtype_arg(dtype, "tensor: dtype");
  if (py::isinstance<Carrier>(carrier)) return r.builder.build(&d, *carrier_arg(carrier, "tensor: carrier"));
  const std::vector<Value> logical = r.builder.values(d);
  std::shared_ptr<Carrier> storage;
  if (carrier.is_none()) {
    storage = CPU::from_values(logical, d);
  } else {
    const CarrierClass cls = carrier_class_arg(carrier, "tensor: carrier");
    const ShippedCarrier* shipped = nullptr;
    for (const ShippedCarrier& s : shipped_carriers())
      if (s.cls == cls) shipped = &s;
    if (!shipped)
      throw TypeError("tensor: carrier must be a shipped carrier class (Generic, CPU) or a carrier instance to use "
                      "as a prototype");
    storage = shipped->make(logical, d);
  }
  return Tensor(std::move(storage), 0, Layout::compact(r.builder.shape()));
}

Tensor tensor_from_data(py::handle data, py::handle dtype, py::handle carrier) {
  Reader r;
  read(data, r);
  return build(r, dtype, carrier);
}

py::tuple shape_tuple(const Shape& shape) {
  py::tuple t(shape.rank());
  for (std::size_t i = 0; i < shape.rank(); ++i) t[i] = py::int_(shape.extent(i));
  return t;
}

}  // namespace

void bind_literal(py::module_& m) {
  m.def("tensor", &tensor_from_data, py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("carrier") = py::none(), R"doc(
tensor(data, *, dtype=None, carrier=None): a fresh compact tensor holding a
copy of `data`, row-major as written (the outer sequence is axis 0). data is
a number, or nested lists, tuples or other iterables (range, generators) of
numbers, or numpy arrays (any buffer exporter of bool, integer or
float16/32/64 elements, read from memory), mixed freely where the shapes
agree; at most 64 levels deep (ValueError). dtype=None infers it: all bools
-> Bool, all integers -> Int32, otherwise Float32 (bools do not mix with
numbers: TypeError). Each element converts as the same Python number
would: to Int32 exactly (OverflowError outside, TypeError for a float), to
Float32 rounded once. carrier: None (CPU), a shipped class (Generic, CPU),
or a carrier instance whose class's new_like makes the storage. Ragged data
-> ValueError; a str, bytes, mapping, set or other non-number -> TypeError.
See docs/python.md, "Tensors from Python data".)doc");

  py::class_<Reader>(m, "LiteralBuilder", R"doc(
LiteralBuilder(what="tensor"): builds a tensor from data read piece by piece,
by the rules of strideweave.tensor (C++ strideweave::LiteralBuilder, which
holds them). open(n) ... close() is one sequence of n items; item(x) reads
one item as tensor(data) reads it (a number, nested sequences, an array).
Errors name `what`. See docs/python.md, "Tensors from Python data".)doc")
      .def(py::init([](std::string what) {
             auto r = std::make_unique<Reader>();
             r->builder = LiteralBuilder(std::move(what));
             return r;
           }),
           py::arg("what") = "tensor")
      .def("fixed_rank", [](Reader& r, std::size_t rank) { r.builder.fixed_rank(rank); }, py::arg("rank"),
           "The data has exactly `rank` axes: an empty sequence leaves the axes inside it at extent 0.")
      .def("open", [](Reader& r, std::int64_t length) { r.builder.open(length); }, py::arg("length"),
           "Begins a sequence of `length` items (ValueError: ragged, or nested more than 64 deep).")
      .def("close", [](Reader& r) { r.builder.close(); },
           "Ends the innermost sequence (RuntimeError unless exactly its length of items came).")
      .def("item",
           [](Reader& r, py::handle x) {
             // All or nothing: a nested item is many builder calls, so a
             // failure part way rewinds to where the item began.
             const LiteralBuilder::Mark mark = r.builder.mark();
             const std::size_t buffers = r.buffers.size();
             try {
               read(x, r);
             } catch (...) {
               r.builder.rewind(mark);
               r.buffers.resize(buffers);
               r.containers.clear();
               throw;
             }
             // The items are read (numbers converted, texts copied); only
             // arrays' buffers must live until build().
             r.containers.clear();
           },
           py::arg("x"), "Reads one item at the current depth, as strideweave.tensor reads data; a refused item "
                         "leaves the builder as it was.")
      .def_property_readonly("shape", [](const Reader& r) { return shape_tuple(r.builder.shape()); },
                             "The shape read (RuntimeError before the data is complete).")
      .def_property_readonly("inferred_dtype", [](const Reader& r) -> const SimpleDType& { return r.builder.inferred_dtype(); },
                             py::return_value_policy::reference,
                             "all bools -> Bool, all integers -> Int32, otherwise Float32 (TypeError for a "
                             "non-number or bools mixed with numbers).")
      .def("build", [](const Reader& r, py::handle dtype, py::handle carrier) { return build(r, dtype, carrier); },
           py::kw_only(), py::arg("dtype") = py::none(), py::arg("carrier") = py::none(),
           "A fresh compact tensor of what was read, as strideweave.tensor(data, dtype=..., carrier=...).");
}

}  // namespace strideweave::python
