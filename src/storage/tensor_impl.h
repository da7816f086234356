// Internal: the shared state behind a Tensor handle. Autograd (src/autograd)
// attaches its per-tensor state here.
#pragma once

#include <atomic>
#include <span>

#include <strideweave/tensor.h>

namespace strideweave::detail {

struct TensorImpl {
  std::shared_ptr<Carrier> carrier;
  std::int64_t offset = 0;
  Layout layout;

  // ---- autograd state (owned by src/autograd; docs/autograd.md) ----------
  bool requires_grad = false;                // a leaf marked by set_requires_grad(true)
  bool retains_grad = false;                 // a non-leaf after retain_grad()
  std::shared_ptr<autograd::Node> grad_fn;   // the node that produced this tensor
  std::optional<Tensor> grad;                // accumulated gradient
  std::uint32_t grad_output = 0;             // which result of grad_fn this tensor is (definition nodes)
  bool tracks_grad() const noexcept { return requires_grad || grad_fn != nullptr; }
  // ---- end autograd state -------------------------------------------------
};

// Access to a handle's state for src/core and src/autograd.
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) noexcept { return *t.impl_; }
  static const std::shared_ptr<TensorImpl>& shared(const Tensor& t) noexcept { return t.impl_; }
};

// ---- the view hook (autograd) ----------------------------------------------
// Core never calls autograd: src/autograd installs this hook the first time a
// tensor is marked as requiring a gradient. Each view method then reports a
// view of a source that tracks gradients (kind plus its parameters: permute
// -> the permutation; slice -> axis, start, stop, step; the others -> none)
// so that autograd can attach a view node to `view`.
enum class ViewKind : std::uint8_t { permute, slice, reshape, squeeze, unsqueeze, broadcast_to, as_strided };
using ViewHook = void (*)(const Tensor& source, const Tensor& view, ViewKind kind,
                          std::span<const std::int64_t> params);
extern std::atomic<ViewHook> view_hook;
// ---- end view hook -----------------------------------------------------------

}  // namespace strideweave::detail
