// CPU's strict Float32 matmul kernel (matmul_strict.h). Written by hand
// because no BLAS offers an unfused GEMM: every tuned SGEMM contracts each
// product with its accumulation (one rounding), which the default plan
// forbids.
//
// Structure (GotoBLAS-style blocking):
// - The result columns are taken a panel at a time (at most 1 M floats of
//   packed B, 4 MiB, the columns split evenly), and k is cut into passes
//   of KC steps.
//   Each result element keeps its running binary32 sum in the result
//   storage between passes, so its products are still added one at a time
//   in ascending k from +0.0.
// - Within a pass, A is packed per MC-row block into tiles of MR rows laid
//   out [k][MR] (contiguous, zero-padded past M; padded rows are never
//   stored), so the micro-kernel streams A from L2 without TLB misses
//   whatever A's strides are (transposed and broadcast views included).
// - Per pass, the panel's slice of B is packed once, as groups of NR
//   columns laid out [k][NR] (zero-padded past N; padded columns are never
//   stored); one group stays in L1 while every A tile of a block passes
//   over it. The result tile of the next micro-tile is prefetched, so that
//   loading its running sums does not stall the k loop.
// - The micro-kernel keeps MR x NR sums in vector registers; per k it loads
//   MR / lanes vectors of A, broadcasts NR values of B and issues separate
//   multiplies and adds (-ffp-contract=off): every product is rounded to
//   binary32, then added.
//
// One micro-kernel per instruction set, each shaped for its register file
// (the shape is the tile MR x NR; the sums, the A vectors, one broadcast and
// one product must fit the registers, or the kernel spills):
//   avx512  32 zmm of 16 lanes: 32 x 12 (24 sums, 2 A vectors, 1 broadcast,
//           1 product)
//   avx2    16 ymm of 8 lanes:  16 x 6 (12 sums, 2 A vectors, 1 broadcast,
//           1 product)
//   sse2    16 xmm of 4 lanes:   8 x 6 (the same register budget; SSE2 has
//           no broadcast load, so B is packed with each value already
//           broadcast to a vector)
// (a build for another architecture has one portable kernel of 4-lane
// vectors). The kernel is chosen at run time, on first use, by an ordinary
// function pointer (no ifunc resolver, so sanitizer builds run and test
// every kernel the CPU has); matmul_strict.h says how to force one.
#include "carriers/cpu/matmul_strict.h"

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "carriers/cpu/parallel.h"

namespace strideweave::carriers::cpu {
namespace {

typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));

// A packed B panel (the KC x NC slice of B that one k pass multiplies by
// every A block) holds at most this many floats, broadcast copies included
// (4 MiB: it lives in L3, as in GotoBLAS and BLIS, whose NC is about 4000
// columns). The wider the panel, the fewer times A is packed: A is packed
// once per panel and k pass, and at 1 MiB panels that cost 5-7% of a
// 1024-2048 product (measured on the Xeon of docs/performance.md), at 4 MiB
// about 2%.
constexpr std::int64_t kPanelFloats = std::int64_t{1} << 20;
// Below this many multiply-adds a matrix is computed on the calling thread.
constexpr std::int64_t kParallelFlops = std::int64_t{1} << 21;

#define SW_INLINE __attribute__((always_inline)) inline

// Unaligned vector loads and stores. (Through a may_alias type rather than
// memcpy: GCC may copy a 16-byte memcpy through general registers, which
// then keeps the vector in memory. Vectors pass by reference: these are
// always inlined, and a by-value vector wider than the baseline's would
// draw GCC's ABI warning.)
template <class V>
SW_INLINE void load(V& x, const float* p) {
  typedef V U __attribute__((aligned(alignof(float)), may_alias));
  x = *reinterpret_cast<const U*>(p);
}
template <class V>
SW_INLINE void store(float* p, const V& x) {
  typedef V U __attribute__((aligned(alignof(float)), may_alias));
  *reinterpret_cast<U*>(p) = x;
}

