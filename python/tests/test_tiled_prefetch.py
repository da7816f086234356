"""TiledEvictable's prefetcher (issue 22 step 4, "Prefetch from the known
schedule"; docs/tiled_evictable.md, "Prefetch"). Test names carry the
requirement."""

import random

import pytest

import strideweave as sw
from strideweave.carriers import tiled_evictable as te
from conftest import F32, make_carrier_class


def out_of_core(grid, tile, seed, depth=sw.DEFAULT_PREFETCH_DEPTH, budget=sw.DEFAULT_RESIDENCY_BYTES, secondary=None):
    """Random floats, every tile clean in the secondary (FileBacked unless given)."""
    rng = random.Random(seed)
    shape = [g * t for g, t in zip(grid, tile)]
    n = 1
    for e in shape:
        n *= e
    slots = [rng.uniform(-1.0, 1.0) for _ in range(n)]
    secondary = (secondary or sw.FileBacked(dtype=F32)).new_like(slots)
    c = sw.TiledEvictable(sw.CPU(0, dtype=F32), secondary, grid, tile, residency_bytes=budget, prefetch_depth=depth)
    return c, c.full_tensor()


def test_prefetch_depth_is_a_constructor_option_with_a_documented_default():
    assert sw.DEFAULT_PREFETCH_DEPTH == te.DEFAULT_PREFETCH_DEPTH == 2
    t, _ = out_of_core((2, 2), (2, 2), 1)
    assert t.prefetch_depth == 2
    u, _ = out_of_core((2, 2), (2, 2), 1, depth=0)
    assert u.prefetch_depth == 0
    for bad, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)):
        primary = sw.CPU(16, dtype=F32)
        with pytest.raises(error):
            sw.TiledEvictable(primary, sw.FileBacked(dtype=F32), (2, 2), (2, 2), prefetch_depth=bad)
        assert not primary.is_owned()


def test_prefetch_counters_record_tiles_prefetched_hits_and_stalls():
    t, full = out_of_core((4, 4), (8, 8), 2, depth=2)  # 16 tiles, ample budget
    c0 = t.counters()
    assert (c0.tiles_prefetched, c0.prefetch_hits, c0.stalls) == (0, 0, 0)
    sw.reduce_sum(full)
    c = t.counters()
    assert c.tiles_prefetched == 15  # all but the first use's tile
    assert c.prefetch_hits + c.stalls == 16 and c.stalls >= 1
    assert c.bytes_read == 16 * t.tile_bytes
    assert "tiles_prefetched=15" in repr(c)
    z, zfull = out_of_core((4, 4), (8, 8), 2, depth=0)
    sw.reduce_sum(zfull)
    assert (z.counters().tiles_prefetched, z.counters().prefetch_hits, z.counters().stalls) == (0, 0, 16)


def test_prefetch_results_do_not_depend_on_the_depth():
    seen = []
    for depth in (0, 1, 4):
        for budget in (48, 10**9):
            a, af = out_of_core((3, 2), (4, 3), 7, depth, budget)
            b, bf = out_of_core((2, 3), (3, 4), 8, depth, budget)
            seen.append([sw.add(af, af).values(), sw.relu(af).values(), sw.reduce_sum(af, axes=[1]).values(),
                         sw.matmul(af, bf).values()])
    assert all(s == seen[0] for s in seen)


# A Python-defined storage class: its reads call back into Python.
PySecondary = make_carrier_class("PySecondary")


def test_prefetch_runs_off_thread_only_over_shipped_tiers():
    rng = random.Random(3)
    slots = [float(rng.randint(-3, 3)) for _ in range(64)]
    t = sw.TiledEvictable(sw.CPU(0, dtype=F32), PySecondary(slots, dtype=F32), (4, 4), (2, 2), prefetch_depth=4)
    reference = sw.TiledEvictable(sw.CPU(0, dtype=F32), sw.FileBacked(dtype=F32).new_like(slots), (4, 4), (2, 2))
    assert sw.reduce_sum(t.full_tensor()).values() == sw.reduce_sum(reference.full_tensor()).values()
    c = t.counters()
    assert (c.tiles_prefetched, c.prefetch_hits, c.stalls) == (0, 0, 16)  # staged when needed, on this thread


def test_prefetch_serves_projections_too():
    t, full = out_of_core((4, 4), (4, 4), 6, depth=2, budget=4 * 64)  # 16 tiles, 4x the budget
    compact = t.project(full, sw.TileSelection([[0, 1, 2, 3], [0, 1, 2, 3]])).wait()
    c = t.counters()
    assert c.tiles_prefetched >= 1 and c.bytes_read == 16 * t.tile_bytes  # each tile once
    assert c.peak_resident_bytes <= 4 * 64
    assert compact.values() == full.values()  # every tile, in place
