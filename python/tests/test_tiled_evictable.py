"""TiledEvictable (carrier-composition.md Part B; backend-capabilities,
"TiledEvictable"; operation-semantics, "The direct tiled operation set";
docs/tiled_evictable.md). Test names carry the requirement."""

import threading

import pytest

import strideweave as sw
from strideweave.carriers import tiled_evictable as te
from conftest import F32, I32
from tile_support import logical


def cpu(values, mutable=True):
    c = sw.CPU(len(values), mutable=True)
    for i, v in enumerate(values):
        c[i] = v
    return c if mutable else c.new_like(list(values), mutable=False)


def tiled_4x4(policy=None):
    return sw.TiledEvictable(cpu(range(16)), sw.FileBacked(dtype=F32), (2, 2), (2, 2), residency_policy=policy)


def dense(values, rows, cols):
    return sw.Tensor(cpu(values), 0, sw.Layout.compact(sw.Shape(rows, cols)))


# ---------------------------------------------------------------- B1


def test_B1_tiled_evictable_owns_one_flat_logical_extent_and_is_importable():
    assert te.TiledEvictable is sw.TiledEvictable is sw.carriers.TiledEvictable
    for name in ("TileSelection", "TileSet", "ResidencyPlan", "ResidencyPolicy", "AwaitResidency"):
        assert getattr(te, name) is getattr(sw, name)
    primary, secondary = cpu(range(16)), sw.FileBacked(dtype=F32)
    t = sw.TiledEvictable(primary, secondary, [2, 2], [2, 2])
    assert t.grid_shape == (2, 2) and t.tile_shape == (2, 2) and t.logical_shape == (4, 4)
    assert t.size() == 16 and t.tile_size == 4 and t.tile_count == 4
    assert t.primary is primary
    assert primary.is_owned() and secondary.is_owned()
    assert type(t).__name__ == "TiledEvictable"
    assert isinstance(t, sw.DependentCarrier)
    full = t.full_tensor()
    assert full.layout == t.full_layout
    assert full.values() == logical(list(range(16)), (2, 2), (2, 2))
    with pytest.raises(TypeError):
        class Sub(sw.TiledEvictable):  # closed to subclassing
            pass


def test_B1_construction_checks_in_the_stated_order():
    p, s = cpu(range(16)), sw.FileBacked(dtype=F32)
    with pytest.raises(TypeError):
        sw.TiledEvictable(None, s, (2, 2), (2, 2))
    with pytest.raises(ValueError):
        sw.TiledEvictable(p, p, (2, 2), (2, 2))
    released = cpu(range(16))
    released.release()
    with pytest.raises(RuntimeError):
        sw.TiledEvictable(released, s, (2, 2), (2, 2))
    with pytest.raises(TypeError):
        sw.TiledEvictable(sw.CPU(1, dtype=I32), s, (1,), (1,))
    with pytest.raises(TypeError):
        sw.TiledEvictable(p, s, "ab", (2, 2))
    with pytest.raises(TypeError):
        sw.TiledEvictable(p, s, (2, 2.0), (2, 2))
    with pytest.raises(ValueError):
        sw.TiledEvictable(p, s, (2, 2), (2,))
    with pytest.raises(ValueError):
        sw.TiledEvictable(p, s, (2, 2), (2, 3))
    with pytest.raises(RuntimeError):
        sw.TiledEvictable(p, cpu(range(16), mutable=False), (2, 2), (2, 2))
    with pytest.raises(TypeError):
        sw.TiledEvictable(p, s, (2, 2), (2, 2), residency_policy=object())
    assert not p.is_owned() and not s.is_owned()


