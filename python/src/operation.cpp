// strideweave.operation (operation-semantics.md): the operation-definition
// surface of include/strideweave/operation.h with the specification's Python
// spellings. docs/python.md, "strideweave.operation", says what is reachable
// today.
//
// Records (OperandSpec, OptionSpec, OperationSchema, ResultSpec) are the C++
// value types: immutable (AttributeError on assignment), equal by field and
// hashable. BoundOperationCall, ResolvedInvocation and VJPContext are
// identity objects; each Python object also keeps the Python objects it
// shows (the caller's Tensor objects, the BoundOperationCall object an
// invocation was built from), so that inside resolve `call.operands[0] is x`
// and `invocation.call is call` hold.
//
// Python callables given to define_operation become the C++ std::function
// types (ResolveFn, ReferenceFn, VjpFn): they take the GIL only while they
// run, and a Python exception they raise reaches the caller as that same
// exception. The C++ work of a call (binding, the registry, dispatch,
// kernels) runs with the GIL released. A definition's resolve, reference and
// vjp fields give back the very Python callables it was defined with; a
// built-in definition's are Python callables over its C++ functions.
//
// Option values (OptionValue): None, bool, int (64-bit; OverflowError
// beyond), float, str, a DType, and a list or tuple of ints (shown back as a
// tuple) keep their C++ types, which the built-in operations read; any other
// Python object is an OpaqueValue that holds the object itself (compared by
// identity, kept alive, released with the GIL held) and reads back as that
// same object. A STRUCTURAL operand is passed unchanged: a Python resolve
// sees the caller's very object (the same list, an int of any size); a C++
// resolve reads the option value where one represents it exactly, the
// OpaqueValue otherwise.
#include "bindings.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace strideweave::python {

namespace op = strideweave::operation;

namespace {

std::string repr_of(py::handle value) { return py::repr(value).cast<std::string>(); }
std::string type_name(py::handle value) { return py::str(py::type::handle_of(value).attr("__name__")); }

std::string str_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr()))
    throw TypeError(fmt::format("{}: expected a str, got {}", what, repr_of(value)));
  return value.cast<std::string>();
}

bool is_iterable_not_text(py::handle value) {
  return !PyUnicode_Check(value.ptr()) && !PyBytes_Check(value.ptr()) && py::isinstance<py::iterable>(value);
}

// ---------------------------------------------------------------- markers

// The one Python object of REQUIRED and of NON_DIFFERENTIABLE (made once,
// kept for the life of the process).
py::object* required_marker = nullptr;
py::object* non_differentiable_marker = nullptr;

// ---------------------------------------------------------------- calls from Python

// What the Python entry points (a definition call, bind, resolve_call,
// execute_reference) pass to the callbacks they lead to, on this thread: the
// caller's own objects, so that the callbacks see them rather than new
// handles. Made and destroyed with the GIL held.
struct CallScope {
  const op::OperationDefinition* definition = nullptr;
  py::handle operands;                                 // the caller's positional operands (a tuple)
  const op::ResolvedInvocation* invocation = nullptr;  // execute_reference's invocation ...
  py::handle invocation_object;                        // ... and its Python object
  py::object resolved;                                 // what resolve returned
  py::object referenced;                               // what reference returned (a tuple)
  CallScope* previous;
  static thread_local CallScope* current;
  CallScope() : previous(current) { current = this; }
  ~CallScope() { current = previous; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};
thread_local CallScope* CallScope::current = nullptr;

// The caller's Tensor object that names `tensor`, or a new handle.
py::object tensor_in(const Tensor& tensor, py::handle originals) {
  if (originals)
    for (py::handle o : originals)
      if (is_tensor(o) && tensor_arg(o, "operand").is(tensor)) return py::reinterpret_borrow<py::object>(o);
  return tensor_object(Tensor(tensor));
}

// Operand `index` of a call as resolve sees it. A STRUCTURAL operand is
// "passed unchanged" (operation-semantics.md): when the call came from
// Python (`originals`, the caller's positional operands) it is the caller's
// very object (the same list, the same int however large), else the Python
// form of its option value.
py::object operand_object(const op::CallOperand& operand, py::handle originals, std::size_t index) {
  if (const Tensor* t = std::get_if<Tensor>(&operand)) return tensor_in(*t, originals);
  if (const WeakScalar* s = std::get_if<WeakScalar>(&operand)) return weak_scalar_object(*s);
  if (originals && PyTuple_Check(originals.ptr()) &&
      index < static_cast<std::size_t>(PyTuple_GET_SIZE(originals.ptr())))
    return py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(originals.ptr(), static_cast<Py_ssize_t>(index)));
  return option_object(std::get<op::Structural>(operand).value);
}

// The C++ value of a STRUCTURAL operand, for a resolve written in C++: its
// option value where one represents the object exactly; otherwise (an int
// beyond 64 bits, a list or tuple holding one) the object itself, an
// OpaqueValue. Never refuses: a STRUCTURAL value is for resolve to judge.
op::OptionValue structural_value_arg(py::handle value, const char* what) {
  return option_value_arg(value, what, LargeIntegers::Opaque);
}

// The positional operands of a call, converted for the schema: a Tensor is
// a Tensor; in a STRUCTURAL position anything else is a structural value; a
// real number elsewhere is a weak scalar (bind() then says whether the
// position takes one). Another object where a Tensor or a weak scalar
// belongs is a TypeError naming the operand.
std::vector<op::CallOperand> call_operands(const op::OperationDefinition& d, const py::args& args) {
  const std::span<const op::OperandSpec> specs = d.schema().operands();
  std::vector<op::CallOperand> out;
  out.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    py::handle a = args[i];
    const op::OperandSpec* spec = i < specs.size() ? &specs[i] : nullptr;
    const std::string what = fmt::format("{}: operand {}", d.name(), i);
    if (is_tensor(a)) {
      out.emplace_back(tensor_arg(a, what.c_str()));
    } else if (spec && spec->kind() == op::OperandKind::STRUCTURAL) {
      out.emplace_back(op::Structural{structural_value_arg(a, what.c_str())});
    } else if (is_real_number(a)) {
      out.emplace_back(weak_scalar_arg(a, what.c_str()));
    } else if (!spec || args.size() != specs.size()) {
      // A count mismatch: bind() reports it (TypeError).
      out.emplace_back(op::Structural{structural_value_arg(a, what.c_str())});
    } else {
      throw TypeError(fmt::format("{}: operand '{}' must be {}, got {}", d.name(), spec->name(),
                                  spec->kind() == op::OperandKind::WEAK_SCALAR ? "a weak scalar (a real number)"
                                                                               : "a Tensor",
                                  type_name(a)));
    }
  }
  return out;
}

op::OptionMap call_options(const op::OperationDefinition& d, const py::kwargs& kwargs) {
  op::OptionMap out;
  if (!kwargs) return out;
  for (auto item : kwargs) {
    const std::string key = item.first.cast<std::string>();
    out.emplace(key, option_value_arg(item.second, [&] { return fmt::format("{}: option '{}'", d.name(), key); }));
  }
  return out;
}

const op::OperationDefinition& definition_arg(py::handle value, const char* what) {
  if (!py::isinstance<op::OperationDefinition>(value))
    throw TypeError(fmt::format("{}: expected an OperationDefinition, got {}", what, repr_of(value)));
  return bound_value<op::OperationDefinition>(value, what);
}

py::object definition_object(const op::OperationDefinition& d) {
  return py::cast(std::const_pointer_cast<op::OperationDefinition>(d.shared_from_this()));
}

// ---------------------------------------------------------------- the Python objects of calls

struct PyBoundCall {
  std::shared_ptr<const op::BoundOperationCall> call;
  py::tuple operands;
  py::object options;  // a types.MappingProxyType over a dict
};

struct PyInvocation {
  std::shared_ptr<const op::ResolvedInvocation> invocation;
  py::object call;  // the BoundOperationCall object
};

struct PyVJPContext {
  std::shared_ptr<const op::VJPContext> context;
  py::object invocation;  // the ResolvedInvocation object
  py::object outputs;     // the published Tensor objects (a tuple)
};

// ---------------------------------------------------------------- Python identities
//
// The specification's VJPContext shows "the immutable invocation" and "the
// published outputs": in Python, the very ResolvedInvocation object the
// providers were given and the very Tensor objects the call returned. C++
// keeps one invocation per call (shared by the pipeline and the autograd
// node) and Tensor handles, not Python objects, so the binding remembers the
// Python objects it handed out, weakly (it never keeps one alive), keyed by
// a C++ identity that the object itself keeps alive:
//  - an invocation by its bound call (each call is bound and resolved once;
//    the Python object holds an invocation of that call);
//  - a published Tensor by its carrier and offset (the Python object holds
//    the carrier). The autograd node keeps detached handles of the outputs
//    (a handle of the output itself would keep the output alive through its
//    own node), which name the same carrier, offset and layout: a lookup
//    also checks the layout, so it finds the published object exactly when
//    the handle views the same elements the same way.
// An entry whose object is gone is dropped by the weak reference's callback.
// Guarded by the GIL.
struct TensorKey {
  const void* carrier;
  std::int64_t offset;
  friend bool operator==(const TensorKey&, const TensorKey&) = default;
};
struct TensorKeyHash {
  std::size_t operator()(const TensorKey& k) const noexcept {
    return std::hash<const void*>{}(k.carrier) ^ (std::hash<std::int64_t>{}(k.offset) * 31);
  }
};
template <class Key, class Hash = std::hash<Key>>
using IdentityMap = std::unordered_map<Key, py::object, Hash>;  // key -> weakref

