// strideweave/operation.h — one record per operation (operation-semantics.md).
//
// An OperationDefinition holds an operation's whole meaning: its schema
// (operand kinds and options with their defaults), its resolve step (the
// central dtype plan, the result contracts, mutated and saved operands, the
// kernel identifier), an optional carrier-neutral reference, and its VJP or
// NON_DIFFERENTIABLE. Built-in operations (all 56 registered names) and
// user-defined, namespaced ones (define_operation) use the same record;
// carriers supply kernels, never meaning.
//
// Names follow cpp-mapping.md: the module strideweave.operation is the
// namespace strideweave::operation; the names the specification also exports
// at the top level are re-exported into strideweave by using-declarations
// (the same entities).
//
// Errors (cpp-mapping.md): construction of every record validates its fields
// (TypeError for a wrong kind of value, ValueError for a bad value) and
// leaves nothing behind on failure; registration is one-shot, atomic and
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <strideweave/errors.h>
#include <strideweave/execution.h>
#include <strideweave/layout.h>
#include <strideweave/output.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave::operation {

class OperationDefinition;
class BoundOperationCall;
class ResolvedInvocation;

// ---------------------------------------------------------------- values

// The value of an option or of a STRUCTURAL operand: none, bool, integer,
// real, list of integers, text, a dtype, or an opaque value a binding
// supplies (a Python object), compared by identity.
struct OpaqueValue {
  std::shared_ptr<const void> value;
  std::string type_name;  // for messages ("dict", "tuple", ...)
  friend bool operator==(const OpaqueValue& a, const OpaqueValue& b) noexcept { return a.value == b.value; }
};
using OptionValue = std::variant<std::monostate, bool, std::int64_t, double, std::vector<std::int64_t>, std::string,
                                 const DType*, OpaqueValue>;
// "None", "true", "3", "0.5", "[1, 2]", "'text'", "float32", "<dict>".
std::string to_string(const OptionValue& value);

// A STRUCTURAL operand (an axis list, a shape, a flag) passed unchanged to
// the resolve step. A distinct type so that a weak scalar and a structural
// integer never convert into each other.
struct Structural {
  OptionValue value;
  friend bool operator==(const Structural&, const Structural&) = default;
};

// One positional operand of a call: a tensor, a weak scalar (a real number
// without dtype, operation-dtype-policy R7) or a structural value.
using CallOperand = std::variant<Tensor, WeakScalar, Structural>;

// Named option values (by exact name).
using OptionMap = std::map<std::string, OptionValue, std::less<>>;

// ---------------------------------------------------------------- schema

// The kind of one operand. String-valued (value_of): "tensor",
// "weak_scalar", "structural".
enum class OperandKind : std::uint8_t { TENSOR, WEAK_SCALAR, STRUCTURAL };
std::string_view value_of(OperandKind kind) noexcept;
// The member of a value; ValueError for any other text.
OperandKind operand_kind(std::string_view value);

// The one public marker of an option without a default.
struct Required {
  friend bool operator==(Required, Required) noexcept { return true; }
};
inline constexpr Required REQUIRED{};

// OperandSpec(name, kind, differentiable=false): name a non-empty Python
// identifier, as str.isidentifier() decides (Unicode XID_Start/XID_Continue:
// "größe" is one; ValueError otherwise); differentiable only for TENSOR
// (ValueError).
//
// Beyond the specification, for the built-in overloads (mul, pow, clamp): a
// TENSOR operand that also accepts a weak scalar (tensor_or_weak_scalar).
class OperandSpec {
 public:
  OperandSpec(std::string name, OperandKind kind, bool differentiable = false);
  static OperandSpec tensor_or_weak_scalar(std::string name, bool differentiable = false);
  const std::string& name() const noexcept { return name_; }
  OperandKind kind() const noexcept { return kind_; }
  bool differentiable() const noexcept { return differentiable_; }
  bool accepts_weak_scalar() const noexcept { return kind_ == OperandKind::WEAK_SCALAR || accepts_weak_scalar_; }
  friend bool operator==(const OperandSpec&, const OperandSpec&) = default;
  std::size_t hash() const noexcept;

