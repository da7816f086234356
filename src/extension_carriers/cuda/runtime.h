// Internal: the CUDA runtime as the CUDA carrier uses it (docs/cuda.md).
//
// runtime_cudart.cpp implements it over the CUDA runtime library (built when the
// toolkit was found); runtime_absent.cpp is the build without the toolkit,
// where device_count() is 0 with the reason, and every other function raises
// RuntimeError (no instance can exist there, so none is reached).
//
// Every failure is a RuntimeError whose sentence names the call and the
// runtime's own error name and text. Device errors of earlier asynchronous
// work surface at the next call that synchronises (a copy to the host, a
// free): docs/cuda.md, "When a device error surfaces".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strideweave::cuda_carrier {

// Whether the device code was compiled into this build.
bool built() noexcept;
// The number of usable devices (0 on any runtime error), and why it is 0.
int device_count() noexcept;
std::string unavailable_reason();

// RuntimeError unless `device` is one of the devices present.
void require_device(int device);

// Device memory of `bytes` bytes on `device` (null for 0 bytes), zero-filled
// unless `empty`. RuntimeError when the runtime refuses (out of memory: the
// sentence says so).
void* allocate(int device, std::size_t bytes, bool empty);
// Frees what allocate() returned (null: nothing). Never throws: a failure
// (a sticky device error) is reported once on stderr, as a destructor cannot
// raise.
void release(int device, void* memory) noexcept;

// Synchronous copies between host memory and device memory of `device`
// (after every kernel queued on the carrier's stream: the copies are
// ordered after them and wait for them).
void copy_to_host(int device, void* host, const void* device_memory, std::size_t bytes);
void copy_to_device(int device, void* device_memory, const void* host, std::size_t bytes);

// The carrier's stream on `device` (one per device, created on first use;
// an opaque cudaStream_t).
void* stream(int device);
// stream(device) with `device` made current on the calling thread: what a
// kernel launch on that stream needs.
void* launch_stream(int device);
// RuntimeError for the last launch error on this thread (a kernel launch
// that could not start), naming `what`.
void check_launch(const char* what);

}  // namespace strideweave::cuda_carrier
