// strideweave/dlpack.h — zero-copy DLPack export of CPU tensors
// (core-concepts.md 7.5, 2.2; upstream interop-movement; docs/storage.md,
// "DLPack export").
//
// to_dlpack(tensor) returns a DLManagedTensor (the DLPack 0.6 structure of
// Debian's libdlpack-dev <dlpack/dlpack.h>; this header only declares it)
// that aliases the CPU carrier's storage:
//   data         the carrier's storage pointer (the tensor's offset is not
//                added to it),
//   byte_offset  tensor.offset() * 4,
//   device       {kDLCPU, 0},
//   dtype        Float32 -> {kDLFloat, 32, 1}; Int32 -> {kDLInt, 32, 1},
//   ndim, shape, strides  the layout's leaf modes in depth-first order and
//                their leaf strides, in elements: a hierarchical layout is
//                flattened to one dimension per leaf mode, stride-0
//                (broadcast) modes stay 0. Every strideweave layout is
//                expressible this way (strides are non-negative integers).
// The managed tensor owns its shape and stride arrays and a strong reference
// to the carrier: the carrier stays alive until its deleter runs, which the
// consumer calls exactly once (managed->deleter(managed)). The reference
// keeps the object alive, not the storage: release() of the carrier still
// frees it (the buffer then dangles), as the specification says.
//
// Checked in this order, nothing allocated on failure:
//   BufferError  the carrier is not CPU (Generic, FileBacked,
//                BlockDeviceCarrier, Python-defined ... export nothing);
//   BufferError  the dtype is not Float32 or Int32 (Bool, ...);
//   BufferError  the carrier is released while the tensor has elements (a
//                DLPack data pointer must not be null).
// Export changes no version and records no autograd node; writes a consumer
// makes through the buffer bypass versioning (core-concepts.md 2.2): the
// carrier's version does not move and saved-input checks do not see them.
#pragma once

#include <utility>

#include <strideweave/export.h>
#include <strideweave/tensor.h>

struct DLManagedTensor;  // <dlpack/dlpack.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

DLManagedTensor* to_dlpack(const Tensor& tensor);

// The DLPack device (device_type, device_id) of the tensor's carrier: (1, 0)
// (kDLCPU) for CPU, whatever its dtype; BufferError for every other carrier.
std::pair<int, int> dlpack_device(const Tensor& tensor);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
