// The CUDA carrier's runtime over the CUDA runtime library (runtime.h).
// Compiled only when the toolkit was found (cmake/layers.cmake); linked with
// the static runtime, so libstrideweave loads on machines without CUDA and
// the driver is looked up when the first call is made.
#include "extension_carriers/cuda/runtime.h"

#include <strideweave/errors.h>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace strideweave::cuda_carrier {
namespace {

std::string describe(cudaError_t e) { return fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)); }

// A failed call's error is cleared from the thread's last-error state before
// raising, so that a later check_launch() does not report it again.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw RuntimeError(fmt::format("CUDA: {} failed ({})", what, describe(e)));
}

// The device count and the probe's error, asked once (the answer does not
// change within a process).
struct Probe {
  int count = 0;
  std::string reason;
};
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      r.reason = fmt::format("no usable CUDA runtime ({})", describe(e));
      cudaGetLastError();  // clear it: the probe's error is not sticky
    } else if (n <= 0) {
      r.reason = "no CUDA device is present";
    } else {
      r.count = n;
    }
    return r;
  }();
  return p;
}

// Makes `device` current on this thread for one call.
void use(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

}  // namespace

bool built() noexcept { return true; }

int device_count() noexcept {
  try {
    return probe().count;
  } catch (...) {
    return 0;
  }
}

std::string unavailable_reason() { return probe().reason; }

void require_device(int device) {
  const Probe& p = probe();
  if (p.count == 0) throw RuntimeError(fmt::format("CUDA: {}", p.reason));
  if (device < 0 || device >= p.count)
    throw RuntimeError(fmt::format("CUDA: device {} is not present ({} device{}: 0..{})", device, p.count,
                                   p.count == 1 ? "" : "s", p.count - 1));
}

void* stream(int device) {
  // One non-blocking stream per device, created on first use and kept for
  // the process (a stream outlives every carrier that queued work on it).
  static std::mutex mutex;
  static std::vector<cudaStream_t> streams;
  std::lock_guard lock(mutex);
  if (streams.empty()) streams.assign(static_cast<std::size_t>(std::max(device_count(), 0)), nullptr);
  require_device(device);
  cudaStream_t& s = streams[static_cast<std::size_t>(device)];
  if (!s) {
    use(device);
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  return s;
}

void* launch_stream(int device) {
  void* s = stream(device);
  use(device);
  return s;
}

void* allocate(int device, std::size_t bytes, bool empty) {
  require_device(device);
  if (bytes == 0) return nullptr;
  use(device);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw RuntimeError(fmt::format("CUDA: out of device memory on device {} ({} bytes requested)", device, bytes));
  }
  check(e, "cudaMalloc");
  if (!empty) {
    const cudaError_t z = cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream(device)));
    if (z != cudaSuccess) {
      cudaFree(p);
      check(z, "cudaMemsetAsync");
    }
  }
  return p;
}

void release(int device, void* memory) noexcept {
  if (!memory) return;
  // cudaFree waits for the device's queued work on this memory.
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(memory) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    std::fprintf(stderr, "strideweave: CUDA: freeing device memory failed (%s: %s)\n", cudaGetErrorName(e),
                 cudaGetErrorString(e));
  }
}

