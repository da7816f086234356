// strideweave/carrier.h — the Carrier base (core-concepts.md sections 1-2).
//
// A Carrier owns or references one flat, homogeneous sequence of slots of one
// stored dtype (Float32, Int32 or Bool). Tensors view carriers through an
// offset and a Layout. Carriers are always held by std::shared_ptr.
//
// Contract of the public surface (each error leaves the carrier unchanged):
//   size(), get_value(i), set_value(i, v), scatter(...)  — RuntimeError after
//       release(); IndexError outside [0, size()); set_value on a carrier
//       that is not publicly mutable -> RuntimeError; a Value of another
//       element kind -> TypeError. (A non-integer index is a compile-time
//       error in C++.) A class may answer size() 0 once released instead
//       (released_size_is_zero: Evictable).
//   version() — non-negative, monotonic; +1 per successful set_value; failed
//       writes, allocation, construction and release add nothing.
//   While a definition-backed operation's provider callbacks run, the public
//   writes (set_value, write_slots, scatter, bump_version) to its operands'
//   carriers are guarded (docs/extension.md, "Provider writes to
//   operands"): refused with ProviderContractError on a carrier the
//   operation does not declare mutated; logged, and not versioned, on one it
//   does (the operation steps the version once when it publishes).
//   is_mutable() — intrinsic mutability and not owned by a composite.
//   is_owned() / is_owned_by(c) — claimed by a composite (DependentCarrier::
//       claim, <strideweave/dependent_carrier.h>). An owned carrier refuses
//       every public mutation (writes, scatter, bump_version, release, being
//       moved or moved into) with RuntimeError, except on a thread where its
//       owner holds owner access (carrier-composition A4).
//   release() — permanent and idempotent; RuntimeError on an owned carrier.
//       A storage hook that throws leaves the carrier live (nothing
//       released) and the error propagates.
//       After release dtype(), supports_storage_dtype() and new_like() still
//       work.
//   supports_storage_dtype(d) — identity-based, allocation-free and
//       independent of state.
//   new_like / allocate_like — fresh storage of the same exact class;
//       TypeError/ValueError as core-concepts.md 1.2 for the dtype.
//
// Exact-class identity: CarrierClass names the most-derived C++ type; every
// registry (kernels, capabilities, move routes) is keyed by it and never
// walks base classes (core-concepts.md 1.8).
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>
#include <span>
#include <string>
#include <typeindex>
#include <typeinfo>

#include <strideweave/carrier_class.h>
#include <strideweave/placement.h>
#include <strideweave/dtype.h>
#include <strideweave/value.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class Carrier;
class DependentCarrier;
class Operation;  // <strideweave/autograd.h>
class Layout;
struct ExecutionAxes;
class OperationCapability;
class OperationPlan;
class Tensor;
namespace detail {
struct MoveAccess;      // src/movement: the move transaction's un-versioned access
struct ProviderWrites;  // src/storage/provider_writes.h: the pipeline's guard while providers run
struct RangeAccess;     // src/storage/ranges.h: the framework's un-versioned range access
struct Ownership;       // src/storage/ownership.h: claims and owner access (dependent_carrier.h)
}  // namespace detail

// The identity of T (carrier-class.h): for any T, so that registries can
// reject a type that is not a carrier. The traits come from the type.
template <class T>
CarrierClass carrier_class() {
  static const CarrierClass identity = [] {
    CarrierClass::Traits traits;
    traits.derives_carrier = std::is_base_of_v<Carrier, T>;
    traits.is_root = std::is_same_v<std::remove_cv_t<T>, Carrier>;
    if constexpr (std::is_base_of_v<Carrier, T>) {
      traits.is_dependent = std::is_base_of_v<DependentCarrier, T>;
      traits.storage_provider = requires { T::uses_storage_provider; };
    }
    return CarrierClass::of_type(typeid(T), traits);
  }();
  return identity;
}

// Where a carrier's slots are plain host memory: `data` is slot 0, the
// slots lie contiguously, one element of `dtype`'s host representation
// (float, std::int32_t, bool) each, `size` of them. A null `data` means the
// storage is not host memory (or the carrier is released). Writing through
// `data` bypasses versioning; only the framework's range operations and a
// class's own kernels do, and they step the version themselves.
struct HostSpan {
  void* data = nullptr;
  const SimpleDType* dtype = nullptr;
  std::int64_t size = 0;
  explicit operator bool() const noexcept { return data != nullptr; }
};

