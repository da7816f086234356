// The FileBacked -> CPU route's direct reads (docs/storage.md, "FileBacked
// -> CPU reads"): the page-aligned interior of the file range is read with
// O_DIRECT through io_uring, several reads in flight, the unaligned head and
// tail buffered; a file system that refuses O_DIRECT (or a kernel that
// refuses io_uring) falls back to buffered reads; every call goes through
// SystemIo, so faults on the new calls are injected here. Suite
// Storage_MoveDirect names that section's choices; the transaction and
// OSError guarantees are interop-movement's (docs/storage.md, "Movement").
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sysio/system_io.h"

#include <fcntl.h>
#include "support/bounded_wait.h"

namespace {

using namespace strideweave;
using FileIo = sysio::SystemIo;
using sysio::ScopedSystemIo;

constexpr std::int64_t kAlign = 4096;
constexpr std::int64_t kRequest = 4 << 20;  // moves.cpp's read size

// Counts every call (in order) and fails the `nth` (0-based) of `call`:
// "completion" rewrites the nth completion's result to -error, or (error 0)
// to a short read of `short_bytes`; `eof_after` makes every read_at after
// the injected fault return end of file.
class DirectIo : public FileIo {
 public:
  DirectIo(std::string call = "", int nth = -1, int error = 0, std::int64_t short_bytes = 0, bool eof_after = false)
      : call_(std::move(call)), nth_(nth), error_(error), short_bytes_(short_bytes), eof_after_(eof_after) {}
  // The move's two opens: the direct descriptor (O_DIRECT) and the mapped
  // file's own.
  int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
    if (!(flags & O_DIRECT)) {
      hit("open_existing");
      return FileIo::open(p, flags, mode, fd);
    }
    if (hit("open_direct")) return error_;
    const int e = FileIo::open(p, flags, mode, fd);
    refused = e == EINVAL;
    return e;
  }
  int ring_create(unsigned n, sysio::Ring*& r) noexcept override {
    if (hit("ring_create")) return error_;
    return FileIo::ring_create(n, r);
  }
  int submit(sysio::Ring* r, std::span<const sysio::RingRequest> q) noexcept override {
    if (hit("submit_reads")) return error_;
    for (const sysio::RingRequest& d : q) buffers.push_back(d.buffer);
    return FileIo::submit(r, q);
  }
  int reap(sysio::Ring* r, bool block, sysio::RingCompletion& c) noexcept override {
    if (hit("reap")) return error_;
    if (const int e = FileIo::reap(r, block, c)) return e;
    if (hit("completion")) c.result = error_ ? -error_ : std::min<std::int64_t>(c.result, short_bytes_);
    return 0;
  }
  int read_at(int fd, void* b, std::size_t n, std::int64_t o, std::size_t& done) noexcept override {
    if (hit("read_at")) return error_;
    if (eof_after_ && injected_) {
      done = 0;
      return 0;
    }
    return FileIo::read_at(fd, b, n, o, done);
  }
  int close(int fd) noexcept override {
    hit("close");
    return FileIo::close(fd);
  }
  int sync_mapping(void* a, std::size_t n) noexcept override {
    hit("sync");
    return FileIo::sync_mapping(a, n);
  }
  int calls(const std::string& c) const { return counts_.count(c) ? counts_.at(c) : 0; }
  std::vector<std::string> order;
  std::vector<void*> buffers;
  bool refused = false;

 private:
  bool hit(const std::string& c) {
    order.push_back(c);
    const int k = counts_[c]++;
    const bool h = c == call_ && k == nth_;
    injected_ = injected_ || h;
    return h;
  }
  std::string call_;
  int nth_;
  int error_;
  std::int64_t short_bytes_;
  bool eof_after_;
  bool injected_ = false;
  std::map<std::string, int> counts_;
};

float value_at(std::int64_t i) { return static_cast<float>(i % 1000003); }

// A user file: `lead` bytes of header, then `n` Float32 slots value_at(i).
std::filesystem::path write_file(const std::string& name, std::int64_t lead, std::int64_t n) {
  const auto path = FileBacked::session_directory() / name;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_at(i);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string header(static_cast<std::size_t>(lead), 'h');
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return path;
}

