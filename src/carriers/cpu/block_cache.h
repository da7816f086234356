// Internal: CPU's caching allocator for result storage.
//
// Fresh results of small and medium tensors would otherwise pay the system
// allocator and, for large blocks, first-touch page faults on every
// operation. Freed blocks are kept in per-size-class free lists (powers of two
// from 64 bytes) and handed out again; the cache holds at most
// STRIDEWEAVE_CPU_CACHE_BYTES bytes (default 1 GiB; 0 disables it) and
// frees the largest idle blocks beyond that. Blocks are 64-byte aligned;
// blocks of 2 MiB and more are 2 MiB aligned and advised for transparent huge
// pages. Thread-safe. Disabled under AddressSanitizer so that use after free
// is still detected.
#pragma once

#include <strideweave/export.h>

#include <cstddef>

namespace strideweave::carriers::cpu {

// A block of at least `bytes` bytes (64-byte aligned); never null
// (std::bad_alloc). `zero` clears the requested bytes.
STRIDEWEAVE_TEST_API void* cache_allocate(std::size_t bytes, bool zero);
// Returns a block obtained from cache_allocate(bytes).
STRIDEWEAVE_TEST_API void cache_release(void* block, std::size_t bytes) noexcept;
// Bytes currently idle in the cache (diagnostics and tests).
STRIDEWEAVE_TEST_API std::size_t cache_idle_bytes() noexcept;

}  // namespace strideweave::carriers::cpu
