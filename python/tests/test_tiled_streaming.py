"""TiledEvictable's out-of-core engine (issue 22 step 3, "Out of core for
real"; docs/tiled_evictable.md, "Streaming" and "The residency budget").
Test names carry the requirement."""

import random

import pytest

import strideweave as sw
from strideweave.carriers import tiled_evictable as te
from conftest import F32, I32
from tile_support import logical


def cpu(values, dtype=F32):
    c = sw.CPU(len(values), dtype=dtype, mutable=True)
    for i, v in enumerate(values):
        c[i] = v
    return c


def out_of_core(grid, tile, rng, budget=sw.DEFAULT_RESIDENCY_BYTES):
    """Small integers (exact in any association), every tile evicted to FileBacked."""
    shape = [g * t for g, t in zip(grid, tile)]
    n = 1
    for e in shape:
        n *= e
    slots = [float(rng.randint(-4, 4)) for _ in range(n)]
    # Seeded from a full secondary: every tile clean and secondary-only.
    secondary = sw.FileBacked(dtype=F32).new_like(slots)
    c = sw.TiledEvictable(sw.CPU(0, dtype=F32), secondary, grid, tile, residency_bytes=budget)
    dense = sw.Tensor(cpu(logical(slots, grid, tile)), 0, sw.Layout.compact(sw.Shape(*shape)))
    return c, c.full_tensor(), dense


def same(got, want):
    assert type(got.carrier) is sw.CPU
    assert got.shape == want.shape
    assert got.values() == want.values()


def test_budget_is_a_constructor_option_with_a_documented_default():
    assert sw.DEFAULT_RESIDENCY_BYTES == te.DEFAULT_RESIDENCY_BYTES == 512 * 2**20
    assert te.TiledEvictableCounters is sw.TiledEvictableCounters
    t = sw.TiledEvictable(cpu([0.0] * 16), sw.FileBacked(dtype=F32), (2, 2), (2, 2))
    assert t.residency_bytes == sw.DEFAULT_RESIDENCY_BYTES
    assert t.tile_bytes == 16
    u = sw.TiledEvictable(cpu([0.0] * 16), sw.FileBacked(dtype=F32), (2, 2), (2, 2), residency_bytes=40)
    assert u.residency_bytes == 40
    for bad, error in ((0, ValueError), (-5, ValueError), (1.5, TypeError), (True, TypeError), ("1", TypeError)):
        primary = cpu([0.0] * 16)
        with pytest.raises(error):
            sw.TiledEvictable(primary, sw.FileBacked(dtype=F32), (2, 2), (2, 2), residency_bytes=bad)
        assert not primary.is_owned()


def test_budget_resident_bytes_and_counters_follow_transitions():
    t = sw.TiledEvictable(cpu([1.0] * 16), sw.FileBacked(dtype=F32), (2, 2), (2, 2))
    assert t.resident_bytes == 64
    c = t.counters()
    assert (c.bytes_read, c.bytes_written, c.peak_resident_bytes) == (0, 0, 64)
    assert c == t.counters() and "peak_resident_bytes=64" in repr(c)
    t.evict(t.all_tiles)
    assert t.resident_bytes == 0 and t.counters().bytes_written == 64
    t.promote(sw.TileSet([(1, 0)]))
    assert t.resident_bytes == 16 and t.counters().bytes_read == 16
    t.evict(sw.TileSet([(1, 0)]))  # clean: free
    assert t.counters().bytes_written == 64


def test_streamed_elementwise_results_equal_the_dense_operation():
    rng = random.Random(4)
    for grid, tile in (((3,), (5,)), ((2, 3), (4, 2)), ((2, 2, 2), (2, 3, 1))):
        _, x, dx = out_of_core(grid, tile, rng, budget=16)
        _, y, dy = out_of_core(grid, tile, rng, budget=16)
        same(sw.add(x, y), sw.add(dx, dy))
        same(sw.elementwise_mul(x, y), sw.elementwise_mul(dx, dy))
        same(sw.mul(x, 2.5), sw.mul(dx, 2.5))
        same(sw.mul(-3, y), sw.mul(-3, dy))
        same(sw.relu(x), sw.relu(dx))


def test_streamed_elementwise_reads_each_input_once_within_the_budget():
    rng = random.Random(8)
    tb = 64
    a, x, dx = out_of_core((4, 4), (4, 4), rng, budget=2 * tb)
    b, y, dy = out_of_core((4, 4), (4, 4), rng, budget=2 * tb)
    ra, rb = a.counters().bytes_read, b.counters().bytes_read
    same(sw.add(x, y), sw.add(dx, dy))
    assert a.counters().bytes_read - ra == 16 * tb and b.counters().bytes_read - rb == 16 * tb
    assert a.counters().peak_resident_bytes <= 2 * tb
    assert a.resident_bytes == 0 and a.primary_tiles == sw.TileSet([])


