// Reverse-mode autograd (core-concepts.md section 6; docs/autograd.md):
// grad mode, the per-tensor surface, graph nodes and the functional grad().
//
// Grad mode is the C++ thread-local flag (a Python thread is one OS thread).
// The context managers no_grad() and set_grad_enabled() are Python
// (strideweave/_grad_mode.py) over _set_grad_enabled. backward() and grad()
// run their VJPs with the GIL released.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

py::object optional_tensor_object(const std::optional<Tensor>& t) { return t ? tensor_object(Tensor(*t)) : py::none(); }

std::optional<Tensor> optional_tensor_arg(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return tensor_arg(value, what);
}

std::vector<Tensor> tensors_arg(py::handle values, const char* what) {
  std::vector<Tensor> out;
  if (is_tensor(values)) {
    out.push_back(tensor_arg(values, what));
    return out;
  }
  if (PyUnicode_Check(values.ptr()) || !py::isinstance<py::iterable>(values))
    throw TypeError(fmt::format("{}: expected a Tensor or an iterable of Tensors, got {}", what,
                                py::repr(values).cast<std::string>()));
  for (py::handle v : values) out.push_back(tensor_arg(v, what));
  return out;
}

py::object attribute_object(const AttributeValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

PyDispatchedCall dispatched_call_object(const DispatchedCall& call) {
  PyDispatchedCall out{call.operation, call.plan, py::tuple(call.operands.size()), py::dict(),
                       py::tuple(call.outputs.size()), py::none()};
  for (std::size_t i = 0; i < call.operands.size(); ++i) {
    if (const Tensor* t = std::get_if<Tensor>(&call.operands[i])) out.operands[i] = tensor_object(Tensor(*t));
    else out.operands[i] = value_object(std::get<Value>(call.operands[i]));
  }
  for (const auto& [name, value] : call.attributes.values()) out.attributes[py::str(name)] = attribute_object(value);
  for (std::size_t i = 0; i < call.outputs.size(); ++i) out.outputs[i] = tensor_object(Tensor(call.outputs[i]));
  if (call.invocation) out.invocation = resolved_invocation_object(*call.invocation);
  return out;
}

// The C++ host of a Python subclass of Operation: _forward forwards to the
// subclass's method with a DispatchedCall (called with the GIL released).
class PyOperation final : public Operation {
 public:
  using Operation::Operation;

 protected:
  void _forward(const DispatchedCall& call) override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Operation*>(this), "_forward");
    if (!f) return Operation::_forward(call);
    try {
      f(dispatched_call_object(call));
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_NotImplementedError)) throw NotImplementedError(e.what());
      throw;
    }
  }
};

// The Python object of an Operation (None for null): a Python subclass's own
// instance while it lives, else the bound object.
py::object operation_object(const std::shared_ptr<Operation>& op) {
  if (!op) return py::none();
  return py::cast(op);
}

py::tuple gradients_object(const std::vector<std::optional<Tensor>>& grads) {
  py::list out;
  for (const std::optional<Tensor>& g : grads) out.append(optional_tensor_object(g));
  return py::tuple(out);
}

}  // namespace

std::shared_ptr<Operation> operation_arg(py::handle value, const char* what) {
  if (!py::isinstance<Operation>(value))
    throw TypeError(fmt::format("{}: expected an Operation, got {}", what, py::repr(value).cast<std::string>()));
  auto held = value.cast<std::shared_ptr<Operation>>();
  if (py::type::handle_of(value).ptr() == py::type::of<Operation>().ptr()) return held;
  // A Python subclass: the handle C++ keeps also keeps the Python object
  // (its _forward and its attributes) alive.
  std::shared_ptr<SharedPyObject> keep = share(value);
  return std::shared_ptr<Operation>(std::move(keep), held.get());
}

