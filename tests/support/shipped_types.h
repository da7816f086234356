// Test support: GoogleTest type lists derived from the one central list of
// shipped carriers (<strideweave/carriers/shipped.h>), so a typed suite runs
// for every shipped carrier without naming any (issue 10 item 8).
#pragma once

#include <strideweave/carriers/shipped.h>

#include <gtest/gtest.h>

#include <string>

namespace sw_support {

template <class List>
struct GTestTypesOf;
template <class... C>
struct GTestTypesOf<strideweave::CarrierTypeList<C...>> {
  using type = ::testing::Types<C...>;
};

// Every shipped carrier class, for TYPED_TEST_SUITE.
using ShippedCarrierTypes = typename GTestTypesOf<strideweave::ShippedCarrierTypes>::type;

// Names each typed instantiation after the carrier's public name.
struct ShippedCarrierName {
  template <class C>
  static std::string GetName(int) {
    return std::string(C::public_name);
  }
};

}  // namespace sw_support
