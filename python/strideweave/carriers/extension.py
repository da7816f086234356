"""strideweave.carriers.extension: the definition-backed carrier extension
surface of carrier-extension.md (R1-R13; the C++ surface is
<strideweave/extension.h>, docs/extension.md).

A Python subclass of strideweave.Carrier (or DependentCarrier) that defines
none of the definition-free storage hooks becomes definition-backed when a
CarrierDefinition is registered for it; its instances are then built as
Cls(slots, *, dtype, mutable=True) and their storage is the definition's
StorageProvider callbacks (docs/python.md, "Definition-backed Python
carriers").

Twelve of these names are also top-level exports of strideweave (the same
objects); TransferProvider, PreparedKernel, PreparedTransfer,
PreparedComposite, ProviderResult, ProviderCompletion and TransferRequest
live here only (R1).

Operations on definition-backed carriers run through the definition-backed
pipeline: a KernelPattern's prepare and a CompositeProvider's callbacks
receive the call's strideweave.operation.ResolvedInvocation, and what they
publish is validated before anyone sees it (docs/extension.md). Moves of
definition-backed tensors run through their TransferRoutes (strideweave.move).
"""

import typing as _typing

from .._core import (
    CarrierDefinition,
    CarrierFacet,
    CompositeProvider,
    KernelExecutionInterface,
    KernelPack,
    KernelPattern,
    KernelProvider,
    PreparedComposite,
    PreparedKernel,
    PreparedTransfer,
    ProviderResult,
    StorageProvider,
    TransferProvider,
    TransferRequest,
    TransferRoute,
    Unsupported,
    register_carrier_definition,
    register_kernel_pack,
)

_T = _typing.TypeVar("_T", covariant=True)


class _CompletionMeta(type(_typing.Protocol)):
    # R4.1: an object exposing __await__ is never a ProviderCompletion.
    def __instancecheck__(cls, instance):
        if cls is ProviderCompletion and hasattr(instance, "__await__"):
            return False
        return super().__instancecheck__(instance)


@_typing.runtime_checkable
class ProviderCompletion(_typing.Protocol[_T], metaclass=_CompletionMeta):
    """A provider's pending outcome (carrier-extension R4.1): a structural
    protocol. Any object with a bool property `done` and a blocking `wait()`
    returning the outcome, and no `__await__`, is one; a provider's submit
    may return it instead of its result. The framework checks it when it
    accepts it (TypeError for `__await__`, a non-bool `done` or a missing
    member) and calls `wait()` with the GIL held. `wait()` must be
    thread-safe and idempotent: every call returns the same object or raises
    the same exception, and `done` turns true exactly at that outcome."""

    @property
    def done(self) -> bool:
        """True once the outcome is terminal."""
        ...

    def wait(self) -> _T:
        """Blocks until the outcome; returns it or raises it."""
        ...


__all__ = [
    "CarrierDefinition",
    "CarrierFacet",
    "CompositeProvider",
    "KernelExecutionInterface",
    "KernelPack",
    "KernelPattern",
    "KernelProvider",
    "PreparedComposite",
    "PreparedKernel",
    "PreparedTransfer",
    "ProviderCompletion",
    "ProviderResult",
    "StorageProvider",
    "TransferProvider",
    "TransferRequest",
    "TransferRoute",
    "Unsupported",
    "register_carrier_definition",
    "register_kernel_pack",
]