class Carrier : public std::enable_shared_from_this<Carrier> {
 public:
  Carrier(const Carrier&) = delete;
  Carrier& operator=(const Carrier&) = delete;
  virtual ~Carrier() = default;

  // The identity of this instance's exact (most-derived) class; a run-time
  // class's instances answer the identity they were constructed with. Not
  // meaningful inside a base-class constructor (the object is not yet of its
  // final type); TypeError for an instance bound to a run-time class whose
  // host is not its exact type.
  CarrierClass exact_class() const;
  // The class's one public name: exact_class().name() ("Generic", "CPU").
  std::string class_name() const { return exact_class().name(); }
  // Where this instance's storage lives (<strideweave/placement.h>): host
  // memory of this process unless the class says otherwise (a device
  // carrier answers its device; a carrier that spans machines, a rank). It
  // must not change over the instance's life. The operands of one call share
  // exact class and placement (TypeError naming both, before any work).
  virtual Placement placement() const { return Placement::host(); }

  std::int64_t size() const;
  const SimpleDType& dtype() const noexcept { return *dtype_; }
  Value get_value(std::int64_t index) const;
  void set_value(std::int64_t index, const Value& value);
  Value operator[](std::int64_t index) const { return get_value(index); }
  // A non-integer index is rejected at compile time (core-concepts 1.1's
  // TypeError), rather than silently truncated.
  template <std::floating_point F>
  Value get_value(F) const = delete;
  template <std::floating_point F>
  void set_value(F, const Value&) = delete;
  template <std::floating_point F>
  Value operator[](F) const = delete;

  virtual bool supports_storage_dtype(const DType& dtype) const noexcept = 0;

  bool is_mutable() const noexcept { return intrinsic_mutable_ && owner_.load() == nullptr; }
  bool is_owned() const noexcept { return owner_.load() != nullptr; }
  // Whether `owner` (a DependentCarrier) has claimed this carrier.
  bool is_owned_by(const Carrier& owner) const noexcept { return owner_.load() == &owner; }
  // Whether this carrier is owned by the composite whose owner access is the
  // innermost scope open on the calling thread (dependent_carrier.h): that
  // composite may then mutate, move and release it.
  bool is_owner_acting_here() const noexcept;
  void release();
  bool is_released() const noexcept { return released_.load(); }
  std::uint64_t version() const noexcept { return version_.load(); }

  // Fresh storage of this exact class holding `values` (dtype defaults to
  // this carrier's). Works on a released prototype.
  std::shared_ptr<Carrier> new_like(std::span<const Value> values, bool mutable_ = true,
                                    const DType* dtype = nullptr) const;
  // Fresh storage of `size` slots, initialised to storage_zero unless `empty`
  // (which lets a carrier skip zeroing). Memory the system cannot give is a
  // MemoryError naming the class (std::bad_alloc from make_like is mapped).
  std::shared_ptr<Carrier> allocate_like(std::int64_t size, bool mutable_ = true, const DType* dtype = nullptr,
                                         bool empty = false) const;

  // Capability queries (backend-capabilities.md, "Carrier queries select the
  // correct ownership model"). An independent carrier answers from its exact
  // class's sealed declaration, a dependent carrier from its own frozen
  // snapshot (RuntimeError before finalisation). They describe the
  // implementation's reach, not the current dtype, size, mutability or
  // release state. Defined in src/storage/carrier_queries.cpp.
  std::vector<OperationCapability> operation_capabilities(std::optional<std::string_view> operation_name = std::nullopt) const;
  bool supports_operation_plan(const OperationPlan& plan) const;
  std::optional<std::string> unsupported_plan_reason(const OperationPlan& plan) const;
  // The matching capability, or UnsupportedOperationPlan.
  OperationCapability require_operation_plan(const OperationPlan& plan) const;
  // The execution axes kept beside `capability` (capability.h,
  // execution_axes): an independent carrier's exact class answers; a
  // dependent instance's snapshot records plan shapes only, so each of its
  // capabilities answers the default ExecutionAxes. UnsupportedOperationPlan
  // when the carrier does not hold the capability.
  ExecutionAxes execution_axes(const OperationCapability& capability) const;