def test_B1_seed_from_the_primary_else_the_secondary_else_invalid():
    a = sw.TiledEvictable(cpu(range(8)), cpu([1.0] * 8), (2,), (4,))
    assert len(a.primary_tiles) == 2 and len(a.dirty_tiles) == 2
    b = sw.TiledEvictable(sw.CPU(0), cpu(range(8)), (2,), (4,))
    assert len(b.secondary_tiles) == 2 and len(b.dirty_tiles) == 0
    assert b.full_tensor().values() == list(range(8))
    c = sw.TiledEvictable(sw.CPU(0), sw.FileBacked(dtype=F32), (2,), (4,))
    assert len(c.valid_tiles) == 0
    state = c.tile_state((1,))
    assert (state.location, state.valid, state.dirty) == ("invalid", False, False)
    with pytest.raises(RuntimeError):
        c[0]


# ---------------------------------------------------------------- B2


def test_B2_tensor_layout_compatibility_preserves_exact_tile_footprints():
    t = tiled_4x4()
    t.check_full_tensor(t.full_tensor())
    transposed = sw.Layout(sw.Shape((2, 2), (2, 2)), sw.Stride((2, 4), (1, 8)))
    t.check_full_tensor(sw.Tensor(t, 0, transposed))
    with pytest.raises(ValueError):
        t.check_full_tensor(sw.Tensor(t, 0, sw.Layout.compact(sw.Shape(4, 4))))
    with pytest.raises(ValueError):
        sw.relu(sw.Tensor(t, 0, sw.Layout.compact(sw.Shape(4, 4))))
    swapped = sw.Layout(sw.Shape((2, 2), (2, 2)), sw.Stride((1, 8), (2, 4)))
    with pytest.raises(ValueError):
        t.check_full_tensor(sw.Tensor(t, 0, swapped))


# ---------------------------------------------------------------- B3


def test_B3_tile_selection_is_an_ordered_cartesian_product():
    s = sw.TileSelection(([7, 2], [4, 9]))
    assert s.coordinates == ((7, 4), (2, 4), (7, 9), (2, 9))
    assert s.per_axis == ((7, 2), (4, 9)) and s.rank == 2 and s.compact_grid_shape == (2, 2)
    assert s.tile_set == sw.TileSet([(2, 4), (7, 4), (2, 9), (7, 9)])
    for bad, error in ((5, TypeError), ([[1.5]], TypeError), ([[True]], TypeError), ([], ValueError),
                       ([[1], []], ValueError), ([[1, 1]], ValueError), ([[-1]], ValueError)):
        with pytest.raises(error):
            sw.TileSelection(bad)
    t = tiled_4x4()
    with pytest.raises(ValueError):
        t.evict(sw.TileSelection([[0], [5]]))
    with pytest.raises(ValueError):
        t.evict(sw.TileSelection([[0]]))


# ---------------------------------------------------------------- B6


def test_B6_residency_state_is_independent_of_selection_shape():
    t = tiled_4x4()
    t.evict(sw.TileSet([(0, 0), (1, 1)]))
    assert t.primary_tiles == sw.TileSet([(1, 0), (0, 1)])
    assert t.secondary_tiles == sw.TileSet([(0, 0), (1, 1)])
    s = t.tile_state((0, 0))
    assert (s.location, s.valid, s.dirty) == ("secondary", True, False)
    assert t.tile_state([1, 0]).dirty
    assert t.full_tensor().values() == logical(list(range(16)), (2, 2), (2, 2))


def test_B6_implicit_tiles_read_zero_and_writes_make_tiles_dirty():
    t = tiled_4x4()
    like = t.allocate_like(16)
    assert type(like) is sw.TiledEvictable
    assert len(like.implicit_tiles) == 4 and like[5] == 0.0
    like[5] = 3.0
    assert like.tile_state((1, 0)).location == "primary" and like.tile_state((1, 0)).dirty
    t.evict(t.all_tiles)
    assert len(t.dirty_tiles) == 0
    t.promote(sw.TileSet([(1, 0)]))
    t[4] = 200.0
    assert t.dirty_tiles == sw.TileSet([(1, 0)])
    t.evict(t.all_tiles)
    assert t[4] == 200.0


# ---------------------------------------------------------------- B8


