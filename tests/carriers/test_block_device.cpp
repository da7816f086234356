// Tests for include/strideweave/carriers/block_device.h: BlockDevice and the
// storage-only BlockDeviceCarrier (core-concepts.md 1.1-1.8, 2.1, 8.5;
// backend-capabilities.md, "Shipped carrier declarations are complete and
// sealed"; docs/storage.md, "BlockDeviceCarrier").
//
// Suite names give the requirement: CoreConcepts_<section>_BlockDevice*, and
// Storage_BlockDevice<topic> for the choices docs/storage.md writes down where
// the specification is silent (extents, bulk transfers, checksums, faults).
//
// Images are plain files in the build tree (a disk file system: tmpfs has no
// O_DIRECT). Fault injection replaces the one I/O interface (block_io.h)
// with FaultyBlockIo, which fails one named call site with one errno, or
// makes one read or write short (really transferring half of it).
#include <strideweave/capability.h>
#include <strideweave/carriers/block_device.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/errors.h>
#include <strideweave/ops.h>
#include <strideweave/tensor.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "sysio/system_io.h"

#include <fcntl.h>
#include "support/expect_exactly.h"

namespace sw = strideweave;
namespace fs = std::filesystem;
using sw::BlockDevice;
using sw::BlockDeviceCarrier;
using sw::DType;
using sw::Value;
using BlockCompletion = sw::sysio::RingCompletion;
using BlockIo = sw::sysio::SystemIo;
using BlockRequest = sw::sysio::RingRequest;
using sw::sysio::Ring;
using ScopedBlockIo = sw::sysio::ScopedSystemIo;

namespace {

constexpr std::int64_t kBlock = BlockDevice::block_bytes;
constexpr std::int64_t kPerBlock = BlockDevice::slots_per_block;

Value F(float v) { return Value::from_float32(v); }

// A fresh image path in the build tree (on disk), removed by the fixture.
class ImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(STRIDEWEAVE_BINARY_DIR) / "block_device_images";
    fs::create_directories(dir_);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    image_ = dir_ / (std::string(info->test_suite_name()) + "." + info->name() + "-" + std::to_string(::getpid()) +
                     ".img");
    fs::remove(image_);
  }
  void TearDown() override { fs::remove(image_); }
  std::shared_ptr<BlockDevice> make(std::int64_t blocks = 64, bool checksums = false) {
    return BlockDevice::open(image_, blocks * kBlock, checksums);
  }
  // Bytes of the image read through an ordinary (buffered) descriptor.
  float raw_float(std::int64_t byte_offset) const {
    const int fd = ::open(image_.c_str(), O_RDONLY);
    float v = 0;
    EXPECT_EQ(::pread(fd, &v, sizeof v, byte_offset), static_cast<ssize_t>(sizeof v));
    ::close(fd);
    return v;
  }
  // Writes behind the device's back (a buffered descriptor of its own).
  void corrupt(std::int64_t byte_offset, float v) const {
    const int fd = ::open(image_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &v, sizeof v, byte_offset), static_cast<ssize_t>(sizeof v));
    ::fsync(fd);
    ::close(fd);
  }
  fs::path dir_;
  fs::path image_;
};

// ---------------------------------------------------------------------------
// CoreConcepts_8_5: created only by BlockDevice(path).allocate

using CoreConcepts_8_5_BlockDevice = ImageTest;

TEST_F(CoreConcepts_8_5_BlockDevice, AllocateMakesAFixedSizeFloat32ExtentReadingZero) {
  auto device = make(8);
  EXPECT_EQ(device->capacity_bytes(), 8 * kBlock);
  EXPECT_EQ(device->path(), image_);
  auto c = device->allocate(kPerBlock + 3);
  EXPECT_EQ(c->size(), kPerBlock + 3);
  EXPECT_EQ(&c->dtype(), &DType::Float32());
  EXPECT_EQ(c->class_name(), "BlockDeviceCarrier");
  EXPECT_EQ(c->extent_bytes(), 2 * kBlock);
  EXPECT_EQ(c->padded_size(), 2 * kPerBlock);
  EXPECT_EQ(c->device(), device);
  EXPECT_TRUE(c->is_mutable());
  for (std::int64_t i : {std::int64_t{0}, kPerBlock - 1, kPerBlock, kPerBlock + 2}) EXPECT_EQ(c->get_value(i), F(0));
  EXPECT_EQ(device->free_bytes(), 6 * kBlock);
  auto immutable = device->allocate(4, false);
  EXPECT_FALSE(immutable->is_mutable());
}