IdentityMap<const void*>& invocation_objects() {
  static auto* map = new IdentityMap<const void*>();  // lives for the process (weakrefs may outlive module teardown)
  return *map;
}
IdentityMap<TensorKey, TensorKeyHash>& tensor_objects() {
  static auto* map = new IdentityMap<TensorKey, TensorKeyHash>();
  return *map;
}

template <class Map>
void remember(Map& map, const typename Map::key_type& key, py::handle object) {
  Map* where = &map;
  py::cpp_function forget([where, key](py::handle ref) {
    auto it = where->find(key);
    if (it != where->end() && it->second.ptr() == ref.ptr()) where->erase(it);
  });
  map[key] = py::weakref(object, forget);
}

// The live object remembered under `key`, or a null object.
template <class Map>
py::object recall(const Map& map, const typename Map::key_type& key) {
  auto it = map.find(key);
  if (it == map.end()) return py::object();
  py::object target = it->second();  // the weak reference's referent, or None
  return target.is_none() ? py::object() : target;
}

TensorKey tensor_key(const Tensor& t) { return TensorKey{t.carrier().get(), t.offset()}; }

py::object read_only(py::dict d) {
  static py::object* proxy = new py::object(py::module_::import("types").attr("MappingProxyType"));
  return (*proxy)(d);
}

py::object bound_call_object(std::shared_ptr<const op::BoundOperationCall> call, py::handle originals) {
  py::tuple operands(call->operands().size());
  for (std::size_t i = 0; i < call->operands().size(); ++i)
    operands[i] = operand_object(call->operands()[i], originals, i);
  py::dict options;
  for (const auto& [name, value] : call->options()) options[py::str(name)] = option_object(value);
  return py::cast(PyBoundCall{std::move(call), std::move(operands), read_only(options)});
}

const PyBoundCall& bound_call_arg(py::handle value, const char* what) {
  if (!py::isinstance<PyBoundCall>(value))
    throw TypeError(fmt::format("{}: expected a BoundOperationCall, got {}", what, repr_of(value)));
  return bound_value<PyBoundCall>(value, what);
}

const PyInvocation& invocation_arg(py::handle value, const char* what) {
  if (!py::isinstance<PyInvocation>(value))
    throw TypeError(fmt::format("{}: expected a ResolvedInvocation, got {}", what, repr_of(value)));
  return bound_value<PyInvocation>(value, what);
}

py::object invocation_object(std::shared_ptr<const op::ResolvedInvocation> invocation, py::handle originals) {
  py::object call = bound_call_object(invocation->call().shared_from_this(), originals);
  return py::cast(PyInvocation{std::move(invocation), std::move(call)});
}

// Whether two invocations of one bound call say the same thing.
bool same_invocation(const op::ResolvedInvocation& a, const op::ResolvedInvocation& b) {
  return &a.call() == &b.call() && a.plan() == b.plan() && std::ranges::equal(a.results(), b.results()) &&
         std::ranges::equal(a.mutated_operands(), b.mutated_operands()) &&
         std::ranges::equal(a.saved_operands(), b.saved_operands()) && a.kernel_id() == b.kernel_id();
}

// Remembers `object` (a ResolvedInvocation object) as the Python object of
// its call's invocation.
void remember_invocation(py::handle object) {
  remember(invocation_objects(), &object.cast<const PyInvocation&>().invocation->call(), object);
}

// The Python object of an invocation C++ hands to a callback: the caller's
// own object when this thread's Python call passed it in; else the object
// already handed out for this call (the one a Python resolve returned, or
// the one a first callback received), while it lives; else a new one, which
// later callbacks of the call then see.
py::object invocation_object_for(const op::ResolvedInvocation& invocation) {
  CallScope* scope = CallScope::current;
  if (scope && scope->invocation == &invocation) return py::reinterpret_borrow<py::object>(scope->invocation_object);
  if (py::object known = recall(invocation_objects(), &invocation.call());
      known && same_invocation(*known.cast<const PyInvocation&>().invocation, invocation))
    return known;
  py::object made = invocation_object(std::make_shared<const op::ResolvedInvocation>(invocation),
                                      scope ? scope->operands : py::handle());
  remember_invocation(made);
  return made;
}

// The Python object of a Tensor a definition call published: the very
// object the call returned while it lives, else a new one.
py::object published_tensor_object(const Tensor& tensor) {
  if (py::object known = recall(tensor_objects(), tensor_key(tensor))) {
    const Tensor& published = tensor_arg(known, "published tensor");
    if (published.carrier() == tensor.carrier() && published.offset() == tensor.offset() &&
        published.layout() == tensor.layout())
      return known;
  }
  return tensor_object(Tensor(tensor));
}

py::object context_object(std::shared_ptr<const op::VJPContext> context) {
  py::object invocation = invocation_object_for(context->invocation());
  py::tuple outputs(context->outputs().size());
  for (std::size_t i = 0; i < context->outputs().size(); ++i)
    outputs[i] = published_tensor_object(context->outputs()[i]);
  return py::cast(PyVJPContext{std::move(context), std::move(invocation), std::move(outputs)});
}

py::tuple tensors_tuple(std::span<const Tensor> tensors, py::handle originals = py::handle()) {
  py::tuple out(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) out[i] = tensor_in(tensors[i], originals);
  return out;
}

std::vector<Tensor> tensors_arg(py::handle values, const char* what) {
  if (!is_iterable_not_text(values))
    throw TypeError(fmt::format("{}: expected an iterable of Tensors, got {}", what, repr_of(values)));
  std::vector<Tensor> out;
  for (py::handle v : values) out.push_back(tensor_arg(v, what));
  return out;
}

// ---------------------------------------------------------------- Python callables as C++ callbacks

struct PyResolve {
  std::shared_ptr<SharedPyObject> function;
  op::ResolvedInvocation operator()(const op::BoundOperationCall& call) const {
    py::gil_scoped_acquire gil;
    CallScope* scope = CallScope::current;
    const bool ours = scope && scope->definition == &call.definition();
    py::object bound = bound_call_object(call.shared_from_this(), ours ? scope->operands : py::handle());
    py::object returned = function->object(bound);
    if (!py::isinstance<PyInvocation>(returned))
      throw TypeError(fmt::format("{}: resolve returned {}, not a ResolvedInvocation", call.definition().name(),
                                  repr_of(returned)));
    if (ours) scope->resolved = returned;
    remember_invocation(returned);  // the object every callback of this call is shown
    return *returned.cast<const PyInvocation&>().invocation;
  }
};

struct PyReference {
  std::shared_ptr<SharedPyObject> function;
  op::ReferenceResult operator()(const op::ResolvedInvocation& invocation) const {
    py::gil_scoped_acquire gil;
    py::object returned = function->object(invocation_object_for(invocation));
    const std::string& name = invocation.operation();
    py::tuple results;
    if (is_tensor(returned)) {
      results = py::make_tuple(returned);
    } else if (PyTuple_Check(returned.ptr())) {
      results = py::reinterpret_borrow<py::tuple>(returned);
    } else {
      throw TypeError(fmt::format("{}: reference returned {}, not a Tensor or a tuple of Tensors", name,
                                  repr_of(returned)));
    }
    std::vector<Tensor> tensors;
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (!is_tensor(results[i]))
        throw TypeError(fmt::format("{}: reference result {} is {}, not a Tensor", name, i, repr_of(results[i])));
      tensors.push_back(tensor_arg(results[i], "reference"));
    }
    CallScope* scope = CallScope::current;
    if (scope && scope->invocation == &invocation) scope->referenced = results;
    if (is_tensor(returned)) return std::move(tensors.front());
    return tensors;
  }
};

}  // namespace

std::vector<std::optional<Tensor>> call_python_vjp(const py::object& function, py::handle leading,
                                                   const op::VJPContext& context,
                                                   std::span<const std::optional<Tensor>> cotangents, const char* what) {
  py::tuple cots(cotangents.size());
  for (std::size_t i = 0; i < cotangents.size(); ++i)
    cots[i] = cotangents[i] ? tensor_object(Tensor(*cotangents[i])) : py::none();
  py::object ctx = context_object(std::make_shared<const op::VJPContext>(context));
  py::object returned = leading ? function(leading, ctx, cots) : function(ctx, cots);
  const std::string& name = context.invocation().operation();
  if (!PyTuple_Check(returned.ptr()))
    throw TypeError(fmt::format("{}: {} returned {}, not a tuple of Tensor or None", name, what, repr_of(returned)));
  std::vector<std::optional<Tensor>> out;
  std::size_t i = 0;
  for (py::handle g : returned) {
    if (g.is_none()) out.emplace_back(std::nullopt);
    else if (is_tensor(g)) out.emplace_back(tensor_arg(g, what));
    else throw TypeError(fmt::format("{}: {} gradient {} is {}, not a Tensor or None", name, what, i, repr_of(g)));
    ++i;
  }
  return out;
}

