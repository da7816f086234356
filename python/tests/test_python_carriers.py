"""Carriers defined in Python (issue 12, item 4, the definition-free part;
backend-capabilities.md "Custom carrier classes declare capabilities" and
"DependentCarrier"; core-concepts.md 1). Each test makes fresh classes:
a class is sealed on first observation."""

import gc
import threading
import weakref

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, join_bounded, make_carrier_class, make_dependent_class, plan, raises_exactly

ADD = plan("add", F32, F32)
MUL = plan("mul", F32, F32)
ADD_I32 = plan("add", I32, I32)


def cap(p):
    return sw.OperationCapability.from_plan(p)


def compact(carrier, *extents):
    return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(*extents)))


# ---- the class is its own exact class


def test_a_python_subclass_is_constructed_as_written_and_is_its_own_exact_class():
    cls = make_carrier_class("Listy")
    c = cls([1.0, 2.0, 3.0])
    assert type(c) is cls and isinstance(c, sw.Carrier) and c.size() == len(c) == 3
    assert c.dtype() is F32 and c[1] == 2.0 and list(c) == [1.0, 2.0, 3.0]
    assert repr(c) == "<Listy carrier of float32: 3 slots, version 0>"
    t = compact(c, 3)
    assert t.carrier is c and t.carrier_type() is cls and t.values() == [1.0, 2.0, 3.0]


def test_every_registry_sees_the_exact_class_and_never_a_base_class():
    base = make_carrier_class("Base")
    sw.register_operation_capabilities(base, [cap(ADD)])
    derived = type("Derived", (base,), {})
    assert sw.capabilities_for_carrier_class(base) == (cap(ADD),)
    assert sw.capabilities_for_carrier_class(derived) == ()  # no base-class traversal
    assert sw.supports_operation_plan(base, ADD) and not sw.supports_operation_plan(derived, ADD)
    d = derived([1.0])
    assert type(d) is derived and not d.supports_operation_plan(ADD)
    assert base([1.0]).supports_operation_plan(ADD)


def test_two_classes_of_the_same_name_are_distinct_identities():
    a, b = make_carrier_class("Twin"), make_carrier_class("Twin")
    sw.register_operation_capabilities(a, [cap(ADD)])
    sw.register_operation_capabilities(b, [cap(MUL)])
    assert sw.capabilities_for_carrier_class(a) == (cap(ADD),)
    assert sw.capabilities_for_carrier_class(b) == (cap(MUL),)


def test_operands_of_two_python_classes_are_a_type_error():
    a, b = make_carrier_class("Left"), make_carrier_class("Right")
    for cls in (a, b):
        sw.register_operation_capabilities(cls, [cap(ADD)])
    raises_exactly(TypeError, sw.add, compact(a([1.0]), 1), compact(b([1.0]), 1))


# ---- storage hooks and the framework's checks around them


def test_the_framework_checks_range_mutability_and_value_before_each_hook():
    cls = make_carrier_class()
    c = cls([1.0, 2.0])
    raises_exactly(IndexError, c.get_value, 2)
    raises_exactly(IndexError, c.set_value, -1, 1.0)
    raises_exactly(TypeError, c.set_value, 0, "x")
    frozen = cls([1.0], mutable=False)
    raises_exactly(RuntimeError, frozen.set_value, 0, 2.0)
    assert c.calls["_write_slot"] == 0 and frozen.calls["_write_slot"] == 0
    c[1] = 5
    assert c.slots == [1.0, 5.0] and c.version == 1 and c.calls["_write_slot"] == 1
    assert type(c.slots[1]) is float  # the value is the stored dtype's, converted before the hook


def test_read_slot_results_are_checked_against_the_stored_dtype():
    cls = make_carrier_class()
    c = cls([1.0], dtype=I32)
    raises_exactly(TypeError, c.get_value, 0)  # the hook returned a float for an Int32 carrier


def test_unsupported_storage_dtype_and_missing_hooks_are_refused_at_construction():
    cls = make_carrier_class()
    cls.stored = (F32,)
    raises_exactly(ValueError, cls, [1], dtype=I32)
    raises_exactly(ValueError, cls, [], dtype=sw.DType.Float64)
    raises_exactly(TypeError, cls, [], dtype="float32")

    class NoHooks(sw.Carrier):
        def __init__(self):
            super().__init__(dtype=F32)

    error = raises_exactly(TypeError, NoHooks)
    assert "_read_slot" in str(error) and "_storage_size" in str(error)
    raises_exactly(TypeError, sw.Carrier, dtype=F32)  # the root is abstract


