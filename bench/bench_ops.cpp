// Google Benchmark of the front end on both carriers. These figures are for
// tracking our own changes; comparisons with peers belong to bench/run
// (issue: fast CPU carrier), reported as ratios from one run.
#include <strideweave/strideweave.h>

#include <benchmark/benchmark.h>

namespace {

using namespace strideweave;

template <class C>
Tensor filled(std::int64_t n, float v) {
  return make_tensor<C>(std::vector<float>(static_cast<std::size_t>(n), v), Shape{n});
}

template <class C>
void BM_add(benchmark::State& state) {
  const Tensor a = filled<C>(state.range(0), 1.5f), b = filled<C>(state.range(0), 2.5f);
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 12);
}

template <class C>
void BM_reduce_sum(benchmark::State& state) {
  const Tensor a = filled<C>(state.range(0), 1.5f);
  for (auto _ : state) benchmark::DoNotOptimize(reduce_sum(a));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

template <class C>
void BM_matmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = make_tensor<C>(std::vector<float>(static_cast<std::size_t>(n * n), 0.5f), Shape{n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, a));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

BENCHMARK(BM_add<CPU>)->Arg(1)->Arg(1 << 20);
BENCHMARK(BM_add<Generic>)->Arg(1)->Arg(1 << 14);
BENCHMARK(BM_reduce_sum<CPU>)->Arg(1 << 20);
BENCHMARK(BM_matmul<CPU>)->Arg(64)->Arg(256);
BENCHMARK(BM_matmul<Generic>)->Arg(16);

}  // namespace

BENCHMARK_MAIN();