namespace {

struct PyVjp {
  std::shared_ptr<SharedPyObject> function;
  std::vector<std::optional<Tensor>> operator()(const op::VJPContext& context,
                                                std::span<const std::optional<Tensor>> cotangents) const {
    py::gil_scoped_acquire gil;
    return call_python_vjp(function->object, py::handle(), context, cotangents, "vjp");
  }
};

// ---------------------------------------------------------------- C++ callbacks as Python callables

py::object resolve_object(const op::OperationDefinition& d) {
  if (const PyResolve* p = d.resolve().target<PyResolve>()) return p->function->object;
  op::ResolveFn resolve = d.resolve();
  return py::cpp_function(
      [resolve](py::handle call) {
        const PyBoundCall& c = bound_call_arg(call, "resolve");
        std::shared_ptr<const op::ResolvedInvocation> invocation;
        {
          py::gil_scoped_release nogil;
          invocation = std::make_shared<const op::ResolvedInvocation>(resolve(*c.call));
        }
        return py::cast(PyInvocation{std::move(invocation), py::reinterpret_borrow<py::object>(call)});
      },
      py::name("resolve"), py::arg("call"),
      py::doc("resolve(call) -> ResolvedInvocation: the built-in semantic resolution of a bound call."));
}

py::object reference_object(const op::OperationDefinition& d) {
  if (!d.reference()) return py::none();
  if (const PyReference* p = d.reference()->target<PyReference>()) return p->function->object;
  op::ReferenceFn reference = *d.reference();
  return py::cpp_function(
      [reference](py::handle invocation) -> py::object {
        const PyInvocation& inv = invocation_arg(invocation, "reference");
        std::optional<op::ReferenceResult> result;
        {
          py::gil_scoped_release nogil;
          result.emplace(reference(*inv.invocation));
        }
        if (Tensor* t = std::get_if<Tensor>(&*result)) return tensor_object(std::move(*t));
        return tensors_tuple(std::get<std::vector<Tensor>>(*result));
      },
      py::name("reference"), py::arg("invocation"),
      py::doc("reference(invocation) -> Tensor | tuple[Tensor, ...]: the carrier-neutral reference execution "
              "(on Generic, from copies of the operands)."));
}

py::object vjp_object(const op::OperationDefinition& d) {
  if (std::holds_alternative<op::NonDifferentiable>(d.vjp())) return *non_differentiable_marker;
  const op::VjpFn& fn = std::get<op::VjpFn>(d.vjp());
  if (const PyVjp* p = fn.target<PyVjp>()) return p->function->object;
  op::VjpFn vjp = fn;
  return py::cpp_function(
      [vjp](py::handle context, py::handle cotangents) {
        if (!py::isinstance<PyVJPContext>(context))
          throw TypeError(fmt::format("vjp: expected a VJPContext, got {}", repr_of(context)));
        const PyVJPContext& ctx = context.cast<const PyVJPContext&>();
        if (!is_iterable_not_text(cotangents))
          throw TypeError(fmt::format("vjp: cotangents must be a tuple of Tensor or None, got {}", repr_of(cotangents)));
        std::vector<std::optional<Tensor>> cots;
        for (py::handle c : cotangents) {
          if (c.is_none()) cots.emplace_back(std::nullopt);
          else cots.emplace_back(tensor_arg(c, "vjp: cotangent"));
        }
        std::vector<std::optional<Tensor>> grads;
        {
          py::gil_scoped_release nogil;
          grads = vjp(*ctx.context, cots);
        }
        py::tuple out(grads.size());
        for (std::size_t i = 0; i < grads.size(); ++i) out[i] = grads[i] ? tensor_object(std::move(*grads[i])) : py::none();
        return out;
      },
      py::name("vjp"), py::arg("context"), py::arg("cotangents"),
      py::doc("vjp(context, cotangents) -> tuple[Tensor | None, ...]: the built-in vector-Jacobian product, one "
              "gradient or None per differentiable operand."));
}

// ---------------------------------------------------------------- record arguments

std::size_t index_arg(py::handle value, const char* what) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw TypeError(fmt::format("{}: expected an int, got {}", what, repr_of(value)));
  const std::int64_t i = integer_arg(value, what);
  if (i < 0) throw ValueError(fmt::format("{}: an operand index must be non-negative, got {}", what, i));
  return static_cast<std::size_t>(i);
}

std::vector<std::size_t> indices_arg(py::handle values, const char* what) {
  if (!is_iterable_not_text(values))
    throw TypeError(fmt::format("{}: expected an iterable of operand indices, got {}", what, repr_of(values)));
  std::vector<std::size_t> out;
  for (py::handle v : values) out.push_back(index_arg(v, what));
  return out;
}

// A finite non-negative real (operation-semantics.md, ResultSpec): a
// Python int too large for a double (10**400) is not a finite double, so it
// is the ValueError of a non-finite tolerance, not an OverflowError.
// ResultSpec's shape "SHALL be a Shape": a Shape object, nothing else (a
// tuple of extents is a TypeError, docs/python.md).
Shape result_shape_arg(py::handle value, const char* what) {
  if (!py::isinstance<Shape>(value))
    throw TypeError(fmt::format("{}: expected a Shape, got {}", what, repr_of(value)));
  return value.cast<Shape>();
}

double tolerance_arg(py::handle value, const char* what) {
  if (PyBool_Check(value.ptr()) || !is_real_number(value))
    throw TypeError(fmt::format("{}: expected a real number (not a bool), got {}", what, repr_of(value)));
  const double d = PyFloat_AsDouble(value.ptr());
  if (d == -1.0 && PyErr_Occurred()) {
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw py::error_already_set();
    PyErr_Clear();
    throw ValueError(fmt::format("{}: must be finite and non-negative, got an {} beyond any finite double", what,
                                 type_name(value)));
  }
  return d;
}

template <class T>
std::vector<T> records_arg(py::handle values, const char* what, const char* record) {
  if (!is_iterable_not_text(values))
    throw TypeError(fmt::format("{}: expected an iterable of {}, got {}", what, record, repr_of(values)));
  std::vector<T> out;
  std::size_t i = 0;
  for (py::handle v : values) {
    if (!py::isinstance<T>(v))
      throw TypeError(fmt::format("{}: entry {} is not an {} ({})", what, i, record, repr_of(v)));
    out.push_back(bound_value<T>(v, what));
    ++i;
  }
  return out;
}

template <class T>
py::tuple records_tuple(std::span<const T> records) {
  py::tuple out(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) out[i] = py::cast(records[i]);
  return out;
}

py::tuple indices_tuple(std::span<const std::size_t> indices) {
  py::tuple out(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) out[i] = py::int_(indices[i]);
  return out;
}

py::object default_object(const op::OptionSpec& o) {
  if (o.required()) return *required_marker;
  return option_object(std::get<op::OptionValue>(o.default_value()));
}

std::string operand_spec_repr(const op::OperandSpec& s) {
  return fmt::format("OperandSpec({}, {}, differentiable={})", repr_of(py::str(s.name())), repr_of(to_py(s.kind())),
                     s.differentiable() ? "True" : "False");
}

std::string option_spec_repr(const op::OptionSpec& s) {
  const std::string kind =
      s.kind() == op::OptionKind::ANY ? std::string() : fmt::format(", kind={}", repr_of(to_py(s.kind())));
  return fmt::format("OptionSpec({}, default={}{})", repr_of(py::str(s.name())), repr_of(default_object(s)), kind);
}

// The results of a definition call: one Tensor, or a tuple for several. A
// result that is one of the caller's operands is that very object.
py::object results_object(std::vector<Tensor>&& results, py::handle originals) {
  py::tuple all = tensors_tuple(results, originals);
  for (std::size_t i = 0; i < results.size(); ++i) remember(tensor_objects(), tensor_key(results[i]), all[i]);
  if (results.size() == 1) return all[0];
  return all;
}


// ---------------------------------------------------------------- Operation.forward

// The positional parameters of the pure views through dispatch_op, by name
// (the Tensor methods of the same names).
const std::vector<const char*>* view_parameters(const std::string& name) {
  static const std::map<std::string, std::vector<const char*>, std::less<>> params{
      {"permute", {"perm"}},        {"reshape", {"shape"}},     {"squeeze", {"axes"}},
      {"unsqueeze", {"axis"}},      {"broadcast_to", {"shape"}}, {"as_strided", {"shape", "stride", "offset"}}};
  const auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}


}  // namespace

py::object forward_object(const std::shared_ptr<Operation>& self, const py::args& args, const py::kwargs& kwargs) {
  const std::string name = self->_operation_name().value_or("");
  py::handle options = py::none();
  if (kwargs)
    for (auto item : kwargs) {
      const std::string key = item.first.cast<std::string>();
      if (key != "options")
        throw TypeError(fmt::format("{}.forward: unknown keyword '{}' (forward takes the operands positionally and "
                                    "options=)",
                                    name.empty() ? "Operation" : name, key));
      options = item.second;
    }
  if (!self->_operation_name())
    throw NotImplementedError("Operation.forward: this Operation was never dispatched; get one from "
                              "carrier.dispatch_op(name)");
  std::vector<op::CallOperand> operands;
  op::OptionMap map;
  std::shared_ptr<const op::OperationDefinition> d;
  if (const std::vector<const char*>* params = view_parameters(name)) {
    if (args.size() == 0 || !is_tensor(args[0]))
      throw TypeError(fmt::format("{}.forward: the first operand must be a Tensor", name));
    if (args.size() - 1 > params->size())
      throw TypeError(fmt::format("{}.forward: takes a Tensor and at most {} parameters, got {} arguments", name,
                                  params->size(), args.size()));
    operands.emplace_back(tensor_arg(args[0], "operand 0"));
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string what = fmt::format("{}.forward: {}", name, (*params)[i - 1]);
      map.emplace((*params)[i - 1], option_value_arg(args[i], what.c_str()));
    }
    if (!options.is_none())
      throw TypeError(fmt::format("{}.forward: a view takes no execution options", name));
  } else {
    try {
      d = op::get_definition(name);
    } catch (const LookupError&) {
      throw NotImplementedError(fmt::format("Operation.forward: no operation named '{}'", name));
    }
    operands = call_operands(*d, args);
    if (py::isinstance<OperationExecutionOptions>(options)) {
      const auto& o = options.cast<const OperationExecutionOptions&>();
      if (o.operation() != name)
        throw ValueError(fmt::format("{}.forward: the execution options are bound to '{}'", name, o.operation()));
      if (const DType* accumulator = o.accumulator_dtype()) map.emplace("accumulator_dtype", accumulator);
      if (const std::optional<Arithmetic> arithmetic = o.arithmetic())
        map.emplace("arithmetic", std::string(value_of(*arithmetic)));
    } else if (PyDict_Check(options.ptr())) {
      // Beyond the specification (docs/autograd.md): the schema's other
      // options by name, e.g. {"axes": [0], "keepdims": True}.
      for (auto item : py::reinterpret_borrow<py::dict>(options)) {
        const std::string key = py::str(item.first);
        const std::string what = fmt::format("{}: option '{}'", name, key);
        map.emplace(key, option_value_arg(item.second, what.c_str()));
      }
    } else if (!options.is_none()) {
      throw TypeError(fmt::format("{}.forward: options must be OperationExecutionOptions, a dict of options or None, "
                                  "got {}",
                                  name, type_name(options)));
    }
  }
  CallScope scope;
  scope.definition = d.get();
  scope.operands = args;
  std::vector<Tensor> results;
  {
    py::gil_scoped_release nogil;
    results = self->forward(operands, map);
  }
  return results_object(std::move(results), args);
}

