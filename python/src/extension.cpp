// strideweave.carriers.extension (carrier-extension.md R1-R13; the C++
// surface is <strideweave/extension.h>, docs/extension.md): the records and
// providers, with their Python callbacks wrapped into the C++ std::function
// types, registration, and facets. docs/python.md, "Definition-backed Python
// carriers", says how a Python class becomes definition-backed (carriers.cpp
// builds its instances).
//
// Every record is a Python object holding the C++ record and the Python
// values it was built from (attributes return those very objects:
// `provider.read is my_read`). Records are immutable (no attribute can be
// set: AttributeError) and their iterables are frozen as tuples.
//
// Callbacks: each wrapper takes the GIL only while the Python callable runs
// (C++ may call it from any thread, with the GIL released), checks the
// return type (TypeError naming the record and field otherwise) and lets a
// Python exception propagate as itself.
//
// Two things differ from the C++ surface, because Python cannot express
// them there:
//  - a Python subclass of KernelExecutionInterface is one C++ host type, so
//    its compatibility identity's type half is a per-Python-class key (the
//    host overrides interface_type());
//  - facets are Python objects of Python classes; the binding keeps each
//    definition's facets and looks them up by exact Python type (the C++
//    registry keys facets by C++ type, which all Python facets share).
// The pipeline calls the Python callbacks (KernelPattern.prepare, the
// CompositeProvider's result_carriers and prepare, submit, completions)
// with the ResolvedInvocation's Python object (strideweave.operation).
#include "bindings.h"

#include <fmt/format.h>

#include <atomic>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace strideweave::python {
namespace {

namespace ext = strideweave::extension;

std::string repr_of(py::handle value) { return py::repr(value).cast<std::string>(); }

// ---- argument helpers (TypeError naming the record and field)

void require_callable(py::handle value, const char* who, const char* field) {
  if (!PyCallable_Check(value.ptr()))
    throw TypeError(fmt::format("{}: {} must be callable, got {}", who, field, repr_of(value)));
}

std::string str_arg(py::handle value, const char* who, const char* field) {
  if (!PyUnicode_Check(value.ptr()))
    throw TypeError(fmt::format("{}: {} must be a str, got {}", who, field, repr_of(value)));
  return value.cast<std::string>();
}

// A finite iterable frozen once as a tuple (a str is not an iterable of
// records).
py::tuple tuple_arg(py::handle value, const char* who, const char* field) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) || !py::isinstance<py::iterable>(value))
    throw TypeError(fmt::format("{}: {} must be an iterable, got {}", who, field, repr_of(value)));
  return py::tuple(py::reinterpret_borrow<py::iterable>(value));
}

template <class T>
const T& entry_arg(py::handle value, const char* who, const char* field, std::size_t index, const char* expected) {
  if (!py::isinstance<T>(value))
    throw TypeError(fmt::format("{}: {}[{}] must be a {}, got {}", who, field, index, expected, repr_of(value)));
  return bound_value<T>(value, who);
}

template <class T>
const T& record_arg(py::handle value, const char* who, const char* field, const char* expected) {
  if (!py::isinstance<T>(value))
    throw TypeError(fmt::format("{}: {} must be a {}, got {}", who, field, expected, repr_of(value)));
  return bound_value<T>(value, who);
}

// ---- KernelExecutionInterface (R9.1)

// The type half of a Python subclass's compatibility identity: one type_info
// object per Python class, minted on first use and kept in the class's own
// __dict__ (never inherited). The name starts with '*', which makes
// libstdc++ compare these type_infos by address (the same rule as for
// types local to one shared object), and reads as the Python class's
// qualified name in messages.
class PythonClassKey final : public std::type_info {
 public:
  explicit PythonClassKey(const char* name) : std::type_info(name) {}
};

const char* const kInterfaceKey = "__strideweave_interface_type__";

const std::type_info& interface_key(py::handle cls) {
  PyObject* dict = reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_dict;
  if (PyObject* capsule = PyDict_GetItemString(dict, kInterfaceKey))
    return *static_cast<const std::type_info*>(PyCapsule_GetPointer(capsule, kInterfaceKey));
  const std::string qualified =
      py::str(cls.attr("__module__")).cast<std::string>() + "." + py::str(cls.attr("__qualname__")).cast<std::string>();
  // Keys live for the process, like carrier class identities.
  auto* name = new std::string("*" + qualified);
  const std::type_info* key = new PythonClassKey(name->c_str());
  py::capsule capsule(key, kInterfaceKey);
  if (PyObject_SetAttrString(cls.ptr(), kInterfaceKey, capsule.ptr()) != 0) throw py::error_already_set();
  return *key;
}

// The host of a Python subclass's instances.
class PyKernelExecutionInterface final : public ext::KernelExecutionInterface {
 public:
  PyKernelExecutionInterface(std::string version, const std::type_info& key)
      : KernelExecutionInterface(std::move(version)), key_(key) {}

 protected:
  std::type_index interface_type() const override { return key_; }

 private:
  const std::type_info& key_;
};

py::object& interface_type_object() {
  static py::object* t = new py::object();
  return *t;
}

// The shared_ptr C++ keeps of an interface; for a Python subclass's
// instance it also keeps the Python object (and its facilities) alive.
std::shared_ptr<const ext::KernelExecutionInterface> interface_arg(py::handle value, const char* who,
                                                                   const char* field) {
  if (!py::isinstance(value, interface_type_object()))
    throw TypeError(fmt::format("{}: {} must be a KernelExecutionInterface, got {}", who, field, repr_of(value)));
  if (is_uninitialised(value)) throw_uninitialised(value, who);
  auto held = value.cast<std::shared_ptr<ext::KernelExecutionInterface>>();
  if (py::type::handle_of(value).ptr() == interface_type_object().ptr()) return held;
  std::shared_ptr<SharedPyObject> keep = share(value);
  return std::shared_ptr<const ext::KernelExecutionInterface>(std::move(keep), held.get());
}

// ---- records

struct ProviderResultRecord {
  ext::ProviderResult cpp;
  py::tuple outputs;
};

struct PreparedKernelRecord {
  ext::PreparedKernel cpp;
  py::object interface, submit;
};

struct PreparedTransferRecord {
  ext::PreparedTransfer cpp;
  py::object submit;
};

struct PreparedCompositeRecord {
  ext::PreparedComposite cpp;
  py::object submit;
};

struct StorageProviderRecord {
  ext::StorageProvider cpp;
  py::object supports_dtype, physical_size, allocate, release, read, write;
  py::object read_range = py::none(), write_range = py::none(), host_data = py::none();
  py::object read_bytes = py::none(), write_bytes = py::none();
};

struct KernelPatternRecord {
  ext::KernelPattern cpp;
  py::object operation;
  py::tuple plans;
  py::object kernel_id, prepare, preference;
};

struct KernelProviderRecord {
  ext::KernelProvider cpp;
  py::object interface;
  py::tuple patterns;
};

struct KernelPackRecord {
  ext::KernelPack cpp;
  py::object namespace_name, version, carrier_class, execution_interface;
  py::tuple patterns;
};

struct TransferProviderRecord {
  ext::TransferProvider cpp;
  py::object prepare;
};

struct TransferRouteRecord {
  ext::TransferRoute cpp;
  py::object source_class, destination_class, route_id, provider;
};

struct CompositeProviderRecord {
  ext::CompositeProvider cpp;
  py::object capabilities, result_carriers, prepare, backward;
};

struct CarrierDefinitionRecord {
  ext::CarrierDefinition cpp;
  py::object storage, kernels;
  py::tuple transfers;
  py::object composite;
  py::tuple facets;
};

// ---- completions and submissions (R4)

