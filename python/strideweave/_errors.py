"""The specification's own error classes (backend-capabilities.md,
"Unsupported plans fail before execution work"; the descriptor note's
structured UnsupportedOpDType).

Every other error strideweave raises is a Python built-in of the name the
specifications use (TypeError, ValueError, RuntimeError, NotImplementedError,
OverflowError, AttributeError, BufferError, LookupError, IndexError,
MemoryError); see docs/python.md, "Errors".
"""

__all__ = ["UnsupportedOperationPlan", "UnsupportedOpDType", "ProviderContractError"]


class UnsupportedOperationPlan(NotImplementedError):
    """A resolved plan that the executing carrier does not execute.

    Raised once, before any allocation, kernel entry or lowering.

    Attributes:
        reason: the stable sentence (also ``str(error)``).
        plan: the :class:`OperationPlan` refused, or ``None`` for a descriptor
            query by operation and dtype that found no entry.
    """

    def __init__(self, reason, plan=None):
        super().__init__(reason)
        self.reason = reason
        self.plan = plan


class UnsupportedOpDType(UnsupportedOperationPlan):
    """The descriptor note's structured rejection: no entry for (operation,
    representative input dtype) on a backend, or an execution axis the entry
    does not support.

    Attributes (beyond ``reason`` and ``plan``):
        backend: the carrier class's name (``"CPU"``).
        operation: the operation name.
        dtype: the representative input :class:`DType`, or ``None``.
        axis: the :class:`ExecutionAxis` requested, or ``None``.
    """

    def __init__(self, reason, plan=None, *, backend, operation, dtype=None, axis=None):
        super().__init__(reason, plan)
        self.backend = backend
        self.operation = operation
        self.dtype = dtype
        self.axis = axis


class ProviderContractError(RuntimeError):
    """Provider output that conflicts with a resolved invocation
    (operation-semantics.md, "Result publication validates provider
    output"): raised before anything is published.

    Attributes:
        reason: the message (also ``str(error)``).
        field: the conflicting field: "count", "carrier", "physical size",
            "dtype", "shape", "layout", "alias", "mutation" or "completion".
    """

    def __init__(self, reason, field):
        super().__init__(reason)
        self.reason = reason
        self.field = field