namespace {

// ---------------------------------------------------------------- opcheck (docs/opcheck.md)

// A sample's operand: a SampleTensor, a real number (a weak scalar) or any
// other value (a STRUCTURAL operand). A Tensor is refused: opcheck builds
// its own inputs on every carrier.
op::SampleOperand sample_operand_arg(py::handle value, std::size_t i) {
  const std::string what = fmt::format("OpcheckSample: operand {}", i);
  if (py::isinstance<op::SampleTensor>(value)) return value.cast<op::SampleTensor>();
  if (is_tensor(value))
    throw TypeError(fmt::format("{}: give SampleTensor(dtype, shape), not a Tensor (opcheck builds the values and "
                                "views itself)",
                                what));
  if (is_real_number(value)) return weak_scalar_arg(value, what.c_str());
  return op::Structural{option_value_arg(value, what.c_str())};
}

std::vector<op::OpcheckSample> samples_arg(py::handle values, const char* what) {
  std::vector<op::OpcheckSample> out;
  if (values.is_none()) return out;
  if (!is_iterable_not_text(values)) throw TypeError(fmt::format("{}: samples must be an iterable of OpcheckSample", what));
  for (py::handle v : py::iter(values)) {
    if (!py::isinstance<op::OpcheckSample>(v))
      throw TypeError(fmt::format("{}: samples must hold OpcheckSample values, got {}", what, repr_of(v)));
    out.push_back(v.cast<op::OpcheckSample>());
  }
  return out;
}

std::vector<std::shared_ptr<Carrier>> prototypes_arg(py::handle values, const char* what) {
  std::vector<std::shared_ptr<Carrier>> out;
  if (values.is_none()) return out;
  if (!is_iterable_not_text(values)) throw TypeError(fmt::format("{}: carriers must be an iterable of carriers", what));
  for (py::handle v : py::iter(values)) out.push_back(carrier_arg(v, what));
  return out;
}

py::object field_object(const std::string& field) { return field.empty() ? py::object(py::none()) : py::object(py::str(field)); }

void bind_opcheck(py::module_& m) {
  py::class_<op::SampleTensor>(m, "SampleTensor", R"doc(
SampleTensor(dtype, shape): a Tensor operand of an opcheck sample: its dtype
and shape (a Shape or a tuple of extents); opcheck builds the values and the
views on every carrier it checks. Immutable.)doc")
      .def(py::init([](py::handle dtype, py::handle shape) {
             return op::SampleTensor{&dtype_arg(dtype, "SampleTensor: dtype"), shape_arg(shape, "SampleTensor: shape")};
           }),
           py::arg("dtype"), py::arg("shape"))
      .def_property_readonly("dtype", [](const op::SampleTensor& t) { return dtype_object(t.dtype); })
      .def_property_readonly("shape", [](const op::SampleTensor& t) { return py::cast(t.shape); })
      .def("__repr__", [](const op::SampleTensor& t) {
        return fmt::format("SampleTensor({}, {})", t.dtype->name(), t.shape.to_string());
      });
  py::class_<op::OpcheckSample>(m, "OpcheckSample", R"doc(
OpcheckSample(operands, options=None, label=""): one sample call for opcheck:
operands in schema order (SampleTensor for a Tensor operand, a real number for
a weak scalar, anything else for a STRUCTURAL operand), options a dict by
name. Immutable.)doc")
      .def(py::init([](py::handle operands, py::handle options, py::handle label) {
             op::OpcheckSample s;
             if (!is_iterable_not_text(operands)) throw TypeError("OpcheckSample: operands must be an iterable");
             std::size_t i = 0;
             for (py::handle o : py::iter(operands)) s.operands.push_back(sample_operand_arg(o, i++));
             if (!options.is_none()) {
               if (!PyDict_Check(options.ptr())) throw TypeError("OpcheckSample: options must be a dict or None");
               for (auto item : py::reinterpret_borrow<py::dict>(options)) {
                 const std::string key = str_arg(item.first, "OpcheckSample: option name");
                 const std::string what = fmt::format("OpcheckSample: option '{}'", key);
                 s.options.emplace(key, option_value_arg(item.second, what.c_str()));
               }
             }
             s.label = str_arg(label, "OpcheckSample: label");
             return s;
           }),
           py::arg("operands"), py::arg("options") = py::none(), py::arg("label") = "")
      .def_property_readonly("label", [](const op::OpcheckSample& s) { return s.label; })
      .def("__repr__", [](const op::OpcheckSample& s) { return fmt::format("OpcheckSample(label='{}')", s.label); });
  py::class_<op::OpcheckCase>(m, "OpcheckCase", "One opcheck case: sample, variant, status, field (None unless failed), message.")
      .def_property_readonly("sample", [](const op::OpcheckCase& c) { return c.sample; })
      .def_property_readonly("variant", [](const op::OpcheckCase& c) { return c.variant; })
      .def_property_readonly("status", [](const op::OpcheckCase& c) { return std::string(op::name_of(c.status)); })
      .def_property_readonly("field", [](const op::OpcheckCase& c) { return field_object(c.field); })
      .def_property_readonly("message", [](const op::OpcheckCase& c) { return c.message; })
      .def("__repr__", [](const op::OpcheckCase& c) {
        return fmt::format("OpcheckCase({} / {}: {}{})", c.sample, c.variant, op::name_of(c.status),
                           c.field.empty() ? "" : fmt::format(" [{}]", c.field));
      });
  py::class_<op::OpcheckPatternReport>(m, "OpcheckPatternReport", "One kernel pattern's cases.")
      .def_property_readonly("kernel_id", [](const op::OpcheckPatternReport& p) { return p.kernel_id; })
      .def_property_readonly("source", [](const op::OpcheckPatternReport& p) { return p.source; })
      .def_property_readonly("preference", [](const op::OpcheckPatternReport& p) { return p.preference; })
      .def_property_readonly("cases", [](const op::OpcheckPatternReport& p) { return py::tuple(py::cast(p.cases)); });
  py::class_<op::OpcheckCarrierReport>(m, "OpcheckCarrierReport", "One carrier's patterns, gradient cases and problem (or None).")
      .def_property_readonly("carrier", [](const op::OpcheckCarrierReport& c) { return c.carrier; })
      .def_property_readonly("patterns", [](const op::OpcheckCarrierReport& c) { return py::tuple(py::cast(c.patterns)); })
      .def_property_readonly("gradients", [](const op::OpcheckCarrierReport& c) { return py::tuple(py::cast(c.gradients)); })
      .def_property_readonly("problem", [](const op::OpcheckCarrierReport& c) {
        return c.problem ? py::cast(*c.problem) : py::object(py::none());
      });
  py::class_<op::OpcheckReport>(m, "OpcheckReport", R"doc(
What opcheck found: operation, carriers (per carrier, per pattern, per case),
passed() / failed() / count(status); str() is the text report.)doc")
      .def_property_readonly("operation", [](const op::OpcheckReport& r) { return r.operation; })
      .def_property_readonly("carriers", [](const op::OpcheckReport& r) { return py::tuple(py::cast(r.carriers)); })
      .def("passed", &op::OpcheckReport::passed)
      .def("failed", &op::OpcheckReport::failed)
      .def("count", [](const op::OpcheckReport& r, py::handle status) {
        const std::string s = str_arg(status, "OpcheckReport.count: status");
        for (auto k : {op::OpcheckStatus::PASSED, op::OpcheckStatus::FAILED, op::OpcheckStatus::DECLINED,
                       op::OpcheckStatus::NOT_APPLICABLE, op::OpcheckStatus::SKIPPED})
          if (s == op::name_of(k)) return r.count(k);
        throw ValueError(fmt::format("OpcheckReport.count: unknown status '{}'", s));
      }, py::arg("status"))
      .def("__str__", [](const op::OpcheckReport& r) { return op::to_text(r); })
      .def("__repr__", [](const op::OpcheckReport& r) {
        return fmt::format("OpcheckReport({}: {} passed, {} failed)", r.operation, r.count(op::OpcheckStatus::PASSED),
                           r.failed());
      });
  m.def("opcheck", [](py::handle definition, py::handle samples, py::handle carriers, bool gradients,
                      std::uint64_t seed, double fd_step, double grad_atol, double grad_rtol,
                      std::int64_t fd_max_elements) {
        const op::OperationDefinition& d = definition_arg(definition, "opcheck");
        op::OpcheckOptions o;
        o.samples = samples_arg(samples, "opcheck");
        o.carriers = prototypes_arg(carriers, "opcheck");
        o.gradients = gradients;
        o.seed = seed;
        o.fd_step = fd_step;
        o.grad_atol = grad_atol;
        o.grad_rtol = grad_rtol;
        o.fd_max_elements = fd_max_elements;
        py::gil_scoped_release nogil;
        return op::opcheck(d, std::move(o));
      },
      py::arg("definition"), py::arg("samples") = py::none(), py::arg("carriers") = py::none(), py::kw_only(),
      py::arg("gradients") = true, py::arg("seed") = 20261202, py::arg("fd_step") = 1e-2, py::arg("grad_atol") = 2e-2,
      py::arg("grad_rtol") = 2e-2, py::arg("fd_max_elements") = 64, R"doc(
opcheck(definition, samples=None, carriers=None, *, gradients=True, seed=20261202,
        fd_step=0.01, grad_atol=0.02, grad_rtol=0.02, fd_max_elements=64) -> OpcheckReport

Runs every kernel pattern of every carrier that advertises the user-defined
operation, one at a time, against its reference on inputs generated from the
samples (random and edge values, strided, transposed and broadcast views,
empty extents), and the VJP against central differences of the reference.
carriers: prototype instances (inputs are built with their new_like).
Omitted samples/carriers: those given to register_opcheck_inputs.
docs/opcheck.md.)doc");
  m.def("register_opcheck_inputs", [](py::handle definition, py::handle samples, py::handle carriers) {
        const op::OperationDefinition& d = definition_arg(definition, "register_opcheck_inputs");
        auto s = samples_arg(samples, "register_opcheck_inputs");
        auto c = prototypes_arg(carriers, "register_opcheck_inputs");
        op::register_opcheck_inputs(d, std::move(s), std::move(c));
      },
      py::arg("definition"), py::arg("samples"), py::arg("carriers") = py::none(), R"doc(
register_opcheck_inputs(definition, samples, carriers=None): the samples and
prototypes opcheck uses when it is given none (one-shot per definition).)doc");
}

}  // namespace