TEST_F(CoreConcepts_8_5_BlockDevice, DirectConstructionIsImpossible) {
  // The C++ spelling of "direct construction -> TypeError": the only public
  // constructor needs a Token only BlockDevice can make.
  static_assert(!std::is_constructible_v<BlockDeviceCarrier, std::shared_ptr<BlockDevice>, bool, std::int64_t,
                                         std::int64_t, std::int64_t>);
  static_assert(!std::is_default_constructible_v<BlockDeviceCarrier>);
  static_assert(std::is_final_v<BlockDeviceCarrier>);
  SUCCEED();
}

TEST_F(CoreConcepts_8_5_BlockDevice, CannotBeAnEvictableTier) {
  auto device = make(4);
  auto c = device->allocate(2);
  EXPECT_FALSE(c->can_be_evictable_tier());
  EXPECT_TRUE(sw::CPU::create(2, DType::Float32())->can_be_evictable_tier());
}

TEST_F(CoreConcepts_8_5_BlockDevice, CapabilitySetIsSealedEmpty) {
  EXPECT_TRUE(sw::capabilities_for_carrier_class(sw::carrier_class<BlockDeviceCarrier>()).empty());
  auto c = make(4)->allocate(2);
  EXPECT_TRUE(c->operation_capabilities().empty());
  EXPECT_THROW_EXACTLY(sw::register_operation_capabilities(sw::carrier_class<BlockDeviceCarrier>(), {}),
                       sw::TypeError);
}

