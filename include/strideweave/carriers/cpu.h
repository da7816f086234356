// strideweave/carriers/cpu.h — the CPU carrier: native host storage with
// typed kernels (core-concepts.md 8.2).
//
// Storage is one 64-byte-aligned buffer of float, int32_t or bool, or an
// external pointer the caller keeps alive (CPU::wrap; release then only
// forgets it). `empty` skips zeroing. Its kernels agree with Generic as
// docs/numerics.md states. The class is final.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <strideweave/carrier.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct ShippedCarrierAccess;  // src/carriers/carrier_list.cpp
}  // namespace detail

class CPU final : public Carrier {
 public:
  // The class's public name (the central carrier list registers it).
  static constexpr std::string_view description = "native host storage with typed kernels (Highway vectors, OpenMP threads, blocked matmul); always built";
  static constexpr std::string_view public_name = "CPU";
  // CPU(size, *, mutable=True, dtype=Float32, empty=False). size >= 0
  // (ValueError); an unsupported dtype -> ValueError.
  static std::shared_ptr<CPU> create(std::int64_t size, const DType& dtype = DType::Float32(), bool mutable_ = true,
                                     bool empty = false);
  // CPU(size, pointer, ...): wraps caller-owned memory of `size` elements of
  // `dtype` without copying; the caller keeps it alive until release or
  // destruction. pointer must be non-null and aligned for the dtype
  // (ValueError).
  static std::shared_ptr<CPU> wrap(void* pointer, std::int64_t size, const DType& dtype = DType::Float32(),
                                   bool mutable_ = true);
  static std::shared_ptr<CPU> from_values(std::span<const Value> values, const DType& dtype, bool mutable_ = true);
  static bool supports(const DType& dtype) noexcept;

  bool supports_storage_dtype(const DType& dtype) const noexcept override { return supports(dtype); }

  // Typed raw access for CPU kernels and interop. Precondition: T matches
  // dtype() and the carrier is live (checked by the caller at the seam).
  template <class T>
  T* data() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t element_bytes() const noexcept;

  ~CPU() override;

 protected:
  std::int64_t storage_size() const noexcept override { return size_; }
  Value read_slot(std::int64_t i) const override;
  void write_slot(std::int64_t i, const Value& v) override;
  // The buffer itself: the framework's range operations copy runs with
  // memcpy (docs/storage.md, "Ranges").
  HostSpan host_storage() const noexcept override { return HostSpan{data_, &dtype(), size_}; }
  void release_storage() noexcept override;
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override;

 private:
  friend struct detail::ShippedCarrierAccess;
  // Publishes the class's kernel table (src/carriers/cpu/cpu_kernels.cpp), once,
  // from the library bootstrap.
  static void register_kernels();
  struct Token {};

 public:
  CPU(Token, const SimpleDType& dtype, bool mutable_, std::int64_t size, void* data, bool owns);

 private:
  // Storage of at most kInlineBytes lives inside the carrier object (one
  // allocation for a tiny tensor instead of two; docs/performance.md,
  // "Per-operation cost"). data_ then points at inline_.
  static constexpr std::size_t kInlineBytes = 64;
  std::int64_t size_;
  void* data_;
  bool owns_;
  alignas(16) unsigned char inline_[kInlineBytes];
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
