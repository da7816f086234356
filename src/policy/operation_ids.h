// Internal: the built-in operations as ids, generated from
// <strideweave/operations.def>. Kernels, VJPs, gradient-check builders and
// conformance generators register against these ids, so a misspelt or
// removed operation is a compile error, and completeness checks iterate the
// list instead of a hand-kept copy of it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strideweave::policy {

enum class OperationId : std::uint8_t {
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) id,
#include <strideweave/operations.def>
};

inline constexpr std::array kOperationNames = {
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) std::string_view(#id),
#include <strideweave/operations.def>
};
inline constexpr std::size_t kOperationCount = kOperationNames.size();

// The registered name of `id` (a view of a string literal).
constexpr std::string_view operation_name(OperationId id) { return kOperationNames[static_cast<std::size_t>(id)]; }

// The id of a built-in operation named `name`; nullopt for any other name.
constexpr std::optional<OperationId> find_operation_id(std::string_view name) {
  for (std::size_t i = 0; i < kOperationCount; ++i)
    if (kOperationNames[i] == name) return static_cast<OperationId>(i);
  return std::nullopt;
}

}  // namespace strideweave::policy
