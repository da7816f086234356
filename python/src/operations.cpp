// Every public operation as a function, and the Tensor operators
// (docs/python.md, "Operations").
//
// The functions are made from the C++ library's list of callable operations
// (call.h, callable_operations()): one Python function per public entry,
// named as the operation, with its operands positional and its options
// keyword-only by their C++ names, as operation-semantics.md binds an
// operation call ("positional operands in schema order and keyword options
// by exact name"). Two keywords are common to all: out= (a caller-provided
// output: a Tensor, or strideweave.into(t) / strideweave.accumulate_into(t);
// the call returns that same tensor object) and, for reduce_sum and matmul,
// options= (an OperationExecutionOptions bound to that operation;
// ValueError for one bound to another, policy R10.5).
//
// Python numbers follow the C++ rule of include/strideweave/ops/operators.h:
//  - mul, pow (and clamp's bounds) have a weak-scalar form: the number picks
//    a branch and has no dtype (policy R7);
//  - the elementwise tensor/tensor operations listed with SW_SCALAR_OPERANDS
//    in operations.def (kRank0Scalar) turn the
//    number into a rank-0 tensor on the other operand's carrier class whose
//    dtype is the number's own: int -> Int32 (OverflowError outside Int32),
//    float -> Float32 (rounded to nearest even), bool -> Bool. The plan is
//    then the one two tensors of those dtypes resolve: nothing is promoted
//    that the policy would not promote for two tensors;
//  - except beside the comparison OPERATORS (a < 0, 0 == a; not the
//    functions strideweave.lt, ...), where the number becomes a rank-0
//    tensor of the other operand's dtype when it is exactly representable
//    there, else TypeError (comparison_scalar, <strideweave/compose.h>);
//  - every other operation takes tensors only (TypeError).
// The kernels run with the GIL released.
//
// Performance (docs/python.md, "Performance"): the by-name entry also
// resolves the plan it reports, and reads its options through a map. The
// operators of ops/operators.h (+ - * / ** @, unary -, abs(), comparisons),
// and the functions of the same operations called with operands only, call
// the typed C++ functions directly (kTyped): same functions, same plans and
// errors, without that bookkeeping.
#include "bindings.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <set>

