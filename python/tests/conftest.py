"""Shared helpers of the pytest suite (python/tests/, run by CTest as
`python_pytest`; docs/python.md, "Tests").

Carrier classes are sealed on first observation (backend-capabilities.md),
so every test that needs a custom carrier makes fresh classes with
make_carrier_class() instead of sharing one.
"""

import time

import pytest

import strideweave as sw

F32 = sw.DType.Float32
I32 = sw.DType.Int32
BOOL = sw.DType.Bool


# Every wait in the suite is bounded: a wait whose condition never comes (a
# thread that died before a barrier, a completion that never settles) fails
# with a message after HANG_DEADLINE seconds instead of hanging the run. The
# bound only catches a hang; it is no timing threshold.
HANG_DEADLINE = 120.0


def join_bounded(threads, what):
    """Joins every thread within HANG_DEADLINE seconds in all; fails naming
    `what` when one is still running."""
    deadline = time.monotonic() + HANG_DEADLINE
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = sum(t.is_alive() for t in threads)
    assert alive == 0, f"{alive} thread(s) still running after {HANG_DEADLINE:.0f} s: {what}"


def raises_exactly(error_type, function, *args, match=None, **kwargs):
    """Calls function(*args, **kwargs) and checks that it raises exactly
    `error_type` (not a subclass: the analogue of the C++ suite's
    EXPECT_THROW_EXACTLY). Returns the exception."""
    with pytest.raises(BaseException, match=match) as info:
        function(*args, **kwargs)
    assert type(info.value) is error_type, f"raised {type(info.value).__name__}: {info.value}"
    return info.value


class ListStorage:
    """The storage hooks of a definition-free Python carrier over a list
    (mixed into the classes make_carrier_class makes). Counts every hook
    call, so tests can prove that a refused call did no storage work."""

    stored = (F32, I32, BOOL)

    def _init_storage(self, values):
        self.slots = list(values)
        self.calls = {"_read_slot": 0, "_write_slot": 0, "_make_like": 0, "_release_storage": 0}

    def supports_storage_dtype(self, dtype):
        return any(dtype is d for d in self.stored)

    def _storage_size(self):
        return len(self.slots)

    def _read_slot(self, index):
        self.calls["_read_slot"] += 1
        return self.slots[index]

    def _write_slot(self, index, value):
        self.calls["_write_slot"] += 1
        self.slots[index] = value

    def _release_storage(self):
        self.calls["_release_storage"] += 1
        self.slots = []

    def _make_like(self, size, mutable, dtype, empty):
        self.calls["_make_like"] += 1
        zero = sw.storage_zero(dtype)
        return type(self)([zero] * size, dtype=dtype, mutable=mutable)


def make_carrier_class(name="ListCarrier", base=None):
    """A fresh definition-free Python Carrier class storing a list."""
    base = base or sw.Carrier

    def __init__(self, values=(), *, dtype=F32, mutable=True):
        self._init_storage(values)
        base.__init__(self, dtype=dtype, mutable=mutable)

    return type(name, (ListStorage, base), {"__init__": __init__})


def make_dependent_class(name="Pair"):
    """A fresh definition-free Python DependentCarrier class: its storage is
    one inner carrier, its capabilities whatever the instance was given."""

    class Dependent(sw.DependentCarrier):
        def __init__(self, inner, capabilities, *, finalize=True):
            self.inner = inner
            self.capabilities = capabilities
            self.generated = 0
            super().__init__(dtype=inner.dtype(), mutable=True)
            if finalize:
                self.finalize_operation_capabilities()

        def supports_storage_dtype(self, dtype):
            return self.inner.supports_storage_dtype(dtype)

        def _storage_size(self):
            return self.inner.size()

        def _read_slot(self, index):
            return self.inner[index]

        def _write_slot(self, index, value):
            self.inner[index] = value

        def _release_storage(self):
            pass

        def _generate_operation_capabilities(self):
            self.generated += 1
            if isinstance(self.capabilities, BaseException):
                raise self.capabilities
            return self.capabilities

    Dependent.__name__ = Dependent.__qualname__ = name
    return Dependent


def cpu_tensor(values, dtype=F32):
    """A compact 1-D CPU tensor."""
    return sw.tensor(list(values), dtype=dtype)


def plan(operation, *operands, **kwargs):
    return sw.resolve_operation_plan(operation, *operands, **kwargs)
