// Internal: the one dispatch path every front-end operation takes.
#pragma once

#include <strideweave/call.h>
#include <strideweave/execution.h>
#include <strideweave/operation.h>
#include <strideweave/ops.h>
#include <strideweave/output.h>

#include "storage/gate.h"

#include <array>
#include <memory>
#include <new>
#include <type_traits>
#include <span>
#include <variant>

#include <optional>
#include <string_view>
#include <vector>

namespace strideweave::frontend {

// Step 3 of ops.h: one exact carrier class and one placement, no released
// carrier; returns the carrier that serves as allocation prototype.
const Carrier& common_carrier(std::string_view operation, std::initializer_list<const Tensor*> tensors);
// TypeError naming both placements unless `first` and `other` (of one exact
// class) share their placement (<strideweave/placement.h>).
void require_same_placement(std::string_view operation, const Carrier& first, const Carrier& other);
// TypeError naming both unless a caller-provided output shares the
// operands' placement.
void require_output_placement(std::string_view operation, const Carrier& output, const Carrier& prototype);

// Room for a plan cached_plan could not remember (its table full, or a call
// it does not key), constructed only then: a std::optional<OperationPlan>
// was zero-filled (about 200 bytes) on every call, remembered or not.
class PlanScratch {
 public:
  PlanScratch() noexcept {}  // NOLINT: the storage stays uninitialised on purpose
  PlanScratch(const PlanScratch&) = delete;
  PlanScratch& operator=(const PlanScratch&) = delete;
  ~PlanScratch() {
    if (engaged_) std::launder(reinterpret_cast<OperationPlan*>(storage_))->~OperationPlan();
  }
  const OperationPlan& emplace(OperationPlan&& plan) {
    if (engaged_) {
      std::launder(reinterpret_cast<OperationPlan*>(storage_))->~OperationPlan();
      engaged_ = false;
    }
    auto* p = ::new (static_cast<void*>(storage_)) OperationPlan(std::move(plan));
    engaged_ = true;
    return *p;
  }

