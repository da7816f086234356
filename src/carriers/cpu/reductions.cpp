// CPU kernels: reductions, arg reductions, cumsum, sort, topk.
// Semantics: docs/operations/reductions.md.
//
// Reductions view the input with the reduced axes first (ascending, so the
// first reduced axis is fastest: the block's logical order) and the kept axes
// after; each space is coalesced once per call (extent-1 axes dropped,
// contiguous neighbours merged, logical order kept), so a contiguous block is
// one run with stride 1; when the fastest kept axis is contiguous instead,
// neighbouring results fold through their blocks together (see fold()). The
// result is written through the output's flat strides. Every plan except
// FLOATING reduce_sum follows the normative order of Generic exactly
// (bit-identical results); FLOATING reduce_sum uses CPU's own order (simd.h,
// docs/numerics.md), defined on a fixed virtual width so that it gives the
// same bits on every Highway target, at every thread count and for every
// layout of the block: a contiguous block is summed in place, any other block
// is gathered piece by piece into a buffer and summed by the same kernel.
//
// Lines (cumsum, sort, topk) walk the other axes and handle one line along
// the axis at a time; cumsum along an axis that is not the innermost one
// advances whole slabs instead, which adds in the same per-element order.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "carriers/cpu/kernels.h"
#include "carriers/cpu/simd.h"
#include "policy/operation_ids.h"

namespace strideweave::carriers::cpu {
namespace {

// ---- Index spaces: extents with N stride vectors (in elements).

template <std::size_t N>
struct Space {
  std::vector<std::int64_t> extents;
  std::array<std::vector<std::int64_t>, N> strides;

  void push(std::int64_t extent, const std::array<std::int64_t, N>& s) {
    extents.push_back(extent);
    for (std::size_t k = 0; k < N; ++k) strides[k].push_back(s[k]);
  }
  std::int64_t size() const {
    return std::accumulate(extents.begin(), extents.end(), std::int64_t{1}, std::multiplies<>());
  }
  template <class T>
  std::vector<std::int64_t> bytes(std::size_t k) const {
    return byte_strides<T>(strides[k]);
  }
};

// Drops extent-1 axes and merges axis i+1 into axis i when every operand's
// stride continues (stride[i+1] == extent[i] * stride[i]). Logical order is
// kept. An empty space becomes the single axis {0}.
template <std::size_t N>
Space<N> coalesce(const Space<N>& in) {
  Space<N> out;
  for (std::int64_t e : in.extents)
    if (e == 0) {
      out.push(0, {});
      return out;
    }
  for (std::size_t i = 0; i < in.extents.size(); ++i) {
    if (in.extents[i] == 1) continue;
    std::array<std::int64_t, N> s{};
    for (std::size_t k = 0; k < N; ++k) s[k] = in.strides[k][i];
    if (!out.extents.empty()) {
      bool merges = true;
      for (std::size_t k = 0; k < N; ++k) merges &= s[k] == out.extents.back() * out.strides[k].back();
      if (merges) {
        out.extents.back() *= in.extents[i];
        continue;
      }
    }
    out.push(in.extents[i], s);
  }
  return out;
}

// ---- Reductions.

template <class T>
struct Reduction {
  Strided<T> x;
  Space<1> block;  // the reduced axes (x strides), first reduced axis fastest
  Space<2> kept;   // the kept axes (x strides, output strides)
};

template <class T>
Reduction<T> reduction(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  const auto& axes = call.attributes.get<std::vector<std::int64_t>>("axes");
  const bool keepdims = call.attributes.get<bool>("keepdims");
  const std::vector<std::int64_t> o = *call.output.layout().flat_strides();
  Reduction<T> r;
  r.x = strided<T>(x);
  Space<1> block;
  Space<2> kept;
  for (std::int64_t a : axes) block.push(x.shape().extent(static_cast<std::size_t>(a)), {r.x.strides[static_cast<std::size_t>(a)]});
  std::size_t j = 0;  // the output axis of the next kept axis
  for (std::size_t i = 0; i < x.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i));
    if (!reduced) kept.push(x.shape().extent(i), {r.x.strides[i], o[keepdims ? i : j++]});
  }
  r.block = coalesce(block);
  r.kept = coalesce(kept);
  return r;
}

