// strideweave/extension.h — the carrier extension surface
// (carrier-extension.md R1-R13; strideweave.carriers.extension in Python is
// strideweave::extension here, cpp-mapping.md).
//
// A definition-backed carrier class supplies one immutable CarrierDefinition:
// a StorageProvider (its storage), optionally a KernelProvider (a kernel
// execution interface and kernel patterns: the class then computes), transfer
// routes, a CompositeProvider (for a DependentCarrier class) and typed facets.
// Kernel packs add patterns to an exact independent class until the class is
// first observed. Everything else (operation meaning, dtype planning,
// capability derivation, autograd, versions, publication) stays framework
// owned (R8).
//
// The C++ spelling of a definition-backed class (docs/extension.md): a class
// deriving from extension::DefinedCarrier (independent) or
// extension::DefinedDependentCarrier (dependent), whose constructor takes the
// framework's Construction key first; instances are made by
// extension::create<T>(slots, dtype, mutable_, args...) — R3.7's
// `Cls(slots, *, dtype, mutable=True)`. The key cannot be made outside the
// framework, so no instance exists without its definition's storage.
//
// Errors follow cpp-mapping.md: TypeError for a wrong kind of value (in C++
// mostly an empty callable, a null pointer or an ineligible class), ValueError
// for a bad value, and every failure leaves every registry as it was.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <variant>
#include <vector>

#include <strideweave/capability.h>
#include <strideweave/completion.h>
#include <strideweave/carrier.h>
#include <strideweave/dependent_carrier.h>
#include <strideweave/errors.h>
#include <strideweave/operation.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave::extension {

using operation::ResolvedInvocation;

// ---------------------------------------------------------------- R11.1 Unsupported

// A provider's runtime refusal: the framework moves on to the next candidate
// (kernels) or to the elementwise fallback (transfers). `reason` non-empty
// (ValueError).
class Unsupported {
 public:
  explicit Unsupported(std::string reason);
  const std::string& reason() const noexcept { return reason_; }
  friend bool operator==(const Unsupported&, const Unsupported&) = default;

 private:
  std::string reason_;
};

// R4 completion: ProviderCompletion<T> and ProviderPromise<T> live in
// <strideweave/completion.h> (also used by movement's AwaitMove).

// ---------------------------------------------------------------- R4.2-R4.4 results and prepared work

namespace detail {
struct ProviderResultAccess;  // internal (src/extension/registry.h): publication takes the outputs
}  // namespace detail

// R4.2 ProviderResult(outputs): a non-empty sequence of Tensors (ValueError
// when empty), frozen.
class ProviderResult {
 public:
  explicit ProviderResult(std::vector<Tensor> outputs);
  std::span<const Tensor> outputs() const noexcept { return outputs_; }

 private:
  friend struct detail::ProviderResultAccess;
  std::vector<Tensor> outputs_;
};

// What a kernel or composite submit returns (R4.4): a result now, or later.
using ResultSubmission = std::variant<ProviderResult, ProviderCompletion<ProviderResult>>;
// What a transfer submit returns: done now (monostate, Python's None), or later.
using TransferSubmission = std::variant<std::monostate, ProviderCompletion<void>>;

// R9.1 KernelExecutionInterface(version): a kernel provider's execution
// facility (a JIT, a precompiled launcher, a device queue). Open for
// subclassing: a subclass adds immutable device, stream or workspace
// handles. Its compatibility identity is (its exact dynamic type, version):
// a pack must name an interface with the provider's identity (R10.1).
class STRIDEWEAVE_EXPORT KernelExecutionInterface {
 public:
  // `version` non-empty (ValueError).
  explicit KernelExecutionInterface(std::string version);
  virtual ~KernelExecutionInterface() = default;
  KernelExecutionInterface(const KernelExecutionInterface&) = delete;
  KernelExecutionInterface& operator=(const KernelExecutionInterface&) = delete;

  const std::string& version() const noexcept { return version_; }

  struct CompatibilityIdentity {
    std::type_index type;
    std::string version;
    friend bool operator==(const CompatibilityIdentity&, const CompatibilityIdentity&) = default;
  };
  CompatibilityIdentity compatibility_identity() const { return {interface_type(), version_}; }
  // "acme::JitInterface@1.2" (the identity's demangled type, interface_type(),
  // and the version).
  std::string describe() const;