TEST_F(CoreConcepts_8_5_BlockDevice, ComputationalDispatchIsANotImplementedErrorBeforeAnyWork) {
  auto device = make(4);
  auto c = device->allocate(2);
  const sw::Tensor t(c, sw::Shape{2});
  const std::int64_t free_before = device->free_bytes();
  EXPECT_THROW_EXACTLY(sw::add(t, t), sw::UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(sw::relu(t), sw::UnsupportedOperationPlan);
  EXPECT_EQ(device->free_bytes(), free_before);  // no result extent was allocated
  EXPECT_EQ(c->version(), 0u);
}

TEST_F(CoreConcepts_8_5_BlockDevice, CarrierScatterIsANotImplementedErrorAndWritesNothing) {
  auto device = make(4);
  auto c = device->allocate(4);
  auto source = sw::CPU::from_values(std::vector<Value>{F(1), F(2)}, DType::Float32());
  const sw::Tensor onto(c, sw::Shape{4});
  const sw::Tensor from(source, sw::Shape{2});
  EXPECT_THROW_EXACTLY(c->scatter(from, onto, sw::Layout(sw::Shape{2}, sw::Stride{1})), sw::NotImplementedError);
  EXPECT_EQ(c->version(), 0u);
  EXPECT_EQ(c->get_value(0), F(0));
}

// ---------------------------------------------------------------------------
// CoreConcepts_1_2 / 1_3: Float32 only

using CoreConcepts_1_3_BlockDeviceStorage = ImageTest;

TEST_F(CoreConcepts_1_3_BlockDeviceStorage, StoresFloat32Only) {
  EXPECT_TRUE(BlockDeviceCarrier::supports(DType::Float32()));
  for (const DType* d : std::vector<const DType*>{&DType::Int32(), &DType::Bool(), &DType::Float64(), &DType::Floating(), &DType::Any()})
    EXPECT_FALSE(BlockDeviceCarrier::supports(*d)) << d->name();
  auto c = make(4)->allocate(1);
  EXPECT_FALSE(c->supports_storage_dtype(DType::Int32()));
  EXPECT_TRUE(c->supports_storage_dtype(DType::Float32()));
}

TEST_F(CoreConcepts_1_3_BlockDeviceStorage, OtherDtypesAreAValueErrorAndTakeNoExtent) {
  auto device = make(4);
  for (const DType* d : std::vector<const DType*>{&DType::Int32(), &DType::Bool(), &DType::Float64(), &DType::Floating()})
    EXPECT_THROW_EXACTLY(device->allocate(2, true, *d), sw::ValueError) << d->name();
  EXPECT_THROW_EXACTLY(device->allocate(-1), sw::ValueError);
  EXPECT_EQ(device->free_bytes(), 4 * kBlock);
  auto c = device->allocate(2);
  EXPECT_THROW_EXACTLY(c->allocate_like(2, true, &DType::Int32()), sw::ValueError);
  EXPECT_EQ(device->free_bytes(), 3 * kBlock);
}

// ---------------------------------------------------------------------------
// CoreConcepts_1_1 / 2_1 / 1_6: access, versions, release

using CoreConcepts_1_1_BlockDeviceAccess = ImageTest;

TEST_F(CoreConcepts_1_1_BlockDeviceAccess, ValuesAreStoredInTheirBlockOfTheImage) {
  auto device = make(8);
  auto first = device->allocate(5);  // one block
  auto c = device->allocate(2 * kPerBlock);
  ASSERT_EQ(c->extent_offset(), kBlock);
  c->set_value(0, F(1.5f));
  c->set_value(kPerBlock - 1, F(2.5f));
  c->set_value(kPerBlock, F(-3.0f));
  c->set_value(2 * kPerBlock - 1, F(4.0f));
  EXPECT_EQ(c->get_value(0), F(1.5f));
  EXPECT_EQ((*c)[kPerBlock - 1], F(2.5f));
  EXPECT_EQ(c->get_value(kPerBlock), F(-3.0f));
  EXPECT_EQ(c->get_value(2 * kPerBlock - 1), F(4.0f));
  EXPECT_EQ(c->get_value(1), F(0));
  EXPECT_EQ(raw_float(kBlock + 0), 1.5f);
  EXPECT_EQ(raw_float(kBlock + kBlock + 4 * (kPerBlock - 1)), 4.0f);
  EXPECT_EQ(first->get_value(0), F(0));  // the neighbour extent is untouched
}

TEST_F(CoreConcepts_1_1_BlockDeviceAccess, BadAccessRaisesAndChangesNothing) {
  auto c = make(4)->allocate(3);
  c->set_value(1, F(7));
  EXPECT_THROW_EXACTLY(c->get_value(3), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->get_value(-1), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(3, F(1)), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(0, Value::from_int32(1)), sw::TypeError);
  EXPECT_EQ(c->version(), 1u);
  auto frozen = c->device()->allocate(3, false);
  EXPECT_THROW_EXACTLY(frozen->set_value(0, F(1)), sw::RuntimeError);
  EXPECT_EQ(frozen->version(), 0u);
  EXPECT_EQ(c->get_value(1), F(7));
}

TEST_F(CoreConcepts_1_1_BlockDeviceAccess, ConcurrentWritersOfOneBlockLoseNoUpdate) {
  auto c = make(4)->allocate(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 16; ++k) c->set_value(t * 16 + k, F(static_cast<float>(t * 16 + k + 1)));
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(c->get_value(i), F(static_cast<float>(i + 1))) << i;
  EXPECT_EQ(c->version(), 64u);
}

using CoreConcepts_2_1_BlockDeviceVersion = ImageTest;

TEST_F(CoreConcepts_2_1_BlockDeviceVersion, OnePerWriteNoneForAllocationOrRelease) {
  auto c = make(4)->allocate(kPerBlock);
  EXPECT_EQ(c->version(), 0u);
  c->set_value(0, F(1));
  c->set_value(1, F(2));
  EXPECT_EQ(c->version(), 2u);
  auto buffer = BlockDevice::aligned_buffer(kPerBlock);
  c->write_aligned(0, std::span<const float>(buffer.get(), kPerBlock));  // one bulk write: one step
  EXPECT_EQ(c->version(), 3u);
  c->read_aligned(0, std::span<float>(buffer.get(), kPerBlock));
  EXPECT_EQ(c->version(), 3u);
  c->release();
  EXPECT_EQ(c->version(), 3u);
}

using CoreConcepts_1_6_BlockDeviceRelease = ImageTest;

TEST_F(CoreConcepts_1_6_BlockDeviceRelease, ReleaseGivesTheExtentBackAndAccessIsARuntimeError) {
  auto device = make(4);
  auto c = device->allocate(2 * kPerBlock);
  EXPECT_EQ(device->free_bytes(), 2 * kBlock);
  c->set_value(0, F(9));
  c->release();
  c->release();  // idempotent
  EXPECT_TRUE(c->is_released());
  EXPECT_EQ(device->free_bytes(), 4 * kBlock);
  EXPECT_THROW_EXACTLY(c->get_value(0), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, F(1)), sw::RuntimeError);
  auto buffer = BlockDevice::aligned_buffer(kPerBlock);
  EXPECT_THROW_EXACTLY(c->read_aligned(0, std::span<float>(buffer.get(), kPerBlock)), sw::RuntimeError);
  EXPECT_EQ(&c->dtype(), &DType::Float32());
  // new_like still works on a released prototype: a fresh extent.
  auto fresh = c->new_like(std::vector<Value>{F(1), F(2)});
  EXPECT_EQ(fresh->get_value(1), F(2));
  EXPECT_EQ(fresh->class_name(), "BlockDeviceCarrier");
}

