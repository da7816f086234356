// The immutable records of the carrier extension surface and their
// construction-time validation (carrier-extension R2.1, R3.1, R4, R5, R6.1-2,
// R9.1, R10.1, R11.1-2). See <strideweave/extension.h>.
#include <strideweave/extension.h>

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "extension/registry.h"

namespace strideweave::extension {

namespace detail {
bool is_framework_base(CarrierClass cls) {
  return cls == carrier_class<DependentCarrier>() || cls == carrier_class<DefinedCarrier>() ||
         cls == carrier_class<DefinedDependentCarrier>();
}
}  // namespace detail

namespace {

template <class F>
F require_callable(F f, const char* who, const char* field) {
  if (!f) throw TypeError(fmt::format("{}: {} must be a callable (got an empty one)", who, field));
  return f;
}

std::string require_text(std::string text, const char* who, const char* field) {
  if (text.empty()) throw ValueError(fmt::format("{}: {} must be a non-empty string", who, field));
  return text;
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}
std::string demangled(const std::type_info& type) { return demangled(type.name()); }

void require_concrete_carrier_class(CarrierClass cls, const char* who, const char* field) {
  if (!cls.traits().derives_carrier)
    throw TypeError(fmt::format("{}: {} {} is not a Carrier class", who, field, cls.name()));
  if (cls.traits().is_root) throw TypeError(fmt::format("{}: {} cannot be the Carrier root", who, field));
  if (detail::is_framework_base(cls))
    throw TypeError(fmt::format("{}: {} {} is a framework base class, not a concrete carrier class", who, field,
                                cls.name()));
}

void require_unique_kernel_ids(std::span<const KernelPattern> patterns, const char* who) {
  std::set<std::string, std::less<>> ids;
  for (const KernelPattern& p : patterns)
    if (!ids.insert(p.kernel_id()).second)
      throw ValueError(fmt::format("{}: the kernel_id '{}' appears twice", who, p.kernel_id()));
}

}  // namespace

Unsupported::Unsupported(std::string reason) : reason_(require_text(std::move(reason), "Unsupported", "reason")) {}

ProviderResult::ProviderResult(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {
  if (outputs_.empty()) throw ValueError("ProviderResult: outputs must name at least one Tensor");
}

KernelExecutionInterface::KernelExecutionInterface(std::string version)
    : version_(require_text(std::move(version), "KernelExecutionInterface", "version")) {}

// The identity's type half (interface_type()), so that a binding's per-class
// key names the binding's class rather than the shared host type.
std::string KernelExecutionInterface::describe() const {
  return fmt::format("{}@{}", demangled(interface_type().name()), version_);
}

PreparedKernel::PreparedKernel(std::shared_ptr<const KernelExecutionInterface> interface, KernelSubmit submit)
    : interface_(std::move(interface)), submit_(require_callable(std::move(submit), "PreparedKernel", "submit")) {
  if (!interface_) throw TypeError("PreparedKernel: interface must be a KernelExecutionInterface (got null)");
}

PreparedTransfer::PreparedTransfer(TransferSubmit submit)
    : submit_(require_callable(std::move(submit), "PreparedTransfer", "submit")) {}

PreparedComposite::PreparedComposite(KernelSubmit submit)
    : submit_(require_callable(std::move(submit), "PreparedComposite", "submit")) {}

StorageProvider::StorageProvider(SupportsDType supports_dtype, PhysicalSize physical_size, Allocate allocate,
                                 Release release, Read read, Write write, bool elementwise_fallback)
    : supports_dtype_(require_callable(std::move(supports_dtype), "StorageProvider", "supports_dtype")),
      physical_size_(require_callable(std::move(physical_size), "StorageProvider", "physical_size")),
      allocate_(require_callable(std::move(allocate), "StorageProvider", "allocate")),
      release_(require_callable(std::move(release), "StorageProvider", "release")),
      read_(require_callable(std::move(read), "StorageProvider", "read")),
      write_(require_callable(std::move(write), "StorageProvider", "write")),
      elementwise_fallback_(elementwise_fallback) {}

StorageProvider StorageProvider::with_ranges(ReadRange read_range, WriteRange write_range, HostData host_data) const {
  StorageProvider copy = *this;
  copy.read_range_ = std::move(read_range);
  copy.write_range_ = std::move(write_range);
  copy.host_data_ = std::move(host_data);
  return copy;
}

StorageProvider StorageProvider::with_byte_ranges(ReadBytes read_bytes, WriteBytes write_bytes) const {
  StorageProvider copy = *this;
  copy.read_bytes_ = std::move(read_bytes);
  copy.write_bytes_ = std::move(write_bytes);
  return copy;
}

KernelPattern::KernelPattern(std::shared_ptr<const operation::OperationDefinition> operation,
                             std::vector<OperationCapability> plans, std::string kernel_id, Prepare prepare,
                             std::int64_t preference)
    : operation_(std::move(operation)),
      plans_(std::move(plans)),
      kernel_id_(std::move(kernel_id)),
      prepare_(require_callable(std::move(prepare), "KernelPattern", "prepare")),
      preference_(preference) {
  const char* who = "KernelPattern";
  if (!operation_) throw TypeError(fmt::format("{}: operation must be an OperationDefinition (got null)", who));
  // The registered identity itself (R11.2): a look-alike record never
  // selects another's plans.
  std::shared_ptr<const operation::OperationDefinition> registered;
  try {
    registered = operation::get_definition(operation_->name());
  } catch (const LookupError&) {
  }
  if (registered.get() != operation_.get())
    throw TypeError(fmt::format("{}: operation '{}' is not the registered OperationDefinition of that name", who,
                                operation_->name()));
  if (kernel_id_.empty()) throw ValueError(fmt::format("{}: kernel_id must be a non-empty string", who));
  if (plans_.empty()) throw ValueError(fmt::format("{} '{}': plans must name at least one capability", who, kernel_id_));
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i].operation().empty() || plans_[i].operands().empty())
      throw TypeError(fmt::format("{} '{}': plan {} is not a capability (a moved-from OperationCapability)", who,
                                  kernel_id_, i));
    if (plans_[i].operation() != operation_->name())
      throw ValueError(fmt::format("{} '{}': plan {} names operation '{}', not '{}'", who, kernel_id_, i,
                                   plans_[i].operation(), operation_->name()));
    for (std::size_t j = 0; j < i; ++j)
      if (plans_[i] == plans_[j])
        throw ValueError(fmt::format("{} '{}': the plan {} appears twice", who, kernel_id_,
                                     plans_[i].to_plan().to_string()));
  }
}