  // Dispatch (core-concepts 1.8; upstream carrier-dispatch): a fresh,
  // single-use Operation for `operation_name`, bound to this instance's exact
  // class (_operation_name, _dispatch_carrier_class); its forward() takes the
  // one path the typed functions take. A class with the library's own
  // kernels or a CarrierDefinition answers every registered operation name
  // (and sort's and topk's internal plans, and the pure views permute,
  // reshape, squeeze, unsqueeze, broadcast_to, as_strided); any other class
  // asks its dispatch hook, _dispatch_op. An unknown name, or a storage-only
  // class -> NotImplementedError naming it; a hook that returns null or an
  // Operation already dispatched -> TypeError (the first dispatch's metadata
  // stays). Defined in src/autograd.
  std::shared_ptr<Operation> dispatch_op(std::string_view operation_name) const;

  // Writes values[k] to slot indices[k] for every k as ONE versioned
  // mutation (version + 1): validates liveness, mutability, every index and
  // every value's kind first, so a failure writes nothing. Used by bulk
  // writes such as copying a result into a caller-provided output.
  void write_slots(std::span<const std::int64_t> indices, std::span<const Value> values);
  // Range operations (docs/storage.md, "Ranges"): a contiguous run of
  // slots [first, first + count). Every check comes before anything is read
  // or written, in this order: RuntimeError when released (the destination:
  // also unless publicly mutable); ValueError for count < 0; IndexError when
  // the run leaves [0, size()); TypeError for a value (or a source carrier)
  // of another dtype. count == 0 with first == size() is an empty run.
  //
  // read_values: the run's values, through the class's read_range hook (or
  // its host memory). Not a mutation: the version is unchanged.
  std::vector<Value> read_values(std::int64_t first, std::int64_t count) const;
  // write_values: writes values[k] to slot first + k as ONE versioned
  // mutation (version + 1). Failure-atomic: when the class's write_range hook
  // fails part way, the slots it had written are written back from a
  // before-image taken first, the version is unchanged, and the hook's error
  // propagates (a write into host memory cannot fail and takes no image).
  void write_values(std::int64_t first, std::span<const Value> values);
  // copy_range: copies source's slots [source_first, source_first + count)
  // onto this carrier's [first, first + count) as ONE versioned mutation of
  // this carrier (the source's version is unchanged); failure-atomic as
  // write_values. Source and destination may be the same carrier, with
  // overlapping runs (the copy behaves as if the source run were read first).
  // Both in host memory: one memmove; otherwise the source's read_range into
  // a buffer, then the destination's write_range.
  void copy_range(const Carrier& source, std::int64_t source_first, std::int64_t first, std::int64_t count);
  // Bytes (docs/storage.md, "Bytes"): the bulk form of read_values and
  // write_values for tiers and staging buffers. A run's elements travel in
  // the dtype's host representation (float, std::int32_t, bool; native byte
  // order), element_bytes() each, so no Value is built per element. The run
  // is [first, first + span size / element_bytes()). Checks, in read_values'
  // / write_values' order, all before anything is read or written, plus
  // ValueError when the span's size is not a multiple of element_bytes()
  // and, for write_bytes into a Bool carrier, a byte other than 0 or 1.
  // read_bytes is not a mutation; write_bytes is ONE versioned mutation,
  // failure-atomic as write_values. A class moves the bytes through its
  // host memory, its byte range hooks (FileBacked: memcpy per residency
  // window) or, offering neither, its Value range hooks.
  std::size_t element_bytes() const noexcept;
  void read_bytes(std::int64_t first, std::span<std::byte> out) const;
  void write_bytes(std::int64_t first, std::span<const std::byte> data);

