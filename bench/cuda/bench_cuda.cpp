// The CUDA carrier beside the device's own limits, in one run (issue 23,
// item 7; docs/cuda.md, "Device check"). Prints one JSON object per line:
// {"name", "ours", "peer", "unit", "ratio"} with ratio = ours / peer for
// rates (higher is better) and peer / ours for times, so that >= 1 is at
// least as good as the peer. Peers are the device itself: cudaMemcpy
// device-to-device for bandwidth, cuBLAS called directly (dlopen, pedantic
// math mode, as the carrier calls it) for the contracted matmul, pinned
// cudaMemcpy for host moves. Needs a device; exits 2 without one.
//
//   strideweave_bench_cuda [--quick]   (--quick: smaller sizes, for a check)
#include <strideweave/carriers/cuda.h>
#include <strideweave/strideweave.h>

#include <cublas_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace sw = strideweave;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_cuda: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Seconds per call of f, best of `reps` (each rep synchronises the device).
double seconds(const std::function<void()>& f, int reps = 5, int calls = 1) {
  double best = 1e30;
  f();  // warm-up (first-use allocations, module load)
  check(cudaDeviceSynchronize(), "synchronize");
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) f();
    check(cudaDeviceSynchronize(), "synchronize");
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count() / calls);
  }
  return best;
}

void report(const std::string& name, double ours, double peer, const char* unit, bool rate) {
  const double ratio = rate ? ours / peer : peer / ours;
  std::printf("{\"name\": \"%s\", \"ours\": %.6g, \"peer\": %.6g, \"unit\": \"%s\", \"ratio\": %.4f}\n", name.c_str(),
              ours, peer, unit, ratio);
  std::fflush(stdout);
}

sw::Tensor on_device(std::int64_t n, float start, float step, const sw::Shape& shape) {
  std::vector<sw::Value> v;
  v.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v.push_back(sw::Value::from_float32(start + step * static_cast<float>(i % 1024)));
  return sw::move(sw::Tensor(sw::CPU::from_values(v, sw::DType::Float32()), shape), sw::CUDA::create(n));
}