TEST_F(CoreConcepts_1_6_BlockDeviceRelease, AReusedExtentIsZeroedUnlessEmpty) {
  auto device = make(2);
  {
    auto c = device->allocate(kPerBlock);
    c->set_value(5, F(42));
  }  // destruction gives the extent back
  EXPECT_EQ(device->free_bytes(), 2 * kBlock);
  auto zeroed = device->allocate(kPerBlock);
  EXPECT_EQ(zeroed->extent_offset(), 0);
  EXPECT_EQ(zeroed->get_value(5), F(0));
  zeroed->set_value(5, F(43));
  zeroed->release();
  auto empty = device->allocate(kPerBlock, true, DType::Float32(), true);
  EXPECT_EQ(empty->get_value(5), F(43));  // empty=True skips zeroing: the old bytes show
  auto like = empty->allocate_like(3);
  EXPECT_EQ(like->get_value(0), F(0));
}

// ---------------------------------------------------------------------------
// Storage_BlockDeviceExtents: the free list

using Storage_BlockDeviceExtents = ImageTest;

TEST_F(Storage_BlockDeviceExtents, MoreThanTheImageIsAValueErrorAndNoFreeExtentAMemoryError) {
  auto device = make(4);
  EXPECT_THROW_EXACTLY(device->allocate(5 * kPerBlock), sw::ValueError);
  auto a = device->allocate(kPerBlock);
  auto b = device->allocate(kPerBlock);
  auto c = device->allocate(kPerBlock);
  auto d = device->allocate(kPerBlock);
  EXPECT_THROW_EXACTLY(device->allocate(1), sw::MemoryError);
  b->release();
  d->release();
  EXPECT_EQ(device->free_bytes(), 2 * kBlock);
  EXPECT_EQ(device->largest_free_extent_bytes(), kBlock);
  EXPECT_THROW_EXACTLY(device->allocate(2 * kPerBlock), sw::MemoryError);  // fragmented
  c->release();                                                            // b, c, d coalesce
  EXPECT_EQ(device->largest_free_extent_bytes(), 3 * kBlock);
  auto big = device->allocate(3 * kPerBlock);
  EXPECT_EQ(big->extent_offset(), kBlock);
  EXPECT_EQ(device->allocate(0)->extent_bytes(), 0);
}

TEST_F(Storage_BlockDeviceExtents, OpeningChecksSizeExistenceAndExclusiveUse) {
  EXPECT_THROW_EXACTLY(BlockDevice::open(image_, 100), sw::ValueError);  // not a block multiple
  EXPECT_FALSE(fs::exists(image_));
  try {
    BlockDevice::open(image_);
    ADD_FAILURE() << "a missing image opened";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_EQ(e.filename(), image_.string());
  }
  auto device = make(4);
  try {
    BlockDevice::open(image_, 4 * kBlock);
    ADD_FAILURE() << "an existing image was created again";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EEXIST);
  }
  try {
    BlockDevice::open(image_);
    ADD_FAILURE() << "a second device opened a locked image";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EWOULDBLOCK);
  }
  device.reset();
  auto again = BlockDevice::open(image_);  // the lock went with the device
  EXPECT_EQ(again->capacity_bytes(), 4 * kBlock);
}