 private:
  std::string name_;
  OperandKind kind_;
  bool differentiable_;
  bool accepts_weak_scalar_ = false;
};

// The values an option accepts (beyond the specification: issue 21, step 4;
// docs/operations/options.md). String-valued (value_of): "any", "bool",
// "int", "real", "ints", "str", "dtype".
//   ANY      every value (the default: the specification's OptionSpec has no
//            kind, and a spec without one behaves exactly as specified);
//   BOOL     a bool (not an integer);
//   INTEGER  a 64-bit integer (not a bool);
//   REAL     a real number: a double, or an integer that a double holds
//            exactly, which binding turns into that double;
//   INTEGERS a list of integers, or one integer, which binding turns into a
//            one-element list;
//   TEXT     a string;
//   DTYPE    a DType.
// None fits any kind when the option's default is None.
enum class OptionKind : std::uint8_t { ANY, BOOL, INTEGER, REAL, INTEGERS, TEXT, DTYPE };
std::string_view value_of(OptionKind kind) noexcept;
// The member of a value; ValueError for any other text.
OptionKind option_kind(std::string_view value);

// OptionSpec(name, default=REQUIRED): name a non-empty Python identifier
// (as OperandSpec's). `doc` is a sentence for generated help (beyond the
// specification; not part of equality). `kind` (beyond the specification)
// declares the values the option accepts; a default must fit it (TypeError
// otherwise, after the conversions `admit` makes).
class OptionSpec {
 public:
  using Default = std::variant<Required, OptionValue>;
  OptionSpec(std::string name, Default default_value = REQUIRED, std::string doc = {},
             OptionKind kind = OptionKind::ANY);
  const std::string& name() const noexcept { return name_; }
  const Default& default_value() const noexcept { return default_; }
  bool required() const noexcept { return std::holds_alternative<Required>(default_); }
  const std::string& doc() const noexcept { return doc_; }
  OptionKind kind() const noexcept { return kind_; }
  // `value` as this option holds it: unchanged, or converted as `kind`
  // says (an exact integer to a real, one integer to a list). TypeError
  // "<operation>: option '<name>' must be <what>, got <value>" when it does
  // not fit; nothing else is checked (ranges are resolve's).
  OptionValue admit(std::string_view operation, OptionValue value) const;
  // "a real number", "a list of integers or None", ...
  std::string accepted() const;
  friend bool operator==(const OptionSpec& a, const OptionSpec& b) {
    return a.name_ == b.name_ && a.default_ == b.default_ && a.kind_ == b.kind_;
  }

 private:
  std::string name_;
  Default default_;
  std::string doc_;
  OptionKind kind_;
};

// OperationSchema(operands, options=()): operands non-empty; names unique
// across operands and options (ValueError otherwise).
class OperationSchema {
 public:
  OperationSchema(std::vector<OperandSpec> operands, std::vector<OptionSpec> options = {});
  std::span<const OperandSpec> operands() const noexcept { return operands_; }
  std::span<const OptionSpec> options() const noexcept { return options_; }
  // The option of that name, or nullptr.
  const OptionSpec* option(std::string_view name) const noexcept;
  friend bool operator==(const OperationSchema&, const OperationSchema&) = default;
  // "add(a: tensor, b: tensor)"; options as "name=default".
  std::string signature(std::string_view operation) const;

 private:
  std::vector<OperandSpec> operands_;
  std::vector<OptionSpec> options_;
};

// ---------------------------------------------------------------- the bound call

// What resolve receives: the operands in schema order and every option
// (declared defaults filled in), immutable. Only the framework creates one
// (bind()).
class BoundOperationCall : public std::enable_shared_from_this<BoundOperationCall> {
 public:
  const OperationDefinition& definition() const noexcept { return *definition_; }
  std::span<const CallOperand> operands() const noexcept { return operands_; }
  const OptionMap& options() const noexcept { return options_; }
  // The value of option `name` (LookupError for a name the schema lacks).
  const OptionValue& option(std::string_view name) const;
  // Operand i as a tensor (TypeError when it is not one; IndexError past the end).
  const Tensor& tensor(std::size_t i) const;

