// Sparse before-images of host memory (host_image.h).
#include "movement/host_image.h"

#include <algorithm>
#include <cstring>

#include "storage/ranges.h"

namespace strideweave::detail {

void HostImage::capture(std::byte* base, std::size_t at, std::size_t n) {
  base_ = base;
  for (std::size_t o = 0; o < n; o += kImageBlockBytes) {
    const std::size_t length = std::min(kImageBlockBytes, n - o);
    Block block{at + o, length, all_zero(base + at + o, length), bytes_.size()};
    if (!block.zero) bytes_.insert(bytes_.end(), base + at + o, base + at + o + length);
    blocks_.push_back(block);
  }
}

void HostImage::restore() const noexcept {
  if (!base_) return;
  const HostSpan now = RangeAccess::host(*destination_);  // null once released
  if (static_cast<std::byte*>(now.data) != base_) return;
  // Newest first: a block captured twice (a broadcast layout writes a slot
  // more than once) ends with its first, original image.
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    const Block& b = *it;
    if (b.zero)
      std::memset(base_ + b.at, 0, b.length);
    else
      std::memcpy(base_ + b.at, bytes_.data() + b.image_at, b.length);
  }
}

}  // namespace strideweave::detail
