// The single dispatch path. See dispatch.h and include/strideweave/ops.h.
#include "frontend/dispatch.h"
#include "storage/tensor_impl.h"

#include "core/bootstrap.h"
#include "execution/kernel_table.h"
#include "frontend/autograd_hooks.h"
#include "frontend/pipeline.h"
#include "storage/gate.h"
#include "storage/ranges.h"

#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <new>

namespace strideweave {
namespace frontend {
namespace {

std::atomic<const AutogradHooks*> installed_hooks{nullptr};

// The level of `axis` in the entry the gate found; an Unsupported axis goes
// back to the registry, which raises the structured UnsupportedOpDType with
// its stable sentence (before anything is allocated).
SupportLevel required_level(const ExecutionAxes& axes, const OperationPlan& plan, const Carrier& prototype,
                            ExecutionAxis axis) {
  const SupportLevel level = axes.level(axis);
  if (level == SupportLevel::Unsupported) require_capability(prototype.exact_class(), plan, axis);
  return level;
}

// How a caller-provided output is written.
struct OutputRoute {
  bool native = false;  // the kernel writes `out` directly
  ExecutionAxis counted_axis = ExecutionAxis::caller_output;  // the axis a FallbackCopy is counted on
  Layout aligned;       // out's layout with the result's shape
};

// Validates a caller-provided output and decides Native or FallbackCopy.
// Raises before any allocation.
OutputRoute admit_output(const OperationPlan& plan, const ExecutionAxes& axes, const Output& request,
                         std::span<const KernelOperand> operands, const Shape& result_shape, const Carrier& prototype) {
  const std::string& op = plan.operation();
  const Tensor& out = request.tensor();
  if (!(out.carrier()->exact_class() == prototype.exact_class()))
    throw TypeError(fmt::format("{}: the output lives on {} but the operands on {}", op, out.carrier()->class_name(),
                                prototype.class_name()));
  require_output_placement(op, *out.carrier(), prototype);
  out.carrier()->require_writable(op.c_str());
  if (&out.dtype() != &plan.output())
    throw TypeError(fmt::format("{}: the output has dtype {} but the plan produces {}", op, out.dtype().name(),
                                plan.output().name()));
  // The output has the result's shape, or that shape without extent-1 axes
  // the front end inserted for its kernel (matmul's vector promotion).
  auto without_ones = [](std::span<const std::int64_t> e) {
    std::vector<std::int64_t> v;
    for (std::int64_t x : e)
      if (x != 1) v.push_back(x);
    return v;
  };
  if (out.rank() > result_shape.rank() ||
      without_ones(out.shape().extents()) != without_ones(result_shape.extents()) ||
      (out.rank() == result_shape.rank() && !std::ranges::equal(out.shape().extents(), result_shape.extents())))
    throw ValueError(fmt::format("{}: the output has shape {} but the result has shape {}", op,
                                 out.shape().to_string(), result_shape.to_string()));
  if (!out.layout().is_injective())
    throw ValueError(fmt::format("{}: the output's layout {} maps several elements to one slot", op,
                                 out.layout().to_string()));
  for (const KernelOperand& o : operands)
    if (const Tensor* t = std::get_if<Tensor>(&o); t && t->carrier() == out.carrier())
      throw ValueError(fmt::format("{}: the output shares its carrier with an operand", op));
  const ExecutionAxis write_axis =
      request.mode() == OutputMode::Accumulate ? ExecutionAxis::accumulation : ExecutionAxis::caller_output;
  const SupportLevel level = required_level(axes, plan, prototype, write_axis);
  const bool strided = !out.layout().is_compact() || out.offset() != 0;
  const SupportLevel strided_level =
      strided ? required_level(axes, plan, prototype, ExecutionAxis::strided_output) : SupportLevel::Native;
  OutputRoute route;
  route.aligned = out.layout().reshape(result_shape);
  route.native = level == SupportLevel::Native && strided_level == SupportLevel::Native && route.aligned.is_flat();
  route.counted_axis = level != SupportLevel::Native ? write_axis
                       : strided                     ? ExecutionAxis::strided_output
                                                     : write_axis;
  return route;
}

// The borrowed_input axis, first half: Unsupported refuses a non-compact
// operand (UnsupportedOpDType) before anything is allocated.
void check_operands(const OperationPlan& plan, const ExecutionAxes& axes, std::span<const KernelOperand> operands,
                    const Carrier& prototype) {
  if (axes.borrowed_input != SupportLevel::Unsupported) return;
  for (const KernelOperand& o : operands)
    if (const Tensor* t = std::get_if<Tensor>(&o); t && !t->layout().is_compact())
      required_level(axes, plan, prototype, ExecutionAxis::borrowed_input);
}

// Second half: under FallbackCopy, the operands the class's kernels cannot
// read in place (KernelTable::reads_in_place) are materialised through the
// framework's counted copy; returns the operands the kernel reads, or
// nullopt when they are the caller's own (Native, or nothing to copy). The
// caller's operands stay what autograd records.
std::optional<std::vector<KernelOperand>> copy_operands(const ExecutionAxes& axes, const KernelTable& table,
                                                        std::span<const KernelOperand> operands, CarrierClass cls) {
  if (axes.borrowed_input != SupportLevel::FallbackCopy) return std::nullopt;
  std::optional<std::vector<KernelOperand>> replaced;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&operands[i]);
    if (!t || table.reads_in_place(t->layout())) continue;
    if (!replaced) replaced.emplace(operands.begin(), operands.end());
    (*replaced)[i] = detail::compact_copy(*t, Shape::of(t->shape().extents()));  // run by run (storage/ranges.h)
    record_fallback_copy(cls, ExecutionAxis::borrowed_input);
  }
  return replaced;
}

// Runs `kernel` with std::bad_alloc from inside it (a temporary buffer)
// reported as the operation's MemoryError.
void run_kernel(const KernelFn& kernel, const KernelCall& call) {
  try {
    kernel(call);
  } catch (const std::bad_alloc&) {
    throw MemoryError(fmt::format("{}: out of memory inside the kernel", call.plan.operation()));
  }
}

// A fresh compact result of `shape` on the prototype's class, computed by
// `kernel`.
Tensor fresh_result(const KernelFn& kernel, const OperationPlan& plan, std::span<const KernelOperand> operands,
                    const Attributes& attributes, const Shape& shape, const Carrier& prototype) {
  std::shared_ptr<Carrier> storage = prototype.allocate_like(shape.size(), true, &plan.output(), true);
  Tensor result(std::move(storage), 0, Layout::compact(shape));
  run_kernel(kernel, KernelCall{plan, operands, attributes, result});
  return result;
}

}  // namespace