 private:
  alignas(OperationPlan) unsigned char storage_[sizeof(OperationPlan)];
  bool engaged_ = false;
};

// resolve_operation_plan(op, operands, options), remembered per thread for
// every operation family: resolution is a pure function of the operation,
// the operands (dtypes; weak scalars by kind and exact value) and the
// execution options, so a repeated call returns the same immutable plan
// without running the rule again. Errors are never remembered (each
// failing call re-raises). The reference is valid for the thread's life, or
// refers to `scratch` once the per-thread table is full (256 entries).
const OperationPlan& cached_plan(std::string_view op, std::span<const PlanOperand> operands,
                                 const OperationExecutionOptions* options, PlanScratch& scratch);
// The gate memo of `plan` when it is the entry cached_plan returned last on
// this thread (storage::GateMemo), else null.
storage::GateMemo* gate_memo_of(const OperationPlan& plan) noexcept;
inline const OperationPlan& cached_plan(std::string_view op, std::initializer_list<PlanOperand> operands,
                                        PlanScratch& scratch,
                                        const OperationExecutionOptions* options = nullptr) {
  return cached_plan(op, std::span<const PlanOperand>(operands.begin(), operands.size()), options, scratch);
}

// How a call reaches a definition-backed carrier (docs/extension.md, "Typed
// functions on definition-backed carriers"): when the gate's dispatch record
// says kernel patterns or a composite provider, the call's lowering (done
// once, already gated) becomes the built-in definition's resolved invocation
// and enters the definition-backed pipeline directly: nothing is lowered or
// gated twice. What the route supplies is the bound call: a by-name or
// definition call passes the call it bound (`bound`); a typed function passes
// a closure that binds its own arguments through the built-in's definition
// (`bind`, called only on that route, so a definition-free call pays two
// words and nothing else).
struct DefinitionRoute {
  std::shared_ptr<const operation::BoundOperationCall> (*bind)(const void* closure) = nullptr;
  const void* closure = nullptr;
  const operation::BoundOperationCall* bound = nullptr;
  // The invocation's plan when it is not the kernel's (mul(weak, tensor):
  // Lowered::call_plan), else null.
  const OperationPlan* invocation_plan = nullptr;
  // Set by execute() when it returned the pipeline's (published) result.
  mutable bool taken = false;
  bool reaches_definitions() const noexcept { return bound || bind; }
};
// A route over `f`, a callable returning the bound call
// (`bind_builtin(name, operands, options)`), which must outlive the typed
// call (a lambda temporary of the same full expression does).
template <class F>
DefinitionRoute by_definition(const F& f) {
  return DefinitionRoute{[](const void* c) { return (*static_cast<const F*>(c))(); }, &f};
}
// The typed call's own arguments bound through the built-in `name`'s
// definition (its TypeErrors, its defaults).
std::shared_ptr<const operation::BoundOperationCall> bind_builtin(std::string_view name,
                                                                  std::vector<operation::CallOperand> operands,
                                                                  operation::OptionMap options);
// Whether `tensor`'s exact class is definition-backed (its instances
// forward to a storage provider).
bool definition_backed(const Tensor& tensor);
// mul(weak_scalar, tensor)'s plan: the registry's (tensor, weak_scalar)
// plan `tensor_scalar` with its two operand plans in the call's order
// (docs/policy.md, "mul(weak, tensor)").
OperationPlan scalar_first_mul_plan(const OperationPlan& tensor_scalar);
// The built-in `name` called through its definition (definition_dispatch.cpp).
// The typed call's positional inputs are the definition's Tensor operands.
Tensor call_builtin_definition(std::string_view name, std::vector<operation::CallOperand> operands,
                               operation::OptionMap options, const Output& out);
// The options of reduce_sum and matmul as the schema's option entries.
operation::OptionMap execution_option_map(const std::optional<OperationExecutionOptions>& options);

// The call's positional Tensor arguments, in argument order: what a
// recorded Operation saves (core-concepts 6.2). At most four (no built-in
// operation has more than three Tensor operands).
class CallInputs {
 public:
  CallInputs() = default;
  CallInputs(std::initializer_list<const Tensor*> tensors) noexcept {
    for (const Tensor* t : tensors)
      if (t && count_ < tensors_.size()) tensors_[count_++] = t;
  }
  // The Tensor entries of `operands` (a by-name call's or a bound call's
  // operands, which must outlive this object).
  template <class... Alternatives>
  explicit CallInputs(std::span<const std::variant<Tensor, Alternatives...>> operands) noexcept {
    for (const auto& o : operands)
      if (const Tensor* t = std::get_if<Tensor>(&o); t && count_ < tensors_.size()) tensors_[count_++] = t;
  }
  std::span<const Tensor* const> span() const noexcept { return {tensors_.data(), count_}; }

 private:
  std::array<const Tensor*, 4> tensors_{};
  std::size_t count_ = 0;
};

// The kernel operands of one front-end call, held inline: a typed call
// allocates nothing for them (a std::vector was one heap allocation per
// call). Built from the operands themselves (`{a, b}` constructs each once
// in place) or from a vector (a lowering). At most kCapacity operands (no
// front-end family has more than three); more is a logic error.
class KernelOperands {
 public:
  static constexpr std::size_t kCapacity = 4;
  KernelOperands() noexcept = default;
  template <class... Items>
    requires(sizeof...(Items) >= 1 && sizeof...(Items) <= kCapacity &&
             (std::is_constructible_v<KernelOperand, Items &&> && ...))
  KernelOperands(Items&&... items) {  // NOLINT: implicit, so that finish(plan, {a, b}, ...) reads as before
    (emplace_back(std::forward<Items>(items)), ...);
  }
  explicit KernelOperands(std::vector<KernelOperand>&& items) {
    if (items.size() > kCapacity) throw_over_capacity();  // before anything is placed
    for (KernelOperand& item : items) emplace_back_unchecked(std::move(item));
  }
  // A copy; lent operands stay lent (to the same owners).
  KernelOperands(const KernelOperands& other) {
    for (const KernelOperand& item : other) emplace_back(item);
    owners_ = other.owners_;
  }
  KernelOperands(KernelOperands&& other) noexcept {
    for (KernelOperand& item : other.mutable_span()) emplace_back_unchecked(std::move(item));
    owners_ = other.owners_;
  }
  KernelOperands& operator=(const KernelOperands&) = delete;
  KernelOperands& operator=(KernelOperands&&) = delete;
  ~KernelOperands() {
    for (KernelOperand& item : mutable_span()) item.~KernelOperand();
  }

