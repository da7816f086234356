// move and move_async: the ordered checks, routing (definition-free registry
// or a definition-backed TransferRoute), the transaction (before-image,
// copy, validation, commit or rollback) and the autograd node (move.h;
// docs/storage.md, "Movement").
//
// Placed in the autograd layer: it records a graph node, and it reaches the
// definition-backed TransferRoutes (extension) and the definition-free
// registry (movement), both below it.
#include <strideweave/autograd.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>
#include <strideweave/move.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "autograd/graph.h"
#include "extension/registry.h"
#include "movement/host_image.h"
#include "movement/move_access.h"
#include "storage/ownership.h"
#include "storage/ranges.h"
#include "storage/tensor_impl.h"

namespace strideweave {

namespace extension {
// TransferRequest is framework-created (carrier-extension.md R5.1).
struct TransferRequestAccess {
  static TransferRequest make(const Tensor& tensor, const std::shared_ptr<Carrier>& destination) {
    return TransferRequest(tensor, destination);
  }
};
}  // namespace extension

namespace {

using detail::MoveAccess;
using strideweave::detail::TensorAccess;

bool definition_backed(const CarrierClass& cls) noexcept { return cls.traits().storage_provider; }

// Whether a definition-backed side permits the elementwise fallback (a
// definition-free side always does).
bool permits_fallback(const CarrierClass& cls) {
  if (!definition_backed(cls)) return true;
  const auto definition = extension::carrier_definition(cls);
  return definition && definition->storage().elementwise_fallback();
}

// What performs the transfer of one move.
struct Route {
  std::shared_ptr<const MoveOperation> operation;    // definition-free, or the elementwise fallback
  const extension::TransferRoute* transfer = nullptr;  // definition-backed (outlives the move: registry records)
  std::string describe() const {
    return transfer ? fmt::format("TransferRoute '{}'", transfer->route_id()) : operation->name();
  }
};

std::int64_t element_bytes(const SimpleDType& dtype) {
  return &dtype == &DType::Bool() ? 1 : 4;
}

class Transaction final : public detail::MoveTransaction<Tensor> {
 public:
  Transaction(Tensor tensor, std::shared_ptr<Carrier> destination, bool record)
      : tensor_(std::move(tensor)),
        destination_(std::move(destination)),
        record_(record),
        acting_owner_(detail::Ownership::acting_owner()) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // Runs until the route has submitted its transfer (move_async's part).
  // Throws after rolling back when anything fails before that.
  void start(const Route& route, const MoveOptions& options) {
    Carrier& destination = *destination_;
    const std::int64_t span = tensor_.layout().cosize();
    // Check 10 (the last): size, or allocation of an empty allocatable carrier.
    if (destination.size() < span) {
      if (!(destination.size() == 0 && MoveAccess::supports_allocation(destination)))
        throw ValueError(fmt::format(
            "move: the destination {} carrier holds {} slots but the layout needs cosize {} (and it is not an "
            "empty carrier that can allocate)",
            destination.class_name(), destination.size(), span));
    }
    context_.emplace(span, element_bytes(tensor_.dtype()), options);
    const bool allocate = destination.size() == 0 && span > 0;
    Route chosen = route;
    // A TransferRoute prepares before anything changes (R5.2).
    std::optional<extension::PreparedTransfer> prepared;
    if (chosen.transfer) {
      auto answer = chosen.transfer->provider().prepare()(extension::TransferRequestAccess::make(tensor_, destination_));
      if (auto* p = std::get_if<extension::PreparedTransfer>(&answer)) {
        prepared.emplace(std::move(*p));
      } else {
        const auto& unsupported = std::get<extension::Unsupported>(answer);
        if (!(permits_fallback(tensor_.carrier_type()) && permits_fallback(destination.exact_class())))
          throw NotImplementedError(fmt::format(
              "move: ({}, {}): TransferRoute '{}' is unsupported here ({}) and the definitions do not both permit "
              "the elementwise fallback",
              tensor_.carrier()->class_name(), destination.class_name(), chosen.transfer->route_id(),
              unsupported.reason()));
        chosen = Route{ElementwiseMoveOperation::instance(), nullptr};
      }
    }
    versions_ = {tensor_.carrier()->version(), destination.version()};
    if (allocate) {
      MoveAccess::allocate(destination, span);
      allocated_ = true;
    }
    try {
      output_.emplace(destination_, 0, tensor_.layout());
      // The framework's own route between two host-memory carriers: one
      // memcpy per run and window, with the before-image captured block by
      // block just ahead of the copy (movement/host_image.h).
      if (chosen.operation == ElementwiseMoveOperation::instance()) {
        const HostSpan from = detail::RangeAccess::host(*tensor_.carrier());
        const HostSpan to = detail::RangeAccess::host(destination);
        if (from && to && span > 0) {
          std::shared_ptr<detail::HostImage> image;
          if (!allocated_) {
            image = std::make_shared<detail::HostImage>(destination);
            restore_ = [image] { image->restore(); };
          }
          detail::copy_host_runs(tensor_, from, to, 0, *context_, image.get());
          return;
        }
      }
      if (!allocated_ && span > 0) {
        const MoveOperation& saver = chosen.operation ? *chosen.operation : *ElementwiseMoveOperation::instance();
        restore_ = MoveAccess::save(saver, destination, span, *context_);
      }
      MoveSubmission submission =
          chosen.transfer ? MoveSubmission(prepared->submit()())
                          : MoveAccess::copy(*chosen.operation, tensor_, destination, *output_, span, *context_);
      if (auto* pending = std::get_if<extension::ProviderCompletion<void>>(&submission)) pending_.emplace(*pending);
    } catch (...) {
      rollback();
      throw;
    }
  }