void install_autograd_hooks(const AutogradHooks* hooks) noexcept {
  installed_hooks.store(hooks, std::memory_order_release);
}

const AutogradHooks& autograd_hooks() {
  const AutogradHooks* h = installed_hooks.load(std::memory_order_acquire);
  if (!h) {
    detail::ensure_bootstrapped();
    h = installed_hooks.load(std::memory_order_acquire);
    if (!h) throw RuntimeError("strideweave: autograd's recording hooks are not installed (the library bootstrap is missing)");
  }
  return *h;
}

bool definition_backed(const Tensor& tensor) { return tensor.carrier()->exact_class().traits().storage_provider; }

OperationPlan scalar_first_mul_plan(const OperationPlan& tensor_scalar) {
  const std::span<const OperandPlan> o = tensor_scalar.operands();
  return OperationPlan(tensor_scalar.operation(), {o[1], o[0]}, tensor_scalar.compute(), tensor_scalar.accumulation(),
                       tensor_scalar.accumulator_dtype(), tensor_scalar.output());
}

const Carrier& common_carrier(std::string_view operation, std::initializer_list<const Tensor*> tensors) {
  const Carrier* first = nullptr;
  for (const Tensor* t : tensors) {
    if (t->carrier()->is_released()) t->carrier()->require_live(std::string(operation).c_str());  // raises
    if (!first) {
      first = t->carrier().get();
    } else if (t->carrier().get() != first) {
      if (!(first->exact_class() == t->carrier()->exact_class()))
        throw TypeError(fmt::format("{}: operands live on different carrier classes ({} and {}); move one first",
                                    operation, first->class_name(), t->carrier()->class_name()));
      require_same_placement(operation, *first, *t->carrier());
    }
  }
  return *first;
}

