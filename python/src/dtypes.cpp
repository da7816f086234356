// Dtype descriptors (core-concepts.md section 5) as Python identity
// objects: one Python object per descriptor for the life of the process,
// equal and hashed by identity, immutable (AttributeError), copied and
// unpickled as themselves.
//
// Python construction: DTypeCategory(name, *, supertype=None),
// SimpleDType(name, *, bits, supertype), and the concrete compound kind
// PlanarCompoundDType(name, *, simple_types, representation_rules=(),
// supertype=None) (CompoundDType itself is abstract, as in C++). Each
// registers its unique name atomically (ValueError for an empty or taken
// name). Built-ins are DType attributes named as dtypes.def names them
// (DType.Float32, ...); extensions never become attributes.
#include "bindings.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

namespace strideweave::python {
namespace {

// The Python object of every descriptor handed out (kept forever: a
// descriptor lives for the process, and identity must too).
std::unordered_map<const DType*, py::object>& dtype_objects() {
  static auto* objects = new std::unordered_map<const DType*, py::object>();
  return *objects;
}

// The built-ins' attribute names, from the central list.
const std::unordered_map<const DType*, const char*>& builtin_names() {
  static const auto* names = new std::unordered_map<const DType*, const char*>{
#define SW_DTYPE_CATEGORY(ident, name, super) {&DType::ident(), #ident},
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) {&DType::ident(), #ident},
#include <strideweave/dtypes.def>
  };
  return *names;
}

std::string dtype_repr(const DType& d) {
  auto it = builtin_names().find(&d);
  if (it != builtin_names().end()) return std::string("DType.") + it->second;
  return fmt::format("DType.from_name('{}')", d.name());
}

const char* kind_of(const DType& d) { return d.is_category() ? "category" : d.is_simple() ? "simple" : "compound"; }

std::string name_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr()))
    throw TypeError(fmt::format("{}: name must be a str, got {}", what,
                                py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>()));
  return value.cast<std::string>();
}

template <class T>
T* mutable_descriptor(const T& d) {
  return const_cast<T*>(&d);  // descriptors are immutable; pybind11 holds non-const pointers
}

}  // namespace

py::object dtype_object(const DType* dtype) {
  if (!dtype) return py::none();
  auto& objects = dtype_objects();
  auto it = objects.find(dtype);
  if (it != objects.end()) return it->second;
  py::object o = py::cast(const_cast<DType*>(dtype), py::return_value_policy::reference);
  objects.emplace(dtype, o);
  return o;
}

const DType& dtype_arg(py::handle value, const char* what) {
  if (!py::isinstance<DType>(value))
    throw TypeError(fmt::format("{}: expected a DType, got {}", what, py::repr(value).cast<std::string>()));
  return bound_value<DType>(value, what);
}

const SimpleDType& simple_dtype_arg(py::handle value, const char* what) {
  const DType& d = dtype_arg(value, what);
  if (!d.is_simple())
    throw TypeError(fmt::format("{}: expected a SimpleDType, got the {} {}", what,
                                d.is_category() ? "category" : "compound dtype", d.name()));
  return static_cast<const SimpleDType&>(d);
}

const DType* optional_dtype_arg(py::handle value, const char* what) {
  if (value.is_none()) return nullptr;
  return &dtype_arg(value, what);
}