TEST_F(Storage_BlockDeviceExtents, AFileSystemWithoutDirectIoIsNamed) {
  // tmpfs refuses O_DIRECT with EINVAL at open (when /dev/shm is tmpfs the
  // real call shows it; the injected one always does).
  struct NoDirectIo : BlockIo {
    int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
      return (flags & O_CREAT) ? EINVAL : BlockIo::open(p, flags, mode, fd);
    }
  } io;
  ScopedBlockIo scope(io);
  try {
    BlockDevice::open(image_, 4 * kBlock);
    ADD_FAILURE() << "no error";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("does not support direct I/O"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// Storage_BlockDeviceBulk: the aligned entry points a move route uses

using Storage_BlockDeviceBulk = ImageTest;

TEST_F(Storage_BlockDeviceBulk, AlignedReadAndWriteRoundTripAcrossRequests) {
  // Larger than one request (1 MiB) and than the queue (64 requests) takes
  // at once is not needed to round-trip; 3 MiB + a tail checks the split.
  const std::int64_t slots = (3 << 20) / 4 + 5;
  auto device = make((slots * 4 + kBlock - 1) / kBlock + 1);
  auto c = device->allocate(slots);
  auto out = BlockDevice::aligned_buffer(c->padded_size());
  for (std::int64_t i = 0; i < c->padded_size(); ++i) out[static_cast<std::size_t>(i)] = static_cast<float>(i);
  c->write_aligned(0, std::span<const float>(out.get(), static_cast<std::size_t>(c->padded_size())));
  EXPECT_EQ(c->get_value(slots - 1), F(static_cast<float>(slots - 1)));
  auto in = BlockDevice::aligned_buffer(c->padded_size());
  auto done = c->read_aligned_async(kPerBlock, std::span<float>(in.get(), static_cast<std::size_t>(c->padded_size() - kPerBlock)));
  done.wait();
  done.wait();  // idempotent
  EXPECT_TRUE(done.done());
  for (std::int64_t i = 0; i < c->padded_size() - kPerBlock; i += 997)
    ASSERT_EQ(in[static_cast<std::size_t>(i)], static_cast<float>(i + kPerBlock)) << i;
}

TEST_F(Storage_BlockDeviceBulk, MisalignedRequestsAreValueErrors) {
  auto c = make(4)->allocate(2 * kPerBlock);
  auto buffer = BlockDevice::aligned_buffer(3 * kPerBlock);
  std::span<float> one(buffer.get(), kPerBlock);
  EXPECT_THROW_EXACTLY(c->read_aligned(1, one), sw::ValueError);
  EXPECT_THROW_EXACTLY(c->read_aligned(0, std::span<float>(buffer.get(), 5)), sw::ValueError);
  EXPECT_THROW_EXACTLY(c->read_aligned(0, std::span<float>(buffer.get() + 1, kPerBlock)), sw::ValueError);
  EXPECT_THROW_EXACTLY(c->read_aligned(0, std::span<float>(buffer.get(), 3 * kPerBlock)), sw::ValueError);
  EXPECT_THROW_EXACTLY(c->write_aligned(2 * kPerBlock, one), sw::ValueError);
  auto frozen = c->device()->allocate(kPerBlock, false);
  EXPECT_THROW_EXACTLY(frozen->write_aligned(0, one), sw::RuntimeError);
  EXPECT_EQ(c->version(), 0u);
}

TEST_F(Storage_BlockDeviceBulk, ManyThreadsShareTheOneSubmissionQueue) {
  auto device = make(64);
  std::vector<std::shared_ptr<BlockDeviceCarrier>> carriers;
  for (int t = 0; t < 8; ++t) carriers.push_back(device->allocate(4 * kPerBlock));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto buffer = BlockDevice::aligned_buffer(4 * kPerBlock);
      for (int round = 0; round < 8; ++round) {
        for (std::int64_t i = 0; i < 4 * kPerBlock; ++i) buffer[static_cast<std::size_t>(i)] = static_cast<float>(t * 100 + round);
        carriers[static_cast<std::size_t>(t)]->write_aligned_async(0, std::span<const float>(buffer.get(), 4 * kPerBlock)).wait();
        std::fill(buffer.get(), buffer.get() + 4 * kPerBlock, -1.0f);
        carriers[static_cast<std::size_t>(t)]->read_aligned(0, std::span<float>(buffer.get(), 4 * kPerBlock));
        for (std::int64_t i = 0; i < 4 * kPerBlock; ++i)
          if (buffer[static_cast<std::size_t>(i)] != static_cast<float>(t * 100 + round)) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (const auto& c : carriers) EXPECT_EQ(c->version(), 8u);
}

TEST_F(Storage_BlockDeviceBulk, ReleaseWaitsForTransfersInFlight) {
  auto device = make(16);
  auto c = device->allocate(8 * kPerBlock);
  auto buffer = BlockDevice::aligned_buffer(8 * kPerBlock);
  std::fill(buffer.get(), buffer.get() + 8 * kPerBlock, 5.0f);
  auto pending = c->write_aligned_async(0, std::span<const float>(buffer.get(), 8 * kPerBlock));
  c->release();                 // drives the write to completion first
  EXPECT_TRUE(pending.done());
  EXPECT_EQ(device->free_bytes(), 16 * kBlock);
  EXPECT_EQ(raw_float(0), 5.0f);
}

// ---------------------------------------------------------------------------
// Storage_BlockDeviceChecksums: per-block xxHash verified before use

using Storage_BlockDeviceChecksums = ImageTest;

TEST_F(Storage_BlockDeviceChecksums, ACorruptedBlockIsAnOSErrorNamingImageAndOffsetBeforeAnyValue) {
  auto device = make(4, true);
  EXPECT_TRUE(device->checksums());
  auto c = device->allocate(2 * kPerBlock);
  c->set_value(kPerBlock + 1, F(3));
  corrupt(c->extent_offset() + kBlock + 8, 99.0f);  // behind the device's back
  EXPECT_EQ(c->get_value(0), F(0));                // the other block verifies
  try {
    c->get_value(kPerBlock + 1);
    ADD_FAILURE() << "a corrupted block was read";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EBADMSG);
    EXPECT_EQ(e.filename(), image_.string());
    EXPECT_EQ(e.offset(), c->extent_offset() + kBlock);
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos);
  }
  auto buffer = BlockDevice::aligned_buffer(2 * kPerBlock);
  EXPECT_THROW_EXACTLY(c->read_aligned(0, std::span<float>(buffer.get(), 2 * kPerBlock)), sw::OSError);
  const std::uint64_t version = c->version();
  EXPECT_THROW_EXACTLY(c->set_value(kPerBlock, F(1)), sw::OSError);  // the read-modify-write reads first
  EXPECT_EQ(c->version(), version);
  // Rewriting the block makes it verifiable again (the failed read left the
  // buffer unspecified: it holds the corrupted bytes, so clear it first).
  std::fill(buffer.get(), buffer.get() + 2 * kPerBlock, 0.0f);
  c->write_aligned(0, std::span<const float>(buffer.get(), 2 * kPerBlock));
  EXPECT_EQ(c->get_value(kPerBlock + 2), F(0));
}

TEST_F(Storage_BlockDeviceChecksums, WithoutChecksumsTheCorruptionIsReadAsAValue) {
  auto device = make(4, false);
  auto c = device->allocate(kPerBlock);
  corrupt(c->extent_offset() + 8, 99.0f);
  EXPECT_EQ(c->get_value(2), F(99.0f));
}

// ---------------------------------------------------------------------------
// Storage_BlockDeviceFaults: every call site fails as the kernel would; each
// is an OSError naming the image and offset, and nothing is half-changed.

struct FaultyBlockIo : BlockIo {
  std::string site;      // "open", "create", "reserve", "size", "lock", "ring", "submit", "reap", "read", "write"
  int error = EIO;       // the errno, or 0 with short_transfer
  bool short_transfer = false;
  int skip = 0;          // let this many hits of `site` pass first
  int hits = 0;
  std::vector<std::uint64_t> doomed;  // tags whose completion reports -error
  std::vector<std::unique_ptr<float[], sw::AlignedFree>> scratch;

  bool hit(const char* name) { return site == name && hits++ == skip; }
  // BlockDevice's two opens: a fresh image (O_CREAT) and an existing one.
  int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
    return hit((flags & O_CREAT) ? "create" : "open") ? error : BlockIo::open(p, flags, mode, fd);
  }
  int reserve(int fd, std::int64_t bytes) noexcept override { return hit("reserve") ? error : BlockIo::reserve(fd, bytes); }
  int status(int fd, sw::sysio::FileStatus& s) noexcept override {
    return hit("size") ? error : BlockIo::status(fd, s);
  }
  int lock(int fd) noexcept override { return hit("lock") ? error : BlockIo::lock(fd); }
  int ring_create(unsigned entries, Ring*& ring) noexcept override {
    return hit("ring") ? error : BlockIo::ring_create(entries, ring);
  }
  int submit(Ring* ring, std::span<const BlockRequest> requests) noexcept override {
    if (hit("submit")) return error;
    std::vector<BlockRequest> changed(requests.begin(), requests.end());
    for (BlockRequest& r : changed) {
      if (!hit(r.write ? "write" : "read")) continue;
      if (short_transfer) {
        r.bytes /= 2;  // really transfers the first half
      } else {
        doomed.push_back(r.tag);
        if (r.write) {  // a failed write writes nothing: read into scratch instead
          scratch.emplace_back(sw::BlockDevice::aligned_buffer(r.bytes / 4).release());
          r.write = false;
          r.buffer = scratch.back().get();
        }
      }
    }
    return BlockIo::submit(ring, changed);
  }
  int reap(Ring* ring, bool block, BlockCompletion& out) noexcept override {
    if (block && hit("reap")) return error;
    const int e = BlockIo::reap(ring, block, out);
    if (e == 0 && std::find(doomed.begin(), doomed.end(), out.tag) != doomed.end()) out.result = -error;
    return e;
  }
};

