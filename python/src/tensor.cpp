// Tensor (core-concepts.md section 4): one subtensor, a carrier, an offset
// and a Layout; views; element access; caller-provided outputs
// (docs/python.md, "Tensors").
//
// A Python Tensor object is a handle: two objects may name one tensor (as
// two C++ Tensor copies do); autograd attaches to the tensor, not to the
// handle. Comparisons are elementwise operations (operations.cpp), so a
// Tensor hashes by object identity.
//
// Basic indexing makes views, as numpy's basic indexing does: an int
// selects one index of an axis and removes it (negative ints count from the
// end; out of range -> IndexError), a slice with a positive step keeps it
// (a step <= 0 is a ValueError: strides are non-negative), None inserts an
// extent-1 axis, ... stands for the remaining axes.
#include "bindings.h"

#include <fmt/format.h>

#include <unordered_map>

namespace strideweave::python {
namespace {

// A caller-provided output as Python holds it: the tensor object itself, so
// that the call can return that very object.
struct PyOutput {
  py::object tensor;
  OutputMode mode;
};

py::object nested_values(const std::vector<Value>& values, std::span<const std::int64_t> extents, std::size_t axis,
                         std::int64_t ordinal, std::int64_t stride) {
  // values are in logical order (first axis fastest); the nesting is axis 0
  // outermost.
  if (axis == extents.size()) return value_object(values[static_cast<std::size_t>(ordinal)]);
  py::list out;
  for (std::int64_t i = 0; i < extents[axis]; ++i)
    out.append(nested_values(values, extents, axis + 1, ordinal + i * stride, stride * extents[axis]));
  return out;
}

std::vector<std::int64_t> integers_of(py::handle seq, const char* what) {
  std::vector<std::int64_t> out;
  for (py::handle v : seq) out.push_back(integer_arg(v, what));
  return out;
}

// Axes given as *args: one sequence, or the integers themselves.
std::vector<std::int64_t> axes_args(const py::args& args, const char* what) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return integers_of(args[0], what);
  return integers_of(args, what);
}

std::vector<std::int64_t> coordinate_arg(const py::args& args, const char* what) { return axes_args(args, what); }

// t[key]: the key's items as IndexItems, then <strideweave/indexing.h>'s
// index(), which owns the semantics and the errors. A slice's bounds are
// read as Python reads them (PySlice_Unpack: __index__, bools, bounds
// beyond the machine's range clamped, step 0 a ValueError); index() then
// clamps them to the axis.
Tensor index_tensor(const Tensor& t, py::handle key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::vector<IndexItem> index_items;
  index_items.reserve(items.size());
  for (py::handle item : items) {
    if (item.ptr() == Py_Ellipsis) {
      index_items.push_back(IndexItem::ellipsis());
    } else if (item.is_none()) {
      index_items.push_back(IndexItem::new_axis());
    } else if (PySlice_Check(item.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(item.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
      index_items.push_back(IndexItem::slice(start, stop, step));
    } else if (!is_boolean(item) && PyIndex_Check(item.ptr())) {
      index_items.push_back(IndexItem::at(integer_arg(item, "Tensor index")));
    } else {
      throw TypeError(fmt::format("Tensor index: only integers, slices, None and ... are valid indices, got {}",
                                  py::repr(item).cast<std::string>()));
    }
  }
  return index(t, index_items);
}

}  // namespace

// The Tensor type and its pybind11 record, looked up once: is_tensor and
// tensor_arg run on every operand of every call (docs/python.md,
// "Performance").
const py::detail::type_info* tensor_type_info() {
  static const py::detail::type_info* info = py::detail::get_type_info(typeid(Tensor));
  return info;
}

bool is_tensor(py::handle value) { return PyObject_TypeCheck(value.ptr(), tensor_type_info()->type); }

// ---- one tensor, one object
//
// A C++ Tensor is a handle; several handles may name one tensor
// (Tensor::is). Python sees one object per tensor: the object that wraps a
// tensor is kept in the tensor's binding slot (Tensor::binding_slot), so a
// tensor C++ hands back (an Operation's saved inputs, a VJP context's
// outputs, a caller-provided output) is the caller's very object while that
// object lives. An object is remembered when the binding makes it and when
// one is passed into a call (a Tensor the user built with Tensor(...)) and
// the slot is empty; it is forgotten when its Python object is destroyed
// (TensorHolderDeleter). The slot is touched only with the GIL held. (Until
// issue 20 this was a process-wide hash map: a lookup, an insertion and an
// erasure per result, a measurable share of a tiny operator call.)
// The Tensor handle a Tensor object holds (null when not initialised).
const Tensor* held_tensor(PyObject* object) {
  auto* inst = reinterpret_cast<py::detail::instance*>(object);
  void* v = inst->simple_layout ? inst->simple_value_holder[0]
                                : py::detail::values_and_holders(inst).begin()->value_ptr();
  return static_cast<const Tensor*>(v);
}
namespace {
void remember(PyObject* object, const Tensor* value) {
  if (!value->binding_slot()) value->set_binding_slot(object);
}
}  // namespace

void TensorHolderDeleter::operator()(Tensor* tensor) const noexcept {
  // The slot names a live object (this one, being destroyed, or another
  // object of the same tensor); it is cleared only by its own object.
  if (tensor) {
    if (auto* object = static_cast<PyObject*>(tensor->binding_slot()); object && held_tensor(object) == tensor)
      tensor->set_binding_slot(nullptr);
  }
  delete tensor;
}

const Tensor& tensor_arg(py::handle value, const char* what) {
  if (!is_tensor(value))
    throw TypeError(fmt::format("{}: expected a Tensor, got {}", what, py::repr(value).cast<std::string>()));
  const Tensor* t = held_tensor(value.ptr());
  if (!t) throw TypeError(fmt::format("{}: the Tensor object was never initialised", what));
  remember(value.ptr(), t);
  return *t;
}

py::object tensor_object(Tensor&& tensor) {
  if (void* existing = tensor.binding_slot()) return py::reinterpret_borrow<py::object>(static_cast<PyObject*>(existing));
  const py::detail::type_info* info = tensor_type_info();
  auto object = py::reinterpret_steal<py::object>(py::detail::make_new_instance(info->type));
  auto* inst = reinterpret_cast<py::detail::instance*>(object.ptr());
  inst->owned = true;
  auto* held = new Tensor(std::move(tensor));
  // A Tensor object has pybind11's simple layout (one C++ base): its value
  // pointer is the first inline word (no type-info walk).
  if (inst->simple_layout) inst->simple_value_holder[0] = held;
  else py::detail::values_and_holders(inst).begin()->value_ptr() = held;
  // What class_<Tensor, TensorHolder>::init_instance does, with the type
  // record already at hand: pybind11's version looks it up by typeid (a
  // type_index hash) on every object it makes.
  py::detail::value_and_holder v_h = inst->get_value_and_holder(info);
  if (!v_h.instance_registered()) {
    py::detail::register_instance(inst, v_h.value_ptr(), v_h.type);
    v_h.set_instance_registered();
  }
  new (std::addressof(v_h.holder<TensorHolder>())) TensorHolder(held);
  v_h.set_holder_constructed();
  remember(object.ptr(), held);
  return object;
}

Output output_arg(py::handle value, const char* what) {
  if (value.is_none()) return Output();
  if (is_tensor(value)) return into(tensor_arg(value, what));
  if (py::isinstance<PyOutput>(value)) {
    const PyOutput& o = value.cast<const PyOutput&>();
    return Output(tensor_arg(o.tensor, what), o.mode);
  }
  throw TypeError(fmt::format("{}: expected a Tensor, into(t) or accumulate_into(t), got {}", what,
                              py::repr(value).cast<std::string>()));
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor, TensorHolder> tensor(m, "Tensor", py::buffer_protocol(), R"doc(
Tensor(carrier, offset, layout): one subtensor (core-concepts.md 4): the
Layout maps logical coordinates to slot indices added to `offset`. The carrier
dtype is the logical dtype; offset is an int (TypeError otherwise), offset >= 0
and offset + layout.cosize <= carrier.size() (ValueError otherwise). A Tensor
keeps its carrier alive and never releases it.

Build one from Python data with strideweave.tensor(...), from numpy with
strideweave.asarray(...). Operators: + - * / @ ** unary - abs(), == != < <= >
>= (elementwise, Bool results); Python numbers as docs/python.md says.)doc");
  tensor
      .def(py::init([](py::handle carrier, py::handle offset, py::handle layout) {
             std::shared_ptr<Carrier> c = carrier_arg(carrier, "Tensor: carrier");
             if (PyBool_Check(offset.ptr()) || !PyIndex_Check(offset.ptr()))
               throw TypeError(fmt::format("Tensor: offset must be an int, got {}", py::repr(offset).cast<std::string>()));
             const std::int64_t off = integer_arg(offset, "Tensor: offset");
             if (!py::isinstance<Layout>(layout))
               throw TypeError(fmt::format("Tensor: layout must be a Layout, got {}", py::repr(layout).cast<std::string>()));
             return Tensor(std::move(c), off, layout.cast<Layout>());
           }),
           // The Python carrier object lives as long as the Tensor object
           // (t.carrier is the object passed in; the C++ carrier is kept by
           // the Tensor itself).
           py::keep_alive<1, 2>(), py::arg("carrier"), py::arg("offset"), py::arg("layout"))
      .def_property_readonly("carrier", [](const Tensor& t) { return t.carrier(); }, "The carrier (subtensor zero).")
      .def_property_readonly("offset", &Tensor::offset)
      .def_property_readonly("layout", &Tensor::layout)
      .def_property_readonly("shape", &Tensor::shape, "The Layout's Shape.")
      .def_property_readonly("rank", &Tensor::rank, "The number of top-level modes (axes).")
      .def("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); }, "The logical dtype (the carrier's).")
      .def("size", &Tensor::size, "The logical size: the product of the extents.")
      .def("carrier_type", [](const Tensor& t) { return py::type::of(py::cast(t.carrier())); },
           "The carrier's exact class.")
      .def("is_differentiable", &Tensor::is_differentiable, "The logical dtype is exactly DType.Float32.")
      .def("at", [](const Tensor& t, const py::args& coordinate) {
             return value_object(t.at(coordinate_arg(coordinate, "Tensor.at")));
           }, "The element at one integer key per top-level mode (ValueError outside the domain).")
      .def("at_ordinal", [](const Tensor& t, std::int64_t ordinal) { return value_object(t.at_ordinal(ordinal)); },
           py::arg("ordinal"), "The element at a logical ordinal (first mode fastest).")
      .def("set", [](Tensor& t, py::handle coordinate, py::handle value) {
             t.set(integers_of(coordinate, "Tensor.set"), value_arg(value, t.dtype(), "Tensor.set"));
           }, py::arg("coordinate"), py::arg("value"),
           "Writes one element through the carrier's versioned set_value.")
      .def("values", [](const Tensor& t) {
             py::list out;
             for (const Value& v : t.values()) out.append(value_object(v));
             return out;
           }, "Every element in logical order (first mode fastest).")
      .def("tolist", [](const Tensor& t) {
             const std::vector<Value> values = t.values();
             return nested_values(values, t.shape().extents(), 0, 0, 1);
           }, "The elements as nested lists, axis 0 outermost (a bare value for rank 0).")
      .def("item", [](const Tensor& t) {
             if (t.size() != 1)
               throw ValueError(fmt::format("Tensor.item: the tensor has {} elements, not one", t.size()));
             return value_object(t.at_ordinal(0));
           }, "The one element of a size-1 tensor (ValueError otherwise).")
      .def("__bool__", [](const Tensor& t) {
             if (t.size() != 1)
               throw ValueError(fmt::format("the truth value of a tensor of {} elements is ambiguous", t.size()));
             return PyObject_IsTrue(value_object(t.at_ordinal(0)).ptr()) == 1;
           })
      .def("__float__", [](const Tensor& t) {
             if (t.size() != 1) throw ValueError("float(): only a one-element tensor converts to a Python scalar");
             return py::float_(value_object(t.at_ordinal(0)));
           })
      .def("__int__", [](const Tensor& t) {
             if (t.size() != 1) throw ValueError("int(): only a one-element tensor converts to a Python scalar");
             return py::int_(value_object(t.at_ordinal(0)));
           })
      .def("__len__", [](const Tensor& t) {
             if (t.rank() == 0) throw TypeError("len() of a rank-0 tensor");
             return t.shape().extent(0);
           })
      .def("__getitem__", &index_tensor, py::arg("key"))
      .def("permute", [](const Tensor& t, const py::args& axes) { return t.permute(axes_args(axes, "Tensor.permute")); },
           "A view with the axes in the given order (a permutation of range(rank)).")
      .def("slice", &Tensor::slice, py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step") = 1,
           "A view of [start, stop) with step >= 1 along `axis` (python-style clamping).")
      // reshape (with its order= argument): compose.cpp
      .def("squeeze", [](const Tensor& t, py::handle axes) {
             if (axes.is_none()) return t.squeeze();
             if (PyIndex_Check(axes.ptr())) return t.squeeze(std::vector<std::int64_t>{integer_arg(axes, "Tensor.squeeze")});
             return t.squeeze(integers_of(axes, "Tensor.squeeze"));
           }, py::arg("axes") = py::none(), "A view without extent-1 axes (all, or the listed ones).")
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("axis"), "A view with an extent-1 axis inserted at `axis`.")
      .def("broadcast_to", [](const Tensor& t, py::handle shape) { return t.broadcast_to(shape_arg(shape, "Tensor.broadcast_to")); },
           py::arg("shape"), "A view broadcast to `shape` (numpy rules; widened axes get stride 0).")
      .def("as_strided", [](const Tensor& t, py::handle layout, std::int64_t offset) {
             if (!py::isinstance<Layout>(layout)) throw TypeError("Tensor.as_strided: layout must be a Layout");
             return t.as_strided(layout.cast<Layout>(), offset);
           }, py::arg("layout"), py::arg("offset"), "A view with another layout and offset over the same carrier.")
      .def("__repr__", &Tensor::to_string)
      .def("__str__", &Tensor::to_string);

  py::class_<PyOutput>(m, "Output", R"doc(
A caller-provided output for exactly one operation call: into(t) overwrites
t, accumulate_into(t) adds into it. Pass it (or a plain Tensor, which means
into) as out=; the call returns that tensor.)doc")
      .def_property_readonly("tensor", [](const PyOutput& o) { return o.tensor; })
      .def_property_readonly("accumulate", [](const PyOutput& o) { return o.mode == OutputMode::Accumulate; })
      .def("__repr__", [](const PyOutput& o) {
        return fmt::format("{}({})", o.mode == OutputMode::Accumulate ? "accumulate_into" : "into",
                           py::repr(o.tensor).cast<std::string>());
      });
  m.def("into", [](py::handle t) {
        tensor_arg(t, "into");
        return PyOutput{py::reinterpret_borrow<py::object>(t), OutputMode::Overwrite};
      }, py::arg("tensor"), "The call writes its result into `tensor` (out=into(t) is the same as out=t).");
  m.def("accumulate_into", [](py::handle t) {
        tensor_arg(t, "accumulate_into");
        return PyOutput{py::reinterpret_borrow<py::object>(t), OutputMode::Accumulate};
      }, py::arg("tensor"), "The call adds its result into `tensor`, in the plan's output arithmetic.");

  m.def("scalar_like", [](py::handle like, py::handle value) {
        return scalar_like(tensor_arg(like, "scalar_like"), weak_scalar_arg(value, "scalar_like"));
      }, py::arg("like"), py::arg("value"),
      "A rank-0 tensor on like's carrier class holding `value` as its own dtype: int -> Int32 (OverflowError outside), "
      "float -> Float32, bool -> Bool (ops/operators.h).");
  m.def("format_values", [](py::handle t, std::int64_t summarize_above, std::int64_t edge_items) {
        return format_values(tensor_arg(t, "format_values"), summarize_above, edge_items);
      }, py::arg("tensor"), py::arg("summarize_above") = 1000, py::arg("edge_items") = 3,
      "The values as nested lists in text (numpy's threshold and edgeitems; -1 never abbreviates).");
}

}  // namespace strideweave::python
