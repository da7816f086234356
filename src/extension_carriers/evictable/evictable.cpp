// Evictable (carrier-composition Part A). See <strideweave/carriers/evictable.h>
// and docs/evictable.md. Public headers only (src/extension_carriers/).
#include <strideweave/call.h>
#include <strideweave/carriers/evictable.h>
#include <strideweave/errors.h>
#include <strideweave/move.h>
#include <strideweave/operation.h>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace strideweave {

namespace {

// The whole flat span of a tier: what a transition moves.
Tensor flat(const std::shared_ptr<Carrier>& tier, std::int64_t size) {
  return Tensor(tier, 0, Layout::compact(Shape::of({size})));
}

}  // namespace

// ---------------------------------------------------------------- construction

std::shared_ptr<Evictable> Evictable::create(const std::shared_ptr<Carrier>& primary,
                                             const std::shared_ptr<Carrier>& secondary) {
  if (!primary) throw TypeError("Evictable: primary must be a Carrier");
  if (!secondary) throw TypeError("Evictable: secondary must be a Carrier");
  for (const auto* tier : {&primary, &secondary})
    if (!(*tier)->can_be_evictable_tier())
      throw TypeError(fmt::format("Evictable: a {} cannot be a tier of an Evictable", (*tier)->class_name()));
  if (primary == secondary) throw ValueError("Evictable: primary and secondary must be distinct carriers");
  if (primary->is_released()) throw RuntimeError("Evictable: the primary carrier is released");
  if (secondary->is_released()) throw RuntimeError("Evictable: the secondary carrier is released");
  if (primary->is_owned()) throw RuntimeError("Evictable: the primary carrier is already owned by a composite");
  if (secondary->is_owned()) throw RuntimeError("Evictable: the secondary carrier is already owned by a composite");
  if (&primary->dtype() != &secondary->dtype())
    throw TypeError(fmt::format("Evictable: the tiers' dtypes differ ({} and {})", primary->dtype().name(),
                                secondary->dtype().name()));
  if (!secondary->is_mutable()) throw RuntimeError("Evictable: the secondary carrier must be mutable");
  return create_with(primary, secondary, primary->is_mutable());
}

std::shared_ptr<Evictable> Evictable::create_with(const std::shared_ptr<Carrier>& primary,
                                                  const std::shared_ptr<Carrier>& secondary, bool mutable_) {
  if (primary->size() <= 0) throw ValueError("Evictable: the primary carrier must hold at least one slot");
  // Both directions must have a move (NotImplementedError otherwise). They
  // are resolved again at each transition, so a later registration counts.
  (void)describe_move_route(*primary, *secondary);
  (void)describe_move_route(*secondary, *primary);
  return std::make_shared<Evictable>(Token{}, primary, secondary, mutable_);
}

Evictable::Evictable(Token, const std::shared_ptr<Carrier>& primary, const std::shared_ptr<Carrier>& secondary,
                     bool mutable_)
    : DependentCarrier(primary->dtype(), mutable_),
      primary_(primary),
      secondary_(secondary),
      size_(primary->size()),
      placement_(primary->placement()) {
  // All or nothing; a failure below (the snapshot) gives both back: the
  // base's destructor relinquishes every claim of a constructor that threw.
  const std::shared_ptr<Carrier> tiers[] = {primary_, secondary_};
  claim(tiers);
  finalize_operation_capabilities();
}

// ---------------------------------------------------------------- pins and transitions

Evictable::Pin::Pin(const Evictable& hierarchy, const char* what) : hierarchy_(hierarchy) {
  const std::lock_guard lock(hierarchy.mutex_);
  hierarchy.require_live(what);
  if (hierarchy.transitioning_)
    throw RuntimeError(fmt::format("{}: the Evictable carrier is being evicted, promoted or released on another "
                                   "thread",
                                   what));
  if (hierarchy.evicted_)
    throw RuntimeError(fmt::format("{}: the Evictable carrier is evicted; call promote() first", what));
  primary_ = hierarchy.primary_;
  secondary_ = hierarchy.secondary_;
  ++hierarchy.users_;
}

Evictable::Pin::~Pin() {
  const std::lock_guard lock(hierarchy_.mutex_);
  if (--hierarchy_.users_ == 0) hierarchy_.idle_.notify_all();
}

