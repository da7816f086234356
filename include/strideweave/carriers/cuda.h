// strideweave/carriers/cuda.h — CUDA, the accelerator carrier (issue 23;
// docs/cuda.md). The specifications name Metal for this role; CUDA takes it
// on Linux (core-concepts 8.3: `Metal(size, *, mutable=True,
// dtype=DType.Float32, empty=False)`, here with `device=`).
//
// CUDA is built the way an out-of-tree accelerator is
// (examples/acme_accelerator, docs/extension.md): a definition-backed
// independent class (extension::DefinedCarrier) whose CarrierDefinition
// holds a StorageProvider over device memory (cudaMalloc; range callbacks
// that copy whole runs) and a KernelProvider whose built-in patterns cover
// the built-in operation definitions. So it is pack-eligible (a kernel pack
// naming CUDA and its interface attaches; a pack's pattern wins by
// preference, the capability set is the union), sealed against
// register_operation_capabilities (its capabilities are its patterns'
// plans), and a tensor on it reaches the built-in operations through the one
// dispatch pipeline like any definition-backed carrier. Its source lives in
// src/extension_carriers/cuda/ and uses the public headers only.
//
// The capability set is the same in every build (docs/cuda.md renders it);
// whether an instance can exist depends on the machine: constructing one
// is a RuntimeError when strideweave was built without the CUDA toolkit,
// when no CUDA driver or device is present, or when `device` is not one of
// the devices present (core-concepts 8.3), before anything is allocated.
//
// Storage: Float32, Int32 and Bool in device memory of one device (Bool one
// byte per slot); zero-filled unless `empty`. Every instance's placement is
// Placement::device(device): two devices' tensors never meet in one call
// (TypeError naming both placements), and a move between them is a move.
// Reading values (Tensor::values, at, read_values) copies to the host and
// therefore waits for the kernels that produce them.
#pragma once

#include <strideweave/extension.h>
#include <strideweave/placement.h>

#include <cstdint>
#include <memory>
#include <string>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// The kernel execution interface of CUDA's kernel provider (version "1.0"):
// a kernel pack for CUDA names this instance (CUDA::kernel_interface()),
// and its prepared launches queue their work on stream(device), the
// carrier's stream of that device (an opaque cudaStream_t), so that reading
// a result, a move and the next call are ordered after them.
class STRIDEWEAVE_EXPORT CudaKernelInterface final : public extension::KernelExecutionInterface {
 public:
  CudaKernelInterface();
  // Also makes `device` current on the calling thread (cudaSetDevice), as a
  // launch on the stream needs. RuntimeError when `device` is not present.
  void* stream(int device) const;
};

class STRIDEWEAVE_EXPORT CUDA final : public extension::DefinedCarrier {
 public:
  // CUDA(size, *, device=0, mutable=True, dtype=Float32, empty=False):
  // size >= 0 (ValueError); dtype Float32, Int32 or Bool (ValueError
  // otherwise, as every carrier); RuntimeError when no runtime or no such
  // device (the sentence names which: available_reason()).
  static std::shared_ptr<CUDA> create(std::int64_t size, int device = 0, bool mutable_ = true,
                                      const DType& dtype = DType::Float32(), bool empty = false);

  // Whether this build of strideweave compiled the CUDA carrier's device
  // code (the toolkit was found at configure time).
  static bool built() noexcept;
  // How many CUDA devices this process can use: 0 when the build has no
  // CUDA, when no driver is installed, or when no device is present.
  static int device_count() noexcept;
  // Why device_count() is 0 ("" when it is not): "strideweave was built
  // without the CUDA toolkit", or the runtime's own error sentence.
  static std::string unavailable_reason();

  // The one interface instance of CUDA's kernel provider (what a kernel
  // pack for CUDA must name: carrier-extension R10).
  static const std::shared_ptr<const CudaKernelInterface>& kernel_interface();

  // The device index this instance's memory is on.
  int device() const noexcept { return device_; }
  Placement placement() const override { return Placement::device(device_); }

  // Constructed only through create() and the framework's new_like /
  // allocate_like (extension::create<CUDA>): the Construction key first.
  CUDA(extension::Construction key, int device, bool empty);
  CUDA(extension::Construction key, const CUDA& prototype);
  ~CUDA() override;

  // The device address of slot 0 (null for a zero-slot or released
  // instance): what a kernel pack's launch reads and writes. Slot i of a
  // Float32 (Int32, Bool) instance is the float (std::int32_t, one byte
  // 0 or 1) at byte offset i * element_bytes().
  void* device_data() const noexcept { return memory_; }

 private:
  friend struct CudaStorageAccess;  // the storage provider (src/extension_carriers/cuda/)
  int device_ = 0;
  bool empty_ = false;
  void* memory_ = nullptr;
  std::int64_t slots_ = 0;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
