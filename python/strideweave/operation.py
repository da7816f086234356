"""strideweave.operation: the operation-definition surface of
operation-semantics.md (define_operation, OperationDefinition,
OperationSchema, OperandSpec, OptionSpec, OperandKind, REQUIRED,
NON_DIFFERENTIABLE, ResultSpec, ResolvedInvocation, BoundOperationCall,
VJPContext, ProviderContractError).

Not built yet: the C++ library has no operation-definition layer on this
branch (issue 11 adds strideweave::operation). Importing this module raises
NotImplementedError rather than offering names that do nothing; the Python
binding of that layer lands with it. See docs/python.md, "Not yet bound".
"""

raise NotImplementedError(
    "strideweave.operation is not available yet: the C++ operation-definition layer "
    "(define_operation, OperationSchema, ResultSpec, ...; issue 11) is not in this build. "
    "Built-in operations are plain functions of the strideweave package (docs/python.md)."
)
