// Shape, Stride and Layout (core-concepts.md section 3) as immutable,
// hashable Python values.
//
//   Shape(*items)   hierarchical extents: each item an int or a nested
//                   iterable of them (Shape(2, (3, 4))); extents >= 0.
//   Stride(*items)  congruent non-negative strides.
//   Layout(shape, stride)  identical nesting (ValueError otherwise);
//                   callable on a whole-layout integer key (first mode
//                   fastest) or on a coordinate tuple with one entry per
//                   top-level mode (an integer key of the mode, or a nested
//                   tuple of leaf coordinates).
// Bad values (negative, non-integer, ragged nesting) are ValueError, as
// core-concepts 3.1 says; a Layout argument of another type is a TypeError.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

IntTuple int_tuple_arg(py::handle item, const char* what) {
  if (!PyBool_Check(item.ptr()) && PyIndex_Check(item.ptr())) {
    try {
      return IntTuple(integer_arg(item, what));
    } catch (const OverflowError&) {
      throw ValueError(fmt::format("{}: {} does not fit in 64 bits", what, py::str(item).cast<std::string>()));
    }
  }
  if (!PyUnicode_Check(item.ptr()) && !PyBytes_Check(item.ptr()) && py::isinstance<py::iterable>(item)) {
    std::vector<IntTuple> children;
    for (py::handle c : item) children.push_back(int_tuple_arg(c, what));
    return IntTuple::tuple(std::move(children));
  }
  throw ValueError(fmt::format("{}: {} is neither an integer nor a nested tuple of integers", what,
                               py::repr(item).cast<std::string>()));
}

std::vector<IntTuple> modes_arg(py::handle items, const char* what) {
  std::vector<IntTuple> modes;
  for (py::handle item : items) modes.push_back(int_tuple_arg(item, what));
  return modes;
}

py::tuple modes_object(std::span<const IntTuple> modes) {
  py::list out;
  for (const IntTuple& m : modes) out.append(int_tuple_object(m));
  return py::tuple(out);
}

std::string modes_repr(const char* cls, std::span<const IntTuple> modes) {
  std::string out = std::string(cls) + "(";
  for (std::size_t i = 0; i < modes.size(); ++i)
    out += (i ? ", " : "") + py::repr(int_tuple_object(modes[i])).cast<std::string>();
  return out + ")";
}

Stride stride_arg(py::handle value, const char* what) {
  if (py::isinstance<Stride>(value)) return bound_value<Stride>(value, what);
  if (py::isinstance<py::tuple>(value)) return Stride(modes_arg(value, what));
  throw TypeError(fmt::format("{}: expected a Stride, got {}", what, py::repr(value).cast<std::string>()));
}

std::vector<std::int64_t> integers_arg(py::handle seq, const char* what) {
  std::vector<std::int64_t> out;
  for (py::handle v : seq) out.push_back(integer_arg(v, what));
  return out;
}

// The integer key of a nested leaf coordinate within one mode (first leaf
// fastest), checking every leaf coordinate against its extent.
std::int64_t nested_key(const IntTuple& mode, py::handle coordinate, std::size_t axis, std::int64_t& radix) {
  if (mode.is_leaf()) {
    if (PyBool_Check(coordinate.ptr()) || !PyIndex_Check(coordinate.ptr()))
      throw ValueError(fmt::format("Layout: coordinate {} of mode {} does not match the mode's nesting {}",
                                   py::repr(coordinate).cast<std::string>(), axis, mode.to_string()));
    const std::int64_t c = integer_arg(coordinate, "Layout coordinate");
    if (c < 0 || c >= mode.value())
      throw ValueError(fmt::format("Layout: coordinate {} is outside [0, {}) in mode {}", c, mode.value(), axis));
    const std::int64_t key = c * radix;
    radix *= mode.value();
    return key;
  }
  if (PyUnicode_Check(coordinate.ptr()) || !py::isinstance<py::sequence>(coordinate) ||
      py::len(coordinate) != mode.rank())
    throw ValueError(fmt::format("Layout: coordinate {} of mode {} does not match the mode's nesting {}",
                                 py::repr(coordinate).cast<std::string>(), axis, mode.to_string()));
  std::int64_t key = 0;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(coordinate);
  for (std::size_t i = 0; i < mode.rank(); ++i) key += nested_key(mode[i], seq[i], axis, radix);
  return key;
}

