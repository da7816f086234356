// The policy's sealed enums as Python enum.Enum classes (operation-dtype-
// policy.md R1-R2: "enum values are the lower-case names"), made once from
// the C++ central lists (policy_enums.def through all_arithmetics(), ...),
// so that `Arithmetic.BINARY32.value == "binary32"` and `Arithmetic("binary32")`
// behave as the specification writes them. Members are immutable and
// hashable (enum.Enum).
#include "bindings.h"

#include <fmt/format.h>

#include <vector>

namespace strideweave::python {
namespace {

template <class E>
struct EnumClass {
  static inline const char* name = nullptr;
  static inline py::object* cls = nullptr;            // the enum.Enum subclass
  static inline std::vector<py::object>* members = nullptr;  // by underlying value
};

// Makes the Python class of E: member i is `names[i]` with value `values[i]`,
// for the C++ members `cpp[i]`.
template <class E>
void make_enum(py::module_& m, const char* name, const char* doc, const std::vector<E>& cpp,
               const std::vector<std::string>& names, const std::vector<std::string>& values) {
  py::list items;
  for (std::size_t i = 0; i < cpp.size(); ++i) items.append(py::make_tuple(names[i], values[i]));
  py::object enum_type = py::module_::import("enum").attr("Enum");
  py::object cls = enum_type(name, items, py::arg("module") = "strideweave");
  cls.attr("__doc__") = doc;
  EnumClass<E>::name = name;
  EnumClass<E>::cls = new py::object(cls);
  auto* members = new std::vector<py::object>();
  for (std::size_t i = 0; i < cpp.size(); ++i) {
    const auto index = static_cast<std::size_t>(cpp[i]);
    if (members->size() <= index) members->resize(index + 1);
    (*members)[index] = cls.attr(names[i].c_str());
  }
  EnumClass<E>::members = members;
  m.attr(name) = cls;
}

template <class E>
py::object member(E v) {
  return (*EnumClass<E>::members)[static_cast<std::size_t>(v)];
}

}  // namespace

template <class E>
E from_py(py::handle value, const char* what) {
  const std::vector<py::object>& members = *EnumClass<E>::members;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i].ptr() == value.ptr()) return static_cast<E>(i);
  throw TypeError(fmt::format("{}: expected a {} member, got {}", what, EnumClass<E>::name,
                              py::repr(value).cast<std::string>()));
}

template OperandRole from_py<OperandRole>(py::handle, const char*);
template Arithmetic from_py<Arithmetic>(py::handle, const char*);
template Accumulation from_py<Accumulation>(py::handle, const char*);
template WeakScalarKind from_py<WeakScalarKind>(py::handle, const char*);
template SupportLevel from_py<SupportLevel>(py::handle, const char*);
template ExecutionAxis from_py<ExecutionAxis>(py::handle, const char*);
template operation::OperandKind from_py<operation::OperandKind>(py::handle, const char*);
template operation::OptionKind from_py<operation::OptionKind>(py::handle, const char*);

py::object to_py(OperandRole v) { return member(v); }
py::object to_py(Arithmetic v) { return member(v); }
py::object to_py(Accumulation v) { return member(v); }
py::object to_py(WeakScalarKind v) { return member(v); }
py::object to_py(SupportLevel v) { return member(v); }
py::object to_py(ExecutionAxis v) { return member(v); }
py::object to_py(operation::OperandKind v) { return member(v); }
py::object to_py(operation::OptionKind v) { return member(v); }