class Storage_BlockDeviceFaults : public ImageTest {
 protected:
  template <class F>
  sw::OSError expect_os_error(F&& f, int error) {
    try {
      f();
    } catch (const sw::OSError& e) {
      EXPECT_EQ(e.error_number(), error) << e.what();
      EXPECT_EQ(e.filename(), image_.string()) << e.what();
      return e;
    }
    ADD_FAILURE() << "no OSError";
    return sw::OSError("", 0, "", std::nullopt);
  }
};

TEST_F(Storage_BlockDeviceFaults, OpeningFailuresCloseAndRemoveWhatTheyMade) {
  for (const char* site : {"create", "reserve", "size", "lock", "ring"}) {
    for (int error : {EIO, ENOSPC}) {
      FaultyBlockIo io;
      io.site = site;
      io.error = error;
      ScopedBlockIo scope(io);
      expect_os_error([&] { BlockDevice::open(image_, 4 * kBlock); }, error);
      EXPECT_FALSE(fs::exists(image_)) << site;  // a created image is removed again
    }
  }
  make(4).reset();  // an existing image: open() failures leave it as it was
  for (const char* site : {"open", "size", "lock", "ring"}) {
    FaultyBlockIo io;
    io.site = site;
    ScopedBlockIo scope(io);
    expect_os_error([&] { BlockDevice::open(image_); }, EIO);
    EXPECT_EQ(fs::file_size(image_), static_cast<std::uintmax_t>(4 * kBlock)) << site;
  }
  EXPECT_NO_THROW(BlockDevice::open(image_));  // and not left locked
}