 protected:
  // The type half of the identity: the exact C++ type. A binding whose
  // instances share one host type (a Python subclass) overrides it with a
  // per-class key.
  virtual std::type_index interface_type() const { return typeid(*this); }

 private:
  std::string version_;
};

using KernelSubmit = std::function<ResultSubmission()>;
using TransferSubmit = std::function<TransferSubmission()>;

// R4.3 PreparedKernel(interface, submit): a prepared launch. `interface`
// non-null and `submit` a callable (TypeError). The framework calls submit
// at most once; the record's interface must be the provider's exact
// interface instance's identity (checked before submission, R9.2).
class PreparedKernel {
 public:
  PreparedKernel(std::shared_ptr<const KernelExecutionInterface> interface, KernelSubmit submit);
  const KernelExecutionInterface& interface() const noexcept { return *interface_; }
  const std::shared_ptr<const KernelExecutionInterface>& interface_ptr() const noexcept { return interface_; }
  const KernelSubmit& submit() const noexcept { return submit_; }

 private:
  std::shared_ptr<const KernelExecutionInterface> interface_;
  KernelSubmit submit_;
};

// R4.3 PreparedTransfer(submit), PreparedComposite(submit).
class PreparedTransfer {
 public:
  explicit PreparedTransfer(TransferSubmit submit);
  const TransferSubmit& submit() const noexcept { return submit_; }

 private:
  TransferSubmit submit_;
};

class PreparedComposite {
 public:
  explicit PreparedComposite(KernelSubmit submit);
  const KernelSubmit& submit() const noexcept { return submit_; }

 private:
  KernelSubmit submit_;
};

// ---------------------------------------------------------------- R3 storage

// R3.1 StorageProvider(supports_dtype, physical_size, allocate, release,
// read, write, elementwise_fallback=false): six callables (an empty one is a
// TypeError), immutable. Contracts (R3.2): supports_dtype is identity-based
// and side-effect free (a throwing supports_dtype answers false: the C++
// query is noexcept); physical_size is the non-negative slot count;
// allocate establishes exactly `slots` slots on an instance not yet exposed;
// release relinquishes storage (the framework calls it at most once per
// successful release); read and write see one in-range slot only (the
// framework validated liveness, mutability, index and the value's kind).
//
// Range access (beyond the specification; docs/extension.md, "Ranges"):
// with_ranges(read_range, write_range, host_data) returns a copy of the
// provider with optional range callbacks (each may be null: that access
// stays per slot). The framework's range operations (Carrier::read_values,
// write_values, copy_range, Tensor::values, fallback copies, caller
// outputs, moves) then call them instead of read/write:
//   read_range(carrier, first, out): fill out[k] with slot first + k
//     (values of the carrier's dtype: another kind is a TypeError);
//   write_range(carrier, first, values): write values[k] to slot first + k
//     (may fail part way: the framework writes the run's before-image back);
//   host_data(carrier): the instance's slot 0 when its storage is one
//     contiguous block of host memory in the dtype's host representation
//     (float, std::int32_t, bool), valid until release; null otherwise. With
//     it the framework copies runs with memcpy and calls neither read nor
//     write (nor the range callbacks) for them. An exception answers null.
// Every run is non-empty and in range, on a live, established instance.
//
// Byte ranges (beyond the specification; docs/extension.md, "Ranges"):
// with_byte_ranges(read_bytes, write_bytes) returns a copy with optional
// callbacks that move a run in the dtype's host representation (float,
// std::int32_t, one byte 0 or 1 per Bool slot; Carrier::element_bytes()
// bytes per slot) without building Values:
//   read_bytes(carrier, first, count, out): fill out with the run's bytes;
//   write_bytes(carrier, first, count, data): write them (may fail part
//     way: the framework writes the run's before-image back).
// The framework prefers them to the Value range callbacks wherever it holds
// bytes: Carrier::read_bytes / write_bytes, and moves between this class and
// a host-memory carrier (CPU), one callback per run (a device's bulk copy
// to or from the host, never element by element). A provider with byte
// callbacks and no Value range callbacks has its Value runs served by them
// too (the framework converts on the host), so a device needs only these.
class StorageProvider {
 public:
  using SupportsDType = std::function<bool(const Carrier& carrier, const DType& dtype)>;
  using PhysicalSize = std::function<std::int64_t(const Carrier& carrier)>;
  using Allocate = std::function<void(Carrier& carrier, std::int64_t slots)>;
  using Release = std::function<void(Carrier& carrier)>;
  using Read = std::function<Value(const Carrier& carrier, std::int64_t index)>;
  using Write = std::function<void(Carrier& carrier, std::int64_t index, const Value& value)>;
  using ReadRange = std::function<void(const Carrier& carrier, std::int64_t first, std::span<Value> out)>;
  using WriteRange = std::function<void(Carrier& carrier, std::int64_t first, std::span<const Value> values)>;
  using HostData = std::function<void*(const Carrier& carrier)>;
  using ReadBytes = std::function<void(const Carrier& carrier, std::int64_t first, std::int64_t count, std::byte* out)>;
  using WriteBytes =
      std::function<void(Carrier& carrier, std::int64_t first, std::int64_t count, const std::byte* data)>;

