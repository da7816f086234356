// Issue 20, step 8: one I/O seam (src/sysio/system_io.h) below FileBacked,
// BlockDevice and the formats: one EINTR rule, one ring-teardown order, one
// fault-injection interface.
#include <gtest/gtest.h>

#include <strideweave/carriers/block_device.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>
#include <strideweave/formats.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "sysio/system_io.h"

namespace sw = strideweave;
namespace fs = std::filesystem;

namespace {

std::atomic<int> g_signals{0};
extern "C" void count_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// SIGUSR1 without SA_RESTART, so a blocked call it interrupts fails with
// EINTR unless the seam retries it; the previous action is restored.
class InterruptingSignal {
 public:
  InterruptingSignal() {
    struct sigaction action {};
    action.sa_handler = count_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    sigaction(SIGUSR1, &action, &previous_);
  }
  ~InterruptingSignal() { sigaction(SIGUSR1, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

// A scratch directory on a disk file system (BlockDevice needs O_DIRECT).
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::path(STRIDEWEAVE_BINARY_DIR) / "sysio-test-XXXXXX";
    std::string t = dir.string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
    dir = t;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

TEST(SystemIo_Issue20Step8, ABlockedWriteInterruptedBySignalsIsRetriedNotReportedAsEintr) {
  // The formats' write(2) did not retry EINTR before the seam; FileBacked's
  // pwrite did. Now every caller gets the same rule: a pipe's writer blocks
  // on a full pipe, signals interrupt it (no SA_RESTART), and the call still
  // completes once the pipe drains.
  InterruptingSignal handler;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  std::vector<char> chunk(4096, 'x');
  while (::write(fds[1], chunk.data(), chunk.size()) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);
  ASSERT_EQ(::fcntl(fds[1], F_SETFL, 0), 0);  // the writer blocks from here

  std::atomic<bool> started{false}, finished{false};
  int result = -1;
  std::size_t done = 0;
  std::thread writer([&] {
    started = true;
    result = sw::sysio::system_io().write(fds[1], chunk.data(), chunk.size(), done);
    finished = true;
  });
  while (!started) std::this_thread::yield();
  g_signals = 0;
  // Interrupt the blocked writer repeatedly; it must still be waiting.
  for (int i = 0; i < 20 && !finished; ++i) {
    pthread_kill(writer.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(finished.load()) << "the write returned while the pipe was full (errno " << result << ")";
  EXPECT_GT(g_signals.load(), 0);
  // Drain the pipe: the retried write now completes.
  std::vector<char> sink(65536);
  while (!finished) {
    const ssize_t n = ::read(fds[0], sink.data(), sink.size());
    if (n <= 0) std::this_thread::yield();
  }
  writer.join();
  EXPECT_EQ(result, 0) << std::strerror(result);
  EXPECT_GT(done, 0u);
  ::close(fds[0]);
  ::close(fds[1]);
}

// One replacement fails every open with EACCES.
struct RefusingOpen : sw::sysio::SystemIo {
  int opens = 0;
  int open(const std::string&, int, unsigned, int&) noexcept override {
    ++opens;
    return EACCES;
  }
};

TEST(SystemIo_Issue20Step8, OneReplacementInjectsFaultsIntoFileBackedBlockDeviceAndTheFormats) {
  Scratch scratch;
  const fs::path npy = scratch.dir / "t.npy";
  const std::vector<sw::Value> one{sw::Value::from_float32(1.0f)};
  sw::save_npy(npy, sw::Tensor(sw::CPU::from_values(one, sw::DType::Float32()), sw::Shape::of({1})));
  RefusingOpen io;
  {
    sw::sysio::ScopedSystemIo scope(io);
    const auto raises_eacces = [](auto&& call, const char* what) {
      try {
        call();
        ADD_FAILURE() << what << ": no error";
      } catch (const sw::OSError& e) {
        EXPECT_EQ(e.error_number(), EACCES) << what << ": " << e.what();
      }
    };
    raises_eacces([&] { sw::FileBacked::open(npy, sw::DType::Float32()); },
                  "FileBacked::open");
    raises_eacces([&] { sw::BlockDevice::open(scratch.dir / "image", 1 << 20); }, "BlockDevice::open");
    raises_eacces([&] { sw::load_npy(npy); }, "load_npy");
    raises_eacces([&] { sw::save_npy(scratch.dir / "u.npy", sw::load_npy(npy)); }, "save_npy");
  }
  EXPECT_GE(io.opens, 3);
  EXPECT_FALSE(fs::exists(scratch.dir / "image"));
  EXPECT_FALSE(fs::exists(scratch.dir / "u.npy"));
  EXPECT_EQ(sw::load_npy(npy).values()[0].f, 1.0f);  // the scope ended: the system's calls again
}

TEST(SystemIo_Issue20Step8, ABatchLargerThanTheQueueIsRefusedBeforeAnythingIsPrepared) {
  Scratch scratch;
  sw::sysio::SystemIo& io = sw::sysio::system_io();
  int fd = -1;
  ASSERT_EQ(io.open((scratch.dir / "ring").string(), O_RDWR | O_CREAT | O_EXCL, 0600, fd), 0);
  sw::sysio::Ring* ring = nullptr;
  const int created = io.ring_create(2, ring);
  if (created == ENOSYS || created == EPERM) {
    io.close(fd);
    GTEST_SKIP() << "io_uring is refused here (" << std::strerror(created) << ")";
  }
  ASSERT_EQ(created, 0);
  char out[8] = "abcdefg", in[8] = {};
  std::vector<sw::sysio::RingRequest> too_many(3);  // the queue has 2 entries
  for (auto& r : too_many) r = {true, fd, out, 8, 0, 9};
  EXPECT_EQ(io.submit(ring, too_many), EBUSY);  // refused before anything is prepared
  const sw::sysio::RingRequest write{true, fd, out, 8, 0, 1};
  ASSERT_EQ(io.submit(ring, std::span(&write, 1)), 0);
  sw::sysio::RingCompletion c;
  ASSERT_EQ(io.reap(ring, true, c), 0);
  EXPECT_EQ(c.tag, 1u);  // not 9: the refused batch never ran
  EXPECT_EQ(c.result, 8);
  EXPECT_EQ(io.reap(ring, false, c), EAGAIN);
  const sw::sysio::RingRequest read{false, fd, in, 8, 0, 2};
  ASSERT_EQ(io.submit(ring, std::span(&read, 1)), 0);
  ASSERT_EQ(io.reap(ring, true, c), 0);
  EXPECT_EQ(c.tag, 2u);
  EXPECT_EQ(std::string(in, 7), "abcdefg");
  io.ring_destroy(ring);
  io.ring_destroy(nullptr);  // nothing happens
  EXPECT_EQ(io.close(fd), 0);
}

}  // namespace
