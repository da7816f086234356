// TiledEvictable scatter (carrier-composition B10, B11): scatter(), the
// operation behind it ("tiled_evictable.scatter", a user-defined
// OperationDefinition whose composite kernel and VJP live here) and its
// AwaitMove. See <strideweave/carriers/tiled_evictable.h> and
// docs/tiled_evictable.md. Public headers only.
#include "extension_carriers/tiled_evictable/access.h"

#include <strideweave/autograd.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

namespace strideweave {

namespace {

ScatterReduction reduction_of(const operation::OptionValue& value) {
  const auto* text = std::get_if<std::string>(&value);
  if (text && *text == "replace") return ScatterReduction::Replace;
  if (text && *text == "add") return ScatterReduction::Add;
  throw ValueError(fmt::format("{}: reduction must be 'replace' or 'add', got {}", TiledEvictable::scatter_operation_name,
                               operation::to_string(value)));
}

Arithmetic scatter_arithmetic(const SimpleDType& dtype, ScatterReduction reduction) {
  if (&dtype == &DType::Float32()) return Arithmetic::BINARY32;
  return reduction == ScatterReduction::Add ? Arithmetic::INT32_EXACT_CHECKED : Arithmetic::INT32_EXACT;
}

// The central scatter-add arithmetic of one element: binary32 addition, or
// checked int32 addition (OverflowError naming the operation).
Value add_values(const Value& a, const Value& b) {
  switch (a.kind) {
    case ElementKind::Float32: return Value::from_float32(a.f + b.f);
    case ElementKind::Int32: {
      std::int32_t r = 0;
      if (__builtin_add_overflow(a.i, b.i, &r))
        throw OverflowError(fmt::format("{}: int32 overflow adding {} and {}", TiledEvictable::scatter_operation_name,
                                        a.i, b.i));
      return Value::from_int32(r);
    }
    default:
      throw TypeError(fmt::format("{}: reduction 'add' has no bool arithmetic", TiledEvictable::scatter_operation_name));
  }
}

}  // namespace

// ---------------------------------------------------------------- the operation

OperationCapability scatter_capability(const SimpleDType& dtype, ScatterReduction reduction) {
  return OperationCapability::from_plan(OperationPlan(
      TiledEvictable::scatter_operation_name, {OperandPlan::tensor(dtype, dtype), OperandPlan::tensor(dtype, dtype)},
      scatter_arithmetic(dtype, reduction), std::nullopt, nullptr, dtype));
}

std::shared_ptr<const operation::OperationDefinition> scatter_definition() {
  namespace op = operation;
  static const std::shared_ptr<const op::OperationDefinition> definition = op::define_operation(
      TiledEvictable::scatter_operation_name,
      op::OperationSchema(
          {op::OperandSpec("template_", op::OperandKind::TENSOR, true),
           op::OperandSpec("compact", op::OperandKind::TENSOR, true)},
          {op::OptionSpec("per_axis", op::REQUIRED, "the TileSelection, encoded", op::OptionKind::INTEGERS),
           op::OptionSpec("reduction", op::OptionValue{std::string("replace")}, "'replace' or 'add'",
                          op::OptionKind::TEXT)}),
      [](const op::BoundOperationCall& call) {
        static constexpr const char* what = TiledEvictable::scatter_operation_name;
        const Tensor& template_ = call.tensor(0);
        const Tensor& compact = call.tensor(1);
        const TiledEvictable& tiled = tiled_of(template_, what);
        if (!(compact.carrier()->exact_class() == tiled.primary()->exact_class()))
          throw TypeError(fmt::format("{}: the compact Tensor is on {}, not the compute carrier's {}", what,
                                      compact.carrier()->class_name(), tiled.primary()->class_name()));
        const auto* encoded = std::get_if<std::vector<std::int64_t>>(&call.option("per_axis"));
        if (!encoded) throw TypeError(fmt::format("{}: option 'per_axis' must be a list of integers", what));
        const TileSelection selection = decode_selection(*encoded, what);
        const ScatterReduction reduction = reduction_of(call.option("reduction"));
        selection.check_against(tiled.grid_shape(), what);
        tiled.check_full_tensor(template_, what);
        if (&compact.dtype() != &template_.dtype())
          throw TypeError(fmt::format("{}: the compact Tensor has dtype {}, the template {}", what,
                                      compact.dtype().name(), template_.dtype().name()));
        const std::vector<std::int64_t> shape = projected_shape(tiled, selection);
        if (!std::ranges::equal(compact.shape().extents(), shape))
          throw ValueError(fmt::format("{}: the compact Tensor has shape {}, the selection needs {}", what,
                                       compact.shape().to_string(), Shape::of(shape).to_string()));
        const SimpleDType& dtype = static_cast<const SimpleDType&>(template_.dtype());
        if (reduction == ScatterReduction::Add && &dtype == &DType::Bool())
          throw TypeError(fmt::format("{}: reduction 'add' has no bool arithmetic", what));
        OperationPlan plan(what, {OperandPlan::tensor(dtype, dtype), OperandPlan::tensor(dtype, dtype)},
                           scatter_arithmetic(dtype, reduction), std::nullopt, nullptr, dtype);
        return op::ResolvedInvocation(call, plan, {op::ResultSpec(dtype, template_.shape(), template_.layout())});
      },
      std::nullopt,
      // B11: the compact Tensor's gradient is the projection of the
      // cotangent at the selection; the template's is the cotangent's
      // selected tiles for 'add' (its other tiles never reach the result),
      // none for 'replace' (overwritten values get no gradient).
      op::VjpFn([](const op::VJPContext& ctx, std::span<const std::optional<Tensor>> cotangents) {
        std::vector<std::optional<Tensor>> out(2);
        if (!cotangents[0]) return out;
        const op::ResolvedInvocation& inv = ctx.invocation();
        const Tensor& template_ = std::get<Tensor>(inv.operands()[0]);
        const Tensor& compact = std::get<Tensor>(inv.operands()[1]);
        const TiledEvictable& tiled = tiled_of(template_, TiledEvictable::scatter_operation_name);
        const TileSelection selection = decode_selection(
            std::get<std::vector<std::int64_t>>(inv.options().at("per_axis")), TiledEvictable::scatter_operation_name);
        (void)policy_plan(tiled, selection.tile_set(), "backward");  // B14: asked before the tiled backward
        const std::vector<Value> cot = cotangents[0]->values();  // logical order over the logical shape
        std::vector<Value> projected(static_cast<std::size_t>(compact.size()));
        std::vector<std::int64_t> slots(projected.size());
        for_each_projected(tiled, template_, selection,
                           [&](std::size_t, std::int64_t, std::int64_t index, std::int64_t key, std::int64_t slot) {
                             projected[static_cast<std::size_t>(index)] = cot[static_cast<std::size_t>(key)];
                             slots[static_cast<std::size_t>(index)] = slot;
                           });
        if (ctx.needs_grad(1)) {
          // On the compact operand's own class and layout (compact order).
          std::vector<Value> in_slots(static_cast<std::size_t>(compact.offset() + compact.layout().cosize()),
                                      Value::from_float32(0.0f));
          for (std::int64_t k = 0; k < compact.size(); ++k)
            in_slots[static_cast<std::size_t>(compact.offset() + compact.layout()(k))] =
                projected[static_cast<std::size_t>(k)];
          out[1] = Tensor(compact.carrier()->new_like(in_slots, true, &DType::Float32()), compact.offset(),
                          compact.layout());
        }
        if (ctx.needs_grad(0) && reduction_of(inv.options().at("reduction")) == ScatterReduction::Add) {
          std::shared_ptr<Carrier> g = tiled.allocate_like(tiled.tile_size() * tiled.tile_count(), true,
                                                           &DType::Float32());
          g->write_slots(slots, projected);
          out[0] = Tensor(g, template_.offset(), template_.layout());
        }
        return out;
      }));
  return definition;
}

// The composite's kernel: a fresh instance like the template whose selected
// tiles hold the compact values (or the template's plus them), every other
// tile invalid.
extension::CompositeProvider::Prepared prepare_scatter(const operation::ResolvedInvocation& invocation) {
  const Tensor& template_ = std::get<Tensor>(invocation.operands()[0]);
  const TiledEvictable& tiled = tiled_of(template_, TiledEvictable::scatter_operation_name);
  TileSelection selection = decode_selection(std::get<std::vector<std::int64_t>>(invocation.options().at("per_axis")),
                                             TiledEvictable::scatter_operation_name);
  const ScatterReduction reduction = reduction_of(invocation.options().at("reduction"));
  return extension::PreparedComposite([inv = &invocation, &tiled, selection = std::move(selection),
                                       reduction]() -> extension::ResultSubmission {
    const Tensor& tmpl = std::get<Tensor>(inv->operands()[0]);
    const Tensor& compact = std::get<Tensor>(inv->operands()[1]);
    std::vector<Value> values = compact.values();  // compact order
    if (reduction == ScatterReduction::Add) {
      const std::vector<Value> base = TiledEvictableAccess::gather_selected(tiled, tmpl, selection);
      for (std::size_t k = 0; k < values.size(); ++k) values[k] = add_values(base[k], values[k]);
    }
    std::vector<std::int64_t> slots(values.size());
    for_each_projected(tiled, tmpl, selection, [&](std::size_t, std::int64_t, std::int64_t index, std::int64_t,
                                                   std::int64_t slot) { slots[static_cast<std::size_t>(index)] = slot; });
    std::shared_ptr<TiledEvictable> result = TiledEvictableAccess::fresh_with_valid(tiled, selection);
    result->write_slots(slots, values);  // one versioned mutation
    result->promote(selection.tile_set());  // an all-zero tile stays implicit above: every selected tile dirty (B10.3)
    return extension::ProviderResult({Tensor(result, tmpl.offset(), tmpl.layout())});
  });
}

// ---------------------------------------------------------------- scatter()

namespace {

// The scatter in flight: the template's selected tiles promote (for 'add'),
// then finish() calls the operation.
class ScatterTransaction final : public detail::MoveTransaction<Tensor> {
 public:
  ScatterTransaction(std::optional<AwaitResidency> transfers, std::function<Tensor()> run)
      : transfers_(std::move(transfers)), run_(std::move(run)) {}
  // The scatter itself runs in finish(): until then the outcome is not
  // terminal, so done() stays false, and a dropped handle's scatter runs on
  // the detached thread AwaitMove gives it (never in the dropping thread).
  bool transfer_done() const noexcept override { return false; }
  Tensor finish() override {
    if (transfers_) transfers_->wait();
    return run_();
  }

