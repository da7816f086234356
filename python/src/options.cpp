// Option values between Python and C++: the one converter (docs/python.md,
// "Option values"). The by-name calls of the built-in operations, the calls,
// bind and resolve_call of definitions, STRUCTURAL operands, OptionSpec
// defaults, opcheck samples and Operation.forward all convert through
// option_value_arg. option_object is the way back. Numbers follow the
// scalar rules of values.cpp: an integer is anything with __index__ that is
// not a bool, and a real is a float or a numbers.Real.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

// Owns a Python object referenced from C++ (an OpaqueValue). The last
// reference may drop on any thread, so the reference count changes with the
// GIL held.
struct PyObjectDeleter {
  void operator()(const void* object) const noexcept {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: forget it
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(object)));
  }
};

std::string type_name_of(py::handle value) { return py::str(py::type::handle_of(value).attr("__name__")); }

// An integer number: an int or a numbers.Integral (numpy's integer
// scalars), never a bool. An array is not a number even where it defines
// __index__ (numpy's ndarray does): it stays an opaque object.
bool is_integer(py::handle value) { return !is_boolean(value) && is_integer_number(value); }

bool fits_int64(py::handle value) {
  py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!v) throw py::error_already_set();
  int overflow = 0;
  (void)PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  return overflow == 0;
}

// A list, tuple or range: the sequences an integer-list option accepts.
bool is_integer_sequence_kind(py::handle value) {
  return PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()) || PyRange_Check(value.ptr());
}

}  // namespace

operation::OpaqueValue opaque_value(py::handle value) {
  const std::string name = type_name_of(value);
  Py_INCREF(value.ptr());
  return operation::OpaqueValue{std::shared_ptr<const void>(value.ptr(), PyObjectDeleter{}), name};
}

namespace detail {

operation::OptionValue option_value_or_overflow(py::handle value, LargeIntegers large, py::object& overflowing) {
  if (value.is_none()) return std::monostate{};
  if (is_boolean(value)) return PyObject_IsTrue(value.ptr()) == 1;
  if (is_integer(value)) {
    if (fits_int64(value)) return integer_arg(value, "option");
    if (large == LargeIntegers::Opaque) return opaque_value(value);
    overflowing = py::reinterpret_borrow<py::object>(value);
    return std::monostate{};
  }
  if (PyFloat_Check(value.ptr()) || is_real_number(value)) return real_arg(value, "option");
  if (PyUnicode_Check(value.ptr())) return value.cast<std::string>();
  if (py::isinstance<DType>(value)) return &dtype_arg(value, "option");
  if (py::isinstance<Shape>(value)) {
    const Shape& s = value.cast<const Shape&>();
    return std::vector<std::int64_t>(s.extents().begin(), s.extents().end());
  }
  if (is_integer_sequence_kind(value)) {
    bool integers = true;
    for (py::handle v : value) integers = integers && is_integer(v);
    if (integers) {
      std::vector<std::int64_t> list;
      for (py::handle v : value) {
        if (!fits_int64(v)) {
          if (large == LargeIntegers::Opaque) return opaque_value(value);
          overflowing = py::reinterpret_borrow<py::object>(v);  // owned: the item may die with the iterator
          return std::monostate{};
        }
        list.push_back(integer_arg(v, "option"));
      }
      return list;
    }
  }
  return opaque_value(value);
}

[[noreturn]] void throw_overflow(const std::string& what, py::handle integer) {
  throw OverflowError(fmt::format("{}: {} does not fit in 64 bits", what, py::str(integer).cast<std::string>()));
}

}  // namespace detail

py::object option_object(const operation::OptionValue& value) {
  struct Visitor {
    py::object operator()(std::monostate) const { return py::none(); }
    py::object operator()(bool b) const { return py::bool_(b); }
    py::object operator()(std::int64_t i) const { return py::int_(i); }
    py::object operator()(double d) const { return py::float_(d); }
    py::object operator()(const std::vector<std::int64_t>& list) const {
      py::tuple out(list.size());
      for (std::size_t i = 0; i < list.size(); ++i) out[i] = py::int_(list[i]);
      return out;
    }
    py::object operator()(const std::string& s) const { return py::str(s); }
    py::object operator()(const DType* d) const { return dtype_object(d); }
    py::object operator()(const operation::OpaqueValue& o) const {
      if (std::get_deleter<PyObjectDeleter>(o.value))
        return py::reinterpret_borrow<py::object>(static_cast<PyObject*>(const_cast<void*>(o.value.get())));
      throw TypeError(fmt::format("an opaque option value of C++ type '{}' has no Python form", o.type_name));
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace strideweave::python