// Writes fn(first element of the block) for every result element.
template <class T, class O, class BlockFn>
void for_each_result(const Reduction<T>& r, const Tensor& output, BlockFn&& fn) {
  const std::vector<std::int64_t> xb = r.kept.template bytes<T>(0), ob = r.kept.template bytes<O>(1);
  walk<2>(r.kept.extents, {reinterpret_cast<char*>(r.x.base), reinterpret_cast<char*>(out_data<O>(output))},
          {xb.data(), ob.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i)
              *reinterpret_cast<O*>(p[1] + i * st[1]) = fn(reinterpret_cast<const T*>(p[0] + i * st[0]));
          });
}

// Calls run(pointer, step, count) for the runs of one block in logical order.
template <class T, class Run>
void for_each_run(const Reduction<T>& r, const std::vector<std::int64_t>& block_bytes, const T* base, Run&& run) {
  walk<1>(r.block.extents, {reinterpret_cast<char*>(const_cast<T*>(base))}, {block_bytes.data()},
          [&](const std::array<char*, 1>& p, const std::array<std::int64_t, 1>& st, std::int64_t n) {
            run(reinterpret_cast<const T*>(p[0]), st[0] / std::int64_t{sizeof(T)}, n);
          });
}

// ---- reduce_sum. Exact Int32 sums accumulate in 64 (or 128) bits and narrow
// once. FLOATING sums use CPU's summation order (simd.h): pieces of
// simd::kSumPiece elements, each summed with a fixed set of partial sums,
// the piece sums combined pairwise.

// FLOATING sum of one contiguous block (split across threads for long
// blocks).
template <class Acc>
Acc sum_contiguous(const float* x, std::int64_t n) {
  if constexpr (std::is_same_v<Acc, double>) return simd::sum_f32_wide(x, n);
  else return simd::sum_f32(x, n);
}

// FLOATING sum of a block that is not one contiguous run: its elements, in
// logical order, are copied into a piece-sized buffer and each full (or the
// last) piece is summed by the kernel the contiguous case uses, so the same
// values give the same bits in every layout. Reused across the blocks of one
// call.
template <class Acc>
class GatheredSum {
 public:
  GatheredSum() : buffer_(static_cast<std::size_t>(simd::kSumPiece)) {}

  template <class Runs>
  Acc operator()(Runs&& for_each_run) {
    pieces_.clear();
    fill_ = 0;
    for_each_run([&](const float* q, std::int64_t step, std::int64_t count) {
      while (count > 0) {
        const std::int64_t m = std::min(count, simd::kSumPiece - fill_);
        float* dst = buffer_.data() + fill_;
        if (step == 1) std::memcpy(dst, q, static_cast<std::size_t>(m) * sizeof(float));
        else
          for (std::int64_t i = 0; i < m; ++i) dst[i] = q[i * step];
        fill_ += m;
        q += m * step;
        count -= m;
        if (fill_ == simd::kSumPiece) flush();
      }
    });
    if (fill_ > 0 || pieces_.empty()) flush();
    return simd::combine_pieces(pieces_.data(), pieces_.size());
  }

 private:
  void flush() {
    if constexpr (std::is_same_v<Acc, double>) pieces_.push_back(simd::sum_piece_f32_wide(buffer_.data(), fill_));
    else pieces_.push_back(simd::sum_piece_f32(buffer_.data(), fill_));
    fill_ = 0;
  }

  std::vector<float> buffer_;
  std::vector<Acc> pieces_;
  std::int64_t fill_ = 0;
};

