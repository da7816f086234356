// strideweave/dependent_carrier.h — carriers whose executable plans depend on
// the carriers they compose (backend-capabilities.md, "DependentCarrier owns
// capabilities per finalized instance").
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/carrier.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// A carrier whose executable plans depend on the carriers it composes. Open
// for subclassing. A concrete subclass implements
// _generate_operation_capabilities() (the legacy definition-free path; the
// base raises NotImplementedError) and calls finalize_operation_capabilities()
// once in its constructor, after its dependencies are valid. Before that
// every capability query raises RuntimeError; a second finalisation raises
// RuntimeError and keeps the first snapshot; a failing generator, an entry
// that is not a whole record (a moved-from OperationCapability: TypeError) or
// a duplicate shape (ValueError) publishes nothing.
class DependentCarrier : public Carrier {
 public:
  bool is_capability_finalized() const noexcept;
  // The frozen snapshot, sorted; RuntimeError before finalisation.
  std::span<const OperationCapability> capability_snapshot() const;

 protected:
  DependentCarrier(const SimpleDType& dtype, bool mutable_) noexcept : Carrier(dtype, mutable_, DependentTag{}) {}
  // The constructor of a run-time dependent class's host (see Carrier's):
  // TypeError unless `runtime_class` was minted for a dependent host.
  DependentCarrier(const SimpleDType& dtype, bool mutable_, CarrierClass runtime_class)
      : Carrier(dtype, mutable_, DependentTag{}, runtime_class) {}
  // Either of the two above (for extension::DefinedDependentCarrier).
  DependentCarrier(const SimpleDType& dtype, bool mutable_, const std::optional<CarrierClass>& runtime_class)
      : Carrier(dtype, mutable_, DependentTag{}, runtime_class) {}
  virtual std::vector<OperationCapability> _generate_operation_capabilities() const;
  void finalize_operation_capabilities();

 private:
  std::atomic<const std::vector<OperationCapability>*> snapshot_{nullptr};
  std::shared_ptr<const std::vector<OperationCapability>> owned_snapshot_;
  std::mutex finalize_mutex_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
