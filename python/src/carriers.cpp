// Carriers (core-concepts.md sections 1, 2 and 8): the Carrier base, the
// DependentCarrier base, the shipped Generic and CPU (FileBacked is in
// file_backed.cpp), and carriers defined in Python (docs/python.md, "Carriers defined in Python").
//
// A Python subclass of Carrier or DependentCarrier is its own exact class:
// the first time the class is used (instantiated, or named in a class-level
// query or declaration) CarrierClass::define_runtime_class mints an identity
// for it, stored in the class's own __dict__, so a subclass of it mints
// another and no registry ever reaches a base class. Every instance is one
// C++ host object (PyCarrier or PyDependentCarrier below) that answers that
// identity and forwards the storage hooks to the Python methods:
//
//   supports_storage_dtype(dtype) -> bool   (required)
//   _storage_size() -> int                  (required)
//   _read_slot(index) -> value              (required; index in range)
//   _write_slot(index, value) -> None       (required; index in range)
//   _release_storage() -> None              (required; called at most once)
//   _make_like(size, mutable, dtype, empty) -> carrier of the same class
//                                           (optional: new_like/allocate_like)
//   _generate_operation_capabilities() -> iterable of OperationCapability
//                                           (DependentCarrier only)
//
// The framework validates liveness, mutability, range and value kind before
// each hook, exactly as for a C++ carrier. The C++ hooks supports_storage_dtype,
// storage_size and release_storage are noexcept: an exception (or a wrong
// return type) from their Python methods cannot propagate, so it is reported
// through sys.unraisablehook and the answer is False / 0 / "released".
// Instances of Python subclasses keep their Python object alive for as long as
// C++ holds them (a Tensor over them, a new_like result), so the hooks always
// have an object to run on.
//
// Definition-backed Python classes (strideweave.carriers.extension,
// docs/python.md "Definition-backed Python carriers"): a class that defines
// none of the hooks above gets an identity whose host is PyDefinedCarrier or
// PyDefinedDependentCarrier (extension::DefinedCarrier-based: storage is the
// class's StorageProvider); one that defines any of them gets the
// definition-free host. The choice is made once, when the identity is minted
// (first use), from the class alone, so naming a class in a TransferRoute or
// a KernelPack before its definition is registered is fine. Instances of a
// definition-backed class are built as Cls(slots, *, dtype, mutable=True).
#include "bindings.h"

#include <fmt/format.h>

#include <atomic>
#include <thread>
#include <unordered_map>

namespace strideweave::python {
namespace {

const char* const kIdentityKey = "__strideweave_carrier_class__";

std::string class_name_of(py::handle type) { return py::str(type.attr("__name__")); }

// ---- the C++ hosts of Python-defined carrier classes

template <class Base>
class PyStorage : public Base {
 public:
  using Base::Base;

  bool supports_storage_dtype(const DType& dtype) const noexcept override {
    py::gil_scoped_acquire gil;
    try {
      py::function hook = py::get_override(static_cast<const Base*>(this), "supports_storage_dtype");
      if (!hook) return false;
      py::object answer = hook(dtype_object(dtype));
      if (!PyBool_Check(answer.ptr()))
        throw TypeError(fmt::format("{}.supports_storage_dtype returned {}, not a bool", this->class_name(),
                                    py::repr(answer).cast<std::string>()));
      return answer.ptr() == Py_True;
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("strideweave: a Python carrier's supports_storage_dtype");
    } catch (const std::exception& e) {
      unraisable(e, "supports_storage_dtype");
    }
    return false;
  }

 protected:
  std::int64_t storage_size() const noexcept override {
    py::gil_scoped_acquire gil;
    try {
      py::object n = hook("_storage_size")();
      const std::int64_t size = integer_arg(n, "_storage_size()");
      if (size < 0) throw ValueError(fmt::format("{}._storage_size() returned {} < 0", this->class_name(), size));
      return size;
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("strideweave: a Python carrier's _storage_size");
    } catch (const std::exception& e) {
      unraisable(e, "_storage_size");
    }
    return 0;
  }

  Value read_slot(std::int64_t index) const override {
    py::gil_scoped_acquire gil;
    py::object v = hook("_read_slot")(index);
    const std::string what = this->class_name() + "._read_slot";
    return value_arg(v, this->dtype(), what.c_str());
  }

  void write_slot(std::int64_t index, const Value& value) override {
    py::gil_scoped_acquire gil;
    hook("_write_slot")(index, value_object(value));
  }

  void release_storage() noexcept override {
    py::gil_scoped_acquire gil;
    try {
      hook("_release_storage")();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("strideweave: a Python carrier's _release_storage");
    } catch (const std::exception& e) {
      unraisable(e, "_release_storage");
    }
  }

  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override {
    py::gil_scoped_acquire gil;
    py::object made = hook("_make_like")(size, mutable_, dtype_object(dtype), empty);
    py::handle self_type = py::type::handle_of(self());
    if (py::type::handle_of(made).ptr() != self_type.ptr())
      throw TypeError(fmt::format("{}._make_like returned {}, not an instance of exactly {}", this->class_name(),
                                  py::repr(made).cast<std::string>(), class_name_of(self_type)));
    std::shared_ptr<Carrier> out = carrier_arg(made, "_make_like");
    if (out->size() != size)
      throw ValueError(fmt::format("{}._make_like({}) returned a carrier of {} slots", this->class_name(), size,
                                   out->size()));
    if (&out->dtype() != &dtype)
      throw TypeError(fmt::format("{}._make_like returned a carrier of dtype {} for {}", this->class_name(),
                                  out->dtype().name(), dtype.name()));
    return out;
  }

  // The dispatch hook (carrier-extension R13.1): the subclass's
  // _dispatch_op(name) -> a fresh Operation (docs/extension.md).
  std::shared_ptr<Operation> _dispatch_op(std::string_view name) const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Base*>(this), "_dispatch_op");
    if (!f) return Base::_dispatch_op(name);
    py::object op;
    try {
      op = f(std::string(name));
    } catch (py::error_already_set& e) {
      // "No implementation" crosses into C++ as the library's own error, so
      // the dispatch reports it as UnsupportedOperationPlan (R13.1).
      if (e.matches(PyExc_NotImplementedError)) throw NotImplementedError(e.what());
      throw;
    }
    const std::string what = this->class_name() + "._dispatch_op";
    if (op.is_none())
      throw TypeError(fmt::format("{} returned None for '{}'; it returns a fresh Operation", what, name));
    return operation_arg(op, what.c_str());
  }

  // The subclass's _placement() -> Placement (default: this process's host
  // memory; docs/python.md, "Placement"). Called for every call's operands,
  // so a class that overrides it should answer a constant.
  Placement placement() const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Base*>(this), "_placement");
    if (!f) return Base::placement();
    py::object p = f();
    if (!py::isinstance<Placement>(p))
      throw TypeError(fmt::format("{}._placement() returned {}, not a Placement", this->class_name(),
                                  py::repr(p).cast<std::string>()));
    return p.cast<Placement>();
  }

  // The Python object of this instance.
  py::handle self() const {
    return py::detail::get_object_handle(static_cast<const Base*>(this), py::detail::get_type_info(typeid(Base)));
  }

  // The Python method `name` (NotImplementedError when the class lacks it).
  py::function hook(const char* name) const {
    py::function f = py::get_override(static_cast<const Base*>(this), name);
    if (!f)
      throw NotImplementedError(fmt::format("{} does not define {}(), a storage hook of Python carriers "
                                            "(docs/python.md)",
                                            this->class_name(), name));
    return f;
  }

 private:
  void unraisable(const std::exception& e, const char* hook_name) const noexcept {
    try {
      PyErr_SetString(PyExc_RuntimeError, fmt::format("{}: {}", hook_name, e.what()).c_str());
      PyErr_WriteUnraisable(nullptr);
    } catch (...) {
      PyErr_Clear();
    }
  }
};

