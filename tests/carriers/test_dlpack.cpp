// Tests for include/strideweave/dlpack.h: zero-copy DLPack export of CPU
// tensors (core-concepts.md 7.5, 2.2; upstream interop-movement
// requirements named in each suite: "Export is zero-copy, same-device",
// "The exported buffer describes the layout's flattened leaf modes", "Only
// Float32 and Int32 logical dtypes are exportable", "A carrier opts into
// DLPack", "Export changes neither version tracking", "A capsule keeps its
// producer alive but not released storage").
#include <strideweave/carriers/block_device.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/dlpack.h>
#include <strideweave/errors.h>
#include <strideweave/tensor.h>

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include <unistd.h>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::DType;
using sw::Value;

namespace {

std::shared_ptr<sw::CPU> iota(std::int64_t n, const DType& dtype = DType::Float32()) {
  std::vector<Value> v;
  for (std::int64_t i = 0; i < n; ++i)
    v.push_back(&dtype == &DType::Int32() ? Value::from_int32(static_cast<std::int32_t>(i))
                                          : Value::from_float32(static_cast<float>(i)));
  return sw::CPU::from_values(v, dtype);
}

struct Managed {
  DLManagedTensor* m;
  explicit Managed(DLManagedTensor* p) : m(p) {}
  ~Managed() {
    if (m) m->deleter(m);
  }
  const DLTensor& operator*() const { return m->dl_tensor; }
};

TEST(InteropMovement_ExportIsZeroCopy, Float32TensorAliasesTheCarrierOnTheCpuDevice) {
  auto c = iota(6);
  const sw::Tensor t(c, 0, sw::Layout(sw::Shape{2, 3}, sw::Stride{1, 2}));
  EXPECT_EQ(sw::dlpack_device(t), (std::pair<int, int>{kDLCPU, 0}));
  Managed e(sw::to_dlpack(t));
  const DLTensor& dl = *e;
  EXPECT_EQ(dl.data, c->data<void>());
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  ASSERT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.shape[0], 2);
  EXPECT_EQ(dl.shape[1], 3);
  EXPECT_EQ(dl.strides[0], 1);
  EXPECT_EQ(dl.strides[1], 2);
  EXPECT_EQ(dl.byte_offset, 0u);
  // A write through the buffer is seen by the carrier and bypasses versioning (2.2).
  static_cast<float*>(dl.data)[4] = 42.0f;
  EXPECT_EQ(c->get_value(4), Value::from_float32(42.0f));
  EXPECT_EQ(c->version(), 0u);
}

TEST(InteropMovement_FlattenedLeafModes, HierarchicalModesBecomeOneDimensionPerLeafAndOffsetIsBytes) {
  auto c = iota(32, DType::Int32());
  // Mode 0 is nested (2, 3) with strides (1, 2); mode 1 a broadcast (stride 0).
  const sw::Layout layout(sw::Shape{sw::IntTuple{2, 3}, 4}, sw::Stride{sw::IntTuple{1, 2}, 0});
  const sw::Tensor t(c, 5, layout);
  Managed e(sw::to_dlpack(t));
  const DLTensor& dl = *e;
  EXPECT_EQ(dl.dtype.code, kDLInt);
  ASSERT_EQ(dl.ndim, 3);
  EXPECT_EQ(std::vector<std::int64_t>(dl.shape, dl.shape + 3), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(std::vector<std::int64_t>(dl.strides, dl.strides + 3), (std::vector<std::int64_t>{1, 2, 0}));
  EXPECT_EQ(dl.byte_offset, 5u * 4u);
  const auto* base = reinterpret_cast<const std::int32_t*>(static_cast<const char*>(dl.data) + dl.byte_offset);
  EXPECT_EQ(base[1 * 1 + 2 * 2], 5 + 5);  // coordinate (1, 2, k) for every k
}

TEST(InteropMovement_ExportableDtypes, BoolIsABufferErrorAndTheDeviceStillAnswers) {
  auto c = sw::CPU::from_values(std::vector<Value>{Value::from_bool(true)}, DType::Bool());
  const sw::Tensor t(c, sw::Shape{1});
  EXPECT_EQ(sw::dlpack_device(t), (std::pair<int, int>{kDLCPU, 0}));
  EXPECT_THROW_EXACTLY(sw::to_dlpack(t), sw::BufferError);
}

TEST(InteropMovement_CarrierOptIn, NonCpuCarriersAreBufferErrors) {
  auto g = sw::Generic::from_values(std::vector<Value>{Value::from_float32(1)}, DType::Float32());
  auto f = sw::FileBacked::from_values(std::vector<Value>{Value::from_float32(1)}, DType::Float32());
  const std::filesystem::path image =
      std::filesystem::path(STRIDEWEAVE_BINARY_DIR) / ("dlpack-" + std::to_string(::getpid()) + ".img");
  std::filesystem::remove(image);
  auto device = sw::BlockDevice::open(image, sw::BlockDevice::block_bytes);
  auto b = device->allocate(1);
  for (const std::shared_ptr<sw::Carrier>& c : std::vector<std::shared_ptr<sw::Carrier>>{g, f, b}) {
    const sw::Tensor t(c, sw::Shape{1});
    EXPECT_THROW_EXACTLY(sw::to_dlpack(t), sw::BufferError) << c->class_name();
    EXPECT_THROW_EXACTLY(sw::dlpack_device(t), sw::BufferError) << c->class_name();
  }
  // The carrier is checked before the dtype: an Int32 FileBacked reports the carrier.
  auto fi = sw::FileBacked::from_values(std::vector<Value>{Value::from_int32(1)}, DType::Int32());
  const std::string message = EXACT_ERROR_MESSAGE(sw::to_dlpack(sw::Tensor(fi, sw::Shape{1})), sw::BufferError);
  EXPECT_NE(message.find("only CPU tensors"), std::string::npos) << message;
  b.reset();
  device.reset();
  std::filesystem::remove(image);
}

TEST(InteropMovement_CapsuleLifetime, TheManagedTensorKeepsTheCarrierAliveButNotReleasedStorage) {
  DLManagedTensor* m = nullptr;
  std::weak_ptr<sw::Carrier> watch;
  {
    auto c = iota(3);
    watch = c;
    m = sw::to_dlpack(sw::Tensor(c, sw::Shape{3}));
  }
  EXPECT_FALSE(watch.expired());  // the export holds it
  EXPECT_EQ(static_cast<const float*>(m->dl_tensor.data)[2], 2.0f);
  m->deleter(m);
  EXPECT_TRUE(watch.expired());  // the deleter dropped it

  auto c = iota(2);
  const sw::Tensor t(c, sw::Shape{2});
  Managed e(sw::to_dlpack(t));
  c->release();  // release succeeds while an export is outstanding
  EXPECT_TRUE(c->is_released());
  EXPECT_THROW_EXACTLY(sw::to_dlpack(t), sw::BufferError);  // a released carrier has no pointer
}

}  // namespace
