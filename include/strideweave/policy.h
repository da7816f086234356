// strideweave/policy.h — the central operation dtype policy
// (operation-dtype-policy.md).
//
// One backend-independent planner fixes, per operation call, how each operand
// is materialised, the per-element arithmetic, how terms combine and the
// result dtype. Backends execute OperationPlans; none owns a promotion table.
//
// Spelling (cpp-mapping.md): records are immutable value types with
// operator== and std::hash; None is nullptr (dtype handles) or std::nullopt;
// enum members keep their written case; each enum's value is its lower-case
// name (`value_of`), its JSON/CLI spelling its member name (`name_of`).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <strideweave/dtype.h>
#include <strideweave/int128.h>

#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---------------------------------------------------------------- enums (R1, R2)

enum class OperandRole : std::uint8_t { TENSOR, WEAK_SCALAR };

enum class Arithmetic : std::uint8_t {
#define SW_ARITHMETIC(member, value) member,
#include <strideweave/policy_enums.def>
};

enum class Accumulation : std::uint8_t {
#define SW_ACCUMULATION(member, value) member,
#include <strideweave/policy_enums.def>

};

// Member name ("TENSOR", "BINARY32") and value ("tensor", "binary32").
const char* name_of(OperandRole role) noexcept;
const char* value_of(OperandRole role) noexcept;
const char* name_of(Arithmetic arithmetic) noexcept;
const char* value_of(Arithmetic arithmetic) noexcept;
const char* name_of(Accumulation accumulation) noexcept;
const char* value_of(Accumulation accumulation) noexcept;
// The member whose value is `value` ("binary32_fused"); ValueError otherwise
// (as Python's Arithmetic("...") raises).
Arithmetic arithmetic_from_value(std::string_view value);
// Every member in declaration order.
std::span<const Arithmetic> all_arithmetics() noexcept;
std::span<const Accumulation> all_accumulations() noexcept;

// ---------------------------------------------------------------- weak scalars (R7)

enum class WeakScalarKind : std::uint8_t { INTEGER, FLOAT };

// A weak scalar: a real number that picks a branch but has no dtype. Built
// implicitly from any C++ arithmetic type. bool is pinned to FLOAT (its value
// 1.0 or 0.0). Integers are held exactly (128-bit), floats as double.
class WeakScalar {
 public:
  // Exactly bool (a template, so that pointers and other types with a
  // conversion to bool are not silently accepted as weak scalars).
  template <class T>
    requires std::is_same_v<T, bool>
  WeakScalar(T v) noexcept : kind_(WeakScalarKind::FLOAT), is_bool_(true), float_(v ? 1.0 : 0.0) {}  // NOLINT
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  WeakScalar(T v) noexcept : kind_(WeakScalarKind::INTEGER), integer_(static_cast<int128>(v)) {}  // NOLINT
  template <class T>
    requires std::is_floating_point_v<T>
  WeakScalar(T v) noexcept : kind_(WeakScalarKind::FLOAT), float_(static_cast<double>(v)) {}  // NOLINT
  static WeakScalar integer(int128 v) noexcept {
    WeakScalar s(0);
    s.integer_ = v;
    return s;
  }

  WeakScalarKind kind() const noexcept { return kind_; }
  bool is_bool() const noexcept { return is_bool_; }
  // Precondition kind() == INTEGER.
  int128 integer_value() const noexcept { return integer_; }
  // The value as a real number (exact for bool and FLOAT).
  double real_value() const noexcept;
  // Materialise as Float32: round to nearest even.
  float to_float32() const noexcept;
  // Materialise as Int32 for an integer plan of `operation`; OverflowError
  // outside [INT32_MIN, INT32_MAX]. Precondition kind() == INTEGER.
  std::int32_t to_int32(std::string_view operation) const;
  // "3", "-1", "0.5", "true".
  std::string to_string() const;

  friend STRIDEWEAVE_EXPORT bool operator==(const WeakScalar& a, const WeakScalar& b) noexcept;

 private:
  WeakScalarKind kind_;
  bool is_bool_ = false;
  int128 integer_ = 0;
  double float_ = 0.0;
};

// ---------------------------------------------------------------- records (R1)

