// strideweave/indexing.h — basic indexing: numpy's integer, slice, new-axis
// and ellipsis items, as views (docs/layout.md, "Indexing").
//
// index(t, items) applies the items to t's axes from the first, the way
// numpy's basic indexing and Python's `t[...]` do. Python's Tensor.__getitem__
// is this function: int -> IndexItem::at, slice -> IndexItem::slice, None ->
// IndexItem::new_axis, ... -> IndexItem::ellipsis.
//  - at(i) selects position i (negative counts from the end) and removes the
//    axis. IndexError when i is outside [-extent, extent).
//  - slice(start, stop, step) keeps positions start, start + step, ... before
//    stop. A missing start or stop is the axis's end. Negative values count
//    from the end, and values outside the axis clamp to it, as Python's
//    slices do. step must be positive (ValueError): strides are never
//    negative.
//  - new_axis() inserts an axis of extent 1 and consumes none.
//  - ellipsis() stands for as many full slices as the other items leave. At
//    most one (IndexError). Axes no item reaches are kept whole.
// IndexError when the items consume more axes than t has. The result is a
// view over t's carrier (no copy) made of the pure views slice, squeeze and
// unsqueeze, so autograd records it as those views. A failed call makes
// nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include <strideweave/export.h>
#include <strideweave/tensor.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class IndexItem {
 public:
  enum class Kind : std::uint8_t { AT, SLICE, NEW_AXIS, ELLIPSIS };

  static IndexItem at(std::int64_t i) noexcept { return IndexItem(Kind::AT, i, std::nullopt, 1); }
  static IndexItem slice(std::optional<std::int64_t> start = std::nullopt,
                         std::optional<std::int64_t> stop = std::nullopt, std::int64_t step = 1) noexcept {
    return IndexItem(Kind::SLICE, start, stop, step);
  }
  static IndexItem new_axis() noexcept { return IndexItem(Kind::NEW_AXIS, std::nullopt, std::nullopt, 1); }
  static IndexItem ellipsis() noexcept { return IndexItem(Kind::ELLIPSIS, std::nullopt, std::nullopt, 1); }

  Kind kind() const noexcept { return kind_; }
  // at: the position; slice: its start (nullopt: the axis's start).
  std::optional<std::int64_t> start() const noexcept { return start_; }
  // slice: its stop (nullopt: the axis's end).
  std::optional<std::int64_t> stop() const noexcept { return stop_; }
  std::int64_t step() const noexcept { return step_; }

 private:
  IndexItem(Kind kind, std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step) noexcept
      : kind_(kind), start_(start), stop_(stop), step_(step) {}
  Kind kind_;
  std::optional<std::int64_t> start_, stop_;
  std::int64_t step_;
};

Tensor index(const Tensor& t, std::span<const IndexItem> items);
inline Tensor index(const Tensor& t, std::initializer_list<IndexItem> items) {
  return index(t, std::span<const IndexItem>(items.begin(), items.size()));
}

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
