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

py::object optional_tensor_object(const std::optional<Tensor>& t) { return t ? py::cast(*t) : py::none(); }

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

py::tuple gradients_object(const std::vector<std::optional<Tensor>>& grads) {
  py::list out;
  for (const std::optional<Tensor>& g : grads) out.append(optional_tensor_object(g));
  return py::tuple(out);
}

}  // namespace

void bind_autograd(py::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled, "Whether this thread records operations for backward.");
  m.def("_set_grad_enabled", [](py::handle enabled) {
        if (!PyBool_Check(enabled.ptr())) throw TypeError("set_grad_enabled: enabled must be a bool");
        set_grad_enabled(enabled.ptr() == Py_True);
      }, py::arg("enabled"));

  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node", R"doc(
One node of the autograd graph (the specification's autograd_ctx): one
recorded operation call or view. Immutable after recording except for its
release by a backward without retain_graph.)doc")
      .def_property_readonly("name", &autograd::Node::name, "The operation (or view kind) recorded.")
      .def_property_readonly("plan", [](const autograd::Node& n) -> py::object {
        return n.plan() ? py::cast(*n.plan()) : py::none();
      }, "The plan of the recorded call (None for a view).")
      .def("is_released", &autograd::Node::is_released, "A backward without retain_graph has freed its saved tensors.")
      .def_property_readonly("invocation", [](const autograd::Node& n) -> py::object {
        return n.invocation() ? resolved_invocation_object(*n.invocation()) : py::none();
      }, "A definition node's ResolvedInvocation (None for a kernel or view node, and after release).")
      .def_property_readonly("outputs", [](const autograd::Node& n) {
        py::tuple out(n.outputs().size());
        for (std::size_t i = 0; i < n.outputs().size(); ++i) out[i] = tensor_object(Tensor(n.outputs()[i]));
        return out;
      }, "A definition node's results, detached, in result order (empty for a kernel or view node).")
      .def("backward", [](const autograd::Node& n, py::handle gradient) {
             std::vector<std::optional<Tensor>> grads;
             if (is_tensor(gradient)) {
               const Tensor& g = tensor_arg(gradient, "Node.backward");
               py::gil_scoped_release nogil;
               grads = n.backward(g);
             } else {
               if (!PyTuple_Check(gradient.ptr()) && !PyList_Check(gradient.ptr()))
                 throw TypeError("Node.backward: gradient must be a Tensor or a tuple of Tensor or None (one per result)");
               std::vector<std::optional<Tensor>> cotangents;
               for (py::handle c : gradient) {
                 if (c.is_none()) cotangents.emplace_back(std::nullopt);
                 else cotangents.emplace_back(tensor_arg(c, "Node.backward"));
               }
               py::gil_scoped_release nogil;
               grads = n.backward(std::span<const std::optional<Tensor>>(cotangents));
             }
             return gradients_object(grads);
           }, py::arg("gradient"),
           "The operation's backward alone: one gradient or None per saved operand (a definition node: per schema "
           "operand). `gradient` is a Tensor, or for a definition node a tuple with one Tensor or None per result. "
           "RuntimeError when released or when a saved input was modified in place.")
      .def("__repr__", [](const autograd::Node& n) { return fmt::format("<Node {}>", n.name()); });

  py::class_<Tensor> tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, py::handle flag) {
                      if (!PyBool_Check(flag.ptr())) throw TypeError("Tensor.requires_grad: expected a bool");
                      t.set_requires_grad(flag.ptr() == Py_True);
                    },
                    "A leaf marked to require grad, or a tensor with a grad_fn. Setting True on a tensor that is "
                    "not exactly Float32 -> RuntimeError; setting False on a non-leaf -> RuntimeError.")
      .def("requires_grad_", [](py::handle self, py::handle flag) {
             if (!PyBool_Check(flag.ptr())) throw TypeError("Tensor.requires_grad_: expected a bool");
             self.cast<Tensor&>().set_requires_grad(flag.ptr() == Py_True);
             return py::reinterpret_borrow<py::object>(self);
           }, py::arg("requires_grad") = true, "Sets requires_grad and returns this tensor.")
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad", [](const Tensor& t) { return optional_tensor_object(t.grad()); },
                    [](Tensor& t, py::handle g) { t.set_grad(optional_tensor_arg(g, "Tensor.grad")); },
                    "The accumulated gradient, or None (RuntimeError on a non-differentiable tensor).")
      .def_property_readonly("grad_fn", [](const Tensor& t) { return t.grad_fn(); }, "The recording Node, or None.")
      .def_property("autograd_ctx", [](const Tensor& t) { return t.autograd_ctx(); },
                    [](Tensor& t, py::handle node) {
                      if (node.is_none()) return t.set_autograd_ctx(nullptr);
                      if (!py::isinstance<autograd::Node>(node)) throw TypeError("Tensor.autograd_ctx: expected a Node or None");
                      t.set_autograd_ctx(node.cast<std::shared_ptr<autograd::Node>>());
                    },
                    "The specification's name for grad_fn. A Node on a non-differentiable tensor -> RuntimeError.")
      .def("retain_grad", &Tensor::retain_grad, "A non-leaf keeps its .grad after backward.")
      .def("detach", &Tensor::detach, "A new handle on the same storage without autograd state.")
      .def("backward", [](const Tensor& t, py::handle gradient, py::handle retain_graph) {
             if (!PyBool_Check(retain_graph.ptr())) throw TypeError("Tensor.backward: retain_graph must be a bool");
             std::optional<Tensor> g = optional_tensor_arg(gradient, "Tensor.backward: gradient");
             py::gil_scoped_release nogil;
             t.backward(std::move(g), retain_graph.ptr() == Py_True);
           }, py::arg("gradient") = py::none(), py::arg("retain_graph") = false, R"doc(
Reverse-mode accumulation into the leaves' .grad (core-concepts.md 6.4).
gradient=None is the implicit unit cotangent, allowed only for a single
top-level mode of extent 1 (ValueError otherwise); a Tensor cotangent must be
Float32 (TypeError), of this tensor's shape (ValueError), on its carrier class
(TypeError). A traversal of a released graph -> RuntimeError naming
retain_graph=True.)doc");

  m.def("grad", [](py::handle outputs, py::handle inputs, py::handle cotangents, py::handle batched, py::handle retain_graph) {
        if (!PyBool_Check(batched.ptr()) || !PyBool_Check(retain_graph.ptr()))
          throw TypeError("grad: batched and retain_graph must be bools");
        if (batched.ptr() == Py_True)
          throw NotImplementedError("grad: batched=True is not implemented (the C++ grad() computes one VJP per call)");
        const std::vector<Tensor> outs = tensors_arg(outputs, "grad: outputs");
        const std::vector<Tensor> ins = tensors_arg(inputs, "grad: inputs");
        std::vector<std::optional<Tensor>> cots;
        if (is_tensor(cotangents)) {
          cots.emplace_back(tensor_arg(cotangents, "grad: cotangents"));
        } else if (!cotangents.is_none()) {
          for (py::handle c : cotangents) cots.push_back(optional_tensor_arg(c, "grad: cotangents"));
        }
        std::vector<std::optional<Tensor>> grads;
        {
          py::gil_scoped_release nogil;
          grads = grad(outs, ins, cots, retain_graph.ptr() == Py_True);
        }
        return gradients_object(grads);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("cotangents") = py::none(), py::kw_only(),
      py::arg("batched") = false, py::arg("retain_graph") = false, R"doc(
grad(outputs, inputs, cotangents=None, *, batched=False, retain_graph=False)

The vector-Jacobian products of `outputs` (a Tensor or a sequence) weighted by
`cotangents` (None, a Tensor, or one Tensor-or-None per output; None is the
implicit unit cotangent) with respect to `inputs`, without touching any .grad
(core-concepts.md 6.7). One entry per input: its gradient, or None when it
does not contribute. batched=True is not implemented (NotImplementedError).)doc");
}

}  // namespace strideweave::python
