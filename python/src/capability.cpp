// Backend capabilities (backend-capabilities.md) and the descriptor note's
// execution axes: the immutable capability records and the class-level
// queries. A carrier class argument is a Python class: a shipped class
// (Generic, CPU), the roots Carrier and DependentCarrier, or a Python
// subclass, which is its own exact class (carriers.cpp).
#include "bindings.h"

#include <fmt/format.h>

#include <algorithm>

namespace strideweave::python {
namespace {

std::string str_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr()))
    throw TypeError(fmt::format("{}: expected a str, got {}", what, py::repr(value).cast<std::string>()));
  return value.cast<std::string>();
}

// operands "SHALL be a non-empty tuple of OperandCapability values"
// (backend-capabilities.md): a tuple (or a tuple subclass) and nothing else;
// a list or another iterable is a TypeError (docs/capabilities.md).
std::vector<OperandCapability> operand_capabilities_arg(py::handle operands) {
  if (!PyTuple_Check(operands.ptr()))
    throw TypeError(fmt::format("OperationCapability: operands must be a tuple of OperandCapability, got {}",
                                py::repr(operands).cast<std::string>()));
  std::vector<OperandCapability> out;
  std::size_t i = 0;
  for (py::handle o : operands) {
    if (!py::isinstance<OperandCapability>(o))
      throw TypeError(fmt::format("OperationCapability: operand {} is not an OperandCapability ({})", i,
                                  py::repr(o).cast<std::string>()));
    out.push_back(bound_value<OperandCapability>(o, "OperationCapability: operands"));
    ++i;
  }
  return out;
}

std::vector<OperationCapability> capabilities_arg(py::handle capabilities, const char* what) {
  if (PyUnicode_Check(capabilities.ptr()) || !py::isinstance<py::iterable>(capabilities))
    throw TypeError(fmt::format("{}: capabilities must be an iterable of OperationCapability, got {}", what,
                                py::repr(capabilities).cast<std::string>()));
  std::vector<OperationCapability> out;
  std::size_t i = 0;
  for (py::handle c : capabilities) {
    if (!py::isinstance<OperationCapability>(c))
      throw TypeError(fmt::format("{}: entry {} is not an OperationCapability ({})", what, i,
                                  py::repr(c).cast<std::string>()));
    out.push_back(bound_value<OperationCapability>(c, what));
    ++i;
  }
  return out;
}

py::tuple capabilities_object(const std::vector<OperationCapability>& caps) {
  py::list out;
  for (const OperationCapability& c : caps) out.append(py::cast(c));
  return py::tuple(out);
}

std::optional<std::string_view> optional_operation(py::handle operation, const char* what, std::string& storage) {
  if (operation.is_none()) return std::nullopt;
  storage = str_arg(operation, what);
  return storage;
}

std::string operand_capability_repr(const OperandCapability& c) {
  return fmt::format("OperandCapability(role={}, dtype={}, convert_to={})",
                     py::repr(to_py(c.role())).cast<std::string>(),
                     py::repr(dtype_object(c.dtype())).cast<std::string>(),
                     py::repr(dtype_object(c.convert_to())).cast<std::string>());
}

}  // namespace