void bind_autograd(py::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled, "Whether this thread records operations for backward.");
  m.def("_set_grad_enabled", [](py::handle enabled) {
        if (!PyBool_Check(enabled.ptr())) throw TypeError("set_grad_enabled: enabled must be a bool");
        set_grad_enabled(enabled.ptr() == Py_True);
      }, py::arg("enabled"));

  // The call a dispatch hook's Operation computes, as Python sees it in
  // _forward(call): a snapshot of handles, valid after the call too.
  py::class_<PyDispatchedCall>(m, "DispatchedCall", R"doc(
What Operation._forward(call) receives on a custom definition-free carrier
class (carrier-extension R13.1; docs/extension.md): `operation` (the name),
`plan`, `operands` (a built-in's kernel operands: Tensors already aligned to
the result, weak scalars as numbers; a user-defined operation's operands in
schema order), `attributes` (a built-in's normalised options as a dict),
`outputs` (the fresh result storage to write; `output` is the first) and
`invocation` (a user-defined operation's ResolvedInvocation, else None).)doc")
      .def_readonly("operation", &PyDispatchedCall::operation)
      .def_property_readonly("plan", [](const PyDispatchedCall& c) { return c.plan; })
      .def_readonly("operands", &PyDispatchedCall::operands)
      .def_readonly("attributes", &PyDispatchedCall::attributes)
      .def_readonly("outputs", &PyDispatchedCall::outputs)
      .def_property_readonly("output", [](const PyDispatchedCall& c) { return c.outputs[0]; })
      .def_readonly("invocation", &PyDispatchedCall::invocation)
      .def("__repr__", [](const PyDispatchedCall& c) { return fmt::format("<DispatchedCall {}>", c.operation); });

  py::class_<Operation, PyOperation, std::shared_ptr<Operation>>(m, "Operation", R"doc(
An operation call (core-concepts 1.8 and 6): what carrier.dispatch_op(name)
returns, and the autograd node a recorded call attaches to its results (a
result's autograd_ctx is the Operation whose forward produced it). forward()
runs once. A recorded Operation saves every positional Tensor argument
(inputs()) with its version snapshot (input_versions()); backward(gradient)
returns one gradient or None per saved input. A custom definition-free carrier
class returns a subclass from its _dispatch_op hook whose _forward(call)
computes the call (docs/extension.md).)doc")
      .def(py::init<>())
      .def_property_readonly("_operation_name", [](const Operation& o) -> py::object {
        if (o._operation_name()) return py::str(*o._operation_name());
        return py::none();
      }, "The dispatch name (None before dispatch).")
      .def_property_readonly("_dispatch_carrier_class", [](const Operation& o) -> py::object {
        return o._dispatch_carrier_class() ? carrier_class_object(*o._dispatch_carrier_class()) : py::none();
      }, "The exact class of the dispatching carrier (None before dispatch).")
      .def_property_readonly("name", &Operation::name, "The dispatch name ('' before dispatch).")
      .def("forward", [](py::handle self, const py::args& args, const py::kwargs& kwargs) {
             return forward_object(operation_arg(self, "Operation.forward"), args, kwargs);
           },
           "forward(*inputs, options=None): runs the call once (RuntimeError on a second forward). options: an "
           "OperationExecutionOptions bound to this operation (ValueError for another's), a dict of the schema's "
           "options, or None. Returns a Tensor, or a tuple for several results.")
      .def("_forward", [](Operation&, py::handle) {
             throw NotImplementedError("Operation._forward: this operation supplies no computation; a custom "
                                       "carrier's dispatch hook returns a subclass that defines _forward(call)");
           }, py::arg("call"))
      .def("inputs", [](const Operation& o) {
        py::tuple out(o.inputs().size());
        for (std::size_t i = 0; i < o.inputs().size(); ++i) out[i] = tensor_object(Tensor(o.inputs()[i]));
        return out;
      }, "The saved positional Tensor arguments, in argument order (empty when nothing was recorded or after "
         "release).")
      .def("input_versions", [](const Operation& o) {
        const std::vector<VersionSnapshot> versions = o.input_versions();
        py::tuple out(versions.size());
        for (std::size_t i = 0; i < versions.size(); ++i) {
          const VersionSnapshot& snap = versions[i];
          py::tuple pairs(snap.size());
          for (std::size_t k = 0; k < snap.size(); ++k)
            pairs[k] = py::make_tuple(carrier_object(*snap[k].carrier), snap[k].version);
          out[i] = pairs;
        }
        return out;
      }, "One snapshot per saved input: a tuple of (carrier, version) pairs, each distinct carrier once.")
      .def_property_readonly("plan", [](const Operation& o) -> py::object {
        return o.plan() ? py::cast(*o.plan()) : py::none();
      }, "The central plan of the recorded call (None for a view or a move).")
      .def("is_released", &Operation::is_released, "A backward without retain_graph has freed its saved state.")
      .def_property_readonly("invocation", [](const Operation& o) -> py::object {
        return o.invocation() ? resolved_invocation_object(*o.invocation()) : py::none();
      }, "A definition call's ResolvedInvocation (None otherwise, and after release).")
      .def_property_readonly("outputs", [](const Operation& o) {
        py::tuple out(o.outputs().size());
        for (std::size_t i = 0; i < o.outputs().size(); ++i) out[i] = tensor_object(Tensor(o.outputs()[i]));
        return out;
      }, "The results, detached, in result order.")
      .def("backward", [](const Operation& o, py::handle gradient) {
             std::vector<std::optional<Tensor>> grads;
             if (is_tensor(gradient)) {
               const Tensor& g = tensor_arg(gradient, "Operation.backward");
               py::gil_scoped_release nogil;
               grads = o.backward(g);
             } else {
               if (!PyTuple_Check(gradient.ptr()) && !PyList_Check(gradient.ptr()))
                 throw TypeError("Operation.backward: gradient must be a Tensor, or a tuple with one Tensor or None "
                                 "per result");
               std::vector<std::optional<Tensor>> cotangents;
               for (py::handle c : gradient) {
                 if (c.is_none()) cotangents.emplace_back(std::nullopt);
                 else cotangents.emplace_back(tensor_arg(c, "Operation.backward"));
               }
               py::gil_scoped_release nogil;
               grads = o.backward(std::span<const std::optional<Tensor>>(cotangents));
             }
             return gradients_object(grads);
           }, py::arg("gradient"),
           "This call's backward alone: one gradient or None per saved input. `gradient` is a Tensor, or a tuple "
           "with one Tensor or None per result. RuntimeError when released or when a saved input was modified.")
      .def("__repr__", [](const Operation& o) {
        return o._operation_name() ? fmt::format("<Operation {}>", *o._operation_name()) : std::string("<Operation>");
      });

  py::class_<Tensor, TensorHolder> tensor = py::reinterpret_borrow<py::class_<Tensor, TensorHolder>>(m.attr("Tensor"));
  tensor
      .def_property_readonly("requires_grad", &Tensor::requires_grad,
                             "Read-only, for PyTorch habits: True iff the tensor is differentiable (exactly Float32). "
                             "There is no opt-in flag: a Float32 tensor takes part in every graph built while grad "
                             "mode is on (core-concepts 6.2); run inference under no_grad().")
      .def("is_differentiable", &Tensor::is_differentiable, "True iff the logical dtype is exactly Float32.")
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad", [](const Tensor& t) { return optional_tensor_object(t.grad()); },
                    [](Tensor& t, py::handle g) { t.set_grad(optional_tensor_arg(g, "Tensor.grad")); },
                    "The accumulated gradient, or None (RuntimeError on a non-differentiable tensor).")
      .def_property_readonly("grad_fn", [](const Tensor& t) { return operation_object(t.autograd_ctx()); },
                             "PyTorch's name for autograd_ctx.")
      .def_property("autograd_ctx", [](const Tensor& t) { return operation_object(t.autograd_ctx()); },
                    [](Tensor& t, py::handle node) {
                      if (node.is_none()) return t.set_autograd_ctx(nullptr);
                      if (!py::isinstance<Operation>(node))
                        throw TypeError("Tensor.autograd_ctx: expected an Operation or None");
                      t.set_autograd_ctx(operation_arg(node, "Tensor.autograd_ctx"));
                    },
                    "The Operation that produced this tensor, or None. Assigning an Operation to a "
                    "non-differentiable tensor -> RuntimeError; None always works.")
      .def("retain_grad", [](Tensor& t, py::handle retain) {
             if (!PyBool_Check(retain.ptr())) throw TypeError("Tensor.retain_grad: retain must be a bool");
             t.retain_grad(retain.ptr() == Py_True);
           }, py::arg("retain") = true,
           "retain=True: a non-leaf keeps the cotangent later traversals bring it in .grad; False turns that off.")
      .def("detach", &Tensor::detach, "A new handle on the same storage without autograd state (a leaf).")
      .def("backward", [](const Tensor& t, py::handle gradient, py::handle retain_graph) {
             if (!PyBool_Check(retain_graph.ptr())) throw TypeError("Tensor.backward: retain_graph must be a bool");
             std::optional<Tensor> g = optional_tensor_arg(gradient, "Tensor.backward: gradient");
             py::gil_scoped_release nogil;
             t.backward(std::move(g), retain_graph.ptr() == Py_True);
           }, py::arg("gradient") = py::none(), py::arg("retain_graph") = false, R"doc(
Reverse-mode accumulation into the reached leaves' .grad (core-concepts.md
6.4). gradient=None is the implicit unit cotangent, allowed only for a single
top-level mode of extent 1 (ValueError otherwise); a Tensor cotangent must be
Float32 (TypeError), of this tensor's shape (ValueError), on its carrier class
(TypeError). A traversal of a released graph -> RuntimeError naming
retain_graph=True.)doc");

  m.def("grad", [](py::handle outputs, py::handle inputs, py::handle cotangents, py::handle batched, py::handle retain_graph) {
        if (!PyBool_Check(batched.ptr()) || !PyBool_Check(retain_graph.ptr()))
          throw TypeError("grad: batched and retain_graph must be bools");
        // upstream autograd: `inputs` is a sequence of Tensors (a Tensor,
        // None or a number is a TypeError before any traversal).
        if (is_tensor(inputs) || PyUnicode_Check(inputs.ptr()) || !py::isinstance<py::iterable>(inputs))
          throw TypeError(fmt::format("grad: inputs must be a sequence of Tensors, got {}",
                                      py::repr(inputs).cast<std::string>()));
        const std::vector<Tensor> ins = tensors_arg(inputs, "grad: inputs");
        const bool keep = retain_graph.ptr() == Py_True;
        std::vector<std::optional<Tensor>> grads;
        if (batched.ptr() == Py_True) {
          if (!is_tensor(outputs)) throw TypeError("grad: with batched=True, output must be a Tensor");
          if (!is_tensor(cotangents)) throw TypeError("grad: with batched=True, cotangents must be a Tensor");
          const Tensor& out = tensor_arg(outputs, "grad: output");
          const Tensor& cot = tensor_arg(cotangents, "grad: cotangents");
          {
            py::gil_scoped_release nogil;
            grads = batched_grad(out, ins, cot, keep);
          }
          return gradients_object(grads);
        }
        const std::vector<Tensor> outs = tensors_arg(outputs, "grad: outputs");
        std::vector<std::optional<Tensor>> cots;
        if (is_tensor(cotangents)) {
          cots.emplace_back(tensor_arg(cotangents, "grad: cotangents"));
        } else if (!cotangents.is_none()) {
          for (py::handle c : cotangents) cots.push_back(optional_tensor_arg(c, "grad: cotangents"));
        }
        {
          py::gil_scoped_release nogil;
          grads = grad(outs, ins, cots, keep);
        }
        return gradients_object(grads);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("cotangents") = py::none(), py::kw_only(),
      py::arg("batched") = false, py::arg("retain_graph") = false, R"doc(
grad(output, inputs, cotangents=None, *, batched=False, retain_graph=False)

The vector-Jacobian products of `output` (a Tensor, or a sequence of outputs)
weighted by `cotangents` (None, a Tensor, or one Tensor-or-None per output;
None is the implicit unit cotangent) with respect to `inputs` (a sequence of
Tensors), without touching any .grad (core-concepts.md 6.7). One entry per
input: its gradient, or None when it does not contribute. batched=True: the
cotangent Tensor carries K cotangents along one prepended leaf batch mode,
and each gradient stacks the K results along a prepended batch mode.)doc");
}

}  // namespace strideweave::python
