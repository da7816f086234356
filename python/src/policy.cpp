// The central dtype policy (operation-dtype-policy.md): the immutable plan
// records, operation specifications, execution options and resolution.
//
// Records are constructible by keyword with the specification's field
// names (OperandPlan(role=..., dtype=..., convert_to=...),
// OperationPlan(operation=..., operands=..., compute=..., accumulation=...,
// accumulator_dtype=..., output=...)), immutable (AttributeError) and
// hashable with field equality. A field of the wrong type is a TypeError
// naming it. Plan rules are callables rule(operation, operands) -> plan:
// those of the registered specifications run in C++; a Python rule given to
// OperationOverload runs with the GIL held only while it runs.
#include "bindings.h"

#include <fmt/format.h>

namespace strideweave::python {
namespace {

std::string str_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr()))
    throw TypeError(fmt::format("{}: expected a str, got {}", what, py::repr(value).cast<std::string>()));
  return value.cast<std::string>();
}

const SimpleDType* optional_simple_dtype_arg(py::handle value, const char* what) {
  if (value.is_none()) return nullptr;
  return &simple_dtype_arg(value, what);
}

template <class T>
std::vector<T> records_arg(py::handle values, const char* what, const char* record) {
  if (PyUnicode_Check(values.ptr()) || !py::isinstance<py::iterable>(values))
    throw TypeError(fmt::format("{}: expected an iterable of {}, got {}", what, record,
                                py::repr(values).cast<std::string>()));
  std::vector<T> out;
  std::size_t i = 0;
  for (py::handle v : values) {
    if (!py::isinstance<T>(v))
      throw TypeError(fmt::format("{}: entry {} is not an {} ({})", what, i, record, py::repr(v).cast<std::string>()));
    out.push_back(bound_value<T>(v, what));
    ++i;
  }
  return out;
}

py::tuple roles_object(std::span<const OperandRole> roles) {
  py::list out;
  for (OperandRole r : roles) out.append(to_py(r));
  return py::tuple(out);
}

std::vector<OperandRole> roles_arg(py::handle roles, const char* what) {
  if (PyUnicode_Check(roles.ptr()) || !py::isinstance<py::iterable>(roles))
    throw TypeError(fmt::format("{}: roles must be an iterable of OperandRole", what));
  std::vector<OperandRole> out;
  for (py::handle r : roles) out.push_back(from_py<OperandRole>(r, what));
  return out;
}

// One Python operand of planning: a DType is a tensor operand, a real number
// a weak scalar; anything else is handed to the policy as "a non-DType in a
// tensor slot", which raises the TypeError in the policy's own order (an
// unknown operation name is reported first, R5.2).
PlanOperand plan_operand_arg(py::handle value) {
  if (py::isinstance<DType>(value)) return PlanOperand(value.cast<const DType&>());
  if (is_real_number(value)) return PlanOperand(weak_scalar_arg(value, "resolve_operation_plan"));
  return PlanOperand(static_cast<const DType*>(nullptr));
}

py::object plan_operand_object(const PlanOperand& o) {
  if (o.role() == OperandRole::TENSOR) return dtype_object(o.dtype());
  return weak_scalar_object(o.scalar());
}

// A C++ plan rule as a Python callable rule(operation, operands).
py::cpp_function rule_object(PlanRule rule) {
  return py::cpp_function(
      [rule](const std::string& operation, py::iterable operands) {
        std::vector<PlanOperand> ops;
        for (py::handle o : operands) ops.push_back(plan_operand_arg(o));
        return rule(operation, ops);
      },
      py::arg("operation"), py::arg("operands"));
}

// A Python callable as a C++ plan rule.
PlanRule rule_arg(py::handle rule, const char* what) {
  if (!PyCallable_Check(rule.ptr())) throw TypeError(fmt::format("{}: rule must be callable", what));
  std::shared_ptr<SharedPyObject> owner = share(rule);
  return [owner](std::string_view operation, std::span<const PlanOperand> operands) -> OperationPlan {
    py::gil_scoped_acquire gil;
    py::list ops;
    for (const PlanOperand& o : operands) ops.append(plan_operand_object(o));
    py::object plan = owner->object(std::string(operation), py::tuple(ops));
    if (!py::isinstance<OperationPlan>(plan))
      throw TypeError(fmt::format("plan rule of '{}': returned {}, not an OperationPlan", operation,
                                  py::repr(plan).cast<std::string>()));
    return bound_value<OperationPlan>(plan, "plan rule");
  };
}

