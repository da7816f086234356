// Tensor and its views. See include/strideweave/tensor.h.
#include "storage/tensor_impl.h"
#include "storage/ranges.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>

namespace strideweave {
namespace {

void validate(const std::shared_ptr<Carrier>& carrier, std::int64_t offset, const Layout& layout) {
  if (!carrier) throw TypeError("Tensor: the carrier must not be null");
  carrier->require_live("Tensor");
  if (!stored_element_kind(carrier->dtype()))
    throw ValueError(fmt::format("Tensor: dtype '{}' is not a stored SimpleDType", carrier->dtype().name()));
  if (offset < 0) throw ValueError(fmt::format("Tensor: offset must be >= 0, got {}", offset));
  const std::int64_t end = checked_add(offset, layout.cosize(), "Tensor offset + cosize");
  if (end > carrier->size())
    throw ValueError(fmt::format("Tensor: offset {} + cosize {} exceeds the {} carrier's {} slots", offset,
                                 layout.cosize(), carrier->class_name(), carrier->size()));
}

// The layout of a compact tensor over the whole of `carrier` (tensor.h: the
// sizes must be equal). A null or released carrier is left to validate().
Layout whole_carrier_layout(const std::shared_ptr<Carrier>& carrier, const Shape& shape) {
  if (carrier && !carrier->is_released() && carrier->size() != shape.size())
    throw ValueError(fmt::format("Tensor: a shape of size {} does not cover the {} carrier's {} slots",
                                 shape.size(), carrier->class_name(), carrier->size()));
  return Layout::compact(shape);
}

// ---- autograd: report a view of a differentiable source (tensor_impl.h)
Tensor record_view(const Tensor& source, Tensor view, detail::ViewKind kind,
                   std::span<const std::int64_t> params = {}) {
  const detail::ViewHook hook = detail::view_hook.load(std::memory_order_acquire);
  if (hook && source.is_differentiable()) hook(source, view, kind, params);
  return view;
}

}  // namespace

std::atomic<detail::ViewHook> detail::view_hook{nullptr};

Tensor::Tensor(std::shared_ptr<Carrier> carrier, std::int64_t offset, Layout layout) {
  validate(carrier, offset, layout);
  impl_ = std::make_shared<detail::TensorImpl>();
  impl_->carrier = std::move(carrier);
  impl_->offset = offset;
  impl_->layout = std::move(layout);
}

Tensor::Tensor(std::shared_ptr<Carrier> carrier, const Shape& shape)
    : Tensor(carrier, 0, whole_carrier_layout(carrier, shape)) {}


Value Tensor::at(std::span<const std::int64_t> coordinate) const {
  carrier()->require_live("Tensor.at");
  return carrier()->get_value(offset() + layout()(coordinate));
}

Value Tensor::at_ordinal(std::int64_t ordinal) const {
  carrier()->require_live("Tensor.at_ordinal");
  return carrier()->get_value(offset() + layout()(ordinal));
}

// Run by run through the carrier's range access (storage/ranges.h).
std::vector<Value> Tensor::values() const { return detail::logical_values(*this); }

void Tensor::set(std::span<const std::int64_t> coordinate, const Value& value) {
  carrier()->set_value(offset() + layout()(coordinate), value);
}

Tensor Tensor::permute(std::span<const std::int64_t> perm) const {
  return record_view(*this, Tensor(carrier(), offset(), layout().permute(perm)), detail::ViewKind::permute, perm);
}

Tensor Tensor::slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  std::int64_t delta = 0;
  Layout l = layout().slice(axis, start, stop, step, &delta);
  const std::int64_t params[] = {axis, start, stop, step};
  return record_view(*this, Tensor(carrier(), offset() + delta, std::move(l)), detail::ViewKind::slice, params);
}

Tensor Tensor::reshape(const Shape& shape) const {
  return record_view(*this, Tensor(carrier(), offset(), layout().reshape(shape)), detail::ViewKind::reshape);
}
Tensor Tensor::squeeze(std::optional<std::vector<std::int64_t>> axes) const {
  return record_view(*this, Tensor(carrier(), offset(), layout().squeeze(std::move(axes))), detail::ViewKind::squeeze);
}
Tensor Tensor::unsqueeze(std::int64_t axis) const {
  return record_view(*this, Tensor(carrier(), offset(), layout().unsqueeze(axis)), detail::ViewKind::unsqueeze);
}
Tensor Tensor::broadcast_to(const Shape& shape) const {
  return record_view(*this, Tensor(carrier(), offset(), layout().broadcast_to(shape)), detail::ViewKind::broadcast_to);
}
Tensor Tensor::as_strided(const Layout& l, std::int64_t off) const {
  return record_view(*this, Tensor(carrier(), off, l), detail::ViewKind::as_strided);
}

// ---- autograd: the plain queries (the rest is in src/autograd)
bool Tensor::is_leaf() const noexcept { return impl_->grad_fn == nullptr; }
const std::shared_ptr<Operation>& Tensor::autograd_ctx() const noexcept { return impl_->grad_fn; }
Tensor Tensor::detach() const {
  Tensor out = *this;
  out.impl_ = std::make_shared<detail::TensorImpl>();
  out.impl_->carrier = carrier();
  out.impl_->offset = offset();
  out.impl_->layout = layout();
  return out;
}

namespace {

void append_values(const Tensor& t, std::size_t axis, std::vector<std::int64_t>& coordinate, bool summarize,
                   std::int64_t edge, std::string& out) {
  if (axis == t.rank()) {
    out += t.at(coordinate).to_string();
    return;
  }
  const std::int64_t n = t.shape().extent(axis);
  const bool cut = summarize && n > 2 * edge;
  out += '[';
  bool first = true;
  for (std::int64_t k = 0; k < n; ++k) {
    if (cut && k == edge) {
      out += ", ...";
      k = n - edge - 1;
      continue;
    }
    if (!first) out += ", ";
    first = false;
    coordinate[axis] = k;
    append_values(t, axis + 1, coordinate, summarize, edge, out);
  }
  out += ']';
}

}  // namespace

std::string format_values(const Tensor& tensor, std::int64_t summarize_above, std::int64_t edge_items) {
  std::string out;
  std::vector<std::int64_t> coordinate(tensor.rank(), 0);
  const bool summarize = summarize_above >= 0 && tensor.size() > summarize_above;
  append_values(tensor, 0, coordinate, summarize, std::max<std::int64_t>(edge_items, 1), out);
  return out;
}

std::string Tensor::to_string() const {
  const std::string values = carrier()->is_released() ? "<released>" : format_values(*this);
  return fmt::format("tensor({}, dtype={}, carrier={})", values, dtype().name(), carrier()->class_name());
}

void require_dtype(const Tensor& tensor, const DType& expected, const char* what) {
  if (&tensor.dtype() != &expected)
    throw TypeError(fmt::format("{}: expected dtype {}, got {}", what, expected.name(), tensor.dtype().name()));
}

}  // namespace strideweave
