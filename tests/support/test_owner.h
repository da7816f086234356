// A minimal composite for tests that need an owned carrier: it claims the
// children it is given (DependentCarrier::claim) and gives one back on
// request. Storage: none of its own (size 0); no capabilities.
#pragma once

#include <strideweave/strideweave.h>

#include <memory>
#include <vector>

namespace sw_support {

class TestOwner final : public strideweave::DependentCarrier {
 public:
  explicit TestOwner(std::vector<std::shared_ptr<strideweave::Carrier>> children)
      : DependentCarrier(strideweave::DType::Float32(), true) {
    claim(children);
    finalize_operation_capabilities();
  }
  // A live owner of `child` (keep it alive as long as the claim should hold).
  static std::shared_ptr<TestOwner> claiming(std::shared_ptr<strideweave::Carrier> child) {
    return std::make_shared<TestOwner>(std::vector<std::shared_ptr<strideweave::Carrier>>{std::move(child)});
  }
  void give_back(strideweave::Carrier& child) { relinquish(child); }
  bool supports_storage_dtype(const strideweave::DType& d) const noexcept override {
    return &d == &strideweave::DType::Float32();
  }

 protected:
  std::int64_t storage_size() const noexcept override { return 0; }
  strideweave::Value read_slot(std::int64_t) const override { return {}; }
  void write_slot(std::int64_t, const strideweave::Value&) override {}
  void release_storage() override {}
  std::shared_ptr<strideweave::Carrier> make_like(std::int64_t, bool, const strideweave::SimpleDType&,
                                                  bool) const override {
    return std::make_shared<TestOwner>(std::vector<std::shared_ptr<strideweave::Carrier>>{});
  }
  std::vector<strideweave::OperationCapability> _generate_operation_capabilities() const override { return {}; }
};

}  // namespace sw_support