template <class T, class Acc, class O>
void reduce_sum(const KernelCall& call) {
  const Reduction<T> r = reduction<T>(call);
  const std::vector<std::int64_t> bb = r.block.template bytes<T>(0);
  const std::int64_t n = r.block.size();
  // The layout case, once: is the block one contiguous run?
  const bool contiguous = r.block.extents.size() <= 1 && (r.block.extents.empty() || r.block.strides[0][0] == 1);
  if constexpr (std::is_floating_point_v<Acc>) {
    if (contiguous) {
      for_each_result<T, O>(r, call.output,
                            [&](const T* base) -> O { return static_cast<O>(sum_contiguous<Acc>(base, n)); });
      return;
    }
    GatheredSum<Acc> gathered;
    for_each_result<T, O>(r, call.output, [&](const T* base) -> O {
      return static_cast<O>(gathered([&](auto&& run) { for_each_run(r, bb, base, run); }));
    });
  } else {
    // for_each_result visits the result elements in logical order, one at a
    // time: the first out-of-range one is the OverflowError's element.
    std::int64_t ordinal = 0, first_bad = -1;
    for_each_result<T, O>(r, call.output, [&](const T* base) -> O {
      Acc acc = 0;
      for_each_run(r, bb, base, [&](const T* q, std::int64_t step, std::int64_t count) {
        for (std::int64_t i = 0; i < count; ++i) acc += static_cast<Acc>(q[i * step]);
      });
      if (first_bad < 0 && (acc < INT32_MIN_VALUE || acc > INT32_MAX_VALUE)) first_bad = ordinal;
      ++ordinal;
      return static_cast<O>(acc);
    });
    if (first_bad >= 0) raise_int32_overflow("reduce_sum", first_bad);
  }
}

// Int32 sums: 64-bit accumulation is exact below 2**32 terms; beyond, 128.
void reduce_sum_int32(const KernelCall& call) {
  const Tensor& x = call.tensor(0);
  std::int64_t reduced = 1;
  for (std::int64_t a : call.attributes.get<std::vector<std::int64_t>>("axes"))
    reduced *= x.shape().extent(static_cast<std::size_t>(a));
  if (reduced < (std::int64_t{1} << 32)) reduce_sum<std::int32_t, std::int64_t, std::int32_t>(call);
  else reduce_sum<std::int32_t, int128, std::int32_t>(call);
}

// ---- Sequential folds: reduce_prod, reduce_max, reduce_min, argmax,
// argmin. A fold functor has a State, start(first element of the block),
// step(state, v, ordinal) applied to every element in the block's logical
// order (ordinal counting from 0), and finish(state) -> the result element.

struct ProdFold {
  // SEQUENTIAL_BINARY32_PRODUCT: from 1.0f, one binary32 multiply per element.
  using State = float;
  using Out = float;
  static State start(const float*) noexcept { return 1.0f; }
  void step(State& p, float v, std::int64_t) const noexcept { p = p * v; }
  static Out finish(State p) noexcept { return p; }
};
struct MaxFold {
  // MAXIMUM: from the first element; the first NaN stays; +0 over -0 (equal
  // non-zero values have equal bits).
  using State = float;
  using Out = float;
  static State start(const float* first) noexcept { return *first; }
  void step(State& w, float v, std::int64_t) const noexcept {
    if (w != w) return;
    if (v != v || v > w || (v == w && std::signbit(w))) w = v;
  }
  static Out finish(State w) noexcept { return w; }
};
struct MinFold {
  // MINIMUM: as MaxFold, with -0 under +0.
  using State = float;
  using Out = float;
  static State start(const float* first) noexcept { return *first; }
  void step(State& w, float v, std::int64_t) const noexcept {
    if (w != w) return;
    if (v != v || v < w || (v == w && std::signbit(v))) w = v;
  }
  static Out finish(State w) noexcept { return w; }
};

