// strideweave/tensor.h — Tensor (erased face) and TypedTensor<T> (typed face)
// (core-concepts.md section 4).
//
// A Tensor is a handle to one tensor value: a carrier, an offset and a Layout
// mapping logical coordinates to slot indices (offset + layout(coordinate)).
// Copying a Tensor copies the handle: both name the same tensor (identity is
// what autograd attaches to). Views (permute, slice, ...) are new tensors over
// the same carrier. A Tensor keeps its carrier alive and never releases it.
//
// TypedTensor<T> is the same value with its dtype in the type: converting
// between the faces never copies; the typed face refuses a Tensor of another
// dtype with TypeError.
//
// Logical order of elements is the Layout's integer-key order (first mode
// fastest), see docs/layout.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/dtype.h>
#include <strideweave/layout.h>
#include <strideweave/value.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct TensorImpl;
struct TensorAccess;
}  // namespace detail
class Operation;  // <strideweave/autograd.h>

class Tensor {
 public:
  // Validates: carrier non-null (TypeError), carrier dtype a stored
  // SimpleDType, offset >= 0 and offset + layout.cosize() <= carrier.size()
  // (ValueError). A released carrier -> RuntimeError.
  Tensor(std::shared_ptr<Carrier> carrier, std::int64_t offset, Layout layout);
  // A compact tensor over the whole of `carrier` (size must equal shape size).
  Tensor(std::shared_ptr<Carrier> carrier, const Shape& shape);

  const std::shared_ptr<Carrier>& carrier() const noexcept;
  std::int64_t offset() const noexcept;
  const Layout& layout() const noexcept;
  const Shape& shape() const noexcept { return layout().shape(); }
  std::size_t rank() const noexcept { return layout().rank(); }
  const SimpleDType& dtype() const noexcept { return carrier()->dtype(); }
  std::int64_t size() const noexcept { return layout().size(); }
  CarrierClass carrier_type() const noexcept { return carrier()->exact_class(); }
  // True iff the logical dtype is exactly Float32 (core-concepts.md 6.1).
  bool is_differentiable() const noexcept { return &dtype() == &DType::Float32(); }
  // Identity: two handles naming the same tensor.
  bool is(const Tensor& other) const noexcept { return impl_ == other.impl_; }
  // An opaque key of that identity (equal exactly when is()): what a binding
  // uses to give one tensor one object. Valid while some handle lives.
  const void* identity() const noexcept { return impl_.get(); }
  // One opaque word per tensor for a language binding (Python keeps the
  // tensor's one object here, so finding it is a read, not a hash lookup):
  // null until set; shared by every handle of this tensor and by no other
  // tensor; never read, owned or freed by the library. Not synchronised:
  // the binding serialises its own use (Python: under the GIL).
  void* binding_slot() const noexcept;
  void set_binding_slot(void* value) const noexcept;

  // Element access by one integer key per top-level mode (ValueError for a
  // bad coordinate; RuntimeError on a released carrier).
  Value at(std::span<const std::int64_t> coordinate) const;
  Value at(std::initializer_list<std::int64_t> coordinate) const {
    return at(std::span<const std::int64_t>(coordinate.begin(), coordinate.size()));
  }
  // Element by logical ordinal (first mode fastest).
  Value at_ordinal(std::int64_t ordinal) const;
  // Every element in logical order.
  std::vector<Value> values() const;
  // Write one element through the carrier's versioned set_value.
  void set(std::span<const std::int64_t> coordinate, const Value& value);

  // Pure views (core-concepts.md 4.4-4.5); errors as in Layout.
  Tensor permute(std::span<const std::int64_t> perm) const;
  Tensor permute(std::initializer_list<std::int64_t> perm) const {
    return permute(std::span<const std::int64_t>(perm.begin(), perm.size()));
  }
  Tensor slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const;
  Tensor reshape(const Shape& shape) const;
  Tensor squeeze(std::optional<std::vector<std::int64_t>> axes = std::nullopt) const;
  Tensor unsqueeze(std::int64_t axis) const;
  Tensor broadcast_to(const Shape& shape) const;
  // New offset and layout over the same carrier (bounds re-validated).
  Tensor as_strided(const Layout& layout, std::int64_t offset) const;

