// strideweave/capability.h — backend capabilities (backend-capabilities.md)
// and the execution-axis descriptor (backend-capability-descriptor.md).
//
// A capability is an immutable, executor-free record asserting that a backend
// executes exactly one resolved OperationPlan shape; it is equal to (and
// hashes like) another exactly when the six plan-shape fields agree
// (operation, operands, compute, accumulation, accumulator_dtype, output).
// Beside each capability of a class, not inside it, the class records a
// SupportLevel for five execution axes (owned result, borrowed input,
// caller-provided output, strided output, accumulation): execution_axes()
// reads them per (carrier class, capability). Every execution is checked
// against the executing carrier's capabilities before any allocation, kernel
// entry or lowering.
//
// Ownership:
//  - independent carriers: one sealed declaration per exact class. Shipped
//    kernel-backed classes (Generic, CPU) derive theirs from the kernels they
//    register (so the table cannot drift); eligible custom classes declare
//    once with register_operation_capabilities; an undeclared class is sealed
//    empty on first observation.
//  - dependent carriers (DependentCarrier subclasses): one frozen snapshot per
//    instance, finalised once by the concrete constructor.
//
// Threads: declaration, observation and queries are atomic; sealed answers
// are read from an immutable snapshot without taking a lock.
#pragma once

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strideweave/carrier_class.h>
#include <strideweave/errors.h>
#include <strideweave/policy.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---------------------------------------------------------------- axes (descriptor note)

enum class SupportLevel : std::uint8_t { Unsupported, FallbackCopy, Native };
enum class ExecutionAxis : std::uint8_t { owned_result, borrowed_input, caller_output, strided_output, accumulation };

const char* name_of(SupportLevel level) noexcept;
const char* name_of(ExecutionAxis axis) noexcept;
std::span<const ExecutionAxis> all_execution_axes() noexcept;

// The support levels a carrier class offers for one of its capabilities
// (kept beside the capability: see execution_axes()).
struct ExecutionAxes {
  SupportLevel owned_result = SupportLevel::Native;
  SupportLevel borrowed_input = SupportLevel::Native;
  SupportLevel caller_output = SupportLevel::Unsupported;
  SupportLevel strided_output = SupportLevel::Unsupported;
  SupportLevel accumulation = SupportLevel::Unsupported;

  SupportLevel level(ExecutionAxis axis) const noexcept;
  friend bool operator==(const ExecutionAxes&, const ExecutionAxes&) = default;
};

// ---------------------------------------------------------------- records

class OperandCapability {
 public:
  // TENSOR: dtype a SimpleDType; WEAK_SCALAR: dtype null; convert_to a
  // SimpleDType. Violations (null, a category, a compound) -> TypeError.
  OperandCapability(OperandRole role, const DType* dtype, const DType* convert_to);
  static OperandCapability from_plan(const OperandPlan& plan);

  OperandRole role() const noexcept { return role_; }
  const SimpleDType* dtype() const noexcept { return dtype_; }
  const SimpleDType& convert_to() const noexcept { return *convert_to_; }
  friend bool operator==(const OperandCapability& a, const OperandCapability& b) noexcept {
    return a.role_ == b.role_ && a.dtype_ == b.dtype_ && a.convert_to_ == b.convert_to_;
  }
  std::size_t hash() const noexcept;

 private:
  OperandRole role_;
  const SimpleDType* dtype_;
  const SimpleDType* convert_to_;
};

class OperationCapability {
 public:
  // operation non-empty (TypeError for an empty name is the C++ spelling of
  // "not a string"); operands non-empty (ValueError); accumulator_dtype null
  // or a SimpleDType, output a SimpleDType (TypeError otherwise).
  OperationCapability(std::string operation, std::vector<OperandCapability> operands, Arithmetic compute,
                      std::optional<Accumulation> accumulation, const DType* accumulator_dtype, const DType* output);
  // The capability mirroring `plan` exactly.
  static OperationCapability from_plan(const OperationPlan& plan);

