// Python numbers as weak scalars and element values (docs/python.md,
// "Python numbers").
//
// Weak scalars follow operation-dtype-policy R7: bool -> FLOAT (pinned);
// other Integral -> INTEGER, held exactly; other Real -> FLOAT; anything else
// is a TypeError. numpy's bool_ counts as bool, numpy's integer and floating
// scalars as the numbers ABCs register them.
//
// Element values are strict about kind: a Float32 slot takes a real number
// that is not a bool, an Int32 slot an integer (never a float: no silent
// truncation) inside Int32 (OverflowError otherwise), a Bool slot a bool.
#include "bindings.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace strideweave::python {
namespace {

struct NumberTypes {
  py::object integral;  // numbers.Integral
  py::object real;      // numbers.Real
};

const NumberTypes& number_types() {
  static NumberTypes* types = [] {
    py::module_ numbers = py::module_::import("numbers");
    return new NumberTypes{numbers.attr("Integral"), numbers.attr("Real")};
  }();
  return *types;
}

std::string type_name(py::handle value) { return py::str(py::type::handle_of(value).attr("__name__")); }

// numpy's bool_ (numpy is not imported for this: the type is recognised by
// its module and name).
bool is_numpy_bool(py::handle value) {
  py::handle type = py::type::handle_of(value);
  PyTypeObject* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  const std::string_view name(t->tp_name);
  return name == "numpy.bool_" || name == "numpy.bool";  // NumPy 1, NumPy 2
}


bool is_integral(py::handle value) {
  if (PyBool_Check(value.ptr())) return false;
  if (PyLong_Check(value.ptr())) return true;
  if (PyFloat_Check(value.ptr())) return false;
  return !is_numpy_bool(value) && py::isinstance(value, number_types().integral);
}

bool is_real(py::handle value) {
  if (PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr())) return true;
  return py::isinstance(value, number_types().real);
}

// An exact Python integer as int128; OverflowError outside (-2**127, 2**127).
int128 int128_of(py::handle integral, const char* what) {
  py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(integral.ptr()));
  if (!v) throw py::error_already_set();
  int overflow = 0;
  const long long small = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (!overflow) return static_cast<int128>(small);
  // Two 64-bit halves, through Python's exact integers.
  static py::int_ two_to_127 = py::reinterpret_steal<py::int_>(PyLong_FromString("170141183460469231731687303715884105728", nullptr, 10));
  py::object magnitude = py::reinterpret_steal<py::object>(PyNumber_Absolute(v.ptr()));
  if (magnitude.attr("__ge__")(two_to_127).cast<bool>())
    throw OverflowError(fmt::format("{}: the integer {} is outside the range a weak scalar holds exactly "
                                    "(-2**127, 2**127)",
                                    what, py::str(v).cast<std::string>()));
  const auto hi = py::reinterpret_steal<py::object>(PyNumber_Rshift(v.ptr(), py::int_(64).ptr())).cast<long long>();
  const auto lo = py::reinterpret_steal<py::object>(PyNumber_And(v.ptr(), py::int_(0xFFFFFFFFFFFFFFFFULL).ptr()))
                      .cast<unsigned long long>();
  return (static_cast<int128>(hi) << 64) | static_cast<int128>(lo);
}

double real_of(py::handle value) {
  const double d = PyFloat_AsDouble(value.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return d;
}

}  // namespace

bool is_real_number(py::handle value) {
  return PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
         is_numpy_bool(value) || py::isinstance(value, number_types().real);
}

WeakScalar weak_scalar_arg(py::handle value, const char* what) {
  if (PyFloat_CheckExact(value.ptr())) return WeakScalar(PyFloat_AS_DOUBLE(value.ptr()));
  if (is_boolean(value)) return WeakScalar(PyObject_IsTrue(value.ptr()) == 1);
  if (is_integral(value)) return WeakScalar::integer(int128_of(value, what));
  if (is_real(value)) return WeakScalar(real_of(value));
  throw TypeError(fmt::format("{}: a weak scalar must be a real number (bool, int or float), got {}", what,
                              type_name(value)));
}