namespace strideweave::python {
namespace {

// The operations with a C++ scalar overload in ops/operators.h (from
// operations.def): a number next to a tensor becomes a rank-0 tensor of the
// number's own dtype.
constexpr std::string_view kRank0Scalar[] = {
#define SW_SCALAR_OPERANDS(op) #op,
#include <strideweave/operations.def>
};

bool rank0_scalars(std::string_view op) {
  for (std::string_view n : kRank0Scalar)
    if (n == op) return true;
  return false;
}

// The typed C++ functions behind the operators of ops/operators.h.
using TensorTensor = Tensor (*)(const Tensor&, const Tensor&, const Output&);
using TensorScalar = Tensor (*)(const Tensor&, WeakScalar, const Output&);
using ScalarTensor = Tensor (*)(WeakScalar, const Tensor&, const Output&);
using Unary = Tensor (*)(const Tensor&, const Output&);
struct Typed {
  std::string_view name;
  TensorTensor tensor_tensor = nullptr;
  TensorScalar tensor_scalar = nullptr;  // mul and pow: a weak scalar
  ScalarTensor scalar_tensor = nullptr;
  Unary unary = nullptr;
};
Tensor matmul_default(const Tensor& a, const Tensor& b, const Output& out) { return matmul(a, b, std::nullopt, out); }
const Typed kTyped[] = {
    {"add", static_cast<TensorTensor>(&add)},
    {"sub", static_cast<TensorTensor>(&sub)},
    {"div", static_cast<TensorTensor>(&div)},
    {"eq", static_cast<TensorTensor>(&eq)},
    {"ne", static_cast<TensorTensor>(&ne)},
    {"lt", static_cast<TensorTensor>(&lt)},
    {"le", static_cast<TensorTensor>(&le)},
    {"matmul", &matmul_default},
    {"mul", static_cast<TensorTensor>(&mul), static_cast<TensorScalar>(&mul), static_cast<ScalarTensor>(&mul)},
    {"pow", static_cast<TensorTensor>(&pow), static_cast<TensorScalar>(&pow), static_cast<ScalarTensor>(&pow)},
    {"neg", nullptr, nullptr, nullptr, static_cast<Unary>(&neg)},
    {"abs", nullptr, nullptr, nullptr, static_cast<Unary>(&abs)},
};
const Typed* typed(std::string_view name) {
  for (const Typed& t : kTyped)
    if (t.name == name) return &t;
  return nullptr;
}

// Whether a call on these operands releases the GIL while it runs. A call
// whose operands all live on a shipped definition-free carrier (Generic,
// CPU: no Python code runs inside), which is elementwise and whose result
// has fewer than kGilReleaseElements elements keeps it: releasing and re-taking the GIL
// costs more than such a kernel (numpy keeps it below 500 elements for the
// same reason). Anything else releases it (docs/python.md, "Performance").
constexpr std::int64_t kGilReleaseElements = 1 << 14;
bool shipped_compute_carrier(const Tensor& t) {
  const CarrierClass c = t.carrier_type();
  return c == carrier_class<CPU>() || c == carrier_class<Generic>();
}
// Elementwise calls only: the result is the operands' common shape (one
// operand of one element broadcasts); anything that broadcasts further, or
// is not elementwise (matmul), releases.
bool keeps_gil(const Tensor& a, const Tensor* b = nullptr) {
  if (!shipped_compute_carrier(a) || (b && !shipped_compute_carrier(*b))) return false;
  if (a.size() >= kGilReleaseElements || (b && b->size() >= kGilReleaseElements)) return false;
  return !b || a.size() <= 1 || b->size() <= 1 || a.shape() == b->shape();
}
// Releases the GIL for its scope unless `keep`.
class MaybeReleaseGil {
 public:
  explicit MaybeReleaseGil(bool keep) : state_(keep ? nullptr : PyEval_SaveThread()) {}
  ~MaybeReleaseGil() {
    if (state_) PyEval_RestoreThread(state_);
  }
  MaybeReleaseGil(const MaybeReleaseGil&) = delete;
  MaybeReleaseGil& operator=(const MaybeReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

std::string int_hint(const WeakScalar& s) {
  return fmt::format(" (the Python int {} became an Int32 rank-0 tensor; write {}.0 for a Float32 scalar: "
                     "docs/python.md, \"Python numbers\")",
                     s.to_string(), s.to_string());
}

// A typed call of two operands, each a tensor or a real number (at least
// one tensor); NotImplemented for any other operand.
// A tensor on a definition-backed carrier takes the same typed C++ function,
// which reaches the class's kernel patterns through the built-in's
// definition (docs/extension.md, "Typed functions on definition-backed
// carriers").
// The comparisons: no weak-scalar form; as operators, a number beside a
// tensor becomes the tensor's own dtype when exactly representable.
// They are the rows of operations.def whose policy rule is `comparison`.
bool is_comparison(const Typed& op) {
  static const std::vector<std::string_view> names = [] {
    const std::pair<std::string_view, std::string_view> rows[] = {
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) {#id, #policy},
#include <strideweave/operations.def>
    };
    std::vector<std::string_view> out;
    for (const auto& [name, policy] : rows)
      if (policy == "comparison") out.push_back(name);
    return out;
  }();
  return std::find(names.begin(), names.end(), op.name) != names.end();
}

// operator_form: called as an operator (a < b, a.__lt__(b)), not as the
// function strideweave.lt(a, b), whose numbers keep their own dtype.
py::object typed_binary(const Typed& op, py::handle a, py::handle b, bool operator_form = false) {
  const bool ta = is_tensor(a), tb = is_tensor(b);
  if ((!ta && !is_real_number(a)) || (!tb && !is_real_number(b)) || (!ta && !tb))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  std::optional<Tensor> result;
  std::optional<WeakScalar> hint;  // a Python int became an Int32 rank-0 tensor (the hint is formatted on error only)
  try {
    if (ta && tb) {
      const Tensor& x = tensor_arg(a, "operand");
      const Tensor& y = tensor_arg(b, "operand");
      MaybeReleaseGil nogil(op.name != "matmul" && keeps_gil(x, &y));
      result.emplace(op.tensor_tensor(x, y, Output()));
    } else {
      const Tensor& t = tensor_arg(ta ? a : b, "operand");
      const WeakScalar s = weak_scalar_operand(ta ? b : a, op.name, ta ? 1 : 0);
      if (op.tensor_scalar) {
        MaybeReleaseGil nogil(keeps_gil(t));
        result.emplace(ta ? op.tensor_scalar(t, s, Output()) : op.scalar_tensor(s, t, Output()));
      } else if (operator_form && is_comparison(op)) {
        // A comparison operator: the number as the tensor's own dtype when
        // exactly representable, else TypeError (docs/composition.md).
        MaybeReleaseGil nogil(keeps_gil(t));
        const Tensor scalar = comparison_scalar(t, s);
        result.emplace(ta ? op.tensor_tensor(t, scalar, Output()) : op.tensor_tensor(scalar, t, Output()));
      } else {
        if (s.kind() == WeakScalarKind::INTEGER) hint = s;
        MaybeReleaseGil nogil(keeps_gil(t));
        const Tensor scalar = scalar_like(t, s);
        result.emplace(ta ? op.tensor_tensor(t, scalar, Output()) : op.tensor_tensor(scalar, t, Output()));
      }
    }
  } catch (const TypeError& e) {
    if (hint) throw TypeError(e.message() + int_hint(*hint));
    throw;
  }
  return tensor_object(std::move(*result));
}

py::object typed_unary(const Typed& op, py::handle x) {
  const Tensor& t = tensor_arg(x, op.name.data());
  std::optional<Tensor> result;
  {
    MaybeReleaseGil nogil(keeps_gil(t));
    result.emplace(op.unary(t, Output()));
  }
  return tensor_object(std::move(*result));
}

// ---- the operators as CPython number slots
//
// `a + b` on a Tensor calls the type's nb_add slot. Left to pybind11, that
// slot looks up __add__ (or __radd__), calls it through the generic
// dispatcher (overload resolution, argument casters) and the uninitialised-
// object guard: most of a tiny call's time. The slots below go to the same
// typed_binary / typed_unary directly; __add__ and the other methods stay
// bound (for explicit calls, help() and the stub) and do the same.
struct SlotOps {
  const Typed *add, *sub, *mul, *div, *pow, *matmul, *neg, *abs, *eq, *ne, *lt, *le;
};
SlotOps& slot_ops() {
  static SlotOps ops{};
  return ops;
}

// The Python exception for the C++ exception being handled, as pybind11's
// dispatcher raises it (the module's translators, then pybind11's own).
PyObject* raise_current_exception() noexcept {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators))
      return nullptr;
    if (py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators))
      return nullptr;
    PyErr_SetString(PyExc_SystemError, "strideweave: an exception escaped every exception translator");
    return nullptr;
  }
}