  bool transfer_done() const noexcept override { return !pending_ || pending_->done(); }

  Tensor finish() override {
    // An owner's move of its own children commits with the owner's access,
    // on whichever thread finishes it (dependent_carrier.h).
    const detail::ActingOwnerScope as_started(acting_owner_);
    Carrier& source = *tensor_.carrier();
    Carrier& destination = *destination_;
    try {
      if (pending_) pending_->wait();
      const std::int64_t span = tensor_.layout().cosize();
      context_->advance(span - context_->slots_done());  // a route that reported nothing reports at the end
      if (source.is_released() || destination.is_released())
        throw RuntimeError(fmt::format("move: the {} carrier was released while the move was in flight",
                                       source.is_released() ? source.class_name() : destination.class_name()));
      if (source.version() != versions_.first)
        throw RuntimeError("move: the source carrier was written while the move was in flight");
      if (destination.size() < span)
        throw RuntimeError(fmt::format("move: the destination {} carrier no longer holds {} slots",
                                       destination.class_name(), span));
      if (record_) {
        // interop-movement: the move is the result's node, its source the
        // one input (the decision was taken when the move started).
        const KernelOperand operands[] = {tensor_};
        const Tensor* inputs[] = {&tensor_};
        const GradModeGuard decided_at_start(true);
        autograd::OperationAccess::record_kernel("move", std::nullopt, Attributes{}, operands, *output_, inputs,
                                                 std::nullopt, nullptr);
      }
      source.release();  // may throw (a provider's release): nothing committed yet
    } catch (...) {
      rollback();
      throw;
    }
    MoveAccess::commit_version(destination);
    return *output_;
  }

 private:
  // Puts the destination back; the source was never changed. A restore that
  // itself fails cannot be reported over the original error (documented).
  void rollback() noexcept {
    try {
      if (restore_) restore_();
    } catch (...) {
    }
    if (allocated_) MoveAccess::discard_allocation(*destination_);
    restore_ = nullptr;
    allocated_ = false;
  }

  Tensor tensor_;
  std::shared_ptr<Carrier> destination_;
  bool record_;
  const Carrier* acting_owner_;  // the owner access the move was started under (or null)
  std::optional<MoveContext> context_;
  std::optional<Tensor> output_;
  std::pair<std::uint64_t, std::uint64_t> versions_{0, 0};
  bool allocated_ = false;
  MoveRestore restore_;
  std::optional<extension::ProviderCompletion<void>> pending_;
};

// The one move dispatcher: the route of exactly (from, to), or
// NotImplementedError for a definition-backed pair that has none.
//   1. either class definition-backed: the source definition's
//      TransferRoute for exactly the destination class (R2.3: a definition's
//      routes start at its class); else the elementwise fallback when every
//      definition-backed side permits it;
//   2. otherwise the definition-free registry (dispatch_move): the
//      registered MoveOperation, else ElementwiseMoveOperation.
// The elementwise fallback copies through host memory when both carriers
// have it, else through the classes' range access (move_operation.h).
Route route_for_pair(const CarrierClass& from, const CarrierClass& to) {
  if (definition_backed(from) || definition_backed(to)) {
    if (const extension::TransferRoute* route = extension::detail::transfer_route_for(from, to))
      return Route{nullptr, route};
    if (permits_fallback(from) && permits_fallback(to)) return Route{ElementwiseMoveOperation::instance(), nullptr};
    throw NotImplementedError(fmt::format(
        "move: ({}, {}) has no TransferRoute and the definitions do not both permit the elementwise fallback",
        from.name(), to.name()));
  }
  return Route{dispatch_move(from, to), nullptr};
}

// Checks 1-9 of move.h, in order, and the route.
Route checked_route(const Tensor& tensor, const std::shared_ptr<Carrier>& destination) {
  const Carrier& source = *tensor.carrier();
  if (source.is_released())
    throw RuntimeError(fmt::format("move: the tensor's {} carrier is released", source.class_name()));
  if (source.is_owned() && !detail::Ownership::acting_owner_owns(source))
    throw RuntimeError(fmt::format(
        "move: the tensor's {} carrier is owned by another carrier and cannot be moved directly", source.class_name()));
  if (!destination) throw TypeError("move: destination must be a Carrier instance (got null)");
  if (destination.get() == &source)
    throw ValueError(fmt::format("move: destination must not be the tensor's own {} carrier", source.class_name()));
  if (destination->is_released())
    throw RuntimeError(fmt::format("move: the destination {} carrier is released", destination->class_name()));
  if (!detail::Ownership::writable_here(*destination))
    throw RuntimeError(fmt::format("move: the destination {} carrier is not publicly mutable{}",
                                   destination->class_name(), destination->is_owned() ? " (owned by a composite)" : ""));
  if (&destination->dtype() != &source.dtype())
    throw TypeError(fmt::format("move: the destination's dtype {} is not the tensor's dtype {}",
                                destination->dtype().name(), source.dtype().name()));
  const CarrierClass from = source.exact_class(), to = destination->exact_class();
  Route route = route_for_pair(from, to);
  if (!route.operation) return route;
  if (auto pinned = route.operation->source_class(); pinned && !(*pinned == from))
    throw TypeError(fmt::format("move: {} requires a {} source, got {}", route.operation->name(), pinned->name(),
                                from.name()));
  if (auto pinned = route.operation->destination_class(); pinned && !(*pinned == to))
    throw TypeError(fmt::format("move: {} requires a {} destination, got {}", route.operation->name(),
                                pinned->name(), to.name()));
  return route;
}

// The settled outcome of a move whose transfer already finished.
class Settled final : public detail::MoveTransaction<Tensor> {
 public:
  explicit Settled(Tensor result) : result_(std::move(result)) {}
  bool transfer_done() const noexcept override { return true; }
  Tensor finish() override { return result_; }