void require_same_placement(std::string_view operation, const Carrier& first, const Carrier& other) {
  const Placement a = first.placement();
  const Placement b = other.placement();
  if (!(a == b))
    throw TypeError(fmt::format("{}: operands live on {} at different placements ({} and {}); move one first",
                                operation, first.class_name(), a.to_string(), b.to_string()));
}

void require_output_placement(std::string_view operation, const Carrier& output, const Carrier& prototype) {
  const Placement o = output.placement();
  const Placement p = prototype.placement();
  if (!(o == p))
    throw TypeError(fmt::format("{}: the output lives on {} at {} but the operands at {}", operation,
                                output.class_name(), o.to_string(), p.to_string()));
}

namespace {

// A custom definition-free class (no kernel table, no definition): the
// result is allocated on its class and its dispatch hook's Operation
// computes it (carrier-extension R13.1). Every refusal (the axes, the
// operands' layouts) comes before the allocation, as for a kernel table.
Tensor execute_by_hook(const ExecutionAxes& axes, const OperationPlan& plan,
                       std::span<const KernelOperand> operands, const Attributes& attributes,
                       const Shape& result_shape, const Carrier& prototype, const Output& out, CallRecord& record) {
  if (out)
    throw TypeError(fmt::format("{}: {} computes through its dispatch hook, which writes fresh results only; a "
                                "caller-provided output is not supported on this class",
                                plan.operation(), prototype.class_name()));
  required_level(axes, plan, prototype, ExecutionAxis::owned_result);
  check_operands(plan, axes, operands, prototype);
  const AutogradHooks& hooks = autograd_hooks();
  record.target = hooks.dispatch_hook_operation(prototype, plan, plan.operation(), record.target);
  std::shared_ptr<Carrier> storage = prototype.allocate_like(result_shape.size(), true, &plan.output(), true);
  const Tensor outputs[] = {Tensor(std::move(storage), 0, Layout::compact(result_shape))};
  const DispatchedCall call{plan.operation(), plan, operands, attributes, outputs, nullptr};
  hooks.run_dispatch_hook(*record.target, prototype, plan, call);
  if (outputs[0].carrier()->is_released())
    throw ProviderContractError("release", fmt::format("{}: {}'s dispatch hook released the result it was to write",
                                                       plan.operation(), prototype.class_name()));
  return outputs[0];
}

}  // namespace

