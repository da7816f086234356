"""strideweave.operation: the operation-definition surface of
operation-semantics.md, over the C++ namespace strideweave::operation
(include/strideweave/operation.h).

    define_operation, OperationDefinition, OperationSchema, OperandSpec,
    OptionSpec, OperandKind, REQUIRED, NON_DIFFERENTIABLE, ResultSpec,
    ResolvedInvocation, BoundOperationCall, VJPContext, ProviderContractError

are the specification's names (``__all__``); the top-level package re-exports
the ten it names, as the same objects. Beyond the specification, the C++
library's registry and resolution functions are importable from here too:
get_definition(name), registered_definitions(), bind(definition, *operands,
**options), resolve_call(definition, *operands, **options) and
execute_reference(definition, invocation); and opcheck(definition, samples,
carriers) with its records (SampleTensor, OpcheckSample, OpcheckReport, ...)
and register_opcheck_inputs (docs/opcheck.md).

What a call does (docs/python.md, "strideweave.operation"): binding,
resolution, the capability gate, then execution. Built-in definitions
(get_definition("add")) execute on every carrier. A user-defined operation
executes on a definition-backed carrier (strideweave.carriers.extension)
through its kernel patterns or composite provider, and on a custom
definition-free carrier class through its dispatch hook (_dispatch_op);
Generic and CPU run none (UnsupportedOperationPlan after the gate).
"""

from ._core import (
    define_operation,
    OperationDefinition,
    OperationSchema,
    OperandSpec,
    OptionSpec,
    OperandKind,
    REQUIRED,
    NON_DIFFERENTIABLE,
    ResultSpec,
    ResolvedInvocation,
    BoundOperationCall,
    VJPContext,
    ProviderContractError,
    # beyond the specification: the values an option accepts (OptionSpec's
    # kind=; docs/operations/options.md)
    OptionKind,
    # beyond the specification: the C++ library's registry and resolution
    get_definition,
    registered_definitions,
    bind,
    resolve_call,
    execute_reference,
    # beyond the specification: a built-in call as its kernels see it
    # (docs/extension.md, "Built-in operations in a kernel pattern")
    lower_builtin,
    BuiltinKernelCall,
    # beyond the specification: opcheck (docs/opcheck.md), a user-defined
    # operation's kernels against its reference, pattern by pattern
    opcheck,
    register_opcheck_inputs,
    SampleTensor,
    OpcheckSample,
    OpcheckReport,
    OpcheckCarrierReport,
    OpcheckPatternReport,
    OpcheckCase,
)

__all__ = [
    "define_operation",
    "OperationDefinition",
    "OperationSchema",
    "OperandSpec",
    "OptionSpec",
    "OperandKind",
    "REQUIRED",
    "NON_DIFFERENTIABLE",
    "ResultSpec",
    "ResolvedInvocation",
    "BoundOperationCall",
    "VJPContext",
    "ProviderContractError",
]
