// Internal: FileBacked's entries in the move registry (moves.cpp).
#pragma once

namespace strideweave::carriers::file_backed {

// Registers CpuToFileBackedMoveOperation for (CPU, FileBacked) and
// FileBackedToCpuMoveOperation for (FileBacked, CPU); called once by the
// library bootstrap (FileBacked::register_kernels).
void register_moves();

}  // namespace strideweave::carriers::file_backed