void refuse_uninitialised(PyObject* o, const char* method) {
  if (is_tensor(o) && !held_tensor(o)) throw_uninitialised(o, method);
}

PyObject* binary_slot(const Typed* op, PyObject* a, PyObject* b, const char* method) noexcept {
  try {
    refuse_uninitialised(a, method);
    refuse_uninitialised(b, method);
    return typed_binary(*op, a, b, /*operator_form=*/true).release().ptr();
  } catch (...) {
    return raise_current_exception();
  }
}
PyObject* unary_slot(const Typed* op, PyObject* x, const char* method) noexcept {
  try {
    refuse_uninitialised(x, method);
    return typed_unary(*op, x).release().ptr();
  } catch (...) {
    return raise_current_exception();
  }
}
PyObject* nb_add(PyObject* a, PyObject* b) { return binary_slot(slot_ops().add, a, b, "Tensor.__add__"); }
PyObject* nb_subtract(PyObject* a, PyObject* b) { return binary_slot(slot_ops().sub, a, b, "Tensor.__sub__"); }
PyObject* nb_multiply(PyObject* a, PyObject* b) { return binary_slot(slot_ops().mul, a, b, "Tensor.__mul__"); }
PyObject* nb_true_divide(PyObject* a, PyObject* b) { return binary_slot(slot_ops().div, a, b, "Tensor.__truediv__"); }
PyObject* nb_matrix_multiply(PyObject* a, PyObject* b) {
  return binary_slot(slot_ops().matmul, a, b, "Tensor.__matmul__");
}
PyObject* nb_power(PyObject* a, PyObject* b, PyObject* modulo) {
  if (modulo != Py_None) Py_RETURN_NOTIMPLEMENTED;  // pow(a, b, m): no modular power
  return binary_slot(slot_ops().pow, a, b, "Tensor.__pow__");
}
PyObject* nb_negative(PyObject* x) { return unary_slot(slot_ops().neg, x, "Tensor.__neg__"); }
PyObject* nb_absolute(PyObject* x) { return unary_slot(slot_ops().abs, x, "Tensor.__abs__"); }
// a > b is lt(b, a), a >= b is le(b, a), as the bound __gt__/__ge__ do.
PyObject* tp_richcompare(PyObject* a, PyObject* b, int op) {
  const SlotOps& ops = slot_ops();
  switch (op) {
    case Py_EQ: return binary_slot(ops.eq, a, b, "Tensor.__eq__");
    case Py_NE: return binary_slot(ops.ne, a, b, "Tensor.__ne__");
    case Py_LT: return binary_slot(ops.lt, a, b, "Tensor.__lt__");
    case Py_LE: return binary_slot(ops.le, a, b, "Tensor.__le__");
    case Py_GT: return binary_slot(ops.lt, b, a, "Tensor.__gt__");
    case Py_GE: return binary_slot(ops.le, b, a, "Tensor.__ge__");
    default: Py_RETURN_NOTIMPLEMENTED;
  }
}