bool holds_values(const CPU& c, std::int64_t n) {
  const float* p = c.data<float>();
  for (std::int64_t i = 0; i < n; ++i)
    if (p[i] != value_at(i)) return false;
  return true;
}

std::shared_ptr<CPU> filled_cpu(std::int64_t n, float v) {
  auto c = CPU::create(n);
  std::fill(c->data<float>(), c->data<float>() + n, v);
  return c;
}

// 3.2 MB after a 12-byte header: an unaligned head, a 3 MiB+ interior, an
// unaligned tail.
constexpr std::int64_t kSmallSlots = 800'003;

TEST(Storage_MoveDirect, TheAlignedInteriorIsReadWithODirectTheHeadAndTailBuffered) {
  const auto path = write_file("direct_unaligned.f32", 12, kSmallSlots);
  const Tensor x(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({kSmallSlots}));
  std::vector<std::int64_t> seen;
  MoveOptions o;
  o.window_bytes = 1 << 20;
  o.progress_threshold_bytes = 0;
  o.progress = [&](const MoveProgress& p) { seen.push_back(p.bytes_done); };
  DirectIo io;
  ScopedSystemIo scope(io);
  auto dest = CPU::create(kSmallSlots);
  move(x, dest, o);
  if (io.refused) GTEST_SKIP() << "this file system refuses O_DIRECT (the fallback is tested below)";
  EXPECT_TRUE(holds_values(*dest, kSmallSlots));
  EXPECT_EQ(io.calls("open_direct"), 1);
  EXPECT_EQ(io.calls("ring_create"), 1);
  EXPECT_GE(io.calls("submit_reads"), 1);
  EXPECT_EQ(io.calls("reap"), 1);  // 3 MiB + a little: one 4 MiB request
  EXPECT_EQ(io.calls("read_at"), 2);  // the head and the tail
  // The destination is 2 MiB-aligned and the file range starts 12 bytes
  // past a page: the reads went through the bounce buffers.
  for (void* b : io.buffers) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % kAlign, 0u);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), kSmallSlots * 4);
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, AnAlignedRangeIsReadStraightIntoTheCpuMemory) {
  constexpr std::int64_t n = 3 * (kRequest / 4) + 1000;  // three whole requests and a tail
  const auto path = write_file("direct_aligned.f32", 0, n);
  const Tensor x(FileBacked::open(path, DType::Float32()), Shape::of({n}));
  DirectIo io;
  ScopedSystemIo scope(io);
  auto dest = CPU::create(n);
  move(x, dest);
  if (io.refused) GTEST_SKIP() << "this file system refuses O_DIRECT";
  EXPECT_TRUE(holds_values(*dest, n));
  ASSERT_EQ(io.buffers.size(), 3u);
  auto* to = reinterpret_cast<std::byte*>(dest->data<float>());
  std::vector<void*> expected{to, to + kRequest, to + 2 * kRequest};
  std::sort(io.buffers.begin(), io.buffers.end());
  EXPECT_EQ(io.buffers, expected);
  EXPECT_EQ(io.calls("read_at"), 1);  // the tail only
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, AShortCompletionOfAnAlignedReadStraightIntoCpuMemoryStillDeliversEveryValue) {
  // docs/storage.md: a short read's remainder is read buffered; that holds
  // where the read goes straight into the destination's memory (no bounce
  // buffer) as much as through a bounce buffer.
  constexpr std::int64_t n = 3 * (kRequest / 4) + 1000;  // three whole requests and a tail
  const auto path = write_file("direct_aligned_short.f32", 0, n);
  for (int nth : {0, 1, 2}) {
    SCOPED_TRACE(::testing::Message() << "short completion #" << nth);
    const Tensor x(FileBacked::open(path, DType::Float32()), Shape::of({n}));
    DirectIo io("completion", nth, 0, 4096);
    ScopedSystemIo scope(io);
    auto dest = filled_cpu(n, -2);
    move(x, dest);
    if (io.refused) GTEST_SKIP() << "this file system refuses O_DIRECT";
    auto* to = reinterpret_cast<std::byte*>(dest->data<float>());
    std::sort(io.buffers.begin(), io.buffers.end());
    EXPECT_EQ(io.buffers, (std::vector<void*>{to, to + kRequest, to + 2 * kRequest}));  // no bounce buffer
    EXPECT_TRUE(holds_values(*dest, n));
    EXPECT_EQ(io.calls("read_at"), 2);  // the short read's remainder, the tail
  }
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, RefusedODirectOrIoUringFallsBackToBufferedReads) {
  const auto path = write_file("direct_fallback.f32", 12, kSmallSlots);
  // A move releases its source: each move opens the file afresh.
  auto source = [&] { return Tensor(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({kSmallSlots})); };
  {
    DirectIo io("open_direct", 0, EINVAL);  // tmpfs's answer
    ScopedSystemIo scope(io);
    auto dest = CPU::create(kSmallSlots);
    move(source(), dest);
    EXPECT_TRUE(holds_values(*dest, kSmallSlots));
    EXPECT_EQ(io.calls("ring_create"), 0);
    EXPECT_EQ(io.calls("submit_reads"), 0);
    EXPECT_EQ(io.calls("read_at"), 1);  // one 64 MiB window
  }
  for (int error : {ENOSYS, EPERM}) {
    DirectIo io("ring_create", 0, error);
    ScopedSystemIo scope(io);
    auto dest = CPU::create(kSmallSlots);
    move(source(), dest);
    EXPECT_TRUE(holds_values(*dest, kSmallSlots));
    EXPECT_EQ(io.calls("submit_reads"), 0);
    EXPECT_EQ(io.calls("close"), io.calls("open_existing") + io.calls("open_direct"));  // nothing leaks
  }
  std::remove(path.c_str());
}