  // numpy-like text with the values, nested by top-level mode (axis 0 the
  // outermost list), abbreviated with "..." beyond 1000 elements:
  //   tensor([[1.0, 2.0], [3.0, 4.0]], dtype=float32, carrier=CPU)
  // A released carrier prints as tensor(<released>, ...). Never throws for a
  // live tensor.
  std::string to_string() const;

  // ---- automatic differentiation (core-concepts.md 6; docs/autograd.md) --
  // Defined in src/autograd except the plain queries. Grad mode, Operation
  // and the functional grad() live in <strideweave/autograd.h>.
  //
  // There is no opt-in flag: a differentiable tensor takes part in every
  // graph built while grad mode is on (core-concepts 6.2). requires_grad()
  // is a read-only report of that rule, for PyTorch habits: true iff the
  // tensor is differentiable.
  bool requires_grad() const noexcept { return is_differentiable(); }
  // No autograd_ctx: created by the user, by an unrecorded call (grad mode
  // off, no differentiable input), or detach().
  bool is_leaf() const noexcept;
  // The Operation that produced this tensor (null for a leaf); grad_fn is
  // PyTorch's name for it.
  const std::shared_ptr<Operation>& autograd_ctx() const noexcept;
  const std::shared_ptr<Operation>& grad_fn() const noexcept { return autograd_ctx(); }
  // A non-null Operation on a non-differentiable tensor -> RuntimeError;
  // null makes the tensor a leaf again.
  void set_autograd_ctx(std::shared_ptr<Operation> operation);
  // The accumulated gradient (fresh storage of this tensor's carrier class),
  // or nullopt. RuntimeError on a non-differentiable tensor.
  std::optional<Tensor> grad() const;
  // nullopt clears it; a Tensor must be Float32 (TypeError), have this
  // tensor's shape (ValueError) and live on its carrier class (TypeError);
  // a Tensor on a non-differentiable tensor -> RuntimeError.
  void set_grad(std::optional<Tensor> gradient);
  // retain = true: a non-leaf keeps the cotangent every later backward
  // brings it in .grad (leaf accumulation semantics); false turns that off.
  // No effect on a leaf (it always accumulates). RuntimeError on a
  // non-differentiable tensor.
  void retain_grad(bool retain = true);
  // A new handle on the same storage, offset and layout without autograd
  // state (a leaf).
  Tensor detach() const;
  // Reverse-mode accumulation from this tensor (docs/autograd.md):
  // gradient = nullopt is the implicit unit cotangent, allowed only when the
  // shape is a single top-level mode of extent 1 (else ValueError). An
  // explicit cotangent must be Float32 (TypeError), of this tensor's shape
  // (ValueError) and on its carrier class (TypeError). RuntimeError on a
  // non-differentiable tensor, on a saved input modified in place, and on a
  // graph released by an earlier backward without retain_graph (the message
  // names retain_graph=True). Every differentiable leaf reached receives
  // .grad.
  void backward(std::optional<Tensor> gradient = std::nullopt, bool retain_graph = false) const;
  // ---- end automatic differentiation ----------------------------------------

 private:
  friend struct detail::TensorAccess;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) noexcept : impl_(std::move(impl)) {}
  std::shared_ptr<detail::TensorImpl> impl_;
};

namespace detail {
// Internal: the shared state behind a Tensor handle (one per tensor; every
// handle of it points here). Defined in this header only so that the
// accessors above are inline (a call out of line for each of carrier(),
// offset() and layout() was a measurable share of a tiny operation); code
// outside the library must not touch it. Autograd (src/autograd) attaches
// its per-tensor state here.
struct TensorImpl {
  std::shared_ptr<Carrier> carrier;
  std::int64_t offset = 0;
  Layout layout;
  void* binding_slot = nullptr;  // Tensor::binding_slot(): a language binding's word

