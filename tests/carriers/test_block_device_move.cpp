// Tests of the built-in asynchronous CPU <-> BlockDeviceCarrier move routes
// (include/strideweave/carriers/block_device.h; interop-movement; docs/
// storage.md, "Movement", "Bulk aligned transfers").
//
// Suite names give the requirement: InteropMovement_<requirement> for the
// specification's, Storage_BlockDeviceMove<topic> for the choices
// docs/storage.md writes down (faults, progress, asynchrony). Images are
// plain files in the build tree (a disk file system: tmpfs has no O_DIRECT).
// Faults replace the one I/O interface (src/sysio/system_io.h).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "sysio/system_io.h"
#include "support/bounded_wait.h"

namespace {

using namespace strideweave;
namespace fs = std::filesystem;
using BlockCompletion = sysio::RingCompletion;
using BlockIo = sysio::SystemIo;
using BlockRequest = sysio::RingRequest;
using sysio::Ring;
using ScopedBlockIo = sysio::ScopedSystemIo;

constexpr std::int64_t kBlock = BlockDevice::block_bytes;
constexpr std::int64_t kPerBlock = BlockDevice::slots_per_block;

Value F(float v) { return Value::from_float32(v); }

std::vector<float> iota(std::int64_t n, float from = 0) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(from + static_cast<float>(i));
  return v;
}

Tensor cpu_tensor(const std::vector<float>& values) {
  std::vector<Value> v;
  for (float x : values) v.push_back(F(x));
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor(CPU::from_values(v, DType::Float32()), Shape::of({n}));
}

std::vector<float> slots(const Carrier& c) {
  std::vector<float> out;
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i).f);
  return out;
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}

MoveOptions windows_of(std::int64_t bytes) {
  MoveOptions o;
  o.window_bytes = bytes;
  return o;
}

// Fails the `skip`-th read or write request (0-based) with `error`, or makes
// it short (really transferring half of it). With `gate` "read" or "write",
// no completion is reaped from the first such request on until open() (the
// move's I/O is then still in flight; earlier I/O, such as the before-image
// read, completes as usual).
struct MoveBlockIo : BlockIo {
  std::string site;  // "read" or "write"
  int error = EIO;
  bool short_transfer = false;
  int skip = 0;
  int hits = 0;
  std::vector<std::uint64_t> doomed;
  std::vector<std::unique_ptr<float[], AlignedFree>> scratch;
  std::string gate;
  bool armed = false;
  std::mutex mutex;
  std::condition_variable opened;

  void open() {
    {
      std::lock_guard lock(mutex);
      gate.clear();
    }
    opened.notify_all();
  }
  int submit(Ring* ring, std::span<const BlockRequest> requests) noexcept override {
    std::vector<BlockRequest> changed(requests.begin(), requests.end());
    for (BlockRequest& r : changed) {
      {
        std::lock_guard lock(mutex);
        if (gate == (r.write ? "write" : "read")) armed = true;
      }
      if (site != (r.write ? "write" : "read") || hits++ != skip) continue;
      if (short_transfer) {
        r.bytes /= 2;
      } else {
        doomed.push_back(r.tag);
        if (r.write) {  // a failed write writes nothing
          scratch.emplace_back(BlockDevice::aligned_buffer(r.bytes / 4).release());
          r.write = false;
          r.buffer = scratch.back().get();
        }
      }
    }
    return BlockIo::submit(ring, changed);
  }
  int reap(Ring* ring, bool block, BlockCompletion& out) noexcept override {
    {
      std::unique_lock lock(mutex);
      if (armed && !gate.empty()) {
        if (!block) return EAGAIN;
        // Bounded: a test that returns before open() fails instead of hanging.
        if (!opened.wait_for(lock, sw_testing::kHangDeadline, [&] { return gate.empty(); }))
          ADD_FAILURE() << "the gated reap waited " << sw_testing::kHangDeadline.count() << " s for open()";
      }
    }
    const int e = BlockIo::reap(ring, block, out);
    if (e == 0 && std::find(doomed.begin(), doomed.end(), out.tag) != doomed.end()) out.result = -error;
    return e;
  }
};

class BlockDeviceMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = fs::path(STRIDEWEAVE_BINARY_DIR) / "block_device_images";
    fs::create_directories(dir);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    image_ = dir / (std::string(info->test_suite_name()) + "." + info->name() + "-" + std::to_string(::getpid()) +
                    ".img");
    fs::remove(image_);
    device_ = BlockDevice::open(image_, 64 * kBlock);
  }
  void TearDown() override {
    device_.reset();
    fs::remove(image_);
  }
  // A carrier of n slots holding `fill` everywhere.
  std::shared_ptr<BlockDeviceCarrier> filled(std::int64_t n, float fill) {
    auto c = device_->allocate(n);
    const std::int64_t padded = c->padded_size();
    auto buffer = BlockDevice::aligned_buffer(padded);
    std::fill(buffer.get(), buffer.get() + padded, fill);
    c->write_aligned(0, std::span<const float>(buffer.get(), static_cast<std::size_t>(padded)));
    return c;
  }
  template <class Fn>
  OSError expect_os_error(Fn&& fn, int error) {
    try {
      fn();
    } catch (const OSError& e) {
      EXPECT_EQ(e.error_number(), error) << e.what();
      EXPECT_EQ(e.filename(), image_.string()) << e.what();
      EXPECT_TRUE(e.offset().has_value()) << e.what();
      return e;
    }
    ADD_FAILURE() << "no OSError";
    return OSError("", 0, "", std::nullopt);
  }
  fs::path image_;
  std::shared_ptr<BlockDevice> device_;
};

// ---------------------------------------------------------------------------
// interop-movement, "Move dispatches on the exact carrier class pair"

using InteropMovement_MoveDispatch_BlockDevice = BlockDeviceMoveTest;

TEST_F(InteropMovement_MoveDispatch_BlockDevice, TheBuiltInBulkRoutesAreRegisteredForBothDirections) {
  auto to = registered_move_operation_for(carrier_class<CPU>(), carrier_class<BlockDeviceCarrier>());
  auto from = registered_move_operation_for(carrier_class<BlockDeviceCarrier>(), carrier_class<CPU>());
  ASSERT_NE(dynamic_cast<const CpuToBlockDeviceMoveOperation*>(to.get()), nullptr);
  ASSERT_NE(dynamic_cast<const BlockDeviceToCpuMoveOperation*>(from.get()), nullptr);
  EXPECT_EQ(to->name(), "CpuToBlockDeviceMoveOperation");
  EXPECT_EQ(to->destination_class(), carrier_class<BlockDeviceCarrier>());
  EXPECT_EQ(from->source_class(), carrier_class<BlockDeviceCarrier>());
  EXPECT_THROW(register_move_operation(carrier_class<CPU>(), carrier_class<BlockDeviceCarrier>(),
                                       std::make_shared<const CpuToBlockDeviceMoveOperation>()),
               ValueError);
}

// ---------------------------------------------------------------------------
// interop-movement, "Move relocates values and releases the source"

using InteropMovement_MoveRelocatesValues_BlockDevice = BlockDeviceMoveTest;

TEST_F(InteropMovement_MoveRelocatesValues_BlockDevice, CpuToBlockDeviceAndBackRoundTripsAndStepsOneVersion) {
  const std::int64_t n = 3 * kPerBlock + 7;  // a partial last block
  const Tensor x = cpu_tensor(iota(n));
  auto dest = filled(n, -1);
  const std::uint64_t dv = dest->version();
  const Tensor y = move(x, dest, windows_of(kBlock));
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_EQ(y.carrier().get(), dest.get());
  EXPECT_EQ(dest->version(), dv + 1);  // one versioned mutation
  EXPECT_EQ(slots(*dest), iota(n));
  auto back = CPU::create(n);
  const std::uint64_t bv = back->version();
  const Tensor z = move(y, back, windows_of(2 * kBlock));
  EXPECT_TRUE(dest->is_released());
  EXPECT_EQ(back->version(), bv + 1);
  EXPECT_EQ(floats(z), iota(n));
}