struct Fault {
  std::string call;
  int nth;
  int error;
  std::int64_t short_bytes;
  bool eof_after;
  int expected_errno;
  std::optional<std::int64_t> expected_offset;  // -1: any page-aligned offset of the interior
};

TEST(Storage_MoveDirect, FaultsOnTheDirectPathAreOSErrorsAndLeaveBothCarriersAsTheyWere) {
  // 40 MiB + a little after a 12-byte header: ten 4 MiB requests, so a
  // second submission follows the first eight.
  constexpr std::int64_t n = 10 * (kRequest / 4) + 5;
  const auto path = write_file("direct_faults.f32", 12, n);
  // A move releases its source: each move opens the file afresh.
  auto source = [&] { return Tensor(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({n})); };
  {
    DirectIo probe;
    ScopedSystemIo scope(probe);
    move(source(), CPU::create(n));
    if (probe.refused) GTEST_SKIP() << "this file system refuses O_DIRECT";
  }
  const std::int64_t head = kAlign;  // the interior starts at the first page boundary past byte 12
  const std::vector<Fault> faults{
      {"open_direct", 0, EIO, 0, false, EIO, std::nullopt},
      {"ring_create", 0, ENOMEM, 0, false, ENOMEM, std::nullopt},
      {"submit_reads", 0, EIO, 0, false, EIO, head},
      {"submit_reads", 1, EAGAIN, 0, false, EAGAIN, head + 8 * kRequest},
      {"reap", 3, EIO, 0, false, EIO, -1},
      {"completion", 2, EIO, 0, false, EIO, -1},
      {"completion", 1, ENOSPC, 0, false, ENOSPC, -1},
      // A short read whose remainder meets the end of the file: EIO.
      {"completion", 0, 0, 4096, true, EIO, -1},
      // The head's buffered read.
      {"read_at", 0, EIO, 0, false, EIO, 12},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(::testing::Message() << f.call << " #" << f.nth << " errno " << f.error);
    const Tensor x = source();
    auto dest = filled_cpu(n, -2);
    const std::uint64_t dv = dest->version(), sv = x.carrier()->version();
    DirectIo io(f.call, f.nth, f.error, f.short_bytes, f.eof_after);
    ScopedSystemIo scope(io);
    try {
      move(x, dest);
      FAIL() << "no OSError";
    } catch (const OSError& e) {
      EXPECT_EQ(e.error_number(), f.expected_errno) << e.what();
      EXPECT_EQ(e.filename(), path.string());
      if (f.expected_offset == std::optional<std::int64_t>(-1)) {
        ASSERT_TRUE(e.offset().has_value()) << e.what();
        EXPECT_EQ((*e.offset() - head) % 4096, 0) << e.what();
        EXPECT_GE(*e.offset(), head);
        if (f.eof_after) {
          EXPECT_NE(std::string(e.what()).find("short read"), std::string::npos) << e.what();
        }
      } else {
        EXPECT_EQ(e.offset(), f.expected_offset) << e.what();
      }
    }
    EXPECT_EQ(dest->version(), dv);
    const float* p = dest->data<float>();
    EXPECT_TRUE(std::all_of(p, p + n, [](float v) { return v == -2; }));
    EXPECT_FALSE(x.carrier()->is_released());
    EXPECT_EQ(x.carrier()->version(), sv);
    EXPECT_EQ(io.calls("close"), io.calls("open_existing") + io.calls("open_direct") - (f.call == "open_direct"));
  }
  // A short read that the buffered remainder completes is no error.
  {
    DirectIo io("completion", 1, 0, 4096);
    ScopedSystemIo scope(io);
    auto dest = CPU::create(n);
    move(source(), dest);
    EXPECT_TRUE(holds_values(*dest, n));
    EXPECT_EQ(io.calls("read_at"), 3);  // the head, the short read's remainder, the tail
  }
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, AProgressCallbackThatThrowsMidwayRollsBackAfterTheReadsInFlight) {
  constexpr std::int64_t n = 10 * (kRequest / 4);
  const auto path = write_file("direct_progress.f32", 0, n);
  const Tensor x(FileBacked::open(path, DType::Float32()), Shape::of({n}));
  MoveOptions o;
  o.window_bytes = kRequest;
  o.progress_threshold_bytes = 0;
  std::vector<std::int64_t> seen;
  o.progress = [&](const MoveProgress& p) {
    seen.push_back(p.bytes_done);
    if (p.bytes_done >= 3 * kRequest) throw ValueError("cancelled by the callback");
  };
  DirectIo io;
  ScopedSystemIo scope(io);
  auto dest = filled_cpu(n, -2);
  const std::uint64_t dv = dest->version();
  EXPECT_THROW(move(x, dest, o), ValueError);
  EXPECT_EQ(dest->version(), dv);
  const float* p = dest->data<float>();
  EXPECT_TRUE(std::all_of(p, p + n, [](float v) { return v == -2; }));
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  for (std::int64_t b : seen) EXPECT_EQ(b % kRequest, 0);  // whole windows, in order
  // Every submitted read was reaped before the rollback.
  if (!io.refused) {
    EXPECT_EQ(io.calls("reap"), static_cast<int>(io.buffers.size()));
  }
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, TheSparseBeforeImageRestoresZeroAndNonZeroBlocksExactly) {
  // The before-image records all-zero 64 KiB blocks without copying them;
  // a failed move must still restore every byte, zero or not.
  constexpr std::int64_t n = 2 * (kRequest / 4) + 7;
  const auto path = write_file("direct_sparse.f32", 0, n);
  const Tensor x(FileBacked::open(path, DType::Float32()), Shape::of({n}));
  auto dest = CPU::create(n);  // zeros
  float* p = dest->data<float>();
  const std::vector<std::int64_t> at{0, 16383, 16384, 40000, n - 1};  // block edges, a middle, the last slot
  for (std::int64_t i : at) p[i] = -3.0f - static_cast<float>(i);
  std::vector<float> before(p, p + n);
  DirectIo io("read_at", 0, EIO);  // fails after the before-image was taken
  ScopedSystemIo scope(io);
  EXPECT_THROW(move(x, dest), OSError);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), p));
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, ValuesSetThroughTheMappingAreFlushedBeforeTheDirectRead) {
  constexpr std::int64_t n = 2 * (kRequest / 4);  // 8 MiB
  auto file = FileBacked::create(std::nullopt, DType::Float32(), true, n);
  const std::vector<std::int64_t> at{0, 1, kRequest / 4, n / 2 + 7, n - 1};
  for (std::int64_t i : at) file->set_value(i, Value::from_float32(static_cast<float>(i) + 0.5f));
  const Tensor x(file, Shape::of({n}));
  DirectIo io;
  ScopedSystemIo scope(io);
  auto dest = CPU::create(n);
  move(x, dest);
  const float* p = dest->data<float>();
  for (std::int64_t i : at) EXPECT_EQ(p[i], static_cast<float>(i) + 0.5f) << i;
  EXPECT_EQ(p[2], 0.0f);
  if (io.refused) GTEST_SKIP() << "this file system refuses O_DIRECT";
  // msync came before the O_DIRECT descriptor was opened.
  const auto sync = std::find(io.order.begin(), io.order.end(), "sync");
  const auto direct = std::find(io.order.begin(), io.order.end(), "open_direct");
  ASSERT_NE(sync, io.order.end());
  ASSERT_NE(direct, io.order.end());
  EXPECT_LT(sync, direct);
}

