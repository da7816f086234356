// strideweave/compose.h — everyday functions composed from the registered
// operations and views (docs/composition.md).
//
// Nothing here is a new operation: the registry, its plans and every
// carrier's capabilities are unchanged. Each function is written with the
// typed operations (<strideweave/ops.h>), the pure views and the framework's
// storage copies, so it runs on every carrier that executes the operations
// it uses, and its gradient comes from autograd through those operations
// (a function that copies storage says so: it records nothing).
//
// "Recording" below means: grad mode is on and the tensor is Float32 (every
// Float32 tensor takes part in the graph, core-concepts 6.2). A function
// with a recorded path and a storage path gives the same values on both;
// the storage path is taken only when nothing would be recorded.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/carrier_class.h>
#include <strideweave/dtype.h>
#include <strideweave/export.h>
#include <strideweave/layout.h>
#include <strideweave/ops/reductions.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---- copies and conversions

// A fresh compact tensor on x's carrier class holding x's values. Recording:
// add(x, -0.0) (every value, signed zeros included, comes back bit for bit;
// a signaling NaN comes back quiet), so the gradient reaches x. Otherwise a
// storage copy, bit for bit.
Tensor clone(const Tensor& x);

// x's values as `dtype`, in a fresh compact tensor on x's carrier class
// (numpy's astype: always a copy). Same dtype: clone(x). Int32 -> Float32:
// add(x, 0.0) (each value rounded once). Bool -> Float32:
// select(x, 1.0, 0.0). Float32 -> Bool: ne(x, 0.0) (NaN is true, -0.0
// false); Int32 -> Bool: through Float32 (a nonzero integer never rounds to
// zero). To Int32 from Float32 (truncation toward zero, as numpy and torch
// do) or from Bool (0 and 1): no operation produces Int32 from those, so
// these are storage conversions (an Int32 result has no gradient); a NaN,
// an infinity or a value outside Int32 is a ValueError naming the first
// such element, before anything is allocated. A dtype that is not stored
// (Float64) is a ValueError.
Tensor astype(const Tensor& x, const SimpleDType& dtype);

// A non-destructive copy of x's values onto `destination` (a carrier of any
// class): move(storage copy of x, destination), so the move routes, their
// checks and their transaction apply (core-concepts 7; docs/storage.md,
// "Movement") and x and its carrier are untouched. The result has x's
// shape, compact, at offset 0, and is a LEAF: copy_to records nothing. (A
// recorded copy cannot be moved: the node that made it saves its result,
// which the move releases. The differentiable way across carriers is move,
// which gives its source up.) The class form makes a fresh destination of a
// shipped class (Generic, CPU; TypeError for another class: give an
// instance).
Tensor copy_to(const Tensor& x, const std::shared_ptr<Carrier>& destination);
Tensor copy_to(const Tensor& x, CarrierClass cls);

// ---- views

// x with its top-level axes reversed (numpy's .T): a view.
Tensor transpose(const Tensor& x);

// The order in which reshape reads and writes elements.
enum class ReshapeOrder {
  first_mode_fastest,  // the library's logical order (Tensor::reshape; numpy's order="F")
  row_major,           // numpy's default order="C": the last axis fastest
};
// reshape in `order`: a view when the layout allows one (always, for
// first_mode_fastest on a reshapable layout: Tensor::reshape), else a view
// of clone(x)'s values (row_major on a layout that cannot be viewed so).
// row_major is reverse(reverse(x).reshape(reverse(shape))), reverse being
// transpose: the same elements numpy's order="C" gives.
Tensor reshape(const Tensor& x, const Shape& shape, ReshapeOrder order);

// ---- joining and splitting

// numpy.concatenate: the tensors (at least one, of one rank >= 1, dtype,
// exact carrier class and placement; extents equal except along `axis`)
// joined along `axis` in a fresh compact tensor on their class. Recording:
// each tensor is scattered into zeros (scatter, so the gradient of each
// input is the gather of its block); otherwise a storage copy. TypeError for
// mixed dtypes (no promotion: astype first) or carriers; ValueError for an
// empty list, rank 0, an axis outside [-rank, rank), or other extents.
Tensor concatenate(std::span<const Tensor> tensors, std::int64_t axis = 0);
// numpy.stack: tensors of one shape joined along a new axis (in
// [-(rank+1), rank]): concatenate of unsqueezed views.
Tensor stack(std::span<const Tensor> tensors, std::int64_t axis = 0);
// numpy.split: views of x along `axis`. `sections` equal parts (ValueError
// unless the extent divides), or the parts between the sorted split
// `indices` (clamped to the extent, as numpy does).
std::vector<Tensor> split(const Tensor& x, std::int64_t sections, std::int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, std::span<const std::int64_t> indices, std::int64_t axis = 0);

// ---- statistics (Float32 results)

// reduce_sum(x, axes) / n, n the number of reduced elements (div by a
// rank-0 tensor: one rounding). A non-Float32 x is converted first
// (astype). n == 0 gives NaN, as 0/0 does.
Tensor mean(const Tensor& x, Axes axes = Axes::all(), bool keepdims = false);
// Two passes: d = x - mean(x, axes, keepdims=true), then
// reduce_sum(d * d, axes) / (n - ddof); n - ddof <= 0 gives an infinity or
// NaN, as numpy does (ValueError for ddof < 0).
Tensor var(const Tensor& x, Axes axes = Axes::all(), std::int64_t ddof = 0, bool keepdims = false);
// sqrt(var(...)) (named stddev: std is the C++ standard library's namespace).
Tensor stddev(const Tensor& x, Axes axes = Axes::all(), std::int64_t ddof = 0, bool keepdims = false);

// softmax along `axis`: e = exp(x - m), e / sum(e) with m the detached
// maximum along the axis (softmax does not depend on m, so the gradient is
// exact); log_softmax: (x - m) - log(sum(e)). Float32 only (the operations'
// own TypeError otherwise).
Tensor softmax(const Tensor& x, std::int64_t axis = -1);
Tensor log_softmax(const Tensor& x, std::int64_t axis = -1);

// ---- numbers beside tensors in comparisons

// The rank-0 tensor on like's carrier class that a number becomes beside
// `like` in a comparison operator (eq, ne, lt, le have no weak-scalar
// form): the number as like's dtype when it is exactly representable there
// (0 beside Float32 is 0.0; 2.0 beside Int32 is 2), else a TypeError saying
// why (0.5 beside Int32; 2**24 + 1 beside Float32; a number beside Bool:
// compare with True or False). The comparison then has the policy's own
// rules (comparisons admit Float32 operands).
Tensor comparison_scalar(const Tensor& like, const WeakScalar& value);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
