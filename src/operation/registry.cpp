// The definition registry: built-in and user-defined operations, one record
// each. See include/strideweave/operation.h and src/operation/registry.h.
#include "operation/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <shared_mutex>

#include "core/bootstrap.h"

namespace strideweave::operation {

OperationDefinition::OperationDefinition(std::string name, OperationSchema schema, ResolveFn resolve,
                                         std::optional<ReferenceFn> reference, VjpChoice vjp,
                                         std::optional<BuiltinTraits> builtin)
    : name_(std::move(name)),
      schema_(std::move(schema)),
      resolve_(std::move(resolve)),
      reference_(std::move(reference)),
      vjp_(std::move(vjp)),
      builtin_(std::move(builtin)) {}

namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<std::string, std::shared_ptr<const OperationDefinition>, std::less<>> definitions;
  std::set<std::string, std::less<>> reserved;  // first segments no user definition may use
  bool builtins_registered = false;
};

Registry& registry() {
  static Registry* r = new Registry();  // lives for the program (definitions outlive statics)
  return *r;
}

std::atomic<Dispatcher> installed_dispatcher{nullptr};

// A name of the central policy registry (the built-in operation names).
bool is_registered_operation(std::string_view name) {
  for (const OperationSpec& spec : registered_operations())
    if (spec.name() == name) return true;
  return false;
}

// The checks shared by both kinds of definition.
void check_callbacks(const std::string& name, const ResolveFn& resolve, const std::optional<ReferenceFn>& reference,
                     const VjpChoice& vjp) {
  if (!resolve) throw ValueError(fmt::format("define_operation('{}'): resolve must be a callable", name));
  if (reference && !*reference)
    throw ValueError(fmt::format("define_operation('{}'): reference must be a callable or omitted", name));
  if (const VjpFn* f = std::get_if<VjpFn>(&vjp); f && !*f)
    throw ValueError(fmt::format("define_operation('{}'): vjp is required: a callable or NON_DIFFERENTIABLE", name));
}

std::vector<std::string_view> segments(std::string_view name) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    out.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

}  // namespace

std::shared_ptr<OperationDefinition> DefinitionAccess::make(std::string name, OperationSchema schema,
                                                            ResolveFn resolve, std::optional<ReferenceFn> reference,
                                                            VjpChoice vjp, std::optional<BuiltinTraits> builtin) {
  return std::shared_ptr<OperationDefinition>(new OperationDefinition(
      std::move(name), std::move(schema), std::move(resolve), std::move(reference), std::move(vjp), std::move(builtin)));
}

std::shared_ptr<OperationDefinition> DefinitionAccess::make_builtin(std::string name, OperationSchema schema,
                                                                    ResolveFn resolve,
                                                                    std::optional<ReferenceFn> reference,
                                                                    VjpChoice vjp, BuiltinTraits traits) {
  check_callbacks(name, resolve, reference, vjp);
  return make(std::move(name), std::move(schema), std::move(resolve), std::move(reference), std::move(vjp),
              std::move(traits));
}

void register_builtin_definitions(std::vector<std::shared_ptr<OperationDefinition>> definitions,
                                  std::vector<std::string> reserved) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (r.builtins_registered) throw RuntimeError("register_builtin_definitions: the built-ins are already registered");
  std::map<std::string, std::shared_ptr<const OperationDefinition>, std::less<>> staged = r.definitions;
  for (std::shared_ptr<OperationDefinition>& d : definitions) {
    if (!staged.emplace(d->name(), d).second)
      throw ValueError(fmt::format("register_builtin_definitions: '{}' is defined twice", d->name()));
  }
  std::set<std::string, std::less<>> staged_reserved = r.reserved;
  for (const auto& [name, d] : staged) staged_reserved.insert(name);
  for (std::string& name : reserved) staged_reserved.insert(std::move(name));
  r.definitions.swap(staged);
  r.reserved.swap(staged_reserved);
  r.builtins_registered = true;
}

std::shared_ptr<const OperationDefinition> define_operation(std::string name, OperationSchema schema,
                                                            ResolveFn resolve, std::optional<ReferenceFn> reference,
                                                            VjpChoice vjp) {
  // Everything is validated before the registry is touched.
  const std::vector<std::string_view> parts = segments(name);
  if (parts.size() < 2)
    throw ValueError(fmt::format("define_operation: '{}' is not a dot-namespaced name (write e.g. 'acme.{}')", name,
                                 name));
  for (std::string_view s : parts)
    if (!is_identifier(s))
      throw ValueError(fmt::format("define_operation: '{}' has the segment '{}', which is not an identifier", name, s));
  check_callbacks(name, resolve, reference, vjp);
  detail::ensure_bootstrapped();  // the built-in names are reserved first
  std::shared_ptr<const OperationDefinition> definition = DefinitionAccess::make(
      name, std::move(schema), std::move(resolve), std::move(reference), std::move(vjp), std::nullopt);
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  const std::string_view first = parts.front();
  if (first == "strideweave" || r.reserved.count(first) || is_registered_operation(first))
    throw ValueError(fmt::format("define_operation: '{}' uses the reserved namespace '{}' (strideweave and the "
                                 "built-in operation names)",
                                 name, first));
  if (r.definitions.count(name))
    throw ValueError(fmt::format("define_operation: '{}' is already defined (definitions are one-shot)", name));
  r.definitions.emplace(name, definition);
  return definition;
}

