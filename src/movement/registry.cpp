// The definition-free move registry, MoveContext and the elementwise
// fallback (move_operation.h; docs/storage.md, "Movement").
#include <strideweave/errors.h>
#include <strideweave/move_operation.h>

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bootstrap.h"
#include "movement/host_image.h"
#include "movement/host_memory.h"
#include "storage/ranges.h"
#include "movement/move_access.h"

namespace strideweave {
namespace {

struct PairKey {
  CarrierClass source;
  CarrierClass destination;
  friend bool operator==(const PairKey&, const PairKey&) = default;
};
struct PairHash {
  std::size_t operator()(const PairKey& k) const noexcept { return k.source.hash() * 31 + k.destination.hash(); }
};

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<PairKey, std::shared_ptr<const MoveOperation>, PairHash> entries;
};
Registry& registry() {
  static Registry* r = new Registry();  // lives for the process (used during exit)
  return *r;
}

// The bootstrap registers the built-in pairs (each carrier's folder); a call
// made by the bootstrap itself does not wait for it.
void bootstrap() {
  if (!detail::bootstrapping()) detail::ensure_bootstrapped();
}

void require_carrier_class(const CarrierClass& cls, const char* who, const char* what) {
  if (!cls.traits().derives_carrier)
    throw TypeError(fmt::format("{}: {} must be a Carrier class, got {}", who, what, cls.name()));
  if (cls.traits().is_root)
    throw TypeError(fmt::format("{}: {} must be a Carrier subclass, not the Carrier root", who, what));
}

void refuse_definition_backed(const CarrierClass& source, const CarrierClass& destination, const char* who) {
  for (const CarrierClass* cls : {&source, &destination})
    if (cls->traits().storage_provider)
      throw RuntimeError(fmt::format(
          "{}: ({}, {}) names the definition-backed class {}; definition-backed classes move through their "
          "CarrierDefinition's TransferRoutes, not the move registry",
          who, source.name(), destination.name(), cls->name()));
}

std::string demangled(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- MoveContext

MoveContext::MoveContext(std::int64_t element_count, std::int64_t element_bytes, const MoveOptions& options)
    : element_count_(element_count),
      element_bytes_(element_bytes),
      window_elements_(std::max<std::int64_t>(1, options.window_bytes / std::max<std::int64_t>(1, element_bytes))),
      reports_(static_cast<bool>(options.progress) &&
               element_count * element_bytes >= options.progress_threshold_bytes),
      progress_(options.progress) {
  if (options.window_bytes < 1)
    throw ValueError(fmt::format("move: window_bytes must be at least 1, got {}", options.window_bytes));
  if (options.progress_threshold_bytes < 0)
    throw ValueError(
        fmt::format("move: progress_threshold_bytes must be non-negative, got {}", options.progress_threshold_bytes));
}

void MoveContext::advance(std::int64_t slots) {
  if (slots <= 0) return;
  if (!reports_) {
    done_.fetch_add(slots);
    return;
  }
  std::lock_guard lock(progress_mutex_);
  const std::int64_t now = std::min(element_count_, done_.fetch_add(slots) + slots);
  progress_(MoveProgress{now * element_bytes_, element_count_ * element_bytes_});
}

Value MoveContext::read(const Carrier& carrier, std::int64_t index) {
  if (index < 0 || index >= carrier.size())
    throw IndexError(fmt::format("move: slot {} outside [0, {}) of the {} carrier", index, carrier.size(),
                                 carrier.class_name()));
  return detail::MoveAccess::read(carrier, index);
}

void MoveContext::write(Carrier& carrier, std::int64_t index, const Value& value) {
  if (index < 0 || index >= carrier.size())
    throw IndexError(fmt::format("move: slot {} outside [0, {}) of the {} carrier", index, carrier.size(),
                                 carrier.class_name()));
  detail::MoveAccess::write(carrier, index, value);
}

// ---------------------------------------------------------------- operations

std::string MoveOperation::name() const { return demangled(typeid(*this)); }

namespace {
// The run [first, first + count) must lie in the carrier (MoveContext's
// IndexError, for the run's first slot outside it).
void require_run(const Carrier& carrier, std::int64_t first, std::int64_t count) {
  const std::int64_t size = carrier.size();
  if (first < 0 || first > size || count > size - first)
    throw IndexError(fmt::format("move: slot {} outside [0, {}) of the {} carrier", std::max(first, size), size,
                                 carrier.class_name()));
}
}  // namespace

// The before-image: a sparse byte image of host memory (host_image.h), else
// one byte-range read (restored with one byte-range write, or through the
// Value hooks for a class without byte hooks; storage/ranges.h).
MoveRestore MoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                             MoveContext& context) const {
  require_run(destination, 0, element_count);
  if (const HostSpan host = detail::RangeAccess::host(destination)) {
    auto image = std::make_shared<detail::HostImage>(destination);
    image->capture(static_cast<std::byte*>(host.data), 0,
                   static_cast<std::size_t>(element_count) * detail::host_element_bytes(*host.dtype));
    (void)context;
    return [image] { image->restore(); };
  }
  const SimpleDType& dtype = destination.dtype();
  std::vector<std::byte> before(static_cast<std::size_t>(element_count) * detail::host_element_bytes(dtype));
  detail::RangeAccess::read_bytes(destination, 0, element_count, before.data(), "move");
  return [&destination, element_count, image = std::move(before)] {
    require_run(destination, 0, element_count);
    detail::RangeAccess::write_bytes(destination, 0, element_count, image.data());
  };
}

const std::shared_ptr<const ElementwiseMoveOperation>& ElementwiseMoveOperation::instance() {
  static const auto* one = new std::shared_ptr<const ElementwiseMoveOperation>(
      std::make_shared<const ElementwiseMoveOperation>());
  return *one;
}

namespace {
// Walks the tensor's logical runs (storage/ranges.h) cut into pieces at the
// progress windows' logical boundaries: copy(source slot, destination slot,
// count) per piece, then the progress report (logical values scaled to the
// physical span) after each completed window.
template <class Copy>
void walk_pieces(const Tensor& tensor, std::int64_t out_offset, MoveContext& context, Copy&& copy) {
  const std::int64_t n = tensor.size(), offset = tensor.offset();
  const std::int64_t window = std::max<std::int64_t>(context.window_elements(), 1);
  detail::for_each_run(tensor.layout(), [&](std::int64_t ordinal, std::int64_t index, std::int64_t length) {
    for (std::int64_t done = 0; done < length;) {
      const std::int64_t at = ordinal + done;
      const std::int64_t piece = std::min(length - done, (at / window + 1) * window - at);
      copy(offset + index + done, out_offset + index + done, piece);
      done += piece;
      const std::int64_t stop = at + piece;
      if (stop % window != 0 && stop != n) continue;
      const std::int64_t target =
          stop == n ? context.element_count()
                    : std::min(context.element_count(),
                               static_cast<std::int64_t>(static_cast<long double>(stop) / static_cast<long double>(n) *
                                                         static_cast<long double>(context.element_count())));
      context.advance(target - context.slots_done());
    }
  });
}
}  // namespace

MoveSubmission ElementwiseMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor& output,
                                               std::int64_t, MoveContext& context) const {
  const Carrier& source = *tensor.carrier();
  const HostSpan from = detail::RangeAccess::host(source), to = detail::RangeAccess::host(destination);
  if (from && to) {
    require_run(source, tensor.offset(), tensor.layout().cosize());
    require_run(destination, output.offset(), tensor.layout().cosize());
    detail::copy_host_runs(tensor, from, to, output.offset(), context, nullptr);
    return std::monostate{};
  }
  // Host memory on one side: bytes, run by run, straight between the host
  // memory and the other class's byte hooks (a device's one bulk copy per
  // run), converted through its Value hooks only when it offers none.
  if (from || to) {
    const std::size_t element = detail::host_element_bytes(source.dtype());
    walk_pieces(tensor, output.offset(), context, [&](std::int64_t from_slot, std::int64_t to_slot, std::int64_t count) {
      require_run(source, from_slot, count);
      require_run(destination, to_slot, count);
      if (to) {
        detail::RangeAccess::read_bytes(source, from_slot, count,
                                        static_cast<std::byte*>(to.data) + static_cast<std::size_t>(to_slot) * element,
                                        "move");
        return;
      }
      detail::RangeAccess::write_bytes(
          destination, to_slot, count,
          static_cast<const std::byte*>(from.data) + static_cast<std::size_t>(from_slot) * element);
    });
    return std::monostate{};
  }
  // Run by run through each class's range access (the range hooks, whose
  // defaults go slot by slot).
  std::vector<Value> buffer;
  walk_pieces(tensor, output.offset(), context, [&](std::int64_t from_slot, std::int64_t to_slot, std::int64_t count) {
    require_run(source, from_slot, count);
    require_run(destination, to_slot, count);
    buffer.resize(static_cast<std::size_t>(count));
    detail::RangeAccess::read(source, from_slot, count, buffer.data());
    detail::RangeAccess::write(destination, to_slot, buffer);
  });
  return std::monostate{};
}

