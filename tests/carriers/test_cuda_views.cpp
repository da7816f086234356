// The CUDA carrier's host-side operand views (src/extension_carriers/cuda/
// strided.h): how an elementwise kernel and the coordinate kernels see a
// lowered operand. Runs without a device (the views are host arithmetic;
// CPU tensors stand in for the layouts).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "extension_carriers/cuda/strided.h"

namespace {

using namespace strideweave;
namespace cc = strideweave::cuda_carrier;

Tensor arange(std::int64_t n) {
  std::vector<Value> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(Value::from_float32(static_cast<float>(i)));
  return Tensor(CPU::create(n)->new_like(v), Shape::of({n}));
}

// The slot each grid element of operand j reads.
template <std::size_t N>
std::vector<std::int64_t> slots(const cc::MergedCall<N>& m, std::size_t j) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < m.grid.count; ++i) {
    std::int64_t at = m.operands[j].offset, rest = i;
    for (int k = 0; k < m.grid.modes; ++k) {
      at += (rest % m.grid.extents[k]) * m.operands[j].strides[k];
      rest /= m.grid.extents[k];
    }
    out.push_back(at);
  }
  return out;
}

std::vector<std::int64_t> layout_slots(const Tensor& t) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < t.size(); ++i) out.push_back(t.offset() + t.layout()(i));
  return out;
}

// Review finding (issue 23): an operand with a nested mode was read with
// another leaf's stride (a 6-slot tensor read at slots 0, 2, ..., 10).
TEST(CudaViews_Issue23, NestedOperandIsReportedForACompactCopyNotMisread) {
  const Tensor y = arange(6).reshape(Shape::of({2, 3})).permute({1, 0}).reshape(Shape::of({6}));
  ASSERT_EQ(y.layout().shape().modes()[0].leaves().size(), 2u);  // ((3,2)):((2,1))
  EXPECT_FALSE(cc::mode_stride(y.layout(), 0));
  const std::vector<KernelOperand> operands{y};
  const auto m = cc::merged_grid<1>(Shape::of({6}), operands);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->nested, 0);
}

TEST(CudaViews_Issue23, MergedGridReadsEveryOperandAsItsLayoutDoes) {
  const Tensor a = arange(24).reshape(Shape::of({2, 3, 4}));
  const Tensor b = arange(24).reshape(Shape::of({4, 3, 2})).permute({2, 1, 0});  // strided
  const Tensor c = arange(4).reshape(Shape::of({1, 1, 4})).broadcast_to(Shape::of({2, 3, 4}));
  const std::vector<KernelOperand> operands{a, b, c};
  const auto m = cc::merged_grid<3>(Shape::of({2, 3, 4}), operands);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->nested, -1);
  EXPECT_EQ(m->grid.count, 24);
  EXPECT_EQ(slots(*m, 0), layout_slots(a));
  EXPECT_EQ(slots(*m, 1), layout_slots(b));
  EXPECT_EQ(slots(*m, 2), layout_slots(c));
  // a, b and c do not continue across the same modes: more than one grid mode.
  EXPECT_GT(m->grid.modes, 1);
  // A compact pair merges to one mode.
  const std::vector<KernelOperand> compact{a, a};
  EXPECT_EQ(cc::merged_grid<2>(Shape::of({2, 3, 4}), compact)->grid.modes, 1);
}

TEST(CudaViews_Issue23, NestedModesThatCoalesceHaveOneStride) {
  // (4):(1) written as the nested mode (2,2):(1,2) coalesces; (2,2):(2,1) does not.
  const Layout coalescing(Shape({IntTuple{2, 2}}), Stride({IntTuple{1, 2}}));
  const Layout crossing(Shape({IntTuple{2, 2}}), Stride({IntTuple{2, 1}}));
  EXPECT_EQ(cc::mode_stride(coalescing, 0), 1);
  EXPECT_FALSE(cc::mode_stride(crossing, 0));
}

TEST(CudaViews_Issue23, ViewOfKeepsTheNestingForCoordinateKernels) {
  const Tensor y = arange(6).reshape(Shape::of({2, 3})).permute({1, 0}).reshape(Shape::of({6}));
  const std::optional<cc::View> v = cc::view_of(y);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 1);
  EXPECT_EQ(v->extents[0], 6);
  EXPECT_EQ(v->leaf_begin[1] - v->leaf_begin[0], 2);
  // offset_of's rule (device_views.h), on the host: first leaf fastest.
  std::vector<std::int64_t> got;
  for (std::int64_t c = 0; c < 6; ++c) {
    std::int64_t at = v->offset, ck = c;
    for (int l = v->leaf_begin[0]; l < v->leaf_begin[1]; ++l) {
      at += (ck % v->leaf_extent[l]) * v->leaf_stride[l];
      ck /= v->leaf_extent[l];
    }
    got.push_back(at);
  }
  EXPECT_EQ(got, layout_slots(y));
}

}  // namespace
