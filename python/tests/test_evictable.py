"""Evictable (carrier-composition.md Part A, A1-A14; backend-capabilities,
"Evictable snapshots executable and storable primary plans";
docs/evictable.md) and execute_lowered (a composite's lowering). Test names
carry the requirement."""

import pytest

import strideweave as sw
from conftest import F32, I32, raises_exactly


def cpu(*values, mutable=True):
    c = sw.CPU(len(values), mutable=True)
    for i, v in enumerate(values):
        c[i] = v
    if mutable:
        return c
    return sw.CPU(len(values), mutable=False) if not values else c.new_like(list(values), mutable=False)


def flat(carrier):
    return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(carrier.size())))


def hierarchy(*values):
    return sw.Evictable(cpu(*values), sw.FileBacked(dtype=F32))


class Flaky(sw.Carrier):
    """A Float32 carrier whose slot writes fail while Flaky.failing is set."""

    failing = False

    def __init__(self, n):
        self.values_ = [0.0] * n
        super().__init__(dtype=F32)

    def supports_storage_dtype(self, dtype):
        return dtype is F32

    def _storage_size(self):
        return len(self.values_)

    def _read_slot(self, index):
        return self.values_[index]

    def _write_slot(self, index, value):
        if Flaky.failing:
            raise OSError("Flaky: the write failed")
        self.values_[index] = value

    def _release_storage(self):
        self.values_ = []

    def _make_like(self, size, mutable, dtype, empty):
        return Flaky(size)


def test_carrier_composition_A1_construct_a_promoted_hierarchy():
    primary, secondary = cpu(1.0, 2.0, 3.0), sw.FileBacked(dtype=F32)
    e = sw.Evictable(primary, secondary)
    assert not e.is_evicted() and e.size() == 3 and e.dtype() is F32
    assert e.primary is primary and e.secondary is secondary
    assert primary.is_owned_by(e) and secondary.is_owned_by(e)
    assert flat(e).tolist() == [1.0, 2.0, 3.0]
    assert sw.carriers.Evictable is sw.Evictable and repr(e).startswith("<Evictable carrier")


def test_carrier_composition_A1_construction_checks_in_order():
    raises_exactly(TypeError, sw.Evictable, "primary", sw.CPU(1))
    raises_exactly(TypeError, sw.Evictable, sw.CPU(1), 3)
    same = sw.CPU(1)
    raises_exactly(ValueError, sw.Evictable, same, same)
    released = sw.CPU(1)
    released.release()
    raises_exactly(RuntimeError, sw.Evictable, released, sw.CPU(1))
    raises_exactly(RuntimeError, sw.Evictable, sw.CPU(1), released)
    raises_exactly(TypeError, sw.Evictable, sw.CPU(1), sw.CPU(1, dtype=I32))
    raises_exactly(RuntimeError, sw.Evictable, sw.CPU(1), sw.CPU(1, mutable=False))
    raises_exactly(ValueError, sw.Evictable, sw.CPU(0), sw.CPU(1))
    raises_exactly(RuntimeError, sw.Evictable, released, sw.CPU(1, dtype=I32))  # released before dtype
    with pytest.raises(TypeError):
        class Sub(sw.Evictable):  # closed to subclassing
            pass


def test_carrier_composition_A2_a_failed_construction_leaves_ownership_unchanged():
    owned = sw.CPU(1)
    owner = sw.Evictable(owned, sw.CPU(1))
    primary = sw.CPU(1)
    raises_exactly(RuntimeError, sw.Evictable, primary, owned)  # the secondary is owned
    assert not primary.is_owned() and primary.is_mutable()
    del owner


def test_carrier_composition_A3_tier_identities_follow_transitions_and_storage_support_intersects():
    primary, secondary = cpu(1.0, 2.0), sw.FileBacked(dtype=F32)
    e = sw.Evictable(primary, secondary)
    e.evict()
    assert e.secondary is not secondary and type(e.secondary) is sw.FileBacked and secondary.is_released()
    e.promote()
    assert e.primary is not primary and type(e.primary) is sw.CPU and e.primary.is_owned_by(e)
    assert not e.supports_storage_dtype(sw.DType.Bool) and e.supports_storage_dtype(I32)