 private:
  friend struct BindAccess;
  BoundOperationCall() = default;
  std::shared_ptr<const OperationDefinition> definition_;
  std::vector<CallOperand> operands_;
  OptionMap options_;
};

// Binds positional operands in schema order and options by exact name
// (operation-semantics.md): a missing or extra operand, an unknown option, an
// omitted required option, or a kind mismatch (a Tensor where a weak scalar
// belongs, ...) is a TypeError; omitted optional options take their
// declared defaults.
std::shared_ptr<const BoundOperationCall> bind(const OperationDefinition& definition, std::vector<CallOperand> operands,
                                               OptionMap options = {});

// ---------------------------------------------------------------- results and invocations

// ResultSpec(dtype, shape, layout, alias_of=nullopt, atol=0, rtol=0): one
// result contract. layout must have exactly `shape` (ValueError); alias_of
// is the positional index of a Tensor operand the result is (by exact Tensor
// object identity), checked when an invocation is built; atol and rtol are
// finite and non-negative (ValueError).
class ResultSpec {
 public:
  ResultSpec(const DType& dtype, Shape shape, Layout layout, std::optional<std::size_t> alias_of = std::nullopt,
             double atol = 0.0, double rtol = 0.0);
  // The canonical compact layout of `shape`.
  static ResultSpec compact(const DType& dtype, const Shape& shape, double atol = 0.0, double rtol = 0.0);
  const DType& dtype() const noexcept { return *dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  const Layout& layout() const noexcept { return layout_; }
  const std::optional<std::size_t>& alias_of() const noexcept { return alias_of_; }
  double atol() const noexcept { return atol_; }
  double rtol() const noexcept { return rtol_; }
  friend bool operator==(const ResultSpec& a, const ResultSpec& b) noexcept {
    return a.dtype_ == b.dtype_ && a.shape_ == b.shape_ && a.layout_ == b.layout_ && a.alias_of_ == b.alias_of_ &&
           a.atol_ == b.atol_ && a.rtol_ == b.rtol_;
  }

 private:
  const DType* dtype_;
  Shape shape_;
  Layout layout_;
  std::optional<std::size_t> alias_of_;
  double atol_, rtol_;
};

// ResolvedInvocation(call, plan, results, mutated_operands={},
// saved_operands={}, kernel_id=nullopt): everything a backend must do for
// one call. Validation (operation-semantics.md): `call` is the framework's
// bound call being resolved; the plan names the call's operation and has one
// operand per TENSOR/WEAK_SCALAR operand of the schema with the matching
// role and stored dtype, in the call's order (ValueError): plan operand p
// describes the p-th non-structural call operand, so a kernel reads the
// operands in the plan's role order (mul(weak_scalar, tensor) resolves a
// plan that lists the weak scalar first, docs/policy.md); results
// non-empty, the first of the plan's output dtype (later results of a
// multi-result operation declare their own; ValueError); mutated and
// saved indices unique, in range and naming Tensor operands (ValueError);
// alias_of of a result in range, naming a Tensor operand whose dtype, shape
// and layout are the result's (ValueError); kernel_id non-empty (nullopt:
// the definition's name).
//
// The braced form ResolvedInvocation(call, plan, {spec}) takes the
// initializer-list overload: the same contract and validation, and a single
// result is kept in the invocation itself (no heap allocation).
class ResolvedInvocation {
 public:
  ResolvedInvocation(const BoundOperationCall& call, OperationPlan plan, std::vector<ResultSpec> results,
                     std::vector<std::size_t> mutated_operands = {}, std::vector<std::size_t> saved_operands = {},
                     std::optional<std::string> kernel_id = std::nullopt);
  ResolvedInvocation(const BoundOperationCall& call, OperationPlan plan, std::initializer_list<ResultSpec> results,
                     std::initializer_list<std::size_t> mutated_operands = {},
                     std::initializer_list<std::size_t> saved_operands = {},
                     std::optional<std::string> kernel_id = std::nullopt);