// The asynchronous direct route (docs/storage.md, "FileBacked -> CPU reads",
// "Asynchronous"). GatedIo holds every reap back until open() is called, so
// a test sees the move while its reads are pending without any timing; a
// reap on the thread that created the GatedIo (the test's, which calls
// move_async) is never held (a route that reaped before returning would
// otherwise hang the test): it is counted instead. Thread-safe: the move's
// reaper thread calls it while the test reads its counts. Fails the `nth`
// (0-based) call of `call` like DirectIo ("completion": the nth completion's
// result becomes -error).
class GatedIo : public FileIo {
 public:
  explicit GatedIo(std::string call = "", int nth = -1, int error = 0)
      : call_(std::move(call)), nth_(nth), error_(error), test_thread_(std::this_thread::get_id()) {}
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  int calls(const std::string& c) const {
    std::lock_guard lock(mutex_);
    return counts_.count(c) ? counts_.at(c) : 0;
  }
  int reads_submitted() const {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  int reaped_on_test_thread() const {
    std::lock_guard lock(mutex_);
    return reaped_on_test_thread_;
  }
  bool refused() const {
    std::lock_guard lock(mutex_);
    return refused_;
  }

  int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
    if (!(flags & O_DIRECT)) {
      hit("open_existing");
      return FileIo::open(p, flags, mode, fd);
    }
    if (hit("open_direct")) return error_;
    const int e = FileIo::open(p, flags, mode, fd);
    std::lock_guard lock(mutex_);
    refused_ = e == EINVAL;
    return e;
  }
  int submit(sysio::Ring* r, std::span<const sysio::RingRequest> q) noexcept override {
    if (hit("submit_reads")) return error_;
    const int e = FileIo::submit(r, q);
    std::lock_guard lock(mutex_);
    if (e == 0) submitted_ += static_cast<int>(q.size());
    return e;
  }
  int reap(sysio::Ring* r, bool block, sysio::RingCompletion& c) noexcept override {
    {
      std::unique_lock lock(mutex_);
      if (std::this_thread::get_id() == test_thread_) {
        ++reaped_on_test_thread_;
      } else {
        // Bounded: a test that returns before open() fails instead of hanging.
        if (!opened_.wait_for(lock, sw_testing::kHangDeadline, [&] { return open_; }))
          ADD_FAILURE() << "the gated reap waited " << sw_testing::kHangDeadline.count() << " s for open()";
      }
    }
    if (hit("reap")) return error_;
    if (const int e = FileIo::reap(r, block, c)) return e;
    if (hit("completion")) c.result = -error_;
    return 0;
  }
  int read_at(int fd, void* b, std::size_t n, std::int64_t o, std::size_t& done) noexcept override {
    if (hit("read_at")) return error_;
    return FileIo::read_at(fd, b, n, o, done);
  }
  int close(int fd) noexcept override {
    hit("close");
    return FileIo::close(fd);
  }

