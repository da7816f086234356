// DLPack export of CPU tensors. See include/strideweave/dlpack.h.
#include <strideweave/carriers/cpu.h>
#include <strideweave/dlpack.h>
#include <strideweave/errors.h>

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <memory>
#include <new>
#include <vector>

namespace strideweave {
namespace {

struct Export {
  DLManagedTensor managed{};
  std::shared_ptr<Carrier> carrier;  // keeps the carrier object alive
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

void delete_export(DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); }

const CPU& exporting_cpu(const Tensor& t, const char* what) {
  const Carrier& c = *t.carrier();
  if (!(c.exact_class() == carrier_class<CPU>()))
    throw BufferError(fmt::format("{}: a {} tensor does not export DLPack; only CPU tensors do (core-concepts.md 7.5)",
                                  what, c.class_name()));
  return static_cast<const CPU&>(c);
}

}  // namespace

std::pair<int, int> dlpack_device(const Tensor& tensor) {
  exporting_cpu(tensor, "dlpack_device");
  return {static_cast<int>(kDLCPU), 0};
}

DLManagedTensor* to_dlpack(const Tensor& tensor) {
  const CPU& cpu = exporting_cpu(tensor, "to_dlpack");
  DLDataType type{};
  if (&tensor.dtype() == &DType::Float32())
    type = DLDataType{static_cast<std::uint8_t>(kDLFloat), 32, 1};
  else if (&tensor.dtype() == &DType::Int32())
    type = DLDataType{static_cast<std::uint8_t>(kDLInt), 32, 1};
  else
    throw BufferError(fmt::format("to_dlpack: only Float32 and Int32 tensors export DLPack (core-concepts.md 7.5), "
                                  "not {}",
                                  tensor.dtype().name()));
  void* data = cpu.data<void>();
  if (!data) {
    if (tensor.size() > 0)
      throw BufferError("to_dlpack: the CPU carrier is released; a DLPack data pointer must not be null");
    static char empty_storage alignas(64)[64];  // an empty tensor still needs a non-null pointer
    data = empty_storage;
  }
  auto ex = std::make_unique<Export>();
  ex->carrier = tensor.carrier();
  const Layout& layout = tensor.layout();
  for (const IntTuple& mode : layout.shape().modes())
    for (std::int64_t e : mode.leaves()) ex->shape.push_back(e);
  for (const IntTuple& mode : layout.stride().modes())
    for (std::int64_t s : mode.leaves()) ex->strides.push_back(s);
  DLTensor& dl = ex->managed.dl_tensor;
  dl.data = data;
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<std::int32_t>(ex->shape.size());
  dl.dtype = type;
  dl.shape = ex->shape.data();
  dl.strides = ex->strides.data();
  dl.byte_offset = static_cast<std::uint64_t>(tensor.offset()) * 4;
  ex->managed.manager_ctx = ex.get();
  ex->managed.deleter = &delete_export;
  return &ex.release()->managed;
}

}  // namespace strideweave