class OperandPlan {
 public:
  // TENSOR: dtype non-null; WEAK_SCALAR: dtype null; convert_to non-null.
  // Violations -> TypeError.
  OperandPlan(OperandRole role, const SimpleDType* dtype, const SimpleDType& convert_to);
  static OperandPlan tensor(const SimpleDType& dtype, const SimpleDType& convert_to) {
    return OperandPlan(OperandRole::TENSOR, &dtype, convert_to);
  }
  static OperandPlan tensor(const SimpleDType& dtype) { return tensor(dtype, dtype); }
  static OperandPlan weak_scalar(const SimpleDType& convert_to) {
    return OperandPlan(OperandRole::WEAK_SCALAR, nullptr, convert_to);
  }

  OperandRole role() const noexcept { return role_; }
  const SimpleDType* dtype() const noexcept { return dtype_; }
  const SimpleDType& convert_to() const noexcept { return *convert_to_; }

  friend bool operator==(const OperandPlan& a, const OperandPlan& b) noexcept {
    return a.role_ == b.role_ && a.dtype_ == b.dtype_ && a.convert_to_ == b.convert_to_;
  }
  std::size_t hash() const noexcept;

 private:
  friend class OperationPlan;
  // An unset slot of OperationPlan's inline operand storage (never exposed).
  OperandPlan() noexcept : role_(OperandRole::TENSOR), dtype_(nullptr), convert_to_(nullptr) {}

  OperandRole role_;
  const SimpleDType* dtype_;
  const SimpleDType* convert_to_;
};

class OperationPlan {
 public:
  // Field types are enforced by C++; operands must be non-empty (ValueError).
  // Up to four operands are stored in the plan itself (no heap allocation); the braced form OperationPlan("add", {a, b}, ...) takes the
  // initializer-list overload.
  OperationPlan(std::string operation, std::vector<OperandPlan> operands, Arithmetic compute,
                std::optional<Accumulation> accumulation, const SimpleDType* accumulator_dtype,
                const SimpleDType& output);
  OperationPlan(std::string operation, std::initializer_list<OperandPlan> operands, Arithmetic compute,
                std::optional<Accumulation> accumulation, const SimpleDType* accumulator_dtype,
                const SimpleDType& output);
  OperationPlan(const OperationPlan& other);
  OperationPlan(OperationPlan&& other) noexcept;
  OperationPlan& operator=(const OperationPlan& other);
  OperationPlan& operator=(OperationPlan&& other) noexcept;
  ~OperationPlan() = default;

  const std::string& operation() const noexcept { return operation_; }
  std::span<const OperandPlan> operands() const noexcept {
    return count_ <= kInlineOperands ? std::span<const OperandPlan>(inline_, count_)
                                     : std::span<const OperandPlan>(heap_);
  }
  Arithmetic compute() const noexcept { return compute_; }
  std::optional<Accumulation> accumulation() const noexcept { return accumulation_; }
  const SimpleDType* accumulator_dtype() const noexcept { return accumulator_dtype_; }
  const SimpleDType& output() const noexcept { return *output_; }
  // The roles of the operands, in order.
  std::vector<OperandRole> roles() const;
  // A copy differing only in accumulator_dtype.
  OperationPlan with_accumulator(const SimpleDType* accumulator_dtype) const;
  // A copy differing only in compute arithmetic.
  OperationPlan with_compute(Arithmetic compute) const;
  // Result participates in autograd iff output is exactly Float32 (R1.5).
  bool output_differentiable() const noexcept { return output_ == &DType::Float32(); }

  // Field equality (a differing cached hash short-cuts to false).
  friend STRIDEWEAVE_EXPORT bool operator==(const OperationPlan& a, const OperationPlan& b) noexcept;
  // Of the fields (the operation name through XXH3-64). Computed on first
  // use and cached (plans are immutable); safe to call from several threads
  // at once (the cache is atomic; racing first calls compute the same value).
  std::size_t hash() const noexcept {
    const std::size_t h = hash_.load(std::memory_order_relaxed);
    return h != 0 ? h : cache_hash();
  }
  std::string to_string() const;

 private:
  static constexpr std::size_t kInlineOperands = 4;
  void set_operands(std::span<const OperandPlan> operands);
  void check() const;
  std::size_t compute_hash() const noexcept;
  std::size_t cache_hash() const noexcept;

  std::string operation_;
  OperandPlan inline_[kInlineOperands];
  std::vector<OperandPlan> heap_;  // only when count_ > kInlineOperands
  std::size_t count_ = 0;
  Arithmetic compute_;
  std::optional<Accumulation> accumulation_;
  const SimpleDType* accumulator_dtype_;
  const SimpleDType* output_;
  // 0: not computed yet (a computed 0 is stored as 1).
  mutable std::atomic<std::size_t> hash_{0};
};

