// strideweave/execution.h — how a planned call reaches a carrier's kernel.
//
// The front end (ops.h) resolves the OperationPlan once, validates options,
// computes the result Shape and prepares operand views (broadcasting, matmul
// batch alignment); none of that is a backend's business. It then hands one
// KernelCall to the kernel that the executing carrier class registered for
// exactly that plan.
//
// A carrier class declares what it executes by registering kernels keyed by
// exact OperationPlan in a KernelTable. That registration is the single source
// of the class's executable set: the capability tables (backend-capabilities)
// are derived from it, never kept as a second list. Lookup is by exact
// CarrierClass and exact plan: never a base class, never a nearby plan.
//
// The plan lookup is the dtype-stripping seam: each registered kernel is a
// typed instantiation, so no kernel switches on dtype per element.
#pragma once

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

namespace strideweave {

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

// The kernels one exact carrier class registered, keyed by exact plan.
// Registration is complete before the table is published (see
// register_kernel_table); a duplicate plan is a ValueError.
class KernelTable {
 public:
  // `axes` is what this kernel really offers on each execution axis
  // (capability.h); it becomes the class's capability entry for `plan`.
  void add(const OperationPlan& plan, KernelFn kernel, ExecutionAxes axes = {});
  const KernelFn* find(const OperationPlan& plan) const noexcept;
  // The plans in registration order.
  const std::vector<OperationPlan>& plans() const noexcept { return order_; }
  const ExecutionAxes& axes(const OperationPlan& plan) const { return kernels_.at(plan).axes; }

 private:
  struct Entry {
    KernelFn kernel;
    ExecutionAxes axes;
  };
  std::unordered_map<OperationPlan, Entry> kernels_;
  std::vector<OperationPlan> order_;
};

// Publishes the kernel table of `cls` (once; a second call is a
// RuntimeError) and, derived from it, the class's sealed capability
// declaration (one OperationCapability per registered plan, with the axes
// its kernel registered). Called from the central carrier list
// (src/carriers/carrier_list.cpp) for the shipped carriers.
void register_kernel_table(CarrierClass cls, std::string class_name, KernelTable table);
// The published table of exactly `cls`, or nullptr.
const KernelTable* kernel_table(CarrierClass cls);
// Every carrier class with a published table, in registration order.
std::vector<std::pair<CarrierClass, std::string>> registered_kernel_classes();
// The shipped carriers' classes (those the central carrier list registers),
// in list order: the ones whose tables docs/capabilities.md must hold.
std::vector<std::pair<CarrierClass, std::string>> shipped_kernel_classes();

}  // namespace strideweave

