"""Issue 20 step 3, placement: every carrier instance has a placement (this
process or an MPI rank; host memory or a device by index). The operands of one
call share exact class AND placement, else a TypeError naming both, before any
work; capabilities stay per class (backend-capabilities.md); explain() reports
the placement (docs/design.md, "Placement")."""

import copy
import pickle

import pytest

import strideweave as sw
from conftest import F32, make_carrier_class, raises_exactly


def placed_class(name="Placed"):
    """A definition-free Python carrier class whose instances report the
    placement they were built with (its _placement hook)."""
    base = make_carrier_class(name)

    def __init__(self, values=(), *, where=sw.Placement.host(), dtype=F32):
        self.where = where
        base.__init__(self, values, dtype=dtype)

    return type(name, (base,), {"__init__": __init__, "_placement": lambda self: self.where})


def test_placement_values_compare_hash_print_and_pickle():
    host, d0, d1 = sw.Placement.host(), sw.Placement.device(0), sw.Placement.device(1)
    assert host == sw.Placement.host() and d1 == sw.Placement.device(1)
    assert host != d0 and d0 != d1 and host != d0.on_rank(0) and d0.on_rank(2) != d0.on_rank(3)
    assert len({host, d0, d1, sw.Placement.host(), d1.on_rank(4), d1.on_rank(4)}) == 4
    assert (host.is_host, d1.is_host, d1.device_index, host.rank, d1.on_rank(4).rank) == (True, False, 1, None, 4)
    assert [str(p) for p in (host, d1, host.on_rank(3), d1.on_rank(3))] == [
        "host", "device 1", "rank 3 host", "rank 3 device 1"]
    assert repr(d1.on_rank(3)) == "Placement.device(1).on_rank(3)"
    for p in (host, d1, d1.on_rank(3)):
        assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p
    assert (host == "host") is False


def test_placement_rejects_negative_indices():
    raises_exactly(ValueError, sw.Placement.device, -1)
    raises_exactly(ValueError, sw.Placement.host().on_rank, -2)


def test_shipped_carriers_are_on_the_host():
    for t in (sw.tensor([1.0]), sw.tensor([1.0], carrier=sw.Generic)):
        assert t.carrier.placement == sw.Placement.host()


def test_operands_on_two_placements_of_one_class_are_a_type_error_naming_both():
    cls = placed_class()
    a = sw.Tensor(cls([1.0, 2.0], where=sw.Placement.device(0)), 0, sw.Layout.compact(sw.Shape((2,))))
    b = sw.Tensor(cls([3.0, 4.0], where=sw.Placement.device(1)), 0, sw.Layout.compact(sw.Shape((2,))))
    error = raises_exactly(TypeError, lambda: a + b)
    assert "device 0" in str(error) and "device 1" in str(error) and "Placed" in str(error)
    # ... before any work: the same call on one placement passes the check
    # and reaches the gate (this class declared nothing: the gate's error).
    c = sw.Tensor(cls([3.0, 4.0], where=sw.Placement.device(0)), 0, sw.Layout.compact(sw.Shape((2,))))
    raises_exactly(sw.UnsupportedOperationPlan, lambda: a + c)
    # Capabilities stay per class: both placements answer one sealed set.
    assert a.carrier.operation_capabilities() == b.carrier.operation_capabilities()


def test_a_placement_hook_must_return_a_placement():
    cls = placed_class("BadPlaced")
    a = sw.Tensor(cls([1.0], where="device 0"), 0, sw.Layout.compact(sw.Shape((1,))))
    b = sw.Tensor(cls([1.0], where="device 0"), 0, sw.Layout.compact(sw.Shape((1,))))
    error = raises_exactly(TypeError, lambda: a + b)
    assert "_placement" in str(error)


def test_explain_reports_the_placement():
    x = sw.tensor([1.0, 2.0])
    e = sw.explain(sw.operation.get_definition("add"), x, x)
    assert e.placement == sw.Placement.host()
    assert "placement:  host" in str(e)
