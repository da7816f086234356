// Objects whose __init__ never ran or failed (docs/python.md,
// "Uninitialised objects").
//
// Python can always make an instance of a bound class without running its
// __init__ (Cls.__new__(Cls), a subclass whose __init__ raises before or
// instead of calling super().__init__(), a definition-backed carrier whose
// construction failed). pybind11 gives such an instance a null C++ value,
// and a method bound from a member function (or one taking `self` by
// pointer) would run on it: a segmentation fault. So once every part of the
// module is bound, guard_uninitialised() wraps the implementation of every
// function of the package's classes and modules (methods, properties,
// operators, static methods and module functions, each overload) with a
// check that no argument is such an instance: `self` and every positional,
// keyword, *args and **kwargs argument. One is a TypeError naming the
// function and the class; repr() and str() of one say what it is instead.
// Constructors are checked too, except the instance they initialise.
//
// The wrapping happens here, once, for every bound class the registry of
// pybind11 types knows whose module is in this package, so a class or
// method added later is covered without being listed anywhere
// (python/tests/test_uninitialised_objects.py walks them all).
#include "bindings.h"

#include <fmt/format.h>

#include <unordered_map>

namespace strideweave::python {
namespace {

namespace pyd = py::detail;
using Impl = py::handle (*)(pyd::function_call&);

// The original implementation of each guarded record, and the name it is
// reached by (a property's getter has none of its own). Written only while
// the module initialises (GIL held), read-only afterwards.
struct Guarded {
  Impl impl;
  std::string name;
};
std::unordered_map<const pyd::function_record*, Guarded>& originals() {
  static auto* map = new std::unordered_map<const pyd::function_record*, Guarded>();
  return *map;
}

std::string type_name(py::handle h) {
  return reinterpret_cast<PyTypeObject*>(py::type::handle_of(h).ptr())->tp_name;
}

// The index of the first uninitialised argument (in *args and **kwargs
// too), or -1.
std::ptrdiff_t first_uninitialised(const pyd::function_call& call, py::handle& found) {
  const pyd::function_record& rec = call.func;
  const std::size_t n = call.args.size();
  for (std::size_t i = rec.is_constructor ? 1 : 0; i < n; ++i) {
    py::handle a = call.args[i];
    if (is_uninitialised(a)) {
      found = a;
      return static_cast<std::ptrdiff_t>(i);
    }
    if (rec.has_args && i == rec.nargs_pos && PyTuple_Check(a.ptr())) {
      for (py::handle item : py::reinterpret_borrow<py::tuple>(a))
        if (is_uninitialised(item)) {
          found = item;
          return static_cast<std::ptrdiff_t>(i);
        }
    } else if (rec.has_kwargs && i + 1 == n && PyDict_Check(a.ptr())) {
      for (auto item : py::reinterpret_borrow<py::dict>(a))
        if (is_uninitialised(item.second)) {
          found = item.second;
          return static_cast<std::ptrdiff_t>(i);
        }
    }
  }
  return -1;
}

py::handle guarded(pyd::function_call& call) {
  const pyd::function_record& rec = call.func;
  const Guarded& original = originals().at(&rec);
  py::handle found;
  const std::ptrdiff_t i = first_uninitialised(call, found);
  if (i >= 0) {
    const std::string& name = original.name;
    const std::string cls = type_name(found);
    if (i == 0 && rec.is_method && (name == "__repr__" || name == "__str__"))
      return py::str(fmt::format("<{} object at {}, not initialised>", cls, static_cast<const void*>(found.ptr())))
          .release();
    const std::string where = rec.is_method && !rec.scope.is_none()
                                  ? fmt::format("{}.{}", py::str(rec.scope.attr("__name__")).cast<std::string>(), name)
                                  : name;
    const char* which = rec.is_method && i == 0 ? "self" : "an argument";
    throw TypeError(fmt::format("{}: {} is a {} object that is not initialised (its __init__ did not run or raised "
                                "before completing), so it has no value to work on",
                                where, which, cls));
  }
  return original.impl(call);
}

pyd::function_record* record_of(py::handle f) {
  f = pyd::get_function(f);  // an instancemethod's or a bound method's function (a def_readonly getter is one)
  if (!f || !PyCFunction_Check(f.ptr())) return nullptr;
  PyObject* self = PyCFunction_GET_SELF(f.ptr());
  if (!self || !PyCapsule_CheckExact(self)) return nullptr;
  auto cap = py::reinterpret_borrow<py::capsule>(self);
  if (!pyd::is_function_record_capsule(cap)) return nullptr;
  return cap.get_pointer<pyd::function_record>();
}

void guard_function(py::handle f, const std::string& name) {
  for (pyd::function_record* rec = record_of(f); rec; rec = rec->next) {
    if (rec->impl == &guarded) continue;
    originals()[rec] = Guarded{rec->impl, rec->name && *rec->name ? std::string(rec->name) : name};
    rec->impl = &guarded;
  }
}

// A class attribute `name`: an instance method, a static method, a
// property (its getter, setter and deleter) or a function.
void guard_attribute(py::handle value, const std::string& name) {
  PyObject* v = value.ptr();
  if (PyInstanceMethod_Check(v)) return guard_function(PyInstanceMethod_GET_FUNCTION(v), name);
  if (PyCFunction_Check(v)) return guard_function(value, name);
  if (PyObject_TypeCheck(v, &PyProperty_Type)) {
    for (const char* part : {"fget", "fset", "fdel"}) guard_function(value.attr(part), name);
    return;
  }
  if (PyObject_TypeCheck(v, &PyStaticMethod_Type)) guard_function(value.attr("__func__"), name);
}

bool in_package(py::handle object) {
  py::object module = py::getattr(object, "__module__", py::none());
  if (!PyUnicode_Check(module.ptr())) return false;
  const std::string name = module.cast<std::string>();
  return name == "strideweave" || name.starts_with("strideweave.");
}

// The module's functions (every function of the package is bound in it).
void guard_module(py::handle module) {
  for (auto item : py::reinterpret_borrow<py::dict>(module.attr("__dict__")))
    if (PyCFunction_Check(item.second.ptr())) guard_function(item.second, py::str(item.first));
}

}  // namespace

bool is_uninitialised(py::handle value) {
  PyObject* o = value.ptr();
  if (!o || !PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(pyd::get_internals().instance_base))) return false;
  auto* inst = reinterpret_cast<pyd::instance*>(o);
  if (inst->simple_layout) return inst->simple_value_holder[0] == nullptr;
  for (const pyd::value_and_holder& v_h : pyd::values_and_holders(inst))
    if (!v_h.value_ptr()) return true;
  return false;
}

void throw_uninitialised(py::handle value, const char* what) {
  throw TypeError(fmt::format("{}: the {} object is not initialised (its __init__ did not run or raised before "
                              "completing), so it has no value to work on",
                              what, type_name(value)));
}

void guard_uninitialised(py::module_& m) {
  // Every bound class of this package (pybind11's registry also holds other
  // modules' classes when they share its internals).
  for (const auto& [type, infos] : pyd::get_internals().registered_types_py) {
    py::handle cls(reinterpret_cast<PyObject*>(type));
    if (!in_package(cls)) continue;
    for (auto item : py::reinterpret_borrow<py::dict>(type->tp_dict))
      if (PyUnicode_Check(item.first.ptr())) guard_attribute(item.second, py::str(item.first));
  }
  guard_module(m);
}

}  // namespace strideweave::python
