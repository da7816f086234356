// The pybind11 module strideweave._core: shared declarations of the binding
// (docs/python.md). The binding uses the public headers only, like tools/
// (scripts/check_layers.py checks it): everything it exposes is the C++
// library's public API with Python spellings.
//
// Conventions of every file in python/src/:
//  - Arguments that the specifications type-check (a DType, an enum member,
//    a record) arrive as py::handle and are converted by the helpers below,
//    so that a wrong type is a TypeError naming the parameter, never
//    pybind11's generic "incompatible function arguments".
//  - C++ work that may run a kernel, take a library lock or call back into
//    Python runs with the GIL released (py::gil_scoped_release); Python
//    callbacks (a Python carrier's storage hooks, a Python plan rule) take
//    it back only while they run (py::gil_scoped_acquire).
//  - Dtype descriptors are identity objects: dtype_object() returns the one
//    Python object of a descriptor for the life of the process.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <strideweave/strideweave.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

// A Carrier handed to Python is found as its own Python object
// (tensor.carrier is the exact carrier the tensor was built on): a dependent
// carrier is looked up as a DependentCarrier, the bound type its Python
// instances are registered under, whatever C++ host class implements it (the
// definition-backed host is not a bound type). Defined in carriers.cpp.
template <>
struct pybind11::polymorphic_type_hook<strideweave::Carrier> {
  static const void* get(const strideweave::Carrier* src, const std::type_info*& type);
};