  const BoundOperationCall& call() const noexcept { return *call_; }
  const OperationDefinition& definition() const noexcept { return call_->definition(); }
  const std::string& operation() const noexcept;
  std::span<const CallOperand> operands() const noexcept { return call_->operands(); }
  const OptionMap& options() const noexcept { return call_->options(); }
  const OperationPlan& plan() const noexcept { return plan_; }
  std::span<const ResultSpec> results() const noexcept {
    return single_ ? std::span<const ResultSpec>(&*single_, 1) : std::span<const ResultSpec>(results_);
  }
  std::span<const std::size_t> mutated_operands() const noexcept { return mutated_; }
  std::span<const std::size_t> saved_operands() const noexcept { return saved_; }
  const std::string& kernel_id() const noexcept { return kernel_id_; }

 private:
  void validate(const BoundOperationCall& call) const;

  std::shared_ptr<const BoundOperationCall> call_;
  OperationPlan plan_;
  std::optional<ResultSpec> single_;  // the one result of a braced single-result invocation
  std::vector<ResultSpec> results_;   // otherwise
  std::vector<std::size_t> mutated_;
  std::vector<std::size_t> saved_;
  std::string kernel_id_;
};

// ---------------------------------------------------------------- autograd

// What a VJP receives: the immutable invocation, the published outputs and
// the saved operands in the declared saved-index order (detached).
//
// Beyond the specification, for built-in definitions (whose kernels receive
// prepared operands: broadcast views, materialised scalars, normalised
// attributes) kernel_operands() and attributes() give the call exactly as
// the kernel ran it; for user-defined operations they are empty.
class VJPContext {
 public:
  VJPContext(std::shared_ptr<const ResolvedInvocation> invocation, std::vector<Tensor> outputs,
             std::vector<Tensor> saved_operands, std::vector<KernelOperand> kernel_operands = {},
             Attributes attributes = {}, std::vector<bool> needs_grad = {});
  const ResolvedInvocation& invocation() const noexcept { return *invocation_; }
  std::span<const Tensor> outputs() const noexcept { return outputs_; }
  std::span<const Tensor> saved_operands() const noexcept { return saved_; }
  std::span<const KernelOperand> kernel_operands() const noexcept { return kernel_operands_; }
  const Attributes& attributes() const noexcept { return attributes_; }
  // Per schema operand: whether a gradient is wanted (true for every
  // differentiable operand when unknown).
  bool needs_grad(std::size_t operand) const noexcept;

 private:
  std::shared_ptr<const ResolvedInvocation> invocation_;
  std::vector<Tensor> outputs_;
  std::vector<Tensor> saved_;
  std::vector<KernelOperand> kernel_operands_;
  Attributes attributes_;
  std::vector<bool> needs_grad_;
};

// The one public marker of an operation without gradients.
struct NonDifferentiable {
  friend bool operator==(NonDifferentiable, NonDifferentiable) noexcept { return true; }
};
inline constexpr NonDifferentiable NON_DIFFERENTIABLE{};

// ---------------------------------------------------------------- the definition

using ResolveFn = std::function<ResolvedInvocation(const BoundOperationCall& call)>;
// A reference returns one Tensor or several (normalised by execute_reference).
using ReferenceResult = std::variant<Tensor, std::vector<Tensor>>;
using ReferenceFn = std::function<ReferenceResult(const ResolvedInvocation& invocation)>;
// One cotangent per result (nullopt: no gradient flows from that result);
// returns one gradient or nullopt per differentiable schema operand, in
// operand order.
using VjpFn = std::function<std::vector<std::optional<Tensor>>(const VJPContext& context,
                                                                std::span<const std::optional<Tensor>> cotangents)>;
using VjpChoice = std::variant<NonDifferentiable, VjpFn>;

// What a built-in definition carries beyond the specification's fields:
// whether its policy entry takes an accumulator (R10) or a fused arithmetic,
// and whether it is a public name (the internal plans of sort and topk are
// not). Absent for user-defined operations.
struct BuiltinTraits {
  bool configurable_accumulator = false;  // reduce_sum, matmul (policy R10)
  bool fused_arithmetic = false;          // matmul's BINARY32_FUSED on request
  bool is_public = true;                  // false for the internal plans of sort and topk
};

class OperationDefinition : public std::enable_shared_from_this<OperationDefinition> {
 public:
  const std::string& name() const noexcept { return name_; }
  const OperationSchema& schema() const noexcept { return schema_; }
  const ResolveFn& resolve() const noexcept { return resolve_; }
  const std::optional<ReferenceFn>& reference() const noexcept { return reference_; }
  const VjpChoice& vjp() const noexcept { return vjp_; }
  bool is_differentiable() const noexcept { return std::holds_alternative<VjpFn>(vjp_); }
  bool is_builtin() const noexcept { return builtin_.has_value(); }
  // Present exactly for built-in definitions.
  const std::optional<BuiltinTraits>& builtin() const noexcept { return builtin_; }

