// strideweave.concatenate, stack, split, mean, var, std, softmax,
// log_softmax, astype, clone, copy_to and the Tensor methods and properties
// numpy users reach for (T, ndim, astype, mean, ...): the binding of
// <strideweave/compose.h> (docs/composition.md). Every rule lives in C++.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {

namespace {

std::vector<Tensor> tensor_list(py::handle tensors, const char* what) {
  if (is_tensor(tensors) || !py::isinstance<py::sequence>(tensors))
    throw TypeError(fmt::format("{}: expected a sequence of tensors", what));
  std::vector<Tensor> out;
  for (py::handle item : tensors) {
    if (!is_tensor(item))
      throw TypeError(fmt::format("{}: item {} is {}, not a Tensor", what, out.size(),
                                  py::str(py::type::of(item).attr("__name__")).cast<std::string>()));
    out.push_back(tensor_arg(item, what));
  }
  return out;
}

// numpy's axis argument: None (every axis), an int, or a tuple or list of ints.
Axes axes_arg(py::handle axis, const char* what) {
  if (axis.is_none()) return Axes::all();
  if (py::isinstance<py::tuple>(axis) || py::isinstance<py::list>(axis)) {
    std::vector<std::int64_t> list;
    for (py::handle a : axis) list.push_back(integer_arg(a, what));
    return Axes(std::move(list));
  }
  return Axes(integer_arg(axis, what));
}

std::shared_ptr<Carrier> destination_or_null(py::handle carrier) {
  return py::isinstance<Carrier>(carrier) ? carrier_arg(carrier, "copy_to: carrier") : nullptr;
}

Tensor copy_to_arg(const Tensor& t, py::handle carrier) {
  if (std::shared_ptr<Carrier> destination = destination_or_null(carrier)) {
    py::gil_scoped_release nogil;
    return copy_to(t, destination);
  }
  const CarrierClass cls = carrier_class_arg(carrier, "copy_to: carrier");
  py::gil_scoped_release nogil;
  return copy_to(t, cls);
}

ReshapeOrder order_arg(const std::string& order) {
  if (order == "F") return ReshapeOrder::first_mode_fastest;
  if (order == "C") return ReshapeOrder::row_major;
  throw ValueError("reshape: order must be 'F' (the logical order, first axis fastest) or 'C' (numpy's row-major), "
                   "got '" + order + "'");
}

py::list tensors_object(const std::vector<Tensor>& parts) {
  py::list out;
  for (const Tensor& p : parts) out.append(tensor_object(Tensor(p)));
  return out;
}

template <class F>
Tensor released(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

}  // namespace

void bind_compose(py::module_& m) {
  m.def("concatenate", [](py::handle tensors, std::int64_t axis) {
        const std::vector<Tensor> ts = tensor_list(tensors, "concatenate");
        return released([&] { return concatenate(ts, axis); });
      }, py::arg("tensors"), py::arg("axis") = 0, R"doc(
concatenate(tensors, axis=0): numpy.concatenate. Tensors of one rank, dtype
and carrier class (no promotion: astype first), joined along `axis` in a
fresh compact tensor. Recording (Float32 under grad mode): each tensor is
scattered into zeros, so gradients reach every input; otherwise a storage
copy.)doc");
  m.def("stack", [](py::handle tensors, std::int64_t axis) {
        const std::vector<Tensor> ts = tensor_list(tensors, "stack");
        return released([&] { return stack(ts, axis); });
      }, py::arg("tensors"), py::arg("axis") = 0,
      "stack(tensors, axis=0): numpy.stack, tensors of one shape joined along a new axis.");
  m.def("split", [](const Tensor& x, py::handle indices_or_sections, std::int64_t axis) {
        if (is_integer_number(indices_or_sections))
          return tensors_object(split(x, integer_arg(indices_or_sections, "split: sections"), axis));
        std::vector<std::int64_t> indices;
        for (py::handle i : indices_or_sections) indices.push_back(integer_arg(i, "split: indices"));
        return tensors_object(split(x, std::span<const std::int64_t>(indices), axis));
      }, py::arg("x"), py::arg("indices_or_sections"), py::arg("axis") = 0, R"doc(
split(x, indices_or_sections, axis=0): numpy.split, as a list of views. An int
is a number of equal sections (ValueError unless the extent divides); a
sequence is the split points.)doc");
  m.def("mean", [](const Tensor& x, py::handle axis, bool keepdims) {
        const Axes a = axes_arg(axis, "mean: axis");
        return released([&] { return mean(x, a, keepdims); });
      }, py::arg("x"), py::arg("axis") = py::none(), py::kw_only(), py::arg("keepdims") = false, R"doc(
mean(x, axis=None, *, keepdims=False): reduce_sum(x, axis) / n in Float32 (a
non-Float32 x is converted first). axis: None (all), an int or a tuple.)doc");
  m.def("var", [](const Tensor& x, py::handle axis, std::int64_t ddof, bool keepdims) {
        const Axes a = axes_arg(axis, "var: axis");
        return released([&] { return var(x, a, ddof, keepdims); });
      }, py::arg("x"), py::arg("axis") = py::none(), py::kw_only(), py::arg("ddof") = 0, py::arg("keepdims") = false,
      "var(x, axis=None, *, ddof=0, keepdims=False): numpy.var, two passes (the mean, then the squared deviations).");
  m.def("std", [](const Tensor& x, py::handle axis, std::int64_t ddof, bool keepdims) {
        const Axes a = axes_arg(axis, "std: axis");
        return released([&] { return stddev(x, a, ddof, keepdims); });
      }, py::arg("x"), py::arg("axis") = py::none(), py::kw_only(), py::arg("ddof") = 0, py::arg("keepdims") = false,
      "std(x, axis=None, *, ddof=0, keepdims=False): sqrt(var(...)).");
  m.def("softmax", [](const Tensor& x, std::int64_t axis) { return released([&] { return softmax(x, axis); }); },
        py::arg("x"), py::arg("axis") = -1,
        "softmax(x, axis=-1): exp(x - m) / sum(exp(x - m)), m the (detached) maximum along axis.");
  m.def("log_softmax", [](const Tensor& x, std::int64_t axis) { return released([&] { return log_softmax(x, axis); }); },
        py::arg("x"), py::arg("axis") = -1, "log_softmax(x, axis=-1): (x - m) - log(sum(exp(x - m))).");
  m.def("astype", [](const Tensor& x, py::handle dtype) {
        const SimpleDType& d = simple_dtype_arg(dtype, "astype: dtype");
        return released([&] { return astype(x, d); });
      }, py::arg("x"), py::arg("dtype"), R"doc(
astype(x, dtype): x's values as dtype in a fresh tensor (always a copy). Float32
to Int32 truncates toward zero (ValueError for NaN, infinities and values
outside Int32); the other conversions are registered operations.)doc");
  m.def("clone", [](const Tensor& x) { return released([&] { return clone(x); }); }, py::arg("x"),
        "clone(x): a fresh compact copy on x's carrier class (recorded: add(x, -0.0), so gradients reach x).");
  m.def("transpose", [](const Tensor& x) { return transpose(x); }, py::arg("x"),
        "transpose(x): x with its axes reversed (a view; Tensor.T).");
  m.def("comparison_scalar", [](const Tensor& like, py::handle value) {
        return comparison_scalar(like, weak_scalar_arg(value, "comparison_scalar: value"));
      }, py::arg("like"), py::arg("value"), R"doc(
comparison_scalar(like, value): the rank-0 tensor a number becomes beside `like`
in a comparison operator: the number as like's dtype when exactly
representable there, else TypeError saying why (docs/composition.md).)doc");
  m.def("copy_to", &copy_to_arg, py::arg("x"), py::arg("carrier"), R"doc(
copy_to(x, carrier): a non-destructive copy of x's values on another carrier,
through the move routes: carrier is an instance (the destination, as move's)
or a class (Generic, CPU: a fresh one). x and its carrier are untouched. The
result is a leaf (copy_to records nothing; move is the differentiable way
across carriers).)doc");

  py::class_<Tensor, TensorHolder> tensor = py::reinterpret_borrow<py::class_<Tensor, TensorHolder>>(m.attr("Tensor"));
  tensor
      .def_property_readonly("T", [](const Tensor& t) { return transpose(t); }, "The axes reversed (a view).")
      .def_property_readonly("ndim", &Tensor::rank, "numpy's name for rank.")
      .def("astype", [](const Tensor& t, py::handle dtype) {
             const SimpleDType& d = simple_dtype_arg(dtype, "Tensor.astype: dtype");
             return released([&] { return astype(t, d); });
           }, py::arg("dtype"), "strideweave.astype(self, dtype).")
      .def("clone", [](const Tensor& t) { return released([&] { return clone(t); }); }, "strideweave.clone(self).")
      .def("copy_to", &copy_to_arg, py::arg("carrier"), "strideweave.copy_to(self, carrier).")
      .def("mean", [](const Tensor& t, py::handle axis, bool keepdims) {
             const Axes a = axes_arg(axis, "Tensor.mean: axis");
             return released([&] { return mean(t, a, keepdims); });
           }, py::arg("axis") = py::none(), py::kw_only(), py::arg("keepdims") = false, "strideweave.mean(self, ...).")
      .def("var", [](const Tensor& t, py::handle axis, std::int64_t ddof, bool keepdims) {
             const Axes a = axes_arg(axis, "Tensor.var: axis");
             return released([&] { return var(t, a, ddof, keepdims); });
           }, py::arg("axis") = py::none(), py::kw_only(), py::arg("ddof") = 0, py::arg("keepdims") = false,
           "strideweave.var(self, ...).")
      .def("std", [](const Tensor& t, py::handle axis, std::int64_t ddof, bool keepdims) {
             const Axes a = axes_arg(axis, "Tensor.std: axis");
             return released([&] { return stddev(t, a, ddof, keepdims); });
           }, py::arg("axis") = py::none(), py::kw_only(), py::arg("ddof") = 0, py::arg("keepdims") = false,
           "strideweave.std(self, ...).")
      .def("reshape", [](const Tensor& t, const py::args& shape, const std::string& order) {
             const ReshapeOrder o = order_arg(order);
             const Shape s = shape.size() == 1 && !PyIndex_Check(shape[0].ptr()) ? shape_arg(shape[0], "Tensor.reshape")
                                                                                  : shape_arg(shape, "Tensor.reshape");
             return reshape(t, s, o);
           }, py::arg("order") = "F", R"doc(
reshape(*shape, order='F'): the same elements in another shape of the same
size. order='F' (the default) reads and writes in the library's logical
order, first axis fastest: always a view (ValueError when the layout cannot
be viewed so). order='C' is numpy's default row-major order: a view when the
layout allows one, else a view of a compact copy (docs/python.md, "Order").)doc");
}

}  // namespace strideweave::python