constexpr std::size_t kLineBytes = 64;
constexpr std::int64_t kLineFloats = kLineBytes / sizeof(float);
struct LineAlignedDelete {
  void operator()(float* p) const noexcept { ::operator delete(p, std::align_val_t{kLineBytes}); }
};

// A kernel's shape and blocking: vectors V, MV vectors of rows (MR rows),
// NR columns, BW copies of each packed B value (1: the kernel broadcasts B
// itself); KC k steps per pass (the packed B group of one micro-tile,
// KC x NR x BW floats, stays in L1) and MC rows per packed A block (MC x KC
// floats, in L2; a multiple of MR).
template <class Vec, int Mv, int Nr, int Bw, std::int64_t Kc, std::int64_t Mc>
struct TileShape {
  using V = Vec;
  static constexpr int MV = Mv, NR = Nr, BW = Bw;
  static constexpr int lanes = static_cast<int>(sizeof(V) / sizeof(float));
  static constexpr int rows = MV * lanes;
  static constexpr std::int64_t KC = Kc, MC = Mc;
  static_assert(MC % rows == 0);
  // At most NC columns per B panel (whole groups of NR).
  static constexpr std::int64_t NC = NR * std::max<std::int64_t>(1, kPanelFloats / (KC * NR * BW));
};

// Packs rows [m0, m0 + rows) x k [k0, k0 + kc) of A into tiles of MR rows:
// tile t holds element (m0 + t*MR + r, k0 + k) at out[t*MR*kc + k*MR + r],
// zero past `rows`. A is read in its storage order: down each column when
// its columns are contiguous (sam == 1), along each row otherwise.
template <int MR>
SW_INLINE void pack_a(const float* a, std::int64_t sam, std::int64_t sak, std::int64_t m0, std::int64_t rows,
                      std::int64_t k0, std::int64_t kc, float* out) {
  const std::int64_t tiles = (rows + MR - 1) / MR, full = rows / MR;
  const float* src = a + m0 * sam + k0 * sak;
  if (sam == 1) {
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* col = src + k * sak;
      // Whole tiles: a copy of constant size, which the compiler makes a
      // few vector moves (a call to memcpy per MR floats cost more than the
      // copy itself).
      for (std::int64_t t = 0; t < full; ++t) std::memcpy(out + t * MR * kc + k * MR, col + t * MR, MR * sizeof(float));
      if (full < tiles) {
        const std::int64_t valid = rows - full * MR;
        float* dst = out + full * MR * kc + k * MR;
        std::memcpy(dst, col + full * MR, static_cast<std::size_t>(valid) * sizeof(float));
        for (std::int64_t r = valid; r < MR; ++r) dst[r] = 0.0f;
      }
    }
    return;
  }
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t valid = std::min<std::int64_t>(MR, rows - t * MR);
    float* dst = out + t * MR * kc;
    for (std::int64_t r = 0; r < valid; ++r) {
      const float* row = src + (t * MR + r) * sam;
      for (std::int64_t k = 0; k < kc; ++k) dst[k * MR + r] = row[k * sak];
    }
    for (std::int64_t k = 0; k < kc; ++k)
      for (std::int64_t r = valid; r < MR; ++r) dst[k * MR + r] = 0.0f;
  }
}

// Packs k [0, kc) x columns [0, cols) of B (element (k, j) at b[k*sbk + j*sbn])
// as out[(k*NR + j)*BW + l] for l < BW (BW copies of each value: the
// broadcast done once while packing, for instruction sets without a
// broadcast load), zero past cols.
template <int NR, int BW>
SW_INLINE void pack_b(const float* b, std::int64_t sbk, std::int64_t sbn, std::int64_t kc, std::int64_t cols,
                      float* out) {
  if (BW == 1 && cols == NR && sbn == 1) {
    for (std::int64_t k = 0; k < kc; ++k) std::memcpy(out + k * NR, b + k * sbk, NR * sizeof(float));
    return;
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    for (std::int64_t j = 0; j < NR; ++j) {
      const float x = j < cols ? b[k * sbk + j * sbn] : 0.0f;
      for (int l = 0; l < BW; ++l) out[(k * NR + j) * BW + l] = x;
    }
  }
}

