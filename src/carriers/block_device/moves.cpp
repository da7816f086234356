// The asynchronous bulk CPU <-> BlockDeviceCarrier move routes
// (block_device.h; docs/storage.md, "Movement", "Bulk aligned transfers"):
// the span staged in one aligned buffer, one aligned request per window
// through the device's io_uring queue, settled by a completion thread.
#include <strideweave/carriers/block_device.h>
#include <strideweave/completion.h>
#include <strideweave/errors.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "carriers/block_device/moves.h"
#include "movement/host_memory.h"

namespace strideweave {
namespace {

constexpr std::int64_t kPerBlock = BlockDevice::slots_per_block;

std::int64_t round_up(std::int64_t slots) { return (slots + kPerBlock - 1) / kPerBlock * kPerBlock; }

// Slots per request: the move's window in whole blocks (at least one).
std::int64_t window_slots(const MoveContext& context) {
  return std::max(kPerBlock, context.window_elements() / kPerBlock * kPerBlock);
}

// One submitted window: its completion, the staged slots [first, first +
// slots) relative to the buffer's start.
struct Window {
  BlockIoCompletion completion;
  std::int64_t first;
  std::int64_t slots;
};

// Waits for every window, never throwing (after a failure: the buffer must
// outlive every request that still uses it).
void drain(const std::vector<Window>& windows) noexcept {
  for (const Window& w : windows) {
    try {
      w.completion.wait();
    } catch (...) {
    }
  }
}

// The pending completion of a move's windows: a completion thread waits for
// them in order, calling `finished(window)` after each (memcpy, progress),
// and settles the promise once every request is done.
template <class Finished>
extension::ProviderCompletion<void> settle_later(std::shared_ptr<std::vector<Window>> windows,
                                                 std::shared_ptr<AlignedFloats> buffer, Finished finished) {
  extension::ProviderPromise<void> promise;
  auto completion = promise.completion();
  auto body = [promise, windows, buffer, finished]() mutable noexcept {
    try {
      for (const Window& w : *windows) {
        w.completion.wait();
        finished(w);
      }
    } catch (...) {
      drain(*windows);  // a failed window: the later ones report nothing
      // Nothing of the move is held once it is settled.
      windows.reset();
      buffer.reset();
      promise.set_exception(std::current_exception());
      return;
    }
    windows.reset();
    buffer.reset();
    promise.set_value();
  };
  try {
    std::thread(body).detach();
  } catch (...) {  // no thread: complete it here
    body();
  }
  return completion;
}

}  // namespace

// ---------------------------------------------------------------- CPU -> BlockDeviceCarrier

std::optional<CarrierClass> CpuToBlockDeviceMoveOperation::source_class() const {
  return detail::host_memory_class();
}
std::optional<CarrierClass> CpuToBlockDeviceMoveOperation::destination_class() const {
  return carrier_class<BlockDeviceCarrier>();
}

MoveSubmission CpuToBlockDeviceMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                    std::int64_t element_count, MoveContext& context) const {
  auto& device = static_cast<BlockDeviceCarrier&>(destination);
  if (element_count == 0) return std::monostate{};
  const std::int64_t padded = round_up(element_count);
  auto buffer = std::make_shared<AlignedFloats>(BlockDevice::aligned_buffer(padded));
  const std::byte* from = detail::host_memory_bytes(*tensor.carrier()) + tensor.offset() * 4;
  std::memcpy(buffer->get(), from, static_cast<std::size_t>(element_count * 4));
  // The last block's slots past the span keep their values (read first).
  if (padded > element_count && device.size() > element_count) {
    const AlignedFloats tail = BlockDevice::aligned_buffer(kPerBlock);
    device.transfer_async(false, padded - kPerBlock, tail.get(), kPerBlock, "move (reading the last block)", false)
        .wait();
    const std::int64_t keep_from = element_count - (padded - kPerBlock);
    std::memcpy(buffer->get() + element_count, tail.get() + keep_from,
                static_cast<std::size_t>((kPerBlock - keep_from) * 4));
  }
  auto windows = std::make_shared<std::vector<Window>>();
  const std::int64_t step = window_slots(context);
  try {
    for (std::int64_t k = 0; k < padded; k += step) {
      const std::int64_t n = std::min(step, padded - k);
      windows->push_back(Window{device.transfer_async(true, k, buffer->get() + k, n, "move (write_aligned)", false), k,
                                std::min(n, element_count - k)});
    }
  } catch (...) {
    drain(*windows);
    throw;
  }
  return settle_later(windows, buffer, [&context](const Window& w) { context.advance(w.slots); });
}