class PyCarrier final : public PyStorage<Carrier> {
 public:
  PyCarrier(const SimpleDType& dtype, bool mutable_, CarrierClass cls) : PyStorage<Carrier>(dtype, mutable_, cls) {}
};

class PyDependentCarrier final : public PyStorage<DependentCarrier> {
 public:
  PyDependentCarrier(const SimpleDType& dtype, bool mutable_, CarrierClass cls)
      : PyStorage<DependentCarrier>(dtype, mutable_, cls) {}
  // Ownership, for the Python subclass's _claim / _relinquish / _owner_access.
  using DependentCarrier::claim;
  using DependentCarrier::owner_access;
  using DependentCarrier::relinquish;

  // The constructor's one finalisation (called from Python with the GIL
  // released: generation takes it back, and a second thread finalising the
  // same instance waits on the C++ lock without holding the GIL).
  void finalize() {
    if (generating_thread_.load() == std::this_thread::get_id())
      throw RuntimeError(fmt::format("{}: finalize_operation_capabilities() called from inside "
                                     "_generate_operation_capabilities()",
                                     class_name()));
    finalize_operation_capabilities();
  }

 protected:
  std::vector<OperationCapability> _generate_operation_capabilities() const override {
    py::gil_scoped_acquire gil;
    py::function generator = py::get_override(static_cast<const DependentCarrier*>(this),
                                              "_generate_operation_capabilities");
    if (!generator) return DependentCarrier::_generate_operation_capabilities();  // NotImplementedError
    struct Guard {
      std::atomic<std::thread::id>& slot;
      ~Guard() { slot.store(std::thread::id()); }
    } guard{generating_thread_};
    generating_thread_.store(std::this_thread::get_id());
    py::object entries = generator();
    const std::string what = class_name() + "._generate_operation_capabilities()";
    if (PyUnicode_Check(entries.ptr()) || !py::isinstance<py::iterable>(entries))
      throw TypeError(fmt::format("{} returned {}, not an iterable of OperationCapability", what,
                                  py::repr(entries).cast<std::string>()));
    std::vector<OperationCapability> out;
    std::size_t i = 0;
    for (py::handle e : entries) {
      if (!py::isinstance<OperationCapability>(e))
        throw TypeError(fmt::format("{}: entry {} is not an OperationCapability ({})", what, i,
                                    py::repr(e).cast<std::string>()));
      out.push_back(bound_value<OperationCapability>(e, what.c_str()));
      ++i;
    }
    return out;
  }

 private:
  mutable std::atomic<std::thread::id> generating_thread_{};
};


// ---- the C++ hosts of definition-backed Python classes (storage = the
// class's StorageProvider, whose Python callbacks see the Python instance)

template <class Base, class Bound>
class PyDefinedHost : public Base, public PythonCarrierObject {
 public:
  PyDefinedHost(extension::Construction key, PyObject* self) : Base(std::move(key)), constructing_(self) {}
  // The instance's Python object: the one being initialised until
  // construction completes, then the registered one.
  py::handle python_object() const override {
    if (constructing_) return constructing_;
    return py::detail::get_object_handle(static_cast<const Bound*>(this), py::detail::get_type_info(typeid(Bound)));
  }
  void constructed() { constructing_ = nullptr; }

 private:
  PyObject* constructing_;  // borrowed: the object owns this host
};

class PyDefinedCarrier final : public PyDefinedHost<extension::DefinedCarrier, Carrier> {
 public:
  using PyDefinedHost::PyDefinedHost;
};

class PyDefinedDependentCarrier final : public PyDefinedHost<extension::DefinedDependentCarrier, DependentCarrier> {
 public:
  using PyDefinedHost::PyDefinedHost;
  using DependentCarrier::claim;
  using DependentCarrier::owner_access;
  using DependentCarrier::relinquish;
};

// ---- composite ownership (dependent_carrier.h) for Python subclasses

// Calls f(host) with the Python-defined host of a DependentCarrier instance
// (definition-free or definition-backed); TypeError for a carrier that is
// not a Python subclass's instance.
template <class F>
decltype(auto) with_dependent_host(DependentCarrier& self, const char* what, F&& f) {
  if (auto* h = dynamic_cast<PyDependentCarrier*>(&self)) return f(*h);
  if (auto* h = dynamic_cast<PyDefinedDependentCarrier*>(&self)) return f(*h);
  throw TypeError(fmt::format("{}: {} is not a Python DependentCarrier subclass's instance", what, self.class_name()));
}

// The object _owner_access() returns: a context manager whose __enter__
// opens the owner's access scope on the calling thread and whose __exit__
// closes it (scopes end in reverse order, on the thread that opened them).
struct PyOwnerAccess {
  explicit PyOwnerAccess(std::shared_ptr<DependentCarrier> owner_) : owner(std::move(owner_)) {}
  PyOwnerAccess(PyOwnerAccess&&) = default;
  PyOwnerAccess& operator=(PyOwnerAccess&&) = delete;
  std::shared_ptr<DependentCarrier> owner;
  std::unique_ptr<DependentCarrier::OwnerAccess> scope;
  std::thread::id opened_on{};
  // A scope left open (never exited, then collected) is closed only on the
  // thread that opened it, and only if it is still that thread's innermost:
  // closing it elsewhere would change another thread's owner access. A
  // scope that cannot be closed correctly is abandoned (its few bytes leak)
  // rather than closed wrongly.
  ~PyOwnerAccess() {
    if (scope && !(std::this_thread::get_id() == opened_on && scope_is_innermost())) (void)scope.release();
  }
  bool scope_is_innermost() const { return owner->is_acting_owner_on_this_thread(); }
};

// ---- identities of Python classes

py::object& carrier_type() {
  static py::object* t = new py::object();
  return *t;
}
py::object& dependent_carrier_type() {
  static py::object* t = new py::object();
  return *t;
}