  StorageProvider(SupportsDType supports_dtype, PhysicalSize physical_size, Allocate allocate, Release release,
                  Read read, Write write, bool elementwise_fallback = false);

  // A copy with the range callbacks above (null ones: per slot).
  StorageProvider with_ranges(ReadRange read_range, WriteRange write_range, HostData host_data = nullptr) const;
  const ReadRange& read_range() const noexcept { return read_range_; }
  const WriteRange& write_range() const noexcept { return write_range_; }
  const HostData& host_data() const noexcept { return host_data_; }
  // A copy with the byte range callbacks above (null ones: not offered).
  StorageProvider with_byte_ranges(ReadBytes read_bytes, WriteBytes write_bytes) const;
  const ReadBytes& read_bytes() const noexcept { return read_bytes_; }
  const WriteBytes& write_bytes() const noexcept { return write_bytes_; }

  const SupportsDType& supports_dtype() const noexcept { return supports_dtype_; }
  const PhysicalSize& physical_size() const noexcept { return physical_size_; }
  const Allocate& allocate() const noexcept { return allocate_; }
  const Release& release() const noexcept { return release_; }
  const Read& read() const noexcept { return read_; }
  const Write& write() const noexcept { return write_; }
  bool elementwise_fallback() const noexcept { return elementwise_fallback_; }

 private:
  SupportsDType supports_dtype_;
  PhysicalSize physical_size_;
  Allocate allocate_;
  Release release_;
  Read read_;
  Write write_;
  bool elementwise_fallback_;
  ReadRange read_range_;
  WriteRange write_range_;
  HostData host_data_;
  ReadBytes read_bytes_;
  WriteBytes write_bytes_;
};

// ---------------------------------------------------------------- R9-R11 kernels

// R11.2 KernelPattern(operation, plans, kernel_id, prepare, preference=0):
// `operation` a registered OperationDefinition (TypeError for null or an
// unregistered object); `plans` non-empty, unique shapes, each naming
// operation->name() (ValueError); `kernel_id` non-empty (ValueError);
// `prepare` a callable (TypeError). prepare(invocation, interface) returns
// the prepared launch or Unsupported; it must not submit work or change any
// carrier.
class KernelPattern {
 public:
  using Prepared = std::variant<PreparedKernel, Unsupported>;
  using Prepare = std::function<Prepared(const ResolvedInvocation& invocation, const KernelExecutionInterface& interface)>;

  KernelPattern(std::shared_ptr<const operation::OperationDefinition> operation, std::vector<OperationCapability> plans,
                std::string kernel_id, Prepare prepare, std::int64_t preference = 0);

  const operation::OperationDefinition& operation() const noexcept { return *operation_; }
  const std::shared_ptr<const operation::OperationDefinition>& operation_ptr() const noexcept { return operation_; }
  std::span<const OperationCapability> plans() const noexcept { return plans_; }
  const std::string& kernel_id() const noexcept { return kernel_id_; }
  const Prepare& prepare() const noexcept { return prepare_; }
  std::int64_t preference() const noexcept { return preference_; }
  // The plan of this pattern exactly matching `plan`, or null (R11.3).
  const OperationCapability* matching_plan(const OperationPlan& plan) const noexcept;

 private:
  std::shared_ptr<const operation::OperationDefinition> operation_;
  std::vector<OperationCapability> plans_;
  std::string kernel_id_;
  Prepare prepare_;
  std::int64_t preference_;
};