Tensor execute(const storage::Admission& admission, const OperationPlan& plan,
               std::span<const KernelOperand> operands, const Attributes& attributes, const Shape& result_shape,
               const Carrier& prototype, const Output& out, const DefinitionRoute* definition_route, CallRecord& record,
               std::span<const std::int64_t> squeeze) {
  using capability_registry::ExecutorKind;
  const ExecutionAxes& axes = admission.axes;
  switch (admission.executor.kind) {
    case ExecutorKind::Kernel: break;
    case ExecutorKind::DispatchHook:
      return execute_by_hook(axes, plan, operands, attributes, result_shape, prototype, out, record);
    case ExecutorKind::KernelPatterns:
    case ExecutorKind::CompositeProvider: {
      // A definition-backed class: the call, lowered and gated once, enters
      // the definition-backed pipeline as the built-in's invocation.
      const DefinitionRoute* route = definition_route;
      if (!route || !route->reaches_definitions())
        throw NotImplementedError(fmt::format("{}: this call does not reach the definition-backed carrier {}; call "
                                              "the operation through its definition (operation::get_definition(\"{}\")) "
                                              "or by name (call_operation), which run its kernel patterns",
                                              plan.operation(), prototype.class_name(), plan.operation()));
      std::shared_ptr<const operation::BoundOperationCall> bound;
      const operation::BoundOperationCall& call = route->bound ? *route->bound : *(bound = route->bind(route->closure));
      route->taken = true;
      return run_builtin_on_definition(call, route->invocation_plan ? *route->invocation_plan : plan,
                                       published_shape(result_shape, squeeze), prototype, admission, out,
                                       record.target);
    }
  }
  const KernelFn& kernel = *static_cast<const KernelFn*>(admission.executor.target);
  const KernelTable& table = *static_cast<const KernelTable*>(admission.executor.owner);
  const CarrierClass cls = prototype.exact_class();
  if (!out) {
    const SupportLevel owned = required_level(axes, plan, prototype, ExecutionAxis::owned_result);
    check_operands(plan, axes, operands, prototype);
    const std::optional<std::vector<KernelOperand>> copied = copy_operands(axes, table, operands, cls);
    Tensor result = fresh_result(kernel, plan, copied ? std::span<const KernelOperand>(*copied) : operands, attributes,
                                 result_shape, prototype);
    if (owned == SupportLevel::FallbackCopy) {
      // The kernel's result is materialised into a second fresh result by
      // the framework's counted copy.
      result = detail::compact_copy(result, result_shape);  // run by run (storage/ranges.h)
      record_fallback_copy(cls, ExecutionAxis::owned_result);
    }
    return result;
  }
  const OutputRoute route = admit_output(plan, axes, out, operands, result_shape, prototype);
  check_operands(plan, axes, operands, prototype);
  // Accumulation cannot be recorded (the old value's history would be lost):
  // refused under grad mode before anything is written (autograd hook).
  if (out.mode() == OutputMode::Accumulate) autograd_hooks().refuse_caller_output(plan, record.inputs.span());
  const std::optional<std::vector<KernelOperand>> copied = copy_operands(axes, table, operands, cls);
  const std::span<const KernelOperand> kernel_operands = copied ? std::span<const KernelOperand>(*copied) : operands;
  const Tensor& target = out.tensor();
  if (route.native) {
    const Tensor view(target.carrier(), target.offset(), Layout(result_shape, Stride::of(*route.aligned.flat_strides())));
    run_kernel(kernel, KernelCall{plan, kernel_operands, attributes, view, out.mode() == OutputMode::Accumulate});
    target.carrier()->bump_version();
    return target;  // the caller's output handle itself
  }
  // FallbackCopy: compute into fresh storage, then publish into `out` in one
  // versioned bulk write (nothing is written if anything fails).
  const Tensor fresh = fresh_result(kernel, plan, kernel_operands, attributes, result_shape, prototype);
  // Run by run along out's layout (storage/ranges.h); an Int32 overflow of
  // the accumulation raises before anything is written.
  detail::publish_result(fresh, target, route.aligned, out.mode() == OutputMode::Accumulate, plan.operation());
  record_fallback_copy(cls, route.counted_axis);
  return target;  // the caller's output handle itself
}

Value materialize(const WeakScalar& scalar, const OperandPlan& operand, std::string_view operation) {
  if (&operand.convert_to() == &DType::Int32()) return Value::from_int32(scalar.to_int32(operation));
  return Value::from_float32(scalar.to_float32());
}

namespace {

// What a plan is a function of: the operation, each operand (a dtype, or a
// weak scalar's kind and exact value: the Int32 rules read integer values;
// a real value is keyed by its bits, which is finer than the rules need and
// never coarser), and the execution options.
// Trivial on purpose: a key's unused operand slots are never read, so none
// is zeroed (zeroing the whole key was a measurable share of a tiny call).
struct OperandKey {
  const void* dtype;   // a tensor's dtype; null for a weak scalar
  std::uint64_t low;   // an integer's low bits, or a real's bits
  std::uint64_t high;  // an integer's high bits
  std::uint8_t kind;   // 0 tensor, 1 integer, 2 real, 3 bool
  bool operator==(const OperandKey& o) const noexcept {
    return dtype == o.dtype && low == o.low && high == o.high && kind == o.kind;
  }
};
constexpr std::size_t kMaxKeyedOperands = 4;
struct PlanKey {
  std::array<OperandKey, kMaxKeyedOperands> operands;
  std::uint8_t count = 0;
  const void* accumulator = nullptr;
  std::int8_t arithmetic = -1;
  bool operator==(const PlanKey& o) const noexcept {
    if (count != o.count || accumulator != o.accumulator || arithmetic != o.arithmetic) return false;
    for (std::size_t i = 0; i < count; ++i)
      if (!(operands[i] == o.operands[i])) return false;
    return true;
  }
};

// FNV-1a over the operation's name and the key's words: operation names are
// a few bytes, so this is a handful of multiplies (std::hash of a
// string_view calls out of line).
std::uint64_t hash_of(std::string_view op, const PlanKey& k) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto byte = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  for (const char c : op) byte(static_cast<unsigned char>(c));
  for (std::size_t i = 0; i < k.count; ++i) {
    const OperandKey& o = k.operands[i];
    byte(reinterpret_cast<std::uintptr_t>(o.dtype));
    byte(o.low ^ (o.high << 1) ^ o.kind);
  }
  byte(reinterpret_cast<std::uintptr_t>(k.accumulator) ^ static_cast<std::uint64_t>(k.arithmetic + 1));
  return h;
}