def test_B8_the_six_direct_operations_mean_the_full_logical_tensor():
    a = tiled_4x4()
    b_slots = [0.5 * i - 3.0 for i in range(16)]
    b = sw.TiledEvictable(cpu(b_slots), sw.FileBacked(dtype=F32), (2, 2), (2, 2))
    a.evict(sw.TileSet([(0, 1)]))
    x, y = a.full_tensor(), b.full_tensor()
    dx = dense(logical(list(range(16)), (2, 2), (2, 2)), 4, 4)
    dy = dense(logical(b_slots, (2, 2), (2, 2)), 4, 4)
    cases = [
        (sw.add(x, y), sw.add(dx, dy)),
        (sw.elementwise_mul(x, y), sw.elementwise_mul(dx, dy)),
        (sw.mul(x, y), sw.mul(dx, dy)),
        (sw.mul(x, 2.5), sw.mul(dx, 2.5)),
        (sw.mul(-1.0, y), sw.mul(-1.0, dy)),
        (sw.relu(y), sw.relu(dy)),
        (sw.reduce_sum(x), sw.reduce_sum(dx)),
        (sw.reduce_sum(y, axes=[1], keepdims=True), sw.reduce_sum(dy, axes=[1], keepdims=True)),
        (sw.matmul(x, y), sw.matmul(dx, dy)),
    ]
    for got, want in cases:
        assert type(got.carrier) is sw.CPU
        assert got.shape == want.shape
        assert got.values() == want.values()
    assert a.secondary_tiles == sw.TileSet([(0, 1)])


def test_B8_execution_options_reach_the_dense_call():
    # Tiles that span the whole contraction (a's columns, b's rows), so each
    # result block is one product of the primary's own: the options decide it.
    slots = [0.1 * i + 0.37 for i in range(16)]
    x = sw.TiledEvictable(cpu(slots), sw.FileBacked(dtype=F32), (2, 1), (2, 4)).full_tensor()
    y = sw.TiledEvictable(cpu(slots), sw.FileBacked(dtype=F32), (1, 2), (4, 2)).full_tensor()
    dx, dy = dense(x.values(), 4, 4), dense(y.values(), 4, 4)
    fused = sw.OperationExecutionOptions("matmul", arithmetic=sw.Arithmetic.BINARY32_FUSED)
    assert sw.matmul(x, y, options=fused).values() == sw.matmul(dx, dy, options=fused).values()
    assert sw.matmul(dx, dy, options=fused).values() != sw.matmul(dx, dy).values()  # the options matter here
    assert sw.matmul(x, y).values() == sw.matmul(dx, dy).values()
    # Cut contractions sum the panels' products in binary32: the plan lets
    # the backend associate, so only the rounding differs.
    t = sw.TiledEvictable(cpu(slots), sw.FileBacked(dtype=F32), (2, 2), (2, 2)).full_tensor()
    dt = dense(t.values(), 4, 4)
    assert sw.matmul(t, t, options=fused).values() == pytest.approx(sw.matmul(dt, dt, options=fused).values(), rel=1e-6)


def test_B8_any_other_name_is_unsupported_and_handles_are_not_tensors():
    a = tiled_4x4()
    with pytest.raises(NotImplementedError):
        sw.sub(a.full_tensor(), a.full_tensor())
    assert {c.operation for c in a.operation_capabilities()} <= {
        "add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul",
        "tiled_evictable.gather", "tiled_evictable.scatter"}
    handle = a.promote_async(sw.TileSet())
    handle.wait()
    with pytest.raises(TypeError):
        sw.relu(handle)


def test_B8_the_call_is_the_one_node_and_gradients_are_tiled():
    a = tiled_4x4()
    x = a.full_tensor()
    y = sw.mul(x, 3.0)
    assert y.grad_fn.name == "mul"
    sw.reduce_sum(y).backward()
    g = x.grad
    assert type(g.carrier) is sw.TiledEvictable
    assert g.carrier.grid_shape == (2, 2)
    assert type(g.carrier.secondary) is sw.FileBacked
    assert g.values() == [3.0] * 16


