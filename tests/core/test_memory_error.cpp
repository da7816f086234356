// Issue 10, item 14: std::bad_alloc never escapes the library. Storage that
// cannot be allocated is a MemoryError (docs/errors.md) naming the carrier,
// and nothing is published or changed. Sizes are chosen beyond any x86-64
// or AArch64 user address space (2^48 bytes and more), so the allocation
// fails on every machine whatever its overcommit policy; before the fix each
// of these calls raised std::bad_alloc.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/expect_exactly.h"
#include "support/shipped_types.h"

namespace {

using namespace strideweave;

constexpr std::int64_t kHuge = std::int64_t{1} << 46;  // 2^46 Float32 slots = 256 TiB

TEST(MemoryError, IsAnErrorOfItsOwnPythonClass) {
  const MemoryError e("x");
  EXPECT_STREQ(e.type_name(), "MemoryError");
  const Error& base = e;
  EXPECT_EQ(typeid(base), typeid(MemoryError));
}

TEST(MemoryError, CpuCreateOfAnImpossibleSizeRaisesMemoryErrorNamingTheCarrier) {
  const std::string message = EXACT_ERROR_MESSAGE(CPU::create(kHuge), MemoryError);
  EXPECT_NE(message.find("CPU"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(kHuge)), std::string::npos) << message;
  // A byte count beyond 64 bits is an impossible request, not a shortage.
  EXPECT_THROW_EXACTLY(CPU::create(std::int64_t{1} << 62), ValueError);
}

TEST(MemoryError, GenericZerosOfAnImpossibleSizeRaisesMemoryError) {
  const std::string message = EXACT_ERROR_MESSAGE(Generic::zeros(kHuge, DType::Float32()), MemoryError);
  EXPECT_NE(message.find("Generic"), std::string::npos) << message;
}

template <class C>
class MemoryErrorOnEveryCarrier : public ::testing::Test {};
TYPED_TEST_SUITE(MemoryErrorOnEveryCarrier, sw_support::ShippedCarrierTypes, sw_support::ShippedCarrierName);

TYPED_TEST(MemoryErrorOnEveryCarrier, AllocateLikeRaisesMemoryErrorAndLeavesThePrototype) {
  const Tensor x = make_tensor<TypeParam>({1.0f, 2.0f}, Shape{2});
  EXPECT_THROW_EXACTLY(x.carrier()->allocate_like(kHuge), MemoryError);
  EXPECT_EQ(x.carrier()->version(), 0u);
  EXPECT_EQ(TypedTensor<float>(x).values(), (std::vector<float>{1, 2}));
}

TYPED_TEST(MemoryErrorOnEveryCarrier, AnOperationWhoseBroadcastResultCannotBeAllocated) {
  // (2^23, 1) + (1, 2^23): a 2^46-element result from two one-slot operands
  // (stride-0 views).
  const std::int64_t n = std::int64_t{1} << 23;
  const Tensor one = make_tensor<TypeParam>({1.0f}, Shape{1});
  const Tensor col(one.carrier(), 0, Layout(Shape::of({n, 1}), Stride::of({0, 0})));
  const Tensor row(one.carrier(), 0, Layout(Shape::of({1, n}), Stride::of({0, 0})));
  const std::string message = EXACT_ERROR_MESSAGE(add(col, row), MemoryError);
  EXPECT_NE(message.find(std::string(TypeParam::public_name)), std::string::npos) << message;
  EXPECT_EQ(one.carrier()->version(), 0u);
}

}  // namespace
