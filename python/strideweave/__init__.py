"""strideweave: a tensor runtime whose every operation call resolves to one
immutable OperationPlan through one central dtype policy, and whose carriers
execute exactly the plans they registered.

This package is the specifications' Python surface over the C++ core
(strideweave._core, a pybind11 module). Start with docs/python.md; the
specifications' names keep their spelling (cpp-mapping.md), errors are
Python's built-ins (plus UnsupportedOperationPlan, a NotImplementedError).

    >>> import strideweave as sw
    >>> a = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> b = sw.tensor([10, 20])
    >>> a + b          # Float32: the Int32 operand converts, b broadcasts
    tensor([[11.0, 22.0], [13.0, 24.0]], dtype=float32, carrier=CPU)

strideweave.operation is the operation-definition surface of
operation-semantics.md (define_operation, ...; the names that specification
places at the top level are re-exported here). The carrier extension
surface is strideweave.carriers.extension; twelve of its names are
re-exported here (carrier-extension R1).
"""

from . import _core
from ._core import (
    # explain(): one call, step by step (docs/cli.md, "strideweave explain")
    explain,
    Explanation,
    CandidateTrace,
    # errors (the rest are Python's built-ins)
    UnsupportedOperationPlan,
    UnsupportedOpDType,
    ProviderContractError,
    # dtype descriptors
    DType,
    DTypeCategory,
    SimpleDType,
    CompoundDType,
    PlanarCompoundDType,
    storage_zero,
    # layout
    Shape,
    Stride,
    Layout,
    # the dtype policy
    OperandRole,
    Arithmetic,
    Accumulation,
    WeakScalarKind,
    OperandPlan,
    OperationPlan,
    OperationOverload,
    OperationSpec,
    OperationExecutionOptions,
    operation_execution_options,
    resolve_operation_plan,
    resolvable_plans,
    plan_accumulator_variants,
    plan_arithmetic_variants,
    executable_plan_set,
    representative_plan,
    registered_operations,
    weak_scalar_kind,
    SUPPORTED_TENSOR_DTYPES,
    WEAK_SCALAR_PROBES,
    SUPPORTED_ACCUMULATOR_DTYPES,
    CONFIGURABLE_OPERATIONS,
    INT32_MIN,
    INT32_MAX,
    POW_INTEGER_EXPONENT_MAX,
    # capabilities
    SupportLevel,
    ExecutionAxis,
    ExecutionAxes,
    OperandCapability,
    OperationCapability,
    register_operation_capabilities,
    execution_axes,
    capabilities_for_carrier_class,
    matching_capability,
    supports_operation_plan,
    unsupported_plan_reason,
    require_capability,
    capability,
    fallback_copy_count,
    render_capability_table,
    # carriers
    Placement,
    Carrier,
    DependentCarrier,
    OwnerAccess,
    Generic,
    CPU,
    CUDA,
    FileBacked,
    Evictable,
    BlockDevice,
    BlockDeviceCarrier,
    BlockIoCompletion,
    # tensors
    Tensor,
    Output,
    into,
    accumulate_into,
    scalar_like,
    format_values,
    tensor,
    LiteralBuilder,
    # creation (docs/creation.md; random tensors: strideweave.random)
    empty,
    zeros,
    ones,
    full,
    empty_like,
    zeros_like,
    ones_like,
    full_like,
    arange,
    linspace,
    eye,
    # composition over the registered operations (docs/composition.md)
    concatenate,
    stack,
    split,
    mean,
    var,
    std,
    softmax,
    log_softmax,
    astype,
    clone,
    copy_to,
    transpose,
    comparison_scalar,
    asarray,
    from_dlpack,
    SortResult,
    # autograd
    Operation,
    DispatchedCall,
    EvictableOperation,
    execute_lowered,
    grad,
    # file formats (docs/storage.md, "File formats")
    load_npy,
    save_npy,
    load_safetensors,
    save_safetensors,
    inspect_file,
    parse_npy_header,
    parse_safetensors_header,
    # threads
    num_threads,
    set_num_threads,
    threading_available,
    OPERATION_NAMES,
    __version__,
)
from ._grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from . import _interop

_interop.install()  # numpy's __array__ / __array_ufunc__, pickling (docs/python.md)
from . import carriers
from . import operation
from . import random

# operation-semantics.md: these names of strideweave.operation are also
# importable from the top level (the same objects).
from .operation import (
    define_operation,
    OperationDefinition,
    OperationSchema,
    OperandSpec,
    OptionSpec,
    OperandKind,
    OptionKind,  # beyond the specification (OptionSpec's kind=)
    REQUIRED,
    NON_DIFFERENTIABLE,
    ResultSpec,
)
# interop-movement: move, MoveOperation and the concrete operation classes
# are top-level names (the registry functions live in strideweave.carriers.move).
from .carriers.move import (
    AwaitMove,
    BlockDeviceToCpuMoveOperation,
    CpuToBlockDeviceMoveOperation,
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    FileBackedToCpuMoveOperation,
    MoveOperation,
    move,
    move_async,
)
# carrier-composition B1: TiledEvictable and its residency types are also
# top-level names (the same objects as strideweave.carriers.tiled_evictable's).
from .carriers.tiled_evictable import (
    DEFAULT_PREFETCH_DEPTH,
    DEFAULT_RESIDENCY_BYTES,
    AwaitProjection,
    AwaitResidency,
    ResidencyPlan,
    ResidencyPolicy,
    TiledEvictable,
    TiledEvictableCounters,
    TileSelection,
    TileSet,
)
from .carriers.extension import (
    # carrier-extension R1: the top-level exports (the same objects)
    CarrierDefinition,
    CarrierFacet,
    CompositeProvider,
    KernelExecutionInterface,
    KernelPack,
    KernelPattern,
    KernelProvider,
    StorageProvider,
    TransferRoute,
    Unsupported,
    register_carrier_definition,
    register_kernel_pack,
)

# Every public operation, as the C++ library lists them (call.h): add, sub,
# mul, ..., matmul, sort, topk. Options are keyword-only; see help(strideweave.add).
globals().update({name: getattr(_core, name) for name in OPERATION_NAMES})

# Names that would shadow Python built-ins on `from strideweave import *`
# stay attributes only (strideweave.abs, strideweave.pow, strideweave.round).
_SHADOWING = {"abs", "pow", "round"}

__all__ = sorted(
    {name for name in dir() if not name.startswith("_") and name not in {"carriers", "operation", "random"}}
    - _SHADOWING
    | {"carriers", "operation", "random"}
)
