// CPU kernels: matmul, conv_general, gather, scatter.
#include "carriers/cpu/kernels.h"
#include "carriers/cpu/matmul_batch.h"
#include "carriers/cpu/matmul_strict.h"
#include "policy/operation_ids.h"

#include <cstring>

namespace strideweave::carriers::cpu {
namespace {

// ---- matmul over aligned operands (..., M, K) x (..., K, N). For each batch
// and each result column n the kernel accumulates a column of M partial sums
// over ascending k (the result is compact: batch axes fastest, then m, n); every product is rounded to binary32
// before it is added in Acc (BINARY32 compute, no fused contraction). The
// per-element order equals Generic's, so Float32 results agree bit for bit.

// The Float32 x Float32 -> Float32 (Float32 accumulator) plan runs the
// blocked, vectorised and threaded kernel of matmul_strict.cpp, which keeps
// the same per-element order.
template <class A, class B, class CA, class Acc, class O>
void matmul(const KernelCall& call) {
  const MatmulBatch<A, B, O> mm(call);
  const std::int64_t M = mm.M, N = mm.N, K = mm.K;
  if (M == 0 || N == 0) return;
  constexpr bool strict_f32 = std::is_same_v<A, float> && std::is_same_v<B, float> && std::is_same_v<Acc, float>;
  if constexpr (strict_f32) {
    std::vector<StrictGemmOperands> strict_batch;
    mm.for_each([&](O* po, const A* pa, const B* pb) { strict_batch.push_back({pa, pb, po}); });
    strict_f32_gemm(strict_batch, {M, N, K, mm.sam, mm.sak, mm.sbk, mm.sbn, mm.som, mm.son});
    return;
  }
  std::vector<Acc> acc(static_cast<std::size_t>(M));
  // The Int32 plan can fail, so its output is always a fresh compact result
  // (caller_output = FallbackCopy, kernel_axes.h): a slot index is a logical
  // ordinal, and the smallest out-of-range one is the OverflowError's element.
  const O* out_base = out_data<O>(call.output);
  std::int64_t first_bad = -1;
  mm.for_each([&](O* po, const A* pa, const B* pb) {
    for (std::int64_t n = 0; n < N; ++n) {
      std::fill(acc.begin(), acc.end(), Acc{0});
      for (std::int64_t k = 0; k < K; ++k) {
        const CA y = convert<CA>(pb[k * mm.sbk + n * mm.sbn]);
        const A* col = pa + k * mm.sak;
        if constexpr (std::is_floating_point_v<Acc>) {
          for (std::int64_t m = 0; m < M; ++m) {
            const float product = convert<CA>(col[m * mm.sam]) * y;  // rounded to binary32
            acc[static_cast<std::size_t>(m)] += static_cast<Acc>(product);
          }
        } else {
          for (std::int64_t m = 0; m < M; ++m)
            acc[static_cast<std::size_t>(m)] += static_cast<Acc>(static_cast<std::int64_t>(col[m * mm.sam]) * y);
        }
      }
      O* column = po + n * mm.son;
      for (std::int64_t m = 0; m < M; ++m) {
        const Acc v = acc[static_cast<std::size_t>(m)];
        if constexpr (!std::is_floating_point_v<Acc>) {
          if (v < INT32_MIN_VALUE || v > INT32_MAX_VALUE) {
            const std::int64_t slot = (column + m * mm.som) - out_base;
            if (first_bad < 0 || slot < first_bad) first_bad = slot;
          }
        }
        column[m * mm.som] = static_cast<O>(v);
      }
    }
  });
  if (first_bad >= 0) raise_int32_overflow("matmul", first_bad);
}

// ---- conv_general over input (N, C_in, S_1..S_d) and weight (C_out,
// C_in/groups, K_1..K_d). For each (n, co, o_2..o_d) the kernel keeps a row of
// O_1 partial sums and visits the taps (ci, k_1..k_d) of the weight slice in
// logical order (ci fastest), adding each tap's binary32 product to every
// element of the row. Every result element therefore sees Generic's order
// exactly (SEQUENTIAL_BINARY32: from +0.0, one rounding per product and per
// add). A padded position contributes the product (+0.0 * w), so an inf or
// NaN weight yields NaN there as in Generic.

// acc + x * w with the product rounded to binary32 before the add.
struct MulAccumulateF32 {
  float operator()(float acc, float x, float w) const noexcept {
    const float product = x * w;
    return acc + product;
  }
};

std::int64_t floor_div(std::int64_t a, std::int64_t b) {  // b > 0
  std::int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

struct ConvTap {
  std::int64_t ci;             // input channel within the group
  std::int64_t weight_offset;  // relative to the output channel's slice
  std::vector<std::int64_t> k;  // k_1..k_d
};

void conv_general(const KernelCall& call) {
  const Tensor& tin = call.tensor(0);
  const Tensor& tw = call.tensor(1);
  const Tensor& out = call.output;
  const auto& stride = call.attributes.get<std::vector<std::int64_t>>("stride");
  const auto& lo = call.attributes.get<std::vector<std::int64_t>>("padding_lo");
  const auto& dilation = call.attributes.get<std::vector<std::int64_t>>("dilation");
  const std::int64_t groups = call.attributes.get<std::int64_t>("groups");
  const std::size_t d = tin.rank() - 2;
  const std::vector<std::int64_t> out_ext(out.shape().extents().begin(), out.shape().extents().end());
  for (std::int64_t e : out_ext)
    if (e == 0) return;
  const Strided<float> x = strided<float>(tin);
  const Strided<float> w = strided<float>(tw);
  const auto os = *out.layout().flat_strides();
  float* o = out_data<float>(out);
  const std::int64_t c_in_per_group = tw.shape().extent(1);
  const std::int64_t c_out_per_group = tw.shape().extent(0) / groups;
  std::vector<std::int64_t> in_ext(d), k_ext(d);
  for (std::size_t i = 0; i < d; ++i) {
    in_ext[i] = tin.shape().extent(2 + i);
    k_ext[i] = tw.shape().extent(2 + i);
  }
  // The taps of one weight slice in logical order (ci fastest).
  std::vector<ConvTap> taps;
  {
    std::vector<std::int64_t> k(d, 0);
    const bool any = c_in_per_group > 0;
    while (any) {
      for (std::int64_t ci = 0; ci < c_in_per_group; ++ci) {
        std::int64_t off = ci * w.strides[1];
        for (std::size_t i = 0; i < d; ++i) off += k[i] * w.strides[2 + i];
        taps.push_back(ConvTap{ci, off, k});
      }
      std::size_t i = 0;
      for (; i < d; ++i) {
        if (++k[i] < k_ext[i]) break;
        k[i] = 0;
      }
      if (i == d) break;
    }
  }
  const MulAccumulateF32 mac;
  const std::int64_t row = out_ext[2];  // O_1
  const std::int64_t row_step = stride[0] * x.strides[2];
  std::vector<float> acc(static_cast<std::size_t>(row));
  // Odometer over (n, co, o_2..o_d).
  std::vector<std::int64_t> outer_ext{out_ext[0], out_ext[1]};
  outer_ext.insert(outer_ext.end(), out_ext.begin() + 3, out_ext.end());
  std::vector<std::int64_t> c(outer_ext.size(), 0);
  while (true) {
    const std::int64_t n = c[0], co = c[1], group = co / c_out_per_group;
    const float* wslice = w.base + co * w.strides[0];
    const float* xbase = x.base + n * x.strides[0] + group * c_in_per_group * x.strides[1];
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (const ConvTap& tap : taps) {
      const float wv = wslice[tap.weight_offset];
      const float pad = 0.0f * wv;  // the product of a padded +0.0 input
      // Axes 2..d: one position per row; outside the input the whole row is padding.
      bool inside = true;
      std::int64_t offset = tap.ci * x.strides[1];
      for (std::size_t i = 1; i < d; ++i) {
        const std::int64_t pos = c[1 + i] * stride[i] - lo[i] + tap.k[i] * dilation[i];
        inside = inside && pos >= 0 && pos < in_ext[i];
        offset += pos * x.strides[2 + i];
      }
      // Axis 1: o in [first, last) reads the input, the rest is padding.
      std::int64_t first = row, last = row;
      if (inside) {
        const std::int64_t shift = tap.k[0] * dilation[0] - lo[0];  // input position of o = 0
        first = std::clamp<std::int64_t>(floor_div(-shift + stride[0] - 1, stride[0]), 0, row);
        last = std::clamp<std::int64_t>(floor_div(in_ext[0] - 1 - shift, stride[0]) + 1, first, row);
        offset += (shift + first * stride[0]) * x.strides[2];
      }
      float* a = acc.data();
      for (std::int64_t i = 0; i < first; ++i) a[i] = a[i] + pad;
      if (first < last) {
        const float* xrow = xbase + offset;  // the input at o = first
        if (row_step == 1) {
          for (std::int64_t i = first; i < last; ++i) a[i] = mac(a[i], xrow[i - first], wv);
        } else {
          for (std::int64_t i = first; i < last; ++i) a[i] = mac(a[i], xrow[(i - first) * row_step], wv);
        }
      }
      for (std::int64_t i = last; i < row; ++i) a[i] = a[i] + pad;
    }
    float* orow = o + n * os[0] + co * os[1];
    for (std::size_t i = 1; i < d; ++i) orow += c[1 + i] * os[2 + i];
    for (std::int64_t i = 0; i < row; ++i) orow[i * os[2]] = acc[static_cast<std::size_t>(i)];
    std::size_t axis = 0;
    for (; axis < c.size(); ++axis) {
      if (++c[axis] < outer_ext[axis]) break;
      c[axis] = 0;
    }
    if (axis == c.size()) return;
  }
}

// ---- gather / scatter / scatter_add. The walk covers the indices' shape in
// logical order; the data (or result) pointer moves with every axis except
// the indexed one (stride 0 there), and the index adds index * axis stride.
// An index outside [0, extent) raises IndexError at the first such position
// in logical order, with Generic's message.

[[noreturn]] void index_error(const char* op, std::int32_t index, std::int64_t axis, std::int64_t extent) {
  throw IndexError(fmt::format("{}: index {} is out of range for axis {} of extent {}", op, index, axis, extent));
}

struct ScatterReplaceF32 {
  static constexpr const char* name = "scatter";
  void operator()(float& dst, float v) const noexcept { dst = v; }
};
struct ScatterAddF32 {
  static constexpr const char* name = "scatter_add";
  void operator()(float& dst, float v) const noexcept { dst = dst + v; }  // one binary32 rounding
};

void gather(const KernelCall& call) {
  const Tensor& tdata = call.tensor(0);
  const Tensor& tidx = call.tensor(1);
  const Tensor& out = call.output;
  const auto axis = call.attributes.get<std::int64_t>("axis");
  const std::int64_t extent = tdata.shape().extent(static_cast<std::size_t>(axis));
  const Strided<float> data = strided<float>(tdata);
  const Strided<std::int32_t> idx = strided<std::int32_t>(tidx);
  const std::int64_t axis_stride = data.strides[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> ds = data.strides;
  ds[static_cast<std::size_t>(axis)] = 0;
  const std::vector<std::int64_t> ob = byte_strides<float>(*out.layout().flat_strides()),
                                  ib = byte_strides<std::int32_t>(idx.strides), db = byte_strides<float>(ds);
  walk<3>(tidx.shape().extents(),
          {reinterpret_cast<char*>(out_data<float>(out)), reinterpret_cast<char*>(idx.base),
           reinterpret_cast<char*>(data.base)},
          {ob.data(), ib.data(), db.data()},
          [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t count) {
            float* po = reinterpret_cast<float*>(p[0]);
            const std::int32_t* pi = reinterpret_cast<const std::int32_t*>(p[1]);
            const float* pd = reinterpret_cast<const float*>(p[2]);
            const std::int64_t so = st[0] / std::int64_t{sizeof(float)}, si = st[1] / std::int64_t{sizeof(std::int32_t)},
                               sd = st[2] / std::int64_t{sizeof(float)};
            for (std::int64_t i = 0; i < count; ++i) {
              const std::int32_t v = pi[i * si];
              if (v < 0 || v >= extent) [[unlikely]] index_error("gather", v, axis, extent);
              po[i * so] = pd[i * sd + v * axis_stride];
            }
          });
}

template <class Combine>
void scatter(const KernelCall& call) {
  const Tensor& tdata = call.tensor(0);
  const Tensor& tidx = call.tensor(1);
  const Tensor& tsrc = call.tensor(2);
  const Tensor& out = call.output;
  const auto axis = call.attributes.get<std::int64_t>("axis");
  const std::int64_t extent = tdata.shape().extent(static_cast<std::size_t>(axis));
  float* o = out_data<float>(out);
  const auto os = *out.layout().flat_strides();
  // The result starts as a copy of data.
  {
    const Strided<float> data = strided<float>(tdata);
    const std::vector<std::int64_t> ob = byte_strides<float>(os), db = byte_strides<float>(data.strides);
    walk<2>(tdata.shape().extents(), {reinterpret_cast<char*>(o), reinterpret_cast<char*>(data.base)},
            {ob.data(), db.data()},
            [&](const std::array<char*, 2>& p, const std::array<std::int64_t, 2>& st, std::int64_t count) {
              float* po = reinterpret_cast<float*>(p[0]);
              const float* pd = reinterpret_cast<const float*>(p[1]);
              const std::int64_t so = st[0] / std::int64_t{sizeof(float)}, sd = st[1] / std::int64_t{sizeof(float)};
              if (so == 1 && sd == 1) std::copy(pd, pd + count, po);
              else
                for (std::int64_t i = 0; i < count; ++i) po[i * so] = pd[i * sd];
            });
  }
  const Strided<std::int32_t> idx = strided<std::int32_t>(tidx);
  const Strided<float> src = strided<float>(tsrc);
  const std::int64_t axis_stride = os[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> rs(os.begin(), os.end());
  rs[static_cast<std::size_t>(axis)] = 0;
  const std::vector<std::int64_t> rb = byte_strides<float>(rs), ib = byte_strides<std::int32_t>(idx.strides),
                                  sb = byte_strides<float>(src.strides);
  const Combine combine;
  walk<3>(tidx.shape().extents(),
          {reinterpret_cast<char*>(o), reinterpret_cast<char*>(idx.base), reinterpret_cast<char*>(src.base)},
          {rb.data(), ib.data(), sb.data()},
          [&](const std::array<char*, 3>& p, const std::array<std::int64_t, 3>& st, std::int64_t count) {
            float* pr = reinterpret_cast<float*>(p[0]);
            const std::int32_t* pi = reinterpret_cast<const std::int32_t*>(p[1]);
            const float* ps = reinterpret_cast<const float*>(p[2]);
            const std::int64_t sr = st[0] / std::int64_t{sizeof(float)}, si = st[1] / std::int64_t{sizeof(std::int32_t)},
                               ss = st[2] / std::int64_t{sizeof(float)};
            for (std::int64_t i = 0; i < count; ++i) {
              const std::int32_t v = pi[i * si];
              if (v < 0 || v >= extent) [[unlikely]] index_error(Combine::name, v, axis, extent);
              combine(pr[i * sr + v * axis_stride], ps[i * ss]);
            }
          });
}

}  // namespace

KernelFn matmul_kernel(const OperationPlan& p) {
  const SimpleDType &F = DType::Float32(), &I = DType::Int32();
  if (p.compute() == Arithmetic::BINARY32_FUSED) return fused_matmul_kernel(p);
  if (p.accumulation() == Accumulation::EXACT_INTEGER) return matmul<std::int32_t, std::int32_t, std::int64_t, int128, std::int32_t>;
  const bool wide = p.accumulator_dtype() == &DType::Float64();
#define SW_MM(TA, TB) (wide ? KernelFn(matmul<TA, TB, float, double, float>) : KernelFn(matmul<TA, TB, float, float, float>))
  if (src_is(p, 0, F) && src_is(p, 1, F)) return SW_MM(float, float);
  if (src_is(p, 0, F) && src_is(p, 1, I)) return SW_MM(float, std::int32_t);
  if (src_is(p, 0, I) && src_is(p, 1, F)) return SW_MM(std::int32_t, float);
#undef SW_MM
  return nullptr;
}

KernelFn structured_kernel(const OperationPlan& p) {
  using Op = policy::OperationId;
  const std::optional<Op> id = policy::find_operation_id(p.operation());
  if (!id) return nullptr;
  const Op op = *id;
  if (op == Op::matmul) return matmul_kernel(p);
  // The remaining plans are Float32 data with Int32 indices only (one plan each).
  const SimpleDType &F = DType::Float32(), &I = DType::Int32();
  if (op == Op::conv_general && src_is(p, 0, F) && src_is(p, 1, F)) return conv_general;
  if (op == Op::gather && src_is(p, 0, F) && src_is(p, 1, I)) return gather;
  const bool scatter_operands = p.operands().size() == 3 && src_is(p, 0, F) && src_is(p, 1, I) && src_is(p, 2, F);
  if (op == Op::scatter && scatter_operands) return scatter<ScatterReplaceF32>;
  if (op == Op::scatter_add && scatter_operands) return scatter<ScatterAddF32>;
  return nullptr;
}

}  // namespace strideweave::carriers::cpu
