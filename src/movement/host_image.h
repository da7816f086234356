// Internal: sparse before-images of host memory, and the framework's host
// copy of a move (docs/storage.md, "Movement": "Before-image", "Routing").
//
// A move that overwrites a destination which already held storage must be
// able to put it back (core-concepts 7.1: the source is released only at a
// successful commit, and a failed move leaves both carriers as they were).
// For host memory the image is kept in blocks of kImageBlockBytes; a block
// that reads as all zero (a fresh carrier's untouched pages) is recorded as
// zero and not copied, so imaging a fresh destination costs one read of it.
// When the framework itself copies between two host-memory carriers, the
// image is captured block by block just ahead of the copy (capture_and_copy):
// the destination block is then in cache when it is overwritten, and a move
// into a fresh carrier costs about one memcpy (docs/performance.md, "Moves").
#pragma once

#include <strideweave/export.h>
#include <strideweave/move_operation.h>
#include <strideweave/tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strideweave::detail {

inline constexpr std::size_t kImageBlockBytes = std::size_t{64} << 10;

// Whether n bytes at p are all zero (Highway, dispatched on the running
// CPU: movement/zero_scan.cpp).
STRIDEWEAVE_TEST_API bool all_zero(const std::byte* p, std::size_t n) noexcept;

class HostImage {
 public:
  // An image of `destination`'s host memory (the carrier must outlive the
  // image's restore; the move transaction holds it).
  explicit HostImage(const Carrier& destination) noexcept : destination_(&destination) {}
  // Records bytes [at, at + n) of the memory at `base`, the destination's
  // host memory (base is fixed by the first capture; every capture must name
  // the same base).
  void capture(std::byte* base, std::size_t at, std::size_t n);
  // Writes back every captured range, newest first (so a range captured
  // twice ends as it was first captured; zero blocks are zero-filled).
  // Cannot fail. Does nothing when the destination was released meanwhile
  // or its host memory is no longer at `base`: that memory is no longer
  // the destination's (a released CPU carrier's block may already belong
  // to a new carrier), and a released destination has nothing to restore.
  void restore() const noexcept;

 private:
  struct Block {
    std::size_t at = 0;
    std::size_t length = 0;
    bool zero = false;
    std::size_t image_at = 0;  // into bytes_, when !zero
  };
  const Carrier* destination_;
  std::byte* base_ = nullptr;
  std::vector<Block> blocks_;
  std::vector<std::byte> bytes_;
};

// The framework's copy of ElementwiseMoveOperation between two carriers
// that are both host memory: the tensor's logical runs (for_each_run), each
// one memcpy per progress window, from source slot tensor.offset() + i to
// destination slot out_offset + i. When `image` is not null each destination
// block is captured into it just before it is overwritten, so a failure part
// way (a progress callback's exception) can restore exactly what was
// written. Progress is reported per window of logical values, as the
// elementwise fallback does.
void copy_host_runs(const Tensor& tensor, const HostSpan& source, const HostSpan& destination, std::int64_t out_offset,
                    MoveContext& context, HostImage* image);

}  // namespace strideweave::detail