def test_carrier_composition_A4_retained_aliases_are_read_only_and_ownership_nests():
    primary = cpu(1.0, 2.0)
    e = sw.Evictable(primary, sw.Generic([0.0, 0.0], dtype=F32))
    assert primary.is_owned() and not primary.is_mutable() and primary[1] == 2.0
    raises_exactly(RuntimeError, primary.__setitem__, 0, 9.0)
    raises_exactly(RuntimeError, primary.release)
    raises_exactly(RuntimeError, sw.move, flat(primary), sw.CPU(2))
    e[0] = 5.0
    assert primary[0] == 5.0
    outer = sw.Evictable(e, sw.Generic([0.0, 0.0], dtype=F32))
    raises_exactly(RuntimeError, e.evict)
    outer.evict()
    outer.promote()
    assert flat(outer).tolist() == [5.0, 2.0] and type(outer.primary) is sw.Evictable


def test_carrier_composition_A5_mutability_is_the_primarys_at_construction():
    e = sw.Evictable(sw.CPU(1, mutable=False), sw.FileBacked(dtype=F32))
    assert not e.is_mutable()
    raises_exactly(RuntimeError, e.__setitem__, 0, 1.0)
    e.evict()
    e.promote()
    assert not e.is_mutable()


def test_carrier_composition_A6_evicted_access_names_promote_and_dlpack_is_refused():
    e = hierarchy(1.0, 2.0)
    t = flat(e)
    e.evict()
    with pytest.raises(RuntimeError, match=r"promote\(\)"):
        e[0]
    raises_exactly(RuntimeError, sw.add, t, t)
    raises_exactly(RuntimeError, e.dispatch_op, "add")
    assert e.is_evicted() and e.dtype() is F32 and e.operation_capabilities("add")
    e.promote()
    assert t.tolist() == [1.0, 2.0]
    with pytest.raises(BufferError):
        t.__dlpack__()


def test_carrier_composition_A7_A8_evict_and_promote_move_every_slot():
    primary, secondary = cpu(1.0, 2.0, 3.0), sw.Generic([0.0] * 4, dtype=F32)
    e = sw.Evictable(primary, secondary)
    e.evict()
    e.evict()  # no-op
    assert e.is_evicted() and e.secondary is secondary and primary.is_released() and secondary[2] == 3.0
    e.promote()
    e.promote()  # no-op
    assert not e.is_evicted() and flat(e).tolist() == [1.0, 2.0, 3.0]


def test_carrier_composition_A9_a_failed_transition_keeps_everything_and_can_be_retried():
    primary, secondary = cpu(1.0, 2.0), Flaky(2)
    e = sw.Evictable(primary, secondary)
    version = e.version
    Flaky.failing = True
    try:
        raises_exactly(OSError, e.evict)
    finally:
        Flaky.failing = False
    assert not e.is_evicted() and e.primary is primary and e.secondary is secondary
    assert not primary.is_released() and e.version == version and flat(e).tolist() == [1.0, 2.0]
    e.evict()
    assert e.is_evicted() and secondary.values_ == [1.0, 2.0]


def test_carrier_composition_A9_a_failed_promotion_disposes_its_fresh_storage():
    primary = Flaky(2)
    primary.values_ = [7.0, 8.0]
    e = sw.Evictable(primary, sw.Generic([0.0, 0.0], dtype=F32))
    e.evict()
    secondary = e.secondary
    Flaky.failing = True
    try:
        raises_exactly(OSError, e.promote)
    finally:
        Flaky.failing = False
    assert e.is_evicted() and e.primary is primary and e.secondary is secondary and secondary[1] == 8.0
    e.promote()
    assert e.primary is not primary and flat(e).tolist() == [7.0, 8.0]


def test_carrier_composition_A10_only_writes_step_the_version():
    e = hierarchy(1.0, 2.0)
    v = e.version
    e.evict()
    e.promote()
    assert e.version == v
    e[1] = 3.0
    assert e.version == v + 1


def test_carrier_composition_A11_factories_preserve_the_hierarchy_pattern():
    e = hierarchy(1.0)
    made = e.new_like([3.0, 4.0], mutable=False)
    assert type(made) is sw.Evictable and type(made.primary) is sw.CPU and type(made.secondary) is sw.FileBacked
    assert made.secondary.size() == 0 and not made.is_mutable() and flat(made).tolist() == [3.0, 4.0]
    z = e.allocate_like(3, dtype=I32)
    assert z.dtype() is I32 and z.size() == 3
    raises_exactly(ValueError, e.allocate_like, 1, dtype=sw.DType.Bool)


