// strideweave/execution.h — how a planned call reaches a carrier's kernel.
//
// The front end (ops.h) resolves the OperationPlan once, validates options,
// computes the result Shape and prepares operand views (broadcasting, matmul
// batch alignment); none of that is a backend's business. It then hands one
// KernelCall to the kernel that the executing carrier class registered for
// exactly that plan.
//
// A shipped carrier class declares what it executes by registering kernels
// keyed by exact OperationPlan in its kernel table (internal:
// src/execution/kernel_table.h). That registration is the single source of
// the class's executable set: its capabilities (backend-capabilities) are
// derived from it, never kept as a second list. Lookup is by exact
// CarrierClass and exact plan: never a base class, never a nearby plan.
//
// The plan lookup is the dtype-stripping seam: each registered kernel is a
// typed instantiation, so no kernel switches on dtype per element.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/carrier.h>
#include <strideweave/errors.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace operation {
class ResolvedInvocation;  // <strideweave/operation.h>
}

// A normalised option value handed to kernels.
using AttributeValue = std::variant<bool, std::int64_t, double, std::vector<std::int64_t>>;

// Normalised, validated options of one call (e.g. "axes": sorted
// non-negative axes; "keepdims"). Built by the front end only.
class Attributes {
 public:
  void set(std::string name, AttributeValue value) { values_[std::move(name)] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // Precondition: present with that type (front-end invariant).
  template <class T>
  const T& get(const std::string& name) const {
    return std::get<T>(values_.at(name));
  }
  const std::map<std::string, AttributeValue>& values() const noexcept { return values_; }

 private:
  std::map<std::string, AttributeValue> values_;
};

// One operand of a kernel call, in plan order: a tensor view (already
// broadcast or aligned by the front end) or a weak scalar materialised to
// its plan's convert_to dtype.
using KernelOperand = std::variant<Tensor, Value>;

struct KernelCall {
  const OperationPlan& plan;
  // Valid for the duration of the call only: the front end may lend the
  // caller's tensors to a kernel of its own tables (handles sharing no
  // ownership), so a kernel must not keep an operand, or call the front end
  // with one, beyond the call.
  std::span<const KernelOperand> operands;
  const Attributes& attributes;
  // Result storage of the executing carrier class, with the result Layout
  // fixed by the front end. Kernels write it through their carrier's own
  // typed access; this is construction, not a versioned write.
  const Tensor& output;
  // Read-modify-write: output[i] = output[i] + result[i] (only for kernels
  // registered with ExecutionAxes::accumulation == Native).
  bool accumulate = false;

  const Tensor& tensor(std::size_t i) const { return std::get<Tensor>(operands[i]); }
  const Value& scalar(std::size_t i) const { return std::get<Value>(operands[i]); }
};

using KernelFn = std::function<void(const KernelCall&)>;

// The call a carrier's dispatch hook computes (carrier-extension R13.1): what
// Operation::_forward (autograd.h) receives on a definition-free class that has no
// kernel table of the library's own (a custom class in C++ or Python). The
// framework has bound the call, resolved the central plan, gated it against
// the class's sealed capabilities, aligned the operands, and allocated the
// result(s) on the class (through its make_like hook) before _forward runs;
// _forward writes the result values and returns. Everything it sees is valid
// for the duration of the call only.
struct DispatchedCall {
  // The built-in or custom operation's name.
  const std::string& operation;
  // The central plan the gate admitted.
  const OperationPlan& plan;
  // A built-in: the kernel operands exactly as shipped kernels receive them
  // (tensor views already broadcast/aligned to the result, weak scalars
  // materialised to the plan's convert_to dtype). A custom operation: the
  // invocation's operands in schema order (weak scalars materialised).
  std::span<const KernelOperand> operands;
  // A built-in's normalised options (axes, keepdims, ...); empty for a
  // custom operation (read invocation->options()).
  const Attributes& attributes;
  // The fresh result storage, one per result (a custom operation's aliased
  // result is the aliased operand itself).
  std::span<const Tensor> outputs;
  // A custom operation's resolved invocation; null for a built-in.
  const operation::ResolvedInvocation* invocation = nullptr;

  const Tensor& output() const { return outputs.front(); }
  const Tensor& tensor(std::size_t i) const { return std::get<Tensor>(operands[i]); }
  const Value& scalar(std::size_t i) const { return std::get<Value>(operands[i]); }
};

// How many times the framework's FallbackCopy path has run for carrier
// class `cls` on `axis` since the process started: a borrowed operand copied
// into a compact temporary, a result computed into fresh storage and copied
// into a caller's (strided) output or read-modify-written into it, or an
// owned result materialised by copy (docs/capabilities.md, "Execution
// axes"). Native execution never counts. Monotonic and thread-safe; a class
// that never fell back answers 0.
std::uint64_t fallback_copy_count(CarrierClass cls, ExecutionAxis axis);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
