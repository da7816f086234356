// The CUDA carrier's runtime in a build without the CUDA toolkit
// (runtime.h): no device, with the reason; no instance can be constructed,
// so the functions below are reached only by a caller that skipped
// require_device(), and raise.
#include "extension_carriers/cuda/runtime.h"

#include <strideweave/errors.h>

namespace strideweave::cuda_carrier {
namespace {
[[noreturn]] void absent() { throw RuntimeError("CUDA: strideweave was built without the CUDA toolkit"); }
}  // namespace

bool built() noexcept { return false; }
int device_count() noexcept { return 0; }
std::string unavailable_reason() { return "strideweave was built without the CUDA toolkit"; }
void require_device(int) { absent(); }
void* allocate(int, std::size_t, bool) { absent(); }
void release(int, void*) noexcept {}
void copy_to_host(int, void*, const void*, std::size_t) { absent(); }
void copy_to_device(int, void*, const void*, std::size_t) { absent(); }
void* stream(int) { absent(); }
void* launch_stream(int) { absent(); }
void check_launch(const char*) { absent(); }

}  // namespace strideweave::cuda_carrier