const float* data_of(const sw::Tensor& t) {
  return static_cast<const float*>(static_cast<const sw::CUDA&>(*t.carrier()).device_data()) + t.offset();
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (sw::CUDA::device_count() == 0) {
    std::fprintf(stderr, "bench_cuda: no CUDA device (%s)\n", sw::CUDA::unavailable_reason().c_str());
    return 2;
  }
  const sw::NoGradGuard inference;
  const std::int64_t n = quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 26);  // floats per operand
  const double bytes = 4.0 * static_cast<double>(n);

  // The device's copy bandwidth (bytes read + written per second).
  void *src = nullptr, *dst = nullptr;
  check(cudaMalloc(&src, static_cast<std::size_t>(bytes)), "cudaMalloc");
  check(cudaMalloc(&dst, static_cast<std::size_t>(bytes)), "cudaMalloc");
  const double copy = 2.0 * bytes / seconds([&] { check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, nullptr), "copy"); });

  // Elementwise add (reads two operands, writes one) and reduce_sum (reads one).
  const sw::Tensor a = on_device(n, 0.5f, 0.001f, sw::Shape::of({n}));
  const sw::Tensor b = on_device(n, 1.5f, -0.001f, sw::Shape::of({n}));
  report("add_GBps_vs_device_copy", 3.0 * bytes / seconds([&] { sw::add(a, b); }) / 1e9, copy / 1e9, "GB/s", true);
  const std::int64_t rn = quick ? (std::int64_t{1} << 20) : (std::int64_t{1} << 24);
  const sw::Tensor r = on_device(rn, 0.25f, 0.0001f, sw::Shape::of({rn}));
  report("reduce_sum_GBps_vs_device_copy", 4.0 * static_cast<double>(rn) / seconds([&] { sw::reduce_sum(r); }, 3) / 1e9,
         copy / 1e9, "GB/s", true);

  // Matmul at m = n = k = s: contracted (cuBLAS through the carrier) beside
  // cuBLAS called directly; strict beside contracted.
  const std::int64_t s = quick ? 512 : 4096;
  const sw::Tensor ma = on_device(s * s, -1.0f, 0.002f, sw::Shape::of({s, s}));
  const sw::Tensor mb = on_device(s * s, 1.0f, -0.002f, sw::Shape::of({s, s}));
  const double flops = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
  const sw::OperationExecutionOptions fused("matmul", nullptr, sw::Arithmetic::BINARY32_FUSED);
  const double ours_fused = flops / seconds([&] { sw::matmul(ma, mb, fused); }, 3) / 1e9;
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    using Create = cublasStatus_t (*)(cublasHandle_t*);
    using SetMath = cublasStatus_t (*)(cublasHandle_t, cublasMath_t);
    using Gemm = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                    const float*, int, const float*, int, const float*, float*, int);
    auto create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
    auto set_math = reinterpret_cast<SetMath>(dlsym(lib, "cublasSetMathMode"));
    auto gemm = reinterpret_cast<Gemm>(dlsym(lib, "cublasSgemm_v2"));
    cublasHandle_t h = nullptr;
    if (create && set_math && gemm && create(&h) == CUBLAS_STATUS_SUCCESS) {
      set_math(h, CUBLAS_PEDANTIC_MATH);
      float* c = nullptr;
      check(cudaMalloc(reinterpret_cast<void**>(&c), static_cast<std::size_t>(s * s) * sizeof(float)), "cudaMalloc");
      const float one = 1.0f, zero = 0.0f;
      const int d = static_cast<int>(s);
      const double direct = flops / seconds([&] {
        gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, data_of(ma), d, data_of(mb), d, &zero, c, d);
      }, 3) / 1e9;
      report("matmul_fused_GFLOPs_vs_cublas", ours_fused, direct, "GFLOP/s", true);
      cudaFree(c);
    }
  } else {
    std::fprintf(stderr, "bench_cuda: cuBLAS not found; the contracted matmul's peer is skipped\n");
  }
  const double ours_strict = flops / seconds([&] { sw::matmul(ma, mb); }, 1) / 1e9;
  report("matmul_strict_GFLOPs_vs_fused", ours_strict, ours_fused, "GFLOP/s", true);

  // Per-call cost of a tiny add (the pipeline, one launch), beside a bare
  // launch-sized copy of 4 bytes.
  const sw::Tensor ta = on_device(1, 1.0f, 0.0f, sw::Shape::of({1})), tb = on_device(1, 2.0f, 0.0f, sw::Shape::of({1}));
  const double tiny = seconds([&] { sw::add(ta, tb); }, 5, 2000);
  const double bare = seconds([&] { check(cudaMemcpyAsync(dst, src, 4, cudaMemcpyDeviceToDevice, nullptr), "copy"); }, 5, 2000);
  report("add_1_us_vs_bare_async_copy", tiny * 1e6, bare * 1e6, "us", false);

  // CPU <-> CUDA moves of 256 MiB beside cudaMemcpy from pinned memory.
  const std::int64_t mn = quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 26);
  const double move_bytes = 4.0 * static_cast<double>(mn);
  void* pinned = nullptr;
  check(cudaMallocHost(&pinned, static_cast<std::size_t>(move_bytes)), "cudaMallocHost");
  const double pinned_up = move_bytes / seconds([&] { check(cudaMemcpy(dst, pinned, static_cast<std::size_t>(move_bytes), cudaMemcpyHostToDevice), "up"); }, 3);
  const double pinned_down = move_bytes / seconds([&] { check(cudaMemcpy(pinned, dst, static_cast<std::size_t>(move_bytes), cudaMemcpyDeviceToHost), "down"); }, 3);
  // A move releases its source, so each timed move gets a fresh one; the
  // time to make it is measured alone and taken off.
  std::vector<sw::Value> fill(static_cast<std::size_t>(mn), sw::Value::from_float32(0.25f));
  const auto host_source = [&] { return sw::Tensor(sw::CPU::from_values(fill, sw::DType::Float32()), sw::Shape::of({mn})); };
  const double make_host = seconds([&] { host_source(); }, 3);
  const double up = move_bytes / (seconds([&] { sw::move(host_source(), sw::CUDA::create(mn)); }, 3) - make_host);
  const sw::Tensor big = on_device(mn, 0.5f, 0.0f, sw::Shape::of({mn}));
  const double make_device = seconds([&] { sw::add(big, big); }, 3);
  const double down = move_bytes / (seconds([&] { sw::move(sw::add(big, big), sw::CPU::create(mn)); }, 3) - make_device);
  report("move_cpu_to_cuda_GBps_vs_pinned_memcpy", up / 1e9, pinned_up / 1e9, "GB/s", true);
  report("move_cuda_to_cpu_GBps_vs_pinned_memcpy", down / 1e9, pinned_down / 1e9, "GB/s", true);
  cudaFreeHost(pinned);
  cudaFree(src);
  cudaFree(dst);
  return 0;
}