TEST_F(Storage_BlockDeviceFaults, ReadFailuresChangeNoValueOrVersion) {
  auto c = make(4)->allocate(kPerBlock);
  c->set_value(3, F(8));
  for (const char* site : {"read", "submit", "reap"}) {
    for (int error : {EIO, ENOSPC}) {
      FaultyBlockIo io;
      io.site = site;
      io.error = error;
      {
        ScopedBlockIo scope(io);
        const sw::OSError e = expect_os_error([&] { c->get_value(3); }, error);
        EXPECT_EQ(e.offset(), c->extent_offset()) << site;
      }
      EXPECT_EQ(c->get_value(3), F(8));
      EXPECT_EQ(c->version(), 1u);
    }
  }
  FaultyBlockIo io;
  io.site = "read";
  io.short_transfer = true;
  ScopedBlockIo scope(io);
  const sw::OSError e = expect_os_error([&] { c->get_value(3); }, EIO);
  EXPECT_NE(std::string(e.what()).find("short read"), std::string::npos) << e.what();
}

TEST_F(Storage_BlockDeviceFaults, WriteFailuresLeaveTheValueAndVersionAsTheyWere) {
  auto c = make(4, true)->allocate(kPerBlock);
  c->set_value(0, F(8));
  struct Case {
    const char* site;
    int error;
    bool short_transfer;
  };
  // "read"/"submit"/"reap" with skip 0 fail the read of the read-modify-
  // write; "write" and skip 1 of "submit"/"reap" fail its write.
  for (const Case k : {Case{"write", EIO, false}, Case{"write", ENOSPC, false}, Case{"write", 0, true},
                       Case{"read", EIO, false}, Case{"submit", EIO, false}, Case{"reap", EIO, false}}) {
    for (int skip : {0, 1}) {
      if (std::string(k.site) == "write" && skip == 1) continue;
      if (std::string(k.site) == "read" && skip == 1) continue;
      FaultyBlockIo io;
      io.site = k.site;
      io.error = k.error;
      io.short_transfer = k.short_transfer;
      io.skip = skip;
      {
        ScopedBlockIo scope(io);
        // Slot 0 lies in the half a short write does transfer.
        expect_os_error([&] { c->set_value(0, F(100)); }, k.short_transfer ? EIO : k.error);
      }
      EXPECT_EQ(c->get_value(0), F(8)) << k.site << " skip " << skip;  // verified by its checksum too
      EXPECT_EQ(c->version(), 1u);
      EXPECT_EQ(raw_float(c->extent_offset()), 8.0f);
    }
  }
}