// R4.1: the structural check at acceptance. A completion exposes a bool
// `done` and a callable `wait`, and no `__await__`.
void accept_completion(py::handle value, const std::string& who) {
  if (py::hasattr(value, "__await__"))
    throw TypeError(fmt::format("{} returned {}, which exposes __await__: a ProviderCompletion is waited on, never "
                                "awaited (R4.1)",
                                who, repr_of(value)));
  if (!py::hasattr(value, "done") || !py::hasattr(value, "wait"))
    throw TypeError(fmt::format("{} returned {}: a ProviderCompletion has a bool property `done` and a blocking "
                                "`wait()` (R4.1)",
                                who, repr_of(value)));
  py::object done = value.attr("done");
  if (!PyBool_Check(done.ptr()))
    throw TypeError(fmt::format("{} returned a completion whose `done` is {}, not a bool (R4.1)", who, repr_of(done)));
  if (!PyCallable_Check(value.attr("wait").ptr()))
    throw TypeError(fmt::format("{} returned a completion whose `wait` is not callable (R4.1)", who));
}

// R4.1: `done` is true exactly at the terminal outcome, so a completion
// whose wait() returned while `done` still reads false broke its contract:
// that is the wait's terminal outcome (operation-semantics.md, "Result
// publication validates ... successful completion").
void require_done_after_wait(py::handle completion, const std::string& who) {
  py::object done = completion.attr("done");
  if (done.ptr() != Py_True)
    throw ProviderContractError("completion", fmt::format("{}'s completion.wait() returned but its `done` is {} "
                                                          "(R4.1: done is true exactly at the terminal outcome)",
                                                          who, repr_of(done)));
}

ext::ProviderResult provider_result_of(py::handle value, const std::string& who) {
  if (py::isinstance<ProviderResultRecord>(value)) return value.cast<const ProviderResultRecord&>().cpp;
  if (is_tensor(value))
    throw TypeError(fmt::format("{} returned a bare Tensor: wrap the outputs in ProviderResult (R4.4)", who));
  throw TypeError(fmt::format("{} returned {}, not a ProviderResult (R4.4)", who, repr_of(value)));
}

// Kernel and composite submit: a ProviderResult now, or a
// ProviderCompletion[ProviderResult] whose wait() runs with the GIL.
ext::ResultSubmission result_submission(py::handle value, const std::string& who) {
  if (py::isinstance<ProviderResultRecord>(value) || is_tensor(value) || value.is_none())
    return provider_result_of(value, who);
  accept_completion(value, who);
  std::shared_ptr<SharedPyObject> completion = share(value);
  return ext::ProviderCompletion<ext::ProviderResult>::deferred([completion, who]() {
    py::gil_scoped_acquire gil;
    py::object outcome = completion->object.attr("wait")();
    require_done_after_wait(completion->object, who);
    return provider_result_of(outcome, who + "'s completion.wait()");
  });
}

// Transfer submit: None now, or a ProviderCompletion[None].
ext::TransferSubmission transfer_submission(py::handle value, const std::string& who) {
  if (value.is_none()) return std::monostate{};
  if (is_tensor(value) || py::isinstance<ProviderResultRecord>(value))
    throw TypeError(fmt::format("{} returned {}, not None or a ProviderCompletion[None] (R4.4)", who, repr_of(value)));
  accept_completion(value, who);
  std::shared_ptr<SharedPyObject> completion = share(value);
  return ext::ProviderCompletion<void>::deferred([completion, who]() {
    py::gil_scoped_acquire gil;
    py::object outcome = completion->object.attr("wait")();
    require_done_after_wait(completion->object, who);
    if (!outcome.is_none())
      throw TypeError(fmt::format("{}'s completion.wait() returned {}, not None (R4.4)", who, repr_of(outcome)));
  });
}

// A submit callable, invoked at most once (R4.3).
template <class Submission>
std::function<Submission()> submit_wrapper(py::handle submit, std::string who,
                                           Submission (*accept)(py::handle, const std::string&)) {
  std::shared_ptr<SharedPyObject> fn = share(submit);
  auto invoked = std::make_shared<std::atomic<bool>>(false);
  return [fn, invoked, who = std::move(who), accept]() -> Submission {
    if (invoked->exchange(true)) throw RuntimeError(fmt::format("{} was already invoked (at most once, R4.3)", who));
    py::gil_scoped_acquire gil;
    py::object outcome = fn->object();
    return accept(outcome, who);
  };
}

// ---- storage callbacks (R3.2, R3.4)

void require_none(py::handle value, const Carrier& c, const char* field) {
  if (!value.is_none())
    throw TypeError(fmt::format("{}: StorageProvider.{} returned {}, not None", c.class_name(), field, repr_of(value)));
}

ext::StorageProvider storage_provider(py::handle supports_dtype, py::handle physical_size, py::handle allocate_fn,
                                      py::handle release_fn, py::handle read_fn, py::handle write_fn, bool fallback) {
  auto supports = share(supports_dtype), size = share(physical_size), allocate = share(allocate_fn),
       release = share(release_fn), read = share(read_fn), write = share(write_fn);
  return ext::StorageProvider(
      [supports](const Carrier& c, const DType& dtype) {
        py::gil_scoped_acquire gil;
        py::object answer = supports->object(carrier_object(c), dtype_object(dtype));
        if (!PyBool_Check(answer.ptr()))
          throw TypeError(fmt::format("{}: StorageProvider.supports_dtype returned {}, not a bool", c.class_name(),
                                      repr_of(answer)));
        return answer.ptr() == Py_True;
      },
      [size](const Carrier& c) {
        py::gil_scoped_acquire gil;
        py::object n = size->object(carrier_object(c));
        return integer_arg(n, (c.class_name() + ": StorageProvider.physical_size()").c_str());
      },
      [allocate](Carrier& c, std::int64_t slots) {
        py::gil_scoped_acquire gil;
        require_none(allocate->object(carrier_object(c), slots), c, "allocate");
      },
      [release](Carrier& c) {
        py::gil_scoped_acquire gil;
        require_none(release->object(carrier_object(c)), c, "release");
      },
      [read](const Carrier& c, std::int64_t index) {
        py::gil_scoped_acquire gil;
        py::object v = read->object(carrier_object(c), index);
        return value_arg(v, c.dtype(), (c.class_name() + ": StorageProvider.read").c_str());
      },
      [write](Carrier& c, std::int64_t index, const Value& value) {
        py::gil_scoped_acquire gil;
        require_none(write->object(carrier_object(c), index, value_object(value)), c, "write");
      },
      fallback);
}

