// Internal: the OSError of a failed format system call (docs/storage.md,
// "Errors"): names the call, the file and, when there is one, the byte offset.
#pragma once

#include <strideweave/errors.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace strideweave::formats {

[[noreturn]] inline void throw_os_error(int error, std::string_view call, const std::string& file,
                                        std::optional<std::int64_t> offset) {
  const std::string where = offset ? fmt::format(" at byte offset {}", *offset) : std::string();
  throw OSError(fmt::format("{} failed for '{}'{}: {}", call, file, where, std::strerror(error)), error, file, offset);
}

}  // namespace strideweave::formats