 private:
  bool hit(const std::string& c) {
    std::lock_guard lock(mutex_);
    const int k = counts_[c]++;
    return c == call_ && k == nth_;
  }
  mutable std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  std::string call_;
  int nth_;
  int error_;
  std::thread::id test_thread_;
  std::map<std::string, int> counts_;
  int submitted_ = 0;
  int reaped_on_test_thread_ = 0;
  bool refused_ = false;
};

// 40 MiB + a little after a 12-byte header: ten 4 MiB requests (a second
// submission follows the first eight), a buffered head and tail.
constexpr std::int64_t kTenRequests = 10 * (kRequest / 4) + 5;

TEST(Storage_MoveDirect, MoveAsyncSubmitsTheDirectReadsAndReturnsBeforeTheyComplete) {
  const auto path = write_file("direct_async.f32", 12, kTenRequests);
  const Tensor x(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({kTenRequests}));
  auto dest = filled_cpu(kTenRequests, -2);
  const std::uint64_t dv = dest->version();
  GatedIo io;
  ScopedSystemIo scope(io);
  const AwaitMove<Tensor> handle = move_async(x, dest);
  if (io.refused()) {
    handle.wait();
    GTEST_SKIP() << "this file system refuses O_DIRECT";
  }
  // Returned with the first eight reads submitted, none reaped, the head
  // read, nothing committed.
  EXPECT_EQ(io.reaped_on_test_thread(), 0);
  EXPECT_FALSE(handle.done());
  EXPECT_EQ(io.reads_submitted(), 8);
  EXPECT_EQ(io.calls("reap"), 0);
  EXPECT_EQ(io.calls("read_at"), 1);  // the head
  EXPECT_FALSE(x.carrier()->is_released());
  EXPECT_EQ(dest->version(), dv);
  io.open();
  const Tensor y = handle.wait();
  EXPECT_TRUE(handle.done());
  EXPECT_EQ(y.carrier().get(), dest.get());
  EXPECT_TRUE(holds_values(*dest, kTenRequests));
  EXPECT_EQ(io.reads_submitted(), 10);
  EXPECT_EQ(io.calls("reap"), 10);
  EXPECT_EQ(io.calls("read_at"), 2);  // the head and the tail
  EXPECT_EQ(io.calls("close"), io.calls("open_existing") + io.calls("open_direct"));
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_EQ(dest->version(), dv + 1);
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, WaitAndDoneOfAnAsyncDirectMoveAreThreadSafeAndIdempotent) {
  const auto path = write_file("direct_async_waiters.f32", 12, kTenRequests);
  auto source = [&] {
    return Tensor(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({kTenRequests}));
  };
  for (const bool fails : {false, true}) {
    SCOPED_TRACE(fails ? "a failing move" : "a move that succeeds");
    const Tensor x = source();
    auto dest = filled_cpu(kTenRequests, -2);
    const std::uint64_t dv = dest->version();
    GatedIo io(fails ? "completion" : "", 4, EIO);
    ScopedSystemIo scope(io);
    const AwaitMove<Tensor> handle = move_async(x, dest);
    if (io.refused()) {
      io.open();
      handle.wait();
      GTEST_SKIP() << "this file system refuses O_DIRECT";
    }
    ASSERT_FALSE(handle.done());
    // Two threads wait, two poll done() and then wait; all at once.
    constexpr int kThreads = 4;
    std::vector<const Carrier*> carriers(kThreads, nullptr);
    std::vector<const void*> errors(kThreads, nullptr);
    std::atomic<int> started{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ++started;
        if (t % 2 == 1) sw_testing::wait_until([&] { return handle.done(); }, "done() of the async direct move");
        try {
          carriers[static_cast<std::size_t>(t)] = handle.wait().carrier().get();
        } catch (const OSError& e) {
          errors[static_cast<std::size_t>(t)] = &e;
        }
      });
    sw_testing::wait_until([&] { return started.load() == kThreads; }, "every waiter thread to start");
    io.open();
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(handle.done());
    if (!fails) {
      for (const Carrier* c : carriers) EXPECT_EQ(c, dest.get());
      EXPECT_EQ(handle.wait().carrier().get(), dest.get());  // again, the same result
      EXPECT_TRUE(holds_values(*dest, kTenRequests));
      EXPECT_EQ(dest->version(), dv + 1);  // committed once
      EXPECT_TRUE(x.carrier()->is_released());
    } else {
      // Every waiter gets the same exception object, and so does a later wait.
      ASSERT_NE(errors[0], nullptr);
      for (const void* e : errors) EXPECT_EQ(e, errors[0]);
      try {
        handle.wait();
        ADD_FAILURE() << "no OSError";
      } catch (const OSError& e) {
        EXPECT_EQ(&e, errors[0]);
        EXPECT_EQ(e.error_number(), EIO);
      }
      EXPECT_EQ(dest->version(), dv);
      const float* p = dest->data<float>();
      EXPECT_TRUE(std::all_of(p, p + kTenRequests, [](float v) { return v == -2; }));
      EXPECT_FALSE(x.carrier()->is_released());
    }
  }
  std::remove(path.c_str());
}