 private:
  Tensor result_;
};

// ---- the node's backward (interop-movement, "Move participates in autograd")

std::vector<std::optional<Tensor>> move_vjp(const autograd::VjpContext& c, const Tensor& g) {
  const Tensor& source = c.tensor(0);
  if (g.carrier()->is_released())
    throw RuntimeError("move.backward: the cotangent's carrier is released");
  if (!g.layout().is_injective())
    throw ValueError("move.backward: an injective gradient layout is required (the cotangent's layout maps two "
                     "coordinates to one slot)");
  const std::vector<Value> values = g.values();
  const Layout& layout = source.layout();
  if (layout.is_injective()) {
    std::vector<Value> slots(static_cast<std::size_t>(layout.cosize()), *storage_zero(DType::Float32()));
    for (std::int64_t k = 0; k < source.size(); ++k) slots[static_cast<std::size_t>(layout(k))] = values[static_cast<std::size_t>(k)];
    return {Tensor(source.carrier()->new_like(slots, true, &DType::Float32()), 0, layout)};
  }
  return {Tensor(source.carrier()->new_like(values, true, &DType::Float32()), source.shape())};
}

}  // namespace

namespace autograd {
void add_move_vjps(VjpTable& table) { table["move"] = move_vjp; }
}  // namespace autograd

const char* to_string(MoveRouteKind kind) noexcept {
  switch (kind) {
    case MoveRouteKind::TransferRoute: return "transfer_route";
    case MoveRouteKind::MoveOperation: return "move_operation";
    case MoveRouteKind::ElementwiseFallback: return "elementwise_fallback";
  }
  return "?";
}

const char* to_string(MoveCopyPath path) noexcept {
  switch (path) {
    case MoveCopyPath::Route: return "route";
    case MoveCopyPath::HostMemory: return "host_memory";
    case MoveCopyPath::Ranges: return "ranges";
  }
  return "?";
}

MoveRouteInfo describe_move_route(const Carrier& source, const Carrier& destination) {
  const CarrierClass from = source.exact_class(), to = destination.exact_class();
  const Route route = route_for_pair(from, to);
  MoveRouteInfo info;
  if (route.transfer) {
    info.kind = MoveRouteKind::TransferRoute;
    info.name = route.transfer->route_id();
    info.copy = MoveCopyPath::Route;
    return info;
  }
  info.name = route.operation->name();
  if (route.operation != ElementwiseMoveOperation::instance()) {
    info.kind = MoveRouteKind::MoveOperation;
    info.copy = MoveCopyPath::Route;
    return info;
  }
  info.kind = MoveRouteKind::ElementwiseFallback;
  info.copy = detail::RangeAccess::host(source) && detail::RangeAccess::host(destination) ? MoveCopyPath::HostMemory
                                                                                         : MoveCopyPath::Ranges;
  return info;
}

AwaitMove<Tensor> move_async(const Tensor& tensor, const std::shared_ptr<Carrier>& destination,
                             const MoveOptions& options) {
  const Route route = checked_route(tensor, destination);
  const bool record = is_grad_enabled() && tensor.is_differentiable();
  auto transaction = std::make_shared<Transaction>(tensor, destination, record);
  transaction->start(route, options);
  if (!transaction->transfer_done()) return AwaitMove<Tensor>(transaction);
  // A transfer that finished synchronously commits now (its errors are
  // move_async's own), so the source is never left unreleased.
  return AwaitMove<Tensor>(std::make_shared<Settled>(transaction->finish()));
}

Tensor move(const Tensor& tensor, const std::shared_ptr<Carrier>& destination, const MoveOptions& options) {
  return move_async(tensor, destination, options).wait();
}

}  // namespace strideweave