def test_carrier_composition_A12_results_are_new_hierarchies():
    e = hierarchy(1.0, -2.0)
    t = flat(e)
    r = sw.relu(sw.add(t, t))
    assert type(r.carrier) is sw.Evictable and r.carrier is not e
    assert r.carrier.primary.is_owned_by(r.carrier) and r.tolist() == [2.0, 0.0]
    assert t.reshape((2, 1)).carrier is e


def test_carrier_composition_A13_release_ends_the_lifecycle_and_destruction_gives_tiers_back():
    primary, secondary = cpu(1.0), sw.Generic([0.0], dtype=F32)
    e = sw.Evictable(primary, secondary)
    e.release()
    e.release()
    assert primary.is_released() and secondary.is_released() and e.size() == 0
    raises_exactly(RuntimeError, e.evict)
    raises_exactly(RuntimeError, e.promote)
    raises_exactly(RuntimeError, e.dispatch_op, "add")
    kept = cpu(1.0, 2.0)
    e = sw.Evictable(kept, sw.Generic([0.0, 0.0], dtype=F32))
    del e
    assert not kept.is_owned() and kept.is_mutable() and kept[1] == 2.0


def test_carrier_composition_A14_the_snapshot_is_the_primarys_storable_plans():
    e = hierarchy(1.0)
    expected = [c for c in e.primary.operation_capabilities() if c.output is not sw.DType.Bool]
    assert len(e.operation_capabilities()) == len(expected)
    lt = sw.resolve_operation_plan("lt", F32, F32)
    assert e.primary.supports_operation_plan(lt) and not e.supports_operation_plan(lt)
    t = flat(e)
    raises_exactly(sw.UnsupportedOperationPlan, sw.lt, t, t)


def test_carrier_composition_A14_dispatch_returns_a_fresh_single_use_adapter():
    e = hierarchy(1.0, -1.0)
    op = e.dispatch_op("relu")
    assert type(op) is sw.EvictableOperation and op.primary_operation._dispatch_carrier_class is sw.CPU
    t = flat(e)
    assert op.forward(t).tolist() == [1.0, 0.0]
    raises_exactly(RuntimeError, op.forward, t)
    raises_exactly(TypeError, sw.EvictableOperation, "op")


def test_carrier_composition_A14_operands_must_be_promoted_with_matching_tier_classes():
    a, b = hierarchy(1.0), hierarchy(2.0)
    other = sw.Evictable(cpu(3.0), sw.Generic([0.0], dtype=F32))
    assert sw.add(flat(a), flat(b)).tolist() == [3.0]
    raises_exactly(TypeError, sw.add, flat(a), flat(other))
    b.evict()
    raises_exactly(RuntimeError, sw.add, flat(a), flat(b))


def test_carrier_composition_A14_the_adapter_is_the_node_and_gradients_are_hierarchies():
    a, b = hierarchy(1.0, 2.0), hierarchy(3.0, 4.0)
    x, y = flat(a), flat(b)
    m = sw.mul(x, y)
    assert type(m.autograd_ctx) is sw.EvictableOperation
    gx, gy = sw.grad(sw.reduce_sum(m), [x, y], retain_graph=True)
    assert type(gx.carrier) is sw.Evictable and gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
    a.evict()
    raises_exactly(RuntimeError, sw.grad, sw.reduce_sum(m), [y])


def test_carrier_dispatch_evictable_backward_takes_an_evictable_or_exact_primary_cotangent():
    x, y = flat(hierarchy(1.0, 2.0)), flat(hierarchy(3.0, 4.0))
    node = sw.mul(x, y).autograd_ctx
    gx, gy = node.backward(sw.tensor([1.0, 10.0]))
    assert type(gx.carrier) is sw.Evictable and gx.tolist() == [3.0, 40.0] and gy.tolist() == [1.0, 20.0]
    assert node.backward(flat(hierarchy(1.0, 1.0)))[1].tolist() == [1.0, 2.0]
    raises_exactly(TypeError, node.backward, sw.Tensor(sw.Generic([1.0, 1.0], dtype=F32), 0,
                                                       sw.Layout.compact(sw.Shape(2))))
    raises_exactly(TypeError, node.backward, flat(sw.Evictable(cpu(1.0, 1.0), sw.Generic([0.0, 0.0], dtype=F32))))
    evicted = hierarchy(1.0, 1.0)
    evicted.evict()
    raises_exactly(RuntimeError, node.backward, flat(evicted))


def test_carrier_composition_A14_a_python_tier_class_takes_part():
    e = sw.Evictable(cpu(1.0, 2.0), Flaky(0))  # an empty Python secondary: eviction makes a fresh one
    e.evict()
    assert type(e.secondary) is Flaky and e.secondary.values_ == [1.0, 2.0]
    e.promote()
    assert flat(e).tolist() == [1.0, 2.0]


