// strideweave/placement.h — where a carrier instance's storage lives.
//
// Every carrier instance has a placement (docs/design.md, "Placement";
// issue 20): the process that holds it (this process, or an MPI rank) and,
// within that process, host memory or one device by index. A call's
// operands must share their exact carrier class AND their placement
// (TypeError naming both, before any work); capabilities stay per class, as
// backend-capabilities.md says: two devices of one class have one sealed
// capability set. A placement is a value: immutable, comparable, hashable.
#pragma once

#include <strideweave/export.h>

#include <cstddef>
#include <cstdint>
#include <string>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

class Placement {
 public:
  enum class Memory : std::uint8_t { HOST, DEVICE };

  // This process's host memory: every shipped carrier, and the default of
  // any class that does not say otherwise.
  static Placement host() noexcept { return Placement(kLocal, Memory::HOST, 0); }
  // This process's device `index` (ValueError for index < 0).
  static Placement device(std::int64_t index);
  // The same memory on MPI rank `rank` (ValueError for rank < 0): what a
  // carrier that spans machines reports for a remote part.
  Placement on_rank(std::int64_t rank) const;

  Memory memory() const noexcept { return memory_; }
  bool is_host() const noexcept { return memory_ == Memory::HOST; }
  // The device index (0 for host memory).
  std::int64_t device_index() const noexcept { return device_; }
  // The MPI rank, or -1 for this process (no rank named).
  std::int64_t rank() const noexcept { return rank_; }

  // "host", "device 1", "rank 3 host", "rank 3 device 1".
  std::string to_string() const;

  friend bool operator==(const Placement&, const Placement&) = default;
  std::size_t hash() const noexcept;

 private:
  static constexpr std::int64_t kLocal = -1;
  Placement(std::int64_t rank, Memory memory, std::int64_t device) noexcept
      : rank_(rank), device_(device), memory_(memory) {}
  std::int64_t rank_;
  std::int64_t device_;
  Memory memory_;
};

}  // namespace strideweave

template <>
struct std::hash<strideweave::Placement> {
  std::size_t operator()(const strideweave::Placement& p) const noexcept { return p.hash(); }
};

STRIDEWEAVE_PUBLIC_END
