// strideweave/carriers/block_device.h — BlockDevice and its storage-only
// BlockDeviceCarrier: Float32 extents of a device image, read and written
// with aligned direct I/O through io_uring (core-concepts.md 1.3, 8.5;
// docs/storage.md, "BlockDeviceCarrier").
//
// A BlockDevice is one image (a plain file the user names, or a real block
// device) opened with O_DIRECT and locked for exclusive use (flock), with ONE
// io_uring submission queue that every carrier and every thread shares
// (submission and reaping are serialised by the device). Carriers are
// created only by BlockDevice::allocate: each is one extent of whole
// 4096-byte blocks of the image, taken from the device's free list and given
// back at release. There is no public constructor of BlockDeviceCarrier (the
// C++ spelling of core-concepts 8.5's "direct construction -> TypeError").
//
// Storage only: Float32 (core-concepts 1.3; other dtypes ValueError); the
// capability set is sealed empty, so every computational operation raises
// UnsupportedOperationPlan (a NotImplementedError) at the gate; carrier
// scatter raises NotImplementedError; the class refuses to be an Evictable
// tier (can_be_evictable_tier() is false). Indexed access reads (and
// set_value read-modify-writes) the aligned block holding the slot. The bulk
// aligned entry points (read_aligned / write_aligned and their _async forms)
// are what a CPU<->BlockDevice move route uses.
//
// Optional per-block checksums (BlockDevice::open(..., checksums = true)):
// each 4096-byte block written through the device records its xxHash
// (XXH3-64) in memory; each block read back is verified before any value
// of it is returned, and a mismatch is an OSError (EBADMSG) naming the image
// and the block's byte offset.
//
// Errors: a failing system or io_uring call, a short read or write, or a
// checksum mismatch is an OSError naming the call, the image and the byte
// offset. A failed set_value leaves the slot's value (the block is written
// back as it was) and the version unchanged; a failed allocation gives its
// extent back. Every call goes through one replaceable interface
// (src/carriers/block_device/block_io.h) so that tests inject faults.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <mutex>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/export.h>
#include <strideweave/move_operation.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct ShippedCarrierAccess;  // src/carriers/carrier_list.cpp
}  // namespace detail

class BlockDeviceCarrier;
class CpuToBlockDeviceMoveOperation;
class BlockDeviceToCpuMoveOperation;

