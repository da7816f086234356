// CPU's caching allocator (src/carriers/cpu/block_cache.h): released result
// storage is kept idle and handed out again; under AddressSanitizer the
// cache is off so that a use after free is still reported.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "carriers/cpu/block_cache.h"

namespace {

using namespace strideweave;
using carriers::cpu::cache_idle_bytes;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheEnabled = false;
#else
constexpr bool kCacheEnabled = true;
#endif

TEST(CpuBlockCache, ReleasedStorageIsKeptIdleAndReused) {
  // 3000 floats round up to the 16 KiB size class.
  constexpr std::int64_t n = 3000;
  constexpr std::size_t kClassBytes = 16384;
  auto first = CPU::create(n);
  const std::size_t before = cache_idle_bytes();
  first->release();
  first.reset();
  const std::size_t idle = cache_idle_bytes();
  if (!kCacheEnabled) {
    EXPECT_EQ(idle, 0u);
    return;
  }
  EXPECT_EQ(idle, before + kClassBytes);
  auto second = CPU::create(n);  // served from the idle block
  EXPECT_EQ(cache_idle_bytes(), before);
  // Reused storage is zeroed like fresh storage unless `empty` is asked.
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(second->get_value(i).f, 0.0f);
}

TEST(CpuBlockCache, WrappedMemoryNeverEntersTheCache) {
  std::vector<float> mine(4096, 1.0f);
  const std::size_t before = cache_idle_bytes();
  auto wrapped = CPU::wrap(mine.data(), static_cast<std::int64_t>(mine.size()));
  wrapped->release();
  wrapped.reset();
  EXPECT_EQ(cache_idle_bytes(), before);
  EXPECT_EQ(mine[0], 1.0f);
}

}  // namespace