// R6.1 KernelProvider(interface, patterns=()): `interface` non-null
// (TypeError); kernel ids unique (ValueError).
class KernelProvider {
 public:
  explicit KernelProvider(std::shared_ptr<const KernelExecutionInterface> interface,
                          std::vector<KernelPattern> patterns = {});
  const KernelExecutionInterface& interface() const noexcept { return *interface_; }
  const std::shared_ptr<const KernelExecutionInterface>& interface_ptr() const noexcept { return interface_; }
  std::span<const KernelPattern> patterns() const noexcept { return patterns_; }

 private:
  std::shared_ptr<const KernelExecutionInterface> interface_;
  std::vector<KernelPattern> patterns_;
};

// R10.1 KernelPack(namespace, version, carrier_class, execution_interface,
// patterns): non-empty strings (ValueError); carrier_class a concrete
// independent Carrier class (TypeError for a non-carrier, the root or a
// DependentCarrier class; the definition checks are register_kernel_pack's);
// interface non-null (TypeError); patterns non-empty with unique kernel ids
// (ValueError).
class KernelPack {
 public:
  KernelPack(std::string namespace_name, std::string version, CarrierClass carrier_class,
             std::shared_ptr<const KernelExecutionInterface> execution_interface, std::vector<KernelPattern> patterns);
  const std::string& namespace_name() const noexcept { return namespace_; }
  const std::string& version() const noexcept { return version_; }
  CarrierClass carrier_class() const noexcept { return carrier_class_; }
  const KernelExecutionInterface& execution_interface() const noexcept { return *interface_; }
  std::span<const KernelPattern> patterns() const noexcept { return patterns_; }

 private:
  std::string namespace_;
  std::string version_;
  CarrierClass carrier_class_;
  std::shared_ptr<const KernelExecutionInterface> interface_;
  std::vector<KernelPattern> patterns_;
};

// ---------------------------------------------------------------- R5 transfers

// R5.1 TransferRequest: what a route's prepare sees (framework-created).
class TransferRequest {
 public:
  const Tensor& tensor() const noexcept { return tensor_; }
  const std::shared_ptr<Carrier>& destination() const noexcept { return destination_; }
  CarrierClass source_class() const noexcept { return source_class_; }
  CarrierClass destination_class() const noexcept { return destination_class_; }
  const SimpleDType& dtype() const noexcept { return *dtype_; }
  const Layout& layout() const noexcept { return layout_; }
  std::int64_t physical_span() const noexcept { return physical_span_; }

 private:
  friend struct TransferRequestAccess;
  TransferRequest(Tensor tensor, std::shared_ptr<Carrier> destination);
  Tensor tensor_;
  std::shared_ptr<Carrier> destination_;
  CarrierClass source_class_;
  CarrierClass destination_class_;
  const SimpleDType* dtype_;
  Layout layout_;
  std::int64_t physical_span_;
};

// R5.2 TransferProvider(prepare): prepare(request) returns the prepared
// mechanics or Unsupported without changing either carrier.
class TransferProvider {
 public:
  using Prepared = std::variant<PreparedTransfer, Unsupported>;
  using Prepare = std::function<Prepared(const TransferRequest& request)>;
  explicit TransferProvider(Prepare prepare);
  const Prepare& prepare() const noexcept { return prepare_; }

 private:
  Prepare prepare_;
};

// R5.4 TransferRoute(source_class, destination_class, route_id, provider):
// concrete Carrier classes (TypeError), non-empty route_id (ValueError).
class TransferRoute {
 public:
  TransferRoute(CarrierClass source_class, CarrierClass destination_class, std::string route_id,
                TransferProvider provider);
  CarrierClass source_class() const noexcept { return source_class_; }
  CarrierClass destination_class() const noexcept { return destination_class_; }
  const std::string& route_id() const noexcept { return route_id_; }
  const TransferProvider& provider() const noexcept { return provider_; }

 private:
  CarrierClass source_class_;
  CarrierClass destination_class_;
  std::string route_id_;
  TransferProvider provider_;
};

// ---------------------------------------------------------------- R6.2 composites

