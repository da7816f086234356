"""strideweave.carriers.move: the definition-free move registry of
interop-movement ("Move registration is explicit, validated, and
process-global"; the C++ surface is <strideweave/move_operation.h>,
docs/storage.md, "Movement").

dispatch_move, register_move_operation, unregister_move_operation,
registered_move_operation and describe_move_route (which route move() takes
for a pair, from the one move dispatcher) live here; move, move_async, AwaitMove,
MoveOperation and the concrete operation classes are top-level names of
strideweave too (the same objects). Definition-backed carrier classes move
through their CarrierDefinition's TransferRoutes instead (the registry
refuses them with RuntimeError).
"""

import contextlib as _contextlib

from .._core import (
    AwaitMove,
    BlockDeviceToCpuMoveOperation,
    CpuToBlockDeviceMoveOperation,
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    FileBackedToCpuMoveOperation,
    MoveOperation,
    MoveRouteInfo,
    describe_move_route,
    dispatch_move,
    move,
    move_async,
    register_move_operation,
    unregister_move_operation,
)


@_contextlib.contextmanager
def registered_move_operation(source_class, destination_class, operation_class):
    """Registers operation_class for the pair on entry, yields it, and
    unregisters the pair on exit, also when the block raises."""
    register_move_operation(source_class, destination_class, operation_class)
    try:
        yield operation_class
    finally:
        unregister_move_operation(source_class, destination_class)


__all__ = [
    "AwaitMove",
    "BlockDeviceToCpuMoveOperation",
    "CpuToBlockDeviceMoveOperation",
    "CpuToFileBackedMoveOperation",
    "ElementwiseMoveOperation",
    "FileBackedToCpuMoveOperation",
    "MoveOperation",
    "MoveRouteInfo",
    "describe_move_route",
    "dispatch_move",
    "move",
    "move_async",
    "register_move_operation",
    "registered_move_operation",
    "unregister_move_operation",
]