std::optional<std::vector<DTypeDomain>> domains_arg(py::handle domains) {
  if (domains.is_none()) return std::nullopt;
  std::vector<DTypeDomain> out;
  for (py::handle domain : domains) {
    DTypeDomain d;
    for (py::handle t : domain) d.push_back(&simple_dtype_arg(t, "OperationOverload: tensor_domains entry"));
    out.push_back(std::move(d));
  }
  return out;
}

py::object domains_object(const std::optional<std::vector<DTypeDomain>>& domains) {
  if (!domains) return py::none();
  py::list out;
  for (const DTypeDomain& d : *domains) {
    py::list one;
    for (const SimpleDType* t : d) one.append(dtype_object(t));
    out.append(py::tuple(one));
  }
  return py::tuple(out);
}

template <class T>
py::tuple tuple_of(const std::vector<T>& values) {
  py::list out;
  for (const T& v : values) out.append(py::cast(v));
  return py::tuple(out);
}

py::tuple dtypes_object(std::span<const SimpleDType* const> dtypes) {
  py::list out;
  for (const SimpleDType* d : dtypes) out.append(dtype_object(d));
  return py::tuple(out);
}

const OperationExecutionOptions* options_arg(py::handle options, const char* what) {
  if (options.is_none()) return nullptr;
  if (!py::isinstance<OperationExecutionOptions>(options))
    throw TypeError(fmt::format("{}: options must be an OperationExecutionOptions, got {}", what,
                                py::repr(options).cast<std::string>()));
  return &options.cast<const OperationExecutionOptions&>();
}

std::optional<Arithmetic> optional_arithmetic(py::handle value) {
  if (value.is_none()) return std::nullopt;
  return from_py<Arithmetic>(value, "OperationExecutionOptions: arithmetic");
}

std::string operand_plan_repr(const OperandPlan& p) {
  return fmt::format("OperandPlan(role={}, dtype={}, convert_to={})", py::repr(to_py(p.role())).cast<std::string>(),
                     py::repr(dtype_object(p.dtype())).cast<std::string>(),
                     py::repr(dtype_object(p.convert_to())).cast<std::string>());
}

}  // namespace

const OperationPlan& plan_arg(py::handle value, const char* what) {
  if (!py::isinstance<OperationPlan>(value))
    throw TypeError(fmt::format("{}: expected an OperationPlan, got {}", what, py::repr(value).cast<std::string>()));
  return bound_value<OperationPlan>(value, what);
}