void install_operator_slots(py::handle tensor_type) {
  SlotOps& ops = slot_ops();
  ops = SlotOps{typed("add"), typed("sub"), typed("mul"), typed("div"), typed("pow"), typed("matmul"),
                typed("neg"), typed("abs"), typed("eq"), typed("ne"), typed("lt"), typed("le")};
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
  PyNumberMethods* number = type->tp_as_number;
  if (!number) throw RuntimeError("strideweave: the Tensor type has no number slots");
  number->nb_add = &nb_add;
  number->nb_subtract = &nb_subtract;
  number->nb_multiply = &nb_multiply;
  number->nb_true_divide = &nb_true_divide;
  number->nb_matrix_multiply = &nb_matrix_multiply;
  number->nb_power = &nb_power;
  number->nb_negative = &nb_negative;
  number->nb_absolute = &nb_absolute;
  type->tp_richcompare = &tp_richcompare;
  PyType_Modified(type);
}

py::object& sort_result_type() {
  static py::object* t = new py::object();
  return *t;
}


struct Call {
  std::vector<CallOperand> operands;
  CallOptions options;
  ExecutionRequest request;
  py::object out;                       // the caller's output object, or None
  std::optional<WeakScalar> int_hint;  // a Python int became an Int32 rank-0 tensor (formatted on error only)
};

void add_operands(std::string_view op, Call& call, const py::handle* args, std::size_t n) {
  const bool rank0 = rank0_scalars(op);
  const Tensor* like = nullptr;
  for (std::size_t i = 0; i < n; ++i)
    if (is_tensor(args[i])) {
      like = &tensor_arg(args[i], "operand");
      break;
    }
  call.operands.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    py::handle a = args[i];
    if (is_tensor(a)) {
      call.operands.emplace_back(tensor_arg(a, "operand"));
    } else if (is_real_number(a)) {
      WeakScalar s = weak_scalar_operand(a, op, i);
      if (rank0) {
        if (!like) throw TypeError(fmt::format("{}: at least one operand must be a tensor", op));
        if (s.kind() == WeakScalarKind::INTEGER) call.int_hint = s;
        call.operands.emplace_back(scalar_like(*like, s));
      } else {
        call.operands.emplace_back(s);
      }
    } else {
      throw TypeError(fmt::format("{}: operand {} must be a Tensor or a real number, got {}", op, i,
                                  py::repr(a).cast<std::string>()));
    }
  }
}

