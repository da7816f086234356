// Placement values. See <strideweave/placement.h>.
#include <strideweave/errors.h>
#include <strideweave/placement.h>

#include <fmt/format.h>

#include <functional>

namespace strideweave {

Placement Placement::device(std::int64_t index) {
  if (index < 0) throw ValueError(fmt::format("Placement.device: the device index must be >= 0, got {}", index));
  return Placement(kLocal, Memory::DEVICE, index);
}

Placement Placement::on_rank(std::int64_t rank) const {
  if (rank < 0) throw ValueError(fmt::format("Placement.on_rank: the rank must be >= 0, got {}", rank));
  return Placement(rank, memory_, device_);
}

std::string Placement::to_string() const {
  const std::string memory = is_host() ? "host" : fmt::format("device {}", device_);
  return rank_ == kLocal ? memory : fmt::format("rank {} {}", rank_, memory);
}

std::size_t Placement::hash() const noexcept {
  const std::size_t h = std::hash<std::int64_t>{}(rank_);
  return h ^ (std::hash<std::int64_t>{}(device_ * 2 + static_cast<std::int64_t>(memory_)) + 0x9e3779b97f4a7c15ULL +
              (h << 6) + (h >> 2));
}

}  // namespace strideweave