# ---- execute_lowered: a Python composite's lowering


class Mirror(sw.DependentCarrier):
    """A composite over one CPU child that lowers every built-in onto it."""

    def __init__(self, child):
        self.child = child
        super().__init__(dtype=F32)
        self._claim([child])
        self.finalize_operation_capabilities()

    def supports_storage_dtype(self, dtype):
        return dtype is F32

    def _generate_operation_capabilities(self):
        return [c for c in self.child.operation_capabilities() if c.output is F32]

    def _storage_size(self):
        return self.child.size()

    def _read_slot(self, index):
        return self.child[index]

    def _write_slot(self, index, value):
        with self._owner_access():
            self.child[index] = value

    def _release_storage(self):
        with self._owner_access():
            self.child.release()

    def _make_like(self, size, mutable, dtype, empty):
        return Mirror(sw.CPU(size, dtype=dtype))

    def _dispatch_op(self, name):
        return Lowering()


class Lowering(sw.Operation):
    def _forward(self, call):
        lowered = [sw.Tensor(o.carrier.child, o.offset, o.layout) if isinstance(o, sw.Tensor) else o
                   for o in call.operands]
        result = sw.execute_lowered(call, lowered)
        out = call.output.carrier
        with out._owner_access():
            out.child.write_values(0, result.values())


def test_execute_lowered_runs_a_built_in_call_on_the_tier_class():
    x = sw.Tensor(Mirror(sw.CPU(3)), 0, sw.Layout.compact(sw.Shape(3)))
    for i, v in enumerate([1.0, -2.0, 3.0]):
        x.carrier[i] = v
    y = sw.relu(sw.mul(x, 2.0))
    assert type(y.carrier) is Mirror and y.tolist() == [2.0, 0.0, 6.0]
    assert sw.reduce_sum(x).item() == 2.0


def test_execute_lowered_checks_its_operands():
    seen = {}

    class Probe(sw.Operation):
        def _forward(self, call):
            seen["call"] = call
            Lowering._forward(self, call)

    class Probed(Mirror):
        def _make_like(self, size, mutable, dtype, empty):
            return Probed(sw.CPU(size, dtype=dtype))

        def _dispatch_op(self, name):
            return Probe()

    x = sw.Tensor(Probed(sw.CPU(2)), 0, sw.Layout.compact(sw.Shape(2)))
    sw.add(x, x)
    call = seen["call"]
    a = sw.Tensor(sw.CPU(2), 0, sw.Layout.compact(sw.Shape(2)))
    assert sw.execute_lowered(call, [a, a]).tolist() == [0.0, 0.0]
    raises_exactly(ValueError, sw.execute_lowered, call, [a])
    raises_exactly(ValueError, sw.execute_lowered, call, [a, sw.Tensor(sw.CPU(1), 0, sw.Layout.compact(sw.Shape(1)))])
    g = sw.Tensor(sw.Generic([0.0, 0.0], dtype=F32), 0, sw.Layout.compact(sw.Shape(2)))
    raises_exactly(TypeError, sw.execute_lowered, call, [a, g])
    raises_exactly(TypeError, sw.execute_lowered, call, "ab")


def test_evictable_threads_transitions_with_a_python_tier_race_operations_without_deadlock():
    """docs/evictable.md, "Threads": a transition waits for the accesses in
    progress (without the GIL), an access during a transition raises at once;
    a Python tier's hooks take the GIL back, so nothing deadlocks."""
    import threading

    e = sw.Evictable(cpu(1.0, 2.0, 3.0), Flaky(0))
    t = flat(e)
    stop = threading.Event()
    outcomes = {"computed": 0, "refused": 0, "wrong": 0}

    def work():
        while not stop.is_set():
            try:
                values = sw.add(t, t).tolist()
                outcomes["computed" if values == [2.0, 4.0, 6.0] else "wrong"] += 1
            except RuntimeError:
                outcomes["refused"] += 1

    worker = threading.Thread(target=work)
    worker.start()
    try:
        for _ in range(50):
            e.evict()
            e.promote()
    finally:
        stop.set()
        worker.join(timeout=60)
    assert not worker.is_alive()
    assert outcomes["wrong"] == 0 and outcomes["computed"] + outcomes["refused"] > 0
    assert t.tolist() == [1.0, 2.0, 3.0]
    e.release()
    assert e.size() == 0