void bind_policy(py::module_& m) {
  py::class_<OperandPlan>(m, "OperandPlan", R"doc(
OperandPlan(role, dtype, convert_to): one operand position of a plan (policy
R1). role an OperandRole; dtype the source SimpleDType of a tensor operand, or
None for a weak scalar; convert_to the SimpleDType used for computation.
Immutable and hashable; TypeError for a field of the wrong type.)doc")
      .def(py::init([](py::handle role, py::handle dtype, py::handle convert_to) {
             return OperandPlan(from_py<OperandRole>(role, "OperandPlan: role"),
                                optional_simple_dtype_arg(dtype, "OperandPlan: dtype"),
                                simple_dtype_arg(convert_to, "OperandPlan: convert_to"));
           }),
           py::arg("role"), py::arg("dtype"), py::arg("convert_to"))
      .def_property_readonly("role", [](const OperandPlan& p) { return to_py(p.role()); })
      .def_property_readonly("dtype", [](const OperandPlan& p) { return dtype_object(p.dtype()); })
      .def_property_readonly("convert_to", [](const OperandPlan& p) { return dtype_object(p.convert_to()); })
      .def("__eq__", [](const OperandPlan& a, py::handle b) {
        return py::isinstance<OperandPlan>(b) && a == b.cast<const OperandPlan&>();
      })
      .def("__hash__", &OperandPlan::hash)
      .def("__repr__", &operand_plan_repr);

  py::class_<OperationPlan>(m, "OperationPlan", R"doc(
OperationPlan(operation, operands, compute, accumulation, accumulator_dtype,
output): the complete dtype decision of one call (policy R1). operation the
registered name; operands the OperandPlans in positional order (non-empty,
ValueError); compute an Arithmetic; accumulation an Accumulation or None;
accumulator_dtype a SimpleDType or None; output a SimpleDType. Immutable and
hashable with field equality. A result participates in autograd iff output
is exactly DType.Float32.)doc")
      .def(py::init([](py::handle operation, py::handle operands, py::handle compute, py::handle accumulation,
                       py::handle accumulator_dtype, py::handle output) {
             std::optional<Accumulation> acc;
             if (!accumulation.is_none()) acc = from_py<Accumulation>(accumulation, "OperationPlan: accumulation");
             return OperationPlan(str_arg(operation, "OperationPlan: operation"),
                                  records_arg<OperandPlan>(operands, "OperationPlan: operands", "OperandPlan"),
                                  from_py<Arithmetic>(compute, "OperationPlan: compute"), acc,
                                  optional_simple_dtype_arg(accumulator_dtype, "OperationPlan: accumulator_dtype"),
                                  simple_dtype_arg(output, "OperationPlan: output"));
           }),
           py::arg("operation"), py::arg("operands"), py::arg("compute"), py::arg("accumulation"),
           py::arg("accumulator_dtype"), py::arg("output"))
      .def_property_readonly("operation", &OperationPlan::operation)
      .def_property_readonly("operands", [](const OperationPlan& p) {
        return tuple_of(std::vector<OperandPlan>(p.operands().begin(), p.operands().end()));
      })
      .def_property_readonly("compute", [](const OperationPlan& p) { return to_py(p.compute()); })
      .def_property_readonly("accumulation", [](const OperationPlan& p) {
        return p.accumulation() ? to_py(*p.accumulation()) : py::none();
      })
      .def_property_readonly("accumulator_dtype", [](const OperationPlan& p) { return dtype_object(p.accumulator_dtype()); })
      .def_property_readonly("output", [](const OperationPlan& p) { return dtype_object(p.output()); })
      .def_property_readonly("roles", [](const OperationPlan& p) {
        const std::vector<OperandRole> roles = p.roles();
        return roles_object(roles);
      }, "The roles of the operands, in order.")
      .def("__eq__", [](const OperationPlan& a, py::handle b) {
        return py::isinstance<OperationPlan>(b) && a == b.cast<const OperationPlan&>();
      })
      .def("__hash__", &OperationPlan::hash)
      .def("__str__", &OperationPlan::to_string)
      .def("__repr__", [](const OperationPlan& p) {
        std::string ops;
        for (const OperandPlan& o : p.operands()) ops += (ops.empty() ? "" : ", ") + operand_plan_repr(o);
        return fmt::format("OperationPlan(operation={}, operands=({}{}), compute={}, accumulation={}, "
                           "accumulator_dtype={}, output={})",
                           py::repr(py::str(p.operation())).cast<std::string>(), ops,
                           p.operands().size() == 1 ? "," : "", py::repr(to_py(p.compute())).cast<std::string>(),
                           p.accumulation() ? py::repr(to_py(*p.accumulation())).cast<std::string>() : "None",
                           py::repr(dtype_object(p.accumulator_dtype())).cast<std::string>(),
                           py::repr(dtype_object(p.output())).cast<std::string>());
      });

  py::class_<OperationOverload>(m, "OperationOverload", R"doc(
OperationOverload(roles, rule, tensor_domains=None): one positional overload
of an operation (policy R3). rule(operation, operands) returns the plan;
tensor_domains has one non-empty tuple of SimpleDTypes per TENSOR role, or is
None (the caller's enumeration domain). Wrong count or an empty domain ->
ValueError.)doc")
      .def(py::init([](py::handle roles, py::handle rule, py::handle tensor_domains) {
             return OperationOverload(roles_arg(roles, "OperationOverload"), rule_arg(rule, "OperationOverload"),
                                      domains_arg(tensor_domains));
           }),
           py::arg("roles"), py::arg("rule"), py::arg("tensor_domains") = py::none())
      .def_property_readonly("roles", [](const OperationOverload& o) { return roles_object(o.roles()); })
      .def_property_readonly("rule", [](const OperationOverload& o) { return rule_object(o.rule()); })
      .def_property_readonly("tensor_domains", [](const OperationOverload& o) { return domains_object(o.tensor_domains()); });

  py::class_<OperationSpec>(m, "OperationSpec", R"doc(
OperationSpec(name, overloads, public=True, dtype_operand_positions=None): one
registered operation (policy R3). Violations -> ValueError. A single-overload
spec exposes roles and rule; a multi-overload spec raises AttributeError for
both.)doc")
      .def(py::init([](py::handle name, py::handle overloads, bool public_, py::handle positions) {
             std::optional<std::vector<std::int64_t>> pos;
             if (!positions.is_none()) {
               pos.emplace();
               for (py::handle p : positions) pos->push_back(integer_arg(p, "OperationSpec: dtype_operand_positions"));
             }
             return OperationSpec(str_arg(name, "OperationSpec: name"),
                                  records_arg<OperationOverload>(overloads, "OperationSpec: overloads", "OperationOverload"),
                                  public_, pos);
           }),
           py::arg("name"), py::arg("overloads"), py::arg("public") = true,
           py::arg("dtype_operand_positions") = py::none())
      .def_property_readonly("name", &OperationSpec::name)
      .def_property_readonly("overloads", [](const OperationSpec& s) {
        return tuple_of(std::vector<OperationOverload>(s.overloads().begin(), s.overloads().end()));
      })
      .def_property_readonly("public", &OperationSpec::is_public)
      .def_property_readonly("dtype_operand_positions", [](const OperationSpec& s) -> py::object {
        if (!s.dtype_operand_positions()) return py::none();
        return py::tuple(py::cast(*s.dtype_operand_positions()));
      })
      .def_property_readonly("roles", [](const OperationSpec& s) { return roles_object(s.roles()); })
      .def_property_readonly("rule", [](const OperationSpec& s) { return rule_object(s.rule()); })
      .def("__repr__", [](const OperationSpec& s) { return fmt::format("<OperationSpec '{}'>", s.name()); });

  py::class_<OperationExecutionOptions>(m, "OperationExecutionOptions", R"doc(
OperationExecutionOptions(operation, accumulator_dtype=None, *, arithmetic=None):
frozen execution options of reduce_sum or matmul (policy R10). Another
operation -> TypeError; a non-simple accumulator -> TypeError; a simple one
other than Float32/Float64 -> NotImplementedError. arithmetic is beyond the
specification: Arithmetic.BINARY32_FUSED asks matmul for the contracted plan
(docs/policy.md). Pass it to an operation as options=.)doc")
      .def(py::init([](py::handle operation, py::handle accumulator_dtype, py::handle arithmetic) {
             return OperationExecutionOptions(str_arg(operation, "OperationExecutionOptions: operation"),
                                              optional_dtype_arg(accumulator_dtype, "OperationExecutionOptions: accumulator_dtype"),
                                              optional_arithmetic(arithmetic));
           }),
           py::arg("operation"), py::arg("accumulator_dtype") = py::none(), py::kw_only(),
           py::arg("arithmetic") = py::none())
      .def_property_readonly("operation", &OperationExecutionOptions::operation)
      .def_property_readonly("accumulator_dtype", [](const OperationExecutionOptions& o) { return dtype_object(o.accumulator_dtype()); })
      .def_property_readonly("arithmetic", [](const OperationExecutionOptions& o) {
        return o.arithmetic() ? to_py(*o.arithmetic()) : py::none();
      })
      .def("__eq__", [](const OperationExecutionOptions& a, py::handle b) {
        return py::isinstance<OperationExecutionOptions>(b) && a == b.cast<const OperationExecutionOptions&>();
      })
      .def("__hash__", [](const OperationExecutionOptions& o) {
        return py::hash(py::make_tuple(o.operation(), dtype_object(o.accumulator_dtype()),
                                       o.arithmetic() ? to_py(*o.arithmetic()) : py::none()));
      })
      .def("__repr__", [](const OperationExecutionOptions& o) {
        return fmt::format("OperationExecutionOptions('{}', accumulator_dtype={}{})", o.operation(),
                           py::repr(dtype_object(o.accumulator_dtype())).cast<std::string>(),
                           o.arithmetic() ? ", arithmetic=" + py::repr(to_py(*o.arithmetic())).cast<std::string>() : "");
      });

  m.def(
      "operation_execution_options",
      [](py::handle operation, py::handle accumulator_dtype, py::handle arithmetic) {
        return operation_execution_options(str_arg(operation, "operation_execution_options: operation"),
                                           optional_dtype_arg(accumulator_dtype, "operation_execution_options: accumulator_dtype"),
                                           optional_arithmetic(arithmetic));
      },
      py::arg("operation"), py::kw_only(), py::arg("accumulator_dtype") = py::none(), py::arg("arithmetic") = py::none(),
      "The same as OperationExecutionOptions(operation, accumulator_dtype, arithmetic=...).");

  m.def(
      "resolve_operation_plan",
      [](py::handle operation, const py::args& operands, py::handle accumulator_dtype, py::handle options) {
        const std::string name = str_arg(operation, "resolve_operation_plan: operation");
        const DType* acc = optional_dtype_arg(accumulator_dtype, "resolve_operation_plan: accumulator_dtype");
        const OperationExecutionOptions* opts = options_arg(options, "resolve_operation_plan");
        std::vector<PlanOperand> ops;
        for (py::handle o : operands) ops.push_back(plan_operand_arg(o));
        return resolve_operation_plan(name, ops, acc, opts);
      },
      py::arg("operation"), py::kw_only(), py::arg("accumulator_dtype") = py::none(), py::arg("options") = py::none(),
      R"doc(resolve_operation_plan(operation, *operands, accumulator_dtype=None, options=None)

The one plan of a call (policy R5): tensor operands are passed as their
storage DType, weak scalars as their Python value, in the operation's
dtype-operand order. Unknown name -> NotImplementedError; wrong operand count,
no matching role signature, a non-DType in a tensor slot, a non-real weak
scalar, both accumulator_dtype and options -> TypeError; options bound to
another operation -> ValueError.)doc");

  m.def(
      "resolvable_plans",
      [](py::handle tensor_dtypes, py::handle weak_scalars) {
        std::vector<const SimpleDType*> dtypes;
        if (tensor_dtypes.is_none()) {
          dtypes.assign(SUPPORTED_TENSOR_DTYPES().begin(), SUPPORTED_TENSOR_DTYPES().end());
        } else {
          for (py::handle d : tensor_dtypes) dtypes.push_back(&simple_dtype_arg(d, "resolvable_plans: tensor_dtypes"));
        }
        std::vector<WeakScalar> scalars;
        if (weak_scalars.is_none()) {
          scalars.assign(WEAK_SCALAR_PROBES().begin(), WEAK_SCALAR_PROBES().end());
        } else {
          for (py::handle s : weak_scalars) scalars.push_back(weak_scalar_arg(s, "resolvable_plans: weak_scalars"));
        }
        return tuple_of(resolvable_plans(dtypes, scalars));
      },
      py::arg("tensor_dtypes") = py::none(), py::arg("weak_scalars") = py::none(),
      "Every plan the registry resolves (policy R4), in spec, overload and Cartesian order, expanded by "
      "plan_accumulator_variants and de-duplicated. None = SUPPORTED_TENSOR_DTYPES / WEAK_SCALAR_PROBES.");
  m.def("plan_accumulator_variants", [](py::handle plan) {
        return tuple_of(plan_accumulator_variants(plan_arg(plan, "plan_accumulator_variants")));
      }, py::arg("plan"), "plan, then one copy per other supported accumulator of a FLOATING configurable plan (R10.4).");
  m.def("plan_arithmetic_variants", [](py::handle plan) {
        return tuple_of(plan_arithmetic_variants(plan_arg(plan, "plan_arithmetic_variants")));
      }, py::arg("plan"), "Beyond the specification: plan, then its explicitly requestable contracted variant.");
  m.def("executable_plan_set", [] { return tuple_of(executable_plan_set()); },
        "Every concrete public plan a complete reference carrier executes (docs/policy.md).");
  m.def("representative_plan", [](py::handle operation, py::handle dtype) -> py::object {
        const std::optional<OperationPlan> p =
            representative_plan(str_arg(operation, "representative_plan"), simple_dtype_arg(dtype, "representative_plan"));
        return p ? py::cast(*p) : py::none();
      }, py::arg("operation"), py::arg("dtype"),
      "The representative plan of (operation, dtype): the descriptor note's table key (docs/capabilities.md).");
  m.def("registered_operations", [] {
        return tuple_of(std::vector<OperationSpec>(registered_operations().begin(), registered_operations().end()));
      }, "Every OperationSpec sorted by name (code-point order, internal names first).");
  m.def("weak_scalar_kind", [](py::handle value) { return to_py(weak_scalar_arg(value, "weak_scalar_kind").kind()); },
        py::arg("value"), "The WeakScalarKind a Python number selects (R7.1): bool -> FLOAT.");

  m.attr("SUPPORTED_TENSOR_DTYPES") = dtypes_object(SUPPORTED_TENSOR_DTYPES());
  m.attr("SUPPORTED_ACCUMULATOR_DTYPES") = dtypes_object(SUPPORTED_ACCUMULATOR_DTYPES());
  {
    py::list probes;
    for (const WeakScalar& s : WEAK_SCALAR_PROBES()) probes.append(weak_scalar_object(s));
    m.attr("WEAK_SCALAR_PROBES") = py::tuple(probes);
    py::list configurable;
    for (std::string_view op : CONFIGURABLE_OPERATIONS()) configurable.append(py::str(std::string(op)));
    m.attr("CONFIGURABLE_OPERATIONS") = py::tuple(configurable);
  }
  m.attr("INT32_MIN") = INT32_MIN_VALUE;
  m.attr("INT32_MAX") = INT32_MAX_VALUE;
  m.attr("POW_INTEGER_EXPONENT_MAX") = POW_INTEGER_EXPONENT_MAX;
}

}  // namespace strideweave::python