// The optional range callbacks (docs/extension.md, "Ranges"); None keeps that
// access per slot.
ext::StorageProvider with_range_callbacks(ext::StorageProvider provider, py::handle read_range_fn,
                                          py::handle write_range_fn, py::handle host_data_fn) {
  ext::StorageProvider::ReadRange read_range;
  ext::StorageProvider::WriteRange write_range;
  ext::StorageProvider::HostData host_data;
  if (!read_range_fn.is_none()) {
    read_range = [fn = share(read_range_fn)](const Carrier& c, std::int64_t first, std::span<Value> out) {
      py::gil_scoped_acquire gil;
      const std::string what = c.class_name() + ": StorageProvider.read_range";
      py::object got = fn->object(carrier_object(c), first, static_cast<std::int64_t>(out.size()));
      if (PyUnicode_Check(got.ptr()) || !py::isinstance<py::iterable>(got))
        throw TypeError(fmt::format("{} returned {}, not an iterable of values", what, repr_of(got)));
      const py::list items(got);
      if (items.size() != out.size())
        throw ValueError(fmt::format("{} returned {} values for a run of {}", what, items.size(), out.size()));
      for (std::size_t k = 0; k < out.size(); ++k) out[k] = value_arg(items[k], c.dtype(), what.c_str());
    };
  }
  if (!write_range_fn.is_none()) {
    write_range = [fn = share(write_range_fn)](Carrier& c, std::int64_t first, std::span<const Value> values) {
      py::gil_scoped_acquire gil;
      py::list items;
      for (const Value& v : values) items.append(value_object(v));
      require_none(fn->object(carrier_object(c), first, items), c, "write_range");
    };
  }
  if (!host_data_fn.is_none()) {
    // The callback answers an object exporting a writable C-contiguous
    // buffer of the dtype (itemsize and kind) covering every slot, or None;
    // the provider keeps that memory alive and in place until release.
    host_data = [fn = share(host_data_fn)](const Carrier& c) -> void* {
      py::gil_scoped_acquire gil;
      try {
        py::object got = fn->object(carrier_object(c));
        if (got.is_none()) return nullptr;
        Py_buffer view;
        if (PyObject_GetBuffer(got.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0)
          throw py::error_already_set();
        void* data = view.buf;
        const std::string format = view.format ? view.format : "B";
        const Py_ssize_t itemsize = view.itemsize, length = view.len;
        PyBuffer_Release(&view);
        const char kind = format.empty() ? 'B' : format.back();
        const SimpleDType& d = c.dtype();
        const bool ok = &d == &DType::Float32() ? (kind == 'f' && itemsize == 4)
                        : &d == &DType::Int32() ? ((kind == 'i' || kind == 'l') && itemsize == 4)
                                                : (kind == '?' && itemsize == 1);
        if (!ok)
          throw TypeError(fmt::format("{}: StorageProvider.host_data returned a buffer of format '{}' (itemsize {}), "
                                      "not the host representation of {}",
                                      c.class_name(), format, itemsize, d.name()));
        if (length < static_cast<Py_ssize_t>(c.size()) * itemsize)
          throw ValueError(fmt::format("{}: StorageProvider.host_data returned a buffer of {} bytes for {} slots",
                                       c.class_name(), length, c.size()));
        return data;
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("strideweave: StorageProvider.host_data");
      } catch (const std::exception& e) {
        if (PyErr_WarnEx(PyExc_RuntimeWarning, e.what(), 1) != 0) PyErr_Clear();  // warnings as errors: dropped
      }
      return nullptr;  // no host memory: the framework uses the other callbacks
    };
  }
  return provider.with_ranges(std::move(read_range), std::move(write_range), std::move(host_data));
}

// The optional byte range callbacks (docs/extension.md, "Ranges"): runs in
// the dtype's host representation as Python bytes.
ext::StorageProvider with_byte_callbacks(ext::StorageProvider provider, py::handle read_bytes_fn,
                                         py::handle write_bytes_fn) {
  ext::StorageProvider::ReadBytes read_bytes;
  ext::StorageProvider::WriteBytes write_bytes;
  if (!read_bytes_fn.is_none()) {
    read_bytes = [fn = share(read_bytes_fn)](const Carrier& c, std::int64_t first, std::int64_t count,
                                             std::byte* out) {
      py::gil_scoped_acquire gil;
      py::object got = fn->object(carrier_object(c), first, count);
      Py_buffer view;
      if (PyObject_GetBuffer(got.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0)
        throw TypeError(fmt::format("{}: StorageProvider.read_bytes returned {}, not a bytes-like object",
                                    c.class_name(), repr_of(got)));
      const std::size_t expected = static_cast<std::size_t>(count) * c.element_bytes();
      const auto length = static_cast<std::size_t>(view.len);
      if (length == expected) std::memcpy(out, view.buf, expected);
      PyBuffer_Release(&view);
      if (length != expected)
        throw ValueError(fmt::format("{}: StorageProvider.read_bytes returned {} bytes for a run of {} slots ({} bytes)",
                                     c.class_name(), length, count, expected));
    };
  }
  if (!write_bytes_fn.is_none()) {
    write_bytes = [fn = share(write_bytes_fn)](Carrier& c, std::int64_t first, std::int64_t count,
                                               const std::byte* data) {
      py::gil_scoped_acquire gil;
      const py::bytes chunk(reinterpret_cast<const char*>(data), static_cast<std::size_t>(count) * c.element_bytes());
      require_none(fn->object(carrier_object(c), first, chunk), c, "write_bytes");
    };
  }
  return provider.with_byte_ranges(std::move(read_bytes), std::move(write_bytes));
}

// ---- the callbacks that receive a ResolvedInvocation

// The Python object of the provider's interface C++ hands to prepare: the
// registered instance itself (a Python subclass's own object).
py::object interface_object(const ext::KernelExecutionInterface& interface) {
  return py::cast(&interface, py::return_value_policy::reference);
}

template <class Record, class Prepared>
Prepared prepared_or_unsupported(py::handle value, const char* who, const char* record_name) {
  if (py::isinstance<ext::Unsupported>(value)) return value.cast<ext::Unsupported>();
  if (py::isinstance<Record>(value)) return value.cast<const Record&>().cpp;
  throw TypeError(fmt::format("{} returned {}, not a {} or Unsupported", who, repr_of(value), record_name));
}

// ---- facets (R12): the Python definitions by exact class

py::object& facet_base() {
  static py::object* t = new py::object();
  return *t;
}

std::unordered_map<CarrierClass, py::object>& python_definitions() {
  static auto* map = new std::unordered_map<CarrierClass, py::object>();  // guarded by the GIL
  return *map;
}

void require_facet_type(py::handle facet_type, const char* who) {
  if (!PyType_Check(facet_type.ptr()) || PyObject_IsSubclass(facet_type.ptr(), facet_base().ptr()) != 1) {
    PyErr_Clear();
    throw TypeError(fmt::format("{}: expected a CarrierFacet subclass, got {}", who, repr_of(facet_type)));
  }
}

py::object find_facet(const Carrier& carrier, py::handle facet_type) {
  auto it = python_definitions().find(carrier.exact_class());
  if (it == python_definitions().end()) return py::none();
  for (py::handle f : it->second.cast<const CarrierDefinitionRecord&>().facets)
    if (py::type::handle_of(f).ptr() == facet_type.ptr()) return py::reinterpret_borrow<py::object>(f);
  return py::none();
}

// The framework's side of a prepared record's submit, for the tests of R4
// (the dispatch pipeline that will call it is not built): invoke it once,
// accept the outcome, wait, and return the output tensors (None for a
// transfer). Waiting releases the GIL; the completion's wait() takes it.
py::object submit_prepared(py::handle prepared) {
  auto outputs_of = [](const ext::ResultSubmission& s) {
    ext::ProviderResult result = std::holds_alternative<ext::ProviderResult>(s)
                                     ? std::get<ext::ProviderResult>(s)
                                     : [&] {
                                         py::gil_scoped_release nogil;
                                         return std::get<ext::ProviderCompletion<ext::ProviderResult>>(s).wait();
                                       }();
    py::list out;
    for (const Tensor& t : result.outputs()) out.append(tensor_object(Tensor(t)));
    return py::object(py::tuple(out));
  };
  if (py::isinstance<PreparedKernelRecord>(prepared))
    return outputs_of(prepared.cast<const PreparedKernelRecord&>().cpp.submit()());
  if (py::isinstance<PreparedCompositeRecord>(prepared))
    return outputs_of(prepared.cast<const PreparedCompositeRecord&>().cpp.submit()());
  if (py::isinstance<PreparedTransferRecord>(prepared)) {
    ext::TransferSubmission s = prepared.cast<const PreparedTransferRecord&>().cpp.submit()();
    if (auto* completion = std::get_if<ext::ProviderCompletion<void>>(&s)) {
      py::gil_scoped_release nogil;
      completion->wait();
    }
    return py::none();
  }
  throw TypeError(fmt::format("_submit_prepared: expected a PreparedKernel, PreparedTransfer or PreparedComposite, "
                              "got {}",
                              repr_of(prepared)));
}

}  // namespace

void bind_extension_providers(py::module_& m);  // below

void bind_extension(py::module_& m) {
  // R11.1
  py::class_<ext::Unsupported>(m, "Unsupported", R"doc(
Unsupported(reason): a provider's runtime refusal (carrier-extension R11.1).
A kernel pattern's refusal moves on to the next candidate; a transfer
route's to the elementwise fallback. `reason` a non-empty str (TypeError /
ValueError). Immutable; equal when the reasons are.)doc")
      .def(py::init([](py::handle reason) { return ext::Unsupported(str_arg(reason, "Unsupported", "reason")); }),
           py::arg("reason"))
      .def_property_readonly("reason", &ext::Unsupported::reason, "Why the provider refused.")
      .def("__eq__", [](const ext::Unsupported& a, py::handle b) -> py::object {
        if (!py::isinstance<ext::Unsupported>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(a == b.cast<const ext::Unsupported&>());
      })
      .def("__hash__", [](const ext::Unsupported& u) { return py::hash(py::str(u.reason())); })
      .def("__repr__", [](const ext::Unsupported& u) { return fmt::format("Unsupported({})", repr_of(py::str(u.reason()))); });

  // R9.1
  py::class_<ext::KernelExecutionInterface, std::shared_ptr<ext::KernelExecutionInterface>> interface(
      m, "KernelExecutionInterface", R"doc(
KernelExecutionInterface(version): a kernel provider's execution facility
(carrier-extension R9.1). `version` a non-empty str (TypeError / ValueError).
Open for subclassing: a subclass adds immutable device, stream or workspace
facilities and calls super().__init__(version). Its compatibility identity
is (type(interface), interface.version): a pack must name an interface of
the provider's exact class and version.)doc");
  interface_type_object() = interface;
  interface
      .def("__init__",
           [](py::detail::value_and_holder& v_h, py::handle version) {
             std::string v = str_arg(version, "KernelExecutionInterface", "version");
             py::handle type = py::type::handle_of(py::handle(reinterpret_cast<PyObject*>(v_h.inst)));
             if (type.ptr() == interface_type_object().ptr())
               v_h.value_ptr() = new ext::KernelExecutionInterface(std::move(v));
             else
               v_h.value_ptr() = static_cast<ext::KernelExecutionInterface*>(
                   new PyKernelExecutionInterface(std::move(v), interface_key(type)));
           },
           py::detail::is_new_style_constructor(), py::arg("version"))
      .def_property_readonly("version", &ext::KernelExecutionInterface::version, "The interface's version string.")
      .def("compatibility_identity",
           [](py::handle self) { return py::make_tuple(py::type::handle_of(self), self.attr("version")); },
           "(type(self), self.version): what a kernel pack's interface must equal (R9.1, R10.1).")
      .def("__repr__", [](py::handle self) {
        return fmt::format("<{} {}>", py::str(py::type::handle_of(self).attr("__qualname__")).cast<std::string>(),
                           self.attr("version").cast<std::string>());
      });

  // R4.2
  py::class_<ProviderResultRecord, std::shared_ptr<ProviderResultRecord>>(m, "ProviderResult", R"doc(
ProviderResult(outputs): what a kernel or composite submit produces
(carrier-extension R4.2): a non-empty finite iterable of Tensors (TypeError
for another entry, ValueError when empty), frozen as the tuple `outputs`.)doc")
      .def(py::init([](py::handle outputs) {
             py::tuple items = tuple_arg(outputs, "ProviderResult", "outputs");
             std::vector<Tensor> tensors;
             for (std::size_t i = 0; i < items.size(); ++i) {
               if (!is_tensor(items[i]))
                 throw TypeError(fmt::format("ProviderResult: outputs[{}] must be a Tensor, got {}", i,
                                             repr_of(items[i])));
               tensors.push_back(tensor_arg(items[i], "ProviderResult"));
             }
             return ProviderResultRecord{ext::ProviderResult(std::move(tensors)), items};
           }),
           py::arg("outputs"))
      .def_property_readonly("outputs", [](const ProviderResultRecord& r) { return r.outputs; },
                             "The output tensors, in result order.");

  // R4.3
  py::class_<PreparedKernelRecord, std::shared_ptr<PreparedKernelRecord>>(m, "PreparedKernel", R"doc(
PreparedKernel(interface, submit): a prepared launch (carrier-extension
R4.3): the provider's KernelExecutionInterface and a zero-argument callable
(TypeError otherwise). The framework invokes submit at most once; it returns
a ProviderResult or a ProviderCompletion[ProviderResult]. Immutable.)doc")
      .def(py::init([](py::handle iface, py::handle submit) {
             auto cpp_interface = interface_arg(iface, "PreparedKernel", "interface");
             require_callable(submit, "PreparedKernel", "submit");
             return PreparedKernelRecord{
                 ext::PreparedKernel(cpp_interface, submit_wrapper<ext::ResultSubmission>(
                                                        submit, "PreparedKernel.submit", &result_submission)),
                 py::reinterpret_borrow<py::object>(iface), py::reinterpret_borrow<py::object>(submit)};
           }),
           py::arg("interface"), py::arg("submit"))
      .def_property_readonly("interface", [](const PreparedKernelRecord& r) { return r.interface; },
                             "The execution interface the kernel was prepared for.")
      .def_property_readonly("submit", [](const PreparedKernelRecord& r) { return r.submit; },
                             "The zero-argument submission callable.");

  py::class_<PreparedTransferRecord, std::shared_ptr<PreparedTransferRecord>>(m, "PreparedTransfer", R"doc(
PreparedTransfer(submit): a prepared transfer (carrier-extension R4.3): a
zero-argument callable (TypeError otherwise), invoked at most once, that
returns None or a ProviderCompletion[None]. Immutable.)doc")
      .def(py::init([](py::handle submit) {
             require_callable(submit, "PreparedTransfer", "submit");
             return PreparedTransferRecord{
                 ext::PreparedTransfer(
                     submit_wrapper<ext::TransferSubmission>(submit, "PreparedTransfer.submit", &transfer_submission)),
                 py::reinterpret_borrow<py::object>(submit)};
           }),
           py::arg("submit"))
      .def_property_readonly("submit", [](const PreparedTransferRecord& r) { return r.submit; },
                             "The zero-argument submission callable.");

  py::class_<PreparedCompositeRecord, std::shared_ptr<PreparedCompositeRecord>>(m, "PreparedComposite", R"doc(
PreparedComposite(submit): a dependent carrier's prepared work
(carrier-extension R4.3): a zero-argument callable (TypeError otherwise),
invoked at most once, that returns a ProviderResult or a
ProviderCompletion[ProviderResult]. Immutable.)doc")
      .def(py::init([](py::handle submit) {
             require_callable(submit, "PreparedComposite", "submit");
             return PreparedCompositeRecord{
                 ext::PreparedComposite(
                     submit_wrapper<ext::ResultSubmission>(submit, "PreparedComposite.submit", &result_submission)),
                 py::reinterpret_borrow<py::object>(submit)};
           }),
           py::arg("submit"))
      .def_property_readonly("submit", [](const PreparedCompositeRecord& r) { return r.submit; },
                             "The zero-argument submission callable.");

  // R3.1
  py::class_<StorageProviderRecord, std::shared_ptr<StorageProviderRecord>>(m, "StorageProvider", R"doc(
StorageProvider(supports_dtype, physical_size, allocate, release, read,
write, elementwise_fallback=False, *, read_range=None, write_range=None,
host_data=None): a definition-backed class's complete storage
(carrier-extension R3). Six callables (TypeError otherwise) and an exact
bool (TypeError). Each callback receives the Python carrier instance and
runs with the GIL held:
  supports_dtype(carrier, dtype) -> bool; physical_size(carrier) -> int;
  allocate(carrier, slots) -> None; release(carrier) -> None (called at most
  once); read(carrier, index) -> value; write(carrier, index, value) -> None.
The optional range callbacks (None or a callable; docs/extension.md,
"Ranges") replace read/write for contiguous runs when given:
  read_range(carrier, first, count) -> iterable of count values;
  write_range(carrier, first, values: list) -> None;
  host_data(carrier) -> None, or an object exporting a writable C-contiguous
  buffer of the dtype ('f' / 'i' 4 bytes, '?') covering every slot, which the
  provider keeps alive and in place until release (runs are then memcpy'd).
Beyond those, byte runs in the dtype's host representation (float32,
int32, one byte 0 or 1 per Bool slot), preferred wherever the framework
holds bytes (read_bytes/write_bytes, moves to and from host memory):
  read_bytes(carrier, first, count) -> a bytes-like object of
  count * carrier.element_bytes() bytes;
  write_bytes(carrier, first, data: bytes) -> None.
A wrong return type is a TypeError; a callback's exception propagates as
itself and leaves the carrier and its version unchanged. Immutable.)doc")
      .def(py::init([](py::handle supports_dtype, py::handle physical_size, py::handle allocate, py::handle release,
                       py::handle read, py::handle write, py::handle elementwise_fallback, py::handle read_range,
                       py::handle write_range, py::handle host_data, py::handle read_bytes, py::handle write_bytes) {
             const char* who = "StorageProvider";
             require_callable(supports_dtype, who, "supports_dtype");
             require_callable(physical_size, who, "physical_size");
             require_callable(allocate, who, "allocate");
             require_callable(release, who, "release");
             require_callable(read, who, "read");
             require_callable(write, who, "write");
             if (!read_range.is_none()) require_callable(read_range, who, "read_range");
             if (!write_range.is_none()) require_callable(write_range, who, "write_range");
             if (!host_data.is_none()) require_callable(host_data, who, "host_data");
             if (!read_bytes.is_none()) require_callable(read_bytes, who, "read_bytes");
             if (!write_bytes.is_none()) require_callable(write_bytes, who, "write_bytes");
             if (!PyBool_Check(elementwise_fallback.ptr()))
               throw TypeError(fmt::format("StorageProvider: elementwise_fallback must be a bool, got {}",
                                           repr_of(elementwise_fallback)));
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             ext::StorageProvider cpp = with_byte_callbacks(
                 with_range_callbacks(storage_provider(supports_dtype, physical_size, allocate, release, read, write,
                                                       elementwise_fallback.ptr() == Py_True),
                                      read_range, write_range, host_data),
                 read_bytes, write_bytes);
             return StorageProviderRecord{std::move(cpp),  o(supports_dtype), o(physical_size), o(allocate),
                                          o(release),      o(read),           o(write),         o(read_range),
                                          o(write_range),  o(host_data),      o(read_bytes),    o(write_bytes)};
           }),
           py::arg("supports_dtype"), py::arg("physical_size"), py::arg("allocate"), py::arg("release"),
           py::arg("read"), py::arg("write"), py::arg("elementwise_fallback") = false, py::kw_only(),
           py::arg("read_range") = py::none(), py::arg("write_range") = py::none(), py::arg("host_data") = py::none(),
           py::arg("read_bytes") = py::none(), py::arg("write_bytes") = py::none())
      .def_property_readonly("supports_dtype", [](const StorageProviderRecord& r) { return r.supports_dtype; },
                             "supports_dtype(carrier, dtype) -> bool.")
      .def_property_readonly("physical_size", [](const StorageProviderRecord& r) { return r.physical_size; },
                             "physical_size(carrier) -> int.")
      .def_property_readonly("allocate", [](const StorageProviderRecord& r) { return r.allocate; },
                             "allocate(carrier, slots) -> None.")
      .def_property_readonly("release", [](const StorageProviderRecord& r) { return r.release; },
                             "release(carrier) -> None.")
      .def_property_readonly("read", [](const StorageProviderRecord& r) { return r.read; },
                             "read(carrier, index) -> value.")
      .def_property_readonly("write", [](const StorageProviderRecord& r) { return r.write; },
                             "write(carrier, index, value) -> None.")
      .def_property_readonly("read_range", [](const StorageProviderRecord& r) { return r.read_range; },
                             "read_range(carrier, first, count) -> values, or None (per slot).")
      .def_property_readonly("write_range", [](const StorageProviderRecord& r) { return r.write_range; },
                             "write_range(carrier, first, values) -> None, or None (per slot).")
      .def_property_readonly("host_data", [](const StorageProviderRecord& r) { return r.host_data; },
                             "host_data(carrier) -> buffer or None, or None (no host memory).")
      .def_property_readonly("read_bytes", [](const StorageProviderRecord& r) { return r.read_bytes; },
                             "read_bytes(carrier, first, count) -> bytes, or None (not offered).")
      .def_property_readonly("write_bytes", [](const StorageProviderRecord& r) { return r.write_bytes; },
                             "write_bytes(carrier, first, data) -> None, or None (not offered).")
      .def_property_readonly("elementwise_fallback",
                             [](const StorageProviderRecord& r) { return r.cpp.elementwise_fallback(); },
                             "Whether elementwise movement to or from another such class is allowed (R3.5).");

  bind_extension_providers(m);
}

}  // namespace strideweave::python

namespace strideweave::python {
namespace {

// ---- kernels (R6.1, R10, R11)

std::vector<OperationCapability> capabilities_arg(py::handle values, const std::string& who, const char* field) {
  py::tuple items = tuple_arg(values, who.c_str(), field);
  std::vector<OperationCapability> out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out.push_back(entry_arg<OperationCapability>(items[i], who.c_str(), field, i, "OperationCapability"));
  return out;
}

std::vector<ext::KernelPattern> patterns_arg(const py::tuple& items, const char* who) {
  std::vector<ext::KernelPattern> out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out.push_back(entry_arg<KernelPatternRecord>(items[i], who, "patterns", i, "KernelPattern").cpp);
  return out;
}

ext::KernelPattern kernel_pattern(py::handle operation, py::handle plans, py::handle kernel_id, py::handle prepare,
                                  py::handle preference, py::tuple& frozen_plans) {
  const char* who = "KernelPattern";
  if (!py::isinstance<operation::OperationDefinition>(operation))
    throw TypeError(fmt::format("KernelPattern: operation must be a registered OperationDefinition, got {}",
                                repr_of(operation)));
  if (is_uninitialised(operation)) throw_uninitialised(operation, who);
  auto definition = operation.cast<std::shared_ptr<operation::OperationDefinition>>();
  frozen_plans = tuple_arg(plans, who, "plans");
  std::vector<OperationCapability> caps = capabilities_arg(frozen_plans, who, "plans");
  std::string id = str_arg(kernel_id, who, "kernel_id");
  require_callable(prepare, who, "prepare");
  if (!PyLong_Check(preference.ptr()) || PyBool_Check(preference.ptr()))
    throw TypeError(fmt::format("KernelPattern: preference must be an int (not a bool), got {}", repr_of(preference)));
  const std::int64_t pref = integer_arg(preference, "KernelPattern: preference");
  std::shared_ptr<SharedPyObject> fn = share(prepare);
  ext::KernelPattern::Prepare wrapper = [fn, id](const ext::ResolvedInvocation& invocation,
                                                 const ext::KernelExecutionInterface& interface)
      -> ext::KernelPattern::Prepared {
    py::gil_scoped_acquire gil;
    py::object returned = fn->object(resolved_invocation_object(invocation), interface_object(interface));
    const std::string what = fmt::format("KernelPattern '{}'.prepare", id);
    return prepared_or_unsupported<PreparedKernelRecord, ext::KernelPattern::Prepared>(returned, what.c_str(),
                                                                                      "PreparedKernel");
  };
  return ext::KernelPattern(std::const_pointer_cast<const operation::OperationDefinition>(definition), std::move(caps),
                            std::move(id), std::move(wrapper), pref);
}

// ---- transfers (R5)

ext::TransferProvider::Prepared transfer_prepared(py::handle value) {
  if (py::isinstance<PreparedTransferRecord>(value)) return value.cast<const PreparedTransferRecord&>().cpp;
  if (py::isinstance<ext::Unsupported>(value)) return value.cast<const ext::Unsupported&>();
  throw TypeError(fmt::format("TransferProvider.prepare returned {}, not a PreparedTransfer or Unsupported (R5.2)",
                              repr_of(value)));
}

// ---- composites (R6.2)

ext::CompositeProvider composite_provider(py::handle capabilities, py::handle result_carriers, py::handle prepare,
                                          py::handle backward) {
  const char* who = "CompositeProvider";
  require_callable(capabilities, who, "capabilities");
  require_callable(result_carriers, who, "result_carriers");
  require_callable(prepare, who, "prepare");
  std::shared_ptr<SharedPyObject> caps = share(capabilities);
  std::shared_ptr<SharedPyObject> classes = share(result_carriers);
  std::shared_ptr<SharedPyObject> prepare_fn = share(prepare);
  if (!backward.is_none()) require_callable(backward, who, "backward");
  ext::CompositeProvider provider(
      [caps](const Carrier& c) {
        py::gil_scoped_acquire gil;
        py::object entries = caps->object(carrier_object(c));
        const std::string what = c.class_name() + ": CompositeProvider.capabilities()";
        if (PyUnicode_Check(entries.ptr()) || !py::isinstance<py::iterable>(entries))
          throw TypeError(fmt::format("{} returned {}, not an iterable of OperationCapability", what,
                                      repr_of(entries)));
        return capabilities_arg(entries, what, "result");
      },
      [classes](const Carrier& c, const ext::ResolvedInvocation& invocation) -> std::vector<CarrierClass> {
        py::gil_scoped_acquire gil;
        py::object returned = classes->object(carrier_object(c), resolved_invocation_object(invocation));
        const std::string what = c.class_name() + ": CompositeProvider.result_carriers()";
        if (!py::isinstance<py::tuple>(returned))
          throw TypeError(fmt::format("{} returned {}, not a tuple of carrier classes", what, repr_of(returned)));
        std::vector<CarrierClass> out;
        for (py::handle item : returned.cast<py::tuple>()) out.push_back(carrier_class_arg(item, what.c_str()));
        return out;
      },
      [prepare_fn](const Carrier& c, const ext::ResolvedInvocation& invocation) -> ext::CompositeProvider::Prepared {
        py::gil_scoped_acquire gil;
        py::object returned = prepare_fn->object(carrier_object(c), resolved_invocation_object(invocation));
        const std::string what = c.class_name() + ": CompositeProvider.prepare()";
        return prepared_or_unsupported<PreparedCompositeRecord, ext::CompositeProvider::Prepared>(
            returned, what.c_str(), "PreparedComposite");
      });
  if (backward.is_none()) return provider;
  std::shared_ptr<SharedPyObject> backward_fn = share(backward);
  return provider.with_backward([backward_fn](const Carrier& c, const operation::VJPContext& context,
                                              std::span<const std::optional<Tensor>> cotangents) {
    py::gil_scoped_acquire gil;
    return call_python_vjp(backward_fn->object, carrier_object(c), context, cotangents, "CompositeProvider.backward");
  });
}

}  // namespace

namespace {

// Kernels: patterns, the kernel provider, kernel packs and their registration (R6.1, R10, R11).
void bind_kernel_providers(py::module_& m) {
  // R11.2
  py::class_<KernelPatternRecord, std::shared_ptr<KernelPatternRecord>>(m, "KernelPattern", R"doc(
KernelPattern(operation, plans, kernel_id, prepare, preference=0): one
kernel of a definition-backed class (carrier-extension R11.2). `operation`
the registered OperationDefinition; `plans` a non-empty iterable of
OperationCapability of that operation (tuple); `kernel_id` a non-empty str;
`prepare(invocation, interface)` -> PreparedKernel | Unsupported;
`preference` an int, not a bool. Wrong types -> TypeError; empty plans or
id, duplicate plans, or a plan of another operation -> ValueError.
Immutable.)doc")
      .def(py::init([](py::handle operation, py::handle plans, py::handle kernel_id, py::handle prepare,
                       py::handle preference) {
             py::tuple frozen;
             ext::KernelPattern cpp = kernel_pattern(operation, plans, kernel_id, prepare, preference, frozen);
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             return KernelPatternRecord{std::move(cpp), o(operation), frozen, o(kernel_id), o(prepare), o(preference)};
           }),
           py::arg("operation"), py::arg("plans"), py::arg("kernel_id"), py::arg("prepare"),
           py::arg("preference") = 0)
      .def_property_readonly("operation", [](const KernelPatternRecord& r) { return r.operation; },
                             "The OperationDefinition this pattern implements.")
      .def_property_readonly("plans", [](const KernelPatternRecord& r) { return r.plans; },
                             "The OperationCapability entries it authorises, as given (a tuple).")
      .def_property_readonly("kernel_id", [](const KernelPatternRecord& r) { return r.kernel_id; },
                             "Its id, unique in the target class's kernel set.")
      .def_property_readonly("prepare", [](const KernelPatternRecord& r) { return r.prepare; },
                             "prepare(invocation, interface) -> PreparedKernel | Unsupported.")
      .def_property_readonly("preference", [](const KernelPatternRecord& r) { return r.preference; },
                             "Higher is tried first (R11.4).")
      .def("__repr__", [](const KernelPatternRecord& r) {
        return fmt::format("<KernelPattern {} of {}, preference {}>", r.cpp.kernel_id(), r.cpp.operation().name(),
                           r.cpp.preference());
      });

  // R6.1
  py::class_<KernelProviderRecord, std::shared_ptr<KernelProviderRecord>>(m, "KernelProvider", R"doc(
KernelProvider(interface, patterns=()): an independent class's kernels
(carrier-extension R6.1): one KernelExecutionInterface and a finite iterable
of KernelPattern (frozen as a tuple). Wrong types -> TypeError; a duplicate
kernel_id -> ValueError. Immutable.)doc")
      .def(py::init([](py::handle iface, py::handle patterns) {
             auto cpp_interface = interface_arg(iface, "KernelProvider", "interface");
             py::tuple items = tuple_arg(patterns, "KernelProvider", "patterns");
             return KernelProviderRecord{ext::KernelProvider(cpp_interface, patterns_arg(items, "KernelProvider")),
                                         py::reinterpret_borrow<py::object>(iface), items};
           }),
           py::arg("interface"), py::arg("patterns") = py::tuple())
      .def_property_readonly("interface", [](const KernelProviderRecord& r) { return r.interface; },
                             "The provider's execution interface.")
      .def_property_readonly("patterns", [](const KernelProviderRecord& r) { return r.patterns; },
                             "The built-in patterns (a tuple).");

  // R10.1
  py::class_<KernelPackRecord, std::shared_ptr<KernelPackRecord>>(m, "KernelPack", R"doc(
KernelPack(namespace, version, carrier_class, execution_interface,
patterns): extra kernel patterns for one exact independent definition-backed
class (carrier-extension R10.1). Non-empty strs; a concrete independent
Carrier class; an interface of the provider's exact class and version
(checked by register_kernel_pack); a non-empty iterable of KernelPattern.
Wrong types -> TypeError; empty values or a duplicate kernel_id ->
ValueError. Immutable.)doc")
      .def(py::init([](py::handle namespace_name, py::handle version, py::handle carrier_class,
                       py::handle execution_interface, py::handle patterns) {
             const char* who = "KernelPack";
             std::string ns = str_arg(namespace_name, who, "namespace");
             std::string v = str_arg(version, who, "version");
             const CarrierClass cls = carrier_class_arg(carrier_class, "KernelPack: carrier_class");
             auto cpp_interface = interface_arg(execution_interface, who, "execution_interface");
             py::tuple items = tuple_arg(patterns, who, "patterns");
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             return KernelPackRecord{
                 ext::KernelPack(std::move(ns), std::move(v), cls, cpp_interface, patterns_arg(items, who)),
                 o(namespace_name), o(version), o(carrier_class), o(execution_interface), items};
           }),
           py::arg("namespace"), py::arg("version"), py::arg("carrier_class"), py::arg("execution_interface"),
           py::arg("patterns"))
      .def_property_readonly("namespace", [](const KernelPackRecord& r) { return r.namespace_name; },
                             "The pack's namespace.")
      .def_property_readonly("version", [](const KernelPackRecord& r) { return r.version; }, "The pack's version.")
      .def_property_readonly("carrier_class", [](const KernelPackRecord& r) { return r.carrier_class; },
                             "The exact class the pack extends.")
      .def_property_readonly("execution_interface", [](const KernelPackRecord& r) { return r.execution_interface; },
                             "The interface the pack's kernels are written for.")
      .def_property_readonly("patterns", [](const KernelPackRecord& r) { return r.patterns; },
                             "The pack's patterns (a tuple).")
      .def("__repr__", [](const KernelPackRecord& r) {
        return fmt::format("<KernelPack {}@{} for {}>", r.cpp.namespace_name(), r.cpp.version(),
                           r.cpp.carrier_class().name());
      });


  // R10.2
  m.def("register_kernel_pack", [](py::handle pack) {
          const auto& p = record_arg<KernelPackRecord>(pack, "register_kernel_pack", "pack", "KernelPack");
          ext::KernelPack copy = p.cpp;
          py::gil_scoped_release nogil;
          ext::register_kernel_pack(std::move(copy));
        }, py::arg("pack"),
        "Adds a pack's patterns to its exact class until the class is first observed (carrier-extension R7.2, "
        "R10.2). TypeError for a non-pack, a class without a definition, a storage-only or dependent class, an "
        "interface of another class or version, or an observed class; ValueError for a (namespace, version) or "
        "kernel_id already in the class's set. A rejected pack contributes nothing.");
}

// Transfers: the request, the provider and the route (R5).
void bind_transfer_providers(py::module_& m) {
  // R5.1
  py::class_<ext::TransferRequest>(m, "TransferRequest", R"doc(
What a transfer route's prepare receives (carrier-extension R5.1): created by
the framework only, read-only. tensor, destination, source_class and
destination_class (exact classes), dtype, layout, physical_span
(== layout.cosize).)doc")
      .def_property_readonly("tensor", [](const ext::TransferRequest& r) { return tensor_object(Tensor(r.tensor())); },
                             "The tensor being moved.")
      .def_property_readonly("destination", [](const ext::TransferRequest& r) { return carrier_object(*r.destination()); },
                             "The destination carrier.")
      .def_property_readonly("source_class", [](const ext::TransferRequest& r) { return carrier_class_object(r.source_class()); },
                             "The source's exact carrier class.")
      .def_property_readonly("destination_class",
                             [](const ext::TransferRequest& r) { return carrier_class_object(r.destination_class()); },
                             "The destination's exact carrier class.")
      .def_property_readonly("dtype", [](const ext::TransferRequest& r) { return dtype_object(r.dtype()); },
                             "The stored dtype.")
      .def_property_readonly("layout", [](const ext::TransferRequest& r) { return py::cast(r.layout()); },
                             "The tensor's Layout.")
      .def_property_readonly("physical_span", &ext::TransferRequest::physical_span, "layout.cosize.");

  // R5.2
  py::class_<TransferProviderRecord, std::shared_ptr<TransferProviderRecord>>(m, "TransferProvider", R"doc(
TransferProvider(prepare): a route's mechanics (carrier-extension R5.2).
prepare(request) -> PreparedTransfer | Unsupported checks dtype, layout,
device and alignment without changing either carrier or submitting work.
A non-callable -> TypeError. Immutable.)doc")
      .def(py::init([](py::handle prepare) {
             require_callable(prepare, "TransferProvider", "prepare");
             std::shared_ptr<SharedPyObject> fn = share(prepare);
             ext::TransferProvider cpp([fn](const ext::TransferRequest& request) {
               py::gil_scoped_acquire gil;
               return transfer_prepared(fn->object(py::cast(request)));
             });
             return TransferProviderRecord{std::move(cpp), py::reinterpret_borrow<py::object>(prepare)};
           }),
           py::arg("prepare"))
      .def_property_readonly("prepare", [](const TransferProviderRecord& r) { return r.prepare; },
                             "prepare(request) -> PreparedTransfer | Unsupported.");

  // R5.4
  py::class_<TransferRouteRecord, std::shared_ptr<TransferRouteRecord>>(m, "TransferRoute", R"doc(
TransferRoute(source_class, destination_class, route_id, provider): one
exact (source, destination) movement route (carrier-extension R5.4):
concrete Carrier classes, a non-empty route_id (ValueError when empty), a
TransferProvider; bad types -> TypeError. Matching uses both exact classes,
never superclasses. Immutable.)doc")
      .def(py::init([](py::handle source_class, py::handle destination_class, py::handle route_id,
                       py::handle provider) {
             const char* who = "TransferRoute";
             const CarrierClass source = carrier_class_arg(source_class, "TransferRoute: source_class");
             const CarrierClass destination = carrier_class_arg(destination_class, "TransferRoute: destination_class");
             std::string id = str_arg(route_id, who, "route_id");
             const auto& p = record_arg<TransferProviderRecord>(provider, who, "provider", "TransferProvider");
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             return TransferRouteRecord{ext::TransferRoute(source, destination, std::move(id), p.cpp), o(source_class),
                                        o(destination_class), o(route_id), o(provider)};
           }),
           py::arg("source_class"), py::arg("destination_class"), py::arg("route_id"), py::arg("provider"))
      .def_property_readonly("source_class", [](const TransferRouteRecord& r) { return r.source_class; },
                             "The exact source class.")
      .def_property_readonly("destination_class", [](const TransferRouteRecord& r) { return r.destination_class; },
                             "The exact destination class.")
      .def_property_readonly("route_id", [](const TransferRouteRecord& r) { return r.route_id; }, "The route's id.")
      .def_property_readonly("provider", [](const TransferRouteRecord& r) { return r.provider; },
                             "The route's TransferProvider.")
      .def("__repr__", [](const TransferRouteRecord& r) {
        return fmt::format("<TransferRoute {}: {} -> {}>", r.cpp.route_id(), r.cpp.source_class().name(),
                           r.cpp.destination_class().name());
      });
}

// Composites: the composite provider (R6.2).
void bind_composite_provider(py::module_& m) {
  // R6.2
  py::class_<CompositeProviderRecord, std::shared_ptr<CompositeProviderRecord>>(m, "CompositeProvider", R"doc(
CompositeProvider(capabilities, result_carriers, prepare, *, backward=None): a
definition-backed DependentCarrier class's execution (carrier-extension R6.2):
three callables (TypeError otherwise). capabilities(carrier) -> iterable of
OperationCapability is the constructed instance's complete executable set,
materialised once at construction, sorted and frozen (a non-capability entry
-> TypeError, a duplicate -> ValueError); result_carriers(carrier,
invocation) and prepare(carrier, invocation) run when an operation executes.
backward(carrier, context, cotangents), when given (a callable, TypeError
otherwise), runs the backward of a call the composite executed: it evaluates
the invocation's own VJP, however the composite decomposes the call, and
returns what that VJP returns (validated the same way; docs/extension.md,
"Composite backward"). Immutable.)doc")
      .def(py::init([](py::handle capabilities, py::handle result_carriers, py::handle prepare, py::handle backward) {
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             return CompositeProviderRecord{composite_provider(capabilities, result_carriers, prepare, backward),
                                            o(capabilities), o(result_carriers), o(prepare), o(backward)};
           }),
           py::arg("capabilities"), py::arg("result_carriers"), py::arg("prepare"), py::kw_only(),
           py::arg("backward") = py::none())
      .def_property_readonly("backward", [](const CompositeProviderRecord& r) { return r.backward; },
                             "backward(carrier, context, cotangents) -> tuple of Tensor or None, or None.")
      .def_property_readonly("capabilities", [](const CompositeProviderRecord& r) { return r.capabilities; },
                             "capabilities(carrier) -> iterable of OperationCapability.")
      .def_property_readonly("result_carriers", [](const CompositeProviderRecord& r) { return r.result_carriers; },
                             "result_carriers(carrier, invocation) -> tuple of carrier classes.")
      .def_property_readonly("prepare", [](const CompositeProviderRecord& r) { return r.prepare; },
                             "prepare(carrier, invocation) -> PreparedComposite | Unsupported.");
}

// Facets: the open CarrierFacet base and carrier.facet / require_facet (R12); the framework side of submit.
void bind_facets(py::module_& m) {
  // R12.1: a plain Python class (users subclass it freely).
  py::dict facet_namespace;
  facet_namespace["__module__"] = "strideweave.carriers.extension";
  facet_namespace["__qualname__"] = "CarrierFacet";
  facet_namespace["__slots__"] = py::tuple();
  facet_namespace["__doc__"] = R"doc(
The open marker base of carrier-specific providers (carrier-extension R12):
a residency control, a device handle. Subclass it; a CarrierDefinition holds
at most one facet per exact class, and carrier.facet(FacetClass) finds it by
that exact class. Facets never widen dtypes, capabilities, routes or
meaning.)doc";
  facet_base() = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))(
      "CarrierFacet", py::tuple(), facet_namespace);
  m.attr("CarrierFacet") = facet_base();


  // R12.2: carrier.facet / carrier.require_facet
  py::object carrier_type = m.attr("Carrier");
  carrier_type.attr("facet") = py::cpp_function(
      [](const Carrier& self, py::handle facet_type) {
        require_facet_type(facet_type, "Carrier.facet");
        return find_facet(self, facet_type);
      },
      py::name("facet"), py::is_method(carrier_type), py::arg("facet_type"),
      "The facet of exactly `facet_type` in this carrier's class definition, or None (TypeError unless "
      "facet_type is a CarrierFacet subclass).");
  carrier_type.attr("require_facet") = py::cpp_function(
      [](const Carrier& self, py::handle facet_type) {
        require_facet_type(facet_type, "Carrier.require_facet");
        py::object f = find_facet(self, facet_type);
        if (f.is_none())
          throw NotImplementedError(fmt::format("{} has no facet of type {}", self.class_name(),
                                                py::str(facet_type.attr("__qualname__")).cast<std::string>()));
        return f;
      },
      py::name("require_facet"), py::is_method(carrier_type), py::arg("facet_type"),
      "The facet of exactly `facet_type`, or NotImplementedError naming the type (TypeError unless facet_type "
      "is a CarrierFacet subclass).");

  m.def("_submit_prepared", &submit_prepared, py::arg("prepared"),
        "The framework's side of a prepared record's submit (R4): invokes it once, accepts the outcome, waits, "
        "and returns the output tensors (None for a transfer). Private: the dispatch pipeline that calls submit "
        "is not built yet.");
}