const OperationCapability* KernelPattern::matching_plan(const OperationPlan& plan) const noexcept {
  for (const OperationCapability& c : plans_)
    if (c.matches(plan)) return &c;
  return nullptr;
}

KernelProvider::KernelProvider(std::shared_ptr<const KernelExecutionInterface> interface,
                               std::vector<KernelPattern> patterns)
    : interface_(std::move(interface)), patterns_(std::move(patterns)) {
  if (!interface_) throw TypeError("KernelProvider: interface must be a KernelExecutionInterface (got null)");
  require_unique_kernel_ids(patterns_, "KernelProvider");
}

KernelPack::KernelPack(std::string namespace_name, std::string version, CarrierClass carrier_class,
                       std::shared_ptr<const KernelExecutionInterface> execution_interface,
                       std::vector<KernelPattern> patterns)
    : namespace_(std::move(namespace_name)),
      version_(std::move(version)),
      carrier_class_(carrier_class),
      interface_(std::move(execution_interface)),
      patterns_(std::move(patterns)) {
  const char* who = "KernelPack";
  require_concrete_carrier_class(carrier_class_, who, "carrier_class");
  if (carrier_class_.traits().is_dependent)
    throw TypeError(fmt::format("{}: {} is a DependentCarrier class; a pack belongs to one exact independent carrier",
                                who, carrier_class_.name()));
  if (!interface_) throw TypeError(fmt::format("{}: execution_interface must be a KernelExecutionInterface (got null)", who));
  if (namespace_.empty()) throw ValueError(fmt::format("{}: namespace must be a non-empty string", who));
  if (version_.empty()) throw ValueError(fmt::format("{} '{}': version must be a non-empty string", who, namespace_));
  if (patterns_.empty())
    throw ValueError(fmt::format("{} '{}@{}': patterns must name at least one KernelPattern", who, namespace_, version_));
  require_unique_kernel_ids(patterns_, who);
}

