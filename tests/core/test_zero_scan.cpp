// The before-image's zero scan (issue 20 step 4; movement/host_image.h,
// docs/storage.md "Routing"): detail::all_zero answers the same on every
// Highway target this build contains and this CPU can run (forced with
// hwy::SetSupportedTargetsForTest, as CpuSimdTargets does), for a single
// non-zero byte at every position of short blocks (the vector body and the
// scalar tail) and in a 64 KiB block.
#include <gtest/gtest.h>

#include <hwy/targets.h>

#include <cstddef>
#include <string>
#include <vector>

#include "movement/host_image.h"

namespace {

using strideweave::detail::all_zero;

struct ForcedTarget {
  explicit ForcedTarget(std::int64_t target) { choose(target); }
  ~ForcedTarget() { choose(0); }
  static void choose(std::int64_t target) {
    hwy::SetSupportedTargetsForTest(target);  // 0: the real CPU again
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
};

TEST(MoveDispatch_ZeroScanTargets, EveryTargetFindsEveryNonZeroByte) {
  std::vector<std::string> checked;
  for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const ForcedTarget forced(target);
    checked.push_back(hwy::TargetName(target));
    SCOPED_TRACE(hwy::TargetName(target));
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{255},
                          std::size_t{257}, std::size_t{1000}}) {
      std::vector<std::byte> block(n + 1, std::byte{0});  // one guard byte past the end, never read as part
      block[n] = std::byte{0xFF};
      EXPECT_TRUE(all_zero(block.data(), n)) << n;
      for (std::size_t at = 0; at < n; ++at) {
        block[at] = std::byte{0x01};
        EXPECT_FALSE(all_zero(block.data(), n)) << n << " at " << at;
        block[at] = std::byte{0};
      }
    }
    std::vector<std::byte> image_block(std::size_t{64} << 10, std::byte{0});
    EXPECT_TRUE(all_zero(image_block.data(), image_block.size()));
    image_block.back() = std::byte{0x80};
    EXPECT_FALSE(all_zero(image_block.data(), image_block.size()));
    // Unaligned starts.
    EXPECT_FALSE(all_zero(image_block.data() + 3, image_block.size() - 3));
    EXPECT_TRUE(all_zero(image_block.data() + 3, image_block.size() - 4));
  }
  RecordProperty("targets", ::testing::PrintToString(checked));
  EXPECT_GE(checked.size(), 2u) << ::testing::PrintToString(checked);
}

}  // namespace
