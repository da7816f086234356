"""Composite ownership (issue 20, step 5; core-concepts.md 1.5-1.6;
carrier-composition.md A2, A4, A13; docs/design.md "Composite ownership"):
DependentCarrier._claim / _relinquish / _owner_access, Carrier.is_owned_by
and DependentCarrier.owned_children. Test names carry the requirement."""

import threading

import pytest

import strideweave as sw
from conftest import F32, raises_exactly


class Composite(sw.DependentCarrier):
    """Stores its values in its first child, which it owns with the rest."""

    def __init__(self, *children):
        self.children_ = list(children)
        super().__init__(dtype=F32)
        self._claim(self.children_)
        self.finalize_operation_capabilities()

    def supports_storage_dtype(self, dtype):
        return dtype is F32

    def _generate_operation_capabilities(self):
        return []

    def _storage_size(self):
        return self.children_[0].size()

    def _read_slot(self, index):
        return self.children_[0][index]

    def _write_slot(self, index, value):
        with self._owner_access():
            self.children_[0][index] = value

    def _release_storage(self):
        with self._owner_access():
            for c in self.children_:
                c.release()


def test_carrier_composition_A4_an_owned_child_refuses_every_public_mutation_and_stays_readable():
    child, other = sw.CPU(3), sw.CPU(3)
    owner = Composite(child)
    assert child.is_owned() and child.is_owned_by(owner) and not other.is_owned_by(owner)
    assert not child.is_mutable() and owner.owned_children() == [child]
    alias = sw.Tensor(child, 0, sw.Layout.compact(sw.Shape(3)))
    raises_exactly(RuntimeError, child.__setitem__, 0, 1.0)
    raises_exactly(RuntimeError, child.write_values, 0, [1.0])
    raises_exactly(RuntimeError, child.scatter, sw.Tensor(other, 0, sw.Layout.compact(sw.Shape(1))), alias,
                   sw.Layout.compact(sw.Shape(1)))
    raises_exactly(RuntimeError, child.release)
    raises_exactly(RuntimeError, sw.move, alias, sw.CPU(3))
    raises_exactly(RuntimeError, sw.move, sw.Tensor(other, 0, sw.Layout.compact(sw.Shape(3))), child)
    assert alias.tolist() == [0.0, 0.0, 0.0] and child.version == 0 and not child.is_released()
    raises_exactly(TypeError, child.is_owned_by, "owner")


def test_carrier_composition_A4_owner_access_lets_the_owner_alone_mutate_its_children():
    child = sw.CPU(2)
    owner, stranger = Composite(child), Composite(sw.CPU(1))
    owner[1] = 5.0  # the composite writes its child through its own access
    assert child[1] == 5.0 and child.version == 1 and owner.version == 1
    with owner._owner_access():
        assert not child.is_mutable()  # owner access is not public mutability
        child[0] = 3.0
        seen = []
        t = threading.Thread(target=lambda: seen.append(pytest.raises(RuntimeError, child.__setitem__, 0, 9.0)))
        t.start()
        t.join()
        assert len(seen) == 1  # another thread is outside this thread's scope
    with stranger._owner_access():
        raises_exactly(RuntimeError, child.__setitem__, 0, 9.0)
    raises_exactly(RuntimeError, child.__setitem__, 0, 9.0)
    assert child.read_values(0, 2) == [3.0, 5.0]
    with owner._owner_access():
        moved = sw.move(sw.Tensor(child, 0, sw.Layout.compact(sw.Shape(2))), sw.CPU(2))
    assert moved.tolist() == [3.0, 5.0] and child.is_released()