py::object resolved_invocation_object(const op::ResolvedInvocation& invocation) {
  return invocation_object_for(invocation);
}

namespace {

// The REQUIRED and NON_DIFFERENTIABLE markers and the schema records: OperandSpec, OptionSpec, OperationSchema.
void bind_schema_records(py::module_& m) {
  // ---- markers
  py::class_<op::Required>(m, "_RequiredMarker", "The type of REQUIRED (one instance).")
      .def("__repr__", [](const op::Required&) { return "REQUIRED"; })
      .def("__reduce__", [](const op::Required&) { return "REQUIRED"; });
  required_marker = new py::object(py::cast(op::REQUIRED));
  m.attr("REQUIRED") = *required_marker;

  py::class_<op::NonDifferentiable>(m, "_NonDifferentiableMarker", "The type of NON_DIFFERENTIABLE (one instance).")
      .def("__repr__", [](const op::NonDifferentiable&) { return "NON_DIFFERENTIABLE"; })
      .def("__reduce__", [](const op::NonDifferentiable&) { return "NON_DIFFERENTIABLE"; });
  non_differentiable_marker = new py::object(py::cast(op::NON_DIFFERENTIABLE));
  m.attr("NON_DIFFERENTIABLE") = *non_differentiable_marker;

  // ---- schema records
  py::class_<op::OperandSpec>(m, "OperandSpec", R"doc(
OperandSpec(name, kind, differentiable=False): one positional operand of an
OperationSchema (operation-semantics.md). name a non-empty Python identifier (str;
ValueError otherwise); kind an OperandKind; differentiable a bool, True only
for OperandKind.TENSOR (ValueError otherwise). A field of the wrong type is a
TypeError. Immutable, equal by field, hashable. accepts_weak_scalar is True
for WEAK_SCALAR operands and for the TENSOR operands of built-in overloads
that also take a weak scalar (mul, pow, clamp).)doc")
      .def(py::init([](py::handle name, py::handle kind, py::handle differentiable) {
             const std::string n = str_arg(name, "OperandSpec: name");
             const op::OperandKind k = from_py<op::OperandKind>(kind, "OperandSpec: kind");
             if (!PyBool_Check(differentiable.ptr()))
               throw TypeError(fmt::format("OperandSpec: differentiable must be a bool, got {}", repr_of(differentiable)));
             return op::OperandSpec(n, k, differentiable.ptr() == Py_True);
           }),
           py::arg("name"), py::arg("kind"), py::arg("differentiable") = false)
      .def_property_readonly("name", &op::OperandSpec::name)
      .def_property_readonly("kind", [](const op::OperandSpec& s) { return to_py(s.kind()); })
      .def_property_readonly("differentiable", &op::OperandSpec::differentiable)
      .def_property_readonly("accepts_weak_scalar", &op::OperandSpec::accepts_weak_scalar)
      .def("__eq__", [](const op::OperandSpec& a, py::handle b) {
        return py::isinstance<op::OperandSpec>(b) && a == b.cast<const op::OperandSpec&>();
      })
      .def("__hash__", &op::OperandSpec::hash)
      .def("__repr__", &operand_spec_repr);

  py::class_<op::OptionSpec>(m, "OptionSpec", R"doc(
OptionSpec(name, default=REQUIRED, kind=OptionKind.ANY): one keyword option of
an OperationSchema (operation-semantics.md). name a non-empty Python identifier
(str; TypeError for another type, ValueError for a bad name); default REQUIRED
(the option has no default) or an option value: None, bool, int, float, str, a
DType, a list or tuple of ints (read back as a tuple), or any other object
(kept and compared by identity). Beyond the specification, kind (an
OptionKind) declares the values the option accepts: binding a call raises
TypeError naming the option for a value that does not fit, before resolve
runs, and the default must fit too. Immutable, equal by name, default and
kind, hashable.)doc")
      .def(py::init([](py::handle name, py::handle default_value, py::handle kind) {
             const std::string n = str_arg(name, "OptionSpec: name");
             const op::OptionKind k = from_py<op::OptionKind>(kind, "OptionSpec: kind");
             if (py::isinstance<op::Required>(default_value)) return op::OptionSpec(n, op::REQUIRED, {}, k);
             const std::string what = fmt::format("OptionSpec '{}': default", n);
             return op::OptionSpec(n, option_value_arg(default_value, what.c_str()), {}, k);
           }),
           py::arg("name"), py::arg("default") = *required_marker, py::arg("kind") = to_py(op::OptionKind::ANY))
      .def_property_readonly("kind", [](const op::OptionSpec& s) { return to_py(s.kind()); },
                             "The OptionKind of the values the option accepts (ANY unless declared).")
      .def(
          "admit",
          [](const op::OptionSpec& s, const std::string& operation, py::handle value) {
            const std::string what = fmt::format("{}: option '{}'", operation, s.name());
            return option_object(s.admit(operation, option_value_arg(value, what.c_str())));
          },
          py::arg("operation"), py::arg("value"),
          "The value as a call of `operation` binds it (an exact int as a float for REAL, one int as a "
          "one-element tuple for INTEGERS), or TypeError naming the operation and the option when it does not "
          "fit the kind.")
      .def("accepted", &op::OptionSpec::accepted,
           "The phrase binding errors use for what the option accepts ('a real number', 'a list of integers or "
           "None', ...).")
      .def_property_readonly("name", &op::OptionSpec::name)
      .def_property_readonly("default", &default_object, "The default value, or REQUIRED.")
      .def_property_readonly("required", &op::OptionSpec::required, "True when the default is REQUIRED.")
      .def_property_readonly("doc", &op::OptionSpec::doc, "A built-in option's one-sentence description ('' otherwise).")
      .def("__eq__", [](const op::OptionSpec& a, py::handle b) {
        return py::isinstance<op::OptionSpec>(b) && a == b.cast<const op::OptionSpec&>();
      })
      // Equal specs have equal names; the default (maybe an unhashable
      // object compared by identity) does not take part.
      .def("__hash__", [](const op::OptionSpec& s) { return std::hash<std::string>{}(s.name()); })
      .def("__repr__", &option_spec_repr);

  py::class_<op::OperationSchema>(m, "OperationSchema", R"doc(
OperationSchema(operands, options=()): an operation's positional operands (a
non-empty iterable of OperandSpec) and keyword options (an iterable of
OptionSpec), each read once into an immutable tuple. A wrong entry type is a
TypeError; no operands, a repeated name, or a name shared by an operand and
an option is a ValueError. Immutable, equal by field, hashable.)doc")
      .def(py::init([](py::handle operands, py::handle options) {
             return op::OperationSchema(records_arg<op::OperandSpec>(operands, "OperationSchema: operands", "OperandSpec"),
                                        records_arg<op::OptionSpec>(options, "OperationSchema: options", "OptionSpec"));
           }),
           py::arg("operands"), py::arg("options") = py::tuple())
      .def_property_readonly("operands", [](const op::OperationSchema& s) { return records_tuple(s.operands()); })
      .def_property_readonly("options", [](const op::OperationSchema& s) { return records_tuple(s.options()); })
      .def("signature", &op::OperationSchema::signature, py::arg("operation"),
           "The schema as text for an operation name: 'acme.op(x: tensor, scale=1.0)'.")
      .def("__eq__", [](const op::OperationSchema& a, py::handle b) {
        return py::isinstance<op::OperationSchema>(b) && a == b.cast<const op::OperationSchema&>();
      })
      .def("__hash__", [](const op::OperationSchema& s) {
        std::size_t h = s.operands().size();
        for (const op::OperandSpec& o : s.operands()) h = h * 31 + o.hash();
        for (const op::OptionSpec& o : s.options()) h = h * 31 + std::hash<std::string>{}(o.name());
        return h;
      })
      .def("__repr__", [](const op::OperationSchema& s) {
        std::string operands, options;
        for (const op::OperandSpec& o : s.operands()) operands += (operands.empty() ? "" : ", ") + operand_spec_repr(o);
        for (const op::OptionSpec& o : s.options()) options += (options.empty() ? "" : ", ") + option_spec_repr(o);
        return fmt::format("OperationSchema(operands=({}{}), options=({}{}))", operands,
                           s.operands().size() == 1 ? "," : "", options, s.options().size() == 1 ? "," : "");
      });
}