 private:
  std::optional<AwaitResidency> transfers_;
  std::function<Tensor()> run_;
};

}  // namespace

AwaitMove<Tensor> TiledEvictable::scatter(const Tensor& compact, const Tensor& template_,
                                          const TileSelection& selection, ScatterReduction reduction) {
  static constexpr const char* what = "TiledEvictable.scatter";
  if (!(compact.carrier()->exact_class() == primary_->exact_class()))
    throw TypeError(fmt::format("{}: the compact Tensor is on {}, not the compute carrier's {}", what,
                                compact.carrier()->class_name(), primary_->class_name()));
  if (template_.carrier().get() != this)
    throw TypeError(fmt::format("{}: the template is not a Tensor of this TiledEvictable carrier", what));
  if (&compact.dtype() != &dtype())
    throw TypeError(fmt::format("{}: the compact Tensor has dtype {}, the carrier {}", what, compact.dtype().name(),
                                dtype().name()));
  if (reduction == ScatterReduction::Add && &dtype() == &DType::Bool())
    throw TypeError(fmt::format("{}: reduction 'add' has no bool arithmetic", what));
  require_live(what);
  compact.carrier()->require_live(what);
  selection.check_against(grid_shape_, what);
  check_full_tensor(template_, what);
  const std::vector<std::int64_t> shape = projected_shape(*this, selection);
  if (!std::ranges::equal(compact.shape().extents(), shape))
    throw ValueError(fmt::format("{}: the compact Tensor has shape {}, the selection needs {}", what,
                                 compact.shape().to_string(), Shape::of(shape).to_string()));
  // B14: the policy's promotions join the transfers ('add' reads the
  // template's selected tiles); its evictions wait until the commit.
  const ResidencyPlan plan = policy_plan(*this, selection.tile_set(), "scatter");
  TileSet to_promote = plan.promote();
  if (reduction == ScatterReduction::Add) to_promote = tile_union(selection.tile_set(), to_promote);
  std::optional<AwaitResidency> transfers;
  TileSet promoted;  // undone by a failed wait() (docs/tiled_evictable.md, "Failure")
  if (!to_promote.empty()) transfers = TiledEvictableAccess::prefetch(*this, to_promote, 0, &promoted);
  const std::shared_ptr<void> pending = hold_pending();  // release() refuses until the scatter completes (B15)
  const bool grad = is_grad_enabled();
  const std::uint64_t template_version = version(), compact_version = compact.carrier()->version();
  auto self = std::static_pointer_cast<TiledEvictable>(shared_from_this());
  operation::OptionMap options{{"per_axis", encode_selection(selection)},
                               {"reduction", std::string(reduction == ScatterReduction::Add ? "add" : "replace")}};
  auto run = [self, compact, template_, grad, template_version, compact_version, pending, evict = plan.evict(),
              promoted, options = std::move(options)]() -> Tensor {
    try {
      if (self->version() != template_version || compact.carrier()->version() != compact_version)
        throw RuntimeError(fmt::format("{}: an input was written after scatter() and before wait()", what));
      Tensor result = [&] {
        const GradModeGuard mode(grad);
        return (*scatter_definition())({template_, compact}, options).front();
      }();
      TiledEvictableAccess::evict_if_possible(*self, evict);
      return result;
    } catch (...) {
      TiledEvictableAccess::undo_promotions(*self, promoted);
      throw;
    }
  };
  return AwaitMove<Tensor>(std::make_shared<ScatterTransaction>(std::move(transfers), std::move(run)));
}

}  // namespace strideweave
