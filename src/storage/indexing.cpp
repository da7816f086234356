// Basic indexing as views. See include/strideweave/indexing.h.
#include <strideweave/errors.h>
#include <strideweave/indexing.h>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace strideweave {
namespace {

// Python's slice.indices for a positive step: a missing bound is the end,
// a negative one counts from the end, and both clamp to [0, extent].
std::int64_t bound(std::optional<std::int64_t> value, std::int64_t missing, std::int64_t extent) {
  if (!value) return missing;
  const std::int64_t v = *value < 0 ? *value + extent : *value;
  return std::clamp<std::int64_t>(v, 0, extent);
}

}  // namespace

Tensor index(const Tensor& t, std::span<const IndexItem> items) {
  using Kind = IndexItem::Kind;
  std::size_t consuming = 0;
  bool ellipsis = false;
  for (const IndexItem& item : items) {
    if (item.kind() == Kind::ELLIPSIS) {
      if (ellipsis) throw IndexError("Tensor index: an index can only have a single ellipsis ('...')");
      ellipsis = true;
    } else if (item.kind() != Kind::NEW_AXIS) {
      ++consuming;
    }
    if (item.kind() == Kind::SLICE && item.step() <= 0)
      throw ValueError(
          fmt::format("Tensor index: a slice step must be positive (strides are non-negative), got {}", item.step()));
  }
  if (consuming > t.rank())
    throw IndexError(fmt::format("Tensor index: too many indices for a tensor of rank {}: {} were indexed", t.rank(),
                                 consuming));
  // Every bound is checked against the extents before the first view is made.
  {
    std::size_t axis = 0;
    for (const IndexItem& item : items) {
      if (item.kind() == Kind::ELLIPSIS) axis += t.rank() - consuming;
      if (item.kind() == Kind::AT) {
        const std::int64_t extent = t.shape().extent(axis);
        const std::int64_t i = *item.start();
        if (i < -extent || i >= extent)
          throw IndexError(fmt::format("Tensor index: index {} is out of bounds for axis {} with extent {}", i, axis,
                                       extent));
      }
      if (item.kind() == Kind::AT || item.kind() == Kind::SLICE) ++axis;
    }
  }
  Tensor out = t;
  std::size_t axis = 0;
  std::vector<std::int64_t> removed;
  for (const IndexItem& item : items) {
    switch (item.kind()) {
      case Kind::ELLIPSIS:
        axis += t.rank() - consuming;
        break;
      case Kind::NEW_AXIS:
        out = out.unsqueeze(static_cast<std::int64_t>(axis));
        ++axis;
        break;
      case Kind::SLICE: {
        const std::int64_t extent = out.shape().extent(axis);
        const std::int64_t start = bound(item.start(), 0, extent);
        const std::int64_t stop = std::max(start, bound(item.stop(), extent, extent));
        out = out.slice(static_cast<std::int64_t>(axis), start, stop, item.step());
        ++axis;
        break;
      }
      case Kind::AT: {
        const std::int64_t extent = out.shape().extent(axis);
        const std::int64_t i = *item.start() < 0 ? *item.start() + extent : *item.start();
        out = out.slice(static_cast<std::int64_t>(axis), i, i + 1, 1);
        removed.push_back(static_cast<std::int64_t>(axis));
        ++axis;
        break;
      }
    }
  }
  return removed.empty() ? out : out.squeeze(removed);
}

}  // namespace strideweave