  const std::string& operation() const noexcept { return operation_; }
  std::span<const OperandCapability> operands() const noexcept { return operands_; }
  Arithmetic compute() const noexcept { return compute_; }
  std::optional<Accumulation> accumulation() const noexcept { return accumulation_; }
  const SimpleDType* accumulator_dtype() const noexcept { return accumulator_dtype_; }
  const SimpleDType& output() const noexcept { return *output_; }

  // True only when every plan field agrees exactly (name, operand count,
  // order, roles, dtype identities, conversions, compute, accumulation
  // including its absence, accumulator and output identities).
  bool matches(const OperationPlan& plan) const noexcept;
  // The plan this capability mirrors.
  OperationPlan to_plan() const;
  // The deterministic order "by stable field names": operation, operands
  // (role, dtype name, conversion name), compute, accumulation, accumulator,
  // output (names compared as strings, absent before present).
  friend STRIDEWEAVE_EXPORT bool operator<(const OperationCapability& a, const OperationCapability& b);

  // The six plan-shape fields agree ("the same exact shape").
  friend bool operator==(const OperationCapability& a, const OperationCapability& b) noexcept {
    return a.operation_ == b.operation_ && a.operands_ == b.operands_ && a.compute_ == b.compute_ &&
           a.accumulation_ == b.accumulation_ && a.accumulator_dtype_ == b.accumulator_dtype_ &&
           a.output_ == b.output_;
  }
  std::size_t hash() const noexcept;  // of the six fields

 private:
  std::string operation_;
  std::vector<OperandCapability> operands_;
  Arithmetic compute_;
  std::optional<Accumulation> accumulation_;
  const SimpleDType* accumulator_dtype_;
  const SimpleDType* output_;
};

// ---------------------------------------------------------------- errors

// A resolved plan that the executing carrier does not execute: raised once,
// before any allocation, kernel entry or lowering. A NotImplementedError.
class UnsupportedOperationPlan : public NotImplementedError {
 public:
  UnsupportedOperationPlan(std::string reason, std::optional<OperationPlan> plan)
      : NotImplementedError(std::move(reason)), plan_(std::move(plan)) {}
  const char* type_name() const noexcept override { return "UnsupportedOperationPlan"; }
  // The plan (absent only for a descriptor query by operation and dtype
  // that found no entry).
  const std::optional<OperationPlan>& plan() const noexcept { return plan_; }

 private:
  std::optional<OperationPlan> plan_;
};

// The descriptor note's structured rejection: a missing (operation,
// representative input dtype) entry, or a requested axis the entry does not
// support. Fields are members, not only text. Derives from
// UnsupportedOperationPlan so one catch covers both.
class UnsupportedOpDType : public UnsupportedOperationPlan {
 public:
  UnsupportedOpDType(std::string backend, std::string operation, const SimpleDType* dtype,
                     std::optional<ExecutionAxis> axis, std::string reason, std::optional<OperationPlan> plan);
  const char* type_name() const noexcept override { return "UnsupportedOpDType"; }
  const std::string& backend() const noexcept { return backend_; }
  const std::string& operation() const noexcept { return operation_; }
  const SimpleDType* dtype() const noexcept { return dtype_; }
  std::optional<ExecutionAxis> axis() const noexcept { return axis_; }

 private:
  std::string backend_;
  std::string operation_;
  const SimpleDType* dtype_;
  std::optional<ExecutionAxis> axis_;
};

// ---------------------------------------------------------------- class-level registry