// Builds the key; false when the call is not keyed (more operands than the
// key holds, a tensor operand without a dtype, or options of another
// operation: resolution raises).
bool make_key(std::string_view op, std::span<const PlanOperand> operands, const OperationExecutionOptions* options,
              PlanKey& key) {
  if (operands.size() > kMaxKeyedOperands) return false;
  key.count = static_cast<std::uint8_t>(operands.size());
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const PlanOperand& o = operands[i];
    OperandKey& k = key.operands[i];
    k = OperandKey{nullptr, 0, 0, 0};
    if (o.role() == OperandRole::TENSOR) {
      if (!o.dtype()) return false;
      k.dtype = o.dtype();
      continue;
    }
    const WeakScalar& s = o.scalar();
    if (s.kind() == WeakScalarKind::INTEGER) {
      const int128 v = s.integer_value();
      k.kind = 1;
      k.low = static_cast<std::uint64_t>(v);
      k.high = static_cast<std::uint64_t>(v >> 64);
    } else {
      k.kind = s.is_bool() ? 3 : 2;
      const double v = s.real_value();
      std::memcpy(&k.low, &v, sizeof v);
    }
  }
  if (options) {
    // Options bound to another operation are a ValueError every time; they
    // are not keyed (an empty set for matmul would otherwise match a
    // reduce_sum call without options, and skip the error).
    if (options->operation() != op) return false;
    key.accumulator = options->accumulator_dtype();
    if (const std::optional<Arithmetic> a = options->arithmetic()) key.arithmetic = static_cast<std::int8_t>(*a);
  }
  return true;
}

struct CachedPlan {
  std::string op;
  PlanKey key;
  OperationPlan plan;
  storage::GateMemo gate;  // the plan's last admission (gate_memo_of)
};

// Whether a cached operation name is `op`: names are a few bytes, compared
// inline (std::string's comparison calls memcmp out of line).
bool same_name(const std::string& cached, std::string_view op) noexcept {
  if (cached.size() != op.size()) return false;
  for (std::size_t i = 0; i < op.size(); ++i)
    if (cached[i] != op[i]) return false;
  return true;
}

// One thread's remembered plans: at most kCapacity entries in a node-stable
// deque (returned references stay valid), found through an open-addressing
// table of twice that many slots (an index + 1; 0 = empty), so a lookup
// allocates nothing and takes no lock.
struct PlanCache {
  static constexpr std::size_t kCapacity = 256;
  static constexpr std::size_t kSlots = 2 * kCapacity;  // a power of two
  std::deque<CachedPlan> entries;
  std::array<std::uint16_t, kSlots> slots{};
  std::array<std::uint64_t, kSlots> hashes{};
};

}  // namespace

namespace {
// The calling thread's plan cache, or null after its destruction at thread
// exit; and the entry it returned last (null when it last returned a
// scratch plan).
thread_local PlanCache* hot_cache = nullptr;
thread_local bool cache_gone = false;
thread_local CachedPlan* last_returned = nullptr;

PlanCache* thread_cache() {
  // One thread-local word on the hit path (a trivially constructed pointer:
  // no initialisation guard); the cache itself is built on first use. A call
  // made by another thread-local's destructor after the cache's own (thread
  // exit) resolves without remembering.
  if (hot_cache || cache_gone) return hot_cache;
  struct Owner {
    PlanCache cache;
    ~Owner() {
      hot_cache = nullptr;
      last_returned = nullptr;
      cache_gone = true;
    }
  };
  thread_local Owner owner;  // destroyed at thread exit
  hot_cache = &owner.cache;
  return hot_cache;
}
}  // namespace