  template <class... Args>
  KernelOperand& emplace_back(Args&&... args) {
    if (count_ == kCapacity) throw_over_capacity();
    return emplace_back_unchecked(std::forward<Args>(args)...);
  }
  // `tensor` lent to this call (detail::TensorAccess::lend): the kernel sees
  // the same tensor, and no reference count is touched. `tensor` must
  // outlive every use of this list and of its copies; whatever may keep an
  // operand beyond the call (a recorded node, a definition's invocation, a
  // dispatch hook) takes owned() instead.
  void lend(const Tensor& tensor);
  // Whether some operand is lent.
  bool lends() const noexcept {
    for (std::size_t i = 0; i < count_; ++i)
      if (owners_[i]) return true;
    return false;
  }
  // The same operands, each lent one replaced by a handle sharing its
  // owner's ownership.
  KernelOperands owned() const;

  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  const KernelOperand* data() const noexcept {
    const auto* p = reinterpret_cast<const KernelOperand*>(storage_);
    return count_ ? std::launder(p) : p;  // an empty list holds no object to launder
  }
  const KernelOperand* begin() const noexcept { return data(); }
  const KernelOperand* end() const noexcept { return data() + count_; }
  const KernelOperand& operator[](std::size_t i) const noexcept { return data()[i]; }
  operator std::span<const KernelOperand>() const noexcept { return {data(), count_}; }  // NOLINT
  std::vector<KernelOperand> to_vector() const { return {begin(), end()}; }

 private:
  std::span<KernelOperand> mutable_span() noexcept {
    auto* p = reinterpret_cast<KernelOperand*>(storage_);
    return {count_ ? std::launder(p) : p, count_};
  }
  template <class... Args>
  KernelOperand& emplace_back_unchecked(Args&&... args) {
    KernelOperand* slot = ::new (static_cast<void*>(storage_ + count_ * sizeof(KernelOperand)))
        KernelOperand(std::forward<Args>(args)...);
    ++count_;
    return *slot;
  }
  [[noreturn]] static void throw_over_capacity();