MoveRestore CpuToBlockDeviceMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                             MoveContext&) const {
  auto& device = static_cast<BlockDeviceCarrier&>(destination);
  const std::int64_t padded = round_up(element_count);
  auto image = std::make_shared<AlignedFloats>(BlockDevice::aligned_buffer(padded));
  device.transfer_async(false, 0, image->get(), padded, "move (reading the destination's before-image)", false)
      .wait();
  return [&device, image, padded] {
    device.transfer_async(true, 0, image->get(), padded, "move (restoring the destination)", false).wait();
  };
}

// ---------------------------------------------------------------- BlockDeviceCarrier -> CPU

std::optional<CarrierClass> BlockDeviceToCpuMoveOperation::source_class() const {
  return carrier_class<BlockDeviceCarrier>();
}
std::optional<CarrierClass> BlockDeviceToCpuMoveOperation::destination_class() const {
  return detail::host_memory_class();
}

MoveSubmission BlockDeviceToCpuMoveOperation::_copy(const Tensor& tensor, Carrier& destination, const Tensor&,
                                                    std::int64_t element_count, MoveContext& context) const {
  const auto& device = static_cast<const BlockDeviceCarrier&>(*tensor.carrier());
  if (element_count == 0) return std::monostate{};
  std::byte* to = detail::host_memory_bytes(destination);
  const std::int64_t first = tensor.offset();
  const std::int64_t last = first + element_count;
  const std::int64_t begin = first / kPerBlock * kPerBlock;
  const std::int64_t end = round_up(last);
  auto buffer = std::make_shared<AlignedFloats>(BlockDevice::aligned_buffer(end - begin));
  auto windows = std::make_shared<std::vector<Window>>();
  const std::int64_t step = window_slots(context);
  try {
    for (std::int64_t k = 0; k < end - begin; k += step) {
      const std::int64_t n = std::min(step, end - begin - k);
      windows->push_back(
          Window{device.transfer_async(false, begin + k, buffer->get() + k, n, "move (read_aligned)", false), k, n});
    }
  } catch (...) {
    drain(*windows);
    throw;
  }
  const float* staged = buffer->get();
  return settle_later(windows, buffer, [&context, to, staged, first, last, begin](const Window& w) {
    const std::int64_t lo = std::max(begin + w.first, first);
    const std::int64_t hi = std::min(begin + w.first + w.slots, last);
    if (hi <= lo) return;
    std::memcpy(to + (lo - first) * 4, staged + (lo - begin), static_cast<std::size_t>((hi - lo) * 4));
    context.advance(hi - lo);
  });
}

MoveRestore BlockDeviceToCpuMoveOperation::_save_destination(Carrier& destination, std::int64_t element_count,
                                                             MoveContext& context) const {
  std::byte* at = detail::host_memory_bytes(destination);
  const std::size_t bytes = static_cast<std::size_t>(element_count * context.element_bytes());
  auto image = std::make_shared<std::vector<std::byte>>(at, at + bytes);
  return [at, image] { std::memcpy(at, image->data(), image->size()); };
}

namespace carriers::block_device {

void register_moves() {
  register_move_operation(detail::host_memory_class(), carrier_class<BlockDeviceCarrier>(),
                          std::make_shared<const CpuToBlockDeviceMoveOperation>());
  register_move_operation(carrier_class<BlockDeviceCarrier>(), detail::host_memory_class(),
                          std::make_shared<const BlockDeviceToCpuMoveOperation>());
}

}  // namespace carriers::block_device
}  // namespace strideweave
