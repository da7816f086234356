// CPU's caching allocator. See block_cache.h. Written here rather than taken
// from a library because it must follow the carrier's size classes and
// release rules exactly; it is a few dozen lines over malloc.
#include "carriers/cpu/block_cache.h"

#include <sys/mman.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SW_CACHE_DISABLED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_CACHE_DISABLED 1
#endif
#endif

namespace strideweave::carriers::cpu {
namespace {

constexpr std::size_t kMinClass = 6;   // 64 bytes
constexpr std::size_t kClasses = 40;   // up to 2^45 bytes
constexpr std::size_t kHuge = std::size_t{2} << 20;

std::size_t class_of(std::size_t bytes) {
  std::size_t c = kMinClass;
  while ((std::size_t{1} << c) < bytes) ++c;
  return c;
}

std::size_t limit_from_env() {
#ifdef SW_CACHE_DISABLED
  return 0;
#else
  const char* v = std::getenv("STRIDEWEAVE_CPU_CACHE_BYTES");
  if (!v) return std::size_t{1} << 30;
  try {
    return static_cast<std::size_t>(std::stoull(v));
  } catch (...) {
    return std::size_t{1} << 30;
  }
#endif
}

struct Cache {
  std::mutex mutex;
  std::array<std::vector<void*>, kClasses> free;
  std::size_t idle = 0;
  std::size_t limit = limit_from_env();
};

Cache& cache() {
  static Cache* c = new Cache();  // lives for the program: blocks may be released during static destruction
  return *c;
}

void* system_allocate(std::size_t size) {
  const std::size_t align = size >= kHuge ? kHuge : 64;
  void* p = std::aligned_alloc(align, size);
  if (!p) throw std::bad_alloc();
  if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

}  // namespace

void* cache_allocate(std::size_t bytes, bool zero) {
  const std::size_t c = class_of(bytes == 0 ? 1 : bytes);
  if (c >= kClasses) throw std::bad_alloc();
  const std::size_t size = std::size_t{1} << c;
  void* p = nullptr;
  {
    Cache& k = cache();
    std::lock_guard lock(k.mutex);
    if (!k.free[c].empty()) {
      p = k.free[c].back();
      k.free[c].pop_back();
      k.idle -= size;
    }
  }
  if (!p) p = system_allocate(size);
  if (zero) std::memset(p, 0, bytes);
  return p;
}

void cache_release(void* block, std::size_t bytes) noexcept {
  if (!block) return;
  const std::size_t c = class_of(bytes == 0 ? 1 : bytes);
  const std::size_t size = std::size_t{1} << c;
  Cache& k = cache();
  {
    std::lock_guard lock(k.mutex);
    if (k.idle + size <= k.limit) {
      try {
        k.free[c].push_back(block);
        k.idle += size;
        return;
      } catch (...) {
      }
    }
  }
  std::free(block);
}

std::size_t cache_idle_bytes() noexcept {
  Cache& k = cache();
  std::lock_guard lock(k.mutex);
  return k.idle;
}

}  // namespace strideweave::carriers::cpu