void add_keywords(const CallableOperation& op, Call& call, py::handle kwargs) {
  if (!kwargs || kwargs.is_none()) return;
  for (auto item : py::reinterpret_borrow<py::dict>(kwargs)) {
    const std::string key = item.first.cast<std::string>();
    py::handle value = item.second;
    if (key == "out") {
      if (!value.is_none()) {
        call.request.out = output_arg(value, (op.name + ": out").c_str());
        call.out = py::reinterpret_borrow<py::object>(is_tensor(value) ? value : value.attr("tensor"));
      }
    } else if (key == "options") {
      if (value.is_none()) continue;
      if (!py::isinstance<OperationExecutionOptions>(value))
        throw TypeError(fmt::format("{}: options must be an OperationExecutionOptions, got {}", op.name,
                                    py::repr(value).cast<std::string>()));
      const auto& o = value.cast<const OperationExecutionOptions&>();
      if (o.operation() != op.name)
        throw ValueError(fmt::format("{}: the options are bound to the operation '{}'", op.name, o.operation()));
      call.request.accumulator = o.accumulator_dtype();
      call.request.arithmetic = o.arithmetic();
    } else {
      call.options.emplace(key, option_value_arg(value, [&] { return fmt::format("{}: option '{}'", op.name, key); }));
    }
  }
}

py::object run(const CallableOperation& op, Call& call) {
  CallResult result;
  try {
    py::gil_scoped_release nogil;
    result = op.call(call.operands, call.options, call.request);
  } catch (const TypeError& e) {
    if (call.int_hint) throw TypeError(e.message() + int_hint(*call.int_hint));
    throw;
  }
  if (result.results.size() == 2)
    return sort_result_type()(std::move(result.results[0]), std::move(result.results[1]));
  if (call.out) return call.out;
  return tensor_object(std::move(result.results.front()));
}

py::object call_operation_object(const CallableOperation& op, const Typed* fast, const py::args& args,
                                 const py::kwargs& kwargs) {
  if (fast && (!kwargs || kwargs.empty())) {
    if (fast->unary && args.size() == 1 && is_tensor(args[0])) return typed_unary(*fast, args[0]);
    if (fast->tensor_tensor && args.size() == 2) {
      py::object r = typed_binary(*fast, args[0], args[1]);
      if (r.ptr() != Py_NotImplemented) return r;
    }
  }
  Call call;
  std::vector<py::handle> handles(args.begin(), args.end());
  add_operands(op.name, call, handles.data(), handles.size());
  add_keywords(op, call, kwargs);
  return run(op, call);
}

// ---- the operation functions as vectorcall builtins
//
// strideweave.add(a, b) and the other operation functions are plain
// CPython functions (METH_FASTCALL): arguments arrive as an array, so the
// common call of operands only goes straight to the typed C++ function
// (kTyped) without pybind11's dispatcher building an args tuple and a
// kwargs dict. Anything else (options, out=, other operands) takes
// call_operation_object as before. The signature is the docstring's first
// line (`__text_signature__`), as for any builtin.
struct OperationFunction {
  PyMethodDef def{};
  std::string name;
  std::string doc;
  const CallableOperation* entry = nullptr;
  const Typed* fast = nullptr;
};
constexpr const char* kOperationFunctionCapsule = "strideweave.operation_function";

PyObject* call_operation_function(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  const auto* f = static_cast<const OperationFunction*>(PyCapsule_GetPointer(self, kOperationFunctionCapsule));
  if (!f) return nullptr;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  try {
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i)
      if (is_tensor(args[i]) ? !held_tensor(args[i]) : is_uninitialised(args[i]))
        throw_uninitialised(args[i], f->name.c_str());
    if (f->fast && nkw == 0) {
      if (f->fast->unary && nargs == 1 && is_tensor(args[0])) return typed_unary(*f->fast, args[0]).release().ptr();
      if (f->fast->tensor_tensor && nargs == 2) {
        py::object r = typed_binary(*f->fast, args[0], args[1]);
        if (r.ptr() != Py_NotImplemented) return r.release().ptr();
      }
    }
    py::tuple positional(nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i) positional[i] = py::reinterpret_borrow<py::object>(args[i]);
    py::dict keywords;
    for (Py_ssize_t i = 0; i < nkw; ++i)
      keywords[py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(kwnames, i))] =
          py::reinterpret_borrow<py::object>(args[nargs + i]);
    return call_operation_object(*f->entry, nullptr, py::reinterpret_borrow<py::args>(positional),
                                 py::reinterpret_borrow<py::kwargs>(keywords))
        .release()
        .ptr();
  } catch (...) {
    return raise_current_exception();
  }
}