// R6.2 CompositeProvider(capabilities, result_carriers, prepare): three
// callables (TypeError). capabilities(carrier) is a constructed dependent
// instance's complete executable set (frozen once, sorted; a duplicate shape
// is a ValueError); result_carriers(carrier, invocation) names one exact
// concrete class per ResultSpec (ValueError for a wrong count); prepare
// returns the prepared composite or Unsupported before any submission.
class CompositeProvider {
 public:
  using Capabilities = std::function<std::vector<OperationCapability>(const Carrier& carrier)>;
  using ResultCarriers = std::function<std::vector<CarrierClass>(const Carrier& carrier, const ResolvedInvocation& invocation)>;
  using Prepared = std::variant<PreparedComposite, Unsupported>;
  using Prepare = std::function<Prepared(const Carrier& carrier, const ResolvedInvocation& invocation)>;

  // Beyond R6.2 (docs/extension.md, "Composite backward"): how the
  // composite runs the backward of a call it executed. backward(carrier,
  // context, cotangents) SHALL evaluate the invocation's own VJP
  // (context.invocation().definition().vjp(): the meaning stays the
  // operation's), however the composite decomposes the call (block by block,
  // tile by tile: the adjoint of a sum of blocks is the sum of the blocks'
  // adjoints), and return what that VJP returns: one Tensor or None per
  // differentiable schema operand, in operand order. The framework validates
  // it exactly as a VJP's return. Without one, the framework calls the VJP.
  using Backward = std::function<std::vector<std::optional<Tensor>>(
      const Carrier& carrier, const operation::VJPContext& context, std::span<const std::optional<Tensor>> cotangents)>;

  CompositeProvider(Capabilities capabilities, ResultCarriers result_carriers, Prepare prepare);
  const Capabilities& capabilities() const noexcept { return capabilities_; }
  const ResultCarriers& result_carriers() const noexcept { return result_carriers_; }
  const Prepare& prepare() const noexcept { return prepare_; }
  // A copy with `backward` (TypeError when empty).
  CompositeProvider with_backward(Backward backward) const;
  // Empty when none was given.
  const Backward& backward() const noexcept { return backward_; }

 private:
  Capabilities capabilities_;
  ResultCarriers result_carriers_;
  Prepare prepare_;
  Backward backward_;
};

// ---------------------------------------------------------------- R12 facets

// R12.1 The open marker base of carrier-specific providers (a residency
// control, a device handle). Registered per exact dynamic type; never
// widens dtypes, capabilities, routes or meaning (R12.3).
class STRIDEWEAVE_EXPORT CarrierFacet {
 public:
  virtual ~CarrierFacet() = default;
};

// ---------------------------------------------------------------- R2 the definition

// R2.1 CarrierDefinition(storage, kernels=nullopt, transfers={},
// composite=nullopt, facets={}): immutable. A null facet is a TypeError; two
// routes with the same (source, destination) pair or two facets of the same
// exact type are a ValueError.
class CarrierDefinition {
 public:
  explicit CarrierDefinition(StorageProvider storage, std::optional<KernelProvider> kernels = std::nullopt,
                             std::vector<TransferRoute> transfers = {},
                             std::optional<CompositeProvider> composite = std::nullopt,
                             std::vector<std::shared_ptr<const CarrierFacet>> facets = {});
  const StorageProvider& storage() const noexcept { return storage_; }
  const std::optional<KernelProvider>& kernels() const noexcept { return kernels_; }
  std::span<const TransferRoute> transfers() const noexcept { return transfers_; }
  const std::optional<CompositeProvider>& composite() const noexcept { return composite_; }
  std::span<const std::shared_ptr<const CarrierFacet>> facets() const noexcept { return facets_; }

 private:
  StorageProvider storage_;
  std::optional<KernelProvider> kernels_;
  std::vector<TransferRoute> transfers_;
  std::optional<CompositeProvider> composite_;
  std::vector<std::shared_ptr<const CarrierFacet>> facets_;
};

// R2.3 Registers `definition` for exactly `carrier_class`, once (R7.1).
// TypeError for: a class that is not a Carrier class, the Carrier root, a
// class whose instances cannot use a storage provider (not derived from
// DefinedCarrier / DefinedDependentCarrier: every shipped class), a class
// that already holds a definition, a definition-free capability declaration,
// or was already observed; a route whose source is not exactly the class; an
// independent class with a composite or a dependent class with kernels or
// without a composite (R6.3). All or nothing: a rejected definition
// publishes nothing.
STRIDEWEAVE_EXPORT void register_carrier_definition(CarrierClass carrier_class, CarrierDefinition definition);