const OperationPlan& cached_plan(std::string_view op, std::span<const PlanOperand> operands,
                                 const OperationExecutionOptions* options, PlanScratch& scratch) {
  const auto unremembered = [&]() -> const OperationPlan& {
    last_returned = nullptr;
    return scratch.emplace(resolve_operation_plan(op, operands, nullptr, options));
  };
  PlanCache* cache = thread_cache();
  PlanKey key;
  if (!cache || !make_key(op, operands, options, key)) return unremembered();
  // A loop calling one operation asks for the entry it was given last.
  if (last_returned && last_returned->key == key && same_name(last_returned->op, op)) return last_returned->plan;
  const std::uint64_t h = hash_of(op, key);
  std::size_t slot = h & (PlanCache::kSlots - 1);
  for (; cache->slots[slot] != 0; slot = (slot + 1) & (PlanCache::kSlots - 1)) {
    if (cache->hashes[slot] != h) continue;
    CachedPlan& e = cache->entries[cache->slots[slot] - 1u];
    if (e.key == key && same_name(e.op, op)) {
      last_returned = &e;
      return e.plan;
    }
  }
  OperationPlan plan = resolve_operation_plan(op, operands, nullptr, options);  // errors are never remembered
  if (cache->entries.size() >= PlanCache::kCapacity) {
    last_returned = nullptr;
    return scratch.emplace(std::move(plan));
  }
  cache->entries.push_back(CachedPlan{std::string(op), key, std::move(plan), {}});
  cache->slots[slot] = static_cast<std::uint16_t>(cache->entries.size());  // the empty slot the probe ended on
  cache->hashes[slot] = h;
  last_returned = &cache->entries.back();
  return last_returned->plan;
}

storage::GateMemo* gate_memo_of(const OperationPlan& plan) noexcept {
  // A cache entry lives (unchanged) as long as the thread, so the address
  // identifies it; a scratch plan is never an entry's.
  return last_returned && &last_returned->plan == &plan ? &last_returned->gate : nullptr;
}

Shape published_shape(const Shape& kernel_shape, std::span<const std::int64_t> squeeze) {
  if (squeeze.empty()) return kernel_shape;
  std::vector<std::int64_t> extents;
  for (std::size_t i = 0; i < kernel_shape.rank(); ++i)
    if (std::find(squeeze.begin(), squeeze.end(), static_cast<std::int64_t>(i)) == squeeze.end())
      extents.push_back(kernel_shape.extent(i));
  return Shape::of(extents);
}

Shape Lowered::published_shape() const { return frontend::published_shape(kernel_shape, squeeze); }

bool grad_mode_enabled() { return autograd_hooks().grad_enabled(); }

void KernelOperands::lend(const Tensor& tensor) {
  if (count_ == kCapacity) throw_over_capacity();
  owners_[count_] = &tensor;
  emplace_back_unchecked(std::in_place_type<Tensor>, detail::TensorAccess::lend(tensor));
}

KernelOperands KernelOperands::owned() const {
  KernelOperands out;
  for (std::size_t i = 0; i < count_; ++i) {
    const KernelOperand& o = out.emplace_back(owners_[i] ? KernelOperand(*owners_[i]) : (*this)[i]);
    // A lent owner (a front-end call made on a kernel's own operands, which
    // no library kernel does) has no ownership to share.
    if (const Tensor* t = std::get_if<Tensor>(&o); t && detail::TensorAccess::is_lent(*t))
      throw RuntimeError("strideweave: internal error: a lent operand has no owner to share");
  }
  return out;
}

void KernelOperands::throw_over_capacity() {
  throw RuntimeError(fmt::format("strideweave: a front-end call with more than {} kernel operands", kCapacity));
}