  // Calls the operation (ordinary carrier dispatch, docs/operations.md "One
  // dispatch pipeline"): binds, resolves, checks the capability of the
  // operands' exact carrier class, executes and publishes one Tensor per
  // result. `out` is a caller-provided output for a single-result call.
  std::vector<Tensor> operator()(std::vector<CallOperand> operands, OptionMap options = {},
                                 const Output& out = {}) const;

 private:
  friend struct DefinitionAccess;
  OperationDefinition(std::string name, OperationSchema schema, ResolveFn resolve, std::optional<ReferenceFn> reference,
                      VjpChoice vjp, std::optional<BuiltinTraits> builtin);
  std::string name_;
  OperationSchema schema_;
  ResolveFn resolve_;
  std::optional<ReferenceFn> reference_;
  VjpChoice vjp_;
  std::optional<BuiltinTraits> builtin_;
};

// Registers and returns a user-defined operation (operation-semantics.md):
// `name` a dot-namespaced Python-identifier path ("acme.fused_linear") whose first
// segment is neither "strideweave" nor a built-in operation name; resolve
// non-empty; vjp explicitly NON_DIFFERENTIABLE or a non-empty VjpFn. An
// invalid or reserved name, a name already registered, or an empty resolve
// or vjp is a ValueError, and nothing is registered. One-shot, atomic and
// thread-safe; there is no replacement and no unregistration.
std::shared_ptr<const OperationDefinition> define_operation(std::string name, OperationSchema schema,
                                                            ResolveFn resolve,
                                                            std::optional<ReferenceFn> reference, VjpChoice vjp);

// The registered definition of `name` (built-in or user-defined), or
// LookupError naming it.
std::shared_ptr<const OperationDefinition> get_definition(std::string_view name);
// Every registered definition, sorted by name.
std::vector<std::shared_ptr<const OperationDefinition>> registered_definitions();

// Runs `definition`'s reference on `invocation` and normalises its return:
// one Tensor becomes a one-element vector, a vector keeps its order. No
// reference (NotImplementedError); an invocation of another definition
// (ValueError); an empty vector, or a result whose count, dtype, shape,
// layout or aliasing conflicts with the invocation's ResultSpecs
// (ProviderContractError naming the field; "alias" for a declared alias that
// is not the operand object itself, or an operand object returned without
// alias_of).
std::vector<Tensor> execute_reference(const OperationDefinition& definition, const ResolvedInvocation& invocation);

// Binds and resolves without executing: what a call of `definition` with
// these operands and options would do (resolve's errors propagate; a
// non-conforming invocation is a ValueError).
std::shared_ptr<const ResolvedInvocation> resolve_call(const OperationDefinition& definition,
                                                       std::vector<CallOperand> operands, OptionMap options = {});

}  // namespace strideweave::operation

namespace strideweave {
// The top-level re-exports (operation-semantics.md: the same entities).
using operation::define_operation;
using operation::NON_DIFFERENTIABLE;
using operation::OperandKind;
using operation::OperandSpec;
using operation::OperationDefinition;
using operation::OperationSchema;
using operation::OptionSpec;
using operation::REQUIRED;
using operation::ResultSpec;
}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
