// Internal: per-class kernel tables, keyed by exact OperationPlan. See
// include/strideweave/execution.h for the kernel call and docs/design.md.
#pragma once

#include <strideweave/capability.h>
#include <strideweave/execution.h>
#include <strideweave/export.h>

#include <unordered_map>
#include <vector>

namespace strideweave {

// The kernels one exact carrier class registered, keyed by exact plan.
// Registration is complete before the table is published (see
// register_kernel_table); a duplicate plan is a ValueError.
class STRIDEWEAVE_TEST_API KernelTable {
 public:
  // `axes` is what this kernel really offers on each execution axis
  // (capability.h); the class keeps it beside its capability for `plan`.
  void add(const OperationPlan& plan, KernelFn kernel, ExecutionAxes axes = {});
  const KernelFn* find(const OperationPlan& plan) const noexcept;
  // The plans in registration order.
  const std::vector<OperationPlan>& plans() const noexcept { return order_; }
  const ExecutionAxes& axes(const OperationPlan& plan) const { return kernels_.at(plan).axes; }

  // Which operand layouts the class's kernels read in place. Under an
  // entry's borrowed_input = FallbackCopy, the framework copies every operand
  // the predicate refuses into a compact temporary (counted, see
  // record_fallback_copy) before the kernel runs; under Native every layout
  // is handed to the kernel as it is. Default (null): every layout.
  using InPlaceReader = bool (*)(const Layout&);
  void set_in_place_reader(InPlaceReader reader) noexcept { reader_ = reader; }
  bool reads_in_place(const Layout& layout) const { return reader_ == nullptr || reader_(layout); }

 private:
  struct Entry {
    KernelFn kernel;
    ExecutionAxes axes;
  };
  std::unordered_map<OperationPlan, Entry> kernels_;
  std::vector<OperationPlan> order_;
  InPlaceReader reader_ = nullptr;
};

// Counts one run of the framework's FallbackCopy path for class `cls` on
// `axis` (read back through fallback_copy_count, execution.h). Thread-safe.
void record_fallback_copy(CarrierClass cls, ExecutionAxis axis);

// Publishes the kernel table of `cls` and, derived from it, the class's
// sealed capability declaration (one OperationCapability per registered
// plan, and beside it the axes its kernel registered). Internal to the library: the
// shipped carriers register through the central carrier list; the public
// extension surface for other carriers is the operation-definition issue's
// CarrierDefinition. The eligibility rules are register_operation_capabilities'
// (TypeError): a type that is not a Carrier class, the Carrier root, a
// DependentCarrier class (dependent instances are never answered from a class
// table), a class that already has a table, declared or was observed. All or
// nothing.
STRIDEWEAVE_TEST_API void register_kernel_table(CarrierClass cls, KernelTable table);
// The published table of exactly `cls`, or nullptr.
STRIDEWEAVE_TEST_API const KernelTable* kernel_table(CarrierClass cls);
// Every carrier class with a published table, in registration order.
STRIDEWEAVE_TEST_API std::vector<CarrierClass> registered_kernel_classes();

}  // namespace strideweave
