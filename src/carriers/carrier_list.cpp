// The shipped carriers' records and registration, derived from the one list
// in <strideweave/carriers/shipped.h>.
#include "carriers/carrier_list.h"

#include <strideweave/carriers/shipped.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/carrier_class_internal.h"

namespace strideweave {
namespace detail {

// The bootstrap's access to each shipped class's private registration.
struct ShippedCarrierAccess {
  template <class C>
  static void register_kernels() {
    C::register_kernels();
  }
};

}  // namespace detail

namespace {

template <class C>
ShippedCarrier record_of() {
  return ShippedCarrier{C::public_name, carrier_class<C>(), C::description,
                        [](std::span<const Value> values, const DType& dtype) -> std::shared_ptr<Carrier> {
                          return C::from_values(values, dtype, true);
                        }};
}

template <class... C>
std::vector<ShippedCarrier> records_of(CarrierTypeList<C...>) {
  return {record_of<C>()...};
}

template <class... C>
void register_each(CarrierTypeList<C...>) {
  ((detail::CarrierClassAccess::name_shipped_class(carrier_class<C>(), std::string(C::public_name)),
    detail::ShippedCarrierAccess::register_kernels<C>()),
   ...);
}

}  // namespace

std::span<const ShippedCarrier> shipped_carriers() {
  static const std::vector<ShippedCarrier> records = records_of(ShippedCarrierTypes{});
  return records;
}

const ShippedCarrier* find_shipped_carrier(std::string_view name) {
  const auto all = shipped_carriers();
  const auto it = std::find_if(all.begin(), all.end(), [&](const ShippedCarrier& c) { return c.name == name; });
  return it == all.end() ? nullptr : &*it;
}

namespace carriers {
void register_shipped_carriers() {
  register_each(ShippedCarrierTypes{});
  register_each(ShippedStorageCarrierTypes{});
}
}  // namespace carriers

}  // namespace strideweave
