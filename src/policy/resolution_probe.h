// Internal, for tests: how many times the central resolution rule ran on the
// calling thread (resolve_operation_plan entered, successfully or not). The
// front end remembers plans per thread (frontend::cached_plan), so a repeated
// call of any operation family resolves nothing; the tests check that
// through this count. One thread-local increment per resolution.
#pragma once

#include <strideweave/export.h>

#include <cstdint>

namespace strideweave::policy_probe {

STRIDEWEAVE_TEST_API std::uint64_t resolutions_on_this_thread() noexcept;

}  // namespace strideweave::policy_probe
