// The contracted matmul (BINARY32_FUSED) of one matrix through cuBLAS (kernels.h,
// matmul_cublas). Compiled only with the toolkit.
//
// cuBLAS is loaded with dlopen at the first contracted matmul, not linked:
// libstrideweave then loads, and every other operation runs, on a machine
// whose CUDA installation has no cuBLAS (or none of this major version);
// there the contracted matmul runs on the carrier's own fmaf kernel, which
// is Generic's order exactly. cuBLAS runs in its pedantic math mode (binary32
// products and sums, never TF32), on the carrier's stream.
#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"

#include <strideweave/errors.h>

#include <cublas_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <climits>
#include <string>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace strideweave::cuda_carrier {
namespace {

struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                         const float*, int, const float*, int, const float*, float*, int) = nullptr;
};

// The library's entry points, or null when it cannot be loaded.
const Cublas* library() {
  static const std::unique_ptr<Cublas> loaded = []() -> std::unique_ptr<Cublas> {
    // The major version this build's headers declare, then the unversioned name.
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto c = std::make_unique<Cublas>();
    c->create = reinterpret_cast<decltype(c->create)>(dlsym(lib, "cublasCreate_v2"));
    c->set_stream = reinterpret_cast<decltype(c->set_stream)>(dlsym(lib, "cublasSetStream_v2"));
    c->set_math_mode = reinterpret_cast<decltype(c->set_math_mode)>(dlsym(lib, "cublasSetMathMode"));
    c->gemm = reinterpret_cast<decltype(c->gemm)>(dlsym(lib, "cublasSgemm_v2"));
    if (!c->create || !c->set_stream || !c->set_math_mode || !c->gemm) return nullptr;
    return c;  // the library stays loaded for the process
  }();
  return loaded.get();
}

// One handle per device, made on first use and kept for the process.
cublasHandle_t handle(const Cublas& c, int device) {
  static std::mutex mutex;
  static std::vector<cublasHandle_t> handles;
  std::lock_guard lock(mutex);
  if (handles.empty()) handles.assign(static_cast<std::size_t>(device_count()), nullptr);
  cublasHandle_t& h = handles.at(static_cast<std::size_t>(device));
  if (!h) {
    launch_stream(device);  // the device current
    if (c.create(&h) != CUBLAS_STATUS_SUCCESS) {
      h = nullptr;
      return nullptr;
    }
    // Pedantic or nothing: a handle in the default mode could use reduced
    // precision where the plan says binary32.
    if (c.set_math_mode(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
      h = nullptr;  // (the handle is abandoned: the carrier's own kernel runs)
      return nullptr;
    }
  }
  return h;
}

// One operand's matrix (its last two modes) as cuBLAS reads it: column-major
// (op N) or row-major (op T) with leading dimension ld, each mode one leaf.
struct Matrix {
  cublasOperation_t op;
  long long ld;
};
std::optional<Matrix> matrix_of(const View& v) {
  const int r = v.rank;
  if (v.leaf_begin[r - 1] - v.leaf_begin[r - 2] != 1 || v.leaf_begin[r] - v.leaf_begin[r - 1] != 1) return std::nullopt;
  const std::int64_t rows = v.extents[r - 2], cols = v.extents[r - 1];
  const std::int64_t sr = v.leaf_stride[v.leaf_begin[r - 2]], sc = v.leaf_stride[v.leaf_begin[r - 1]];
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= rows)) return Matrix{CUBLAS_OP_N, cols == 1 ? rows : sc};
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= cols)) return Matrix{CUBLAS_OP_T, rows == 1 ? cols : sr};
  return std::nullopt;
}

bool fits_int(long long x) { return x >= 0 && x <= INT_MAX; }

}  // namespace

bool matmul_cublas(int device, const View& a, const View& b, const Extents& result, float* out) {
  const int r = result.rank;
  if (r < 2 || result.count == 0) return false;
  const long long m = result.extents[r - 2], n = result.extents[r - 1], k = a.extents[r - 1];
  const long long batches = result.count / (m * n);
  // The compact result is first-mode-fastest with the batch modes first:
  // element (b, i, j) is at b + B*i + B*M*j, not at the b*M*N + i + j*M a
  // strided-batched GEMM writes. So cuBLAS takes one matrix (B = 1: every
  // batch mode has extent 1 and adds nothing to an offset), where the two
  // agree (column-major M x N, ldc = M); a batched call runs the carrier's
  // own kernel. (A review found the batched form writing elements to the
  // wrong places.)
  if (batches != 1) return false;
  if (k == 0 || !fits_int(m) || !fits_int(n) || !fits_int(k)) return false;
  const std::optional<Matrix> ma = matrix_of(a), mb = matrix_of(b);
  if (!ma || !mb || !fits_int(ma->ld) || !fits_int(mb->ld)) return false;
  const Cublas* c = library();
  if (!c) return false;
  const cublasHandle_t h = handle(*c, device);
  if (!h) return false;
  const cudaStream_t s = static_cast<cudaStream_t>(launch_stream(device));
  if (c->set_stream(h, s) != CUBLAS_STATUS_SUCCESS) return false;
  const float one = 1.0f, zero = 0.0f;
  const float* pa = static_cast<const float*>(a.base) + a.offset;
  const float* pb = static_cast<const float*>(b.base) + b.offset;
  // C (m x n, column-major, ldc = m) = op(A) (m x k) * op(B) (k x n), one
  // matrix.
  const cublasStatus_t status =
      c->gemm(h, ma->op, mb->op, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one, pa,
              static_cast<int>(ma->ld), pb, static_cast<int>(mb->ld), &zero, out, static_cast<int>(m));
  if (status != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(fmt::format("CUDA: cublasSgemm failed (status {})", static_cast<int>(status)));
  return true;
}

}  // namespace strideweave::cuda_carrier