TransferRequest::TransferRequest(Tensor tensor, std::shared_ptr<Carrier> destination)
    : tensor_(std::move(tensor)),
      destination_(std::move(destination)),
      source_class_(tensor_.carrier()->exact_class()),
      destination_class_(destination_->exact_class()),
      dtype_(&tensor_.carrier()->dtype()),
      layout_(tensor_.layout()),
      physical_span_(tensor_.layout().cosize()) {}

TransferProvider::TransferProvider(Prepare prepare)
    : prepare_(require_callable(std::move(prepare), "TransferProvider", "prepare")) {}

TransferRoute::TransferRoute(CarrierClass source_class, CarrierClass destination_class, std::string route_id,
                             TransferProvider provider)
    : source_class_(source_class),
      destination_class_(destination_class),
      route_id_(std::move(route_id)),
      provider_(std::move(provider)) {
  require_concrete_carrier_class(source_class_, "TransferRoute", "source_class");
  require_concrete_carrier_class(destination_class_, "TransferRoute", "destination_class");
  if (route_id_.empty()) throw ValueError("TransferRoute: route_id must be a non-empty string");
}

CompositeProvider::CompositeProvider(Capabilities capabilities, ResultCarriers result_carriers, Prepare prepare)
    : capabilities_(require_callable(std::move(capabilities), "CompositeProvider", "capabilities")),
      result_carriers_(require_callable(std::move(result_carriers), "CompositeProvider", "result_carriers")),
      prepare_(require_callable(std::move(prepare), "CompositeProvider", "prepare")) {}

CompositeProvider CompositeProvider::with_backward(Backward backward) const {
  CompositeProvider copy = *this;
  copy.backward_ = require_callable(std::move(backward), "CompositeProvider", "backward");
  return copy;
}

CarrierDefinition::CarrierDefinition(StorageProvider storage, std::optional<KernelProvider> kernels,
                                     std::vector<TransferRoute> transfers, std::optional<CompositeProvider> composite,
                                     std::vector<std::shared_ptr<const CarrierFacet>> facets)
    : storage_(std::move(storage)),
      kernels_(std::move(kernels)),
      transfers_(std::move(transfers)),
      composite_(std::move(composite)),
      facets_(std::move(facets)) {
  const char* who = "CarrierDefinition";
  for (std::size_t i = 0; i < transfers_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (transfers_[i].source_class() == transfers_[j].source_class() &&
          transfers_[i].destination_class() == transfers_[j].destination_class())
        throw ValueError(fmt::format("{}: two transfer routes ('{}' and '{}') for the pair ({}, {})", who,
                                     transfers_[j].route_id(), transfers_[i].route_id(),
                                     transfers_[i].source_class().name(), transfers_[i].destination_class().name()));
  for (std::size_t i = 0; i < facets_.size(); ++i) {
    if (!facets_[i]) throw TypeError(fmt::format("{}: facet {} must be a CarrierFacet (got null)", who, i));
    for (std::size_t j = 0; j < i; ++j)
      if (typeid(*facets_[i]) == typeid(*facets_[j]))
        throw ValueError(fmt::format("{}: two facets of the exact type {}", who, demangled(typeid(*facets_[i]))));
  }
}

}  // namespace strideweave::extension