void bind_capability(py::module_& m) {
  py::class_<ExecutionAxes>(m, "ExecutionAxes", R"doc(
The support levels a carrier class offers for one of its capabilities on the
descriptor note's five execution axes (beyond backend-capabilities.md;
docs/capabilities.md). Kept beside the capability, not inside it: read them
with execution_axes(carrier_class, capability) or
carrier.execution_axes(capability). Immutable and hashable.)doc")
      .def(py::init([](py::handle owned_result, py::handle borrowed_input, py::handle caller_output,
                       py::handle strided_output, py::handle accumulation) {
             ExecutionAxes a;
             a.owned_result = from_py<SupportLevel>(owned_result, "ExecutionAxes: owned_result");
             a.borrowed_input = from_py<SupportLevel>(borrowed_input, "ExecutionAxes: borrowed_input");
             a.caller_output = from_py<SupportLevel>(caller_output, "ExecutionAxes: caller_output");
             a.strided_output = from_py<SupportLevel>(strided_output, "ExecutionAxes: strided_output");
             a.accumulation = from_py<SupportLevel>(accumulation, "ExecutionAxes: accumulation");
             return a;
           }),
           py::kw_only(), py::arg("owned_result") = to_py(ExecutionAxes{}.owned_result),
           py::arg("borrowed_input") = to_py(ExecutionAxes{}.borrowed_input),
           py::arg("caller_output") = to_py(ExecutionAxes{}.caller_output),
           py::arg("strided_output") = to_py(ExecutionAxes{}.strided_output),
           py::arg("accumulation") = to_py(ExecutionAxes{}.accumulation))
      .def_property_readonly("owned_result", [](const ExecutionAxes& a) { return to_py(a.owned_result); })
      .def_property_readonly("borrowed_input", [](const ExecutionAxes& a) { return to_py(a.borrowed_input); })
      .def_property_readonly("caller_output", [](const ExecutionAxes& a) { return to_py(a.caller_output); })
      .def_property_readonly("strided_output", [](const ExecutionAxes& a) { return to_py(a.strided_output); })
      .def_property_readonly("accumulation", [](const ExecutionAxes& a) { return to_py(a.accumulation); })
      .def("level", [](const ExecutionAxes& a, py::handle axis) {
        return to_py(a.level(from_py<ExecutionAxis>(axis, "ExecutionAxes.level")));
      }, py::arg("axis"), "The SupportLevel on one ExecutionAxis.")
      .def("__eq__", [](const ExecutionAxes& a, py::handle b) {
        return py::isinstance<ExecutionAxes>(b) && a == b.cast<const ExecutionAxes&>();
      })
      .def("__hash__", [](const ExecutionAxes& a) {
        std::size_t h = 0;
        for (ExecutionAxis x : all_execution_axes()) h = h * 3 + static_cast<std::size_t>(a.level(x));
        return h;
      })
      .def("__repr__", [](const ExecutionAxes& a) {
        std::string out = "ExecutionAxes(";
        bool first = true;
        for (ExecutionAxis x : all_execution_axes()) {
          out += fmt::format("{}{}={}", first ? "" : ", ", name_of(x), py::repr(to_py(a.level(x))).cast<std::string>());
          first = false;
        }
        return out + ")";
      });

  py::class_<OperandCapability>(m, "OperandCapability", R"doc(
OperandCapability(role, dtype, convert_to): one operand position of a
capability. role an OperandRole; dtype a SimpleDType for a tensor role, None
for a weak scalar; convert_to a SimpleDType. Otherwise TypeError. Immutable
and hashable.)doc")
      .def(py::init([](py::handle role, py::handle dtype, py::handle convert_to) {
             return OperandCapability(from_py<OperandRole>(role, "OperandCapability: role"),
                                      optional_dtype_arg(dtype, "OperandCapability: dtype"),
                                      optional_dtype_arg(convert_to, "OperandCapability: convert_to"));
           }),
           py::arg("role"), py::arg("dtype"), py::arg("convert_to"))
      .def_static("from_plan", [](const OperandPlan& p) { return OperandCapability::from_plan(p); }, py::arg("plan"))
      .def_property_readonly("role", [](const OperandCapability& c) { return to_py(c.role()); })
      .def_property_readonly("dtype", [](const OperandCapability& c) { return dtype_object(c.dtype()); })
      .def_property_readonly("convert_to", [](const OperandCapability& c) { return dtype_object(c.convert_to()); })
      .def("__eq__", [](const OperandCapability& a, py::handle b) {
        return py::isinstance<OperandCapability>(b) && a == b.cast<const OperandCapability&>();
      })
      .def("__hash__", &OperandCapability::hash)
      .def("__repr__", &operand_capability_repr);

  py::class_<OperationCapability>(m, "OperationCapability", R"doc(
OperationCapability(operation, operands, compute, accumulation,
accumulator_dtype, output): an immutable, executor-free record asserting that
a backend executes exactly one resolved plan shape
(backend-capabilities.md). operation a str; operands a non-empty tuple of
OperandCapability (a list or another iterable -> TypeError; empty ->
ValueError); compute an Arithmetic; accumulation an Accumulation or None;
accumulator_dtype a SimpleDType or None; output a SimpleDType. Another type
-> TypeError. Equal to, and hashing like, another capability exactly when
the six fields agree. A class's execution axes for it live beside it
(execution_axes).)doc")
      .def(py::init([](py::handle operation, py::handle operands, py::handle compute, py::handle accumulation,
                       py::handle accumulator_dtype, py::handle output) {
             std::optional<Accumulation> acc;
             if (!accumulation.is_none()) acc = from_py<Accumulation>(accumulation, "OperationCapability: accumulation");
             const std::string op = str_arg(operation, "OperationCapability: operation");
             std::vector<OperandCapability> ops = operand_capabilities_arg(operands);
             const Arithmetic arith = from_py<Arithmetic>(compute, "OperationCapability: compute");
             const DType* acc_dtype = optional_dtype_arg(accumulator_dtype, "OperationCapability: accumulator_dtype");
             const DType* out = optional_dtype_arg(output, "OperationCapability: output");
             return OperationCapability(op, std::move(ops), arith, acc, acc_dtype, out);
           }),
           py::arg("operation"), py::arg("operands"), py::arg("compute"), py::arg("accumulation"),
           py::arg("accumulator_dtype"), py::arg("output"))
      .def_static("from_plan", [](py::handle plan) {
        return OperationCapability::from_plan(plan_arg(plan, "OperationCapability.from_plan"));
      }, py::arg("plan"), "The capability mirroring `plan` exactly.")
      .def_property_readonly("operation", &OperationCapability::operation)
      .def_property_readonly("operands", [](const OperationCapability& c) {
        py::list out;
        for (const OperandCapability& o : c.operands()) out.append(py::cast(o));
        return py::tuple(out);
      })
      .def_property_readonly("compute", [](const OperationCapability& c) { return to_py(c.compute()); })
      .def_property_readonly("accumulation", [](const OperationCapability& c) {
        return c.accumulation() ? to_py(*c.accumulation()) : py::none();
      })
      .def_property_readonly("accumulator_dtype", [](const OperationCapability& c) { return dtype_object(c.accumulator_dtype()); })
      .def_property_readonly("output", [](const OperationCapability& c) { return dtype_object(c.output()); })
      .def("matches", [](const OperationCapability& c, py::handle plan) {
        return c.matches(plan_arg(plan, "OperationCapability.matches"));
      }, py::arg("plan"),
      "True only when every plan field agrees exactly; never promotes or substitutes a nearby shape.")
      .def("to_plan", &OperationCapability::to_plan, "The plan this capability mirrors.")
      .def("__lt__", [](const OperationCapability& a, const OperationCapability& b) { return a < b; },
           "The deterministic order by stable field names.")
      .def("__eq__", [](const OperationCapability& a, py::handle b) {
        return py::isinstance<OperationCapability>(b) && a == b.cast<const OperationCapability&>();
      })
      .def("__hash__", &OperationCapability::hash)
      .def("__repr__", [](const OperationCapability& c) {
        std::string ops;
        for (const OperandCapability& o : c.operands()) ops += (ops.empty() ? "" : ", ") + operand_capability_repr(o);
        return fmt::format("OperationCapability(operation='{}', operands=({}{}), compute={}, accumulation={}, "
                           "accumulator_dtype={}, output={})",
                           c.operation(), ops, c.operands().size() == 1 ? "," : "",
                           py::repr(to_py(c.compute())).cast<std::string>(),
                           c.accumulation() ? py::repr(to_py(*c.accumulation())).cast<std::string>() : "None",
                           py::repr(dtype_object(c.accumulator_dtype())).cast<std::string>(),
                           py::repr(dtype_object(c.output())).cast<std::string>());
      });

  m.def("register_operation_capabilities", [](py::handle carrier_class, py::handle capabilities,
                                               py::handle execution_axes_by_capability) {
        const char* what = "register_operation_capabilities";
        const CarrierClass cls = carrier_class_arg(carrier_class, what);
        const std::vector<OperationCapability> caps = capabilities_arg(capabilities, what);
        std::vector<ExecutionAxes> axes;
        if (!execution_axes_by_capability.is_none()) {
          if (!PyDict_Check(execution_axes_by_capability.ptr()))
            throw TypeError(fmt::format("{}: execution_axes must be a dict from OperationCapability to "
                                        "ExecutionAxes, got {}",
                                        what, py::repr(execution_axes_by_capability).cast<std::string>()));
          axes.resize(caps.size());
          for (auto item : py::reinterpret_borrow<py::dict>(execution_axes_by_capability)) {
            if (!py::isinstance<OperationCapability>(item.first) || !py::isinstance<ExecutionAxes>(item.second))
              throw TypeError(fmt::format("{}: execution_axes maps an OperationCapability to an ExecutionAxes, got "
                                          "{}: {}",
                                          what, py::repr(item.first).cast<std::string>(),
                                          py::repr(item.second).cast<std::string>()));
            const auto& key = item.first.cast<const OperationCapability&>();
            const auto at = std::find(caps.begin(), caps.end(), key);
            if (at == caps.end())
              throw ValueError(fmt::format("{}: execution_axes names {}, which is not among the declared "
                                           "capabilities",
                                           what, key.to_plan().to_string()));
            axes[static_cast<std::size_t>(at - caps.begin())] = item.second.cast<ExecutionAxes>();
          }
        }
        py::gil_scoped_release nogil;
        register_operation_capabilities(cls, caps, axes);
      }, py::arg("carrier_class"), py::arg("capabilities"), py::kw_only(), py::arg("execution_axes") = py::none(),
      R"doc(
Declares the complete capability set of an eligible definition-free custom
independent Carrier class, once (backend-capabilities.md). TypeError for a
non-class, the Carrier root, an unrelated class, a DependentCarrier class, a
shipped class, an already declared or observed class, or a non-capability
entry; ValueError for a duplicate exact shape (the same six fields). All or
nothing. execution_axes (beyond the specification): a dict from declared
capabilities to the ExecutionAxes the class keeps beside them (the others get
ExecutionAxes()); a key that is not declared -> ValueError.)doc");
  m.def("execution_axes", [](py::handle carrier_class, py::handle capability) {
        const CarrierClass cls = carrier_class_arg(carrier_class, "execution_axes");
        if (!py::isinstance<OperationCapability>(capability))
          throw TypeError(fmt::format("execution_axes: capability must be an OperationCapability, got {}",
                                      py::repr(capability).cast<std::string>()));
        const auto& c = capability.cast<const OperationCapability&>();
        py::gil_scoped_release nogil;
        return execution_axes(cls, c);
      }, py::arg("carrier_class"), py::arg("capability"), R"doc(
The ExecutionAxes the exact class keeps beside one of its capabilities
(backend-capability-descriptor.md; docs/capabilities.md, "Execution axes").
UnsupportedOperationPlan when the class does not hold the capability (the
sentence unsupported_plan_reason gives for its plan); observes the class.)doc");
  m.def("capabilities_for_carrier_class", [](py::handle carrier_class, py::handle operation) {
        const CarrierClass cls = carrier_class_arg(carrier_class, "capabilities_for_carrier_class");
        std::string op;
        return capabilities_object(
            capabilities_for_carrier_class(cls, optional_operation(operation, "capabilities_for_carrier_class", op)));
      }, py::arg("carrier_class"), py::arg("operation") = py::none(),
      "The exact class's capabilities in deterministic order, optionally of one operation (observes the class).");
  m.def("matching_capability", [](py::handle carrier_class, py::handle plan) -> py::object {
        const CarrierClass cls = carrier_class_arg(carrier_class, "matching_capability");
        const std::optional<OperationCapability> c = matching_capability(cls, plan_arg(plan, "matching_capability"));
        return c ? py::cast(*c) : py::none();
      }, py::arg("carrier_class"), py::arg("plan"), "The single exact match, or None.");
  m.def("supports_operation_plan", [](py::handle carrier_class, py::handle plan) {
        const CarrierClass cls = carrier_class_arg(carrier_class, "supports_operation_plan");
        return supports_operation_plan(cls, plan_arg(plan, "supports_operation_plan"));
      }, py::arg("carrier_class"), py::arg("plan"),
      "Whether exactly one capability of the exact class matches `plan` exactly (observes the class).");
  m.def("unsupported_plan_reason", [](py::handle carrier_class, py::handle plan) {
        const CarrierClass cls = carrier_class_arg(carrier_class, "unsupported_plan_reason");
        return unsupported_plan_reason(cls, plan_arg(plan, "unsupported_plan_reason"));
      }, py::arg("carrier_class"), py::arg("plan"),
      "None when supported; otherwise the stable sentence naming no capability for the operation, or no match for "
      "this plan.");
  m.def("require_capability", [](py::handle carrier_class, py::handle plan_or_operation, py::handle dtype, py::handle axis) {
        const CarrierClass cls = carrier_class_arg(carrier_class, "require_capability");
        std::optional<ExecutionAxis> ax;
        if (!axis.is_none()) ax = from_py<ExecutionAxis>(axis, "require_capability: axis");
        if (PyUnicode_Check(plan_or_operation.ptr()))
          return require_capability(cls, plan_or_operation.cast<std::string>(),
                                    simple_dtype_arg(dtype, "require_capability: dtype"), ax);
        if (!dtype.is_none())
          throw TypeError("require_capability: a dtype goes with an operation name, not with a plan");
        const OperationPlan& plan = plan_arg(plan_or_operation, "require_capability");
        return ax ? require_capability(cls, plan, *ax) : require_capability(cls, plan);
      }, py::arg("carrier_class"), py::arg("plan"), py::arg("dtype") = py::none(), py::kw_only(),
      py::arg("axis") = py::none(), R"doc(
require_capability(carrier_class, plan, *, axis=None): the exact match, or
UnsupportedOperationPlan with the reason unsupported_plan_reason gives (an
UnsupportedOpDType when `axis` is Unsupported in the entry).
require_capability(carrier_class, operation, dtype, *, axis=None): the
descriptor note's query by (operation, representative input dtype); raises
UnsupportedOpDType with backend, operation, dtype and axis attributes.)doc");
  m.def("capability", [](py::handle carrier_class, py::handle operation, py::handle dtype) -> py::object {
        const CarrierClass cls = carrier_class_arg(carrier_class, "capability");
        const std::optional<OperationCapability> c =
            capability(cls, str_arg(operation, "capability"), simple_dtype_arg(dtype, "capability: dtype"));
        return c ? py::cast(*c) : py::none();
      }, py::arg("carrier_class"), py::arg("operation"), py::arg("dtype"),
      "The descriptor note's entry for (operation, representative input dtype), or None.");
  m.def("fallback_copy_count", [](py::handle carrier_class, py::handle axis) {
        return fallback_copy_count(carrier_class_arg(carrier_class, "fallback_copy_count"),
                                   from_py<ExecutionAxis>(axis, "fallback_copy_count"));
      }, py::arg("carrier_class"), py::arg("axis"),
      "How many times the framework's FallbackCopy path ran for the class on the axis (docs/capabilities.md).");
  m.def("render_capability_table", [](py::handle carrier_class) {
        return render_capability_table(carrier_class_arg(carrier_class, "render_capability_table"));
      }, py::arg("carrier_class"), "The markdown table of the class's capabilities (docs/capabilities.md).");
}

}  // namespace strideweave::python