  // Carrier scatter (core-concepts.md 1.7; distinct from the scatter
  // operation): writes to_scatter's value i, in logical order, to slot
  // scatter_onto.offset() + mapping_offset + mapping(i) of this carrier, as
  // ONE versioned mutation (version + 1, through write_slots). Checked before
  // anything is written, in this order: NotImplementedError for a class
  // without carrier scatter (FileBacked); RuntimeError unless live and
  // publicly mutable; ValueError when scatter_onto is not backed by this
  // carrier, when mapping's shape differs from to_scatter's, or when
  // mapping_offset < 0; TypeError when to_scatter's dtype is not this
  // carrier's; IndexError for a destination outside [0, size()).
  void scatter(const Tensor& to_scatter, const Tensor& scatter_onto, const Layout& mapping,
               std::int64_t mapping_offset = 0);

  // A versioned mutation made through a carrier's own typed access (a
  // kernel writing a caller-provided output): version + 1. RuntimeError
  // unless live and publicly mutable.
  void bump_version();

  // Throws RuntimeError naming `what` if released.
  void require_live(const char* what) const;
  // Throws RuntimeError naming `what` unless publicly mutable and live.
  void require_writable(const char* what) const;

  // Whether this instance, while empty (size() == 0), can establish storage
  // of a requested size: what move() does with an empty destination
  // (core-concepts 7.1; FileBacked can, CPU cannot).
  bool allocates_when_empty() const noexcept { return supports_allocation(); }

  // Whether this carrier may be a tier of an Evictable composite. True
  // unless its class refuses the role: BlockDeviceCarrier answers false
  // (core-concepts.md 8.5), and Evictable's construction will check it.
  virtual bool can_be_evictable_tier() const noexcept { return true; }

 protected:
  // Subclass constructors validate `dtype` with check_storage_dtype first.
  Carrier(const SimpleDType& dtype, bool mutable_) noexcept : dtype_(&dtype), intrinsic_mutable_(mutable_) {}
  // The constructor of a run-time class's host (a Python subclass's C++
  // trampoline): the instance answers `runtime_class` as its exact class.
  // TypeError unless `runtime_class` was minted by
  // CarrierClass::define_runtime_class for a non-dependent host.
  Carrier(const SimpleDType& dtype, bool mutable_, CarrierClass runtime_class);
  // Either of the two above: a run-time class when given, else the exact
  // C++ type (for bases that serve both, extension::DefinedCarrier).
  Carrier(const SimpleDType& dtype, bool mutable_, const std::optional<CarrierClass>& runtime_class);
  // core-concepts.md 1.2: non-simple or unsupported -> ValueError naming the
  // class; a non-DType is impossible in C++.
  static const SimpleDType& check_storage_dtype(const DType& dtype, const char* class_name,
                                                bool (*supports)(const DType&) noexcept);

