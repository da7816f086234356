// Internal: the framework's range access to carriers, and the copies built on
// it (docs/storage.md, "Ranges").
//
// RangeAccess reaches a carrier's protected range hooks and host memory
// WITHOUT checks or a version step: its callers validated liveness, bounds,
// mutability and dtypes, and step the version themselves (once per public
// mutation). A run is read or written through the class's host memory when
// it has one (memcpy, cannot fail), else through read_range / write_range
// (whose defaults go slot by slot).
//
// The tensor helpers below walk a Layout as a sequence of contiguous runs
// (for_each_run), so a compact tensor is one run, a row-strided view one run
// per row, and only a layout whose fastest leaf has a stride other than 1
// degenerates to runs of one slot.
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/export.h>
#include <strideweave/layout.h>
#include <strideweave/tensor.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace strideweave::detail {

// Bytes of one slot of `dtype` in host memory (4 for Float32/Int32, sizeof(bool)).
std::size_t host_element_bytes(const SimpleDType& dtype) noexcept;
// Host memory <-> Values (dtype taken from the span; Value kinds are trusted).
void host_to_values(const HostSpan& host, std::int64_t first, std::int64_t count, Value* out) noexcept;
void values_to_host(const HostSpan& host, std::int64_t first, std::span<const Value> values) noexcept;
// Bytes a class's byte hook returned, made a valid host representation: a
// Bool slot is one byte 0 or 1 (a bool holding another byte is undefined
// behaviour), and a hook may hand back any non-zero byte for true
// (uninitialised device memory, a provider's bytes), so Bool runs are
// normalised as the Value path decodes them; other dtypes are unchanged.
void normalize_hook_bytes(const SimpleDType& dtype, std::byte* bytes, std::int64_t count) noexcept;

struct RangeAccess {
  // The carrier's host memory; null when it has none or is released.
  static HostSpan host(const Carrier& carrier) noexcept {
    return carrier.is_released() ? HostSpan{} : carrier.host_storage();
  }
  // Unchecked, un-versioned run access (host memory, else the hooks).
  static void read(const Carrier& carrier, std::int64_t first, std::int64_t count, Value* out);
  static void write(Carrier& carrier, std::int64_t first, std::span<const Value> values);
  // Unchecked run access in host representation (Carrier::read_bytes):
  // host memory, else the class's byte hook, else its Value hooks converted
  // (TypeError, naming `what`, for a Value of another kind).
  static void read_bytes(const Carrier& carrier, std::int64_t first, std::int64_t count, std::byte* out,
                         const char* what);
  // Its write counterpart, unchecked, un-versioned and not failure-atomic
  // (the caller holds a before-image): host memory, else the class's byte
  // hook, else its Value hooks converted.
  static void write_bytes(Carrier& carrier, std::int64_t first, std::int64_t count, const std::byte* data);
  // The range hooks themselves (tests and providers' defaults).
  static void read_hook(const Carrier& carrier, std::int64_t first, std::int64_t count, Value* out) {
    carrier.read_range(first, count, out);
  }
  static void write_hook(Carrier& carrier, std::int64_t first, std::span<const Value> values) {
    carrier.write_range(first, values);
  }
  static bool write_bytes_hook(Carrier& carrier, std::int64_t first, std::int64_t count, const std::byte* data) {
    return carrier.write_range_bytes(first, count, data);
  }
  // One version step (a committed framework write).
  static void step_version(Carrier& carrier) noexcept { carrier.version_.fetch_add(1); }
  // Whether public writes to the carrier are guarded (provider_writes.h):
  // then a framework write goes through write_slots, which honours the guard.
  static bool guarded(const Carrier& carrier) noexcept {
    return carrier.provider_guard_.load(std::memory_order_acquire) != 0;
  }
};

// Calls f(ordinal, index, length) for each maximal contiguous run of
// `layout`, in logical order: logical ordinals [ordinal, ordinal + length)
// are slots [index, index + length) relative to the tensor's offset.
template <class F>
void for_each_run(const Layout& layout, F&& f) {
  const std::int64_t n = layout.size();
  if (n == 0) return;
  const Layout c = layout.coalesce();
  const std::span<const std::int64_t> extents = c.shape().extents();
  const std::vector<std::int64_t> strides = *c.flat_strides();
  const std::size_t rank = extents.size();
  if (rank == 0 || n == 1) {
    f(std::int64_t{0}, layout(std::int64_t{0}), std::int64_t{1});
    return;
  }
  const bool unit = strides[0] == 1;
  const std::int64_t run = unit ? extents[0] : 1;
  const std::size_t outer = unit ? 1 : 0;  // the first leaf the odometer walks
  std::vector<std::int64_t> counter(rank, 0);
  std::int64_t index = 0;
  for (std::int64_t ordinal = 0; ordinal < n; ordinal += run) {
    f(ordinal, index, run);
    for (std::size_t d = outer; d < rank; ++d) {
      index += strides[d];
      if (++counter[d] < extents[d]) break;
      index -= strides[d] * extents[d];
      counter[d] = 0;
    }
  }
}

// The tensor's values in logical order, read run by run (RuntimeError when
// its carrier is released).
std::vector<Value> logical_values(const Tensor& tensor);

// A fresh compact tensor of `tensor`'s shape on its carrier's class holding
// its values (construction: no version step anywhere): the framework's
// counted copy of a borrowed operand or an owned result.
// `shape` is the copy's shape (tensor's extents; a nested profile is kept).
Tensor compact_copy(const Tensor& tensor, const Shape& shape);

// Publishes `fresh` (a result in fresh storage, of `target`'s dtype and
// size) into the caller's output `target`, whose layout reshaped to the
// result's shape is `aligned`: element k of fresh goes to slot
// target.offset() + aligned(k), overwritten or (accumulate) added in the
// output arithmetic. ONE versioned mutation of target's carrier, also for an
// empty result. Everything that can fail comes first: an Int32 sum outside
// Int32 is an OverflowError naming `operation` and the first such element
// (in logical order), before anything is written; a write hook failing part
// way is undone from the before-image (no version step) and rethrown.
STRIDEWEAVE_TEST_API void publish_result(const Tensor& fresh, const Tensor& target, const Layout& aligned, bool accumulate,
                    std::string_view operation);

}  // namespace strideweave::detail