// R10.2 Adds a pack's patterns to its exact target class until the class is
// first observed (R7.2). TypeError for a target that is the root, not a
// carrier, dependent, without a definition, storage-only, already observed,
// or whose provider's interface identity differs from the pack's; ValueError
// for a (namespace, version) already registered for the target or a kernel id
// already in the target's set, or a plan whose shape is already claimed with
// other execution axes. A rejected pack contributes nothing.
STRIDEWEAVE_EXPORT void register_kernel_pack(KernelPack pack);

// The definition registered for exactly `carrier_class`, or null. Observes
// nothing.
STRIDEWEAVE_EXPORT std::shared_ptr<const CarrierDefinition> carrier_definition(CarrierClass carrier_class);

// R12.2 The facet registered under exactly `facet_type` in the definition of
// `carrier`'s exact class, or null (a definition-free carrier has none).
STRIDEWEAVE_EXPORT std::shared_ptr<const CarrierFacet> facet(const Carrier& carrier, std::type_index facet_type);
// The facet, or NotImplementedError naming the type and the class.
STRIDEWEAVE_EXPORT std::shared_ptr<const CarrierFacet> require_facet(const Carrier& carrier, std::type_index facet_type);

// Typed faces: F must derive from CarrierFacet (the C++ spelling of R12.2's
// TypeError is a compile-time error).
template <class F>
std::shared_ptr<const F> facet(const Carrier& carrier) {
  static_assert(std::is_base_of_v<CarrierFacet, F>, "facet<F>: F must derive from extension::CarrierFacet");
  return std::static_pointer_cast<const F>(facet(carrier, typeid(F)));
}
template <class F>
std::shared_ptr<const F> require_facet(const Carrier& carrier) {
  static_assert(std::is_base_of_v<CarrierFacet, F>, "require_facet<F>: F must derive from extension::CarrierFacet");
  return std::static_pointer_cast<const F>(require_facet(carrier, typeid(F)));
}

// ---------------------------------------------------------------- definition-backed instances

class DefinedCarrier;
class DefinedDependentCarrier;

namespace detail {
struct ClassDefinition;  // the registry's record of one class (src/extension/registry.h)
struct ConstructionAccess;
using LikeMaker = std::shared_ptr<Carrier> (*)(const Carrier& prototype, std::int64_t slots, bool mutable_,
                                               const SimpleDType& dtype);
}  // namespace detail

// The framework's key for constructing a definition-backed instance: made
// only by create<T>() (or a binding's run-time class path), after the
// class's definition was found, the dtype checked and the class observed.
class STRIDEWEAVE_EXPORT Construction {
 public:
  Construction(Construction&&) noexcept = default;
  Construction(const Construction&) = delete;
  Construction& operator=(const Construction&) = delete;
  Construction& operator=(Construction&&) = delete;

  std::int64_t slots() const noexcept { return slots_; }
  const SimpleDType& dtype() const noexcept { return *dtype_; }
  bool is_mutable() const noexcept { return mutable_; }

  // The run-time class the instance binds to (a binding's class), if any.
  const std::optional<CarrierClass>& runtime_class() const noexcept { return runtime_class_; }

 private:
  friend class DefinedCarrier;
  friend class DefinedDependentCarrier;
  friend struct detail::ConstructionAccess;
  Construction() = default;
  // Begins the construction of an instance of `cls` (R3.7): `slots` >= 0
  // (ValueError), `dtype` a simple storage dtype (ValueError), `cls` a
  // definition-backed class (TypeError naming it otherwise). Observes the
  // class (R7.2: the first instance seals its packs). `maker` builds
  // another instance for new_like/allocate_like (null: those raise
  // NotImplementedError). `runtime_class`: a class minted by
  // CarrierClass::define_runtime_class (a binding's class) or nullopt.
  static Construction begin(CarrierClass cls, std::int64_t slots, const DType& dtype, bool mutable_,
                            detail::LikeMaker maker, std::optional<CarrierClass> runtime_class);
  const detail::ClassDefinition* definition_ = nullptr;  // registry records live for the process
  std::int64_t slots_ = 0;
  const SimpleDType* dtype_ = nullptr;
  bool mutable_ = true;
  detail::LikeMaker maker_ = nullptr;
  std::optional<CarrierClass> runtime_class_;
};