// ResultSpec: what resolve declares of each result.
void bind_result_spec(py::module_& m) {
  // ---- results
  py::class_<op::ResultSpec>(m, "ResultSpec", R"doc(
ResultSpec(dtype, shape, layout, alias_of=None, *, atol=0.0, rtol=0.0): one
result contract (operation-semantics.md). dtype a DType; shape a Shape (a
tuple of extents or another type is a TypeError); layout a Layout with
exactly that shape (ValueError otherwise); alias_of None for fresh storage,
or the non-negative positional index of the Tensor operand the result is
(checked against the call when an invocation is built: ValueError, also when
that operand's dtype, shape or layout is not the result's); atol and rtol
finite non-negative real numbers, not bools (the reference-comparison
tolerance; an int beyond any finite double is a ValueError). A field of the
wrong type is a TypeError. Immutable, equal by field, hashable.)doc")
      .def(py::init([](py::handle dtype, py::handle shape, py::handle layout, py::handle alias_of, py::handle atol,
                       py::handle rtol) {
             const DType& d = dtype_arg(dtype, "ResultSpec: dtype");
             Shape s = result_shape_arg(shape, "ResultSpec: shape");
             if (!py::isinstance<Layout>(layout))
               throw TypeError(fmt::format("ResultSpec: layout must be a Layout, got {}", repr_of(layout)));
             std::optional<std::size_t> alias;
             if (!alias_of.is_none()) alias = index_arg(alias_of, "ResultSpec: alias_of");
             return op::ResultSpec(d, std::move(s), layout.cast<Layout>(), alias, tolerance_arg(atol, "ResultSpec: atol"),
                                   tolerance_arg(rtol, "ResultSpec: rtol"));
           }),
           py::arg("dtype"), py::arg("shape"), py::arg("layout"), py::arg("alias_of") = py::none(), py::kw_only(),
           py::arg("atol") = 0.0, py::arg("rtol") = 0.0)
      .def_static("compact", [](py::handle dtype, py::handle shape, py::handle atol, py::handle rtol) {
             return op::ResultSpec::compact(dtype_arg(dtype, "ResultSpec.compact: dtype"),
                                            result_shape_arg(shape, "ResultSpec.compact: shape"),
                                            tolerance_arg(atol, "ResultSpec.compact: atol"),
                                            tolerance_arg(rtol, "ResultSpec.compact: rtol"));
           },
           py::arg("dtype"), py::arg("shape"), py::kw_only(), py::arg("atol") = 0.0, py::arg("rtol") = 0.0,
           "A fresh result with the canonical compact layout of `shape`.")
      .def_property_readonly("dtype", [](const op::ResultSpec& r) { return dtype_object(r.dtype()); })
      .def_property_readonly("shape", [](const op::ResultSpec& r) { return r.shape(); })
      .def_property_readonly("layout", [](const op::ResultSpec& r) { return r.layout(); })
      .def_property_readonly("alias_of", [](const op::ResultSpec& r) -> py::object {
        return r.alias_of() ? py::object(py::int_(*r.alias_of())) : py::object(py::none());
      })
      .def_property_readonly("atol", &op::ResultSpec::atol)
      .def_property_readonly("rtol", &op::ResultSpec::rtol)
      .def("__eq__", [](const op::ResultSpec& a, py::handle b) {
        return py::isinstance<op::ResultSpec>(b) && a == b.cast<const op::ResultSpec&>();
      })
      .def("__hash__", [](const op::ResultSpec& r) {
        return std::hash<const void*>{}(&r.dtype()) ^ (r.layout().hash() * 31) ^
               (r.alias_of() ? *r.alias_of() + 1 : 0) * 131;
      })
      .def("__repr__", [](const op::ResultSpec& r) {
        return fmt::format("ResultSpec({}, {}, {}, alias_of={}, atol={}, rtol={})", repr_of(dtype_object(r.dtype())),
                           repr_of(py::cast(r.shape())), repr_of(py::cast(r.layout())),
                           r.alias_of() ? std::to_string(*r.alias_of()) : "None", repr_of(py::float_(r.atol())),
                           repr_of(py::float_(r.rtol())));
      });
}

