// strideweave.tensor(data, *, dtype=None, carrier=None): the literal reader
// (docs/python.md, "Tensors from Python data").
//
// `data` is read once, depth first, into a shape and a row-major run of
// leaves:
//  - a number (bool, int, float, numpy scalars, numbers.Real) is a leaf;
//  - a list or tuple is one axis; so is any other iterable (range,
//    generators, numpy object arrays, ...), materialised once as a tuple;
//    a str, bytes, bytearray, mapping, set or Tensor is none of these: it
//    is a leaf, a TypeError ("not a number") when it is converted;
//  - an object exporting the buffer protocol with a numeric element format
//    (a numpy array of bool, any integer or float16/32/64 dtype) is its
//    whole shape at once, read from its memory without Python objects;
//    another element format is a TypeError (object arrays are iterated);
//    a numpy scalar (numpy.generic) is a leaf, never an array;
// Every list is snapshotted as a tuple before its items are looked at, and
// the reader owns every container it descends into, so no Python code run
// meanwhile (an item's __index__, a generator) can free an item it still
// reads. Nesting deeper than kMaxRank levels is a ValueError, before the C
// stack can overflow (a self-containing list included).
//
// Every element converts exactly as the same value written as a Python
// number would (values.cpp, value_arg): an integer to Int32 exactly or
// OverflowError, to Float32 rounded once to nearest even; a float to
// Float32 rounded once (beyond the range: +-inf); a bool only to Bool.
#include "bindings.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace strideweave::python {
namespace {

constexpr std::size_t kMaxRank = 64;

// ---- arrays (buffer exporters) read from memory

enum class ArrayKind : std::uint8_t { Bool, Signed, Unsigned, Float };

// A buffer held for the duration of the read (the reader runs with the GIL).
struct ArrayRun {
  Py_buffer view{};
  ArrayKind kind = ArrayKind::Float;
  bool swap = false;  // non-native byte order
  std::int64_t count = 0;
  std::vector<Py_ssize_t> shape, strides;  // in bytes; C-contiguous where the exporter gave none
  ArrayRun() = default;
  ArrayRun(const ArrayRun&) = delete;
  ArrayRun& operator=(const ArrayRun&) = delete;
  ~ArrayRun() {
    if (view.obj) PyBuffer_Release(&view);
  }
};

std::string format_text(const Py_buffer& v) { return v.format ? v.format : "B"; }

// The kind of a struct-module element format ("<i", "=f", "?", "l", ...), or
// nullopt for one that holds no real numbers. "O" (objects) is handled by
// the caller.
std::optional<ArrayKind> array_kind(const Py_buffer& v, bool& swap) {
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
  switch (f.front()) {
    case '?': return size == 1 ? std::optional(ArrayKind::Bool) : std::nullopt;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
      return size == 1 || size == 2 || size == 4 || size == 8 ? std::optional(ArrayKind::Signed) : std::nullopt;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
      return size == 1 || size == 2 || size == 4 || size == 8 ? std::optional(ArrayKind::Unsigned) : std::nullopt;
    case 'e': case 'f': case 'd':
      return size == 2 || size == 4 || size == 8 ? std::optional(ArrayKind::Float) : std::nullopt;
    default: return std::nullopt;
  }
}

// One element's bytes in native order.
void load_bytes(const ArrayRun& a, const char* p, unsigned char* out) {
  const auto n = static_cast<std::size_t>(a.view.itemsize);
  std::memcpy(out, p, n);
  if (a.swap)
    for (std::size_t i = 0; i < n / 2; ++i) std::swap(out[i], out[n - 1 - i]);
}

// IEEE binary16 -> double, exactly.
double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  else if (exponent == 31) magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                                                : std::numeric_limits<double>::infinity();
  else magnitude = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

int128 integer_element(const ArrayRun& a, const char* p) {
  unsigned char b[8];
  load_bytes(a, p, b);
  const bool s = a.kind == ArrayKind::Signed;
  switch (a.view.itemsize) {
    case 1: { std::uint8_t u; std::memcpy(&u, b, 1); return s ? int128(static_cast<std::int8_t>(u)) : int128(u); }
    case 2: { std::uint16_t u; std::memcpy(&u, b, 2); return s ? int128(static_cast<std::int16_t>(u)) : int128(u); }
    case 4: { std::uint32_t u; std::memcpy(&u, b, 4); return s ? int128(static_cast<std::int32_t>(u)) : int128(u); }
    default: { std::uint64_t u; std::memcpy(&u, b, 8); return s ? int128(static_cast<std::int64_t>(u)) : int128(u); }
  }
}

double float_element(const ArrayRun& a, const char* p) {
  unsigned char b[8];
  load_bytes(a, p, b);
  switch (a.view.itemsize) {
    case 2: { std::uint16_t h; std::memcpy(&h, b, 2); return half_to_double(h); }
    case 4: { float f; std::memcpy(&f, b, 4); return static_cast<double>(f); }
    default: { double d; std::memcpy(&d, b, 8); return d; }
  }
}

// Calls fn(pointer) for every element of `a` in row-major (C) order.
template <class Fn>
void for_each_element(const ArrayRun& a, Fn&& fn) {
  if (a.count == 0) return;
  const std::size_t nd = a.shape.size();
  std::vector<Py_ssize_t> index(nd, 0);
  const char* p = static_cast<const char*>(a.view.buf);
  for (std::int64_t k = 0; k < a.count; ++k) {
    fn(p);
    for (std::size_t i = nd; i-- > 0;) {
      p += a.strides[i];
      if (++index[i] < a.shape[i]) break;
      p -= a.strides[i] * a.shape[i];
      index[i] = 0;
    }
  }
}

std::string integer_text(int128 v) { return WeakScalar::integer(v).to_string(); }

// ---- the shape and the leaves

struct Leaf {
  PyObject* object = nullptr;  // borrowed from a container the reader owns (or the argument itself)
  ArrayRun* array = nullptr;   // or all elements of one array
};

struct Literal {
  std::vector<std::int64_t> extents;
  bool known = false;  // extents is complete
  std::vector<Leaf> leaves;
  std::vector<py::object> containers;  // the tuples the leaves are borrowed from
  std::vector<std::unique_ptr<ArrayRun>> arrays;
};

[[noreturn]] void ragged() {
  throw ValueError("tensor: ragged nested data (every sequence at one depth must have the same length, and an array "
                   "the shape the other items have there)");
}

[[noreturn]] void too_deep() {
  throw ValueError(fmt::format("tensor: the data is nested more than {} levels deep (a tensor has at most {} axes; "
                               "a list that contains itself is nested without end)",
                               kMaxRank, kMaxRank));
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

// A buffer with a numeric element format, or nullptr (no buffer, or an
// object array: iterate it instead). TypeError for another element format.
std::unique_ptr<ArrayRun> array_of(py::handle item) {
  if (!PyObject_CheckBuffer(item.ptr())) return nullptr;
  auto run = std::make_unique<ArrayRun>();
  if (PyObject_GetBuffer(item.ptr(), &run->view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    run->view.obj = nullptr;
    return nullptr;
  }
  const std::string format = format_text(run->view);
  if (format == "O" || format == "@O" || format == "=O") return nullptr;
  std::optional<ArrayKind> kind = array_kind(run->view, run->swap);
  if (!kind) {
    if (format.find('g') != std::string::npos)
      throw TypeError(fmt::format("tensor: {} holds long doubles (element format '{}'); convert first, e.g. "
                                  "array.astype(numpy.float64), so that the value is rounded to Float32 once, "
                                  "knowingly",
                                  py::repr(py::type::handle_of(item)).cast<std::string>(), format));
    throw TypeError(fmt::format("tensor: {} of element format '{}' ({} bytes) holds no real numbers (bool, "
                                "integer or float16/32/64 elements)",
                                py::repr(py::type::handle_of(item)).cast<std::string>(), format,
                                run->view.itemsize));
  }
  run->kind = *kind;
  const Py_buffer& v = run->view;
  if (v.shape) run->shape.assign(v.shape, v.shape + v.ndim);
  else if (v.ndim == 1) run->shape.push_back(v.len / v.itemsize);
  if (v.strides) {
    run->strides.assign(v.strides, v.strides + v.ndim);
  } else {
    run->strides.resize(run->shape.size());
    Py_ssize_t stride = v.itemsize;
    for (std::size_t i = run->shape.size(); i-- > 0;) {
      run->strides[i] = stride;
      stride *= run->shape[i];
    }
  }
  run->count = 1;
  for (Py_ssize_t extent : run->shape) run->count *= extent;
  return run;
}

void read(py::handle item, std::size_t depth, Literal& lit);

void read_array(std::unique_ptr<ArrayRun> run, std::size_t depth, Literal& lit) {
  const std::vector<Py_ssize_t>& shape = run->shape;
  const std::size_t nd = shape.size();
  if (depth + nd > kMaxRank) too_deep();
  if (!lit.known) {
    for (std::size_t i = 0; i < nd; ++i) lit.extents.push_back(shape[i]);
    lit.known = true;
  }
  if (lit.extents.size() != depth + nd) ragged();
  for (std::size_t i = 0; i < nd; ++i)
    if (lit.extents[depth + i] != shape[i]) ragged();
  lit.leaves.push_back(Leaf{nullptr, run.get()});
  lit.arrays.push_back(std::move(run));
}

void read_container(py::tuple items, std::size_t depth, Literal& lit) {
  if (depth >= kMaxRank) too_deep();
  const auto n = static_cast<std::int64_t>(PyTuple_GET_SIZE(items.ptr()));
  if (!lit.known) {
    lit.extents.push_back(n);
    if (n == 0) lit.known = true;
  }
  if (depth >= lit.extents.size() || lit.extents[depth] != n) ragged();
  PyObject* tuple = items.ptr();
  lit.containers.push_back(std::move(items));  // owns the items from here on
  for (Py_ssize_t i = 0; i < n; ++i) read(PyTuple_GET_ITEM(tuple, i), depth + 1, lit);
}

void read(py::handle item, std::size_t depth, Literal& lit) {
  PyObject* o = item.ptr();
  if (PyList_Check(o)) return read_container(py::reinterpret_steal<py::tuple>(PyList_AsTuple(o)), depth, lit);
  if (PyTuple_Check(o)) return read_container(py::reinterpret_borrow<py::tuple>(o), depth, lit);
  if (!is_leaf_by_type(item)) {
    if (std::unique_ptr<ArrayRun> run = array_of(item)) return read_array(std::move(run), depth, lit);
    if (!is_mapping(item)) {
      py::object iterator = py::reinterpret_steal<py::object>(PyObject_GetIter(o));
      if (iterator) {
        // The iteration's own errors (a generator's) propagate as they are.
        PyObject* tuple = PySequence_Tuple(iterator.ptr());
        if (!tuple) throw py::error_already_set();
        return read_container(py::reinterpret_steal<py::tuple>(tuple), depth, lit);
      }
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
      PyErr_Clear();  // not iterable: a leaf, refused below unless it is a number
    }
  }
  if (!lit.known) lit.known = true;
  if (depth != lit.extents.size()) ragged();
  lit.leaves.push_back(Leaf{o, nullptr});
}

// ---- dtype inference and conversion

void require_number(PyObject* o) {
  if (!is_real_number(o))
    throw TypeError(fmt::format("tensor: {} is not a number", py::repr(o).cast<std::string>()));
}

const SimpleDType& inferred_dtype(const Literal& lit) {
  bool any_bool = false, any_float = false, any_int = false;
  for (const Leaf& leaf : lit.leaves) {
    if (leaf.array) {
      switch (leaf.array->kind) {
        case ArrayKind::Bool: any_bool = true; break;
        case ArrayKind::Signed: case ArrayKind::Unsigned: any_int = true; break;
        case ArrayKind::Float: any_float = true; break;
      }
      continue;
    }
    require_number(leaf.object);
    const WeakScalar s = weak_scalar_arg(leaf.object, "tensor");
    if (s.is_bool()) any_bool = true;
    else if (s.kind() == WeakScalarKind::INTEGER) any_int = true;
    else any_float = true;
  }
  if (any_bool && (any_int || any_float))
    throw TypeError("tensor: bools do not mix with numbers; pass dtype= to choose");
  if (any_bool) return DType::Bool();
  if (any_int && !any_float) return DType::Int32();
  return DType::Float32();
}

// Appends the array's elements as `d`, with value_arg's rules and messages.
void convert_array(const ArrayRun& a, const SimpleDType& d, std::vector<Value>& out) {
  const char* kind_name = a.kind == ArrayKind::Bool ? "bool" : a.kind == ArrayKind::Float ? "float" : "integer";
  if (&d == &DType::Bool()) {
    if (a.kind != ArrayKind::Bool)
      throw TypeError(fmt::format("tensor: a bool value is needed for dtype bool, got an array of {} elements",
                                  kind_name));
    for_each_element(a, [&](const char* p) { out.push_back(Value::from_bool(*p != 0)); });
  } else if (&d == &DType::Int32()) {
    if (a.kind == ArrayKind::Bool || a.kind == ArrayKind::Float)
      throw TypeError(fmt::format("tensor: an integer value is needed for dtype int32, got an array of {} elements "
                                  "(no silent truncation)",
                                  kind_name));
    for_each_element(a, [&](const char* p) {
      const int128 v = integer_element(a, p);
      if (v < INT32_MIN_VALUE || v > INT32_MAX_VALUE)
        throw OverflowError(fmt::format("tensor: {} is outside Int32 [{}, {}]", integer_text(v), INT32_MIN_VALUE,
                                        INT32_MAX_VALUE));
      out.push_back(Value::from_int32(static_cast<std::int32_t>(v)));
    });
  } else {
    if (a.kind == ArrayKind::Bool)
      throw TypeError("tensor: a real number (not a bool) is needed for dtype float32, got an array of bool elements");
    if (a.kind == ArrayKind::Float)
      for_each_element(a, [&](const char* p) { out.push_back(Value::from_float32(WeakScalar(float_element(a, p)).to_float32())); });
    else
      for_each_element(a, [&](const char* p) {
        out.push_back(Value::from_float32(WeakScalar::integer(integer_element(a, p)).to_float32()));
      });
  }
}

Tensor tensor_from_data(py::handle data, py::handle dtype, py::handle carrier) {
  Literal lit;
  read(data, 0, lit);
  const SimpleDType& d = dtype.is_none() ? inferred_dtype(lit) : simple_dtype_arg(dtype, "tensor: dtype");
  if (!stored_element_kind(d))
    throw ValueError(fmt::format("tensor: dtype {} is not a stored dtype (Float32, Int32, Bool)", d.name()));
  std::vector<Value> row_major;
  for (const Leaf& leaf : lit.leaves) {
    if (leaf.array) convert_array(*leaf.array, d, row_major);
    else row_major.push_back(value_arg(leaf.object, d, "tensor"));
  }
  const Shape shape = Shape::of(lit.extents);
  // Logical order is first axis fastest (docs/layout.md).
  std::vector<Value> logical(row_major.size());
  std::vector<std::int64_t> coordinate(lit.extents.size(), 0);
  for (const Value& v : row_major) {
    std::int64_t ordinal = 0, stride = 1;
    for (std::size_t i = 0; i < lit.extents.size(); ++i) {
      ordinal += coordinate[i] * stride;
      stride *= lit.extents[i];
    }
    logical[static_cast<std::size_t>(ordinal)] = v;
    for (std::size_t i = lit.extents.size(); i-- > 0;) {
      if (++coordinate[i] < lit.extents[i]) break;
      coordinate[i] = 0;
    }
  }
  std::shared_ptr<Carrier> storage;
  if (carrier.is_none()) {
    storage = CPU::from_values(logical, d);
  } else if (py::isinstance<Carrier>(carrier)) {
    storage = carrier_arg(carrier, "tensor: carrier")->new_like(logical, true, &d);
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
  return Tensor(std::move(storage), 0, Layout::compact(shape));
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
}

}  // namespace strideweave::python
