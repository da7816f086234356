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
      size_(primary->size()) {
  // All or nothing; a failure below (the snapshot) gives both back: the
  // base's destructor relinquishes every claim of a constructor that threw.
  const std::shared_ptr<Carrier> tiers[] = {primary_, secondary_};
  claim(tiers);
  finalize_operation_capabilities();
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

// Structural: the tiers' classes answer whatever their residency or release.
bool Evictable::supports_storage_dtype(const DType& dtype) const noexcept {
  return primary_->supports_storage_dtype(dtype) && secondary_->supports_storage_dtype(dtype);
}

std::vector<OperationCapability> Evictable::_generate_operation_capabilities() const {
  std::vector<OperationCapability> out;
  for (OperationCapability& c : primary_->operation_capabilities())
    if (supports_storage_dtype(c.output())) out.push_back(std::move(c));
  return out;
}

const std::shared_ptr<Carrier>& Evictable::promoted_primary(const char* what) const {
  require_live(what);
  if (evicted_)
    throw RuntimeError(fmt::format("{}: the Evictable carrier is evicted; call promote() first", what));
  return primary_;
}

void Evictable::require_hierarchy_access(const char* what) const {
  if (is_owned() && !is_owner_acting_here())
    throw RuntimeError(fmt::format("{}: the Evictable carrier is owned by a composite and cannot be changed directly",
                                   what));
}

// ---------------------------------------------------------------- storage hooks

Value Evictable::read_slot(std::int64_t index) const {
  const std::lock_guard lock(mutex_);
  return promoted_primary("Carrier.get_value")->get_value(index);
}

void Evictable::write_slot(std::int64_t index, const Value& value) {
  const std::lock_guard lock(mutex_);
  const std::shared_ptr<Carrier>& primary = promoted_primary("Carrier.set_value");
  const OwnerAccess access = owner_access();
  primary->set_value(index, value);
}

void Evictable::read_range(std::int64_t first, std::int64_t count, Value* out) const {
  const std::lock_guard lock(mutex_);
  const std::vector<Value> values = promoted_primary("Carrier.read_values")->read_values(first, count);
  std::copy(values.begin(), values.end(), out);
}

void Evictable::write_range(std::int64_t first, std::span<const Value> values) {
  const std::lock_guard lock(mutex_);
  const std::shared_ptr<Carrier>& primary = promoted_primary("Carrier.write_values");
  const OwnerAccess access = owner_access();
  primary->write_values(first, values);
}

void Evictable::release_storage() {
  const std::lock_guard lock(mutex_);
  const OwnerAccess access = owner_access();
  if (!primary_->is_released()) primary_->release();
  if (!secondary_->is_released()) secondary_->release();
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
  try {
    (void)describe_move_route(*from, *destination);  // resolved at the start (NotImplementedError)
    const OwnerAccess access = owner_access();
    const NoGradGuard lowered;  // a transition records no node
    const Tensor moved = move(flat(from, size_), destination);
    if (moved.carrier() != destination)
      throw RuntimeError(fmt::format("{}: the move did not return its destination carrier", what));
  } catch (...) {
    if (fresh) dispose(destination);
    throw;
  }
  return destination;
}

void Evictable::evict() {
  require_hierarchy_access("Evictable.evict");
  const std::lock_guard lock(mutex_);
  require_live("Evictable.evict");
  if (evicted_) return;
  const std::shared_ptr<Carrier> destination = transfer(primary_, secondary_, "Evictable.evict");
  if (destination != secondary_) {  // a fresh secondary replaces the old one
    const std::shared_ptr<Carrier> replaced = std::exchange(secondary_, destination);
    dispose(replaced);
  }
  evicted_ = true;
}

void Evictable::promote() {
  require_hierarchy_access("Evictable.promote");
  const std::lock_guard lock(mutex_);
  require_live("Evictable.promote");
  if (!evicted_) return;
  const std::shared_ptr<Carrier> destination = transfer(secondary_, primary_, "Evictable.promote");
  if (destination != primary_) {  // a fresh primary replaces the released one
    const std::shared_ptr<Carrier> replaced = std::exchange(primary_, destination);
    dispose(replaced);
  }
  evicted_ = false;
}

// ---------------------------------------------------------------- dispatch

std::shared_ptr<Operation> Evictable::_dispatch_op(std::string_view operation_name) const {
  std::shared_ptr<Carrier> primary;
  {
    const std::lock_guard lock(mutex_);
    primary = promoted_primary("Evictable.dispatch_op");
  }
  return std::make_shared<EvictableOperation>(primary->dispatch_op(operation_name));
}

void Evictable::adopt_values(const Tensor& result) {
  const std::lock_guard lock(mutex_);
  const std::shared_ptr<Carrier>& primary = promoted_primary("EvictableOperation");
  const OwnerAccess access = owner_access();
  primary->copy_range(*result.carrier(), result.offset(), 0, size_);
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
  // Every tensor operand is a promoted Evictable whose tiers have the first
  // one's exact classes; its lowered form is the same view of the primary.
  std::vector<std::shared_ptr<Carrier>> primaries;  // per operand, null for a scalar
  const Evictable* first = nullptr;
  std::shared_ptr<Carrier> first_primary, first_secondary;
  const auto lower = [&](const Tensor& t) -> std::shared_ptr<Carrier> {
    const Evictable* e = as_evictable(t);
    if (!e)
      throw TypeError(fmt::format("{}: an Evictable operation needs Evictable tensor operands, got one on {}", op,
                                  t.carrier()->class_name()));
    std::shared_ptr<Carrier> primary, secondary;
    {
      const std::lock_guard lock(e->mutex_);
      primary = e->promoted_primary(op.c_str());
      secondary = e->secondary_;
    }
    if (!first) {
      first = e;
      first_primary = primary;
      first_secondary = secondary;
    } else if (!(primary->exact_class() == first_primary->exact_class())) {
      throw TypeError(fmt::format("{}: the Evictable operands' primaries differ ({} and {})", op,
                                  first_primary->class_name(), primary->class_name()));
    } else if (!(secondary->exact_class() == first_secondary->exact_class())) {
      throw TypeError(fmt::format("{}: the Evictable operands' secondaries differ ({} and {})", op,
                                  first_secondary->class_name(), secondary->class_name()));
    }
    return primary;
  };
  for (const Tensor& out : call.outputs)
    if (!as_evictable(out))
      throw RuntimeError(fmt::format("{}: the result storage is not an Evictable hierarchy", op));

  if (!call.invocation) {
    // A built-in: the kernel operands, each tensor as the same view of its
    // promoted primary, through the primary class's own path.
    std::vector<KernelOperand> lowered;
    lowered.reserve(call.operands.size());
    for (const KernelOperand& o : call.operands) {
      if (const Tensor* t = std::get_if<Tensor>(&o)) lowered.emplace_back(Tensor(lower(*t), t->offset(), t->layout()));
      else lowered.push_back(o);
    }
    const Tensor result = execute_lowered(call, lowered);
    const auto* out = as_evictable(call.output());
    const_cast<Evictable*>(out)->adopt_values(result);
    return;
  }
  // A user-defined operation: its definition, called with the lowered
  // operands and the same options, on the primary class.
  const operation::ResolvedInvocation& inv = *call.invocation;
  std::vector<operation::CallOperand> lowered;
  lowered.reserve(inv.operands().size());
  for (const operation::CallOperand& o : inv.operands()) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) lowered.emplace_back(Tensor(lower(*t), t->offset(), t->layout()));
    else lowered.push_back(o);
  }
  const std::vector<Tensor> results = inv.definition()(std::move(lowered), inv.options());
  if (results.size() != call.outputs.size())
    throw RuntimeError(fmt::format("{}: the primary produced {} results for {} outputs", op, results.size(),
                                   call.outputs.size()));
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (inv.results()[k].alias_of()) continue;  // the operand itself: its primary holds the values already
    const auto* out = as_evictable(call.outputs[k]);
    const_cast<Evictable*>(out)->adopt_values(results[k]);
  }
}

std::optional<Tensor> EvictableOperation::_cotangent_in_result_class(const Tensor& cotangent,
                                                                      std::size_t result) const {
  const std::span<const Tensor> results = outputs();
  if (result >= results.size()) return std::nullopt;
  const auto* hierarchy = as_evictable(results[result]);
  if (!hierarchy) return std::nullopt;
  std::shared_ptr<Carrier> primary;
  {
    const std::lock_guard lock(hierarchy->mutex_);
    primary = hierarchy->primary_;
  }
  if (!(cotangent.carrier_type() == primary->exact_class())) return std::nullopt;  // refused: TypeError
  // A fresh hierarchy of the result's tier classes holding the cotangent's
  // values (compact); the caller's carrier is not claimed.
  return Tensor(hierarchy->new_like(cotangent.values(), true, &DType::Float32()), 0,
                Layout::compact(cotangent.shape()));
}

}  // namespace strideweave
