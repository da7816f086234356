// strideweave/carriers/generic.h — the Generic carrier: the executable
// semantic reference (core-concepts.md 8.1, operation-dtype-policy.md R11).
//
// Generic stores one Value per slot and its kernels compute element by
// element, in logical order, exactly as each plan says: slow and obvious on
// purpose, so that every other carrier can be compared with it. It stores
// Float32, Int32 and Bool. The class is final (shipped carriers are closed to
// subclassing).
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <strideweave/carrier.h>
#include <strideweave/layout.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

namespace detail {
struct ShippedCarrierAccess;  // src/carriers/carrier_list.cpp
}  // namespace detail

class Generic final : public Carrier {
 public:
  // The class's public name (the central carrier list registers it).
  static constexpr std::string_view description = "the executable reference: one Value per slot, one obvious kernel per plan; always built";
  static constexpr std::string_view public_name = "Generic";
  // Generic(values, *, mutable=True, dtype): dtype required; every value must
  // be of that dtype (TypeError); an unsupported dtype -> ValueError.
  static std::shared_ptr<Generic> create(std::span<const Value> values, const DType& dtype, bool mutable_ = true);
  static std::shared_ptr<Generic> from_values(std::span<const Value> values, const DType& dtype,
                                              bool mutable_ = true) {
    return create(values, dtype, mutable_);
  }
  // Storage of `size` zero-initialised slots.
  static std::shared_ptr<Generic> zeros(std::int64_t size, const DType& dtype, bool mutable_ = true);
  static bool supports(const DType& dtype) noexcept;

  bool supports_storage_dtype(const DType& dtype) const noexcept override { return supports(dtype); }

  // Unchecked slot access for Generic's own kernels (no version bump): the
  // caller has validated liveness and range.
  const Value& slot(std::int64_t i) const noexcept { return values_[static_cast<std::size_t>(i)]; }
  Value& slot(std::int64_t i) noexcept { return values_[static_cast<std::size_t>(i)]; }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return slot(i); }
  void write_slot(std::int64_t i, const Value& v) override { slot(i) = v; }
  // Runs are copies of the Value array (its slots are Values, not the
  // dtype's host representation, so it has no host_storage).
  void read_range(std::int64_t first, std::int64_t count, Value* out) const override {
    std::copy_n(values_.begin() + first, count, out);
  }
  void write_range(std::int64_t first, std::span<const Value> values) override {
    std::copy(values.begin(), values.end(), values_.begin() + first);
  }
  void release_storage() noexcept override;
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool empty) const override;

 private:
  friend struct detail::ShippedCarrierAccess;
  // Publishes the class's kernel table (src/carriers/generic/generic_kernels.cpp), once,
  // from the library bootstrap.
  static void register_kernels();
  struct Token {};

 public:
  Generic(Token, const SimpleDType& dtype, bool mutable_, std::vector<Value> values);

 private:
  std::vector<Value> values_;
};

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