namespace detail {
// The framework's (and a binding's) way to begin a construction; see
// Construction::begin.
struct ConstructionAccess {
  static Construction begin(CarrierClass cls, std::int64_t slots, const DType& dtype, bool mutable_, LikeMaker maker,
                            std::optional<CarrierClass> runtime_class = std::nullopt) {
    return Construction::begin(cls, slots, dtype, mutable_, maker, runtime_class);
  }
};

// The storage an instance forwards to its class's StorageProvider.
struct STRIDEWEAVE_EXPORT ProvidedStorage {
  const ClassDefinition* definition = nullptr;  // registry records live for the process
  std::int64_t slots = 0;
  LikeMaker maker = nullptr;
  const StorageProvider& provider() const noexcept;
  bool supports(const Carrier& self, const DType& dtype) const noexcept;
  Value read(const Carrier& self, std::int64_t index) const;
  void write(Carrier& self, std::int64_t index, const Value& value) const;
  // Runs: the provider's range callbacks when it has them, else per slot.
  void read_range(const Carrier& self, std::int64_t first, std::int64_t count, Value* out) const;
  void write_range(Carrier& self, std::int64_t first, std::span<const Value> values) const;
  HostSpan host(const Carrier& self) const noexcept;
  // Runs in host representation through the provider's byte callbacks;
  // false (nothing done) when it offers none.
  bool read_bytes(const Carrier& self, std::int64_t first, std::int64_t count, std::byte* out) const;
  bool write_bytes(Carrier& self, std::int64_t first, std::int64_t count, const std::byte* data) const;
  void release(Carrier& self) const;
  std::shared_ptr<Carrier> make_like(const Carrier& self, std::int64_t size, bool mutable_,
                                     const SimpleDType& dtype) const;
  std::atomic<bool> established{false};
  // After the constructor: supports_dtype (TypeError when false), allocate,
  // physical_size == slots (ValueError; the storage is released first).
  // RuntimeError when called twice.
  void establish(Carrier& self, const SimpleDType& dtype);
  // RuntimeError naming `what` before establish() succeeded.
  void require_established(const char* what) const;
};
}  // namespace detail

// The base of a definition-backed independent carrier class. The storage
// hooks forward to the class's StorageProvider and are final.
class STRIDEWEAVE_EXPORT DefinedCarrier : public Carrier {
 public:
  // Detected by carrier_class<T>() (CarrierClass::Traits::storage_provider).
  static constexpr bool uses_storage_provider = true;
  bool supports_storage_dtype(const DType& dtype) const noexcept final { return storage_.supports(*this, dtype); }

 protected:
  explicit DefinedCarrier(Construction key);

 private:
  friend STRIDEWEAVE_EXPORT void establish(DefinedCarrier& instance);
  std::int64_t storage_size() const noexcept final { return storage_.slots; }
  Value read_slot(std::int64_t index) const final { return storage_.read(*this, index); }
  void write_slot(std::int64_t index, const Value& value) final { storage_.write(*this, index, value); }
  void read_range(std::int64_t first, std::int64_t count, Value* out) const final {
    storage_.read_range(*this, first, count, out);
  }
  void write_range(std::int64_t first, std::span<const Value> values) final {
    storage_.write_range(*this, first, values);
  }
  HostSpan host_storage() const noexcept final { return storage_.host(*this); }
  bool read_range_bytes(std::int64_t first, std::int64_t count, std::byte* out) const final {
    return storage_.read_bytes(*this, first, count, out);
  }
  bool write_range_bytes(std::int64_t first, std::int64_t count, const std::byte* data) final {
    return storage_.write_bytes(*this, first, count, data);
  }
  void release_storage() final { storage_.release(*this); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const final;
  detail::ProvidedStorage storage_;
};

// The base of a definition-backed DependentCarrier class: storage as
// DefinedCarrier's, capabilities from the definition's
// CompositeProvider::capabilities, frozen before the instance is exposed
// (R6.2, R7.3).
class STRIDEWEAVE_EXPORT DefinedDependentCarrier : public DependentCarrier {
 public:
  static constexpr bool uses_storage_provider = true;
  bool supports_storage_dtype(const DType& dtype) const noexcept final { return storage_.supports(*this, dtype); }