bool is_subclass(py::handle cls, py::handle base) {
  const int r = PyObject_IsSubclass(cls.ptr(), base.ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

// The identity stored in `cls`'s own __dict__ (never an inherited one).
std::optional<CarrierClass> stored_identity(py::handle cls) {
  PyObject* dict = reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_dict;
  PyObject* capsule = PyDict_GetItemString(dict, kIdentityKey);
  if (!capsule) return std::nullopt;
  return *static_cast<CarrierClass*>(PyCapsule_GetPointer(capsule, kIdentityKey));
}

// The hooks of a definition-free Python carrier (docs/python.md). The five
// storage hooks are required; _make_like and _generate_operation_capabilities
// are optional.
const char* const kRequiredHooks[] = {"supports_storage_dtype", "_storage_size", "_read_slot", "_write_slot",
                                      "_release_storage"};
const char* const kRequiredHookList =
    "supports_storage_dtype, _storage_size, _read_slot, _write_slot, _release_storage";

// Whether `cls` defines (or inherits from a Python base) a storage hook of
// a definition-free carrier, rather than the bound base's attribute.
bool defines_free_hooks(py::handle cls, py::handle base) {
  for (const char* name : {"supports_storage_dtype", "_storage_size", "_read_slot", "_write_slot", "_release_storage",
                           "_make_like", "_generate_operation_capabilities"}) {
    py::object attr = py::getattr(cls, name, py::none());
    if (attr.is_none()) continue;
    if (!py::hasattr(base, name) || attr.ptr() != py::getattr(base, name).ptr()) return true;
  }
  return false;
}

// Python classes by identity (weak references: an identity outlives its
// class, a registry never keeps a class alive).
std::unordered_map<CarrierClass, py::object>& python_classes() {
  static auto* map = new std::unordered_map<CarrierClass, py::object>();  // guarded by the GIL
  return *map;
}

// The run-time identity of a Python subclass of Carrier/DependentCarrier:
// the definition-free host when the class defines a storage hook, the
// definition-backed host otherwise.
CarrierClass python_class_identity(py::handle cls) {
  if (std::optional<CarrierClass> known = stored_identity(cls)) return *known;
  const bool dependent = is_subclass(cls, dependent_carrier_type());
  const bool free = defines_free_hooks(cls, dependent ? dependent_carrier_type() : carrier_type());
  const CarrierClass host = dependent ? (free ? carrier_class<PyDependentCarrier>() : carrier_class<PyDefinedDependentCarrier>())
                                      : (free ? carrier_class<PyCarrier>() : carrier_class<PyDefinedCarrier>());
  // Identities live for the process (CarrierClass records are never freed).
  auto* identity = new CarrierClass(CarrierClass::define_runtime_class(class_name_of(cls), host));
  py::capsule capsule(identity, kIdentityKey);
  if (PyObject_SetAttrString(cls.ptr(), kIdentityKey, capsule.ptr()) != 0) throw py::error_already_set();
  python_classes()[*identity] = py::weakref(cls);
  return *identity;
}

// The bound C++ class `cls` is exactly (nullptr for a Python subclass or an
// unrelated class).
const py::detail::type_info* exact_bound_class(py::handle cls) {
  const py::detail::type_info* info = py::detail::get_type_info(reinterpret_cast<PyTypeObject*>(cls.ptr()));
  return info && info->type == reinterpret_cast<PyTypeObject*>(cls.ptr()) ? info : nullptr;
}

// ---- construction of Python-defined carriers

void require_hooks(py::handle type, bool dependent) {
  py::handle base = dependent ? dependent_carrier_type() : carrier_type();
  std::string missing;
  for (const char* name : kRequiredHooks) {
    py::object attr = py::getattr(type, name, py::none());
    const bool inherited_from_base =
        py::hasattr(base, name) && attr.ptr() == py::getattr(base, name).ptr();
    if (attr.is_none() || inherited_from_base) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (!missing.empty())
    throw TypeError(fmt::format("cannot instantiate {}: it does not define the storage hook(s) {} "
                                "(docs/python.md, \"Carriers defined in Python\")",
                                class_name_of(type), missing));
}

const SimpleDType& storage_dtype_arg(py::handle self, py::handle dtype, const std::string& cls) {
  const DType& d = dtype_arg(dtype, (cls + ": dtype").c_str());
  if (!d.is_simple() || !stored_element_kind(d))
    throw ValueError(fmt::format("{}: dtype '{}' is not a storage dtype (Float32, Int32 or Bool)", cls, d.name()));
  py::object answer = self.attr("supports_storage_dtype")(dtype);
  if (!PyBool_Check(answer.ptr()))
    throw TypeError(fmt::format("{}.supports_storage_dtype returned {}, not a bool", cls,
                                py::repr(answer).cast<std::string>()));
  if (answer.ptr() != Py_True)
    throw ValueError(fmt::format("{}: dtype '{}' is not a supported storage dtype", cls, d.name()));
  return static_cast<const SimpleDType&>(d);
}

// new_like / allocate_like of a definition-backed Python class (R3.7): a new
// instance of exactly the prototype's class, configured like the prototype,
// through the carrier's own allocation path -- the Python counterpart of the
// C++ T(key, prototype) construction (extension::create). The subclass's
// __init__ is not called (its signature is the class's own: a dependent
// class typically takes its dependencies, Cls(primary, slots, *, dtype));
// instead the new instance starts with a shallow copy of the prototype's
// attributes (its configuration and dependencies) and the framework's
// construction then runs the StorageProvider (supports_dtype, allocate,
// physical_size) and, for a dependent class, CompositeProvider.capabilities,
// exactly as Carrier.__init__(self, slots, dtype=..., mutable=...) does.
std::shared_ptr<Carrier> make_like_python(const Carrier& prototype, std::int64_t slots, bool mutable_,
                                          const SimpleDType& dtype) {
  py::gil_scoped_acquire gil;
  py::object self = carrier_object(prototype);
  py::handle type = py::type::handle_of(self);
  py::object made = type.attr("__new__")(type);
  if (py::type::handle_of(made).ptr() != type.ptr())
    throw TypeError(fmt::format("{}.__new__ returned {}, not an instance of exactly that class", class_name_of(type),
                                py::repr(made).cast<std::string>()));
  if (py::object attributes = py::getattr(self, "__dict__", py::none()); !attributes.is_none())
    made.attr("__dict__").attr("update")(attributes);
  const bool dependent = prototype.exact_class().traits().is_dependent;
  py::handle base = dependent ? dependent_carrier_type() : carrier_type();
  base.attr("__init__")(made, slots, py::arg("dtype") = dtype_object(dtype), py::arg("mutable") = mutable_);
  return carrier_arg(made, "new_like");
}

// Cls(slots, *, dtype, mutable=True) of a definition-backed Python class:
// the framework's construction (extension::Construction), then the
// provider's supports_dtype / allocate / physical_size (and a dependent
// class's CompositeProvider.capabilities) before the instance is exposed.
// A failure leaves the Python object without a C++ instance.
template <class Bound, class Host>
void init_defined_carrier(py::detail::value_and_holder& v_h, const CarrierClass& identity, py::handle slots,
                          py::handle dtype, py::handle mutable_) {
  py::handle self(reinterpret_cast<PyObject*>(v_h.inst));
  const std::string name = class_name_of(py::type::handle_of(self));
  if (!extension::carrier_definition(identity))
    throw TypeError(fmt::format("cannot instantiate {}: it has no carrier definition "
                                "(strideweave.register_carrier_definition; a subclass of a definition-backed class "
                                "inherits none) and does not define the storage hooks of a definition-free carrier "
                                "({}; docs/python.md)",
                                name, kRequiredHookList));
  if (!PyLong_CheckExact(slots.ptr()))
    throw TypeError(fmt::format("{}: slots must be an int, got {}", name, py::repr(slots).cast<std::string>()));
  const std::int64_t n = integer_arg(slots, (name + ": slots").c_str());
  const DType& d = dtype_arg(dtype, (name + ": dtype").c_str());
  const bool m = bool_arg(mutable_, (name + ": mutable").c_str());
  extension::Construction key = [&] {
    py::gil_scoped_release nogil;  // observing the class seals it under the registries' locks
    return extension::detail::ConstructionAccess::begin(carrier_class<Host>(), n, d, m, &make_like_python, identity);
  }();
  auto* host = new Host(std::move(key), self.ptr());
  // The Python instance points at its host before the provider's callbacks
  // run, so supports_dtype / allocate / physical_size may call the carrier's
  // own methods (carrier.dtype(), carrier.is_mutable(), ...) on the instance
  // they receive; a failed establishment detaches it again, leaving an
  // uninitialised instance as any failed __init__ does.
  v_h.value_ptr() = static_cast<Bound*>(host);
  try {
    extension::establish(*host);
  } catch (...) {
    v_h.value_ptr() = nullptr;
    delete host;
    throw;
  }
  host->constructed();
}

template <class ClassT, class Host, class DefinedHost>
void init_python_carrier(py::detail::value_and_holder& v_h, py::handle slots, py::handle dtype, py::handle mutable_,
                         bool dependent) {
  py::handle self(reinterpret_cast<PyObject*>(v_h.inst));
  py::handle type = py::type::handle_of(self);
  py::handle root = dependent ? dependent_carrier_type() : carrier_type();
  if (type.ptr() == root.ptr())
    throw TypeError(fmt::format("{} is abstract: define a subclass with the storage hooks, or register a carrier "
                                "definition for a subclass (docs/python.md)",
                                class_name_of(root)));
  const CarrierClass identity = python_class_identity(type);
  if (identity.traits().storage_provider) {
    init_defined_carrier<typename ClassT::type, DefinedHost>(v_h, identity, slots, dtype, mutable_);
    return;
  }
  require_hooks(type, dependent);
  const std::string name = class_name_of(type);
  if (!slots.is_none())
    throw TypeError(fmt::format("{}: a definition-free carrier's __init__ takes no slot count (its storage hooks "
                                "define the size); only a definition-backed class is built as Cls(slots, *, dtype)",
                                name));
  const SimpleDType& d = storage_dtype_arg(self, dtype, name);
  const bool m = bool_arg(mutable_, (name + ": mutable").c_str());
  py::detail::initimpl::construct<ClassT>(v_h, static_cast<Host*>(new Host(d, m, identity)), true);
}

// ---- Carrier methods

void require_index_in_range(const Carrier& c, std::int64_t index, const char* what) {
  const std::int64_t n = c.size();
  if (index < 0 || index >= n)
    throw IndexError(fmt::format("{}: index {} is outside [0, {}) of the {} carrier", what, index, n, c.class_name()));
}

void set_value(Carrier& c, py::handle index, py::handle value) {
  const std::int64_t i = integer_arg(index, "Carrier.set_value: index");
  c.require_writable("Carrier.set_value");
  require_index_in_range(c, i, "Carrier.set_value");
  c.set_value(i, value_arg(value, c.dtype(), "Carrier.set_value"));
}

py::object get_value(const Carrier& c, py::handle index) {
  return value_object(c.get_value(integer_arg(index, "Carrier.get_value: index")));
}

std::vector<Value> values_arg(py::handle values, const SimpleDType& dtype, const char* what) {
  if (PyUnicode_Check(values.ptr()) || !py::isinstance<py::iterable>(values))
    throw TypeError(fmt::format("{}: values must be an iterable, got {}", what, py::repr(values).cast<std::string>()));
  std::vector<Value> out;
  for (py::handle v : values) out.push_back(value_arg(v, dtype, what));
  return out;
}

// Range operations (carrier.h): the run's checks in the C++ order
// (RuntimeError, ValueError, IndexError) come before any value converts.
void require_run(const Carrier& c, std::int64_t first, std::int64_t count, const char* what) {
  if (count < 0) throw ValueError(fmt::format("{}: count must be >= 0, got {}", what, count));
  const std::int64_t n = c.size();
  if (first < 0 || first > n || count > n - first)
    throw IndexError(fmt::format("{}: the run [{}, {} + {}) is outside [0, {}) of the {} carrier", what, first, first,
                                 count, n, c.class_name()));
}

py::list read_values(const Carrier& c, py::handle first, py::handle count) {
  const std::int64_t f = integer_arg(first, "Carrier.read_values: first");
  const std::int64_t n = integer_arg(count, "Carrier.read_values: count");
  py::list out;
  for (const Value& v : c.read_values(f, n)) out.append(value_object(v));
  return out;
}

void write_values(Carrier& c, py::handle first, py::handle values) {
  constexpr const char* what = "Carrier.write_values";
  const std::int64_t f = integer_arg(first, "Carrier.write_values: first");
  c.require_writable(what);
  if (PyUnicode_Check(values.ptr()) || !py::isinstance<py::iterable>(values))
    throw TypeError(fmt::format("{}: values must be an iterable, got {}", what, py::repr(values).cast<std::string>()));
  const py::list items(py::reinterpret_borrow<py::object>(values));
  require_run(c, f, static_cast<std::int64_t>(items.size()), what);
  std::vector<Value> vs;
  vs.reserve(items.size());
  for (py::handle v : items) vs.push_back(value_arg(v, c.dtype(), what));
  c.write_values(f, vs);
}

void copy_range(Carrier& c, py::handle source, py::handle source_first, py::handle first, py::handle count) {
  if (!py::isinstance<Carrier>(source))
    throw TypeError(fmt::format("Carrier.copy_range: source must be a Carrier, got {}",
                                py::repr(source).cast<std::string>()));
  c.copy_range(source.cast<const Carrier&>(), integer_arg(source_first, "Carrier.copy_range: source_first"),
               integer_arg(first, "Carrier.copy_range: first"), integer_arg(count, "Carrier.copy_range: count"));
}

py::bytes read_bytes(const Carrier& c, py::handle first, py::handle count) {
  constexpr const char* what = "Carrier.read_bytes";
  const std::int64_t f = integer_arg(first, "Carrier.read_bytes: first");
  const std::int64_t n = integer_arg(count, "Carrier.read_bytes: count");
  c.require_live(what);
  require_run(c, f, n, what);  // before the bytes object is sized
  const std::size_t size = static_cast<std::size_t>(n) * c.element_bytes();
  PyObject* raw = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
  if (!raw) throw py::error_already_set();
  py::bytes out = py::reinterpret_steal<py::bytes>(raw);
  auto* data = reinterpret_cast<std::byte*>(PyBytes_AS_STRING(raw));
  {
    const py::gil_scoped_release unlocked;  // the object is not shared yet
    c.read_bytes(f, std::span<std::byte>(data, size));
  }
  return out;
}

void write_bytes(Carrier& c, py::handle first, py::handle data) {
  constexpr const char* what = "Carrier.write_bytes";
  const std::int64_t f = integer_arg(first, "Carrier.write_bytes: first");
  if (!PyObject_CheckBuffer(data.ptr()))
    throw TypeError(fmt::format("{}: data must be a bytes-like object, got {}", what,
                                py::repr(data).cast<std::string>()));
  Py_buffer view;
  if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    throw TypeError(fmt::format("{}: data must be a C-contiguous bytes-like object", what));
  }
  const std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> held(&view, PyBuffer_Release);
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(view.buf), static_cast<std::size_t>(view.len));
  const py::gil_scoped_release unlocked;  // the buffer is held (exported) meanwhile
  c.write_bytes(f, bytes);
}

py::tuple capabilities_object(const std::vector<OperationCapability>& caps) {
  py::list out;
  for (const OperationCapability& c : caps) out.append(py::cast(c));
  return py::tuple(out);
}

// The stored dtype `dtype` (or the carrier's own) for new_like/allocate_like,
// checked before values are converted to it.
const SimpleDType& like_dtype(const Carrier& c, py::handle dtype, const char* what) {
  if (dtype.is_none()) return c.dtype();
  const DType& d = dtype_arg(dtype, what);
  if (!d.is_simple() || !stored_element_kind(d) || !c.supports_storage_dtype(d))
    throw ValueError(fmt::format("{}: dtype '{}' is not a supported storage dtype of {}", what, d.name(),
                                 c.class_name()));
  return static_cast<const SimpleDType&>(d);
}

}  // namespace

