// The central list of built-in operation families (call_support.h) and the
// by-name calls derived from it (call.h).
#include <algorithm>

#include "frontend/call_support.h"
#include "frontend/pipeline.h"
#include "operation/registry.h"

namespace strideweave {
namespace frontend {

const std::vector<BuiltinEntry>& builtin_entries() {
  static const std::vector<BuiltinEntry> table = [] {
    std::vector<BuiltinEntry> out;
    add_arithmetic_builtins(out);
    add_unary_builtins(out);
    add_reduction_builtins(out);
    add_structured_builtins(out);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }();
  return table;
}

const BuiltinEntry* find_builtin(std::string_view name) noexcept {
  const std::vector<BuiltinEntry>& t = builtin_entries();
  const auto it = std::lower_bound(t.begin(), t.end(), name, [](const BuiltinEntry& e, std::string_view n) {
    return e.name < n;
  });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

namespace builtin_schema {

namespace {
[[noreturn]] void wrong_kind(const BoundCall& call, const char* name, const char* want) {
  throw TypeError(fmt::format("{}: option '{}' must be {}, got {}", call.definition().name(), name, want,
                              operation::to_string(call.option(name))));
}
}  // namespace

bool bool_option(const BoundCall& call, const char* name) {
  if (const bool* b = std::get_if<bool>(&call.option(name))) return *b;
  wrong_kind(call, name, "a bool");
}

std::int64_t int_option(const BoundCall& call, const char* name) {
  if (const std::int64_t* i = std::get_if<std::int64_t>(&call.option(name))) return *i;
  wrong_kind(call, name, "an integer");
}

std::optional<std::int64_t> optional_int_option(const BoundCall& call, const char* name) {
  if (std::holds_alternative<std::monostate>(call.option(name))) return std::nullopt;
  return int_option(call, name);
}

double real_option(const BoundCall& call, const char* name) {
  const operation::OptionValue& v = call.option(name);
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  wrong_kind(call, name, "a real number");
}

std::optional<std::vector<std::int64_t>> ints_option(const BoundCall& call, const char* name) {
  const operation::OptionValue& v = call.option(name);
  if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
  if (const auto* l = std::get_if<std::vector<std::int64_t>>(&v)) return *l;
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return std::vector<std::int64_t>{*i};
  wrong_kind(call, name, "a list of integers");
}

std::optional<OperationExecutionOptions> execution_options(const BoundCall& call) {
  const DType* accumulator = nullptr;
  std::optional<Arithmetic> arithmetic;
  const operation::OperationSchema& schema = call.definition().schema();
  if (schema.option("accumulator_dtype")) {
    const operation::OptionValue& v = call.option("accumulator_dtype");
    if (const DType* const* d = std::get_if<const DType*>(&v)) accumulator = *d;
    else if (!std::holds_alternative<std::monostate>(v)) wrong_kind(call, "accumulator_dtype", "a DType or None");
  }
  if (schema.option("arithmetic")) {
    const operation::OptionValue& v = call.option("arithmetic");
    if (const std::string* s = std::get_if<std::string>(&v)) arithmetic = arithmetic_from_value(*s);
    else if (!std::holds_alternative<std::monostate>(v)) wrong_kind(call, "arithmetic", "a string or None");
  }
  if (!accumulator && !arithmetic) return std::nullopt;
  return OperationExecutionOptions(call.definition().name(), accumulator, arithmetic);
}

operation::OptionSpec listed_option(std::string_view operation, std::string_view name) {
  struct Row {
    std::string_view operation, name;
    operation::OptionValue value;
    const char* doc;
    operation::OptionKind kind;
  };
  // The kind of a listed option is its C++ type's.
  constexpr auto kind_of = []<class T>(const T&) {
    if constexpr (std::is_same_v<T, bool>) return operation::OptionKind::BOOL;
    else if constexpr (std::is_same_v<T, std::int64_t>) return operation::OptionKind::INTEGER;
    else {
      static_assert(std::is_same_v<T, double>, "operations.def: an SW_OPTION type is bool, std::int64_t or double");
      return operation::OptionKind::REAL;
    }
  };
  static const std::vector<Row> rows = {
#define SW_OPTION(op, option_name, type, default_value, doc) \
  {#op, #option_name, operation::OptionValue(type{default_value}), doc, kind_of(type{default_value})},
#include <strideweave/operations.def>
  };
  for (const Row& r : rows)
    if (r.operation == operation && r.name == name)
      return operation::OptionSpec(std::string(name), r.value, r.doc, r.kind);
  throw RuntimeError(fmt::format("operations.def has no option '{}' of '{}'", name, operation));
}

operation::OptionSpec accumulator_option() {
  return option("accumulator_dtype", operation::OptionKind::DTYPE, operation::OptionValue(std::monostate{}),
                "the accumulator of a FLOATING plan (policy R10): None (Float32) or a DType, Float32 or Float64");
}
operation::OptionSpec arithmetic_option() {
  return option("arithmetic", operation::OptionKind::TEXT, operation::OptionValue(std::monostate{}),
                "the compute arithmetic: None (the plan's strict binary32), 'binary32' or 'binary32_fused' (each "
                "product may be contracted with its accumulation step)");
}

}  // namespace builtin_schema

namespace {

// The schema binding of a by-name call: the registered definition, or for
// sort and topk (two plans, no single definition) an unregistered one that
// only binds.
std::shared_ptr<const operation::OperationDefinition> binding_definition(const BuiltinEntry& e) {
  if (!e.composite) return operation::get_definition(e.name);
  static const auto composites = [] {
    std::map<std::string, std::shared_ptr<const operation::OperationDefinition>, std::less<>> out;
    for (const BuiltinEntry& c : builtin_entries()) {
      if (!c.composite) continue;
      const std::string name = c.name;
      out.emplace(name, operation::DefinitionAccess::make_builtin(
                            name, c.schema,
                            [name](const BoundCall&) -> operation::ResolvedInvocation {
                              throw NotImplementedError(fmt::format(
                                  "{}: a composite of two plans has no single resolved invocation; resolve _{}_values "
                                  "and _{}_indices",
                                  name, name, name));
                            },
                            std::nullopt, operation::NON_DIFFERENTIABLE, c.traits));
    }
    return out;
  }();
  return composites.at(e.name);
}

std::string signature_of(const BuiltinEntry& e) {
  std::vector<std::string> parts;
  for (const operation::OperandSpec& o : e.schema.operands())
    parts.push_back(fmt::format("{}: {}", o.name(), o.accepts_weak_scalar() ? "tensor | scalar" : "tensor"));
  std::string s = fmt::format("{}({})", e.name, fmt::join(parts, ", "));
  if (e.composite) s += " -> (values, indices)";
  if (!e.traits.is_public) s += fmt::format(" (internal plan of {})", e.name.substr(1, e.name.find('_', 1) - 1));
  return s;
}

// A by-name call: the definition's binding (TypeError for arity, kinds,
// unknown or missing options), the execution request as the schema's
// execution options, the entry's lowering, then execution.
CallResult call_builtin(const BuiltinEntry& e, std::span<const CallOperand> operands, const CallOptions& options,
                        const ExecutionRequest& execution) {
  // An explicit None means the option's default (call.h).
  operation::OptionMap bound_options;
  for (const auto& [name, value] : options)
    if (!std::holds_alternative<std::monostate>(value)) bound_options.emplace(name, value);
  auto put = [&](const char* name, operation::OptionValue value) {
    // An operation without execution options: the policy's TypeError.
    if (!e.schema.option(name)) (void)execution.options(e.name);
    if (!bound_options.emplace(name, std::move(value)).second)
      throw TypeError(fmt::format("{}: option '{}' is given twice (as an option and as an execution request)",
                                  e.name, name));
  };
  if (execution.accumulator) put("accumulator_dtype", execution.accumulator);
  if (execution.arithmetic) put("arithmetic", std::string(value_of(*execution.arithmetic)));
  std::vector<operation::CallOperand> bound_operands;
  bound_operands.reserve(operands.size());
  for (const CallOperand& o : operands) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) bound_operands.emplace_back(*t);
    else bound_operands.emplace_back(std::get<WeakScalar>(o));
  }
  const std::shared_ptr<const BoundCall> call =
      operation::bind(*binding_definition(e), std::move(bound_operands), std::move(bound_options));
  if (e.composite) {
    if (execution.out)
      throw TypeError(fmt::format("{}: has two results and takes no caller-provided output", e.name));
    return e.composite(*call);
  }
  Lowered lowered = e.lower(*call);
  // The plan reported is the kernel's on a kernel table and the
  // definition's invocation plan on a definition-backed carrier (they differ
  // only for mul(weak, tensor); docs/policy.md).
  OperationPlan plan =
      lowered.prototype->exact_class().traits().storage_provider ? lowered.invocation_plan() : lowered.plan;
  Tensor result =
      run(std::move(lowered), execution.out, CallRecord{CallInputs(call->operands()), nullptr}, call.get());
  return CallResult{{std::move(plan)}, {std::move(result)}};
}

}  // namespace
}  // namespace frontend

const std::vector<CallableOperation>& callable_operations() {
  static const std::vector<CallableOperation> table = [] {
    std::vector<CallableOperation> out;
    for (const frontend::BuiltinEntry& e : frontend::builtin_entries()) {
      CallableOperation c;
      c.name = e.name;
      c.signature = frontend::signature_of(e);
      for (const operation::OptionSpec& o : e.schema.options()) {
        if (o.name() == "accumulator_dtype" || o.name() == "arithmetic") continue;  // execution options
        c.options.push_back(OptionDoc{o.name(),
                                      o.required() ? "required" : operation::to_string(std::get<operation::OptionValue>(o.default_value())),
                                      o.doc()});
      }
      c.accepts_accumulator = e.schema.option("accumulator_dtype") != nullptr;
      c.accepts_arithmetic = e.traits.fused_arithmetic;
      c.internal = !e.traits.is_public;
      const frontend::BuiltinEntry* entry = &e;
      c.call = [entry](std::span<const CallOperand> operands, const CallOptions& options,
                       const ExecutionRequest& execution) {
        return frontend::call_builtin(*entry, operands, options, execution);
      };
      out.push_back(std::move(c));
    }
    return out;
  }();
  return table;
}

const CallableOperation* find_callable(std::string_view name) {
  for (const CallableOperation& c : callable_operations())
    if (c.name == name) return &c;
  return nullptr;
}

CallResult call_operation(std::string_view name, std::span<const CallOperand> operands, const CallOptions& options,
                          const ExecutionRequest& execution) {
  const frontend::BuiltinEntry* e = frontend::find_builtin(name);
  if (!e) throw NotImplementedError(fmt::format("call_operation: no public operation named '{}'", name));
  return frontend::call_builtin(*e, operands, options, execution);
}

}  // namespace strideweave