// The identity objects of one call: BoundOperationCall, ResolvedInvocation, VJPContext.
void bind_call_records(py::module_& m) {
  // ---- the bound call, the invocation, the VJP context
  py::class_<PyBoundCall>(m, "BoundOperationCall", R"doc(
What resolve receives (operation-semantics.md): the definition, the operands
in schema order (the caller's own Tensor objects; weak scalars as Python
numbers; STRUCTURAL values unchanged: the caller's very objects), and a
read-only mapping of
every option with the declared defaults filled in. Only the framework makes
one (calling a definition, resolve_call or bind); immutable.)doc")
      .def_property_readonly("definition", [](const PyBoundCall& c) { return definition_object(c.call->definition()); })
      .def_property_readonly("operands", [](const PyBoundCall& c) { return c.operands; })
      .def_property_readonly("options", [](const PyBoundCall& c) { return c.options; })
      .def("__repr__", [](const PyBoundCall& c) {
        return fmt::format("<BoundOperationCall {} operands={} options={}>", c.call->definition().name(),
                           repr_of(c.operands), repr_of(py::dict(c.options)));
      });

  py::class_<PyInvocation>(m, "ResolvedInvocation", R"doc(
ResolvedInvocation(call, plan, results, mutated_operands=(), saved_operands=(),
kernel_id=None): everything a backend must do for one call
(operation-semantics.md). call the BoundOperationCall being resolved; plan the
OperationPlan of the call's operation with one operand per Tensor or weak
scalar operand, in order, with matching roles and stored dtypes; results a
non-empty iterable of ResultSpec; mutated_operands and saved_operands
iterables of unique non-negative indices of Tensor operands; kernel_id a
non-empty str (None: the definition's name). Iterables are read once. A wrong
field or entry type is a TypeError; any other conflict with the call is a
ValueError. Immutable.)doc")
      .def(py::init([](py::handle call, py::handle plan, py::handle results, py::handle mutated, py::handle saved,
                       py::handle kernel_id) {
             const PyBoundCall& c = bound_call_arg(call, "ResolvedInvocation: call");
             const OperationPlan& p = plan_arg(plan, "ResolvedInvocation: plan");
             std::vector<op::ResultSpec> r = records_arg<op::ResultSpec>(results, "ResolvedInvocation: results", "ResultSpec");
             std::vector<std::size_t> m_ = indices_arg(mutated, "ResolvedInvocation: mutated_operands");
             std::vector<std::size_t> s = indices_arg(saved, "ResolvedInvocation: saved_operands");
             std::optional<std::string> k;
             if (!kernel_id.is_none()) k = str_arg(kernel_id, "ResolvedInvocation: kernel_id");
             auto invocation = std::make_shared<const op::ResolvedInvocation>(*c.call, p, std::move(r), std::move(m_),
                                                                              std::move(s), std::move(k));
             return PyInvocation{std::move(invocation), py::reinterpret_borrow<py::object>(call)};
           }),
           py::arg("call"), py::arg("plan"), py::arg("results"), py::arg("mutated_operands") = py::tuple(),
           py::arg("saved_operands") = py::tuple(), py::arg("kernel_id") = py::none())
      .def_property_readonly("call", [](const PyInvocation& i) { return i.call; })
      .def_property_readonly("definition", [](const PyInvocation& i) { return definition_object(i.invocation->definition()); })
      .def_property_readonly("operation", [](const PyInvocation& i) { return i.invocation->operation(); })
      .def_property_readonly("operands", [](const PyInvocation& i) { return i.call.cast<const PyBoundCall&>().operands; })
      .def_property_readonly("options", [](const PyInvocation& i) { return i.call.cast<const PyBoundCall&>().options; })
      .def_property_readonly("plan", [](const PyInvocation& i) { return i.invocation->plan(); })
      .def_property_readonly("results", [](const PyInvocation& i) { return records_tuple(i.invocation->results()); })
      .def_property_readonly("mutated_operands", [](const PyInvocation& i) { return indices_tuple(i.invocation->mutated_operands()); })
      .def_property_readonly("saved_operands", [](const PyInvocation& i) { return indices_tuple(i.invocation->saved_operands()); })
      .def_property_readonly("kernel_id", [](const PyInvocation& i) { return i.invocation->kernel_id(); })
      .def("__repr__", [](const PyInvocation& i) {
        return fmt::format("<ResolvedInvocation {} plan={} results={} kernel_id={}>", i.invocation->operation(),
                           i.invocation->plan().to_string(), i.invocation->results().size(),
                           repr_of(py::str(i.invocation->kernel_id())));
      });

  py::class_<PyVJPContext>(m, "VJPContext", R"doc(
VJPContext(invocation, outputs, saved_operands): what a VJP receives
(operation-semantics.md): the immutable ResolvedInvocation, the published
outputs and the saved operands in the declared saved-index order, as tuples
of Tensors. The framework makes one for each backward; constructing one is
for calling a VJP directly (a test of one). Immutable.)doc")
      .def(py::init([](py::handle invocation, py::handle outputs, py::handle saved) {
             const PyInvocation& inv = invocation_arg(invocation, "VJPContext: invocation");
             if (!is_iterable_not_text(outputs))
               throw TypeError(fmt::format("VJPContext: outputs: expected an iterable of Tensors, got {}",
                                           repr_of(outputs)));
             const py::tuple output_objects(py::reinterpret_borrow<py::object>(outputs));  // read once
             auto context = std::make_shared<const op::VJPContext>(
                 inv.invocation, tensors_arg(output_objects, "VJPContext: outputs"),
                 tensors_arg(saved, "VJPContext: saved_operands"));
             py::tuple given(context->outputs().size());
             for (std::size_t i = 0; i < context->outputs().size(); ++i)
               given[i] = tensor_in(context->outputs()[i], output_objects);
             return PyVJPContext{std::move(context), py::reinterpret_borrow<py::object>(invocation), std::move(given)};
           }),
           py::arg("invocation"), py::arg("outputs"), py::arg("saved_operands"))
      .def_property_readonly("invocation", [](const PyVJPContext& c) { return c.invocation; })
      .def_property_readonly("outputs", [](const PyVJPContext& c) { return c.outputs; })
      .def_property_readonly("saved_operands", [](const PyVJPContext& c) { return tensors_tuple(c.context->saved_operands()); })
      .def("needs_grad", [](const PyVJPContext& c, py::handle operand) {
             return c.context->needs_grad(index_arg(operand, "VJPContext.needs_grad"));
           }, py::arg("operand"),
           "Whether a gradient is wanted for schema operand `operand` (every differentiable operand when unknown).");
}

// OperationDefinition and define_operation.
void bind_definitions(py::module_& m) {
  // ---- the definition
  py::class_<op::OperationDefinition, std::shared_ptr<op::OperationDefinition>>(m, "OperationDefinition", R"doc(
One registered operation (operation-semantics.md): define_operation returns
one; get_definition(name) gives any registered one, built-in included.
Immutable fields: name, schema, resolve, reference (None when absent), vjp (a
callable, or NON_DIFFERENTIABLE). Calling it, definition(*operands,
**options), binds the positional operands in schema order and the options by
exact name (TypeError for a missing or extra operand, an unknown option, an
omitted required option or a kind mismatch), resolves, and dispatches on the
operands' carrier: one Tensor, or a tuple for several results.)doc")
      .def_property_readonly("name", &op::OperationDefinition::name)
      .def_property_readonly("schema", [](const op::OperationDefinition& d) { return d.schema(); })
      .def_property_readonly("resolve", &resolve_object)
      .def_property_readonly("reference", &reference_object)
      .def_property_readonly("vjp", &vjp_object)
      .def("is_builtin", &op::OperationDefinition::is_builtin, "True for the library's own operations.")
      .def("is_differentiable", &op::OperationDefinition::is_differentiable, "True unless the vjp is NON_DIFFERENTIABLE.")
      .def("__call__", [](const op::OperationDefinition& d, const py::args& args, const py::kwargs& kwargs) {
             std::vector<op::CallOperand> operands = call_operands(d, args);
             op::OptionMap options = call_options(d, kwargs);
             CallScope scope;
             scope.definition = &d;
             scope.operands = args;
             std::vector<Tensor> results;
             {
               py::gil_scoped_release nogil;
               results = d(std::move(operands), std::move(options));
             }
             return results_object(std::move(results), args);
           },
           "definition(*operands, **options): ordinary dispatch of this operation.")
      .def("__repr__", [](const op::OperationDefinition& d) {
        return fmt::format("<OperationDefinition {}>", d.schema().signature(d.name()));
      });

  m.def("define_operation", [](py::handle name, py::handle schema, py::handle resolve, py::handle reference,
                               py::handle vjp) {
        std::string n = str_arg(name, "define_operation: name");
        if (!py::isinstance<op::OperationSchema>(schema))
          throw TypeError(fmt::format("define_operation('{}'): schema must be an OperationSchema, got {}", n, repr_of(schema)));
        if (!PyCallable_Check(resolve.ptr()))
          throw TypeError(fmt::format("define_operation('{}'): resolve must be callable, got {}", n, repr_of(resolve)));
        if (!reference.is_none() && !PyCallable_Check(reference.ptr()))
          throw TypeError(fmt::format("define_operation('{}'): reference must be None or callable, got {}", n,
                                      repr_of(reference)));
        op::VjpChoice choice = op::NON_DIFFERENTIABLE;
        if (vjp.ptr() == Py_Ellipsis) {
          throw ValueError(fmt::format("define_operation('{}'): vjp is required: pass a callable "
                                       "vjp(context, cotangents) or NON_DIFFERENTIABLE",
                                       n));
        } else if (py::isinstance<op::NonDifferentiable>(vjp)) {
          choice = op::NON_DIFFERENTIABLE;
        } else if (PyCallable_Check(vjp.ptr())) {
          choice = op::VjpFn(PyVjp{share(vjp)});
        } else {
          throw TypeError(fmt::format("define_operation('{}'): vjp must be a callable or NON_DIFFERENTIABLE, got {}", n,
                                      repr_of(vjp)));
        }
        op::OperationSchema s = schema.cast<op::OperationSchema>();
        op::ResolveFn resolve_fn = PyResolve{share(resolve)};
        std::optional<op::ReferenceFn> reference_fn;
        if (!reference.is_none()) reference_fn = op::ReferenceFn(PyReference{share(reference)});
        std::shared_ptr<const op::OperationDefinition> d;
        {
          py::gil_scoped_release nogil;
          d = op::define_operation(std::move(n), std::move(s), std::move(resolve_fn), std::move(reference_fn),
                                   std::move(choice));
        }
        return definition_object(*d);
      },
      py::arg("name"), py::arg("schema"), py::arg("resolve"), py::arg("reference") = py::none(),
      py::arg("vjp") = py::ellipsis(), R"doc(
define_operation(name, schema, resolve, reference=None, vjp=...) -> OperationDefinition

Registers a namespaced operation and returns its definition
(operation-semantics.md). name a dot-namespaced identifier path
('acme.fused_linear') whose first segment is neither 'strideweave' nor a
built-in operation name; schema an OperationSchema; resolve(call:
BoundOperationCall) -> ResolvedInvocation; reference None or
reference(invocation) -> Tensor | tuple[Tensor, ...]; vjp, required, a
callable vjp(context: VJPContext, cotangents) -> tuple[Tensor | None, ...] or
NON_DIFFERENTIABLE. A wrong argument type is a TypeError; an invalid or
reserved name, a name already registered, or an omitted vjp is a ValueError,
and nothing is registered. One-shot and thread-safe: no replacement, no
unregistration.)doc");
}

// The registry and the calls through it: get_definition, registered_definitions, bind,
// resolve_call, execute_reference.
void bind_registry(py::module_& m) {
  m.def("get_definition", [](py::handle name) {
        const std::string n = str_arg(name, "get_definition: name");
        std::shared_ptr<const op::OperationDefinition> d;
        {
          py::gil_scoped_release nogil;
          d = op::get_definition(n);
        }
        return definition_object(*d);
      },
      py::arg("name"), "The registered definition of `name`, built-in or user-defined (LookupError otherwise).");

  m.def("registered_definitions", [] {
        std::vector<std::shared_ptr<const op::OperationDefinition>> all;
        {
          py::gil_scoped_release nogil;
          all = op::registered_definitions();
        }
        py::tuple out(all.size());
        for (std::size_t i = 0; i < all.size(); ++i) out[i] = definition_object(*all[i]);
        return out;
      },
      "Every registered definition (built-in and user-defined), sorted by name.");

  m.def("bind", [](py::handle definition, const py::args& args, const py::kwargs& kwargs) {
        const op::OperationDefinition& d = definition_arg(definition, "bind");
        std::vector<op::CallOperand> operands = call_operands(d, args);
        op::OptionMap options = call_options(d, kwargs);
        std::shared_ptr<const op::BoundOperationCall> call = op::bind(d, std::move(operands), std::move(options));
        return bound_call_object(std::move(call), args);
      },
      py::arg("definition"), R"doc(
bind(definition, *operands, **options) -> BoundOperationCall

Binds a call as calling the definition would, without resolving it: operands
in schema order, options by exact name with defaults filled in (TypeError for
a binding error).)doc");

  m.def("resolve_call", [](py::handle definition, const py::args& args, const py::kwargs& kwargs) {
        const op::OperationDefinition& d = definition_arg(definition, "resolve_call");
        std::vector<op::CallOperand> operands = call_operands(d, args);
        op::OptionMap options = call_options(d, kwargs);
        CallScope scope;
        scope.definition = &d;
        scope.operands = args;
        std::shared_ptr<const op::ResolvedInvocation> invocation;
        {
          py::gil_scoped_release nogil;
          invocation = op::resolve_call(d, std::move(operands), std::move(options));
        }
        // A Python resolve's own (validated) object, else the built-in's.
        if (scope.resolved && &scope.resolved.cast<const PyInvocation&>().invocation->call() == &invocation->call())
          return scope.resolved;
        return invocation_object(std::move(invocation), args);
      },
      py::arg("definition"), R"doc(
resolve_call(definition, *operands, **options) -> ResolvedInvocation

Binds and resolves without executing: what calling the definition with these
operands and options would do before capability work. resolve's errors
propagate; an invocation that conflicts with the call is a ValueError.)doc");

  m.def("execute_reference", [](py::handle definition, py::handle invocation) {
        const op::OperationDefinition& d = definition_arg(definition, "execute_reference");
        const PyInvocation& inv = invocation_arg(invocation, "execute_reference: invocation");
        CallScope scope;
        scope.invocation = inv.invocation.get();
        scope.invocation_object = invocation;
        scope.operands = inv.call.cast<const PyBoundCall&>().operands;
        std::vector<Tensor> results;
        {
          py::gil_scoped_release nogil;
          results = op::execute_reference(d, *inv.invocation);
        }
        if (scope.referenced && scope.referenced.cast<py::tuple>().size() == results.size()) return scope.referenced;
        return py::object(tensors_tuple(results, scope.operands));
      },
      py::arg("definition"), py::arg("invocation"), R"doc(
execute_reference(definition, invocation) -> tuple[Tensor, ...]

Runs the definition's reference on a resolved invocation of it and normalises
the return: one Tensor becomes a one-element tuple, a tuple keeps its order.
No reference: NotImplementedError; an invocation of another definition:
ValueError; a return that is neither a Tensor nor a tuple of Tensors:
TypeError; an empty tuple, or results whose count, dtype, shape or layout
conflict with the invocation's ResultSpecs: ProviderContractError naming the
field.)doc");
}

// lower_builtin (<strideweave/call.h>): a built-in call as its kernels see it.
struct PyBuiltinKernelCall {
  OperationPlan plan;
  py::tuple operands;
  py::dict attributes;
  Shape kernel_shape;
  py::tuple squeeze;
};

void bind_lower_builtin(py::module_& m) {
  py::class_<PyBuiltinKernelCall>(m, "BuiltinKernelCall", R"doc(
A built-in operation's call as the shipped kernels receive it
(lower_builtin): plan (the kernel's plan), operands (Tensors as views of
the result grid, weak scalars as Python numbers of their convert_to dtype,
in plan order), attributes (a dict of the normalised options), kernel_shape
(the kernel result's Shape, filled compact in logical order) and squeeze
(the axes of it the published result drops).)doc")
      .def_readonly("plan", &PyBuiltinKernelCall::plan)
      .def_readonly("operands", &PyBuiltinKernelCall::operands)
      .def_readonly("attributes", &PyBuiltinKernelCall::attributes)
      .def_readonly("kernel_shape", &PyBuiltinKernelCall::kernel_shape)
      .def_readonly("squeeze", &PyBuiltinKernelCall::squeeze);
  m.def("lower_builtin", [](py::handle invocation) {
        const PyInvocation& inv = invocation_arg(invocation, "lower_builtin");
        std::optional<BuiltinKernelCall> made;
        {
          py::gil_scoped_release nogil;
          made.emplace(lower_builtin(*inv.invocation));
        }
        BuiltinKernelCall& lowered = *made;
        PyBuiltinKernelCall out{std::move(lowered.plan), py::tuple(lowered.operands.size()), py::dict(),
                                std::move(lowered.kernel_shape), py::tuple(lowered.squeeze.size())};
        for (std::size_t i = 0; i < lowered.operands.size(); ++i) {
          if (Tensor* t = std::get_if<Tensor>(&lowered.operands[i])) out.operands[i] = tensor_object(std::move(*t));
          else out.operands[i] = value_object(std::get<Value>(lowered.operands[i]));
        }
        for (const auto& [name, value] : lowered.attributes.values())
          out.attributes[py::str(name)] = std::visit([](const auto& x) -> py::object { return py::cast(x); }, value);
        for (std::size_t i = 0; i < lowered.squeeze.size(); ++i) out.squeeze[i] = py::int_(lowered.squeeze[i]);
        return out;
      },
      py::arg("invocation"), R"doc(
lower_builtin(invocation) -> BuiltinKernelCall

A built-in definition's resolved invocation as the shipped kernels receive
it (docs/extension.md, "Built-in operations in a kernel pattern"): the
typed function's own lowering (broadcast views, materialised scalars,
normalised options), so a kernel pattern for a built-in computes what a
Generic kernel computes from the same fields. TypeError for a definition
that is not built-in (and for sort and topk themselves: their two plans are
the built-in definitions _sort_values / _sort_indices and _topk_values /
_topk_indices).)doc");
}

// explain() and its records (<strideweave/explain.h>).
void bind_explain(py::module_& m) {
  // explain() (<strideweave/explain.h>; `strideweave explain`).
  py::class_<CandidateTrace>(m, "CandidateTrace", R"doc(
One candidate kernel pattern of an explained call, in preference order:
kernel_id, source ("built-in" or a pack's "namespace@version"), preference,
outcome ("ran", "declined", "not reached") and the Unsupported reason of a
declined one. Immutable.)doc")
      .def_readonly("kernel_id", &CandidateTrace::kernel_id)
      .def_readonly("source", &CandidateTrace::source)
      .def_readonly("preference", &CandidateTrace::preference)
      .def_property_readonly("outcome", [](const CandidateTrace& c) { return std::string(name_of(c.outcome)); })
      .def_readonly("reason", &CandidateTrace::reason)
      .def("__repr__", [](const CandidateTrace& c) {
        return fmt::format("<CandidateTrace {} ({}, preference {}): {}>", c.kernel_id, c.source, c.preference,
                           name_of(c.outcome));
      });
  struct PyExplanation {
    Explanation e;
    py::tuple outputs;
  };
  py::class_<PyExplanation>(m, "Explanation", R"doc(
What one call did, step by step (explain()): operation, bound_call, plan
(None when resolution failed), results (the ResultSpecs), carrier,
admitted_by (the OperationCapability that admitted the plan, or None),
admitted_axes (the ExecutionAxes the carrier keeps beside it, or None),
route ("kernel table", "kernel patterns", "composite provider"),
candidates (CandidateTrace, in preference order), ran, outputs (Tensors),
error_type and error_message (None unless a step failed). str() gives the
text `strideweave explain` prints. Immutable.)doc")
      .def_property_readonly("operation", [](const PyExplanation& x) { return x.e.operation; })
      .def_property_readonly("bound_call", [](const PyExplanation& x) { return x.e.bound_call; })
      .def_property_readonly("plan", [](const PyExplanation& x) { return x.e.plan; })
      .def_property_readonly("results", [](const PyExplanation& x) {
        return py::tuple(py::cast(x.e.results));
      })
      .def_property_readonly("carrier", [](const PyExplanation& x) { return x.e.carrier; })
      .def_property_readonly("placement", [](const PyExplanation& x) { return x.e.placement; },
                             "The dispatch carrier's Placement (its operands share it), or None before it is known.")
      .def_property_readonly("admitted_by", [](const PyExplanation& x) { return x.e.admitted_by; })
      .def_property_readonly("admitted_axes", [](const PyExplanation& x) { return x.e.admitted_axes; })
      .def_property_readonly("route", [](const PyExplanation& x) { return x.e.route; })
      .def_property_readonly("candidates", [](const PyExplanation& x) { return py::tuple(py::cast(x.e.candidates)); })
      .def_property_readonly("ran", [](const PyExplanation& x) { return x.e.ran; })
      .def_property_readonly("outputs", [](const PyExplanation& x) { return x.outputs; })
      .def_property_readonly("error_type", [](const PyExplanation& x) { return x.e.error_type; })
      .def_property_readonly("error_message", [](const PyExplanation& x) { return x.e.error_message; })
      .def("__str__", [](const PyExplanation& x) { return to_text(x.e); })
      .def("__repr__", [](const PyExplanation& x) {
        return fmt::format("<Explanation {} route='{}'{}>", x.e.operation, x.e.route,
                           x.e.error_type ? " error=" + *x.e.error_type : "");
      });
  m.def("explain", [](py::handle definition, const py::args& args, const py::kwargs& kwargs) {
        const op::OperationDefinition& d = definition_arg(definition, "explain");
        std::vector<op::CallOperand> operands = call_operands(d, args);
        op::OptionMap options = call_options(d, kwargs);
        CallScope scope;
        scope.definition = &d;
        scope.operands = args;
        PyExplanation x;
        {
          py::gil_scoped_release nogil;
          x.e = explain(d, std::move(operands), std::move(options));
        }
        x.outputs = tensors_tuple(x.e.outputs, args);
        return x;
      },
      py::arg("definition"), R"doc(
explain(definition, *operands, **options) -> Explanation

Runs one call of `definition` as the dispatch pipeline does and records each
step (the bound call, the plan and result specs, the carrier and the
capability entry that admitted the plan, the route, every candidate kernel
pattern with its outcome, what ran, the outputs). A failing step ends the
record with its error instead of raising. docs/cli.md, "strideweave explain".)doc");
}

}  // namespace

void bind_operation(py::module_& m) {
  // In dependency order: records before the objects that hold them.
  bind_schema_records(m);
  bind_result_spec(m);
  bind_call_records(m);
  bind_definitions(m);
  bind_registry(m);
  bind_explain(m);
  bind_opcheck(m);
  bind_lower_builtin(m);
}

}  // namespace strideweave::python