// ARGMAX / ARGMIN: the running winner is replaced only by a strictly better
// element, so the first winner's ordinal stays. NaN is the extreme of both.
struct ArgMaxBetter {
  bool operator()(float w, float v) const noexcept {
    if (w != w) return false;
    if (v != v) return true;
    if (v == w) return std::signbit(w) && !std::signbit(v);
    return v > w;
  }
};
struct ArgMinBetter {
  bool operator()(float w, float v) const noexcept {
    if (w != w) return false;
    if (v != v) return true;
    if (v == w) return !std::signbit(w) && std::signbit(v);
    return v < w;
  }
};
template <class Better>
struct ArgFold {
  struct State {
    float winner;
    std::int64_t at;
  };
  using Out = std::int32_t;
  static State start(const float* first) noexcept { return {*first, 0}; }
  void step(State& s, float v, std::int64_t ordinal) const noexcept {
    if (Better{}(s.winner, v)) s = {v, ordinal};
  }
  // The front end bounded every block to 2^31 elements.
  static Out finish(const State& s) noexcept { return static_cast<Out>(s.at); }
};

// Two layout cases, chosen once per call:
// - block by block: each result element walks its block (best when the
//   block is one contiguous run, or the kept axes are not contiguous);
// - across a kept run: when the fastest kept axis has stride 1 and the block
//   is not one run, the results of a run along that axis advance together
//   through their blocks, reading contiguous rows. Every result element still
//   sees its block in logical order, so both cases give the same bits.
// Fold::start reads the first element only for MAXIMUM/MINIMUM/ARG*, whose
// empty blocks the front end rejected.
template <class Fold>
void fold(const KernelCall& call) {
  using O = typename Fold::Out;
  using State = typename Fold::State;
  const Reduction<float> r = reduction<float>(call);
  const std::vector<std::int64_t> bb = r.block.template bytes<float>(0);
  const Fold f;
  const bool block_is_run = r.block.extents.empty() || (r.block.extents.size() == 1 && r.block.strides[0][0] == 1);
  const bool across = !block_is_run && !r.kept.extents.empty() && r.kept.strides[0][0] == 1;
  if constexpr (std::is_same_v<Fold, MaxFold> || std::is_same_v<Fold, MinFold>) {
    if (block_is_run) {  // each block one contiguous run: the vectorised extremum
      const std::int64_t count = r.block.extents.empty() ? 1 : r.block.extents[0];
      for_each_result<float, O>(
          r, call.output, [&](const float* base) { return simd::extremum_f32(base, count, std::is_same_v<Fold, MaxFold>); });
      return;
    }
  }
  if (!across) {
    for_each_result<float, O>(r, call.output, [&](const float* base) {
      State state = Fold::start(base);
      std::int64_t ordinal = 0;
      for_each_run(r, bb, base, [&](const float* q, std::int64_t step, std::int64_t count) {
        for (std::int64_t i = 0; i < count; ++i, ++ordinal) f.step(state, q[i * step], ordinal);
      });
      return Fold::finish(state);
    });
    return;
  }
  const std::vector<std::int64_t> xb = r.kept.template bytes<float>(0), ob = r.kept.template bytes<O>(1);
  std::vector<State> states(static_cast<std::size_t>(r.kept.extents[0]));
  walk<2>(r.kept.extents, {reinterpret_cast<char*>(r.x.base), reinterpret_cast<char*>(out_data<O>(call.output))},
          {xb.data(), ob.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            const float* first = reinterpret_cast<const float*>(p[0]);  // run stride 1
            for (std::int64_t i = 0; i < n; ++i) states[static_cast<std::size_t>(i)] = Fold::start(first + i);
            std::int64_t ordinal = 0;
            for_each_run(r, bb, first, [&](const float* q, std::int64_t step, std::int64_t count) {
              for (std::int64_t k = 0; k < count; ++k, ++ordinal) {
                const float* row = q + k * step;
                for (std::int64_t i = 0; i < n; ++i) f.step(states[static_cast<std::size_t>(i)], row[i], ordinal);
              }
            });
            for (std::int64_t i = 0; i < n; ++i)
              *reinterpret_cast<O*>(p[1] + i * st[1]) = Fold::finish(states[static_cast<std::size_t>(i)]);
          });
}

