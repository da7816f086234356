"""strideweave.carriers.tiled_evictable: TiledEvictable, one flat logical
extent cut into tiles whose residency is controlled tile by tile
(carrier-composition.md Part B; docs/tiled_evictable.md).

TiledEvictable, TileSelection, TileSet, ResidencyPlan, ResidencyPolicy,
AwaitResidency, AwaitProjection, TiledEvictableCounters,
DEFAULT_RESIDENCY_BYTES and DEFAULT_PREFETCH_DEPTH are also top-level names of
strideweave (the same objects). The six direct operations stream tile by tile
within the instance's ``residency_bytes``, the next ``prefetch_depth`` tiles
staged on an I/O thread while one computes (docs/tiled_evictable.md,
"Streaming" and "Prefetch").
ResidencyPolicy is a runtime-checkable protocol: any object with a callable
``plan(required: TileSet, purpose: str) -> ResidencyPlan`` conforms; purpose
is "operation", "projection", "scatter" or "backward". A policy may only
optimise: required tiles are always loaded, and without one every result is
the same.

Not built yet (issue 22): io_uring batched tier reads
(docs/tiled_evictable.md, "Not built yet").
"""

from typing import Protocol, runtime_checkable

from .._core import (
    DEFAULT_PREFETCH_DEPTH,
    DEFAULT_RESIDENCY_BYTES,
    AwaitProjection,
    AwaitResidency,
    ResidencyPlan,
    TiledEvictable,
    TiledEvictableCounters,
    TileSelection,
    TileSet,
)


@runtime_checkable
class ResidencyPolicy(Protocol):
    """plan(required, purpose) -> ResidencyPlan, asked before tiled work
    (carrier-composition B14)."""

    def plan(self, required: TileSet, purpose: str) -> ResidencyPlan:
        """What to promote, retain and evict around the tiles `required` by work of
        kind `purpose`; required tiles are loaded whatever it says."""
        ...


__all__ = ["TiledEvictable", "TileSelection", "TileSet", "ResidencyPlan", "ResidencyPolicy", "AwaitResidency",
           "AwaitProjection", "TiledEvictableCounters", "DEFAULT_RESIDENCY_BYTES",
           "DEFAULT_PREFETCH_DEPTH"]