// ---------------------------------------------------------------- specifications (R3)

// One operand handed to planning: a tensor's storage dtype, or a weak scalar.
// A null dtype pointer is a "non-DType in a tensor slot" (TypeError).
class PlanOperand {
 public:
  PlanOperand(const DType& dtype) noexcept : dtype_(&dtype), scalar_(0) {}  // NOLINT
  PlanOperand(const DType* dtype) noexcept : dtype_(dtype), scalar_(0), null_dtype_(dtype == nullptr) {}  // NOLINT
  PlanOperand(WeakScalar scalar) noexcept : dtype_(nullptr), scalar_(scalar) {}  // NOLINT
  template <class T>
    requires std::is_arithmetic_v<T>
  PlanOperand(T v) noexcept : dtype_(nullptr), scalar_(WeakScalar(v)) {}  // NOLINT

  OperandRole role() const noexcept {
    return (dtype_ || null_dtype_) ? OperandRole::TENSOR : OperandRole::WEAK_SCALAR;
  }
  const DType* dtype() const noexcept { return dtype_; }
  const WeakScalar& scalar() const noexcept { return scalar_; }

 private:
  const DType* dtype_;
  WeakScalar scalar_;
  bool null_dtype_ = false;
};

// A rule receives the operation name and the operands (already checked
// against the overload's roles and domains) and returns the plan.
using PlanRule = std::function<OperationPlan(std::string_view operation, std::span<const PlanOperand> operands)>;
using DTypeDomain = std::vector<const SimpleDType*>;

class OperationOverload {
 public:
  // tensor_domains: nullopt = the caller's enumeration domain; otherwise one
  // non-empty domain per TENSOR role in tensor-role order (ValueError).
  OperationOverload(std::vector<OperandRole> roles, PlanRule rule,
                    std::optional<std::vector<DTypeDomain>> tensor_domains = std::nullopt);

  std::span<const OperandRole> roles() const noexcept { return roles_; }
  const PlanRule& rule() const noexcept { return rule_; }
  const std::optional<std::vector<DTypeDomain>>& tensor_domains() const noexcept { return tensor_domains_; }

 private:
  std::vector<OperandRole> roles_;
  PlanRule rule_;
  std::optional<std::vector<DTypeDomain>> tensor_domains_;
};

class OperationSpec {
 public:
  // overloads non-empty with distinct role signatures; positions strictly
  // increasing, non-negative, of length equal to every overload's arity.
  // Violations -> ValueError.
  OperationSpec(std::string name, std::vector<OperationOverload> overloads, bool public_ = true,
                std::optional<std::vector<std::int64_t>> dtype_operand_positions = std::nullopt);

  const std::string& name() const noexcept { return name_; }
  std::span<const OperationOverload> overloads() const noexcept { return overloads_; }
  bool is_public() const noexcept { return public_; }
  const std::optional<std::vector<std::int64_t>>& dtype_operand_positions() const noexcept { return positions_; }
  // Single-overload specs only; AttributeError otherwise.
  std::span<const OperandRole> roles() const;
  const PlanRule& rule() const;

 private:
  std::string name_;
  std::vector<OperationOverload> overloads_;
  bool public_;
  std::optional<std::vector<std::int64_t>> positions_;
};

// ---------------------------------------------------------------- options (R10)

class OperationExecutionOptions {
 public:
  // Only reduce_sum and matmul are configurable (TypeError otherwise);
  // accumulator nullptr = default (Float32); a non-simple dtype -> TypeError;
  // a simple dtype other than Float32/Float64 -> NotImplementedError.
  //
  // arithmetic (beyond the specification, docs/policy.md): nullopt = the
  // plan's own compute arithmetic. BINARY32 asks for the strict default
  // explicitly; BINARY32_FUSED asks for the contracted matmul plan (each
  // product may be fused with its accumulation step). Any other member, or
  // BINARY32_FUSED for reduce_sum (no products) or with a Float64
  // accumulator (a binary32 product is exact in binary64, so there is
  // nothing to contract) -> TypeError.
  explicit OperationExecutionOptions(std::string operation, const DType* accumulator_dtype = nullptr,
                                     std::optional<Arithmetic> arithmetic = std::nullopt);