  alignas(KernelOperand) unsigned char storage_[kCapacity * sizeof(KernelOperand)];
  std::size_t count_ = 0;
  std::array<const Tensor*, kCapacity> owners_{};  // the owner of each lent operand, else null
};

// What a call records besides its result: its positional inputs, the
// Operation that dispatch_op made for it (null: recording makes one), and,
// after execute(), the Operation a custom class's dispatch hook supplied
// (which then is the call's node).
struct CallRecord {
  CallInputs inputs;
  std::shared_ptr<Operation> target;
};

// Steps 4-5 of ops.h, after the gate (storage::gate: one lookup of the
// dispatch record of (exact class, plan), before any allocation), following
// the record's executor:
//  - a kernel: following the entry's execution axes (docs/capabilities.md):
//    admit the operands (borrowed_input) and either allocate the result in
//    the canonical layout on the prototype's class (owned_result) or write
//    the caller's `out` (caller_output, strided_output, accumulation); run
//    the kernel. Every refusal comes before any allocation; a FallbackCopy is
//    counted (execution_fallback_copies). A caller-provided output under
//    grad mode with a differentiable input is a RuntimeError before anything
//    is written (autograd cannot record it).
//  - kernel patterns or a composite provider (a definition-backed class):
//    the call, through `route`, as the built-in definition's invocation in
//    the definition-backed pipeline (the published result, its node
//    attached there; `route->taken` is set). Without a route
//    NotImplementedError.
//  - the dispatch hook (a custom definition-free class, carrier-extension
//    R13.1): the result is allocated on its class and the hook's Operation
//    fills it; that Operation is left in `record.target`.
// `squeeze`: the kernel result's axes the published result drops.
Tensor execute(const storage::Admission& admission, const OperationPlan& plan,
               std::span<const KernelOperand> operands, const Attributes& attributes, const Shape& result_shape,
               const Carrier& prototype, const Output& out, const DefinitionRoute* route, CallRecord& record,
               std::span<const std::int64_t> squeeze = {});

// ---- Lowering: one call, decided before any capability check or allocation
//
// Every single-kernel front-end family is written once, as a template over
// a finisher that receives what the call lowers to: the plan, the kernel's
// operands (broadcast views, materialised scalars), the attributes, the
// kernel's result shape, the allocation prototype, and the axes the
// published result squeezes away (matmul's vector promotion, rank-0
// gather/scatter). The typed functions finish with Execute (the hot path:
// nothing is copied); the built-in OperationDefinitions and the by-name
// calls finish with Lower, so their resolve step is exactly what the typed
// function does up to the kernel (docs/design.md, "One record per
// operation").

// `kernel_shape` without the axes in `squeeze`: the published result's shape.
Shape published_shape(const Shape& kernel_shape, std::span<const std::int64_t> squeeze);

// What one call lowers to (Lower's product).
struct Lowered {
  OperationPlan plan;
  std::vector<KernelOperand> operands;
  Attributes attributes;
  Shape kernel_shape;
  const Carrier* prototype = nullptr;
  std::vector<std::int64_t> squeeze;  // axes of the kernel result the published result drops
  // The plan in the call's operand order, when it is not `plan` (mul(weak,
  // tensor) only: the registry's (tensor, weak_scalar) plan runs the kernel
  // table, with `operands` in that order, while the definition's invocation
  // lists the weak scalar first; docs/policy.md).
  std::optional<OperationPlan> call_plan;
  // The published result's shape.
  Shape published_shape() const;
  // The plan of the definition's invocation (call_plan, else plan).
  const OperationPlan& invocation_plan() const noexcept { return call_plan ? *call_plan : plan; }
};

// Runs a lowered call: the gate, execute(), then the published view, then
// autograd records the call with `record`'s inputs (into record.target when
// set). `bound`: the call the lowering came from (it reaches a
// definition-backed carrier's pipeline as the built-in's invocation).
Tensor run(Lowered lowered, const Output& out, CallRecord record, const operation::BoundOperationCall* bound);

// The typed functions' finisher: execute, then squeeze (never a caller's
// output: it is returned as given), then autograd records the call.
struct Execute {
  // Whether this finisher's families may lend the caller's operands to the
  // call (KernelOperands::lend): with grad mode off nothing the kernel route
  // does keeps an operand, and Execute owns them before any route that may.
  static constexpr bool kLendsOperands = true;
  const Output& out;
  DefinitionRoute route{};  // how the call reaches a definition-backed carrier
  CallInputs inputs{};      // the call's positional Tensor arguments
  std::shared_ptr<Operation> target{};  // dispatch_op's Operation, if any
  Tensor operator()(const OperationPlan& plan, const KernelOperands& operands, const Attributes& attributes,
                    const Shape& shape, const Carrier& prototype, std::span<const std::int64_t> squeeze = {}) const;

