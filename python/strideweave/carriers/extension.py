"""strideweave.carriers.extension: the definition-backed carrier extension
surface of carrier-extension.md (CarrierDefinition, StorageProvider,
KernelProvider, KernelPack, KernelPattern, TransferRoute, CompositeProvider,
ProviderCompletion, register_carrier_definition, register_kernel_pack, ...).

Not built yet: every one of these names belongs to the C++ extension layer
(issue 11), which is not in this build. Importing this module raises
NotImplementedError rather than offering names that do nothing. The
definition-free path already works: subclass strideweave.Carrier or
strideweave.DependentCarrier and declare capabilities with
strideweave.register_operation_capabilities (docs/python.md).
"""

raise NotImplementedError(
    "strideweave.carriers.extension is not available yet: the C++ carrier-extension layer "
    "(CarrierDefinition, StorageProvider, KernelPack, ...; issue 11) is not in this build. "
    "Definition-free Python carriers work today: subclass strideweave.Carrier (docs/python.md)."
)