void bind_dtypes(py::module_& m) {
  auto dtype = py::class_<DType, std::unique_ptr<DType, py::nodelete>>(m, "DType", R"doc(
A dtype descriptor (core-concepts.md 5): an identity object, equal and hashed by
identity, immutable. Built-ins are attributes (DType.Float32, DType.Int32,
DType.Bool, DType.Any, ...); only Float32, Int32 and Bool are stored or
computed. DType itself is abstract: construct DTypeCategory, SimpleDType or
PlanarCompoundDType.)doc");
  dtype.def_property_readonly("name", &DType::name, "The unique registered name.")
      .def("is_category", &DType::is_category, "A relationship-only category (Any, Floating, Integer, ...).")
      .def("is_simple", &DType::is_simple, "A simple (homogeneous, scalar) dtype.")
      .def("is_compound", &DType::is_compound, "A compound dtype of simple planes.")
      .def_property_readonly("supertype", [](const DType& d) { return dtype_object(d.supertype()); },
                             "The direct supertype, or None for a root.")
      .def(
          "supertypes",
          [](const DType& d) {
            py::list out;
            for (const DType* s : d.supertypes()) out.append(dtype_object(s));
            return py::tuple(out);
          },
          "Every ancestor, nearest first.")
      .def(
          "is_subtype_of",
          [](const DType& d, py::handle other) { return d.is_subtype_of(dtype_arg(other, "DType.is_subtype_of")); },
          py::arg("other"), "Reflexive: a descriptor is a subtype of itself.")
      .def_property_readonly("bits", &DType::bits, "Bit width of a simple dtype, None otherwise.")
      .def_static(
          "from_name",
          [](py::handle name) { return dtype_object(DType::from_name(name_arg(name, "DType.from_name"))); },
          py::arg("name"), "The descriptor registered under `name` (LookupError if none).")
      .def_static(
          "registered",
          [] {
            py::list out;
            for (const DType* d : DType::registered()) out.append(dtype_object(d));
            return py::tuple(out);
          },
          "Every registered descriptor, in registration order (built-ins first).")
      .def("__eq__", [](const DType& a, py::handle b) { return py::isinstance<DType>(b) && &a == &b.cast<const DType&>(); })
      .def("__hash__", [](const DType& d) { return std::hash<const void*>{}(&d); })
      .def("__repr__", &dtype_repr)
      .def("__copy__", [](py::handle self) { return py::reinterpret_borrow<py::object>(self); })
      .def("__deepcopy__", [](py::handle self, py::handle) { return py::reinterpret_borrow<py::object>(self); })
      .def("__reduce__", [](const DType& d) {
        return py::make_tuple(py::module_::import("strideweave._pickling").attr("unpickle_dtype"),
                              py::make_tuple(d.name(), kind_of(d)));
      });

  py::class_<DTypeCategory, DType, std::unique_ptr<DTypeCategory, py::nodelete>>(
      m, "DTypeCategory", "A relationship-only category (Any, Floating, Integer, extensions); never stored.")
      .def(py::init([](py::handle name, py::handle supertype) {
             const DType* super = optional_dtype_arg(supertype, "DTypeCategory: supertype");
             return mutable_descriptor(DTypeCategory::create(name_arg(name, "DTypeCategory"), super));
           }),
           py::arg("name"), py::kw_only(), py::arg("supertype") = py::none());

  py::class_<SimpleDType, DType, std::unique_ptr<SimpleDType, py::nodelete>>(
      m, "SimpleDType", "A simple (homogeneous, scalar) dtype; extensions are registered but never implemented.")
      .def(py::init([](py::handle name, py::handle bits, py::handle supertype) {
             const std::int64_t b = integer_arg(bits, "SimpleDType: bits");
             if (b <= 0 || b > std::numeric_limits<int>::max())
               throw ValueError(fmt::format("SimpleDType: bits must be positive, got {}", b));
             return mutable_descriptor(SimpleDType::create(name_arg(name, "SimpleDType"), static_cast<int>(b),
                                                           dtype_arg(supertype, "SimpleDType: supertype")));
           }),
           py::arg("name"), py::kw_only(), py::arg("bits"), py::arg("supertype"));

  py::class_<CompoundDType, DType, std::unique_ptr<CompoundDType, py::nodelete>>(
      m, "CompoundDType",
      "A compound dtype: ordered simple planes plus declarative rules; never a homogeneous storage dtype. Abstract: "
      "construct a concrete kind such as PlanarCompoundDType.")
      .def_property_readonly("simple_types",
                             [](const CompoundDType& d) {
                               py::list out;
                               for (const SimpleDType* s : d.simple_types()) out.append(dtype_object(s));
                               return py::tuple(out);
                             })
      .def_property_readonly("num_carriers", &CompoundDType::num_carriers)
      .def_property_readonly("representation_rules", [](const CompoundDType& d) {
        py::list out;
        for (const std::string& r : d.representation_rules()) out.append(r);
        return py::tuple(out);
      });

  py::class_<PlanarCompoundDType, CompoundDType, std::unique_ptr<PlanarCompoundDType, py::nodelete>>(
      m, "PlanarCompoundDType", "The plain concrete compound kind (one plane per simple type).")
      .def(py::init([](py::handle name, py::iterable simple_types, py::iterable rules, py::handle supertype) {
             std::vector<const SimpleDType*> planes;
             for (py::handle t : simple_types)
               planes.push_back(&simple_dtype_arg(t, "PlanarCompoundDType: simple_types entry"));
             std::vector<std::string> rule_list;
             for (py::handle r : rules) rule_list.push_back(name_arg(r, "PlanarCompoundDType: representation rule"));
             const DType* super = optional_dtype_arg(supertype, "PlanarCompoundDType: supertype");
             return mutable_descriptor(PlanarCompoundDType::create(name_arg(name, "PlanarCompoundDType"),
                                                                   std::move(planes), std::move(rule_list), super));
           }),
           py::arg("name"), py::kw_only(), py::arg("simple_types"), py::arg("representation_rules") = py::tuple(),
           py::arg("supertype") = py::none());

  for (const DType* d : DType::registered()) {
    auto it = builtin_names().find(d);
    if (it != builtin_names().end()) dtype.attr(it->second) = dtype_object(d);
  }

  m.def(
      "_unpickle_dtype",
      [](const std::string& name, const std::string& kind) {
        const DType& d = DType::from_name(name);  // LookupError for a name this process does not know
        if (kind != kind_of(d))
          throw ValueError(fmt::format("unpickling DType '{}': it was a {} dtype but is a {} dtype here", name, kind,
                                       kind_of(d)));
        return dtype_object(d);
      },
      "Resolves a pickled DType to this process's descriptor of that name.");
  m.def(
      "storage_zero", [](py::handle d) -> py::object {
        const std::optional<Value> z = storage_zero(dtype_arg(d, "storage_zero"));
        return z ? value_object(*z) : py::none();
      },
      py::arg("dtype"), "The zero an initialised storage of `dtype` holds (0.0, 0, False), or None.");
}

}  // namespace strideweave::python