 private:
  // After the gate, with operands the admitted route may receive.
  Tensor admitted(const storage::Admission& admission, const OperationPlan& plan, const KernelOperands& operands,
                  const Attributes& attributes, const Shape& shape, const Carrier& prototype,
                  std::span<const std::int64_t> squeeze) const;
};

// The definitions' finisher: records the lowering, runs nothing.
struct Lower {
  Lowered operator()(const OperationPlan& plan, const KernelOperands& operands, const Attributes& attributes,
                     const Shape& shape, const Carrier& prototype, std::span<const std::int64_t> squeeze = {}) const {
    return Lowered{plan, operands.to_vector(), attributes, shape, &prototype, {squeeze.begin(), squeeze.end()}, {}};
  }
};

// A weak scalar materialised as its plan operand's convert_to dtype.
Value materialize(const WeakScalar& scalar, const OperandPlan& operand, std::string_view operation);

// Whether a front-end call finished by `Finish` lends its caller's tensor
// operands to the kernel (Execute, with grad mode off: nothing then keeps
// an operand beyond the call, and no view a kernel makes is recorded).
bool grad_mode_enabled();
template <class Finish>
bool lends_operands() {
  if constexpr (requires { std::remove_cvref_t<Finish>::kLendsOperands; }) return !grad_mode_enabled();
  else return false;
}
// Appends the caller's tensor `t` to `operands`: lent or shared.
inline void append_operand(KernelOperands& operands, const Tensor& t, bool lend) {
  if (lend) operands.lend(t);
  else operands.emplace_back(t);
}

// A flat Shape with the top-level extents of `shape`.
inline Shape flat(const Shape& shape) { return shape.is_flat() ? shape : Shape::of(shape.extents()); }

// The common shapes of front-end families.
// Tensor/tensor elementwise with broadcasting; the plan is resolved here.
template <class Finish>
auto binary(std::string_view op, const Tensor& a, const Tensor& b, Finish&& finish) {
  PlanScratch scratch;
  const OperationPlan& plan = cached_plan(op, {a.dtype(), b.dtype()}, scratch);
  // Equal shapes (the common case) need no broadcast shape to be built.
  std::optional<Shape> broadcast;
  const bool same = a.shape() == b.shape() && a.shape().is_flat();  // broadcast_shapes is flat
  if (!same) broadcast.emplace(broadcast_shapes(a.shape(), b.shape(), op));
  const Shape& shape = same ? a.shape() : *broadcast;
  const Carrier& prototype = common_carrier(op, {&a, &b});
  // An operand already of the result's shape is passed as it is (no view).
  const bool lend = lends_operands<Finish>();
  KernelOperands operands;
  for (const Tensor* t : {&a, &b}) {
    if (t->shape() == shape) append_operand(operands, *t, lend);
    else operands.emplace_back(t->broadcast_to(shape));
  }
  return finish(plan, operands, Attributes{}, shape, prototype);
}
inline Tensor binary(std::string_view op, const Tensor& a, const Tensor& b, const Output& out) {
  const auto by_name = [&] { return bind_builtin(op, {a, b}, {}); };
  return binary(op, a, b, Execute{out, by_definition(by_name), {&a, &b}});
}

// Tensor/weak-scalar elementwise; the result has the tensor's (flat) shape.
template <class Finish>
auto tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s, Finish&& finish) {
  PlanScratch scratch;
  const OperationPlan& plan = cached_plan(op, {a.dtype(), s}, scratch);
  const Carrier& prototype = common_carrier(op, {&a});
  KernelOperands operands;
  append_operand(operands, a, lends_operands<Finish>());
  operands.emplace_back(materialize(s, plan.operands()[1], op));
  return finish(plan, operands, Attributes{}, flat(a.shape()), prototype);
}
inline Tensor tensor_scalar(std::string_view op, const Tensor& a, const WeakScalar& s, const Output& out) {
  const auto by_name = [&] { return bind_builtin(op, {a, s}, {}); };
  return tensor_scalar(op, a, s, Execute{out, by_definition(by_name), {&a}});
}
// normalize_axis(axis, rank, "<op> <noun>") with the text formatted only
// when it raises (a successful call formats nothing).
std::int64_t normalize_op_axis(std::string_view op, const char* noun, std::int64_t axis, std::size_t rank);
// Normalised, sorted, duplicate-free axes (ValueError otherwise); nullopt =
// every axis.
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::optional<std::vector<std::int64_t>>& axes,
                                         std::size_t rank);

}  // namespace strideweave::frontend