namespace {

// Pinned staging (issue 23: moves between CPU and CUDA through pinned
// buffers). A copy of at least kStagedBytes between the caller's pageable
// memory and the device goes through two pinned buffers of kChunkBytes per
// device, alternating: the host memcpy into (out of) one buffer overlaps the
// DMA of the other. Smaller copies are one cudaMemcpyAsync from pageable
// memory, which the driver stages itself. Where pinned memory cannot be had,
// every copy takes that path. Copies of one device take its staging in turn.
constexpr std::size_t kChunkBytes = std::size_t{8} << 20;
constexpr std::size_t kStagedBytes = std::size_t{4} << 20;

struct Staging {
  std::mutex mutex;
  bool tried = false;  // allocation attempted (guarded by mutex)
  void* buffer[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
  bool ready() const noexcept { return buffer[0] && buffer[1] && done[0] && done[1]; }
};

Staging& staging(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<Staging>> all;  // one per device, kept for the process
  std::lock_guard lock(mutex);
  if (all.empty()) all.resize(static_cast<std::size_t>(std::max(device_count(), 0)));
  std::unique_ptr<Staging>& s = all.at(static_cast<std::size_t>(device));
  if (!s) s = std::make_unique<Staging>();
  return *s;
}

// Allocates the device's staging on first use (under s.mutex); false when
// pinned memory or events cannot be had (the caller copies unstaged).
bool prepare_staging(Staging& s) {
  if (!s.tried) {
    s.tried = true;
    for (int b = 0; b < 2; ++b)
      if (cudaMallocHost(&s.buffer[b], kChunkBytes) != cudaSuccess ||
          cudaEventCreateWithFlags(&s.done[b], cudaEventDisableTiming) != cudaSuccess)
        cudaGetLastError();  // not sticky: the copies go unstaged
  }
  return s.ready();
}

// The device's staging, locked, when a copy of `bytes` takes it; an empty
// lock when the copy goes unstaged (small, or no pinned memory). A staged
// copy first waits for the stream: one that failed part way may have left a
// transfer in flight on a buffer, its event possibly never recorded.
std::unique_lock<std::mutex> take_staging(Staging& st, std::size_t bytes, cudaStream_t s) {
  if (bytes < kStagedBytes) return {};
  std::unique_lock lock(st.mutex);
  if (!prepare_staging(st)) return {};
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return lock;
}

// One cudaMemcpyAsync, waited for (the host buffer may be pageable and the
// caller's).
void copy_unstaged(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  check(cudaMemcpyAsync(to, from, bytes, kind, s),
        kind == cudaMemcpyHostToDevice ? "cudaMemcpyAsync (host to device)" : "cudaMemcpyAsync (device to host)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace

void copy_to_host(int device, void* host, const void* device_memory, std::size_t bytes) {
  if (bytes == 0) return;
  use(device);
  cudaStream_t s = static_cast<cudaStream_t>(stream(device));
  Staging& st = staging(device);
  const std::unique_lock lock = take_staging(st, bytes, s);
  if (!lock) return copy_unstaged(host, device_memory, bytes, cudaMemcpyDeviceToHost, s);
  // Chunk k lands in buffer k % 2; while it is in flight, the previous chunk
  // is copied out of the other buffer.
  auto* out = static_cast<std::byte*>(host);
  const auto* in = static_cast<const std::byte*>(device_memory);
  std::size_t previous_at = 0, previous_size = 0;
  int previous = -1;
  for (std::size_t at = 0, k = 0; at < bytes; at += kChunkBytes, ++k) {
    const int b = static_cast<int>(k % 2);
    const std::size_t n = std::min(kChunkBytes, bytes - at);
    check(cudaMemcpyAsync(st.buffer[b], in + at, n, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (device to host)");
    check(cudaEventRecord(st.done[b], s), "cudaEventRecord");
    if (previous >= 0) {
      check(cudaEventSynchronize(st.done[previous]), "cudaEventSynchronize");
      std::memcpy(out + previous_at, st.buffer[previous], previous_size);
    }
    previous = b;
    previous_at = at;
    previous_size = n;
  }
  check(cudaEventSynchronize(st.done[previous]), "cudaEventSynchronize");
  std::memcpy(out + previous_at, st.buffer[previous], previous_size);
}

void copy_to_device(int device, void* device_memory, const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  use(device);
  cudaStream_t s = static_cast<cudaStream_t>(stream(device));
  Staging& st = staging(device);
  const std::unique_lock lock = take_staging(st, bytes, s);
  if (!lock) return copy_unstaged(device_memory, host, bytes, cudaMemcpyHostToDevice, s);
  // Chunk k is copied into buffer k % 2 once that buffer's previous DMA is
  // done (an event from an earlier, finished copy is complete), then queued;
  // the host copy of the next chunk overlaps it.
  const auto* in = static_cast<const std::byte*>(host);
  auto* out = static_cast<std::byte*>(device_memory);
  for (std::size_t at = 0, k = 0; at < bytes; at += kChunkBytes, ++k) {
    const int b = static_cast<int>(k % 2);
    const std::size_t n = std::min(kChunkBytes, bytes - at);
    check(cudaEventSynchronize(st.done[b]), "cudaEventSynchronize");
    std::memcpy(st.buffer[b], in + at, n);
    check(cudaMemcpyAsync(out + at, st.buffer[b], n, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (host to device)");
    check(cudaEventRecord(st.done[b], s), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw RuntimeError(fmt::format("CUDA: launching {} failed ({})", what, describe(e)));
}

}  // namespace strideweave::cuda_carrier