bool bool_arg(py::handle value, const char* what) {
  if (!PyBool_Check(value.ptr()))
    throw TypeError(fmt::format("{}: expected a bool, got {}", what, py::repr(value).cast<std::string>()));
  return value.ptr() == Py_True;
}

std::shared_ptr<Carrier> carrier_arg(py::handle value, const char* what) {
  if (!py::isinstance<Carrier>(value))
    throw TypeError(fmt::format("{}: expected a Carrier, got {}", what, py::repr(value).cast<std::string>()));
  if (is_uninitialised(value)) throw_uninitialised(value, what);
  auto held = value.cast<std::shared_ptr<Carrier>>();
  if (exact_bound_class(py::type::handle_of(value))) return held;
  // A Python subclass: the handle C++ keeps also keeps the Python object
  // (whose holder owns the C++ host) alive.
  std::shared_ptr<SharedPyObject> keep = share(value);
  return std::shared_ptr<Carrier>(std::move(keep), held.get());
}

CarrierClass carrier_class_arg(py::handle cls, const char* what) {
  if (!PyType_Check(cls.ptr()))
    throw TypeError(fmt::format("{}: expected a carrier class, got {}", what, py::repr(cls).cast<std::string>()));
  if (const py::detail::type_info* bound = exact_bound_class(cls)) {
    const std::type_index t(*bound->cpptype);
    if (t == typeid(Carrier)) return carrier_class<Carrier>();
    if (t == typeid(DependentCarrier)) return carrier_class<DependentCarrier>();
    if (t == typeid(Generic)) return carrier_class<Generic>();
    if (t == typeid(CPU)) return carrier_class<CPU>();
    if (t == typeid(FileBacked)) return carrier_class<FileBacked>();
    if (t == typeid(BlockDeviceCarrier)) return carrier_class<BlockDeviceCarrier>();
    if (t == typeid(Evictable)) return carrier_class<Evictable>();
    if (t == typeid(TiledEvictable)) return carrier_class<TiledEvictable>();
    if (t == typeid(CUDA)) return carrier_class<CUDA>();
  } else if (is_subclass(cls, carrier_type())) {
    return python_class_identity(cls);
  }
  throw TypeError(fmt::format("{}: {} is not a Carrier class", what, py::repr(cls).cast<std::string>()));
}