def test_release_calls_the_hook_once_and_is_permanent():
    cls = make_carrier_class()
    c = cls([1.0])
    c.release()
    c.release()
    assert c.is_released() and c.calls["_release_storage"] == 1
    raises_exactly(RuntimeError, c.get_value, 0)
    raises_exactly(RuntimeError, c.size)


def test_new_like_and_allocate_like_make_the_exact_class_through_make_like():
    cls = make_carrier_class()
    c = cls([1.0])
    n = c.new_like([3, 4], dtype=I32)
    assert type(n) is cls and n.dtype() is I32 and list(n) == [3, 4]
    z = c.allocate_like(2, dtype=BOOL)
    assert type(z) is cls and list(z) == [False, False]
    cls._make_like = lambda self, size, mutable, dtype, empty: sw.Generic([0.0] * size, dtype=dtype)
    raises_exactly(TypeError, c.allocate_like, 1)


def test_a_failing_hook_raises_its_own_error_and_leaves_the_version():
    cls = make_carrier_class()

    def broken(self, index, value):
        raise KeyError("disk full")

    cls._write_slot = broken
    c = cls([1.0])
    raises_exactly(KeyError, c.set_value, 0, 2.0)
    assert c.version == 0 and c.slots == [1.0]


def test_a_python_carrier_lives_while_a_tensor_or_cpp_holds_it():
    cls = make_carrier_class()
    c = cls([1.0, 2.0])
    ref = weakref.ref(c)
    view = compact(c, 2).slice(0, 1, 2)
    del c
    gc.collect()
    assert ref() is not None and view.values() == [2.0]
    del view
    gc.collect()
    assert ref() is None


def test_hooks_run_from_other_threads_holding_the_gil_only_while_they_run():
    cls = make_carrier_class()
    c = cls([0.0] * 64)
    t = compact(c, 64)

    def reader():
        for _ in range(20):
            assert len(t.values()) == 64

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for th in threads:
        th.start()
    join_bounded(threads, "the reading threads")
    assert c.calls["_read_slot"] == 4 * 20 * 64


# ---- declaring capabilities (backend-capabilities.md)


def test_register_declares_the_complete_set_once():
    cls = make_carrier_class()
    assert sw.register_operation_capabilities(cls, [cap(MUL), cap(ADD)]) is None
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([cap(MUL), cap(ADD)]))
    assert sw.capabilities_for_carrier_class(cls, "mul") == (cap(MUL),)
    assert sw.matching_capability(cls, ADD) == cap(ADD)
    assert sw.matching_capability(cls, ADD_I32) is None
    assert sw.unsupported_plan_reason(cls, ADD) is None
    assert "has capabilities for operation 'add' but none matches the plan" in sw.unsupported_plan_reason(cls, ADD_I32)
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, [cap(ADD_I32)])  # once
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([cap(MUL), cap(ADD)]))


def test_an_empty_iterable_is_a_complete_empty_declaration():
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, iter(()))
    assert sw.capabilities_for_carrier_class(cls) == ()
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, [cap(ADD)])


def test_observation_seals_an_undeclared_class_with_the_empty_set():
    cls = make_carrier_class()
    assert sw.capabilities_for_carrier_class(cls) == ()
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, [cap(ADD)])
    other = make_carrier_class()
    other([1.0]).operation_capabilities()  # an instance query observes the class too
    raises_exactly(TypeError, sw.register_operation_capabilities, other, [cap(ADD)])


def test_ineligible_targets_and_bad_entries_are_refused_whole():
    for target in (sw.Carrier, sw.DependentCarrier, sw.CPU, sw.Generic, int, "CPU", make_dependent_class()):
        raises_exactly(TypeError, sw.register_operation_capabilities, target, [cap(ADD)])
    cls = make_carrier_class()
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, [cap(ADD), "mul"])
    raises_exactly(TypeError, sw.register_operation_capabilities, cls, cap(ADD))  # not an iterable of entries
    raises_exactly(ValueError, sw.register_operation_capabilities, cls, [cap(ADD), cap(ADD)])
    # All or nothing: the failed calls neither declared nor sealed the class.
    sw.register_operation_capabilities(cls, [cap(MUL)])
    assert sw.capabilities_for_carrier_class(cls) == (cap(MUL),)