def test_streamed_reduce_sum_does_not_depend_on_residency_or_budget():
    seen = []
    for budget, promote in ((16, []), (160, [(0, 0), (2, 3)]), (sw.DEFAULT_RESIDENCY_BYTES, [])):
        rng = random.Random(99)
        slots = [rng.gauss(0.0, 1.0) for _ in range(24 * 20)]
        t = sw.TiledEvictable(cpu(slots), sw.FileBacked(dtype=F32), (3, 4), (8, 5), residency_bytes=budget)
        t.evict(t.all_tiles)
        if promote:
            t.promote(sw.TileSet(promote))
        x = t.full_tensor()
        wide = sw.OperationExecutionOptions("reduce_sum", accumulator_dtype=sw.DType.Float64)
        seen.append((sw.reduce_sum(x).values(), sw.reduce_sum(x, axes=[1], keepdims=True).values(),
                     sw.reduce_sum(x, options=wide).values()))
        dense = sw.Tensor(cpu(logical(slots, (3, 4), (8, 5))), 0, sw.Layout.compact(sw.Shape(24, 20)))
        assert sw.reduce_sum(x).values()[0] == pytest.approx(sw.reduce_sum(dense).values()[0], abs=1e-4)
    assert seen[0] == seen[1] == seen[2]


def test_streamed_reduce_sum_int32_is_exact_with_one_checked_narrowing():
    big = 2_000_000_000
    t = sw.TiledEvictable(cpu([big, big, -big, -big + 5], dtype=I32), sw.FileBacked(dtype=I32), (2,), (2,))
    t.evict(t.all_tiles)
    assert sw.reduce_sum(t.full_tensor()).values() == [5]
    u = sw.TiledEvictable(cpu([big, big], dtype=I32), sw.FileBacked(dtype=I32), (2,), (1,))
    with pytest.raises(OverflowError):
        sw.reduce_sum(u.full_tensor())


def test_streamed_matmul_reads_each_input_tile_once_when_a_panel_fits():
    rng = random.Random(23)
    tb = 64
    a, x, dx = out_of_core((2, 3), (4, 4), rng, budget=3 * tb)
    b, y, dy = out_of_core((3, 4), (4, 4), rng, budget=3 * tb)
    ra, rb = a.counters().bytes_read, b.counters().bytes_read
    same(sw.matmul(x, y), sw.matmul(dx, dy))
    assert a.counters().bytes_read - ra == 6 * tb
    assert b.counters().bytes_read - rb == 12 * tb
    wide = sw.OperationExecutionOptions("matmul", accumulator_dtype=sw.DType.Float64)
    same(sw.matmul(x, y, options=wide), sw.matmul(dx, dy, options=wide))


def test_backward_uses_the_same_machinery_and_writes_gradient_tiles_within_the_budget():
    rng = random.Random(41)
    tb = 64
    a, x, dx = out_of_core((4, 4), (4, 4), rng, budget=2 * tb)
    b, y, dy = out_of_core((4, 4), (4, 4), rng, budget=2 * tb)
    sw.reduce_sum(sw.elementwise_mul(x, y)).backward()
    sw.reduce_sum(sw.elementwise_mul(dx, dy)).backward()
    g = x.grad.carrier
    assert type(g) is sw.TiledEvictable and g.grid_shape == a.grid_shape and x.grad.layout == x.layout
    assert x.grad.values() == dx.grad.values() and y.grad.values() == dy.grad.values()
    assert len(g.secondary_tiles) >= 12  # written back while the backward ran
    assert g.counters().peak_resident_bytes <= 6 * tb


def test_backward_of_matmul_and_reduce_sum_equal_the_dense_backward():
    rng = random.Random(43)
    a, x, dx = out_of_core((2, 3), (3, 2), rng, budget=64)
    b, y, dy = out_of_core((3, 2), (2, 4), rng, budget=64)
    w = sw.Tensor(cpu([float(rng.randint(-3, 3)) for _ in range(48)]), 0, sw.Layout.compact(sw.Shape(6, 8)))
    sw.reduce_sum(sw.elementwise_mul(sw.matmul(x, y), w)).backward()
    sw.reduce_sum(sw.elementwise_mul(sw.matmul(dx, dy), w)).backward()
    assert x.grad.values() == dx.grad.values() and y.grad.values() == dy.grad.values()
    _, u, du = out_of_core((2, 3), (3, 2), rng, budget=64)
    sw.reduce_sum(sw.mul(sw.reduce_sum(u, axes=[1], keepdims=True), 3.0)).backward()
    sw.reduce_sum(sw.mul(sw.reduce_sum(du, axes=[1], keepdims=True), 3.0)).backward()
    assert u.grad.values() == du.grad.values()