TEST_F(InteropMovement_MoveRelocatesValues_BlockDevice, ANonZeroOffsetAndALargerDestinationKeepItsOtherSlots) {
  // The source view starts mid-block; the destination's slots past the span
  // (in the last written block) keep their values.
  const Tensor base = cpu_tensor(iota(kPerBlock + 200, 1000));
  const Tensor view = Tensor(base.carrier(), 100, Layout::row_major(Shape::of({kPerBlock + 50})));
  auto dest = filled(2 * kPerBlock, -1);
  move(view, dest);
  std::vector<float> expect = iota(kPerBlock + 50, 1100);
  expect.resize(static_cast<std::size_t>(2 * kPerBlock), -1.0f);
  EXPECT_EQ(slots(*dest), expect);
  // And back: a device tensor at a non-zero, unaligned offset.
  const Tensor on_device = Tensor(dest, kPerBlock - 3, Layout::row_major(Shape::of({10})));
  const Tensor z = move(on_device, CPU::create(10));
  EXPECT_EQ(floats(z), std::vector<float>(expect.begin() + kPerBlock - 3, expect.begin() + kPerBlock + 7));
}

// ---------------------------------------------------------------------------
// docs/storage.md: the routes are asynchronous

using Storage_BlockDeviceMoveAsync = BlockDeviceMoveTest;

TEST_F(Storage_BlockDeviceMoveAsync, MoveAsyncReturnsBeforeTheWritesCompleteAndDoneFollowsThem) {
  const std::int64_t n = 4 * kPerBlock;
  auto dest = filled(n, -1);
  const Tensor x = cpu_tensor(iota(n));
  MoveBlockIo io;
  io.gate = "write";
  ScopedBlockIo scope(io);
  AwaitMove<Tensor> pending = move_async(x, dest, windows_of(kBlock));
  EXPECT_FALSE(pending.done());  // the I/O is still in flight
  EXPECT_FALSE(x.carrier()->is_released());
  io.open();
  const Tensor y = pending.wait();
  EXPECT_TRUE(pending.done());
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_EQ(slots(*dest), iota(n));
  EXPECT_EQ(floats(y), iota(n));
}

TEST_F(Storage_BlockDeviceMoveAsync, MoveAsyncReturnsBeforeTheReadsCompleteAndPollingCompletesIt) {
  const std::int64_t n = 2 * kPerBlock;
  auto src = device_->allocate(n);
  move(cpu_tensor(iota(n)), src);
  const Tensor on_device(src, 0, Layout::row_major(Shape::of({n})));
  auto back = CPU::create(n);
  MoveBlockIo io;
  io.gate = "read";
  ScopedBlockIo scope(io);
  AwaitMove<Tensor> pending = move_async(on_device, back);
  EXPECT_FALSE(pending.done());
  io.open();
  ASSERT_TRUE(sw_testing::wait_until([&] { return pending.done(); }, "done() to settle the move"));  // polling alone commits
  EXPECT_TRUE(src->is_released());
  EXPECT_EQ(slots(*back), iota(n));
}

// ---------------------------------------------------------------------------
// docs/storage.md: faults leave both carriers as they were

using Storage_BlockDeviceMoveFaults = BlockDeviceMoveTest;