// The function object of one operation; its record lives for the process.
py::object operation_function(const CallableOperation& op, std::string doc, py::handle module_name) {
  static auto* records = new std::deque<OperationFunction>();  // stable addresses, never destroyed
  OperationFunction& f = records->emplace_back();
  f.name = op.name;
  f.doc = std::move(doc);
  f.entry = &op;
  f.fast = typed(op.name);
  f.def.ml_name = f.name.c_str();
  f.def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_operation_function));
  f.def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
  f.def.ml_doc = f.doc.c_str();
  py::capsule self(static_cast<void*>(&f), kOperationFunctionCapsule);
  PyObject* function = PyCFunction_NewEx(&f.def, self.ptr(), module_name.ptr());
  if (!function) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(function);
}

// ---- signatures and docstrings from the schema (data, never re-parsed text)

// The schema of a callable operation, as data: its definition's. sort and
// topk (operations.def's SW_COMPOSITE rows) are typed functions of two plans
// with no definition of their own; their schema is their values plan's
// (tests/conformance/test_operation_list.cpp checks that the operands and
// options agree).
const operation::OperationSchema& schema_of(const CallableOperation& op) {
  std::string_view name = op.name;
#define SW_COMPOSITE(id, values, indices) \
  if (name == #id) name = #values;
#include <strideweave/operations.def>
  return operation::get_definition(name)->schema();
}

// The operand names, in schema order.
std::vector<std::string> operand_names(const CallableOperation& op) {
  std::vector<std::string> out;
  for (const operation::OperandSpec& o : schema_of(op).operands()) out.push_back(o.name());
  return out;
}

// The Python literal of an option's default in the signature: a bool, an
// integer or a real as Python writes it, None for "not given" (an explicit
// None means the default); nothing for a required option.
std::optional<std::string> default_literal(const operation::OptionSpec& o) {
  if (o.required()) return std::nullopt;
  const OptionValue& v = std::get<OptionValue>(o.default_value());
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return py::repr(py::float_(*d)).cast<std::string>();
  return "None";
}

// sort and topk: typed functions of two plans (operations.def's
// SW_COMPOSITE rows), which return SortResult and take no out=.
bool is_composite(std::string_view name) {
#define SW_COMPOSITE(id, values, indices) \
  if (name == #id) return true;
#include <strideweave/operations.def>
  return false;
}

// The execution options (accumulator_dtype, arithmetic) are one `options=`
// keyword in Python (an OperationExecutionOptions).
bool is_execution_option(const operation::OptionSpec& o) {
  return o.name() == "accumulator_dtype" || o.name() == "arithmetic";
}

std::string python_signature(const CallableOperation& op) {
  std::string sig = op.name + "(";
  bool first = true;
  for (const std::string& n : operand_names(op)) {
    sig += (first ? "" : ", ") + n;
    first = false;
  }
  sig += ", /, *";
  for (const operation::OptionSpec& o : schema_of(op).options()) {
    if (is_execution_option(o)) continue;
    const std::optional<std::string> d = default_literal(o);
    sig += ", " + o.name() + (d ? "=" + *d : "");
  }
  if (op.accepts_accumulator) sig += ", options=None";
  if (!is_composite(op.name)) sig += ", out=None";
  return sig + ")";
}

std::string docstring(const CallableOperation& op) {
  std::string doc = python_signature(op) + "\n--\n\n";
  doc += op.signature + "\n\n";
  if (!op.options.empty()) {
    doc += "Options (keyword-only):\n";
    for (const OptionDoc& o : op.options)
      doc += fmt::format("    {} (default: {}): {}\n", o.name, o.default_value, o.meaning);
    doc += "\n";
  }
  if (op.accepts_accumulator)
    doc += "options: an OperationExecutionOptions for this operation (accumulator dtype"
           + std::string(op.accepts_arithmetic ? ", contracted arithmetic" : "") + "; policy R10).\n";
  if (is_composite(op.name))
    doc += "Returns SortResult(values, indices); takes no out=.\n";
  else
    doc += "out: a caller-provided output (a Tensor, into(t) or accumulate_into(t)); the call then returns it.\n";
  doc += "Exact semantics and errors: docs/operations.md (the C++ function of the same name).";
  return doc;
}

}  // namespace

void bind_operations(py::module_& m) {
  sort_result_type() = py::module_::import("collections").attr("namedtuple")(
      "SortResult", py::make_tuple("values", "indices"), py::arg("module") = "strideweave");
  sort_result_type().attr("__doc__") =
      "SortResult(values, indices): what sort and topk return, a named tuple of the sorted values and their "
      "Int32 indices along the axis.";
  m.attr("SortResult") = sort_result_type();

  {
    py::options options;
    options.disable_function_signatures();
    py::list names;
    for (const CallableOperation& op : callable_operations()) {
      if (op.internal) continue;
      m.add_object(op.name.c_str(), operation_function(op, docstring(op), m.attr("__name__")));
      names.append(op.name);
    }
    m.attr("OPERATION_NAMES") = py::tuple(names);
  }

  m.def("_operation_catalog", [] {
        py::list out;
        for (const CallableOperation& op : callable_operations()) {
          if (op.internal) continue;
          py::list opts;
          for (const OptionDoc& o : op.options) opts.append(py::make_tuple(o.name, o.default_value, o.meaning));
          out.append(py::dict(py::arg("name") = op.name, py::arg("operands") = operand_names(op),
                              py::arg("options") = opts, py::arg("accepts_options") = op.accepts_accumulator,
                              py::arg("signature") = python_signature(op), py::arg("schema") = schema_of(op)));
        }
        return out;
      },
      "The operations as the C++ library lists them (for the stub test and docs): name, operand names, "
      "options (name, default text, meaning), whether options= is accepted, the Python signature, and the "
      "schema itself (an OperationSchema: the data the signature is written from).");

  // The operators of ops/operators.h.
  py::class_<Tensor, TensorHolder> tensor = py::reinterpret_borrow<py::class_<Tensor, TensorHolder>>(m.attr("Tensor"));
  struct Binary {
    const char* method;
    const char* op;
    bool swap;
  };
  const Binary binaries[] = {
      {"__add__", "add", false},  {"__radd__", "add", true},  {"__sub__", "sub", false},
      {"__rsub__", "sub", true},  {"__mul__", "mul", false},  {"__rmul__", "mul", true},
      {"__truediv__", "div", false}, {"__rtruediv__", "div", true}, {"__pow__", "pow", false},
      {"__rpow__", "pow", true},  {"__matmul__", "matmul", false}, {"__rmatmul__", "matmul", true},
      {"__eq__", "eq", false},    {"__ne__", "ne", false},    {"__lt__", "lt", false},
      {"__le__", "le", false},    {"__gt__", "lt", true},     {"__ge__", "le", true},
  };
  for (const Binary& b : binaries) {
    const Typed* op = typed(b.op);
    if (!op || !op->tensor_tensor) throw RuntimeError(fmt::format("strideweave: no typed operator for '{}'", b.op));
    const bool swap = b.swap;
    tensor.def(b.method, [op, swap](py::handle self, py::handle other) {
      return swap ? typed_binary(*op, other, self, true) : typed_binary(*op, self, other, true);
    }, py::is_operator());
  }
  const Typed* neg = typed("neg");
  const Typed* abs = typed("abs");
  tensor.def("__neg__", [neg](py::handle self) { return typed_unary(*neg, self); });
  tensor.def("__abs__", [abs](py::handle self) { return typed_unary(*abs, self); });
  // Comparisons return tensors, so equality is not identity: hash by
  // identity, as Python objects do.
  tensor.def("__hash__", [](py::handle self) { return py::hash(py::int_(reinterpret_cast<std::uintptr_t>(self.ptr()))); });
  install_operator_slots(tensor);
}

}  // namespace strideweave::python