  const std::string& operation() const noexcept { return operation_; }
  const SimpleDType* accumulator_dtype() const noexcept { return accumulator_dtype_; }
  std::optional<Arithmetic> arithmetic() const noexcept { return arithmetic_; }
  friend bool operator==(const OperationExecutionOptions& a, const OperationExecutionOptions& b) noexcept {
    return a.operation_ == b.operation_ && a.accumulator_dtype_ == b.accumulator_dtype_ &&
           a.arithmetic_ == b.arithmetic_;
  }

 private:
  std::string operation_;
  const SimpleDType* accumulator_dtype_;
  std::optional<Arithmetic> arithmetic_;
};

OperationExecutionOptions operation_execution_options(std::string operation,
                                                      const DType* accumulator_dtype = nullptr,
                                                      std::optional<Arithmetic> arithmetic = std::nullopt);

// ---------------------------------------------------------------- registry (R4, R5)

constexpr std::int64_t INT32_MIN_VALUE = -2147483648LL;
constexpr std::int64_t INT32_MAX_VALUE = 2147483647LL;
constexpr std::int64_t POW_INTEGER_EXPONENT_MAX = INT32_MAX_VALUE;

// (Float32, Int32)
std::span<const SimpleDType* const> SUPPORTED_TENSOR_DTYPES();
// (3, -1, 0.5)
std::span<const WeakScalar> WEAK_SCALAR_PROBES();
// (Float32, Float64)
std::span<const SimpleDType* const> SUPPORTED_ACCUMULATOR_DTYPES();
// reduce_sum, matmul
std::span<const std::string_view> CONFIGURABLE_OPERATIONS();

// Every specification sorted by name (code-point order).
std::span<const OperationSpec> registered_operations();
// The spec of `name`, or nullptr.
const OperationSpec* find_operation(std::string_view name) noexcept;

std::vector<OperationPlan> resolvable_plans(std::span<const SimpleDType* const> tensor_dtypes,
                                            std::span<const WeakScalar> weak_scalars);
inline std::vector<OperationPlan> resolvable_plans() {
  return resolvable_plans(SUPPORTED_TENSOR_DTYPES(), WEAK_SCALAR_PROBES());
}

OperationPlan resolve_operation_plan(std::string_view operation, std::span<const PlanOperand> operands,
                                     const DType* accumulator_dtype = nullptr,
                                     const OperationExecutionOptions* options = nullptr);
inline OperationPlan resolve_operation_plan(std::string_view operation, std::initializer_list<PlanOperand> operands,
                                            const DType* accumulator_dtype = nullptr,
                                            const OperationExecutionOptions* options = nullptr) {
  return resolve_operation_plan(operation, std::span<const PlanOperand>(operands.begin(), operands.size()),
                                accumulator_dtype, options);
}

std::vector<OperationPlan> plan_accumulator_variants(const OperationPlan& plan);

// Beyond the specification: `plan` followed by the plans an explicit
// `arithmetic` execution option can select for it (the BINARY32_FUSED
// variant of a matmul plan with BINARY32 compute, FLOATING accumulation and a
// Float32 accumulator). Never part of resolvable_plans(): a default plan is
// never contracted.
std::vector<OperationPlan> plan_arithmetic_variants(const OperationPlan& plan);

// Every concrete public plan a complete reference carrier executes:
// resolvable_plans() with the defaults, followed by the Bool-domain plan of
// `select` (which the defaults cannot enumerate, R4.4: backends declare it
// explicitly), followed by the contracted variants of
// plan_arithmetic_variants() (explicitly requested only).
std::vector<OperationPlan> executable_plan_set();

// The representative plan of (operation, dtype), the key of the descriptor
// note's backend table (docs/capabilities.md, "Representative dtype"): the
// plan the policy resolves, with default options, for the operation's
// overload with the most tensor operands, where every tensor slot that
// admits `dtype` receives it, a slot restricted to one other dtype (an
// index, a condition) receives that dtype, and weak scalars are of dtype's
// kind (3 for Int32, 0.5 otherwise). nullopt when the operation is unknown,
// no slot admits `dtype`, or the policy refuses those operands. ValueError
// when two overloads tie for the most tensor operands (no registered
// operation does).
std::optional<OperationPlan> representative_plan(std::string_view operation, const SimpleDType& dtype);

}  // namespace strideweave

template <>
struct std::hash<strideweave::OperandPlan> {
  std::size_t operator()(const strideweave::OperandPlan& p) const noexcept { return p.hash(); }
};
template <>
struct std::hash<strideweave::OperationPlan> {
  std::size_t operator()(const strideweave::OperationPlan& p) const noexcept { return p.hash(); }
};

STRIDEWEAVE_PUBLIC_END