void bind_enums(py::module_& m) {
  {
    const std::vector<OperandRole> cpp = {OperandRole::TENSOR, OperandRole::WEAK_SCALAR};
    std::vector<std::string> names, values;
    for (OperandRole r : cpp) {
      names.emplace_back(name_of(r));
      values.emplace_back(value_of(r));
    }
    make_enum(m, "OperandRole", "Whether an operand position is a tensor or a weak scalar (policy R1).", cpp, names,
              values);
  }
  {
    const auto all = all_arithmetics();
    const std::vector<Arithmetic> cpp(all.begin(), all.end());
    std::vector<std::string> names, values;
    for (Arithmetic a : cpp) {
      names.emplace_back(name_of(a));
      values.emplace_back(value_of(a));
    }
    make_enum(m, "Arithmetic",
              "The per-element arithmetic of a plan (policy R2). BINARY32_FUSED is beyond the specification: the "
              "contracted matmul, selected only explicitly (docs/policy.md).",
              cpp, names, values);
  }
  {
    const auto all = all_accumulations();
    const std::vector<Accumulation> cpp(all.begin(), all.end());
    std::vector<std::string> names, values;
    for (Accumulation a : cpp) {
      names.emplace_back(name_of(a));
      values.emplace_back(value_of(a));
    }
    make_enum(m, "Accumulation", "How several terms combine (policy R2).", cpp, names, values);
  }
  make_enum(m, "WeakScalarKind", "The branch a weak scalar selects (policy R7): bool counts as FLOAT.",
            std::vector<WeakScalarKind>{WeakScalarKind::INTEGER, WeakScalarKind::FLOAT}, {"INTEGER", "FLOAT"},
            {"integer", "float"});
  {
    const std::vector<SupportLevel> cpp = {SupportLevel::Unsupported, SupportLevel::FallbackCopy,
                                           SupportLevel::Native};
    std::vector<std::string> names;
    for (SupportLevel l : cpp) names.emplace_back(name_of(l));
    make_enum(m, "SupportLevel", "The three-valued support of one execution axis (the descriptor note).", cpp, names,
              names);
  }
  {
    const auto all = all_execution_axes();
    const std::vector<ExecutionAxis> cpp(all.begin(), all.end());
    std::vector<std::string> names;
    for (ExecutionAxis a : cpp) names.emplace_back(name_of(a));
    make_enum(m, "ExecutionAxis", "An execution axis of a capability entry (the descriptor note).", cpp, names, names);
  }
  {
    // operation-semantics.md: explicit string values, not generated ordinals.
    using operation::OperandKind;
    const std::vector<OperandKind> cpp = {OperandKind::TENSOR, OperandKind::WEAK_SCALAR, OperandKind::STRUCTURAL};
    std::vector<std::string> values;
    for (OperandKind k : cpp) values.emplace_back(operation::value_of(k));
    make_enum(m, "OperandKind",
              "The kind of one operand of an OperationSchema (operation-semantics.md): TENSOR='tensor', "
              "WEAK_SCALAR='weak_scalar', STRUCTURAL='structural'.",
              cpp, {"TENSOR", "WEAK_SCALAR", "STRUCTURAL"}, values);
  }
  {
    // Beyond the specification (issue 21, step 4): the values an option
    // accepts, string-valued like OperandKind.
    using operation::OptionKind;
    const std::vector<OptionKind> cpp = {OptionKind::ANY,      OptionKind::BOOL, OptionKind::INTEGER, OptionKind::REAL,
                                         OptionKind::INTEGERS, OptionKind::TEXT, OptionKind::DTYPE};
    std::vector<std::string> values;
    for (OptionKind k : cpp) values.emplace_back(operation::value_of(k));
    make_enum(m, "OptionKind",
              "The values an OptionSpec accepts, checked when a call is bound (before resolve): ANY='any' "
              "(everything; the default), BOOL='bool', INTEGER='int' (not a bool), REAL='real' (a float, or an "
              "int a double holds exactly, bound as that float), INTEGERS='ints' (a sequence of ints, or one int "
              "bound as a one-element tuple), TEXT='str', DTYPE='dtype'. None fits any kind when the option's "
              "default is None.",
              cpp, {"ANY", "BOOL", "INTEGER", "REAL", "INTEGERS", "TEXT", "DTYPE"}, values);
  }
}

}  // namespace strideweave::python