// The completion of an asynchronous bulk transfer. done() never blocks (it
// reaps whatever the device finished); wait() blocks until the transfer is
// complete and is thread-safe and idempotent: every call returns normally,
// or rethrows the same error (OSError for a failed or short transfer or a
// checksum mismatch). A write's version step happens when the transfer
// completes successfully. The buffer given to the transfer must stay valid
// until done() is true; the carrier stays alive until then.
class BlockIoCompletion {
 public:
  struct State;  // internal (src/carriers/block_device/)
  explicit BlockIoCompletion(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  bool done() const;
  void wait() const;

 private:
  std::shared_ptr<State> state_;
};

// A buffer of Float32 slots aligned for direct I/O (BlockDevice::block_bytes).
struct AlignedFree {
  void operator()(float* p) const noexcept { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

class BlockDevice final : public std::enable_shared_from_this<BlockDevice> {
 public:
  // The unit of allocation, alignment and checksums.
  static constexpr std::int64_t block_bytes = 4096;
  static constexpr std::int64_t slots_per_block = block_bytes / 4;
  // The shared submission queue's depth.
  static constexpr unsigned queue_depth = 64;
  // The largest single request the device submits (bulk transfers are split).
  static constexpr std::int64_t request_bytes = std::int64_t{1} << 20;

  // Opens the image `path` for direct I/O and locks it. With create_bytes,
  // a fresh regular file of that many bytes (a positive multiple of
  // block_bytes; ValueError otherwise) is created first, exclusively (OSError
  // EEXIST when the path exists, leaving it untouched) and its blocks
  // reserved (ENOSPC); the file is the user's and is never deleted. Without
  // it, `path` must exist: a regular file or a block device, whose whole
  // blocks are the capacity. OSError: EINVAL when the file system refuses
  // O_DIRECT (tmpfs; the message says so), EWOULDBLOCK when another
  // BlockDevice (in this process or another) has the image, ENOTBLK for
  // anything but a file or block device, or the failing call; a failed open
  // closes what it opened and removes a file it created.
  static std::shared_ptr<BlockDevice> open(const std::filesystem::path& path,
                                           std::optional<std::int64_t> create_bytes = std::nullopt,
                                           bool checksums = false);

  // BlockDevice(path).allocate(size, *, mutable=True, dtype=Float32,
  // empty=False): a carrier of `size` Float32 slots on a fresh extent of
  // ceil(size * 4 / block_bytes) blocks (size 0: no blocks). Zeroed on the
  // image unless `empty` (then nothing is written, and every slot must be
  // written before it is read). ValueError: a dtype other than Float32,
  // size < 0, or more blocks than the whole image has. MemoryError: no free
  // extent is large enough now (releasing carriers gives theirs back).
  // OSError: zeroing failed (the extent is given back).
  std::shared_ptr<BlockDeviceCarrier> allocate(std::int64_t size, bool mutable_ = true,
                                               const DType& dtype = DType::Float32(), bool empty = false);

  const std::filesystem::path& path() const noexcept;
  std::int64_t capacity_bytes() const noexcept;
  // Bytes in free extents, and the largest one.
  std::int64_t free_bytes() const;
  std::int64_t largest_free_extent_bytes() const;
  bool checksums() const noexcept;

  // A zeroed buffer of `slots` Float32 slots (rounded up to whole blocks),
  // aligned for the bulk entry points. MemoryError when it cannot be had.
  static AlignedFloats aligned_buffer(std::int64_t slots);

  ~BlockDevice();
  BlockDevice(const BlockDevice&) = delete;
  BlockDevice& operator=(const BlockDevice&) = delete;

  struct Impl;  // internal (src/carriers/block_device/)
  explicit BlockDevice(std::unique_ptr<Impl> impl) noexcept;
  Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class BlockDeviceCarrier final : public Carrier {
 public:
  static constexpr std::string_view public_name = "BlockDeviceCarrier";
  static constexpr std::string_view description =
      "storage only: Float32 extents of a device image, aligned direct I/O through io_uring; made by "
      "BlockDevice::allocate";

  // Float32 only (core-concepts.md 1.3).
  static bool supports(const DType& dtype) noexcept;
  bool supports_storage_dtype(const DType& dtype) const noexcept override { return supports(dtype); }
  // core-concepts.md 8.5: a block device cannot be an Evictable tier.
  bool can_be_evictable_tier() const noexcept override { return false; }

  const std::shared_ptr<BlockDevice>& device() const noexcept { return device_; }
  // The extent: its byte offset in the image and its length (whole blocks).
  std::int64_t extent_offset() const noexcept { return extent_offset_; }
  std::int64_t extent_bytes() const noexcept { return extent_bytes_; }
  // size() rounded up to whole blocks: the bulk entry points' range.
  std::int64_t padded_size() const noexcept { return extent_bytes_ / 4; }

  // Bulk aligned transfers (for move routes): `first` a multiple of
  // BlockDevice::slots_per_block, buffer.size() a multiple of it, first +
  // buffer.size() <= padded_size(), buffer.data() aligned to
  // BlockDevice::block_bytes (ValueError otherwise; RuntimeError after
  // release; write_* RuntimeError unless publicly mutable). Slots past size()
  // in the last block are padding: written, never read as values. A write
  // is ONE versioned mutation (version + 1 on success); a failed write
  // leaves the range's contents unspecified and the version unchanged
  // (with checksums, the range's blocks are then unverifiable until
  // rewritten). The synchronous forms are the _async forms plus wait().
  void read_aligned(std::int64_t first, std::span<float> buffer) const;
  void write_aligned(std::int64_t first, std::span<const float> buffer);
  BlockIoCompletion read_aligned_async(std::int64_t first, std::span<float> buffer) const;
  BlockIoCompletion write_aligned_async(std::int64_t first, std::span<const float> buffer);

  ~BlockDeviceCarrier() override;

 protected:
  std::int64_t storage_size() const noexcept override { return size_; }
  Value read_slot(std::int64_t index) const override;
  void write_slot(std::int64_t index, const Value& value) override;
  void release_storage() noexcept override;
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override;
  bool implements_carrier_scatter() const noexcept override { return false; }

 private:
  friend struct detail::ShippedCarrierAccess;
  friend class BlockDevice;
  friend class CpuToBlockDeviceMoveOperation;
  friend class BlockDeviceToCpuMoveOperation;
  // Publishes the class's empty kernel table (its sealed empty capability
  // set), once, from the library bootstrap.
  static void register_kernels();
  struct Token {};

 public:
  // Only BlockDevice::allocate can make the Token.
  BlockDeviceCarrier(Token, std::shared_ptr<BlockDevice> device, bool mutable_, std::int64_t size,
                     std::int64_t extent_offset, std::int64_t extent_bytes) noexcept;

 private:
  static const SimpleDType& checked_dtype(const DType& dtype);
  // `versioned` false: a move route's write (the move framework steps the
  // version once at commit, and a rollback's restore steps nothing).
  BlockIoCompletion transfer_async(bool write, std::int64_t first, float* buffer, std::int64_t slots,
                                   const char* what, bool versioned = true) const;
  void check_range(std::int64_t first, const void* data, std::int64_t slots, const char* what) const;
  // Waits for the transfers in flight and gives the extent back; idempotent.
  void close_storage() noexcept;

  std::shared_ptr<BlockDevice> device_;
  std::int64_t size_;
  std::int64_t extent_offset_;
  std::int64_t extent_bytes_;
  // Serialises slot read-modify-writes, bulk submissions and release.
  mutable std::mutex io_mutex_;
  bool closed_ = false;  // the extent was given back
  mutable std::vector<std::weak_ptr<BlockIoCompletion::State>> in_flight_;
};

// The built-in bulk move routes between host memory (CPU) and a
// BlockDeviceCarrier (docs/storage.md, "Movement", "Bulk aligned
// transfers"), registered for (CPU, BlockDeviceCarrier) and
// (BlockDeviceCarrier, CPU) by this carrier's own folder. Asynchronous: _copy
// stages the span in one aligned buffer and submits one aligned request per
// window (whole blocks) through the device's io_uring queue, then returns a
// pending completion settled by a completion thread once every window is
// on the image (or in host memory), so move_async returns before the I/O
// completes. A failing, short or ENOSPC transfer is an OSError naming the
// image and the byte offset, and the move rolls back (the destination's
// before-image is one bulk aligned read; the source is never changed).
class STRIDEWEAVE_EXPORT CpuToBlockDeviceMoveOperation final : public MoveOperation {
 public:
  std::string name() const override { return "CpuToBlockDeviceMoveOperation"; }
  std::optional<CarrierClass> source_class() const override;
  std::optional<CarrierClass> destination_class() const override;

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext& context) const override;
  MoveRestore _save_destination(Carrier& destination, std::int64_t element_count,
                                MoveContext& context) const override;
};

class STRIDEWEAVE_EXPORT BlockDeviceToCpuMoveOperation final : public MoveOperation {
 public:
  std::string name() const override { return "BlockDeviceToCpuMoveOperation"; }
  std::optional<CarrierClass> source_class() const override;
  std::optional<CarrierClass> destination_class() const override;

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor& output, std::int64_t element_count,
                       MoveContext& context) const override;
  MoveRestore _save_destination(Carrier& destination, std::int64_t element_count,
                                MoveContext& context) const override;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