std::shared_ptr<const OperationDefinition> get_definition(std::string_view name) {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.definitions.find(name);
  if (it == r.definitions.end()) throw LookupError(fmt::format("get_definition: no operation named '{}'", name));
  return it->second;
}

std::vector<std::shared_ptr<const OperationDefinition>> registered_definitions() {
  detail::ensure_bootstrapped();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::shared_ptr<const OperationDefinition>> out;
  for (const auto& [name, d] : r.definitions) out.push_back(d);
  return out;
}

std::shared_ptr<const ResolvedInvocation> resolve_call(const OperationDefinition& definition,
                                                       std::vector<CallOperand> operands, OptionMap options) {
  const std::shared_ptr<const BoundOperationCall> call = bind(definition, std::move(operands), std::move(options));
  auto invocation = std::make_shared<const ResolvedInvocation>(definition.resolve()(*call));
  if (&invocation->call() != call.get())
    throw ValueError(fmt::format("{}: resolve returned an invocation of another bound call", definition.name()));
  return invocation;
}

std::vector<Tensor> execute_reference(const OperationDefinition& definition, const ResolvedInvocation& invocation) {
  const std::string& op = definition.name();
  if (&invocation.definition() != &definition)
    throw ValueError(fmt::format("execute_reference({}): the invocation resolves '{}'", op, invocation.operation()));
  if (!definition.reference())
    throw NotImplementedError(fmt::format("execute_reference: '{}' has no reference", op));
  ReferenceResult returned = (*definition.reference())(invocation);
  std::vector<Tensor> results;
  if (Tensor* t = std::get_if<Tensor>(&returned)) results.push_back(std::move(*t));
  else results = std::move(std::get<std::vector<Tensor>>(returned));
  if (results.empty())
    throw ProviderContractError("count", fmt::format("{}: the reference returned no result", op));
  const std::span<const ResultSpec> specs = invocation.results();
  if (results.size() != specs.size())
    throw ProviderContractError("count", fmt::format("{}: the reference returned {} result(s), the invocation declares {}",
                                                     op, results.size(), specs.size()));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Tensor& t = results[i];
    const ResultSpec& s = specs[i];
    if (&t.dtype() != &s.dtype())
      throw ProviderContractError("dtype", fmt::format("{}: reference result {} has dtype {}, the invocation declares {}",
                                                       op, i, t.dtype().name(), s.dtype().name()));
    if (!(t.shape() == s.shape()))
      throw ProviderContractError("shape", fmt::format("{}: reference result {} has shape {}, the invocation declares {}",
                                                       op, i, t.shape().to_string(), s.shape().to_string()));
    if (!(t.layout() == s.layout()))
      throw ProviderContractError("layout", fmt::format("{}: reference result {} has layout {}, the invocation declares {}",
                                                        op, i, t.layout().to_string(), s.layout().to_string()));
    // Aliasing is by exact Tensor object identity: a declared alias is the
    // operand itself, and an operand object handed back without alias_of is
    // an undeclared alias (a distinct view over its storage is not).
    if (const auto& alias = s.alias_of()) {
      if (!t.is(std::get<Tensor>(invocation.operands()[*alias])))
        throw ProviderContractError("alias", fmt::format("{}: reference result {} must be operand {} itself (alias_of)",
                                                         op, i, *alias));
    } else {
      for (std::size_t k = 0; k < invocation.operands().size(); ++k)
        if (const Tensor* in = std::get_if<Tensor>(&invocation.operands()[k]); in && in->is(t))
          throw ProviderContractError("alias", fmt::format("{}: reference result {} is operand {} itself but declares "
                                                           "no alias_of",
                                                           op, i, k));
    }
  }
  return results;
}

void install_dispatcher(Dispatcher dispatcher) noexcept { installed_dispatcher.store(dispatcher); }

std::vector<Tensor> OperationDefinition::operator()(std::vector<CallOperand> operands, OptionMap options,
                                                    const Output& out) const {
  Dispatcher d = installed_dispatcher.load();
  if (!d) {
    detail::ensure_bootstrapped();
    d = installed_dispatcher.load();
    if (!d) throw RuntimeError("strideweave: no dispatcher is installed (the library bootstrap is missing)");
  }
  return d(*this, std::move(operands), std::move(options), out);
}

}  // namespace strideweave::operation