bool Evictable::begin_transition(std::unique_lock<std::mutex>& lock, bool done_when_evicted, const char* what) {
  idle_.wait(lock, [&] { return !transitioning_ && users_ == 0; });
  require_live(what);
  if (evicted_ == done_when_evicted) return false;
  transitioning_ = true;
  return true;
}

void Evictable::end_transition(std::unique_lock<std::mutex>& lock) noexcept {
  if (!lock.owns_lock()) lock.lock();
  transitioning_ = false;
  idle_.notify_all();
}

// ---------------------------------------------------------------- queries

std::shared_ptr<Carrier> Evictable::primary() const {
  const std::lock_guard lock(mutex_);
  return primary_;
}

std::shared_ptr<Carrier> Evictable::secondary() const {
  const std::lock_guard lock(mutex_);
  return secondary_;
}

bool Evictable::is_evicted() const {
  const std::lock_guard lock(mutex_);
  return evicted_;
}

// Structural: the tiers' classes answer whatever their residency or release
// (a transition replaces a tier with one of the same exact class).
bool Evictable::supports_storage_dtype(const DType& dtype) const noexcept {
  std::shared_ptr<Carrier> primary, secondary;
  {
    const std::lock_guard lock(mutex_);
    primary = primary_;
    secondary = secondary_;
  }
  return primary->supports_storage_dtype(dtype) && secondary->supports_storage_dtype(dtype);
}

// Called once, by the constructor (before anyone else can see the object).
std::vector<OperationCapability> Evictable::_generate_operation_capabilities() const {
  std::vector<OperationCapability> out;
  for (OperationCapability& c : primary_->operation_capabilities())
    if (primary_->supports_storage_dtype(c.output()) && secondary_->supports_storage_dtype(c.output()))
      out.push_back(std::move(c));
  return out;
}

void Evictable::require_hierarchy_access(const char* what) const {
  if (is_owned() && !is_owner_acting_here())
    throw RuntimeError(fmt::format("{}: the Evictable carrier is owned by a composite and cannot be changed directly",
                                   what));
}

// ---------------------------------------------------------------- storage hooks

Value Evictable::read_slot(std::int64_t index) const {
  const Pin pin(*this, "Carrier.get_value");
  return pin.primary()->get_value(index);
}

void Evictable::write_slot(std::int64_t index, const Value& value) {
  const Pin pin(*this, "Carrier.set_value");
  const OwnerAccess access = owner_access();
  pin.primary()->set_value(index, value);
}

void Evictable::read_range(std::int64_t first, std::int64_t count, Value* out) const {
  const Pin pin(*this, "Carrier.read_values");
  const std::vector<Value> values = pin.primary()->read_values(first, count);
  std::copy(values.begin(), values.end(), out);
}

void Evictable::write_range(std::int64_t first, std::span<const Value> values) {
  const Pin pin(*this, "Carrier.write_values");
  const OwnerAccess access = owner_access();
  pin.primary()->write_values(first, values);
}

// The tier that does not hold the values goes first, so that a failure of
// the second leaves the hierarchy live with its values.
void Evictable::release_storage() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !transitioning_ && users_ == 0; });
  transitioning_ = true;
  const std::shared_ptr<Carrier> holder = evicted_ ? secondary_ : primary_;
  const std::shared_ptr<Carrier> other = evicted_ ? primary_ : secondary_;
  lock.unlock();
  try {
    const OwnerAccess access = owner_access();
    if (!other->is_released()) other->release();
    if (!holder->is_released()) holder->release();
  } catch (...) {
    end_transition(lock);
    throw;
  }
  end_transition(lock);
}

std::shared_ptr<Carrier> Evictable::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                              bool empty) const {
  std::shared_ptr<Carrier> primary_prototype, secondary_prototype;
  {
    const std::lock_guard lock(mutex_);
    primary_prototype = primary_;
    secondary_prototype = secondary_;
  }
  // (The base checked that both tiers support `dtype`: supports_storage_dtype.)
  // The fresh primary is intrinsically mutable, so that new_like can fill
  // it through owner access; the hierarchy's own mutability is `mutable_`.
  std::shared_ptr<Carrier> primary = primary_prototype->allocate_like(size, true, &dtype, empty);
  std::shared_ptr<Carrier> secondary = secondary_prototype->allocate_like(0, true, &dtype);
  return create_with(primary, secondary, mutable_);
}

// ---------------------------------------------------------------- transitions

