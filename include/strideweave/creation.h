// strideweave/creation.h — fresh tensors from a shape: constant fills,
// ranges and the identity (docs/creation.md).
//
// Every function here returns a FRESH, mutable, compact tensor (offset 0,
// Layout::compact(shape), first mode fastest) over new storage made by a
// CarrierChoice; nothing else is shared or changed. Values are written in
// LOGICAL order (docs/layout.md). Every check (the shape, the dtype, the
// value's conversion, the carrier's own dtype check) comes before storage is
// allocated, so a failed call allocates nothing.
//
// Numbers convert exactly as strideweave::tensor's literals do
// (<strideweave/literal.h>): an integer to Int32 exactly (OverflowError
// outside its range) or to Float32 rounded once; a float only to Float32;
// a bool only to Bool; anything else is a TypeError, never a truncation.
// When a function infers its dtype (full, arange) it is the literal rule:
// all bools -> Bool, all integers -> Int32, otherwise Float32.
//
// The random tensors are in <strideweave/random.h>.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>

#include <strideweave/carrier.h>
#include <strideweave/carrier_class.h>
#include <strideweave/dtype.h>
#include <strideweave/export.h>
#include <strideweave/layout.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// Where a created tensor's storage is made: a shipped computing carrier's
// class (CPU, the default; Generic), or a prototype carrier whose exact
// class makes the storage (Carrier::allocate_like: a FileBacked, a
// definition-backed carrier, a released prototype). A class that cannot be
// built from nothing (FileBacked, BlockDeviceCarrier, a definition-backed
// class) is a TypeError asking for a prototype.
class CarrierChoice {
 public:
  CarrierChoice();  // CPU
  CarrierChoice(CarrierClass cls);          // NOLINT(google-explicit-constructor): zeros(s, f, carrier_class<Generic>())
  CarrierChoice(const Carrier& prototype);  // NOLINT(google-explicit-constructor)
  template <class C>
  static CarrierChoice of() {
    return CarrierChoice(strideweave::carrier_class<C>());
  }
  // The exact class that will hold the storage.
  CarrierClass carrier_class() const noexcept { return cls_; }
  // Fresh, mutable storage of `size` slots of `dtype`, zero unless `empty`
  // (then unspecified, except Bool, which is zero). The class's own
  // ValueError for a dtype it cannot store; MemoryError when the system
  // cannot give the memory.
  std::shared_ptr<Carrier> allocate(std::int64_t size, const SimpleDType& dtype, bool empty = false) const;

 private:
  CarrierClass cls_;
  std::shared_ptr<const Carrier> prototype_;  // null: a shipped class, made on demand
};

// Storage with unspecified values (Bool: false). The cheapest fresh tensor.
Tensor empty(const Shape& shape, const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});
// Every element the dtype's zero (false) / one (true).
Tensor zeros(const Shape& shape, const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});
Tensor ones(const Shape& shape, const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});
// Every element `value`, as `dtype` (nullptr: the value's own dtype).
Tensor full(const Shape& shape, const WeakScalar& value, const SimpleDType* dtype = nullptr,
            const CarrierChoice& carrier = {});

// The same shape as `like`; dtype nullptr: like's dtype; carrier nullopt: a
// new carrier of like's exact class (like's carrier is the prototype).
Tensor empty_like(const Tensor& like, const SimpleDType* dtype = nullptr,
                  const std::optional<CarrierChoice>& carrier = std::nullopt);
Tensor zeros_like(const Tensor& like, const SimpleDType* dtype = nullptr,
                  const std::optional<CarrierChoice>& carrier = std::nullopt);
Tensor ones_like(const Tensor& like, const SimpleDType* dtype = nullptr,
                 const std::optional<CarrierChoice>& carrier = std::nullopt);
Tensor full_like(const Tensor& like, const WeakScalar& value, const SimpleDType* dtype = nullptr,
                 const std::optional<CarrierChoice>& carrier = std::nullopt);

// numpy.arange: the rank-1 tensor start, start + step, ... up to but not
// including stop; ceil((stop - start) / step) elements (none when that is
// <= 0). Element i is start + i * step: exact in integers; otherwise
// computed in double and rounded once to Float32. dtype nullptr: Int32 when
// start, stop and step are all integers, else Float32. ValueError for a
// zero or non-finite step, non-finite bounds, or more elements than a shape
// holds; TypeError for a bool bound; a value outside Int32 is OverflowError.
Tensor arange(const WeakScalar& stop);
Tensor arange(const WeakScalar& start, const WeakScalar& stop, const WeakScalar& step = 1,
              const SimpleDType* dtype = nullptr, const CarrierChoice& carrier = {});

// numpy.linspace: `num` evenly spaced Float32 values from start to stop
// (stop included when `endpoint`, and then exactly stop). Element i is
// start + i * (stop - start) / div in double (div = num - 1 with the
// endpoint, num without), rounded once. ValueError for num < 0 or a
// non-finite bound; TypeError for a dtype other than Float32 (the values
// are real: another dtype would truncate them).
Tensor linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true,
                const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});

// numpy.eye: the (n, m) tensor (m: n when nullopt) with one on the k-th
// diagonal (element (i, j) is one where j - i == k) and zero elsewhere.
// ValueError for a negative n or m.
Tensor eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt, std::int64_t k = 0,
           const SimpleDType& dtype = DType::Float32(), const CarrierChoice& carrier = {});

namespace detail {
// `value` rounded once to binary32, to nearest even, overflowing to an
// infinity as IEEE 754 says (a cast of an out-of-range double is undefined).
float round_to_float32(double value) noexcept;
// The value `number` converts to as an element of `dtype` (the literal
// rules above); `what` starts every error message.
Value creation_value(const char* what, const WeakScalar& number, const SimpleDType& dtype);

// A fresh compact tensor of `shape` and `dtype` (Float32, Int32 or Bool:
// T is its host element, float, std::int32_t or bool) whose element at
// logical ordinal first + k is out[k] after produce(first, count, out).
// Host storage is written in place, by the CPU carrier's threads over
// disjoint static ranges (so produce must be a pure function of the
// ordinal); any other storage in order, through a bounded buffer and the
// class's range hook. `produce` runs after every check and the allocation;
// what it throws propagates and nothing is returned.
using ProduceChunk = void (*)(void* context, std::int64_t first, std::int64_t count, void* out);
Tensor fill_tensor_erased(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier,
                          ProduceChunk produce, void* context);
template <class T, class Produce>
Tensor fill_tensor(const Shape& shape, const SimpleDType& dtype, const CarrierChoice& carrier, Produce&& produce) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, bool>);
  return fill_tensor_erased(
      shape, dtype, carrier,
      [](void* context, std::int64_t first, std::int64_t count, void* out) {
        (*static_cast<std::remove_reference_t<Produce>*>(context))(first, count, static_cast<T*>(out));
      },
      &produce);
}
}  // namespace detail

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
