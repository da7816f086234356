// CPU's strict Float32 matmul kernel (matmul_strict.h). Written by hand
// because no BLAS offers an unfused GEMM: every tuned SGEMM contracts each
// product with its accumulation (one rounding), which the default plan
// forbids.
//
// Structure (GotoBLAS-style blocking, without packing B):
// - k is cut into passes of KC steps. Each result element keeps its running
//   binary32 sum in the result storage between passes, so its products are
//   still added one at a time in ascending k from +0.0.
// - Within a pass, A is packed per MC-row block into 64-row tiles laid out
//   [k][64] (contiguous, zero-padded past M; padded rows are never stored),
//   so the micro-kernel streams A from L2 without TLB misses whatever A's
//   strides are (transposed and broadcast views included).
// - The micro-kernel keeps 64 rows x NB (<= 4) columns of sums in vector
//   registers; per k it loads four vectors of A, broadcasts NB values of B
//   and issues separate multiplies and adds (-ffp-contract=off). B is read
//   in place: its NB columns are NB streams along k (or one stream when B is
//   transposed).
// - The block routine is cloned for AVX-512, AVX2 and the baseline and the
//   best clone is chosen at load time (sanitizer builds keep the baseline:
//   the ifunc resolver runs before a sanitizer runtime is ready).
#include "carriers/cpu/matmul_strict.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "carriers/cpu/parallel.h"

namespace strideweave::carriers::cpu {
namespace {

typedef float v16f __attribute__((vector_size(64)));

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SW_CPU_CLONES
#else
#define SW_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

constexpr std::int64_t kTile = 64;   // rows per micro-tile (4 vectors of 16)
constexpr std::int64_t kNB = 4;      // result columns per micro-tile
constexpr std::int64_t kKC = 256;    // k steps per pass
constexpr std::int64_t kMC = 256;    // rows per packed A block (kMC x kKC x 4 B = 256 KiB, in L2)
// Below this many multiply-adds a matrix is computed on the calling thread.
constexpr std::int64_t kParallelFlops = std::int64_t{1} << 21;

// Packs rows [m0, m0 + rows) x k [k0, k0 + kc) of A into tiles of kTile rows:
// tile t holds element (m0 + t*kTile + r, k0 + k) at out[t*kTile*kc + k*kTile + r].
void pack_a(const float* a, std::int64_t sam, std::int64_t sak, std::int64_t m0, std::int64_t rows, std::int64_t k0,
            std::int64_t kc, float* out) {
  const std::int64_t tiles = (rows + kTile - 1) / kTile;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t r0 = t * kTile, valid = std::min(kTile, rows - r0);
    float* dst = out + t * kTile * kc;
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* src = a + (m0 + r0) * sam + (k0 + k) * sak;
      float* d = dst + k * kTile;
      if (sam == 1) {
        std::memcpy(d, src, static_cast<std::size_t>(valid) * sizeof(float));
      } else {
        for (std::int64_t r = 0; r < valid; ++r) d[r] = src[r * sam];
      }
      for (std::int64_t r = valid; r < kTile; ++r) d[r] = 0.0f;
    }
  }
}

// One micro-tile: rows [0, valid) of a packed tile x NB columns starting at
// b (column j at b + j * sbn, k step sbk), result at c (row step som, column
// step son). first: the pass starts the sums at +0.0; otherwise it continues
// the sums stored in c.
// The sums stay in registers: acc's address is never taken (loads and stores
// go through local vectors), or the compiler would keep it in memory.
template <int NB>
__attribute__((always_inline)) inline void micro(const float* tile, std::int64_t kc, const float* b, std::int64_t sbk,
                                                 std::int64_t sbn, float* c, std::int64_t som, std::int64_t son,
                                                 std::int64_t valid, bool first) {
  const bool direct = som == 1 && valid == kTile;
  v16f acc[NB][4];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const float* col = c + j * son;
    alignas(64) float tmp[kTile] = {};
    if (!first) {
      if (direct) std::memcpy(tmp, col, sizeof tmp);
      else
        for (std::int64_t r = 0; r < valid; ++r) tmp[r] = col[r * som];
    }
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      v16f x;
      std::memcpy(&x, tmp + 16 * v, sizeof x);
      acc[j][v] = x;
    }
  }
  // Fully unrolled at every optimisation level, so acc lives in registers.
  for (std::int64_t k = 0; k < kc; ++k) {
    v16f av[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) std::memcpy(&av[v], tile + k * kTile + 16 * v, sizeof(v16f));
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      const float bj = b[k * sbk + j * sbn];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        const v16f product = av[v] * bj;  // rounded to binary32
        acc[j][v] += product;
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    float* col = c + j * son;
    alignas(64) float tmp[kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const v16f x = acc[j][v];
      std::memcpy(tmp + 16 * v, &x, sizeof x);
    }
    if (direct) std::memcpy(col, tmp, sizeof tmp);
    else
      for (std::int64_t r = 0; r < valid; ++r) col[r * som] = tmp[r];
  }
}