def test_unsupported_plans_fail_before_any_storage_work():
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [cap(ADD)])
    c = cls([1.0, 2.0])
    t = compact(c, 2)
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.mul, t, t)
    assert error.plan == MUL and isinstance(error, NotImplementedError)
    assert c.calls == {"_read_slot": 0, "_write_slot": 0, "_make_like": 0, "_release_storage": 0}
    assert c.version == 0


def test_r13_1_a_declared_plan_without_a_kernel_in_the_dispatch_hook_is_unsupported():
    # carrier-extension R13.1: a declared plan passes the gate; a class whose
    # dispatch hook (_dispatch_op) supplies no implementation is
    # UnsupportedOperationPlan saying so, never a plain NotImplementedError,
    # before anything is allocated.
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [cap(ADD)])
    c = cls([1.0])
    t = compact(c, 1)
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.add, t, t)
    assert "dispatch hook" in str(error)
    assert c.calls["_make_like"] == 0 and c.version == 0


# ---- DependentCarrier subclasses


def test_dependent_capabilities_are_generated_once_and_frozen_per_instance():
    cls = make_dependent_class()
    inner = sw.Generic([1.0, 2.0], dtype=F32)
    d = cls(inner, [cap(MUL), cap(ADD)])
    e = cls(inner, [cap(ADD)])
    assert d.is_capability_finalized() and d.generated == 1
    assert d.operation_capabilities() == tuple(sorted([cap(MUL), cap(ADD)]))
    assert e.operation_capabilities() == (cap(ADD),)  # per instance, not per class
    d.capabilities = []  # later changes do not reach the frozen snapshot
    assert d.operation_capabilities("add") == (cap(ADD),) and d.generated == 1
    assert d.supports_operation_plan(ADD) and not e.supports_operation_plan(MUL)
    assert "has no capability" in e.unsupported_plan_reason(MUL)
    raises_exactly(RuntimeError, d.finalize_operation_capabilities)  # a second finalisation
    assert type(d) is cls and compact(d, 2).values() == [1.0, 2.0]


def test_dependent_queries_before_finalisation_are_runtime_errors():
    d = make_dependent_class()(sw.Generic([1.0], dtype=F32), [cap(ADD)], finalize=False)
    assert not d.is_capability_finalized()
    raises_exactly(RuntimeError, d.operation_capabilities)
    raises_exactly(RuntimeError, d.supports_operation_plan, ADD)


def test_invalid_generated_sets_publish_nothing():
    cls = make_dependent_class()
    inner = sw.Generic([1.0], dtype=F32)
    raises_exactly(TypeError, cls, inner, [cap(ADD), "add"])
    raises_exactly(TypeError, cls, inner, 42)
    raises_exactly(ValueError, cls, inner, [cap(ADD), cap(ADD)])
    raises_exactly(LookupError, cls, inner, LookupError("the device went away"))
    d = cls(inner, [cap(ADD)], finalize=False)
    d.capabilities = ValueError("not yet")
    raises_exactly(ValueError, d.finalize_operation_capabilities)
    assert not d.is_capability_finalized()
    d.capabilities = [cap(MUL)]
    d.finalize_operation_capabilities()  # a failed generation left it finalisable
    assert d.operation_capabilities() == (cap(MUL),)


def test_the_base_generator_is_not_implemented():
    class Bare(sw.DependentCarrier):
        def __init__(self):
            super().__init__(dtype=F32)
            self.finalize_operation_capabilities()

        def supports_storage_dtype(self, dtype):
            return dtype is F32

        def _storage_size(self):
            return 0

        def _read_slot(self, index):
            raise AssertionError

        def _write_slot(self, index, value):
            raise AssertionError

        def _release_storage(self):
            pass

    raises_exactly(NotImplementedError, Bare)


def test_finalising_from_inside_the_generator_is_a_runtime_error():
    cls = make_dependent_class()
    d = cls(sw.Generic([1.0], dtype=F32), [], finalize=False)
    cls._generate_operation_capabilities = lambda self: self.finalize_operation_capabilities() or []
    raises_exactly(RuntimeError, d.finalize_operation_capabilities)


def test_dependent_classes_are_their_own_exact_classes():
    a, b = make_dependent_class("DA"), make_dependent_class("DB")
    inner = sw.Generic([1.0], dtype=F32)
    x, y = a(inner, [cap(ADD)]), b(inner, [cap(ADD)])
    raises_exactly(TypeError, sw.add, compact(x, 1), compact(y, 1))
    raises_exactly(TypeError, sw.capabilities_for_carrier_class, a)  # no class-level set: each instance has one
