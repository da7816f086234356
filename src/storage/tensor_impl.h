// Internal: the shared state behind a Tensor handle. Autograd (src/autograd)
// attaches its per-tensor state here.
#pragma once

#include <atomic>
#include <span>

#include <strideweave/tensor.h>

namespace strideweave::detail {

// TensorImpl, the shared state behind a handle, is defined in <strideweave/tensor.h>.

// Access to a handle's state for src/core and src/autograd.
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) noexcept { return *t.impl_; }
  static const std::shared_ptr<TensorImpl>& shared(const Tensor& t) noexcept { return t.impl_; }
  // A lent handle of `t`'s tensor: the same tensor (is(), identity() and
  // every accessor agree), held without a share of its ownership, so that
  // making, copying and dropping it touches no reference count. Valid only
  // while `t` (or another owning handle) lives: a front-end call lends its
  // caller's operands to the kernel it runs (frontend::KernelOperands::lend)
  // and never lets a lent handle outlive the call.
  static Tensor lend(const Tensor& t) noexcept {
    return Tensor(std::shared_ptr<TensorImpl>(std::shared_ptr<TensorImpl>(), t.impl_.get()));
  }
  // Whether `t` is a lent handle (lend()).
  static bool is_lent(const Tensor& t) noexcept { return t.impl_ && t.impl_.use_count() == 0; }
};

// ---- the view hook (autograd) ----------------------------------------------
// Core never calls autograd: the library bootstrap installs this hook. Each
// view method of a differentiable (Float32) source then reports the view
// (kind plus its parameters: permute -> the permutation; slice -> axis,
// start, stop, step; the others -> none) so that autograd can record the
// view as an Operation when grad mode is on.
enum class ViewKind : std::uint8_t { permute, slice, reshape, squeeze, unsqueeze, broadcast_to, as_strided };
using ViewHook = void (*)(const Tensor& source, const Tensor& view, ViewKind kind,
                          std::span<const std::int64_t> params);
extern std::atomic<ViewHook> view_hook;
// ---- end view hook -----------------------------------------------------------

}  // namespace strideweave::detail
