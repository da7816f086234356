// BlockDeviceCarrier: one extent of a BlockDevice image. See
// include/strideweave/carriers/block_device.h and docs/storage.md.
#include <strideweave/carriers/block_device.h>
#include <strideweave/errors.h>

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <new>

#include "carriers/block_device/device_impl.h"
#include "carriers/block_device/moves.h"
#include "execution/kernel_table.h"

namespace strideweave {
namespace {

using State = BlockIoCompletion::State;
constexpr std::int64_t kBlock = BlockDevice::block_bytes;
constexpr std::int64_t kSlotsPerBlock = BlockDevice::slots_per_block;

// A zeroed, aligned buffer shared by every zeroing write (never written to).
const std::byte* zero_blocks() {
  static const AlignedFloats zeros = BlockDevice::aligned_buffer(BlockDevice::request_bytes / 4);
  return reinterpret_cast<const std::byte*>(zeros.get());
}

std::shared_ptr<State> make_state(const std::shared_ptr<BlockDevice>& device, bool write, std::byte* buffer,
                                  std::int64_t offset, std::int64_t bytes, std::string what) {
  auto s = std::make_shared<State>();
  s->device = device;
  s->write = write;
  s->buffer = buffer;
  s->offset = offset;
  s->bytes = bytes;
  s->what = std::move(what);
  return s;
}

}  // namespace

// ---- allocation

const SimpleDType& BlockDeviceCarrier::checked_dtype(const DType& dtype) {
  return check_storage_dtype(dtype, "BlockDeviceCarrier", &BlockDeviceCarrier::supports);
}

bool BlockDeviceCarrier::supports(const DType& dtype) noexcept { return &dtype == &DType::Float32(); }

std::shared_ptr<BlockDeviceCarrier> BlockDevice::allocate(std::int64_t size, bool mutable_, const DType& dtype,
                                                          bool empty) {
  BlockDeviceCarrier::checked_dtype(dtype);
  if (size < 0) throw ValueError(fmt::format("BlockDevice.allocate: size must be >= 0, got {}", size));
  if (size > std::numeric_limits<std::int64_t>::max() / 4 - kBlock)
    throw ValueError(fmt::format("BlockDevice.allocate: {} slots overflow the addressable size", size));
  const std::int64_t blocks = (size * 4 + kBlock - 1) / kBlock;
  const std::int64_t bytes = blocks * kBlock;
  Impl& d = *impl_;
  if (bytes > d.capacity_bytes)
    throw ValueError(fmt::format("BlockDevice.allocate: {} slots need {} bytes, more than the whole image '{}' "
                                 "holds ({} bytes)",
                                 size, bytes, d.path_string, d.capacity_bytes));
  std::int64_t first_block = 0;
  if (blocks > 0) {
    const std::optional<std::int64_t> first = d.take_extent(blocks);
    if (!first)
      throw MemoryError(fmt::format("BlockDevice.allocate: no free extent of {} bytes in '{}' ({} bytes free, the "
                                    "largest extent {} bytes); release carriers to give their extents back",
                                    bytes, d.path_string, free_bytes(), largest_free_extent_bytes()));
    first_block = *first;
  }
  const std::int64_t offset = first_block * kBlock;
  try {
    if (!empty) {
      // Zero the extent on the image (a reused extent holds old data).
      for (std::int64_t at = 0; at < bytes; at += request_bytes) {
        const std::int64_t n = std::min(request_bytes, bytes - at);
        d.run(make_state(shared_from_this(), true, const_cast<std::byte*>(zero_blocks()), offset + at, n,
                         "allocate (zeroing the extent)"));
      }
    } else {
      std::lock_guard lock(d.ring_mutex);
      d.forget_sums(offset, bytes);
    }
    return std::make_shared<BlockDeviceCarrier>(BlockDeviceCarrier::Token{}, shared_from_this(), mutable_, size,
                                                offset, bytes);
  } catch (const std::bad_alloc&) {
    d.give_back(first_block, blocks);
    throw MemoryError(fmt::format("BlockDevice.allocate: cannot allocate the carrier for '{}'", d.path_string));
  } catch (...) {
    d.give_back(first_block, blocks);
    throw;
  }
}

BlockDeviceCarrier::BlockDeviceCarrier(Token, std::shared_ptr<BlockDevice> device, bool mutable_, std::int64_t size,
                                       std::int64_t extent_offset, std::int64_t extent_bytes) noexcept
    : Carrier(DType::Float32(), mutable_),
      device_(std::move(device)),
      size_(size),
      extent_offset_(extent_offset),
      extent_bytes_(extent_bytes) {}

BlockDeviceCarrier::~BlockDeviceCarrier() { close_storage(); }

// ---- indexed access: one aligned block per slot

Value BlockDeviceCarrier::read_slot(std::int64_t index) const {
  std::lock_guard lock(io_mutex_);
  if (closed_) throw RuntimeError("BlockDeviceCarrier.get_value: the carrier has been released");
  const std::int64_t block = index / kSlotsPerBlock;
  auto s = make_state(device_, false, nullptr, extent_offset_ + block * kBlock, kBlock, "get_value");
  s->owned_buffer = BlockDevice::aligned_buffer(kSlotsPerBlock);
  s->buffer = reinterpret_cast<std::byte*>(s->owned_buffer.get());
  device_->impl().run(s);
  return Value::from_float32(s->owned_buffer[static_cast<std::size_t>(index % kSlotsPerBlock)]);
}

void BlockDeviceCarrier::write_slot(std::int64_t index, const Value& value) {
  std::lock_guard lock(io_mutex_);
  if (closed_) throw RuntimeError("BlockDeviceCarrier.set_value: the carrier has been released");
  BlockDevice::Impl& d = device_->impl();
  const std::int64_t block = index / kSlotsPerBlock;
  const std::int64_t offset = extent_offset_ + block * kBlock;
  // Read the block (verified), change the slot, write the block back.
  auto read = make_state(device_, false, nullptr, offset, kBlock, "set_value (reading its block)");
  read->owned_buffer = BlockDevice::aligned_buffer(kSlotsPerBlock);
  read->buffer = reinterpret_cast<std::byte*>(read->owned_buffer.get());
  d.run(read);
  auto write = make_state(device_, true, nullptr, offset, kBlock, "set_value (writing its block)");
  write->owned_buffer = BlockDevice::aligned_buffer(kSlotsPerBlock);
  std::memcpy(write->owned_buffer.get(), read->owned_buffer.get(), static_cast<std::size_t>(kBlock));
  write->owned_buffer[static_cast<std::size_t>(index % kSlotsPerBlock)] = value.f;
  write->buffer = reinterpret_cast<std::byte*>(write->owned_buffer.get());
  try {
    d.run(write);
  } catch (const OSError&) {
    // A failed or short write may have changed part of the block: put the
    // block back as it was (its checksum with it), then report the failure.
    d.settle(*write);
    auto restore = make_state(device_, true, read->buffer, offset, kBlock, "set_value (restoring its block)");
    restore->owned_buffer = std::move(read->owned_buffer);
    try {
      d.run(restore);
    } catch (const Error&) {
      // The original error is the one reported; the block stays unverified.
    }
    throw;
  }
}

// ---- bulk aligned transfers

void BlockDeviceCarrier::check_range(std::int64_t first, const void* data, std::int64_t slots,
                                     const char* what) const {
  if (first < 0 || first % kSlotsPerBlock != 0)
    throw ValueError(fmt::format("BlockDeviceCarrier.{}: first slot {} must be a non-negative multiple of {}", what,
                                 first, kSlotsPerBlock));
  if (slots % kSlotsPerBlock != 0)
    throw ValueError(fmt::format("BlockDeviceCarrier.{}: {} slots is not a whole number of {}-slot blocks", what,
                                 slots, kSlotsPerBlock));
  if (first > padded_size() || slots > padded_size() - first)
    throw ValueError(fmt::format("BlockDeviceCarrier.{}: slots [{}, {}) pass the extent's {} (padded) slots", what,
                                 first, first + slots, padded_size()));
  if (reinterpret_cast<std::uintptr_t>(data) % static_cast<std::uintptr_t>(kBlock) != 0)
    throw ValueError(fmt::format("BlockDeviceCarrier.{}: the buffer must be aligned to {} bytes (use "
                                 "BlockDevice::aligned_buffer)",
                                 what, kBlock));
}

BlockIoCompletion BlockDeviceCarrier::transfer_async(bool write, std::int64_t first, float* buffer,
                                                     std::int64_t slots, const char* what, bool versioned) const {
  std::lock_guard lock(io_mutex_);
  if (write)
    require_writable(fmt::format("BlockDeviceCarrier.{}", what).c_str());
  else
    require_live(fmt::format("BlockDeviceCarrier.{}", what).c_str());
  check_range(first, buffer, slots, what);
  auto s = make_state(device_, write, reinterpret_cast<std::byte*>(buffer), extent_offset_ + first * 4, slots * 4,
                      what);
  if (write && versioned) {
    // ONE versioned mutation, when the whole range is on the image.
    // (A weak reference: a carrier destroyed meanwhile finishes its transfers
    // in its destructor and needs no version.)
    std::weak_ptr<Carrier> self = std::const_pointer_cast<Carrier>(shared_from_this());
    s->on_success = [self] {
      if (std::shared_ptr<Carrier> c = self.lock()) c->bump_version();
    };
  }
  std::erase_if(in_flight_, [](const std::weak_ptr<State>& w) { return w.expired(); });
  in_flight_.push_back(s);
  device_->impl().start(s);
  return BlockIoCompletion(std::move(s));
}

void BlockDeviceCarrier::read_aligned(std::int64_t first, std::span<float> buffer) const {
  read_aligned_async(first, buffer).wait();
}

void BlockDeviceCarrier::write_aligned(std::int64_t first, std::span<const float> buffer) {
  write_aligned_async(first, buffer).wait();
}

BlockIoCompletion BlockDeviceCarrier::read_aligned_async(std::int64_t first, std::span<float> buffer) const {
  return transfer_async(false, first, buffer.data(), static_cast<std::int64_t>(buffer.size()), "read_aligned");
}

BlockIoCompletion BlockDeviceCarrier::write_aligned_async(std::int64_t first, std::span<const float> buffer) {
  // The buffer is only read by the write.
  return transfer_async(true, first, const_cast<float*>(buffer.data()), static_cast<std::int64_t>(buffer.size()),
                        "write_aligned");
}

// ---- release

void BlockDeviceCarrier::close_storage() noexcept {
  std::lock_guard lock(io_mutex_);
  if (closed_) return;
  closed_ = true;
  // Transfers in flight finish before the extent can be reused.
  for (const std::weak_ptr<State>& w : in_flight_)
    if (std::shared_ptr<State> s = w.lock()) device_->impl().drive(*s, true);
  in_flight_.clear();
  device_->impl().give_back(extent_offset_ / kBlock, extent_bytes_ / kBlock);
}

void BlockDeviceCarrier::release_storage() noexcept { close_storage(); }

std::shared_ptr<Carrier> BlockDeviceCarrier::make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                                       bool empty) const {
  // A fresh extent of the same device.
  return device_->allocate(size, mutable_, dtype, empty);
}

void BlockDeviceCarrier::register_kernels() {
  register_kernel_table(carrier_class<BlockDeviceCarrier>(), KernelTable{});
  carriers::block_device::register_moves();  // (CPU, BlockDeviceCarrier) and back: moves.cpp
}

}  // namespace strideweave