// The result rectangle rows [m_begin, m_end) x columns [n_begin, n_end) of
// one matrix, all k.
SW_CPU_CLONES
void block(const StrictGemmOperands& op, const StrictGemmShape& s, std::int64_t m_begin, std::int64_t m_end,
           std::int64_t n_begin, std::int64_t n_end, float* packed) {
  for (std::int64_t k0 = 0; k0 < s.K; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, s.K - k0);
    const bool first = k0 == 0;
    for (std::int64_t m0 = m_begin; m0 < m_end; m0 += kMC) {
      const std::int64_t rows = std::min(kMC, m_end - m0);
      pack_a(op.a, s.sam, s.sak, m0, rows, k0, kc, packed);
      const std::int64_t tiles = (rows + kTile - 1) / kTile;
      for (std::int64_t n0 = n_begin; n0 < n_end; n0 += kNB) {
        const std::int64_t nb = std::min(kNB, n_end - n0);
        const float* b = op.b + k0 * s.sbk + n0 * s.sbn;
        for (std::int64_t t = 0; t < tiles; ++t) {
          const float* tile = packed + t * kTile * kc;
          const std::int64_t valid = std::min(kTile, rows - t * kTile);
          float* c = op.c + (m0 + t * kTile) * s.som + n0 * s.son;
          switch (nb) {
            case 4: micro<4>(tile, kc, b, s.sbk, s.sbn, c, s.som, s.son, valid, first); break;
            case 3: micro<3>(tile, kc, b, s.sbk, s.sbn, c, s.som, s.son, valid, first); break;
            case 2: micro<2>(tile, kc, b, s.sbk, s.sbn, c, s.som, s.son, valid, first); break;
            default: micro<1>(tile, kc, b, s.sbk, s.sbn, c, s.som, s.son, valid, first); break;
          }
        }
      }
    }
  }
}

std::vector<float> pack_buffer(const StrictGemmShape& s) {
  return std::vector<float>(static_cast<std::size_t>(
      ((std::min(kMC, s.M) + kTile - 1) / kTile) * kTile * std::min(kKC, std::max<std::int64_t>(s.K, 1))));
}

// An empty contraction: every result element is +0.0.
void zero(const StrictGemmOperands& op, const StrictGemmShape& s) {
  for (std::int64_t n = 0; n < s.N; ++n)
    for (std::int64_t m = 0; m < s.M; ++m) op.c[m * s.som + n * s.son] = 0.0f;
}

void one_matrix(const StrictGemmOperands& op, const StrictGemmShape& s) {
  if (s.K == 0) {
    zero(op, s);
    return;
  }
  const std::int64_t flops = s.M * s.N * s.K;
  const std::int64_t groups = (s.N + kNB - 1) / kNB;
  const std::int64_t tiles = (s.M + kTile - 1) / kTile;
  const int threads = flops < kParallelFlops ? 1 : parallel_ranges(std::max(groups, tiles), 1);
  if (threads > 1 && groups >= 2 * threads) {
    // Split by result columns (each range a whole number of kNB groups).
    parallel_for(groups, 1, [&](std::int64_t g0, std::int64_t g1) {
      std::vector<float> packed = pack_buffer(s);
      block(op, s, 0, s.M, g0 * kNB, std::min(s.N, g1 * kNB), packed.data());
    });
  } else if (threads > 1 && tiles >= 2) {
    // Few columns: split by row tiles.
    parallel_for(tiles, 1, [&](std::int64_t t0, std::int64_t t1) {
      std::vector<float> packed = pack_buffer(s);
      block(op, s, t0 * kTile, std::min(s.M, t1 * kTile), 0, s.N, packed.data());
    });
  } else {
    std::vector<float> packed = pack_buffer(s);
    block(op, s, 0, s.M, 0, s.N, packed.data());
  }
}

}  // namespace

void strict_f32_gemm(std::span<const StrictGemmOperands> batch, const StrictGemmShape& s) {
  if (s.M == 0 || s.N == 0 || batch.empty()) return;
  const std::int64_t flops = s.M * s.N * s.K;
  if (batch.size() > 1 && flops < kParallelFlops) {
    // Many small matrices: one entry per thread at a time.
    const std::int64_t grain = std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(flops, 1));
    parallel_for(static_cast<std::int64_t>(batch.size()), grain, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) one_matrix(batch[static_cast<std::size_t>(i)], s);
    });
    return;
  }
  for (const StrictGemmOperands& op : batch) one_matrix(op, s);
}

}  // namespace strideweave::carriers::cpu