std::int64_t layout_call(const Layout& layout, py::handle key) {
  if (!PyBool_Check(key.ptr()) && PyIndex_Check(key.ptr())) return layout(integer_arg(key, "Layout key"));
  if (!py::isinstance<py::tuple>(key))
    throw ValueError(fmt::format("Layout: a key is an integer or a coordinate tuple, got {}",
                                 py::repr(key).cast<std::string>()));
  py::tuple coordinate = py::reinterpret_borrow<py::tuple>(key);
  if (coordinate.size() != layout.rank())
    throw ValueError(fmt::format("Layout: a coordinate of {} entries for a layout of rank {}", coordinate.size(),
                                 layout.rank()));
  std::vector<std::int64_t> keys;
  for (std::size_t axis = 0; axis < layout.rank(); ++axis) {
    py::handle c = coordinate[axis];
    if (!PyBool_Check(c.ptr()) && PyIndex_Check(c.ptr())) {
      keys.push_back(integer_arg(c, "Layout coordinate"));
    } else {
      std::int64_t radix = 1;
      keys.push_back(nested_key(layout.shape().mode(axis), c, axis, radix));
    }
  }
  return layout(keys);
}

std::optional<std::vector<std::int64_t>> optional_axes(py::handle axes, const char* what) {
  if (axes.is_none()) return std::nullopt;
  if (!PyBool_Check(axes.ptr()) && PyIndex_Check(axes.ptr()))
    return std::vector<std::int64_t>{integer_arg(axes, what)};
  return integers_arg(axes, what);
}

// A tiler for the by-mode algebra: a sequence (not a string) of Layouts,
// an int n standing for Layout((n,), (1,)) (CuTe's shape tilers).
std::vector<Layout> tiler_arg(py::handle value, const char* what) {
  if (PyUnicode_Check(value.ptr()) || py::isinstance<Layout>(value) || !py::isinstance<py::sequence>(value))
    throw TypeError(fmt::format("{}: a tiler is a sequence of Layouts (or ints), got {}", what,
                                py::repr(value).cast<std::string>()));
  std::vector<Layout> out;
  for (py::handle v : value) {
    if (py::isinstance<Layout>(v)) {
      out.push_back(v.cast<const Layout&>());
    } else if (!PyBool_Check(v.ptr()) && PyIndex_Check(v.ptr())) {
      out.emplace_back(Shape::of({integer_arg(v, what)}), Stride::of({1}));
    } else {
      throw TypeError(fmt::format("{}: a tiler entry is a Layout or an int, got {}", what,
                                  py::repr(v).cast<std::string>()));
    }
  }
  return out;
}

}  // namespace

py::object int_tuple_object(const IntTuple& t) {
  if (t.is_leaf()) return py::int_(t.value());
  return modes_object(t.children());
}

Shape shape_arg(py::handle value, const char* what) {
  if (py::isinstance<Shape>(value)) return bound_value<Shape>(value, what);
  if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value))
    return Shape(modes_arg(value, what));
  throw TypeError(fmt::format("{}: expected a Shape (or a tuple of extents), got {}", what,
                              py::repr(value).cast<std::string>()));
}