// ---- Lines along one axis.

struct Lines {
  std::int64_t extent = 0;    // of the input along the axis
  std::int64_t x_stride = 0;  // elements
  std::int64_t o_stride = 0;  // elements
  Space<2> others;            // the other axes (x strides, output strides)
};

Lines lines(const KernelCall& call, const Strided<float>& x) {
  const auto axis = static_cast<std::size_t>(call.attributes.get<std::int64_t>("axis"));
  const std::vector<std::int64_t> o = *call.output.layout().flat_strides();
  Lines l;
  l.extent = call.tensor(0).shape().extent(axis);
  l.x_stride = x.strides[axis];
  l.o_stride = o[axis];
  Space<2> others;
  for (std::size_t i = 0; i < x.strides.size(); ++i)
    if (i != axis) others.push(call.output.shape().extent(i), {x.strides[i], o[i]});
  l.others = coalesce(others);
  return l;
}

// Calls line(x_line, out_line) for every line (logical order of the others).
template <class O, class Line>
void for_each_line(const Lines& l, const Strided<float>& x, const Tensor& output, Line&& line) {
  const std::vector<std::int64_t> xb = l.others.template bytes<float>(0), ob = l.others.template bytes<O>(1);
  walk<2>(l.others.extents, {reinterpret_cast<char*>(x.base), reinterpret_cast<char*>(out_data<O>(output))},
          {xb.data(), ob.data()},
          [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i)
              line(reinterpret_cast<const float*>(p[0] + i * st[0]), reinterpret_cast<O*>(p[1] + i * st[1]));
          });
}

// cumsum: SEQUENTIAL_BINARY32 along the axis, from +0.0. Layout case, once:
// the axis is the innermost one of x (or the only one) -> line by line;
// otherwise slab by slab, each slab out[j] = out[j-1] + x[j] over the other
// axes (the same adds per element, in the same order).
void cumsum(const KernelCall& call) {
  const Strided<float> x = strided<float>(call.tensor(0));
  const Lines l = lines(call, x);
  if (l.extent == 0 || l.others.size() == 0) return;
  const bool innermost = l.others.extents.empty() || l.x_stride == 1 ||
                         std::abs(l.x_stride) <= std::abs(l.others.strides[0][0]);
  if (innermost) {
    for_each_line<float>(l, x, call.output, [&](const float* xs, float* os) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < l.extent; ++j) {
        sum = sum + xs[j * l.x_stride];
        os[j * l.o_stride] = sum;
      }
    });
    return;
  }
  float* out = out_data<float>(call.output);
  const std::vector<std::int64_t> xb = l.others.bytes<float>(0), ob = l.others.bytes<float>(1);
  for (std::int64_t j = 0; j < l.extent; ++j) {
    char* o_j = reinterpret_cast<char*>(out + j * l.o_stride);
    char* x_j = reinterpret_cast<char*>(x.base + j * l.x_stride);
    if (j == 0) {
      walk<2>(l.others.extents, {o_j, x_j}, {ob.data(), xb.data()},
              [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t n) {
                for (std::int64_t i = 0; i < n; ++i)
                  *reinterpret_cast<float*>(p[0] + i * st[0]) = 0.0f + *reinterpret_cast<const float*>(p[1] + i * st[1]);
              });
      continue;
    }
    char* o_prev = reinterpret_cast<char*>(out + (j - 1) * l.o_stride);
    walk<3>(l.others.extents, {o_j, o_prev, x_j}, {ob.data(), ob.data(), xb.data()},
            [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t n) {
              for (std::int64_t i = 0; i < n; ++i)
                *reinterpret_cast<float*>(p[0] + i * st[0]) = *reinterpret_cast<const float*>(p[1] + i * st[1]) +
                                                               *reinterpret_cast<const float*>(p[2] + i * st[2]);
            });
  }
}

