// Evictable and EvictableOperation (carrier-composition.md Part A;
// <strideweave/carriers/evictable.h>; docs/evictable.md), and execute_lowered
// (<strideweave/call.h>), the lowering a Python composite's dispatch hook
// uses.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

// An attribute of a Python DispatchedCall back in C++ form.
AttributeValue attribute_arg(py::handle value, const std::string& name) {
  if (PyBool_Check(value.ptr())) return value.ptr() == Py_True;
  if (PyLong_Check(value.ptr())) return value.cast<std::int64_t>();
  if (PyFloat_Check(value.ptr())) return value.cast<double>();
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::vector<std::int64_t> out;
    for (py::handle v : value) {
      if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
        throw TypeError(fmt::format("execute_lowered: attribute '{}' holds a non-integer list entry", name));
      out.push_back(v.cast<std::int64_t>());
    }
    return out;
  }
  throw TypeError(fmt::format("execute_lowered: attribute '{}' has an unsupported value {}", name,
                              py::repr(value).cast<std::string>()));
}

// Operand i of a call: a Tensor in a tensor slot, else a number as the
// plan's convert_to dtype of that slot.
KernelOperand kernel_operand_arg(py::handle value, const OperationPlan& plan, std::size_t i, const char* what) {
  if (i < plan.operands().size() && plan.operands()[i].role() == OperandRole::WEAK_SCALAR && !py::isinstance<Tensor>(value))
    return value_arg(value, plan.operands()[i].convert_to(), what);
  return tensor_arg(value, what);
}

Tensor execute_lowered_object(const PyDispatchedCall& call, py::handle operands, py::handle operation) {
  if (!call.invocation.is_none())
    throw TypeError(fmt::format("execute_lowered: '{}' is a user-defined operation; it lowers through its definition "
                                "(call.invocation.definition called with the lowered operands)",
                                call.operation));
  std::vector<KernelOperand> original;
  for (std::size_t i = 0; i < call.operands.size(); ++i)
    original.push_back(kernel_operand_arg(call.operands[i], call.plan, i, "execute_lowered: call.operands"));
  if (PyUnicode_Check(operands.ptr()) || !py::isinstance<py::iterable>(operands))
    throw TypeError(fmt::format("execute_lowered: operands must be a sequence, got {}",
                                py::repr(operands).cast<std::string>()));
  std::vector<KernelOperand> lowered;
  std::size_t i = 0;
  for (py::handle v : operands) lowered.push_back(kernel_operand_arg(v, call.plan, i++, "execute_lowered: operands"));
  Attributes attributes;
  for (const auto& [name, value] : call.attributes) {
    const std::string key = py::str(name);
    attributes.set(key, attribute_arg(value, key));
  }
  std::vector<Tensor> outputs;
  for (py::handle o : call.outputs) outputs.push_back(tensor_arg(o, "execute_lowered: call.outputs"));
  const std::shared_ptr<Operation> tier_operation =
      operation.is_none() ? nullptr : operation_arg(operation, "execute_lowered: operation");
  py::gil_scoped_release nogil;
  const DispatchedCall c{call.operation, call.plan, original, attributes, outputs, nullptr};
  return execute_lowered(c, lowered, tier_operation);
}

}  // namespace

void bind_evictable(py::module_& m) {
  py::class_<Evictable, DependentCarrier, std::shared_ptr<Evictable>>(m, "Evictable", py::is_final(), R"doc(
Evictable(primary, secondary): a two-tier storage hierarchy
(carrier-composition.md Part A; docs/evictable.md). It takes exclusive
ownership of both tiers (retained aliases stay readable but cannot be
mutated, moved or released), reads, writes and computes on the primary while
promoted, and moves every slot into the secondary with evict() (back with
promote()). Operations lower onto the promoted primary; results and gradients
are new hierarchies of the same tier classes. Construction checks, in order:
a non-Carrier or a BlockDeviceCarrier tier -> TypeError; the same object
twice -> ValueError; a released, then an owned tier -> RuntimeError; dtypes
that differ -> TypeError; an immutable secondary -> RuntimeError; an empty
primary -> ValueError; no move between the tier classes -> NotImplementedError.
Closed to subclassing.)doc")
      .def(py::init([](py::handle primary, py::handle secondary) {
             std::shared_ptr<Carrier> p = carrier_arg(primary, "Evictable: primary");
             std::shared_ptr<Carrier> s = carrier_arg(secondary, "Evictable: secondary");
             py::gil_scoped_release nogil;
             return Evictable::create(p, s);
           }),
           py::arg("primary"), py::arg("secondary"))
      .def_property_readonly("primary", [](const Evictable& e) { return carrier_object(*e.primary()); },
                             "The current primary tier (released while evicted; promote() may replace it).")
      .def_property_readonly("secondary", [](const Evictable& e) { return carrier_object(*e.secondary()); },
                             "The current secondary tier (evict() may replace it when it is too small).")
      .def("is_evicted", &Evictable::is_evicted, "Whether the values live in the secondary tier.")
      .def("evict", [](Evictable& e) {
             py::gil_scoped_release nogil;
             e.evict();
           },
           "Moves every slot into the secondary tier (no autograd node; failure-atomic; a no-op when evicted).")
      .def("promote", [](Evictable& e) {
             py::gil_scoped_release nogil;
             e.promote();
           },
           "Moves every slot back into primary-class storage (no autograd node; failure-atomic; a no-op when "
           "promoted).");

  py::class_<EvictableOperation, Operation, std::shared_ptr<EvictableOperation>>(m, "EvictableOperation",
                                                                                  py::is_final(), R"doc(
EvictableOperation(primary_operation): what an Evictable's dispatch_op returns
(carrier-composition A14): a fresh single-use Operation around the promoted
primary's own Operation for the same name. Its forward lowers the call onto
the primaries and publishes a new hierarchy; it is the call's one node.)doc")
      .def(py::init([](py::handle primary_operation) {
             return std::make_shared<EvictableOperation>(
                 operation_arg(primary_operation, "EvictableOperation: primary_operation"));
           }),
           py::arg("primary_operation"))
      .def_property_readonly("primary_operation",
                             [](const EvictableOperation& o) -> py::object { return py::cast(o.primary_operation()); },
                             "The primary carrier's Operation for the same name.");

  m.def("execute_lowered", &execute_lowered_object, py::arg("call"), py::arg("operands"), py::kw_only(),
        py::arg("operation") = py::none(), R"doc(
execute_lowered(call, operands, *, operation=None): a composite's lowering
(docs/evictable.md).
The built-in call `call` (the DispatchedCall a dispatch hook's _forward
received) run again with `operands` in its operands' places (the same shapes
and dtypes on the composite's tier; numbers for scalar slots), through the
gate and executor of their carrier class, recording nothing. Returns the fresh
compact result on that class. `operation`: the tier's own Operation for the
call (its dispatch_op(call.operation)), which a dispatch-hook tier class then
runs instead of asking its hook again. A user-defined call -> TypeError; another
operand count or shape -> ValueError; another kind or dtype, or two carrier
classes -> TypeError; a plan the class does not execute ->
UnsupportedOperationPlan.)doc");
}

}  // namespace strideweave::python