  // Storage hooks: called only after the base validated liveness, range,
  // mutability and the Value's kind.
  virtual std::int64_t storage_size() const noexcept = 0;
  virtual Value read_slot(std::int64_t index) const = 0;
  virtual void write_slot(std::int64_t index, const Value& value) = 0;
  // May throw (a definition-backed class's provider): release() then
  // leaves the carrier live and rethrows.
  virtual void release_storage() = 0;
  virtual std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                             bool empty) const = 0;

  // Range hooks (docs/storage.md, "Ranges"), called only after the base
  // validated liveness, the run's bounds, mutability and every value's kind
  // (count >= 1). The defaults go slot by slot through read_slot /
  // write_slot, so a class that offers nothing more keeps working; a class
  // overrides them when it can move a run at once (Generic copies Values,
  // FileBacked copies window by window, a definition-backed class asks its
  // StorageProvider's range callbacks). write_range may fail part way: the
  // framework restores the run from its before-image.
  virtual void read_range(std::int64_t first, std::int64_t count, Value* out) const;
  virtual void write_range(std::int64_t first, std::span<const Value> values);
  // Byte range hooks: the run [first, first + count) in the dtype's host
  // representation (read_bytes above), for a class that can move it without
  // building Values; same preconditions as read_range / write_range. They
  // answer false when the class offers none (the defaults): the framework
  // then converts through read_range / write_range. write_range_bytes may
  // fail part way, as write_range.
  virtual bool read_range_bytes(std::int64_t /*first*/, std::int64_t /*count*/, std::byte* /*out*/) const {
    return false;
  }
  virtual bool write_range_bytes(std::int64_t /*first*/, std::int64_t /*count*/, const std::byte* /*data*/) {
    return false;
  }
  // The class's host memory, when its storage is one contiguous block of
  // host memory in the dtype's host representation (CPU; a definition-backed
  // class whose StorageProvider offers host_data); a null HostSpan
  // otherwise (the default). Called only on a live carrier. The framework
  // then reads and writes runs with memcpy and skips the hooks above.
  virtual HostSpan host_storage() const noexcept { return {}; }

  // False for a class that does not implement carrier scatter: scatter()
  // then raises NotImplementedError naming the class, before any check.
  virtual bool implements_carrier_scatter() const noexcept { return true; }

  // Movement (core-concepts.md 7.1, "an empty allocatable destination is
  // sized to layout.cosize"): a class whose empty instances (size() == 0)
  // can establish storage answers true, allocate_empty_storage(slots) gives the
  // live, empty, mutable instance exactly `slots` slots (zero; version
  // unchanged; on failure nothing changed), and discard_allocation() takes
  // it back to empty (a failed move's rollback). Default: no allocation.
  virtual bool supports_allocation() const noexcept { return false; }
  virtual void allocate_empty_storage(std::int64_t slots);
  virtual void discard_allocation() noexcept {}

  // Whether size() answers 0 once the carrier is released, instead of the
  // RuntimeError of every other access (carrier-storage: "carrier-specific
  // size queries MAY report zero after release"; Evictable does,
  // carrier-composition A13). Default false.
  virtual bool released_size_is_zero() const noexcept { return false; }

  // The dispatch hook (carrier-extension R13.1; upstream carrier-dispatch):
  // a definition-free class without kernels of the library's own (a custom
  // class in C++ or Python) supplies its computation here, as a fresh
  // Operation whose _forward computes the call (autograd.h,
  // Operation::_forward). It is asked by dispatch_op and by every ordinary
  // call (typed, by name, by definition) on this class, after the
  // capability gate. The default raises NotImplementedError naming the
  // operation (a storage-only class keeps it).
  virtual std::shared_ptr<Operation> _dispatch_op(std::string_view operation_name) const;



 private:
  friend class DependentCarrier;
  friend struct detail::MoveAccess;
  friend struct detail::ProviderWrites;
  friend struct detail::RangeAccess;
  friend struct detail::Ownership;
  struct DependentTag {};
  // DependentCarrier's constructors: the only way to mark an instance
  // dependent, so a subclass cannot send the capability gate into a
  // DependentCarrier cast.
  Carrier(const SimpleDType& dtype, bool mutable_, DependentTag) noexcept
      : dtype_(&dtype), intrinsic_mutable_(mutable_), dependent_instance_(true) {}
  Carrier(const SimpleDType& dtype, bool mutable_, DependentTag, CarrierClass runtime_class);
  Carrier(const SimpleDType& dtype, bool mutable_, DependentTag, const std::optional<CarrierClass>& runtime_class);

  static std::shared_ptr<Carrier> make_like_mapped(const Carrier& self, std::int64_t size, bool mutable_,
                                                   const SimpleDType& dtype, bool empty);

  const SimpleDType* dtype_;
  bool intrinsic_mutable_;
  // The DependentCarrier that claimed this carrier, or null
  // (dependent_carrier.h; it relinquishes its claims before it is destroyed).
  std::atomic<const Carrier*> owner_{nullptr};
  std::atomic<bool> released_{false};
  std::atomic<std::uint64_t> version_{0};
  // The provider-write guard (src/storage/provider_writes.h): the number of
  // read-only watches in the low 32 bits, of mutation journals in the high
  // 32 bits (zero: no guard, the one load a public write pays); and the
  // number of public writes refused so far.
  std::atomic<std::uint64_t> provider_guard_{0};
  std::atomic<std::uint64_t> refused_writes_{0};
  bool dependent_instance_ = false;
  // A run-time class's identity, or null (the exact C++ type's identity).
  const detail::CarrierClassRecord* runtime_class_ = nullptr;
  // The identity last resolved, and the type it was resolved for.
  mutable std::atomic<const detail::CarrierClassRecord*> class_record_{nullptr};
  mutable std::atomic<const std::type_info*> class_type_{nullptr};
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
