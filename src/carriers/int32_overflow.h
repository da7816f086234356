// Internal: the one OverflowError of a checked Int32 result, written once so
// that every shipped carrier says the same thing (issue 10, item 15).
//
// `element` is the logical ordinal (first mode fastest) of the first result
// element, in logical order, whose exact value leaves Int32. Generic finds
// it as it goes; a vectorised or threaded kernel that only knows "some
// element overflowed" looks for the first one again before it raises. The
// message carries the position rather than the value: the exact value of
// an Int32 power can be astronomically large, and a position is what a user
// needs to find the offending operands.
#pragma once

#include <strideweave/errors.h>
#include <strideweave/policy.h>

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace strideweave::carriers {

[[noreturn]] inline void raise_int32_overflow(std::string_view operation, std::int64_t element) {
  throw OverflowError(fmt::format("{}: the exact Int32 result of element {} (in logical order) is outside [{}, {}]",
                                  operation, element, INT32_MIN_VALUE, INT32_MAX_VALUE));
}

// The OverflowError of accumulating into an Int32 output (KernelCall::
// accumulate): the sum of the output's old element `element` (logical
// ordinal) and the result leaves Int32. The same sentence the framework's
// fallback accumulation raises (src/storage/ranges.cpp).
[[noreturn]] inline void raise_int32_accumulation_overflow(std::string_view operation, std::int64_t element) {
  throw OverflowError(fmt::format("{}: accumulating into the Int32 output: element {} (in logical order) would be "
                                  "outside [{}, {}]",
                                  operation, element, INT32_MIN_VALUE, INT32_MAX_VALUE));
}

}  // namespace strideweave::carriers