def test_carrier_composition_A4_ownership_nests_and_cannot_form_a_cycle():
    leaf = sw.CPU(2)
    inner = Composite(leaf)
    outer = Composite(inner)
    assert inner.is_owned_by(outer) and leaf.is_owned_by(inner)
    raises_exactly(RuntimeError, inner.__setitem__, 0, 1.0)
    with outer._owner_access():
        inner[0] = 4.0  # inner writes leaf with its own access
        raises_exactly(RuntimeError, leaf.__setitem__, 1, 1.0)  # the grandchild is inner's, not outer's
    assert leaf[0] == 4.0
    raises_exactly(RuntimeError, inner._claim, outer)
    raises_exactly(ValueError, inner._claim, inner)


def test_carrier_composition_A2_a_claim_is_all_or_nothing():
    a, released, taken = sw.CPU(1), sw.CPU(1), sw.CPU(1)
    released.release()
    first = Composite(taken)
    owner = Composite(sw.CPU(1))
    raises_exactly(RuntimeError, owner._claim, [a, released])
    raises_exactly(ValueError, owner._claim, [a, a])
    raises_exactly(TypeError, owner._claim, [a, "b"])
    raises_exactly(TypeError, owner._claim, 3)
    raises_exactly(RuntimeError, owner._claim, [a, taken])
    assert not a.is_owned() and taken.is_owned_by(first) and len(owner.owned_children()) == 1
    raises_exactly(RuntimeError, Composite, a, taken)  # a failing constructor claims nothing
    assert not a.is_owned()


def test_carrier_composition_A13_relinquish_and_destruction_give_mutability_back():
    child = sw.CPU(1)
    owner = Composite(sw.CPU(1), child)
    owner._relinquish(child)
    assert not child.is_owned() and child.is_mutable()
    child[0] = 2.0
    raises_exactly(RuntimeError, owner._relinquish, child)
    raises_exactly(TypeError, owner._relinquish, "child")
    other = sw.CPU(1)
    owner2 = Composite(other)
    assert other.is_owned()
    del owner2
    import gc
    gc.collect()
    assert not other.is_owned() and other.is_mutable()


def test_carrier_composition_A13_releasing_the_owner_releases_its_children_through_owner_access():
    a, b = sw.CPU(1), sw.CPU(1)
    owner = Composite(a, b)
    owner.release()
    assert a.is_released() and b.is_released() and owner.is_released()


def test_carrier_composition_A4_owner_scopes_close_in_reverse_order_on_their_own_thread():
    a, b = Composite(sw.CPU(1)), Composite(sw.CPU(1))
    outer, inner = a._owner_access(), b._owner_access()
    outer.__enter__()
    assert a.is_acting_owner_on_this_thread()
    inner.__enter__()
    assert b.is_acting_owner_on_this_thread() and not a.is_acting_owner_on_this_thread()
    raises_exactly(RuntimeError, outer.__exit__, None, None, None)  # an inner scope is still open
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, inner.__exit__, None, None, None)))
    t.start()
    t.join()
    assert len(errors) == 1  # not on the thread that opened it
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert not a.is_acting_owner_on_this_thread() and not b.is_acting_owner_on_this_thread()
    raises_exactly(RuntimeError, outer.__exit__, None, None, None)  # not open


class FailsToFinalize(Composite):
    def _generate_operation_capabilities(self):
        raise ValueError("no capabilities today")


def test_carrier_composition_A2_a_failed_finalisation_relinquishes_every_claim():
    child = sw.CPU(1)
    with pytest.raises(ValueError) as info:
        FailsToFinalize(child)
    assert not child.is_owned() and child.is_mutable()  # although the half-built object is still alive
    assert info.value is not None


def test_carrier_composition_A4_is_owner_acting_here_holds_only_inside_the_owners_access_scope():
    child, free = sw.CPU(1), sw.CPU(1)
    owner = Composite(child)
    assert not child.is_owner_acting_here() and not free.is_owner_acting_here()
    with owner._owner_access():
        assert child.is_owner_acting_here() and not free.is_owner_acting_here()
        other = Composite(sw.CPU(1))
        with other._owner_access():  # the innermost scope is another owner's
            assert not child.is_owner_acting_here()
    assert not child.is_owner_acting_here()