void bind_layout(py::module_& m) {
  py::class_<Shape>(m, "Shape", R"doc(
Shape(*items): hierarchical extents (core-concepts.md 3.1). Each item is an
int or a nested iterable of ints: Shape(2, (3, 4)) has two top-level modes,
the second hierarchical. Extents are >= 0 (zero is a documented extension for
empty tensors, docs/layout.md); anything else is a ValueError. Immutable and
hashable.)doc")
      .def(py::init([](const py::args& items) { return Shape(modes_arg(items, "Shape")); }))
      .def_property_readonly("rank", &Shape::rank, "The number of top-level modes.")
      .def_property_readonly("modes", [](const Shape& s) { return modes_object(s.modes()); },
                             "The top-level modes: ints and nested tuples.")
      .def_property_readonly("extents", [](const Shape& s) {
        return py::tuple(py::cast(std::vector<std::int64_t>(s.extents().begin(), s.extents().end())));
      }, "The extent of each top-level mode (the product of its leaves).")
      .def_property_readonly("size", &Shape::size, "The product of all extents (1 for rank 0).")
      .def_property_readonly("is_flat", &Shape::is_flat, "Every top-level mode is a leaf.")
      .def("__len__", &Shape::rank)
      .def("__getitem__",
           [](const Shape& s, std::int64_t i) {
             const auto rank = static_cast<std::int64_t>(s.rank());
             if (i < -rank || i >= rank) throw IndexError(fmt::format("Shape: mode {} of a rank-{} shape", i, rank));
             return int_tuple_object(s.mode(static_cast<std::size_t>(i < 0 ? i + rank : i)));
           })
      .def("__iter__", [](const Shape& s) { return py::iter(modes_object(s.modes())); })
      // Equal to another Shape with the same modes and, as numpy's and
      // torch's shapes are, to the tuple of its modes (shape == (2, 3));
      // hashed as that tuple, so the two are interchangeable as dict keys.
      .def("__eq__", [](const Shape& a, py::handle b) -> py::object {
        if (py::isinstance<Shape>(b)) return py::bool_(a == b.cast<const Shape&>());
        if (py::isinstance<py::tuple>(b)) return py::bool_(modes_object(a.modes()).equal(b));
        return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      })
      .def("__ne__", [](const Shape& a, py::handle b) -> py::object {
        if (py::isinstance<Shape>(b)) return py::bool_(!(a == b.cast<const Shape&>()));
        if (py::isinstance<py::tuple>(b)) return py::bool_(!modes_object(a.modes()).equal(b));
        return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      })
      .def("__hash__", [](const Shape& s) { return py::hash(modes_object(s.modes())); })
      .def("__repr__", [](const Shape& s) { return modes_repr("Shape", s.modes()); })
      .def("__str__", &Shape::to_string);

  py::class_<Stride>(m, "Stride", R"doc(
Stride(*items): non-negative strides congruent to a Shape (core-concepts.md
3.1); nested like Shape. A negative or non-integer stride is a ValueError.
Immutable and hashable.)doc")
      .def(py::init([](const py::args& items) { return Stride(modes_arg(items, "Stride")); }))
      .def_property_readonly("rank", &Stride::rank)
      .def_property_readonly("modes", [](const Stride& s) { return modes_object(s.modes()); })
      .def("__len__", &Stride::rank)
      .def("__iter__", [](const Stride& s) { return py::iter(modes_object(s.modes())); })
      .def("__eq__", [](const Stride& a, py::handle b) { return py::isinstance<Stride>(b) && a == b.cast<const Stride&>(); })
      .def("__hash__", &Stride::hash)
      .def("__repr__", [](const Stride& s) { return modes_repr("Stride", s.modes()); })
      .def("__str__", &Stride::to_string);

  py::class_<Layout>(m, "Layout", R"doc(
Layout(shape, stride): maps a coordinate to an index, the sum of leaf
coordinate times leaf stride (core-concepts.md 3.2). Shape and Stride must
have identical nesting (ValueError). Calling it on an integer key expands the
key mixed-radix, first mode fastest (the logical order); on a tuple with one
entry per top-level mode (an integer key of that mode, or a nested tuple of
leaf coordinates). Out of domain -> ValueError. Immutable and hashable.)doc")
      .def(py::init([](py::handle shape, py::handle stride) {
             return Layout(shape_arg(shape, "Layout: shape"), stride_arg(stride, "Layout: stride"));
           }),
           py::arg("shape"), py::arg("stride"))
      .def_static("compact", [](py::handle shape) { return Layout::compact(shape_arg(shape, "Layout.compact")); },
                  py::arg("shape"),
                  "The canonical compact injective layout of `shape` (first mode fastest): index == logical ordinal.")
      .def_static("row_major", [](py::handle shape) { return Layout::row_major(shape_arg(shape, "Layout.row_major")); },
                  py::arg("shape"), "The row-major compact layout of `shape` (last leaf fastest), for interop.")
      .def_property_readonly("shape", &Layout::shape)
      .def_property_readonly("stride", &Layout::stride)
      .def_property_readonly("rank", &Layout::rank)
      .def_property_readonly("size", &Layout::size, "The product of the extents.")
      .def_property_readonly("cosize", &Layout::cosize, "1 + the largest reachable index (0 for an empty layout).")
      .def_property_readonly("is_injective", &Layout::is_injective, "No two coordinates map to one index.")
      .def_property_readonly("is_compact", &Layout::is_compact, "Equal to Layout.compact(self.shape).")
      .def_property_readonly("is_flat", &Layout::is_flat, "Every top-level mode is a leaf.")
      .def("__call__", &layout_call, py::arg("key"))
      .def("mode_index", [](const Layout& l, std::int64_t axis, std::int64_t key) {
             if (axis < 0) throw ValueError(fmt::format("Layout.mode_index: axis {} is negative", axis));
             return l.mode_index(static_cast<std::size_t>(axis), key);
           }, py::arg("axis"), py::arg("key"), "The index one integer key of top-level mode `axis` contributes.")
      .def("broadcast_to", [](const Layout& l, py::handle shape) { return l.broadcast_to(shape_arg(shape, "Layout.broadcast_to")); },
           py::arg("shape"), "numpy broadcasting: extent-1 leaves widen with stride 0 (ValueError otherwise).")
      .def("permute", [](const Layout& l, const py::args& perm) {
             const std::vector<std::int64_t> p =
                 perm.size() == 1 && !PyIndex_Check(perm[0].ptr()) ? integers_arg(perm[0], "Layout.permute")
                                                                    : integers_arg(perm, "Layout.permute");
             return l.permute(p);
           }, "The top-level modes in the given order (a permutation of range(rank); ValueError otherwise).")
      .def("slice", [](const Layout& l, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
             std::int64_t offset_delta = 0;
             Layout out = l.slice(axis, start, stop, step, &offset_delta);
             return py::make_tuple(out, offset_delta);
           }, py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step") = 1,
           "(layout, offset_delta): the sliced mode and the offset the view adds.")
      .def("reshape", [](const Layout& l, py::handle shape) { return l.reshape(shape_arg(shape, "Layout.reshape")); },
           py::arg("shape"), "The same indices in logical order under another shape of equal size (ValueError when no "
           "strides express it).")
      .def("squeeze", [](const Layout& l, py::handle axes) { return l.squeeze(optional_axes(axes, "Layout.squeeze")); },
           py::arg("axes") = py::none(), "Without extent-1 top-level modes (all, or the listed ones).")
      .def("unsqueeze", &Layout::unsqueeze, py::arg("axis"), "With an extent-1, stride-0 mode inserted at `axis`.")
      .def("flatten", &Layout::flatten, "Every leaf as a top-level mode (same indices).")
      .def("coalesce", &Layout::coalesce, "The fewest modes with the same index function (merged where strides chain).")
      // The layout algebra (docs/layout.md, "Layout algebra").
      .def("compose", [](const Layout& a, py::handle b) {
             if (py::isinstance<Layout>(b)) return a.compose(b.cast<const Layout&>());
             return a.compose(tiler_arg(b, "Layout.compose"));
           }, py::arg("b"), R"doc(
compose(b): the layout R with R(i) == self(b(i)) for every i < b.size, with
b's profile (each leaf of b becomes a mode of the same extent). b is a Layout,
or a tiler: a sequence of Layouts (an int n meaning Layout((n,), (1,))) that
composes mode by mode. b must stay inside self's domain, and CuTe's
divisibility conditions must hold (ValueError naming the one that fails).)doc")
      .def("complement", &Layout::complement, py::arg("cotarget") = py::none(), R"doc(
complement(cotarget=None): the layout R, sorted by stride and coalesced, of
the indices self's image leaves out: (self, R) is injective and reaches
cotarget (default: self.cosize). ValueError for a layout whose leaves overlap
or interleave.)doc")
      .def("logical_divide", [](const Layout& a, py::handle b) {
             if (py::isinstance<Layout>(b)) return a.logical_divide(b.cast<const Layout&>());
             return a.logical_divide(tiler_arg(b, "Layout.logical_divide"));
           }, py::arg("tiler"), R"doc(
logical_divide(tiler): self composed with (tile, rest): mode 0 walks one
tile, mode 1 the tiles. A tiler sequence divides mode by mode (each mode i
becomes the nested mode (tile_i, rest_i)). The tile must divide the domain
exactly (ValueError).)doc")
      .def("zipped_divide", [](const Layout& a, py::handle tiler) {
             return a.zipped_divide(tiler_arg(tiler, "Layout.zipped_divide"));
           }, py::arg("tiler"), "The by-mode division as ((tile_0, tile_1, ...), (rest_0, rest_1, ..., kept modes)).")
      .def("tiled_divide", [](const Layout& a, py::handle tiler) {
             return a.tiled_divide(tiler_arg(tiler, "Layout.tiled_divide"));
           }, py::arg("tiler"), "The by-mode division as ((tile_0, tile_1, ...), rest_0, rest_1, ..., kept modes).")
      .def("logical_product", &Layout::logical_product, py::arg("b"), R"doc(
logical_product(b): (self, self.complement(self.size * b.cosize).compose(b)):
mode 0 is self, mode 1 repeats it in b's arrangement.)doc")
      .def("__eq__", [](const Layout& a, py::handle b) { return py::isinstance<Layout>(b) && a == b.cast<const Layout&>(); })
      .def("__hash__", &Layout::hash)
      .def("__repr__", [](const Layout& l) {
        return fmt::format("Layout({}, {})", modes_repr("Shape", l.shape().modes()), modes_repr("Stride", l.stride().modes()));
      })
      .def("__str__", &Layout::to_string);
}

}  // namespace strideweave::python