void Evictable::dispose(const std::shared_ptr<Carrier>& tier) noexcept {
  try {
    const OwnerAccess access = owner_access();
    if (!tier->is_released()) tier->release();
  } catch (...) {  // best effort: the tier is given back whatever happened
  }
  try {
    relinquish(*tier);
  } catch (...) {
  }
}

std::shared_ptr<Carrier> Evictable::transfer(const std::shared_ptr<Carrier>& from,
                                             const std::shared_ptr<Carrier>& to_prototype, const char* what) {
  // The destination: the tier itself when it can hold every slot, else
  // fresh storage of its exact class (claimed now, disposed on failure).
  std::shared_ptr<Carrier> destination = to_prototype;
  const bool fresh = to_prototype->is_released() || to_prototype->size() < size_;
  if (fresh) {
    destination = to_prototype->allocate_like(size_, true, &dtype(), /*empty=*/true);
    claim(destination);
  }
  std::optional<Tensor> moved;
  try {
    (void)describe_move_route(*from, *destination);  // resolved at the start (NotImplementedError)
    const OwnerAccess access = owner_access();
    const NoGradGuard lowered;  // a transition records no node
    moved = move(flat(from, size_), destination);
  } catch (...) {
    if (fresh) dispose(destination);
    throw;
  }
  // The move committed (the source is released): the values are in
  // `destination`, which move() returns by contract.
  if (moved->carrier() != destination)
    throw RuntimeError(fmt::format("{}: the move committed into another carrier than its destination", what));
  return destination;
}

// evict() (to_evicted) and promote(): the values move from the tier that
// holds them into the other one (or fresh storage of its class, which then
// replaces it; the replaced tier is disposed after the state is committed).
void Evictable::transition(bool to_evicted, const char* what) {
  require_hierarchy_access(what);
  std::unique_lock lock(mutex_);
  if (!begin_transition(lock, /*done_when_evicted=*/to_evicted, what)) return;
  std::shared_ptr<Carrier>& target = to_evicted ? secondary_ : primary_;
  const std::shared_ptr<Carrier> from = to_evicted ? primary_ : secondary_, to = target;
  lock.unlock();
  std::shared_ptr<Carrier> destination;
  try {
    destination = transfer(from, to, what);
  } catch (...) {
    end_transition(lock);
    throw;
  }
  lock.lock();
  std::shared_ptr<Carrier> replaced;
  if (destination != target) replaced = std::exchange(target, destination);
  evicted_ = to_evicted;
  end_transition(lock);
  lock.unlock();
  if (replaced) dispose(replaced);
}

void Evictable::evict() { transition(true, "Evictable.evict"); }
void Evictable::promote() { transition(false, "Evictable.promote"); }

// ---------------------------------------------------------------- dispatch

std::shared_ptr<Operation> Evictable::_dispatch_op(std::string_view operation_name) const {
  std::shared_ptr<Carrier> primary;
  {
    const Pin pin(*this, "Evictable.dispatch_op");
    primary = pin.primary();
  }
  return std::make_shared<EvictableOperation>(primary->dispatch_op(operation_name));
}

void Evictable::adopt_values(const Tensor& result) {
  const Pin pin(*this, "EvictableOperation");
  const OwnerAccess access = owner_access();
  pin.primary()->copy_range(*result.carrier(), result.offset(), 0, size_);
}

EvictableOperation::EvictableOperation(std::shared_ptr<Operation> primary_operation)
    : primary_operation_(std::move(primary_operation)) {
  if (!primary_operation_) throw TypeError("EvictableOperation: primary_operation must be an Operation");
}

namespace {

const Evictable* as_evictable(const Tensor& t) { return dynamic_cast<const Evictable*>(t.carrier().get()); }

}  // namespace