// Declares the complete capability set of an eligible definition-free custom
// independent carrier class, once. TypeError for: a class that is not a
// Carrier, the Carrier root, a DependentCarrier class, a shipped class, a
// class with a kernel table or carrier definition, an already declared or
// observed class, an entry that is not a whole record (a moved-from
// OperationCapability). ValueError for a duplicate exact shape. All or nothing.
//
// Beyond the specification: `execution_axes` is empty (every capability gets
// the default ExecutionAxes) or holds one entry per capability, in the same
// order (ValueError otherwise); the class keeps them beside its capabilities.
void register_operation_capabilities(CarrierClass carrier_class, std::span<const OperationCapability> capabilities,
                                     std::span<const ExecutionAxes> execution_axes = {});

// Observing queries (each seals an undeclared class empty). TypeError for a
// class that is not a Carrier class or is a DependentCarrier class (whose
// capabilities belong to instances).
std::vector<OperationCapability> capabilities_for_carrier_class(
    CarrierClass carrier_class, std::optional<std::string_view> operation = std::nullopt);
std::optional<OperationCapability> matching_capability(CarrierClass carrier_class, const OperationPlan& plan);
bool supports_operation_plan(CarrierClass carrier_class, const OperationPlan& plan);
// nullopt when supported; otherwise one of two stable sentences:
//   "<Class> has no capability for operation '<op>'."
//   "<Class> has capabilities for operation '<op>' but none matches the plan <plan>."
std::optional<std::string> unsupported_plan_reason(CarrierClass carrier_class, const OperationPlan& plan);
// The exact match, or UnsupportedOperationPlan with that reason.
OperationCapability require_capability(CarrierClass carrier_class, const OperationPlan& plan);

// The execution axes the exact class records beside `capability`
// (backend-capability-descriptor.md): what its implementation offers for
// that plan shape on each axis. Kernel-backed classes record what each
// kernel registered; a declared class what it declared (default
// ExecutionAxes unless given); a definition-backed class the default
// ExecutionAxes (its kernel patterns publish through the definition-backed
// pipeline, which does not read them). UnsupportedOperationPlan with
// unsupported_plan_reason's sentence when the class does not hold the
// capability; TypeError as the other class-level queries. Observes the class.
ExecutionAxes execution_axes(CarrierClass carrier_class, const OperationCapability& capability);

// Descriptor-style queries by (operation, representative input dtype)
// (backend-capability-descriptor.md): the class's entry for exactly the
// policy's representative plan of (operation, dtype) — representative_plan
// in policy.h, docs/capabilities.md "Representative dtype". capability()
// returns nullopt when there is none; require_capability() raises
// UnsupportedOpDType when there is none or when `axis` is Unsupported in it.
std::optional<OperationCapability> capability(CarrierClass carrier_class, std::string_view operation,
                                              const SimpleDType& dtype);
OperationCapability require_capability(CarrierClass carrier_class, std::string_view operation, const SimpleDType& dtype,
                                       std::optional<ExecutionAxis> axis = std::nullopt);
// By exact plan with a requested axis (UnsupportedOpDType when Unsupported).
OperationCapability require_capability(CarrierClass carrier_class, const OperationPlan& plan, ExecutionAxis axis);

}  // namespace strideweave

template <>
struct std::hash<strideweave::OperandCapability> {
  std::size_t operator()(const strideweave::OperandCapability& c) const noexcept { return c.hash(); }
};
template <>
struct std::hash<strideweave::OperationCapability> {
  std::size_t operator()(const strideweave::OperationCapability& c) const noexcept { return c.hash(); }
};

namespace strideweave {

// The markdown table of a class's capabilities (one row per entry, in the
// deterministic order), as docs/capabilities.md holds it between the
// markers "<!-- BEGIN CAPABILITIES: NAME -->" and "<!-- END CAPABILITIES: NAME -->".
std::string render_capability_table(CarrierClass carrier_class);
// `document` with every marked table replaced by its rendering from the
// descriptors of the kernel-backed classes and of the independent
// definition-backed ones (the CUDA carrier: docs/cuda.md); unknown names
// are left as they are.
std::string render_capability_tables_into(const std::string& document);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