// ---------------------------------------------------------------- the registry

void register_move_operation(CarrierClass source_class, CarrierClass destination_class,
                             std::shared_ptr<const MoveOperation> operation) {
  constexpr const char* who = "register_move_operation";
  require_carrier_class(source_class, who, "source_class");
  require_carrier_class(destination_class, who, "destination_class");
  if (!operation) throw TypeError("register_move_operation: operation_class must be a MoveOperation (got null)");
  refuse_definition_backed(source_class, destination_class, who);
  bootstrap();
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  auto [it, inserted] = r.entries.try_emplace(PairKey{source_class, destination_class}, std::move(operation));
  if (!inserted)
    throw ValueError(fmt::format("register_move_operation: a move operation ({}) is already registered for ({}, {}); "
                                 "unregister it first",
                                 it->second->name(), source_class.name(), destination_class.name()));
}

std::shared_ptr<const MoveOperation> unregister_move_operation(CarrierClass source_class,
                                                               CarrierClass destination_class) {
  constexpr const char* who = "unregister_move_operation";
  require_carrier_class(source_class, who, "source_class");
  require_carrier_class(destination_class, who, "destination_class");
  refuse_definition_backed(source_class, destination_class, who);
  bootstrap();
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  auto it = r.entries.find(PairKey{source_class, destination_class});
  if (it == r.entries.end())
    throw KeyError(fmt::format("unregister_move_operation: no move operation is registered for ({}, {})",
                               source_class.name(), destination_class.name()));
  std::shared_ptr<const MoveOperation> removed = std::move(it->second);
  r.entries.erase(it);
  return removed;
}