TEST_F(Storage_BlockDeviceFaults, BulkFailuresAreOSErrorsWithTheFailingOffsetAndNoVersionStep) {
  auto device = make(1024);
  const std::int64_t slots = (2 << 20) / 4;  // two requests of 1 MiB
  auto c = device->allocate(slots);
  auto buffer = BlockDevice::aligned_buffer(slots);
  const std::span<float> all(buffer.get(), static_cast<std::size_t>(slots));
  for (int error : {EIO, ENOSPC}) {
    FaultyBlockIo io;
    io.site = "write";
    io.error = error;
    io.skip = 1;  // the second request
    ScopedBlockIo scope(io);
    auto pending = c->write_aligned_async(0, all);
    const sw::OSError e = expect_os_error([&] { pending.wait(); }, error);
    EXPECT_EQ(e.offset(), c->extent_offset() + BlockDevice::request_bytes);
    expect_os_error([&] { pending.wait(); }, error);  // the same error again
    EXPECT_EQ(c->version(), 0u);
  }
  FaultyBlockIo io;
  io.site = "read";
  io.short_transfer = true;
  ScopedBlockIo scope(io);
  expect_os_error([&] { c->read_aligned(0, all); }, EIO);
}

TEST_F(Storage_BlockDeviceFaults, ZeroingFailureGivesTheExtentBack) {
  auto device = make(4);
  for (int error : {EIO, ENOSPC}) {
    FaultyBlockIo io;
    io.site = "write";
    io.error = error;
    ScopedBlockIo scope(io);
    const sw::OSError e = expect_os_error([&] { device->allocate(kPerBlock); }, error);
    EXPECT_EQ(e.offset(), 0);
    EXPECT_EQ(device->free_bytes(), 4 * kBlock);
  }
}

}  // namespace
