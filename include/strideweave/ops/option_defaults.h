// strideweave/ops/option_defaults.h — the literal option defaults of the
// built-in operations, generated from <strideweave/operations.def>'s
// SW_OPTION rows: detail::option_defaults::<operation>_<option>. The C++
// declarations' default arguments and the operations' schemas (the
// defaults a by-name call and Python see) both read these, so they cannot
// drift apart.
#pragma once

#include <cstdint>

namespace strideweave::detail::option_defaults {

#define SW_OPTION(op, name, type, value, doc) inline constexpr type op##_##name = value;
#include <strideweave/operations.def>

}  // namespace strideweave::detail::option_defaults