TEST_F(Storage_BlockDeviceMoveFaults, AFailedOrShortWriteLeavesBothCarriersAsTheyWere) {
  struct Case {
    int error;
    bool short_transfer;
  };
  for (const Case k : {Case{EIO, false}, Case{ENOSPC, false}, Case{0, true}}) {
    const std::int64_t n = 4 * kPerBlock;
    auto dest = filled(n, -1);
    const Tensor x = cpu_tensor(iota(n));
    const std::uint64_t dv = dest->version(), sv = x.carrier()->version();
    {
      MoveBlockIo io;
      io.site = "write";
      io.skip = 2;  // the third window
      io.error = k.error;
      io.short_transfer = k.short_transfer;
      ScopedBlockIo scope(io);
      const OSError e = expect_os_error([&] { move(x, dest, windows_of(kBlock)); }, k.short_transfer ? EIO : k.error);
      EXPECT_EQ(e.offset().value_or(-1), dest->extent_offset() + 2 * kBlock);
      EXPECT_NE(std::string(e.what()).find(image_.string()), std::string::npos);
    }
    EXPECT_FALSE(x.carrier()->is_released());
    EXPECT_EQ(x.carrier()->version(), sv);
    EXPECT_EQ(floats(x), iota(n));
    EXPECT_EQ(dest->version(), dv);
    EXPECT_EQ(slots(*dest), std::vector<float>(static_cast<std::size_t>(n), -1.0f));
  }
}

TEST_F(Storage_BlockDeviceMoveFaults, AFailedOrShortReadLeavesBothCarriersAsTheyWere) {
  for (const bool short_transfer : {false, true}) {
    const std::int64_t n = 3 * kPerBlock;
    auto src = device_->allocate(n);
    move(cpu_tensor(iota(n)), src);
    const Tensor on_device(src, 0, Layout::row_major(Shape::of({n})));
    auto back = CPU::create(n);
    for (std::int64_t i = 0; i < n; ++i) back->set_value(i, F(-2));
    const std::uint64_t bv = back->version(), sv = src->version();
    {
      MoveBlockIo io;
      io.site = "read";
      io.skip = 1;  // the second window (after the first was copied in)
      io.short_transfer = short_transfer;
      ScopedBlockIo scope(io);
      const OSError e = expect_os_error([&] { move(on_device, back, windows_of(kBlock)); }, EIO);
      EXPECT_EQ(e.offset().value_or(-1), src->extent_offset() + kBlock);
    }
    EXPECT_FALSE(src->is_released());
    EXPECT_EQ(src->version(), sv);
    EXPECT_EQ(slots(*src), iota(n));
    EXPECT_EQ(back->version(), bv);
    EXPECT_EQ(slots(*back), std::vector<float>(static_cast<std::size_t>(n), -2.0f));
  }
}

// ---------------------------------------------------------------------------
// docs/storage.md, "Progress": once per window, as for FileBacked

using Storage_BlockDeviceMoveProgress = BlockDeviceMoveTest;

TEST_F(Storage_BlockDeviceMoveProgress, ReportsOncePerWindowInBothDirections) {
  const std::int64_t n = 4 * kPerBlock;
  std::vector<MoveProgress> seen;
  MoveOptions o = windows_of(kBlock);
  o.progress_threshold_bytes = 1;
  o.progress = [&](const MoveProgress& p) { seen.push_back(p); };
  auto dest = device_->allocate(n);
  const Tensor y = move(cpu_tensor(iota(n)), dest, o);
  ASSERT_EQ(seen.size(), 4u);
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].bytes_done, static_cast<std::int64_t>(k + 1) * kBlock);
    EXPECT_EQ(seen[k].bytes_total, n * 4);
  }
  seen.clear();
  move(y, CPU::create(n), o);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.back().bytes_done, n * 4);
}

TEST_F(Storage_BlockDeviceMoveProgress, NeverReportedPastAFailedWindow) {
  const std::int64_t n = 4 * kPerBlock;
  std::vector<MoveProgress> seen;
  MoveOptions o = windows_of(kBlock);
  o.progress_threshold_bytes = 1;
  o.progress = [&](const MoveProgress& p) { seen.push_back(p); };
  auto dest = device_->allocate(n);
  MoveBlockIo io;
  io.site = "write";
  io.skip = 2;
  ScopedBlockIo scope(io);
  expect_os_error([&] { move(cpu_tensor(iota(n)), dest, o); }, EIO);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.back().bytes_done, 2 * kBlock);
}

}  // namespace