# ---------------------------------------------------------------- B4, B5, B9


def projected(full_values, logical_shape, tile, selection):
    """The expected projection: full_values (first axis fastest) tile by tile in selection order."""
    compact = [len(a) * t for a, t in zip(selection.per_axis, tile)]
    out = []
    n = 1
    for e in compact:
        n *= e
    for k in range(n):
        rest, key, stride = k, 0, 1
        for i, e in enumerate(compact):
            y = rest % e
            rest //= e
            key += (selection.per_axis[i][y // tile[i]] * tile[i] + y % tile[i]) * stride
            stride *= logical_shape[i]
        out.append(full_values[key])
    return out


def test_B4_project_eagerly_returns_a_completion_handle_for_a_compact_tensor():
    t = tiled_4x4()
    t.evict(t.all_tiles)
    s = sw.TileSelection([[1], [0, 1]])
    h = t.project(t.full_tensor(), s)
    assert isinstance(h, sw.AwaitProjection) and te.AwaitProjection is sw.AwaitProjection
    p = h.wait()
    assert h.done and type(p.carrier) is sw.CPU and p.shape == sw.Shape(2, 4)
    assert p.values() == projected(t.full_tensor().values(), (4, 4), (2, 2), s)
    assert h.wait().carrier is p.carrier
    assert t.primary_tiles == sw.TileSet([(1, 0), (1, 1)])
    for bad in (lambda: t.project(t.full_tensor().values(), s), lambda: t.project(t.full_tensor(), [[0], [0]]),
                lambda: t.project(t.full_tensor(), s, sw.FileBacked(dtype=F32)), lambda: sw.relu(h)):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(ValueError):
        t.project(t.full_tensor(), sw.TileSelection([[2], [0]]))
    with pytest.raises(ValueError):
        t.project(t.full_tensor(), s, sw.CPU(3))
    destination = cpu([-1.0] * 9)
    q = t.project(t.full_tensor(), s, destination).wait()
    assert q.carrier is destination and destination[8] == -1.0
    assert q.values() == p.values()
    assert sw.FileBacked(dtype=F32).allocates_when_empty() and not sw.CPU(0).allocates_when_empty()


def test_B9_gather_preserves_public_tile_selection_ordering():
    t = tiled_4x4()
    s = sw.TileSelection([[1, 0], [1]])
    assert t.project(t.full_tensor(), s).wait().values() == projected(t.full_tensor().values(), (4, 4), (2, 2), s)
    transposed = sw.Tensor(t, 0, sw.Layout(sw.Shape((2, 2), (2, 2)), sw.Stride((2, 4), (1, 8))))
    assert t.project(transposed, s).wait().values() == projected(transposed.values(), (4, 4), (2, 2), s)


def test_B5_projection_is_an_autograd_visible_gather():
    t = tiled_4x4()
    x = t.full_tensor()
    a = t.project(x, sw.TileSelection([[0, 1], [0]])).wait()
    b = t.project(x, sw.TileSelection([[1], [0, 1]])).wait()
    assert a.grad_fn.name == "tiled_evictable.gather"
    sw.add(sw.reduce_sum(a), sw.reduce_sum(b)).backward()
    g = x.grad
    assert type(g.carrier) is sw.TiledEvictable and g.layout == x.layout
    want = [float((c < 2) + (r >= 2)) for c in range(4) for r in range(4)]
    assert g.values() == want
    with sw.no_grad():
        assert t.project(x, sw.TileSelection([[0], [0]])).wait().grad_fn is None


# ---------------------------------------------------------------- B10, B11


def test_B10_scatter_is_the_asynchronous_projection_counterpart():
    t = tiled_4x4()
    x = t.full_tensor()
    s = sw.TileSelection([[1], [0, 1]])
    compact = sw.mul(t.project(x, s).wait(), 10.0)
    h = t.scatter(compact, x, s)
    assert isinstance(h, sw.AwaitMove)
    r = h.wait()
    out = r.carrier
    assert type(out) is sw.TiledEvictable and out is not t and r.layout == x.layout
    assert out.valid_tiles == s.tile_set and out.dirty_tiles == s.tile_set
    assert out.tile_state((0, 0)).location == "invalid"
    assert out.project(r, s).wait().values() == compact.values()
    added = t.scatter(compact, x, s, reduction="add").wait()
    assert added.carrier.project(added, s).wait().values() == sw.add(compact, t.project(x, s).wait()).values()
    with pytest.raises(ValueError):
        t.scatter(compact, x, s, reduction="max")
    with pytest.raises(TypeError):
        t.scatter(compact, x, s, "add")  # keyword-only
    with pytest.raises(ValueError):
        t.scatter(compact, x, sw.TileSelection([[0, 1], [0]]))
    with pytest.raises(ValueError):  # any other third argument is the carrier scatter (core-concepts 1.7)
        t.scatter(compact, compact, sw.Layout.compact(sw.Shape(2, 4)))


def test_B11_scatter_participates_in_autograd():
    t = tiled_4x4()
    x = t.full_tensor()
    s = sw.TileSelection([[1], [0, 1]])
    compact = sw.Tensor(cpu([0.5] * 8), 0, sw.Layout.compact(sw.Shape(2, 4)))
    r = t.scatter(compact, x, s, reduction="add").wait()
    assert r.grad_fn.name == "tiled_evictable.scatter"
    sw.reduce_sum(sw.mul(r.carrier.project(r, s).wait(), 3.0)).backward()
    assert type(compact.grad.carrier) is sw.CPU and compact.grad.values() == [3.0] * 8
    assert type(x.grad.carrier) is sw.TiledEvictable
    assert x.grad.carrier.implicit_tiles == sw.TileSet([(0, 0), (0, 1)])


# ---------------------------------------------------------------- B12


def test_B12_tile_sets_and_residency_plans_are_immutable_and_validated():
    s = sw.TileSet([(1, 0), (0, 1), (0, 0)])
    assert s.coordinates == ((0, 0), (1, 0), (0, 1)) and s.rank == 2 and len(s) == 3
    assert (1, 0) in s and (1, 1) not in s
    assert sw.TileSet().rank is None and len(sw.TileSet()) == 0
    assert hash(s) == hash(sw.TileSet([(0, 0), (0, 1), (1, 0)]))
    for bad, error in ((5, TypeError), ([(0, "a")], TypeError), ([(0,), (0, 1)], ValueError),
                       ([(-1,)], ValueError), ([(2,), (2,)], ValueError)):
        with pytest.raises(error):
            sw.TileSet(bad)
    p = sw.ResidencyPlan()
    assert len(p.promote) == len(p.retain) == len(p.evict) == 0
    with pytest.raises(TypeError):
        sw.ResidencyPlan(promote=[(0,)])
    with pytest.raises(ValueError):
        sw.ResidencyPlan(promote=sw.TileSet([(0,)]), evict=sw.TileSet([(0,)]))
    with pytest.raises(TypeError):
        tiled_4x4().promote([(0, 0)])  # a list is neither a TileSet nor a TileSelection


# ---------------------------------------------------------------- B13


def test_B13_residency_transitions_have_asynchronous_and_blocking_forms():
    t = tiled_4x4()
    h = t.evict_async(sw.TileSelection([[0, 1], [0]]))
    assert isinstance(h, sw.AwaitResidency)
    assert h.wait() is None and h.done
    assert h.wait() is None
    assert t.secondary_tiles == sw.TileSet([(0, 0), (1, 0)])
    assert t.evict(sw.TileSet([(0, 0)])) is None  # idempotent
    t.promote(sw.TileSet([(0, 0)]))
    t.promote(sw.TileSet([(0, 0)]))
    assert t.tile_state((0, 0)).location == "primary"
    bad = sw.TiledEvictable(sw.CPU(0), sw.FileBacked(dtype=F32), (2,), (2,))
    h = bad.promote_async(sw.TileSet([(0,)]))
    with pytest.raises(RuntimeError):
        h.wait()
    assert len(bad.valid_tiles) == 0


class GatedTier(sw.Carrier):
    """A Float32 Python carrier whose reads wait for `gate` (a request kept in flight)."""

    def __init__(self, n, gate=None, entered=None):
        self.values_ = [float(i) for i in range(n)]
        self.gate, self.entered = gate, entered
        super().__init__(dtype=F32)

    def supports_storage_dtype(self, dtype):
        return dtype is F32

    def _storage_size(self):
        return len(self.values_)

    def _read_slot(self, i):
        if self.gate is not None:
            self.entered.set()
            self.gate.wait()
        return self.values_[i]

    def _write_slot(self, i, v):
        self.values_[i] = v

    def _release_storage(self):
        self.values_ = []

    def _make_like(self, size, mutable, dtype, empty):
        return GatedTier(size)


def test_B13_overlapping_an_incomplete_request_is_a_runtime_error():
    gate, entered = threading.Event(), threading.Event()
    t = sw.TiledEvictable(sw.CPU(0), GatedTier(8, gate, entered), (2,), (4,))
    pending = t.promote_async(sw.TileSet([(0,)]))
    assert entered.wait(10)
    assert not pending.done
    with pytest.raises(RuntimeError):
        t.promote_async(sw.TileSet([(0,)]))
    with pytest.raises(RuntimeError):
        t[1]
    with pytest.raises(RuntimeError):
        t.release()  # B15: nothing released while a request is incomplete
    gate.set()
    pending.wait()
    assert t.tile_state((0,)).location == "primary"


# ---------------------------------------------------------------- B14


class Recording:
    def __init__(self, answer, error=None):
        self.answer, self.error, self.calls = answer, error, []

    def plan(self, required, purpose):
        self.calls.append((required, purpose))
        if self.error:
            raise self.error
        return self.answer


def test_B14_residency_policy_can_optimize_but_cannot_define_correctness():
    policy = Recording(sw.ResidencyPlan(promote=sw.TileSet([(0, 0)]), evict=sw.TileSet([(1, 1)])))
    assert isinstance(policy, sw.ResidencyPolicy)
    t = tiled_4x4(policy)
    assert t.residency_policy is policy
    t.evict(t.all_tiles)
    assert sw.reduce_sum(t.full_tensor()).values() == [120.0]
    assert policy.calls == [(t.all_tiles, "operation")]
    assert t.primary_tiles == sw.TileSet([(0, 0)])
    with pytest.raises(TypeError):  # a plan that is not a ResidencyPlan
        sw.relu(tiled_4x4(Recording([(0, 0)])).full_tensor())
    with pytest.raises(ValueError):  # an incompatible plan
        sw.relu(tiled_4x4(Recording(sw.ResidencyPlan(promote=sw.TileSet([(5, 0)])))).full_tensor())
    with pytest.raises(KeyError):  # the policy's own exception propagates
        sw.relu(tiled_4x4(Recording(None, KeyError("no"))).full_tensor())


# ---------------------------------------------------------------- B15


def test_B15_tiled_release_ends_all_owned_residency():
    primary, secondary = cpu(range(16)), sw.FileBacked(dtype=F32)
    t = sw.TiledEvictable(primary, secondary, (2, 2), (2, 2))
    t.evict(sw.TileSet([(0, 0)]))
    current = t.secondary
    assert t.release() is None
    assert t.is_released() and t.size() == 0
    assert primary.is_released() and current.is_released() and not primary.is_owned()
    t.release()  # idempotent
    for call in (lambda: t.promote(sw.TileSet([(0, 0)])), lambda: t.evict(sw.TileSet([(0, 0)])), lambda: t[0],
                 lambda: sw.relu(sw.Tensor(t, 0, t.full_layout))):
        with pytest.raises(RuntimeError):
            call()
