// The CUDA carrier's kernels in a build without the CUDA toolkit
// (kernels.h): no instance can exist there (runtime_absent.cpp), so no
// pattern reaches a launch; each raises all the same.
#include "extension_carriers/cuda/kernels.h"

#include <strideweave/errors.h>

namespace strideweave::cuda_carrier {
namespace {
[[noreturn]] void absent() { throw RuntimeError("CUDA: strideweave was built without the CUDA toolkit"); }
}  // namespace

void launch_binary(int, BinaryOp, const Grid&, const Strided&, const Strided&, void*) { absent(); }
void launch_unary(int, UnaryOp, const UnaryOptions&, const Grid&, const Strided&, float*) { absent(); }
void launch_copy(int, const View&, const Extents&, int, void*) { absent(); }
void launch_logical_not(int, const Grid&, const Strided&, bool*) { absent(); }
void launch_clamp(int, const Grid&, const Strided&, const Strided&, const Strided&, float*) { absent(); }
void launch_select(int, const Grid&, const Strided&, const Strided&, const Strided&, float*) { absent(); }
void launch_reduce(int, ReduceOp, const View&, const ReduceArgs&, const Extents&, void*) { absent(); }
void launch_cumsum(int, const View&, int, float*) { absent(); }
void launch_sort(int, const View&, int, bool, std::int64_t, bool, void*) { absent(); }
void launch_matmul(int, const View&, const View&, const Extents&, bool, float*) { absent(); }
bool matmul_cublas(int, const View&, const View&, const Extents&, float*) { absent(); }
void launch_conv(int, const View&, const View&, const ConvArgs&, const Extents&, float*) { absent(); }
std::int64_t first_bad_index(int, const View&, std::int64_t, std::int32_t*) { absent(); }
void launch_gather(int, const View&, const View&, int, const Extents&, float*) { absent(); }
void launch_scatter(int, const View&, const View&, const View&, int, bool, float*) { absent(); }

}  // namespace strideweave::cuda_carrier