// ---- sort, topk. Each element becomes one 64-bit word: its order key in the
// high half and its position in the low half, so an ordinary sort of the
// words is the stable sort (ties by position). The key maps the order
// -inf < ... < -0 < +0 < ... < +inf < NaN onto unsigned integers (every NaN
// to the top); descending order complements the key, not the position.

inline std::uint32_t order_key(float f) noexcept {
  if (f != f) return 0xFFFFFFFFu;
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Writes the first `count` entries of one sorted line.
struct WriteValues {
  using Out = float;
  void operator()(const float* xs, std::int64_t x_stride, std::uint32_t position, float* o) const noexcept {
    *o = xs[static_cast<std::int64_t>(position) * x_stride];
  }
};
struct WriteIndices {
  using Out = std::int32_t;
  void operator()(const float*, std::int64_t, std::uint32_t position, std::int32_t* o) const noexcept {
    *o = static_cast<std::int32_t>(position);
  }
};

template <class Write, bool Topk>
void sorted_lines(const KernelCall& call) {
  using O = typename Write::Out;
  const Strided<float> x = strided<float>(call.tensor(0));
  const Lines l = lines(call, x);
  const bool descending = Topk ? call.attributes.get<bool>("largest") : call.attributes.get<bool>("descending");
  const std::int64_t count = Topk ? call.attributes.get<std::int64_t>("k") : l.extent;
  if (count == 0) return;
  const std::uint32_t flip = descending ? 0xFFFFFFFFu : 0u;
  std::vector<std::uint64_t> words(static_cast<std::size_t>(l.extent));
  const Write write;
  for_each_line<O>(l, x, call.output, [&](const float* xs, O* os) {
    for (std::int64_t j = 0; j < l.extent; ++j)
      words[static_cast<std::size_t>(j)] =
          (static_cast<std::uint64_t>(order_key(xs[j * l.x_stride]) ^ flip) << 32) | static_cast<std::uint64_t>(j);
    if (count < l.extent) std::partial_sort(words.begin(), words.begin() + count, words.end());
    else std::sort(words.begin(), words.end());
    for (std::int64_t j = 0; j < count; ++j)
      write(xs, l.x_stride, static_cast<std::uint32_t>(words[static_cast<std::size_t>(j)]), os + j * l.o_stride);
  });
}

}  // namespace

KernelFn reduction_kernel(const OperationPlan& p) {
  using Op = policy::OperationId;
  const std::optional<Op> id = policy::find_operation_id(p.operation());
  if (!id) return nullptr;
  const Op op = *id;
  if (op == Op::reduce_sum) {
    if (p.accumulation() == Accumulation::EXACT_INTEGER) return reduce_sum_int32;
    return p.accumulator_dtype() == &DType::Float64() ? KernelFn(reduce_sum<float, double, float>)
                                                       : KernelFn(reduce_sum<float, float, float>);
  }
  // The remaining plans are Float32-only (operation-dtype-policy.md R9).
  if (!src_is(p, 0, DType::Float32())) return nullptr;
  if (op == Op::reduce_prod) return fold<ProdFold>;
  if (op == Op::reduce_max) return fold<MaxFold>;
  if (op == Op::reduce_min) return fold<MinFold>;
  if (op == Op::argmax) return fold<ArgFold<ArgMaxBetter>>;
  if (op == Op::argmin) return fold<ArgFold<ArgMinBetter>>;
  if (op == Op::cumsum) return cumsum;
  if (op == Op::_sort_values) return sorted_lines<WriteValues, false>;
  if (op == Op::_sort_indices) return sorted_lines<WriteIndices, false>;
  if (op == Op::_topk_values) return sorted_lines<WriteValues, true>;
  if (op == Op::_topk_indices) return sorted_lines<WriteIndices, true>;
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
