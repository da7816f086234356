// Internal: BlockDeviceCarrier's entries in the move registry (moves.cpp).
#pragma once

namespace strideweave::carriers::block_device {

// Registers CpuToBlockDeviceMoveOperation for (CPU, BlockDeviceCarrier) and
// BlockDeviceToCpuMoveOperation for (BlockDeviceCarrier, CPU); called once by
// the library bootstrap (BlockDeviceCarrier::register_kernels).
void register_moves();

}  // namespace strideweave::carriers::block_device