Tensor Execute::operator()(const OperationPlan& plan, const KernelOperands& operands,
                           const Attributes& attributes, const Shape& shape, const Carrier& prototype,
                           std::span<const std::int64_t> squeeze) const {
  // The gate: one lookup of the dispatch record of (exact class, plan),
  // before any allocation or kernel entry; its executor decides the route.
  // A definition-backed class's capabilities are its definitions'
  // invocation plans, so it is gated on the call's plan in the call's
  // operand order (they differ only for mul(weak, tensor)).
  const bool invocation_order = route.invocation_plan && prototype.exact_class().traits().storage_provider;
  const storage::Admission admission = invocation_order ? storage::gate(prototype, *route.invocation_plan)
                                                        : storage::gate(prototype, plan, gate_memo_of(plan));
  // Lent operands go only where nothing keeps them: a kernel of the class's
  // own table. A dispatch hook receives owned handles (it may keep its
  // operands beyond the call). Kernel patterns and a composite provider
  // never see these operands: they run the call's own bound arguments
  // (DefinitionRoute). Owned handles are built only when needed: an
  // optional list was zero-filled on every call.
  if (admission.executor.kind == capability_registry::ExecutorKind::DispatchHook && operands.lends()) {
    const KernelOperands owned = operands.owned();
    return admitted(admission, plan, owned, attributes, shape, prototype, squeeze);
  }
  return admitted(admission, plan, operands, attributes, shape, prototype, squeeze);
}

Tensor Execute::admitted(const storage::Admission& admission, const OperationPlan& plan,
                         const KernelOperands& operands, const Attributes& attributes, const Shape& shape,
                         const Carrier& prototype, std::span<const std::int64_t> squeeze) const {
  CallRecord record{inputs, target};
  Tensor result = execute(admission, plan, operands, attributes, shape, prototype, out, &route, record, squeeze);
  if (route.taken) return result;  // the definition's published result (its node attached there)
  const AutogradHooks& hooks = autograd_hooks();
  if (out) {
    // The caller's output itself: an overwrite records the call on it, as on
    // a fresh result (accumulation was refused above when it would record).
    if (out.mode() == OutputMode::Overwrite)
      hooks.record_call(plan, operands, attributes, result, record.inputs.span(),
                        result.shape() == shape ? std::nullopt : std::optional<Shape>(shape), record.target);
    return result;
  }
  if (squeeze.empty()) {
    hooks.record_call(plan, operands, attributes, result, record.inputs.span(), std::nullopt, record.target);
    return result;
  }
  // The published view is part of this call: the call's Operation replaces
  // whatever the view recorded.
  const Tensor published = result.squeeze(std::vector<std::int64_t>(squeeze.begin(), squeeze.end()));
  hooks.record_call(plan, operands, attributes, published, record.inputs.span(), shape, record.target);
  return published;
}

Tensor run(Lowered lowered, const Output& out, CallRecord record, const operation::BoundOperationCall* bound) {
  DefinitionRoute route;
  route.bound = bound;
  if (lowered.call_plan) route.invocation_plan = &*lowered.call_plan;
  return Execute{out, route, record.inputs, std::move(record.target)}(lowered.plan, KernelOperands(std::move(lowered.operands)),
                                                                       lowered.attributes, lowered.kernel_shape,
                                                                       *lowered.prototype, lowered.squeeze);
}

std::int64_t normalize_op_axis(std::string_view op, const char* noun, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis >= -r && axis < r) return axis < 0 ? axis + r : axis;
  const std::string what = fmt::format("{} {}", op, noun);  // formatted for the error only
  return normalize_axis(axis, rank, what.c_str());          // raises the ValueError
}

// Normalised, sorted, duplicate-free axes (ValueError otherwise).
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::optional<std::vector<std::int64_t>>& axes,
                                         std::size_t rank) {
  std::vector<std::int64_t> out;
  if (!axes) {
    for (std::size_t i = 0; i < rank; ++i) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  for (std::int64_t a : *axes) out.push_back(normalize_op_axis(op, "axes", a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ValueError(fmt::format("{}: axes contain a duplicate axis", op));
  return out;
}

}  // namespace frontend

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view operation) {
  if (a.rank() == b.rank() && std::ranges::equal(a.extents(), b.extents())) return Shape::of(a.extents());
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t ea = i < rank - a.rank() ? 1 : a.extent(i - (rank - a.rank()));
    const std::int64_t eb = i < rank - b.rank() ? 1 : b.extent(i - (rank - b.rank()));
    if (ea != eb && ea != 1 && eb != 1)
      throw ValueError(fmt::format("{}: shapes {} and {} do not broadcast (axis {}: {} vs {})", operation,
                                   a.to_string(), b.to_string(), i, ea, eb));
    out[i] = ea == 1 ? eb : ea;
  }
  return Shape::of(out);
}

}  // namespace strideweave