bool is_python_carrier_class(py::handle cls) {
  return PyType_Check(cls.ptr()) && !exact_bound_class(cls) && is_subclass(cls, carrier_type());
}

}  // namespace strideweave::python

const void* pybind11::polymorphic_type_hook<strideweave::Carrier>::get(const strideweave::Carrier* src,
                                                                        const std::type_info*& type) {
  using strideweave::DependentCarrier;
  if (!src) {
    type = nullptr;
    return src;
  }
  // A dependent class the package binds (Evictable, TiledEvictable) is its own Python
  // class; any other dependent C++ class is shown as DependentCarrier.
  if (src->exact_class().traits().is_dependent && !pybind11::detail::get_type_info(typeid(*src))) {
    type = &typeid(DependentCarrier);
    return static_cast<const DependentCarrier*>(src);
  }
  type = &typeid(*src);
  return dynamic_cast<const void*>(src);
}

namespace strideweave::python {

py::object carrier_object(const Carrier& carrier) {
  if (auto* host = dynamic_cast<const PythonCarrierObject*>(&carrier)) {
    py::handle self = host->python_object();
    if (!self) throw RuntimeError(fmt::format("{}: the instance's Python object is gone", carrier.class_name()));
    return py::reinterpret_borrow<py::object>(self);
  }
  return py::cast(std::const_pointer_cast<Carrier>(carrier.shared_from_this()));
}

py::object carrier_class_object(const CarrierClass& cls) {
  if (cls == carrier_class<Carrier>()) return carrier_type();
  if (cls == carrier_class<DependentCarrier>()) return dependent_carrier_type();
  if (cls == carrier_class<Generic>()) return py::type::of<Generic>();
  if (cls == carrier_class<CPU>()) return py::type::of<CPU>();
  if (cls == carrier_class<FileBacked>()) return py::type::of<FileBacked>();
  if (cls == carrier_class<Evictable>()) return py::type::of<Evictable>();
  if (cls == carrier_class<TiledEvictable>()) return py::type::of<TiledEvictable>();
  if (cls == carrier_class<CUDA>()) return py::type::of<CUDA>();
  auto it = python_classes().find(cls);
  if (it != python_classes().end()) {
    py::object type = it->second();  // the weak reference's target
    if (!type.is_none()) return type;
  }
  throw NotImplementedError(fmt::format("the carrier class {} has no Python class in this package", cls.name()));
}

void bind_carriers(py::module_& m) {
  py::class_<Placement>(m, "Placement", R"doc(Where a carrier instance's storage lives: this process (or an MPI
rank) and, within it, host memory or one device by index. An immutable value:
compared and hashed by (rank, memory, device). Placement.host() is every shipped
carrier's; Placement.device(n) a device carrier's; p.on_rank(r) the same memory
on MPI rank r. The operands of one call share exact carrier class and placement
(TypeError naming both otherwise, before any work).)doc")
      .def_static("host", &Placement::host, "This process's host memory.")
      .def_static("device", &Placement::device, py::arg("index"),
                  "This process's device `index` (ValueError for index < 0).")
      .def("on_rank", &Placement::on_rank, py::arg("rank"),
           "The same memory on MPI rank `rank` (ValueError for rank < 0).")
      .def_property_readonly("is_host", &Placement::is_host)
      .def_property_readonly("device_index", &Placement::device_index, "The device index (0 for host memory).")
      .def_property_readonly("rank", [](const Placement& p) -> py::object {
             return p.rank() < 0 ? py::none() : py::object(py::int_(p.rank()));
           }, "The MPI rank, or None for this process.")
      .def("__eq__", [](const Placement& a, py::handle b) -> py::object {
             if (!py::isinstance<Placement>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(a == b.cast<const Placement&>());
           })
      .def("__hash__", &Placement::hash)
      .def("__str__", &Placement::to_string)
      .def("__repr__", [](const Placement& p) {
             std::string r = p.is_host() ? "Placement.host()" : fmt::format("Placement.device({})", p.device_index());
             return p.rank() < 0 ? r : fmt::format("{}.on_rank({})", r, p.rank());
           })
      .def(py::pickle([](const Placement& p) { return py::make_tuple(p.rank(), p.is_host(), p.device_index()); },
                      [](const py::tuple& t) {
                        if (t.size() != 3) throw ValueError("Placement: a pickled placement has three fields");
                        Placement p = t[1].cast<bool>() ? Placement::host() : Placement::device(t[2].cast<std::int64_t>());
                        const auto rank = t[0].cast<std::int64_t>();
                        return rank < 0 ? p : p.on_rank(rank);
                      }));
  using CarrierClassT = py::class_<Carrier, PyCarrier, std::shared_ptr<Carrier>>;
  CarrierClassT carrier(m, "Carrier", R"doc(
The storage base (core-concepts.md 1): one flat, homogeneous slot sequence of
one stored dtype (Float32, Int32 or Bool). Open for subclassing in Python: a
subclass is its own exact class and implements the storage hooks
supports_storage_dtype, _storage_size, _read_slot, _write_slot and
_release_storage (and optionally _make_like); its __init__ calls
super().__init__(dtype=..., mutable=True). See docs/python.md.)doc");
  carrier_type() = carrier;
  carrier
      .def("__init__",
           [](py::detail::value_and_holder& v_h, py::handle slots, py::handle dtype, py::handle mutable_) {
             init_python_carrier<CarrierClassT, PyCarrier, PyDefinedCarrier>(v_h, slots, dtype, mutable_, false);
           },
           py::detail::is_new_style_constructor(), py::arg("slots") = py::none(), py::kw_only(), py::arg("dtype"),
           py::arg("mutable") = true)
      .def("dispatch_op", [](const Carrier& c, py::handle name) {
             if (!PyUnicode_Check(name.ptr()))
               throw TypeError(fmt::format("dispatch_op: operation_name must be a str, got {}",
                                           py::repr(name).cast<std::string>()));
             const std::string n = name.cast<std::string>();
             return c.dispatch_op(n);
           }, py::arg("operation_name"),
           "A fresh single-use Operation for `operation_name` bound to this instance's exact class "
           "(core-concepts 1.8). Unknown name or a storage-only class -> NotImplementedError.")
      .def("_dispatch_op", [](const Carrier& c, py::handle name) -> py::object {
             throw NotImplementedError(fmt::format("{} does not dispatch operation '{}' (its dispatch hook "
                                                   "_dispatch_op supplies no implementation)",
                                                   c.class_name(), py::str(name).cast<std::string>()));
           }, py::arg("operation_name"),
           "The dispatch hook of a custom definition-free class: return a fresh Operation subclass whose "
           "_forward(call) computes the call. The default raises NotImplementedError.")
      .def("size", &Carrier::size, "The number of slots (RuntimeError after release).")
      .def("dtype", [](const Carrier& c) { return dtype_object(c.dtype()); }, "The stored dtype (also after release).")
      .def("get_value", &get_value, py::arg("index"),
           "Slot `index`: TypeError for a non-integer index, IndexError outside [0, size()), RuntimeError after "
           "release.")
      .def("set_value", &set_value, py::arg("index"), py::arg("value"),
           "Writes slot `index` (+1 version): RuntimeError unless publicly mutable and live, IndexError outside "
           "[0, size()), TypeError for a value of another kind, OverflowError outside Int32.")
      .def("read_values", &read_values, py::arg("first"), py::arg("count"),
           "The values of slots [first, first + count) as a list (no version step): RuntimeError after release, "
           "ValueError for count < 0, IndexError when the run leaves [0, size()).")
      .def("write_values", &write_values, py::arg("first"), py::arg("values"),
           "Writes values[k] to slot first + k as ONE versioned mutation (+1 version): RuntimeError unless "
           "publicly mutable and live, IndexError when the run leaves [0, size()), TypeError for a value of "
           "another kind. Failure-atomic: nothing changes when the write fails part way.")
      .def("copy_range", &copy_range, py::arg("source"), py::arg("source_first"), py::arg("first"),
           py::arg("count"),
           "Copies source's slots [source_first, source_first + count) onto this carrier's [first, first + "
           "count) as ONE versioned mutation of this carrier (overlap allowed): RuntimeError when either is "
           "released or this one is not publicly mutable, ValueError for count < 0, IndexError for a run "
           "outside either carrier, TypeError for a source of another dtype. Failure-atomic.")
      .def("element_bytes", &Carrier::element_bytes,
           "Bytes of one element in the dtype's host representation (4 for Float32 and Int32, 1 for Bool).")
      .def("read_bytes", &read_bytes, py::arg("first"), py::arg("count"),
           "Slots [first, first + count) as bytes in the dtype's host representation (native byte order), "
           "element_bytes() each; no version step. RuntimeError after release, ValueError for count < 0, "
           "IndexError when the run leaves [0, size()).")
      .def("write_bytes", &write_bytes, py::arg("first"), py::arg("data"),
           "Writes a bytes-like object, in the dtype's host representation, to slots [first, first + "
           "len(data) / element_bytes()) as ONE versioned mutation (+1 version). RuntimeError unless publicly "
           "mutable and live; TypeError for data that is not C-contiguous and bytes-like; ValueError when its "
           "length is not a whole number of elements, or a Bool byte is not 0 or 1; IndexError when the run "
           "leaves [0, size()). Failure-atomic.")
      .def("__getitem__", &get_value)
      .def("__setitem__", &set_value)
      .def("__len__", &Carrier::size)
      .def("supports_storage_dtype", [](const Carrier& c, py::handle dtype) {
             return c.supports_storage_dtype(dtype_arg(dtype, "Carrier.supports_storage_dtype"));
           }, py::arg("dtype"),
           "Identity-based, allocation-free and state-independent; TypeError for a non-DType.")
      .def("is_mutable", &Carrier::is_mutable, "Intrinsic mutability and not owned by a composite.")
      .def("is_owned", &Carrier::is_owned, "Owned by a composite carrier (then not publicly mutable).")
      .def("is_owned_by", [](const Carrier& c, py::handle owner) {
             if (!py::isinstance<Carrier>(owner))
               throw TypeError(fmt::format("is_owned_by: expected a Carrier, got {}", py::repr(owner).cast<std::string>()));
             return c.is_owned_by(*carrier_arg(owner, "is_owned_by: owner"));
           },
           py::arg("owner"), "Whether the composite `owner` has claimed this carrier.")
      .def("is_owner_acting_here", &Carrier::is_owner_acting_here,
           "Whether this carrier is owned by the composite whose owner access (_owner_access()) is the innermost "
           "scope open on this thread: that composite may then mutate, move and release it.")
      .def("allocates_when_empty", &Carrier::allocates_when_empty,
           "Whether this instance, while empty, can establish storage of a requested size (what move() does with an "
           "empty destination; FileBacked can, CPU cannot).")
      .def("can_be_evictable_tier", &Carrier::can_be_evictable_tier,
           "Whether this carrier may be a tier of an Evictable composite (False for BlockDeviceCarrier, "
           "core-concepts.md 8.5).")
      .def("release", [](Carrier& c) {
             require_no_exports(c, "Carrier.release");
             // Without the GIL: a composite's release waits for the accesses
             // in progress on other threads (Evictable), which may need it
             // for a Python tier's hooks (those take it back themselves).
             py::gil_scoped_release nogil;
             c.release();
           },
           "Permanent and idempotent; afterwards access, mutation and operations raise RuntimeError. BufferError "
           "while a numpy array or DLPack capsule still views the storage.")
      .def("is_released", &Carrier::is_released, "release() has run.")
      .def_property_readonly("placement", &Carrier::placement,
                             "Where the storage lives (a Placement): host memory of this process unless the "
                             "class says otherwise (_placement). The operands of one call share exact class "
                             "and placement.")
      .def("_placement", &Carrier::placement,
           "The hook a Python subclass overrides to report its placement (default: host memory); read "
           "`placement` instead.")
      .def_property_readonly("version", &Carrier::version,
                             "Non-negative and monotonic: +1 per successful indexed write or set_value.")
      .def("new_like", [](const Carrier& c, py::handle values, py::handle mutable_, py::handle dtype) {
             const SimpleDType& d = like_dtype(c, dtype, "Carrier.new_like");
             const std::vector<Value> vs = values_arg(values, d, "Carrier.new_like");
             return c.new_like(vs, bool_arg(mutable_, "Carrier.new_like: mutable"), &d);
           }, py::arg("values"), py::kw_only(), py::arg("mutable") = true, py::arg("dtype") = py::none(),
           "Fresh storage of the same exact class holding `values` (also on a released prototype).")
      .def("allocate_like", [](const Carrier& c, std::int64_t size, py::handle mutable_, py::handle dtype, py::handle empty) {
             const SimpleDType& d = like_dtype(c, dtype, "Carrier.allocate_like");
             return c.allocate_like(size, bool_arg(mutable_, "Carrier.allocate_like: mutable"), &d,
                                    bool_arg(empty, "Carrier.allocate_like: empty"));
           }, py::arg("size"), py::kw_only(), py::arg("mutable") = true, py::arg("dtype") = py::none(),
           py::arg("empty") = false,
           "Fresh storage of `size` slots of the same exact class, zeroed unless empty=True.")
      .def("scatter", [](Carrier& c, py::handle to_scatter, py::handle scatter_onto, py::handle mapping,
                         py::handle mapping_offset) {
             const Tensor& source = tensor_arg(to_scatter, "Carrier.scatter: to_scatter");
             const Tensor& onto = tensor_arg(scatter_onto, "Carrier.scatter: scatter_onto");
             if (!py::isinstance<Layout>(mapping))
               throw TypeError(fmt::format("Carrier.scatter: mapping must be a Layout, got {}",
                                           py::repr(mapping).cast<std::string>()));
             const std::int64_t offset = integer_arg(mapping_offset, "Carrier.scatter: mapping_offset");
             c.scatter(source, onto, mapping.cast<const Layout&>(), offset);
           }, py::arg("to_scatter"), py::arg("scatter_onto"), py::arg("mapping"), py::arg("mapping_offset") = 0,
           "Carrier scatter (core-concepts.md 1.7): source value i (logical order) goes to slot "
           "scatter_onto.offset + mapping_offset + mapping(i), one version step. NotImplementedError on "
           "FileBacked; ValueError when scatter_onto is another carrier's or the mapping's shape is not the "
           "source's; IndexError for a destination outside the carrier; nothing is written on failure.")
      .def("operation_capabilities", [](const Carrier& c, py::handle operation_name) {
             if (operation_name.is_none()) return capabilities_object(c.operation_capabilities());
             if (!PyUnicode_Check(operation_name.ptr()))
               throw TypeError("Carrier.operation_capabilities: operation_name must be a str or None");
             const std::string name = operation_name.cast<std::string>();
             return capabilities_object(c.operation_capabilities(name));
           }, py::arg("operation_name") = py::none(),
           "The capabilities of this carrier's implementation in deterministic order: the exact class's sealed "
           "declaration, or a dependent instance's frozen snapshot.")
      .def("supports_operation_plan", [](const Carrier& c, py::handle plan) {
             return c.supports_operation_plan(plan_arg(plan, "Carrier.supports_operation_plan"));
           }, py::arg("plan"), "Whether exactly one of this carrier's capabilities matches `plan` exactly.")
      .def("unsupported_plan_reason", [](const Carrier& c, py::handle plan) {
             return c.unsupported_plan_reason(plan_arg(plan, "Carrier.unsupported_plan_reason"));
           }, py::arg("plan"), "None when supported; otherwise the stable sentence UnsupportedOperationPlan carries.")
      .def("require_operation_plan", [](const Carrier& c, py::handle plan) {
             return c.require_operation_plan(plan_arg(plan, "Carrier.require_operation_plan"));
           }, py::arg("plan"), "The matching capability, or UnsupportedOperationPlan.")
      .def("execution_axes", [](const Carrier& c, py::handle capability) {
             if (!py::isinstance<OperationCapability>(capability))
               throw TypeError(fmt::format("Carrier.execution_axes: capability must be an OperationCapability, got {}",
                                           py::repr(capability).cast<std::string>()));
             return c.execution_axes(capability.cast<const OperationCapability&>());
           }, py::arg("capability"),
           "The ExecutionAxes kept beside one of this carrier's capabilities: its exact class's (an independent "
           "carrier), or the default ExecutionAxes for a dependent instance's snapshot entry. "
           "UnsupportedOperationPlan when the carrier does not hold the capability.")
      .def("__repr__", [](const Carrier& c) {
        if (c.is_released()) return fmt::format("<{} carrier of {}, released>", c.class_name(), c.dtype().name());
        return fmt::format("<{} carrier of {}: {} slots, version {}{}>", c.class_name(), c.dtype().name(), c.size(),
                           c.version(), c.is_mutable() ? "" : ", immutable");
      });

  using DependentClassT = py::class_<DependentCarrier, Carrier, PyDependentCarrier, std::shared_ptr<DependentCarrier>>;
  DependentClassT dependent(m, "DependentCarrier", R"doc(
A carrier whose executable plans depend on the carriers it composes
(backend-capabilities.md). Open for subclassing in Python: a subclass
implements the storage hooks and _generate_operation_capabilities(), and its
__init__ calls self.finalize_operation_capabilities() once its dependencies are
valid. Before that every capability query raises RuntimeError.)doc");
  dependent_carrier_type() = dependent;
  dependent
      .def("__init__",
           [](py::detail::value_and_holder& v_h, py::handle slots, py::handle dtype, py::handle mutable_) {
             init_python_carrier<DependentClassT, PyDependentCarrier, PyDefinedDependentCarrier>(v_h, slots, dtype,
                                                                                                  mutable_, true);
           },
           py::detail::is_new_style_constructor(), py::arg("slots") = py::none(), py::kw_only(), py::arg("dtype"),
           py::arg("mutable") = true)
      .def("finalize_operation_capabilities", [](DependentCarrier& self) {
             auto* host = dynamic_cast<PyDependentCarrier*>(&self);
             // A definition-backed instance was finalised by its construction:
             // calling again is the second finalisation (RuntimeError,
             // backend-capabilities.md), the first snapshot stays.
             if (!host && self.is_capability_finalized())
               throw RuntimeError(fmt::format("{}: operation capabilities are already finalised (a definition-backed "
                                              "instance is finalised by its construction)",
                                              self.class_name()));
             if (!host)
               throw TypeError("finalize_operation_capabilities: not a definition-free Python DependentCarrier");
             py::gil_scoped_release nogil;
             host->finalize();
           },
           "Materialises _generate_operation_capabilities() once and freezes the sorted snapshot. Invalid entries "
           "-> TypeError, duplicates -> ValueError, a failing generator publishes nothing; a second call -> "
           "RuntimeError.")
      .def("_generate_operation_capabilities", [](const DependentCarrier& self) -> py::object {
             throw NotImplementedError(fmt::format(
                 "{}: a definition-free DependentCarrier must implement _generate_operation_capabilities()",
                 self.class_name()));
           })
      .def("is_capability_finalized", &DependentCarrier::is_capability_finalized,
           "finalize_operation_capabilities() has frozen this instance's snapshot.")
      .def("owned_children", &DependentCarrier::owned_children,
           "The carriers this composite owns now, in the order they were claimed.")
      .def("is_acting_owner_on_this_thread", &DependentCarrier::is_acting_owner_on_this_thread,
           "Whether this composite's _owner_access() scope is the innermost one open on the calling thread.")
      .def("_claim", [](DependentCarrier& self, py::handle children) {
             std::vector<std::shared_ptr<Carrier>> list;
             if (py::isinstance<Carrier>(children)) {
               list.push_back(carrier_arg(children, "_claim: child"));
             } else {
               if (PyUnicode_Check(children.ptr()) || !py::isinstance<py::iterable>(children))
                 throw TypeError(fmt::format("_claim: expected a Carrier or an iterable of Carriers, got {}",
                                             py::repr(children).cast<std::string>()));
               std::size_t i = 0;
               for (py::handle c : children) {
                 if (!py::isinstance<Carrier>(c))
                   throw TypeError(fmt::format("_claim: child {} is not a Carrier ({})", i,
                                               py::repr(c).cast<std::string>()));
                 list.push_back(carrier_arg(c, "_claim: child"));
                 ++i;
               }
             }
             with_dependent_host(self, "_claim", [&](auto& host) {
               py::gil_scoped_release nogil;
               host.claim(list);
             });
           },
           py::arg("children"), R"doc(
Claims exclusive ownership of a child carrier, or of every carrier in an
iterable, all or nothing (carrier-composition A2, A4): not a Carrier ->
TypeError; this carrier itself or a child named twice -> ValueError; a
released child, one already owned, or one that owns this carrier (a cycle) ->
RuntimeError, and nothing is claimed. An owned child reports is_owned() and
refuses writes, scatter, bump_version, moves and release with RuntimeError
except inside this carrier's _owner_access() scope.)doc")
      .def("_relinquish", [](DependentCarrier& self, py::handle child) {
             if (!py::isinstance<Carrier>(child))
               throw TypeError(fmt::format("_relinquish: expected a Carrier, got {}", py::repr(child).cast<std::string>()));
             std::shared_ptr<Carrier> c = carrier_arg(child, "_relinquish: child");
             with_dependent_host(self, "_relinquish", [&](auto& host) { host.relinquish(*c); });
           },
           py::arg("child"),
           "Gives ownership of child back (RuntimeError unless this carrier owns it); it regains its own mutability.")
      .def("_owner_access", [](const std::shared_ptr<DependentCarrier>& self) {
             with_dependent_host(*self, "_owner_access", [](auto&) { return 0; });
             return PyOwnerAccess(self);
           },
           R"doc(
A context manager: inside `with self._owner_access():` the calling thread may
write, scatter, bump the version of, move and release the children this
carrier owns (never making them publicly mutable). Scopes nest.)doc");
  py::class_<PyOwnerAccess>(m, "OwnerAccess", "The scope DependentCarrier._owner_access() opens (a context manager).")
      .def("__enter__", [](PyOwnerAccess& a) -> PyOwnerAccess& {
             if (a.scope) throw RuntimeError("OwnerAccess: this scope is already open");
             with_dependent_host(*a.owner, "_owner_access", [&](auto& host) {
               a.scope.reset(new DependentCarrier::OwnerAccess(host.owner_access()));
               return 0;
             });
             a.opened_on = std::this_thread::get_id();
             return a;
           }, py::return_value_policy::reference)
      .def("__exit__", [](PyOwnerAccess& a, py::handle, py::handle, py::handle) {
        if (!a.scope) throw RuntimeError("OwnerAccess: this scope is not open");
        // Scopes end in reverse order on the thread that opened them (an
        // asyncio task holding a scope across an await breaks that).
        if (std::this_thread::get_id() != a.opened_on)
          throw RuntimeError("OwnerAccess: a scope must be closed on the thread that opened it");
        if (!a.scope_is_innermost())
          throw RuntimeError("OwnerAccess: scopes must be closed in reverse order (an inner scope is still open)");
        a.scope.reset();
        return false;
      });

  py::class_<Generic, Carrier, std::shared_ptr<Generic>>(m, "Generic", py::is_final(), R"doc(
Generic(values, *, mutable=True, dtype): the executable semantic reference
(core-concepts.md 8.1): one value per slot, one obvious kernel per plan.
dtype is required (Float32, Int32 or Bool; another -> ValueError, a
non-DType -> TypeError); every value must be of that dtype (TypeError).
Closed to subclassing.)doc")
      .def(py::init([](py::handle values, py::handle mutable_, py::handle dtype) {
             const DType& d = dtype_arg(dtype, "Generic: dtype");
             if (!Generic::supports(d))
               throw ValueError(fmt::format("Generic: dtype '{}' is not a supported storage dtype", d.name()));
             const std::vector<Value> vs = values_arg(values, static_cast<const SimpleDType&>(d), "Generic");
             return Generic::create(vs, d, bool_arg(mutable_, "Generic: mutable"));
           }),
           py::arg("values"), py::kw_only(), py::arg("mutable") = true, py::arg("dtype"));

  py::class_<CPU, Carrier, std::shared_ptr<CPU>>(m, "CPU", py::is_final(), R"doc(
CPU(size, pointer=None, *, mutable=True, dtype=DType.Float32, empty=False):
native host storage with typed kernels (core-concepts.md 8.2). With a
pointer (an integer address) it wraps that memory without copying; the
caller keeps it alive (strideweave.asarray does this for numpy arrays).
empty=True skips zeroing (it means nothing for wrapped memory). Closed to
subclassing.)doc")
      .def(py::init([](std::int64_t size, py::handle pointer, py::handle mutable_, py::handle dtype, py::handle empty) {
             const DType& d = dtype_arg(dtype, "CPU: dtype");
             const bool m_ = bool_arg(mutable_, "CPU: mutable");
             const bool e = bool_arg(empty, "CPU: empty");
             if (pointer.is_none()) return CPU::create(size, d, m_, e);
             const std::int64_t address = integer_arg(pointer, "CPU: pointer");
             return CPU::wrap(reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), size, d, m_);
           }),
           py::arg("size"), py::arg("pointer") = py::none(), py::kw_only(), py::arg("mutable") = true,
           py::arg("dtype") = dtype_object(DType::Float32()), py::arg("empty") = false);
}

}  // namespace strideweave::python