void EvictableOperation::_forward(const DispatchedCall& call) {
  const std::string& op = call.operation;
  // Every tensor operand is an Evictable whose tiers have the first one's
  // exact classes, pinned promoted until the call returns; its lowered
  // form is the same view of its primary.
  std::vector<std::unique_ptr<Evictable::Pin>> pins;
  const auto lower = [&](const Tensor& t) -> Tensor {
    const Evictable* e = as_evictable(t);
    if (!e)
      throw TypeError(fmt::format("{}: an Evictable operation needs Evictable tensor operands, got one on {}", op,
                                  t.carrier()->class_name()));
    auto pin = std::make_unique<Evictable::Pin>(*e, op.c_str());
    if (!pins.empty()) {
      const Evictable::Pin& first = *pins.front();
      if (!(pin->primary()->exact_class() == first.primary()->exact_class()))
        throw TypeError(fmt::format("{}: the Evictable operands' primaries differ ({} and {})", op,
                                    first.primary()->class_name(), pin->primary()->class_name()));
      if (!(pin->secondary()->exact_class() == first.secondary()->exact_class()))
        throw TypeError(fmt::format("{}: the Evictable operands' secondaries differ ({} and {})", op,
                                    first.secondary()->class_name(), pin->secondary()->class_name()));
    }
    Tensor lowered(pin->primary(), t.offset(), t.layout());
    pins.push_back(std::move(pin));
    return lowered;
  };
  for (const Tensor& out : call.outputs)
    if (!as_evictable(out))
      throw RuntimeError(fmt::format("{}: the result storage is not an Evictable hierarchy", op));

  if (!call.invocation) {
    // A built-in: the kernel operands, each tensor as the same view of its
    // promoted primary, through the primary class's own path (a dispatch
    // hook class computes through the primary's Operation this adapter owns).
    std::vector<KernelOperand> lowered;
    lowered.reserve(call.operands.size());
    for (const KernelOperand& o : call.operands) {
      if (const Tensor* t = std::get_if<Tensor>(&o)) lowered.emplace_back(lower(*t));
      else lowered.push_back(o);
    }
    const Tensor result = execute_lowered(call, lowered, primary_operation_);
    const_cast<Evictable*>(as_evictable(call.output()))->adopt_values(result);
    return;
  }
  // A user-defined operation: its definition, called with the lowered
  // operands and the same options, on the primary class.
  const operation::ResolvedInvocation& inv = *call.invocation;
  if (!inv.mutated_operands().empty())
    throw NotImplementedError(fmt::format("{}: a user-defined operation that mutates an operand does not run on an "
                                          "Evictable yet (docs/evictable.md)",
                                          op));
  std::vector<operation::CallOperand> lowered;
  lowered.reserve(inv.operands().size());
  for (const operation::CallOperand& o : inv.operands()) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) lowered.emplace_back(lower(*t));
    else lowered.push_back(o);
  }
  const std::vector<Tensor> results = inv.definition()(std::move(lowered), inv.options());
  if (results.size() != call.outputs.size())
    throw RuntimeError(fmt::format("{}: the primary produced {} results for {} outputs", op, results.size(),
                                   call.outputs.size()));
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (inv.results()[k].alias_of()) continue;  // the operand itself: its primary holds the values already
    // The lowered result has the result's ResultSpec layout (publication
    // validated it), so its physical span maps slot for slot.
    const_cast<Evictable*>(as_evictable(call.outputs[k]))->adopt_values(results[k]);
  }
}

std::optional<Tensor> EvictableOperation::_adapt_cotangent(const Tensor& cotangent, std::size_t result) const {
  const std::span<const Tensor> results = outputs();
  if (result >= results.size()) return std::nullopt;
  const Evictable* hierarchy = as_evictable(results[result]);
  if (!hierarchy) return std::nullopt;
  std::shared_ptr<Carrier> primary, secondary;
  {
    const std::lock_guard lock(hierarchy->mutex_);
    primary = hierarchy->primary_;
    secondary = hierarchy->secondary_;
  }
  if (const Evictable* given = as_evictable(cotangent)) {
    // An Evictable cotangent: promoted, of the result's tier classes.
    const Evictable::Pin pin(*given, "EvictableOperation.backward");
    if (!(pin.primary()->exact_class() == primary->exact_class()) ||
        !(pin.secondary()->exact_class() == secondary->exact_class()))
      throw TypeError(fmt::format("EvictableOperation.backward: the cotangent's tiers ({}, {}) are not the result's "
                                  "({}, {})",
                                  pin.primary()->class_name(), pin.secondary()->class_name(), primary->class_name(),
                                  secondary->class_name()));
    return std::nullopt;
  }
  if (!(cotangent.carrier_type() == primary->exact_class())) return std::nullopt;  // refused by the class check
  // On the exact primary class: a fresh hierarchy of the result's tier
  // classes holding the cotangent's values (compact); the caller's carrier
  // is not claimed.
  return Tensor(hierarchy->new_like(cotangent.values(), true, &DType::Float32()), 0,
                Layout::compact(cotangent.shape()));
}

}  // namespace strideweave