// One micro-tile: rows [0, rows) x columns [0, cols) of the MR x NR tile
// whose A is the packed tile `a` ([k][MR]) and whose B is the packed slice
// `b` ([k][NR][BW]), result at c (row step som, column step son). first:
// the pass starts the sums at +0.0; otherwise it continues the sums stored
// in c.
// The sums stay in registers: acc's address is never taken (loads and stores
// copy whole vectors), or the compiler would keep it in memory.
template <class V, int MV, int NR, int BW>
SW_INLINE void micro(const float* a, const float* b, std::int64_t kc, float* c, std::int64_t som, std::int64_t son,
                     std::int64_t rows, std::int64_t cols, bool first) {
  constexpr int L = sizeof(V) / sizeof(float);
  constexpr int MR = MV * L;
  const bool direct = som == 1 && rows == MR;
  V acc[NR][MV];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    const float* col = c + j * son;
    if (first || j >= cols) {
#pragma GCC unroll 16
      for (int v = 0; v < MV; ++v) acc[j][v] = V{};
    } else if (direct) {
#pragma GCC unroll 16
      for (int v = 0; v < MV; ++v) load(acc[j][v], col + L * v);
    } else {
      alignas(64) float tmp[MR] = {};
      for (std::int64_t r = 0; r < rows; ++r) tmp[r] = col[r * som];
#pragma GCC unroll 16
      for (int v = 0; v < MV; ++v) load(acc[j][v], tmp + L * v);
    }
  }
  // Fully unrolled at every optimisation level, so acc lives in registers.
  for (std::int64_t k = 0; k < kc; ++k) {
    V av[MV];
#pragma GCC unroll 16
    for (int v = 0; v < MV; ++v) load(av[v], a + k * MR + L * v);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      if constexpr (BW == 1) {
        const float bj = b[k * NR + j];  // broadcast by the multiply
#pragma GCC unroll 16
        for (int v = 0; v < MV; ++v) {
          const V product = av[v] * bj;  // rounded to binary32
          acc[j][v] += product;
        }
      } else {
        static_assert(BW == L);
        V bj;
        load(bj, b + (k * NR + j) * L);
#pragma GCC unroll 16
        for (int v = 0; v < MV; ++v) {
          const V product = av[v] * bj;  // rounded to binary32
          acc[j][v] += product;
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    if (j >= cols) continue;
    float* col = c + j * son;
    if (direct) {
#pragma GCC unroll 16
      for (int v = 0; v < MV; ++v) store(col + L * v, acc[j][v]);
    } else {
      alignas(64) float tmp[MR];
#pragma GCC unroll 16
      for (int v = 0; v < MV; ++v) store(tmp + L * v, acc[j][v]);
      for (std::int64_t r = 0; r < rows; ++r) col[r * som] = tmp[r];
    }
  }
}

// Prefetches rows [0, rows) x columns [0, cols) of a result tile whose
// columns are contiguous (som == 1; other layouts are left to the hardware).
template <int MR, int NR>
SW_INLINE void prefetch_tile(const float* c, std::int64_t som, std::int64_t son, std::int64_t rows,
                             std::int64_t cols) {
  if (som != 1) return;
  for (std::int64_t j = 0; j < cols; ++j) {
    for (std::int64_t r = 0; r < rows; r += kLineFloats) __builtin_prefetch(c + j * son + r, 1);
    __builtin_prefetch(c + j * son + rows - 1, 1);  // the last line, when the column is not line-aligned
  }
}

// The result rectangle rows [m_begin, m_end) x columns [n_begin, n_end) of
// one matrix, all k. Columns are taken a panel at a time; for each k pass their
// B panel is packed once ([group of NR][k][NR][BW]), then every MC-row block
// of A is packed and multiplied by every group.
template <class T>
SW_INLINE void block(const StrictGemmOperands& op, const StrictGemmShape& s, std::int64_t m_begin, std::int64_t m_end,
                     std::int64_t n_begin, std::int64_t n_end) {
  using V = typename T::V;
  constexpr int MV = T::MV, NR = T::NR, BW = T::BW;
  constexpr std::int64_t MR = T::rows, kKC = T::KC, kMC = T::MC, NC_MAX = T::NC;
  // The columns are split evenly into panels of at most NC_MAX (whole
  // groups of NR), so that no panel is a thin remainder that repacks all of
  // A for little work.
  const std::int64_t panel_count = (n_end - n_begin + NC_MAX - 1) / NC_MAX;
  const std::int64_t nc_step = ((n_end - n_begin + panel_count - 1) / panel_count + NR - 1) / NR * NR;
  const std::int64_t kc_max = std::min(kKC, s.K), nc_max = std::min(nc_step, n_end - n_begin);
  // Both packed blocks start on a cache line (as does every A tile: MR * kc
  // floats apart), so no vector load of A splits across two lines.
  const std::int64_t panel = (kc_max * ((nc_max + NR - 1) / NR) * NR * BW + kLineFloats - 1) / kLineFloats * kLineFloats;
  const std::int64_t a_block = ((std::min(kMC, m_end - m_begin) + MR - 1) / MR) * MR * kc_max;
  const std::unique_ptr<float, LineAlignedDelete> buffer(static_cast<float*>(
      ::operator new(static_cast<std::size_t>(panel + a_block) * sizeof(float), std::align_val_t{kLineBytes})));
  float* const packed_b = buffer.get();
  float* const packed_a = buffer.get() + panel;
  for (std::int64_t n_c = n_begin; n_c < n_end; n_c += nc_step) {
    const std::int64_t nc = std::min(nc_step, n_end - n_c);
    const std::int64_t groups = (nc + NR - 1) / NR;
    for (std::int64_t k0 = 0; k0 < s.K; k0 += kKC) {
      const std::int64_t kc = std::min(kKC, s.K - k0);
      const bool first = k0 == 0;
      for (std::int64_t g = 0; g < groups; ++g)
        pack_b<NR, BW>(op.b + k0 * s.sbk + (n_c + g * NR) * s.sbn, s.sbk, s.sbn, kc,
                       std::min<std::int64_t>(NR, nc - g * NR), packed_b + g * kc * NR * BW);
      for (std::int64_t m0 = m_begin; m0 < m_end; m0 += kMC) {
        const std::int64_t rows = std::min(kMC, m_end - m0);
        pack_a<MR>(op.a, s.sam, s.sak, m0, rows, k0, kc, packed_a);
        const std::int64_t tiles = (rows + MR - 1) / MR;
        for (std::int64_t g = 0; g < groups; ++g) {
          const std::int64_t n0 = n_c + g * NR, cols = std::min<std::int64_t>(NR, nc - g * NR);
          for (std::int64_t t = 0; t < tiles; ++t) {
            float* c = op.c + (m0 + t * MR) * s.som + n0 * s.son;
            // The next micro-tile's result tile, requested now: its running
            // sums are loaded before its k loop can start.
            if (t + 1 < tiles)
              prefetch_tile<MR, NR>(c + MR * s.som, s.som, s.son, std::min(MR, rows - (t + 1) * MR), cols);
            else if (g + 1 < groups)
              prefetch_tile<MR, NR>(op.c + m0 * s.som + (n0 + NR) * s.son, s.som, s.son, std::min(MR, rows),
                                    std::min<std::int64_t>(NR, nc - (g + 1) * NR));
            micro<V, MV, NR, BW>(packed_a + t * MR * kc, packed_b + g * kc * NR * BW, kc, c, s.som, s.son,
                                 std::min(MR, rows - t * MR), cols, first);
          }
        }
      }
    }
  }
}

using BlockFn = void (*)(const StrictGemmOperands&, const StrictGemmShape&, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t);

struct Kernel {
  StrictKernelInfo info;  // supported: filled in on first use
  bool (*supported)();
  BlockFn block;
};

bool always() { return true; }

template <class T>
constexpr StrictKernelInfo info_of(const char* name) {
  return {name, T::rows, T::NR, T::lanes, T::KC, T::MC, T::NC, false};
}

#if defined(__x86_64__)
// The blocking per instruction set (KC k steps, MC rows of A):
//   avx512  KC 256, MC 256: a 12 KiB packed B group in L1, a 256 KiB A
//           block in the 1-2 MiB L2 of AVX-512 cores.
//   avx2    KC 256, MC 144: a 6 KiB B group; a 144 KiB A block, which fits
//           the 256 KiB L2 of Haswell-Skylake client cores and leaves most
//           of Zen 2/3's 512 KiB for the B panel's groups and the result
//           (BLIS's Zen 3 SGEMM keeps a 144 x 256 block there too).
//   sse2    KC 128, MC 144: its B group holds 4 copies of each value, so
//           128 steps make 12 KiB, half the L1 of the 24-32 KiB cores that
//           lack AVX2 (256 steps would fill it).
// 32 zmm: 24 sums, 2 A vectors, 1 broadcast, 1 product.
using Avx512Tile = TileShape<v16f, 2, 12, 1, 256, 256>;
// 16 ymm: 12 sums, 2 A vectors, 1 broadcast, 1 product.
using Avx2Tile = TileShape<v8f, 2, 6, 1, 256, 144>;
// 16 xmm: the same budget; SSE2 has no broadcast load, so B is packed
// broadcast (4 copies of each value) and loaded as a vector.
using Sse2Tile = TileShape<v4f, 2, 6, 4, 128, 144>;

__attribute__((target("avx512f"))) void block_avx512(const StrictGemmOperands& op, const StrictGemmShape& s,
                                                      std::int64_t m0, std::int64_t m1, std::int64_t n0,
                                                      std::int64_t n1) {
  block<Avx512Tile>(op, s, m0, m1, n0, n1);
}
__attribute__((target("avx2"))) void block_avx2(const StrictGemmOperands& op, const StrictGemmShape& s,
                                                 std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1) {
  block<Avx2Tile>(op, s, m0, m1, n0, n1);
}
void block_sse2(const StrictGemmOperands& op, const StrictGemmShape& s, std::int64_t m0, std::int64_t m1,
                std::int64_t n0, std::int64_t n1) {
  block<Sse2Tile>(op, s, m0, m1, n0, n1);
}
// __builtin_cpu_supports also checks that the operating system saves the
// registers (XCR0).
bool has_avx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// Best first.
const std::array<Kernel, 3> kKernels{{
    {info_of<Avx512Tile>("avx512"), has_avx512f, block_avx512},
    {info_of<Avx2Tile>("avx2"), has_avx2, block_avx2},
    {info_of<Sse2Tile>("sse2"), always, block_sse2},
}};
#else
using PortableTile = TileShape<v4f, 2, 6, 4, 256, 144>;
void block_portable(const StrictGemmOperands& op, const StrictGemmShape& s, std::int64_t m0, std::int64_t m1,
                    std::int64_t n0, std::int64_t n1) {
  block<PortableTile>(op, s, m0, m1, n0, n1);
}
const std::array<Kernel, 1> kKernels{{{info_of<PortableTile>("portable"), always, block_portable}}};
#endif

// The kernels with `supported` filled in for the running CPU.
const std::array<StrictKernelInfo, kKernels.size()>& infos() {
  static const std::array<StrictKernelInfo, kKernels.size()> table = [] {
    std::array<StrictKernelInfo, kKernels.size()> t{};
    for (std::size_t i = 0; i < kKernels.size(); ++i) {
      t[i] = kKernels[i].info;
      t[i].supported = kKernels[i].supported();
    }
    return t;
  }();
  return table;
}

std::string kernel_names() {
  std::string names;
  for (const Kernel& k : kKernels) names += (names.empty() ? "" : ", ") + std::string(k.info.name);
  return names;
}

// The kernel named `name` that this CPU can run, or ValueError (`what`
// names the setting).
const Kernel& find_kernel(std::string_view name, std::string_view what) {
  for (std::size_t i = 0; i < kKernels.size(); ++i) {
    if (name != kKernels[i].info.name) continue;
    if (!infos()[i].supported)
      throw ValueError(fmt::format("{}: this processor cannot run the '{}' matmul kernel", what, name));
    return kKernels[i];
  }
  throw ValueError(fmt::format("{}: '{}' is not a matmul kernel of this build ({})", what, name, kernel_names()));
}

const Kernel& initial_kernel() {
  if (const char* env = std::getenv("STRIDEWEAVE_MATMUL_KERNEL"); env != nullptr && *env != '\0')
    return find_kernel(env, "STRIDEWEAVE_MATMUL_KERNEL");
  for (std::size_t i = 0; i < kKernels.size(); ++i)
    if (infos()[i].supported) return kKernels[i];
  return kKernels.back();  // the baseline: every processor of the architecture
}

std::atomic<const Kernel*> g_kernel{nullptr};  // nullptr: not chosen yet

const Kernel& active_kernel() {
  const Kernel* k = g_kernel.load(std::memory_order_acquire);
  if (k != nullptr) return *k;
  const Kernel* chosen = &initial_kernel();
  // A concurrent set_strict_f32_kernel wins over the automatic choice.
  if (g_kernel.compare_exchange_strong(k, chosen, std::memory_order_acq_rel)) return *chosen;
  return *k;
}

// An empty contraction: every result element is +0.0.
void zero(const StrictGemmOperands& op, const StrictGemmShape& s) {
  for (std::int64_t n = 0; n < s.N; ++n)
    for (std::int64_t m = 0; m < s.M; ++m) op.c[m * s.som + n * s.son] = 0.0f;
}

void one_matrix(const Kernel& kr, const StrictGemmOperands& op, const StrictGemmShape& s) {
  if (s.K == 0) {
    zero(op, s);
    return;
  }
  const std::int64_t mr = kr.info.rows, nr = kr.info.cols;
  const std::int64_t flops = s.M * s.N * s.K;
  const std::int64_t groups = (s.N + nr - 1) / nr;
  const std::int64_t tiles = (s.M + mr - 1) / mr;
  const int threads = flops < kParallelFlops ? 1 : parallel_ranges(std::max(groups, tiles), 1);
  if (threads > 1 && groups >= 2 * threads) {
    // Split by result columns (each range a whole number of NR groups).
    parallel_for(groups, 1, [&](std::int64_t g0, std::int64_t g1) {
      kr.block(op, s, 0, s.M, g0 * nr, std::min(s.N, g1 * nr));
    });
  } else if (threads > 1 && tiles >= 2) {
    // Few columns: split by row tiles.
    parallel_for(tiles, 1, [&](std::int64_t t0, std::int64_t t1) {
      kr.block(op, s, t0 * mr, std::min(s.M, t1 * mr), 0, s.N);
    });
  } else {
    kr.block(op, s, 0, s.M, 0, s.N);
  }
}

}  // namespace

std::span<const StrictKernelInfo> strict_f32_kernels() { return infos(); }

const char* strict_f32_kernel() { return active_kernel().info.name; }

void set_strict_f32_kernel(const char* name) {
  if (name == nullptr || *name == '\0') {
    g_kernel.store(nullptr, std::memory_order_release);
    return;
  }
  g_kernel.store(&find_kernel(name, "set_strict_f32_kernel"), std::memory_order_release);
}

void strict_f32_gemm(std::span<const StrictGemmOperands> batch, const StrictGemmShape& s) {
  if (s.M == 0 || s.N == 0 || batch.empty()) return;
  const Kernel& kr = active_kernel();  // one kernel for the whole call
  const std::int64_t flops = s.M * s.N * s.K;
  if (batch.size() > 1 && flops < kParallelFlops) {
    // Many small matrices: one entry per thread at a time.
    const std::int64_t grain = std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(flops, 1));
    parallel_for(static_cast<std::int64_t>(batch.size()), grain, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) one_matrix(kr, batch[static_cast<std::size_t>(i)], s);
    });
    return;
  }
  for (const StrictGemmOperands& op : batch) one_matrix(kr, op, s);
}

}  // namespace strideweave::carriers::cpu
