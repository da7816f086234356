// strideweave's errors as Python's built-ins (docs/python.md, "Errors").
//
// Every strideweave::Error is raised as the Python built-in whose name its
// type_name() gives (cpp-mapping.md, "Errors"): the C++ hierarchy mirrors
// Python's (IndexError is a LookupError, NotImplementedError a
// RuntimeError), so the most derived class is matched first.
// strideweave::OSError becomes Python's OSError with errno, filename and an
// `offset` attribute. UnsupportedOperationPlan and UnsupportedOpDType are the
// Python classes of
// strideweave._errors, with their structured fields as attributes.
#include "bindings.h"

namespace strideweave::python {
namespace {

// The Python classes of strideweave._errors (imported once, kept for the
// life of the process: the translator runs until the interpreter ends).
struct ErrorClasses {
  py::object unsupported_operation_plan;
  py::object unsupported_op_dtype;
  py::object provider_contract_error;
};
ErrorClasses* error_classes = nullptr;

py::object optional_plan(const std::optional<OperationPlan>& plan) {
  return plan ? py::cast(*plan) : py::none();
}

void raise(const py::object& cls, const py::object& instance) { PyErr_SetObject(cls.ptr(), instance.ptr()); }

void translate(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const UnsupportedOpDType& e) {
    py::object cls = error_classes->unsupported_op_dtype;
    py::object axis = e.axis() ? to_py(*e.axis()) : py::none();
    raise(cls, cls(e.message(), optional_plan(e.plan()), py::arg("backend") = e.backend(),
                   py::arg("operation") = e.operation(), py::arg("dtype") = dtype_object(e.dtype()),
                   py::arg("axis") = axis));
  } catch (const UnsupportedOperationPlan& e) {
    py::object cls = error_classes->unsupported_operation_plan;
    raise(cls, cls(e.message(), optional_plan(e.plan())));
  } catch (const ProviderContractError& e) {
    py::object cls = error_classes->provider_contract_error;
    raise(cls, cls(e.message(), e.field()));
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const RuntimeError& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const KeyError& e) {
    PyErr_SetString(PyExc_KeyError, e.what());
  } catch (const LookupError& e) {
    PyErr_SetString(PyExc_LookupError, e.what());
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const OverflowError& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const AttributeError& e) {
    PyErr_SetString(PyExc_AttributeError, e.what());
  } catch (const BufferError& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  } catch (const MemoryError& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const OSError& e) {
    // OSError(errno, message, filename) is the subclass its errno names
    // (FileExistsError for EEXIST, ...); `offset` is the byte offset or None.
    py::object os_error = py::handle(PyExc_OSError)(e.error_number(), e.message(), e.filename());
    os_error.attr("offset") = e.offset() ? py::cast(*e.offset()) : py::none();
    raise(py::reinterpret_borrow<py::object>(py::type::handle_of(os_error)), os_error);
  } catch (const Error& e) {
    // A class outside the list above would be a new C++ error type without
    // a Python mapping: say so rather than guess a built-in.
    PyErr_SetString(PyExc_RuntimeError,
                    (std::string("strideweave: unmapped error type ") + e.type_name() + ": " + e.what()).c_str());
  }
}

}  // namespace

void bind_errors(py::module_& m) {
  py::module_ errors = py::module_::import("strideweave._errors");
  error_classes = new ErrorClasses{errors.attr("UnsupportedOperationPlan"), errors.attr("UnsupportedOpDType"),
                                   errors.attr("ProviderContractError")};
  m.attr("UnsupportedOperationPlan") = error_classes->unsupported_operation_plan;
  m.attr("UnsupportedOpDType") = error_classes->unsupported_op_dtype;
  m.attr("ProviderContractError") = error_classes->provider_contract_error;
  py::register_exception_translator(&translate);
}

}  // namespace strideweave::python
