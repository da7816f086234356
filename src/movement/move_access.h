// Internal: the move transaction's access to a carrier's storage hooks and to
// a MoveOperation's protected hooks (src/autograd/move.cpp runs the
// transaction; docs/storage.md, "Movement").
#pragma once

#include <strideweave/move_operation.h>

namespace strideweave::detail {

struct MoveAccess {
  // Un-versioned slot access (bounds checked by the caller).
  static Value read(const Carrier& carrier, std::int64_t index) { return carrier.read_slot(index); }
  static void write(Carrier& carrier, std::int64_t index, const Value& value) { carrier.write_slot(index, value); }
  // The destination's version step of a committed move.
  static void commit_version(Carrier& carrier) noexcept { carrier.version_.fetch_add(1); }

  static bool supports_allocation(const Carrier& carrier) noexcept { return carrier.supports_allocation(); }
  static void allocate(Carrier& carrier, std::int64_t slots) { carrier.allocate_empty_storage(slots); }
  static void discard_allocation(Carrier& carrier) noexcept { carrier.discard_allocation(); }

  static MoveSubmission copy(const MoveOperation& operation, const Tensor& tensor, Carrier& destination,
                             const Tensor& output, std::int64_t element_count, MoveContext& context) {
    return operation._copy(tensor, destination, output, element_count, context);
  }
  static MoveRestore save(const MoveOperation& operation, Carrier& destination, std::int64_t element_count,
                          MoveContext& context) {
    return operation._save_destination(destination, element_count, context);
  }
};

}  // namespace strideweave::detail