 protected:
  explicit DefinedDependentCarrier(Construction key);
  std::vector<OperationCapability> _generate_operation_capabilities() const final;

 private:
  friend STRIDEWEAVE_EXPORT void establish(DefinedDependentCarrier& instance);
  std::int64_t storage_size() const noexcept final { return storage_.slots; }
  Value read_slot(std::int64_t index) const final { return storage_.read(*this, index); }
  void write_slot(std::int64_t index, const Value& value) final { storage_.write(*this, index, value); }
  void read_range(std::int64_t first, std::int64_t count, Value* out) const final {
    storage_.read_range(*this, first, count, out);
  }
  void write_range(std::int64_t first, std::span<const Value> values) final {
    storage_.write_range(*this, first, values);
  }
  HostSpan host_storage() const noexcept final { return storage_.host(*this); }
  bool read_range_bytes(std::int64_t first, std::int64_t count, std::byte* out) const final {
    return storage_.read_bytes(*this, first, count, out);
  }
  bool write_range_bytes(std::int64_t first, std::int64_t count, const std::byte* data) final {
    return storage_.write_bytes(*this, first, count, data);
  }
  void release_storage() final { storage_.release(*this); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const final;
  detail::ProvidedStorage storage_;
};

// Completes a constructed instance before anyone sees it: storage
// establishment, then (dependent) capability finalisation. On failure the
// instance is discarded (its storage released) and the error propagates.
STRIDEWEAVE_EXPORT void establish(DefinedCarrier& instance);
STRIDEWEAVE_EXPORT void establish(DefinedDependentCarrier& instance);

namespace detail {
template <class T>
std::shared_ptr<Carrier> make_like_of(const Carrier& prototype, std::int64_t slots, bool mutable_,
                                      const SimpleDType& dtype);
template <class T>
constexpr LikeMaker like_maker() {
  if constexpr (std::is_constructible_v<T, Construction, const T&> || std::is_constructible_v<T, Construction>)
    return &make_like_of<T>;
  else
    return nullptr;
}
}  // namespace detail

// R3.7 Cls(slots, *, dtype, mutable=True): a new instance of the
// definition-backed class T, whose constructor takes the Construction key
// first and then `args` (a dependent class's dependencies). new_like and
// allocate_like build T(key, prototype) when T has that constructor, else
// T(key), else raise NotImplementedError.
template <class T, class... Args>
std::shared_ptr<T> create(std::int64_t slots, const DType& dtype, bool mutable_ = true, Args&&... args) {
  static_assert(std::is_base_of_v<DefinedCarrier, T> || std::is_base_of_v<DefinedDependentCarrier, T>,
                "extension::create<T>: T must derive from DefinedCarrier or DefinedDependentCarrier");
  Construction key =
      detail::ConstructionAccess::begin(carrier_class<T>(), slots, dtype, mutable_, detail::like_maker<T>());
  std::shared_ptr<T> instance = std::make_shared<T>(std::move(key), std::forward<Args>(args)...);
  establish(*instance);
  return instance;
}

namespace detail {
template <class T>
std::shared_ptr<Carrier> make_like_of(const Carrier& prototype, std::int64_t slots, bool mutable_,
                                      const SimpleDType& dtype) {
  Construction key = ConstructionAccess::begin(carrier_class<T>(), slots, dtype, mutable_, like_maker<T>());
  std::shared_ptr<T> instance;
  if constexpr (std::is_constructible_v<T, Construction, const T&>)
    instance = std::make_shared<T>(std::move(key), static_cast<const T&>(prototype));
  else
    instance = std::make_shared<T>(std::move(key));
  establish(*instance);
  return instance;
}
}  // namespace detail

}  // namespace strideweave::extension

namespace strideweave {
// The top-level re-exports (carrier-extension R1: the same entities).
using extension::CarrierDefinition;
using extension::CarrierFacet;
using extension::CompositeProvider;
using extension::KernelExecutionInterface;
using extension::KernelPack;
using extension::KernelPattern;
using extension::KernelProvider;
using extension::register_carrier_definition;
using extension::register_kernel_pack;
using extension::StorageProvider;
using extension::TransferRoute;
using extension::Unsupported;
}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
