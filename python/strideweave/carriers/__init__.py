"""strideweave.carriers: the carrier classes (core-concepts.md 1 and 8).

Carrier and DependentCarrier are open for subclassing in Python (a subclass
is its own exact class; docs/python.md, "Carriers defined in Python");
Generic and CPU are the shipped, final carriers that compute, and CUDA the
accelerator (docs/cuda.md); Evictable
composes two carriers into an exclusively owned two-tier hierarchy
(carrier-composition.md Part A, docs/evictable.md); TiledEvictable cuts one
logical extent into tiles with per-tile residency (Part B; its types live in
strideweave.carriers.tiled_evictable, docs/tiled_evictable.md); FileBacked and
BlockDeviceCarrier (made by BlockDevice.allocate) are the shipped, final
storage-only carriers (docs/storage.md). The
definition-backed extension surface is strideweave.carriers.extension
(carrier-extension.md); moving tensors between carriers and the move
registry are strideweave.carriers.move (docs/storage.md, "Movement").
"""

from .._core import CPU, CUDA, BlockDevice, BlockDeviceCarrier, Carrier, DependentCarrier, Evictable, FileBacked, Generic
from . import extension
from . import move
from . import tiled_evictable
from .tiled_evictable import TiledEvictable

__all__ = ["Carrier", "DependentCarrier", "Generic", "CPU", "CUDA", "Evictable", "TiledEvictable", "FileBacked", "BlockDevice", "BlockDeviceCarrier"]