// Carrier definitions and their registration (R2).
void bind_carrier_definitions(py::module_& m) {
  // R2.1
  py::class_<CarrierDefinitionRecord, std::shared_ptr<CarrierDefinitionRecord>>(m, "CarrierDefinition", R"doc(
CarrierDefinition(storage, kernels=None, transfers=(), composite=None,
facets=()): one exact class's immutable definition (carrier-extension R2.1):
a StorageProvider, a KernelProvider or None, an iterable of TransferRoute, a
CompositeProvider or None, an iterable of CarrierFacet instances (both
frozen as tuples). A wrong type -> TypeError; two routes with the same
(source, destination) or two facets of the same exact class -> ValueError.)doc")
      .def(py::init([](py::handle storage, py::handle kernels, py::handle transfers, py::handle composite,
                       py::handle facets) {
             const char* who = "CarrierDefinition";
             const auto& s = record_arg<StorageProviderRecord>(storage, who, "storage", "StorageProvider");
             std::optional<ext::KernelProvider> k;
             if (!kernels.is_none())
               k = record_arg<KernelProviderRecord>(kernels, who, "kernels", "KernelProvider or None").cpp;
             py::tuple routes = tuple_arg(transfers, who, "transfers");
             std::vector<ext::TransferRoute> cpp_routes;
             for (std::size_t i = 0; i < routes.size(); ++i)
               cpp_routes.push_back(entry_arg<TransferRouteRecord>(routes[i], who, "transfers", i, "TransferRoute").cpp);
             std::optional<ext::CompositeProvider> c;
             if (!composite.is_none())
               c = record_arg<CompositeProviderRecord>(composite, who, "composite", "CompositeProvider or None").cpp;
             py::tuple frozen_facets = tuple_arg(facets, who, "facets");
             for (std::size_t i = 0; i < frozen_facets.size(); ++i)
               if (!py::isinstance(frozen_facets[i], facet_base()))
                 throw TypeError(fmt::format("CarrierDefinition: facets[{}] must be a CarrierFacet instance, got {}", i,
                                             repr_of(frozen_facets[i])));
             // Facets stay Python objects, keyed by exact Python class (see the top of this file).
             ext::CarrierDefinition cpp(s.cpp, std::move(k), std::move(cpp_routes), std::move(c));
             for (std::size_t i = 0; i < frozen_facets.size(); ++i)
               for (std::size_t j = 0; j < i; ++j)
                 if (py::type::handle_of(frozen_facets[i]).ptr() == py::type::handle_of(frozen_facets[j]).ptr())
                   throw ValueError(fmt::format("CarrierDefinition: facets[{}] and facets[{}] are both of class {}", j,
                                                i, repr_of(py::type::handle_of(frozen_facets[i]))));
             auto o = [](py::handle h) { return py::reinterpret_borrow<py::object>(h); };
             return CarrierDefinitionRecord{std::move(cpp), o(storage), o(kernels), routes, o(composite),
                                            frozen_facets};
           }),
           py::arg("storage"), py::arg("kernels") = py::none(), py::arg("transfers") = py::tuple(),
           py::arg("composite") = py::none(), py::arg("facets") = py::tuple())
      .def_property_readonly("storage", [](const CarrierDefinitionRecord& r) { return r.storage; },
                             "The StorageProvider.")
      .def_property_readonly("kernels", [](const CarrierDefinitionRecord& r) { return r.kernels; },
                             "The KernelProvider, or None (storage-only, or dependent).")
      .def_property_readonly("transfers", [](const CarrierDefinitionRecord& r) { return r.transfers; },
                             "The TransferRoutes (a tuple).")
      .def_property_readonly("composite", [](const CarrierDefinitionRecord& r) { return r.composite; },
                             "The CompositeProvider, or None (independent).")
      .def_property_readonly("facets", [](const CarrierDefinitionRecord& r) { return r.facets; },
                             "The CarrierFacet instances (a tuple).");

  // R2.3
  m.def("register_carrier_definition", [](py::handle carrier_class, py::handle definition) {
          const char* who = "register_carrier_definition";
          if (!PyType_Check(carrier_class.ptr()))
            throw TypeError(fmt::format("{}: carrier_class must be a Carrier class, got {}", who, repr_of(carrier_class)));
          const auto& d = record_arg<CarrierDefinitionRecord>(definition, who, "definition", "CarrierDefinition");
          const CarrierClass cls = carrier_class_arg(carrier_class, "register_carrier_definition: carrier_class");
          if (is_python_carrier_class(carrier_class) && !cls.traits().storage_provider)
            throw TypeError(fmt::format("{}({}): the class defines the storage hooks of a definition-free carrier "
                                        "(supports_storage_dtype, _storage_size, ...); a definition-backed class's "
                                        "storage is its StorageProvider, so it defines none (docs/python.md)",
                                        who, cls.name()));
          // Recorded first (facet lookups need an instance, which needs the
          // C++ definition), withdrawn when C++ refuses.
          auto& definitions = python_definitions();
          const bool recorded = definitions.emplace(cls, py::reinterpret_borrow<py::object>(definition)).second;
          try {
            ext::CarrierDefinition copy = d.cpp;
            py::gil_scoped_release nogil;
            ext::register_carrier_definition(cls, std::move(copy));
          } catch (...) {
            if (recorded) definitions.erase(cls);
            throw;
          }
        }, py::arg("carrier_class"), py::arg("definition"),
        "Registers `definition` for exactly `carrier_class` (carrier-extension R2.3, R7.1), once and all or "
        "nothing. TypeError for a non-Carrier class, the roots, a shipped class, a definition-free class (one "
        "that defines storage hooks, holds a capability declaration or was observed), a class that already holds "
        "a definition, a route not starting at the class, an independent class with a composite, or a dependent "
        "class with kernels or without a composite.");
}

}  // namespace

void bind_extension_providers(py::module_& m) {
  // In dependency order: a CarrierDefinition holds the providers and facets.
  bind_kernel_providers(m);
  bind_transfer_providers(m);
  bind_composite_provider(m);
  bind_facets(m);
  bind_carrier_definitions(m);
}

}  // namespace strideweave::python
