// strideweave/carriers/shipped.h — the one central list of shipped carriers.
//
// ShippedCarrierTypes is the list; everything that iterates carriers (the
// library bootstrap that registers their kernel tables and names their
// classes, the command-line tools, the conformance suite, the parameterised
// tests) derives from it. A new shipped carrier is its folder under
// src/carriers/ (with its public header) plus its entry here.
//
// ShippedStorageCarrierTypes lists the shipped carriers that store but do
// not compute (core-concepts.md 8.4, docs/storage.md): the bootstrap names
// them and publishes their empty kernel tables (their capability sets,
// sealed empty), while everything that runs operations on every carrier
// (the tools, the conformance suite, the parameterised tests, the records
// below) iterates ShippedCarrierTypes only.
//
// A listed class C provides: `static constexpr std::string_view public_name`,
// `static constexpr std::string_view description` (how it is built and what
// it is for), `C::from_values(values, dtype, mutable)` and a private static
// `register_kernels()` for the bootstrap (friend detail::ShippedCarrierAccess).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include <strideweave/carrier.h>
#include <strideweave/carriers/block_device.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

template <class... C>
struct CarrierTypeList {};

// The shipped carriers, in registration order (Generic, the reference, first).
using ShippedCarrierTypes = CarrierTypeList<Generic, CPU>;
// The shipped storage-only carriers, registered after the ones above.
using ShippedStorageCarrierTypes = CarrierTypeList<FileBacked, BlockDeviceCarrier>;

// The run-time record of one shipped carrier, derived from the list.
struct ShippedCarrier {
  std::string_view name;         // the class's public name
  CarrierClass cls;              // its exact class
  std::string_view description;  // how it is built and what it is for
  // Fresh, mutable storage of this class holding `values` as `dtype` (a
  // prototype for the front end, the tools and the tests). The class's own
  // errors (ValueError for a dtype it cannot store).
  std::function<std::shared_ptr<Carrier>(std::span<const Value> values, const DType& dtype)> make;
};

// Every shipped carrier, in list order.
std::span<const ShippedCarrier> shipped_carriers();
// The shipped carrier named `name`, or nullptr.
const ShippedCarrier* find_shipped_carrier(std::string_view name);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