namespace strideweave::python {

namespace py = pybind11;

// A Python object that C++ may keep and drop on any thread: dropping the
// last reference takes the GIL (and, after the interpreter has finalised,
// only forgets the pointer).
struct SharedPyObject {
  explicit SharedPyObject(py::object o) : object(std::move(o)) {}
  SharedPyObject(const SharedPyObject&) = delete;
  SharedPyObject& operator=(const SharedPyObject&) = delete;
  ~SharedPyObject() {
    if (!Py_IsInitialized()) {
      object.release();
      return;
    }
    py::gil_scoped_acquire gil;
    object = py::object();
  }
  py::object object;
};
inline std::shared_ptr<SharedPyObject> share(py::handle o) {
  return std::make_shared<SharedPyObject>(py::reinterpret_borrow<py::object>(o));
}

// The Python object of a ResolvedInvocation C++ hands to a Python callback
// (operation.cpp): the caller's own object when this thread's Python call
// created it, else a new one. Call with the GIL held.
py::object resolved_invocation_object(const operation::ResolvedInvocation& invocation);

// Operation.forward(*inputs, options=None) (operation.cpp): the operands
// bound as a definition call binds them (a view's parameters by position),
// options an OperationExecutionOptions bound to the operation, or a dict of
// the schema's options, or None.
py::object forward_object(const std::shared_ptr<Operation>& self, const py::args& args, const py::kwargs& kwargs);
// The shared_ptr C++ keeps of an Operation object; for an instance of a
// Python subclass it also keeps the Python object alive (autograd.cpp).
std::shared_ptr<Operation> operation_arg(py::handle value, const char* what);

// A move in flight as Python sees it (move.cpp binds it as AwaitMove;
// TiledEvictable.scatter returns one): the C++ handle and the Tensor object
// its first wait() returned (guarded by the GIL), so that every wait()
// returns that very object.
struct PyAwaitMove {
  AwaitMove<Tensor> pending;
  py::object result = py::object();
};

// ---- module parts, one function per file (module.cpp calls them in order)
void bind_errors(py::module_& m);      // errors.cpp
void bind_enums(py::module_& m);       // enums.cpp
void bind_dtypes(py::module_& m);      // dtypes.cpp
void bind_layout(py::module_& m);      // layout.cpp
void bind_policy(py::module_& m);      // policy.cpp
void bind_capability(py::module_& m);  // capability.cpp
void bind_carriers(py::module_& m);    // carriers.cpp
void bind_file_backed(py::module_& m); // file_backed.cpp
void bind_cuda(py::module_& m);        // cuda.cpp (CUDA; after carriers)
void bind_block_device(py::module_& m); // block_device.cpp
void bind_tensor(py::module_& m);      // tensor.cpp
void bind_autograd(py::module_& m);    // autograd.cpp
void bind_operations(py::module_& m);  // operations.cpp
void bind_operation(py::module_& m);   // operation.cpp (strideweave.operation)
void bind_interop(py::module_& m);     // interop.cpp
void bind_literal(py::module_& m);     // literal.cpp (strideweave.tensor)
void bind_creation(py::module_& m);   // creation.cpp (zeros, arange, ..., strideweave.random)
void bind_compose(py::module_& m);    // compose.cpp (concatenate, mean, softmax, astype, Tensor.T, ...; after tensors)
void bind_formats(py::module_& m);     // formats.cpp (.npy and safetensors)
void bind_move(py::module_& m);       // move.cpp (after carriers and tensors)
void bind_evictable(py::module_& m);  // evictable.cpp (Evictable, EvictableOperation, execute_lowered; after autograd)
void bind_tiled_evictable(py::module_& m);  // tiled_evictable.cpp (TiledEvictable, TileSet, ...; after carriers)
void bind_extension(py::module_& m);   // extension.cpp, extension_records.cpp (after carriers and tensors)
// Last: every bound function refuses objects whose __init__ never ran
// (guard.cpp; docs/python.md, "Uninitialised objects").
void guard_uninitialised(py::module_& m);

// ---- uninitialised objects (guard.cpp)
// True for an instance of a bound class whose __init__ never ran or failed
// (its C++ value does not exist).
bool is_uninitialised(py::handle value);
// The TypeError for such an instance met as `what`.
[[noreturn]] void throw_uninitialised(py::handle value, const char* what);
// value.cast<const T&>() for an object already known to be a T instance:
// a TypeError naming `what` (not pybind11's reference_cast_error) when it
// was never initialised. Every helper that turns a handle into a reference
// to a bound value goes through it.
template <class T>
const T& bound_value(py::handle value, const char* what) {
  if (is_uninitialised(value)) throw_uninitialised(value, what);
  return value.template cast<const T&>();
}

// ---- enums (enums.cpp): the Python enum.Enum classes made from the C++
// central lists, and conversions. from_py raises TypeError naming `what`.
py::object to_py(OperandRole v);
py::object to_py(Arithmetic v);
py::object to_py(Accumulation v);
py::object to_py(WeakScalarKind v);
py::object to_py(SupportLevel v);
py::object to_py(ExecutionAxis v);
py::object to_py(operation::OperandKind v);
py::object to_py(operation::OptionKind v);
template <class E>
E from_py(py::handle value, const char* what);

// ---- dtypes (dtypes.cpp)
// The one Python object of `dtype` (None for nullptr).
py::object dtype_object(const DType* dtype);
inline py::object dtype_object(const DType& dtype) { return dtype_object(&dtype); }
// A DType argument (TypeError naming `what` otherwise).
const DType& dtype_arg(py::handle value, const char* what);
// A DType argument that must be a SimpleDType (TypeError otherwise).
const SimpleDType& simple_dtype_arg(py::handle value, const char* what);
// None or a DType.
const DType* optional_dtype_arg(py::handle value, const char* what);

// ---- values and numbers (values.cpp)
// True for a Python real number the policy accepts as a weak scalar (bool,
// int, float, numpy scalars, numbers.Real), false for anything else.
bool is_real_number(py::handle value);
// A weak scalar (TypeError naming `what` for a non-real value; OverflowError
// for an integer outside the 128-bit range a WeakScalar holds exactly).
WeakScalar weak_scalar_arg(py::handle value, const char* what);
// weak_scalar_arg(value, "<op>: operand <index>") with the text formatted
// only when converting may raise (a float or an int that fits 64 bits names
// nothing: a successful call formats nothing).
WeakScalar weak_scalar_operand(py::handle value, std::string_view op, std::size_t index);
py::object weak_scalar_object(const WeakScalar& scalar);
// One element value as its Python value: float, int or bool.
py::object value_object(const Value& value);
// A Python value stored as `dtype` (TypeError for a value of another kind,
// OverflowError for an integer outside Int32).
Value value_arg(py::handle value, const SimpleDType& dtype, const char* what);
// An integer argument (an int or an object with __index__, never a bool or
// a float): TypeError naming `what` otherwise; OverflowError beyond int64.
std::int64_t integer_arg(py::handle value, const char* what);
// A Python bool (TypeError naming `what` for anything else, 0 and 1 included).
bool bool_arg(py::handle value, const char* what);
// A Python bool or a numpy bool.
bool is_boolean(py::handle value);
// An int or a numbers.Integral (numpy's integer scalars), not a bool.
bool is_integer_number(py::handle value);
// A real argument (a float, an int or a numbers.Real such as a numpy float;
// never a bool) as a double: TypeError naming `what` otherwise.
double real_arg(py::handle value, const char* what);

// ---- option values: the one converter, both ways (options.cpp)
// Python -> C++: None -> None; a bool (numpy's too) -> bool; an integer
// (anything with __index__) -> int64, OverflowError beyond, or with
// LargeIntegers::Opaque the object itself; a real (float, numbers.Real) ->
// double; str -> str; a DType -> that DType; a Shape -> its extents; a list,
// tuple or range of integers -> a list of int64; anything else -> an
// OpaqueValue holding the object (compared by identity, kept alive, read
// back as that same object). A built-in operation then reads the value as
// its option's kind (TypeError naming the option for another kind).
// `what` names the value in an error ("op: option 'name'"): a string, or a
// callable returning one, called only when the conversion fails, so a
// successful call formats nothing.
enum class LargeIntegers { Overflow, Opaque };
namespace detail {
// The conversion; an integer beyond int64 under Overflow sets `overflowing`.
operation::OptionValue option_value_or_overflow(py::handle value, LargeIntegers large, py::object& overflowing);
[[noreturn]] void throw_overflow(const std::string& what, py::handle integer);
}  // namespace detail
template <class What>
operation::OptionValue option_value_arg(py::handle value, What&& what, LargeIntegers large = LargeIntegers::Overflow) {
  py::object overflowing;
  operation::OptionValue v = detail::option_value_or_overflow(value, large, overflowing);
  if (overflowing) {
    if constexpr (std::is_invocable_v<What>) detail::throw_overflow(std::string(what()), overflowing);
    else detail::throw_overflow(std::string(what), overflowing);
  }
  return v;
}
// C++ -> Python: the value's Python form (a list reads back as a tuple; an
// OpaqueValue made here as its very object).
py::object option_object(const operation::OptionValue& value);
operation::OpaqueValue opaque_value(py::handle value);

// ---- layout (layout.cpp)
Shape shape_arg(py::handle value, const char* what);  // a Shape, or a tuple of extents
py::object int_tuple_object(const IntTuple& t);

// ---- carriers (carriers.cpp)
// The shared_ptr C++ code keeps of a carrier object. For an instance of a
// Python subclass of Carrier it also keeps the Python object alive (its
// storage hooks live there); TypeError naming `what` for a non-carrier.
std::shared_ptr<Carrier> carrier_arg(py::handle value, const char* what);
// The exact carrier class a Python class names (its own run-time identity
// for a Python subclass of Carrier or DependentCarrier, minted on first
// use). TypeError naming `what` for a non-class or a class that is not a
// Carrier class.
CarrierClass carrier_class_arg(py::handle cls, const char* what);

// True for a Python subclass of Carrier (not a bound C++ class).
bool is_python_carrier_class(py::handle cls);
// The Python object of `carrier`: a Python subclass's own instance (also
// while a definition-backed instance is being constructed), else the bound
// object of the shared carrier.
py::object carrier_object(const Carrier& carrier);
// The Python class of an exact carrier class (NotImplementedError for a C++
// class the package does not bind).
py::object carrier_class_object(const CarrierClass& cls);
// Implemented by the C++ hosts of definition-backed Python classes.
class PythonCarrierObject {
 public:
  virtual ~PythonCarrierObject() = default;
  virtual py::handle python_object() const = 0;
};

// ---- the call a dispatch hook computes (autograd.cpp)
// The Python form of a DispatchedCall: copies of its handles (operands:
// Tensors and numbers; attributes: a dict of bool, int, float, list of int).
struct PyDispatchedCall {
  std::string operation;
  OperationPlan plan;
  py::tuple operands;
  py::dict attributes;
  py::tuple outputs;
  py::object invocation;
};

// ---- tensors (tensor.cpp)
// The holder of every Python Tensor object: one object per tensor (its
// deleter forgets the object when Python destroys it; tensor.cpp).
struct TensorHolderDeleter {
  void operator()(Tensor* tensor) const noexcept;
};
using TensorHolder = std::unique_ptr<Tensor, TensorHolderDeleter>;
const Tensor& tensor_arg(py::handle value, const char* what);
bool is_tensor(py::handle value);
// The Tensor handle a Tensor object (is_tensor) holds; null when its
// __init__ never ran.
const Tensor* held_tensor(PyObject* object);
// The Python object of `tensor`: the object that already wraps that tensor
// while it lives (one tensor, one object), else a new one (what py::cast
// does, without its type lookups: results are made on every call).
py::object tensor_object(Tensor&& tensor);
// A caller-provided output: None, a Tensor (overwrite) or an Output.
Output output_arg(py::handle value, const char* what);
// Calls a VJP-shaped Python callable, function(context, cotangents) or, with
// `leading`, function(leading, context, cotangents), with the GIL held, and
// converts its tuple of Tensor or None (TypeError naming `what` otherwise).
std::vector<std::optional<Tensor>> call_python_vjp(const py::object& function, py::handle leading,
                                                   const operation::VJPContext& context,
                                                   std::span<const std::optional<Tensor>> cotangents, const char* what);

// ---- records (policy.cpp, capability.cpp)
const OperationPlan& plan_arg(py::handle value, const char* what);

// ---- interop (interop.cpp): exported buffers pin a carrier's memory.
// Raises BufferError when `carrier` has live buffer or DLPack exports
// (release() would free memory a numpy array still points at).
void require_no_exports(const Carrier& carrier, const char* what);

}  // namespace strideweave::python