WeakScalar weak_scalar_operand(py::handle value, std::string_view op, std::size_t index) {
  // The common operands convert without naming anything; the text is
  // formatted only on the paths that may raise.
  if (PyFloat_CheckExact(value.ptr())) return WeakScalar(PyFloat_AS_DOUBLE(value.ptr()));
  if (PyLong_CheckExact(value.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) return WeakScalar::integer(v);
    PyErr_Clear();
  }
  const std::string what = fmt::format("{}: operand {}", op, index);
  return weak_scalar_arg(value, what.c_str());
}

py::object weak_scalar_object(const WeakScalar& scalar) {
  if (scalar.is_bool()) return py::bool_(scalar.real_value() != 0.0);
  if (scalar.kind() == WeakScalarKind::FLOAT) return py::float_(scalar.real_value());
  const int128 v = scalar.integer_value();
  if (v >= std::numeric_limits<long long>::min() && v <= std::numeric_limits<long long>::max())
    return py::int_(static_cast<long long>(v));
  return py::reinterpret_steal<py::object>(PyLong_FromString(scalar.to_string().c_str(), nullptr, 10));
}

py::object value_object(const Value& value) {
  switch (value.kind) {
    case ElementKind::Bool: return py::bool_(value.b);
    case ElementKind::Int32: return py::int_(value.i);
    case ElementKind::Float32: return py::float_(static_cast<double>(value.f));
    case ElementKind::Float64: break;
  }
  throw RuntimeError("strideweave: a Float64 element value cannot exist (Float64 is an accumulator only)");
}

Value value_arg(py::handle value, const SimpleDType& dtype, const char* what) {
  if (&dtype == &DType::Bool()) {
    if (is_boolean(value)) return Value::from_bool(PyObject_IsTrue(value.ptr()) == 1);
    throw TypeError(fmt::format("{}: a bool value is needed for dtype bool, got {}", what, type_name(value)));
  }
  if (&dtype == &DType::Int32()) {
    if (!is_integral(value))
      throw TypeError(fmt::format("{}: an integer value is needed for dtype int32, got {}", what, type_name(value)));
    const int128 v = int128_of(value, what);
    if (v < INT32_MIN_VALUE || v > INT32_MAX_VALUE)
      throw OverflowError(fmt::format("{}: {} is outside Int32 [{}, {}]", what, py::str(value).cast<std::string>(),
                                      INT32_MIN_VALUE, INT32_MAX_VALUE));
    return Value::from_int32(static_cast<std::int32_t>(v));
  }
  if (&dtype == &DType::Float32()) {
    if (is_boolean(value) || !is_real(value))
      throw TypeError(fmt::format("{}: a real number (not a bool) is needed for dtype float32, got {}", what,
                                  type_name(value)));
    // Rounded to nearest even once, as the policy materialises a weak
    // scalar (an int directly, not through a double; beyond the float range
    // to +-inf or FLT_MAX, where a plain cast would be undefined).
    if (is_integral(value)) {
      try {
        return Value::from_float32(WeakScalar::integer(int128_of(value, what)).to_float32());
      } catch (const OverflowError&) {  // beyond 2**127, far beyond FLT_MAX + half an ulp
        const float inf = std::numeric_limits<float>::infinity();
        return Value::from_float32(PyObject_RichCompareBool(value.ptr(), py::int_(0).ptr(), Py_LT) == 1 ? -inf : inf);
      }
    }
    return Value::from_float32(WeakScalar(real_of(value)).to_float32());
  }
  throw ValueError(fmt::format("{}: dtype {} is not a stored dtype (Float32, Int32, Bool)", what, dtype.name()));
}

bool is_boolean(py::handle value) { return PyBool_Check(value.ptr()) || is_numpy_bool(value); }

bool is_integer_number(py::handle value) { return is_integral(value); }

double real_arg(py::handle value, const char* what) {
  if (is_boolean(value) || !is_real(value))
    throw TypeError(fmt::format("{}: a real number is needed, got {}", what, type_name(value)));
  return real_of(value);
}

std::int64_t integer_arg(py::handle value, const char* what) {
  if (PyBool_Check(value.ptr()) || is_numpy_bool(value) || !PyIndex_Check(value.ptr()))
    throw TypeError(fmt::format("{}: an integer is needed, got {}", what, type_name(value)));
  py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!v) throw py::error_already_set();
  int overflow = 0;
  const long long r = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow) throw OverflowError(fmt::format("{}: {} does not fit in 64 bits", what, py::str(v).cast<std::string>()));
  return r;
}

}  // namespace strideweave::python