TEST(Storage_MoveDirect, FaultsOfAnAsyncDirectMoveSurfaceAtWaitAndChangeNothing) {
  const auto path = write_file("direct_async_faults.f32", 12, kTenRequests);
  auto source = [&] {
    return Tensor(FileBacked::open(path, DType::Float32(), false, 12), Shape::of({kTenRequests}));
  };
  struct AsyncFault {
    std::string call;
    int nth;
    int error;
  };
  // Each happens on the reaper thread, after move_async returned.
  const std::vector<AsyncFault> faults{
      {"reap", 0, EIO},            // the first wait for a completion
      {"reap", 5, EINTR},          // a later one
      {"completion", 2, EIO},      // a read's -errno
      {"completion", 9, ENOSPC},   // the last read's
      {"submit_reads", 1, EAGAIN}, // the second submission
      {"read_at", 1, EIO},         // the tail (the head is read_at #0, before move_async returns)
  };
  for (const AsyncFault& f : faults) {
    // A destination of -2s (its before-image copied) and one of zeros (its
    // before-image recorded as zero blocks).
    for (const float prior : {-2.0f, 0.0f}) {
      SCOPED_TRACE(::testing::Message() << f.call << " #" << f.nth << " errno " << f.error << ", destination of "
                                        << prior << "s");
      const Tensor x = source();
      const std::uint64_t sv = x.carrier()->version();
      auto dest = filled_cpu(kTenRequests, prior);
      const std::uint64_t dv = dest->version();
      GatedIo io(f.call, f.nth, f.error);
      ScopedSystemIo scope(io);
      std::optional<AwaitMove<Tensor>> handle;
      ASSERT_NO_THROW(handle.emplace(move_async(x, dest)));
      if (io.refused()) {
        io.open();
        GTEST_SKIP() << "this file system refuses O_DIRECT";
      }
      EXPECT_FALSE(handle->done());
      io.open();
      try {
        handle->wait();
        ADD_FAILURE() << "no OSError";
      } catch (const OSError& e) {
        EXPECT_EQ(e.error_number(), f.error) << e.what();
        EXPECT_EQ(e.filename(), path.string());
        ASSERT_TRUE(e.offset().has_value()) << e.what();
      }
      EXPECT_TRUE(handle->done());
      // Nothing changed: the destination as it was, the source live and
      // unwritten, every read reaped and every descriptor closed before the
      // move was settled.
      EXPECT_EQ(dest->version(), dv);
      const float* p = dest->data<float>();
      EXPECT_TRUE(std::all_of(p, p + kTenRequests, [&](float v) { return v == prior; }));
      EXPECT_FALSE(x.carrier()->is_released());
      EXPECT_EQ(x.carrier()->version(), sv);
      EXPECT_EQ(io.calls("reap"), io.reads_submitted() + (f.call == "reap" ? 1 : 0));
      EXPECT_EQ(io.calls("close"), io.calls("open_existing") + io.calls("open_direct"));
      EXPECT_EQ(io.reaped_on_test_thread(), 0);
    }
  }
  std::remove(path.c_str());
}

}  // namespace