std::shared_ptr<const MoveOperation> registered_move_operation_for(CarrierClass source_class,
                                                                   CarrierClass destination_class) {
  refuse_definition_backed(source_class, destination_class, "registered_move_operation_for");
  bootstrap();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.entries.find(PairKey{source_class, destination_class});
  return it == r.entries.end() ? nullptr : it->second;
}

std::shared_ptr<const MoveOperation> dispatch_move(CarrierClass source_class, CarrierClass destination_class) {
  // carrier-extension R5.6: the legacy registry names no definition-backed
  // class, for lookups as for registration.
  refuse_definition_backed(source_class, destination_class, "dispatch_move");
  if (auto op = registered_move_operation_for(source_class, destination_class)) return op;
  return ElementwiseMoveOperation::instance();
}

ScopedMoveOperation::ScopedMoveOperation(CarrierClass source_class, CarrierClass destination_class,
                                         std::shared_ptr<const MoveOperation> operation)
    : source_(source_class), destination_(destination_class), operation_(operation) {
  register_move_operation(source_class, destination_class, std::move(operation));
}

ScopedMoveOperation::~ScopedMoveOperation() {
  try {
    unregister_move_operation(source_, destination_);
  } catch (...) {  // already unregistered by the caller: nothing left to undo
  }
}

}  // namespace strideweave

// ---------------------------------------------------------------- host memory

namespace strideweave::detail {

void copy_host_runs(const Tensor& tensor, const HostSpan& source, const HostSpan& destination, std::int64_t out_offset,
                    MoveContext& context, HostImage* image) {
  const std::size_t bytes = host_element_bytes(*source.dtype);
  const auto* from = static_cast<const std::byte*>(source.data);
  auto* to = static_cast<std::byte*>(destination.data);
  walk_pieces(tensor, out_offset, context, [&](std::int64_t from_slot, std::int64_t to_slot, std::int64_t count) {
    const std::size_t length = static_cast<std::size_t>(count) * bytes;
    const std::size_t src = static_cast<std::size_t>(from_slot) * bytes, dst = static_cast<std::size_t>(to_slot) * bytes;
    // memmove: a CPU carrier wrapping a caller's pointer may overlap
    // another carrier's memory (as Carrier::copy_range allows).
    if (!image) {
      std::memmove(to + dst, from + src, length);
      return;
    }
    // Block by block: the image of a destination block, then its copy (the
    // block is in cache when it is overwritten).
    for (std::size_t o = 0; o < length; o += kImageBlockBytes) {
      const std::size_t n = std::min(kImageBlockBytes, length - o);
      image->capture(to, dst + o, n);
      std::memmove(to + dst + o, from + src + o, n);
    }
  });
}

namespace {
struct HostMemory {
  std::mutex mutex;
  std::optional<CarrierClass> cls;
  HostBytesFn bytes = nullptr;
};
HostMemory& host_memory() {
  static HostMemory* h = new HostMemory();
  return *h;
}
}  // namespace

void declare_host_memory_class(CarrierClass cls, HostBytesFn bytes) {
  HostMemory& h = host_memory();
  std::lock_guard lock(h.mutex);
  if (h.cls) throw RuntimeError(fmt::format("move: the host-memory class is already {}", h.cls->name()));
  h.cls = cls;
  h.bytes = bytes;
}

CarrierClass host_memory_class() {
  HostMemory& h = host_memory();
  std::lock_guard lock(h.mutex);
  if (!h.cls) throw RuntimeError("move: no host-memory carrier class has been declared (the CPU carrier declares it)");
  return *h.cls;
}

std::byte* host_memory_bytes(const Carrier& carrier) {
  HostMemory& h = host_memory();
  std::lock_guard lock(h.mutex);
  if (!h.cls || !(carrier.exact_class() == *h.cls))
    throw TypeError(fmt::format("move: a {} carrier is not host memory", carrier.class_name()));
  return h.bytes(carrier);
}

}  // namespace strideweave::detail