  // ---- autograd state (owned by src/autograd; docs/autograd.md) ----------
  bool retains_grad = false;                 // a non-leaf after retain_grad(true)
  std::shared_ptr<Operation> grad_fn;        // the Operation that produced this tensor (autograd_ctx)
  std::optional<Tensor> grad;                // accumulated gradient
  std::uint32_t grad_output = 0;             // which result of grad_fn this tensor is
  // ---- end autograd state -------------------------------------------------
};
}  // namespace detail

inline const std::shared_ptr<Carrier>& Tensor::carrier() const noexcept { return impl_->carrier; }
inline std::int64_t Tensor::offset() const noexcept { return impl_->offset; }
inline const Layout& Tensor::layout() const noexcept { return impl_->layout; }
inline void* Tensor::binding_slot() const noexcept { return impl_->binding_slot; }
inline void Tensor::set_binding_slot(void* value) const noexcept { impl_->binding_slot = value; }

// The values of `tensor` as nested lists (axis 0 the outermost; a bare
// value for rank 0), each value as Value::to_string() writes it. When
// `summarize_above` >= 0 and the tensor has more elements than that, every
// axis longer than 2 * edge_items shows its first and last `edge_items`
// entries around "..." (numpy's threshold and edgeitems).
std::string format_values(const Tensor& tensor, std::int64_t summarize_above = 1000, std::int64_t edge_items = 3);

// Element type <-> dtype for the typed face.
// The C++ element types a tensor stores: float (Float32), std::int32_t
// (Int32) and bool (Bool).
template <class T>
inline constexpr bool is_element_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, bool>;

template <class T>
struct dtype_traits {
  static_assert(is_element_type_v<T>,
                "strideweave: a tensor stores float (Float32), std::int32_t (Int32) or bool (Bool) elements; "
                "write float literals with an f suffix (1.0f) and convert double or 64-bit values first");
};
template <>
struct dtype_traits<float> {
  static const SimpleDType& dtype() { return DType::Float32(); }
};
template <>
struct dtype_traits<std::int32_t> {
  static const SimpleDType& dtype() { return DType::Int32(); }
};
template <>
struct dtype_traits<bool> {
  static const SimpleDType& dtype() { return DType::Bool(); }
};

// Throws TypeError unless `tensor` has dtype `expected` (message names
// `what`, the expected and the actual dtype).
void require_dtype(const Tensor& tensor, const DType& expected, const char* what);

template <class T>
class TypedTensor {
 public:
  // Adopts `tensor` without copying; TypeError if its dtype is not T's.
  explicit TypedTensor(Tensor tensor) : tensor_(std::move(tensor)) {
    require_dtype(tensor_, dtype_traits<T>::dtype(), "TypedTensor");
  }
  // The erased face of the same value.
  const Tensor& erased() const noexcept { return tensor_; }
  operator const Tensor&() const noexcept { return tensor_; }  // NOLINT(google-explicit-constructor)

  static const SimpleDType& dtype() { return dtype_traits<T>::dtype(); }
  const Shape& shape() const noexcept { return tensor_.shape(); }
  std::int64_t size() const noexcept { return tensor_.size(); }
  T at(std::initializer_list<std::int64_t> coordinate) const { return tensor_.at(coordinate).template as<T>(); }
  T at_ordinal(std::int64_t ordinal) const { return tensor_.at_ordinal(ordinal).template as<T>(); }
  std::vector<T> values() const {
    std::vector<T> out;
    out.reserve(static_cast<std::size_t>(tensor_.size()));
    for (const Value& v : tensor_.values()) out.push_back(v.template as<T>());
    return out;
  }

 private:
  Tensor tensor_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
