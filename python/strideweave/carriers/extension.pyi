# Type stub of strideweave.carriers.extension (carrier-extension R1): the
# twelve names strideweave re-exports are declared in strideweave/__init__.pyi;
# the seven that live only here are declared below.

from typing import Any, Callable, Generic as _Generic, Iterable, Protocol, TypeVar, runtime_checkable

from strideweave import (
    Carrier,
    CarrierDefinition as CarrierDefinition,
    CarrierFacet as CarrierFacet,
    CompositeProvider as CompositeProvider,
    DType,
    KernelExecutionInterface as KernelExecutionInterface,
    KernelPack as KernelPack,
    KernelPattern as KernelPattern,
    KernelProvider as KernelProvider,
    Layout,
    StorageProvider as StorageProvider,
    Tensor,
    TransferRoute as TransferRoute,
    Unsupported as Unsupported,
    register_carrier_definition as register_carrier_definition,
    register_kernel_pack as register_kernel_pack,
)

_T = TypeVar("_T", covariant=True)

@runtime_checkable
class ProviderCompletion(Protocol[_T]):
    @property
    def done(self) -> bool: ...
    def wait(self) -> _T: ...

class ProviderResult:
    def __init__(self, outputs: Iterable[Tensor]) -> None: ...
    @property
    def outputs(self) -> tuple[Tensor, ...]: ...

class PreparedKernel:
    def __init__(self, interface: KernelExecutionInterface,
                 submit: Callable[[], ProviderResult | ProviderCompletion[ProviderResult]]) -> None: ...
    @property
    def interface(self) -> KernelExecutionInterface: ...
    @property
    def submit(self) -> Callable[[], ProviderResult | ProviderCompletion[ProviderResult]]: ...

class PreparedTransfer:
    def __init__(self, submit: Callable[[], None | ProviderCompletion[None]]) -> None: ...
    @property
    def submit(self) -> Callable[[], None | ProviderCompletion[None]]: ...

class PreparedComposite:
    def __init__(self, submit: Callable[[], ProviderResult | ProviderCompletion[ProviderResult]]) -> None: ...
    @property
    def submit(self) -> Callable[[], ProviderResult | ProviderCompletion[ProviderResult]]: ...

class TransferRequest:
    @property
    def tensor(self) -> Tensor: ...
    @property
    def destination(self) -> Carrier: ...
    @property
    def source_class(self) -> type[Carrier]: ...
    @property
    def destination_class(self) -> type[Carrier]: ...
    @property
    def dtype(self) -> DType: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def physical_span(self) -> int: ...

class TransferProvider:
    def __init__(self, prepare: Callable[[TransferRequest], PreparedTransfer | Unsupported]) -> None: ...
    @property
    def prepare(self) -> Callable[[TransferRequest], PreparedTransfer | Unsupported]: ...

