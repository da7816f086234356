"""Objects of bound classes whose __init__ never ran or failed
(docs/python.md, "Uninitialised objects").

Python can always make such an object: Cls.__new__(Cls), a subclass whose
__init__ raises before super().__init__() (after storing self somewhere),
a carrier whose construction failed. Every method, property and operator of
every bound class, and every function of the package, refuses one with a
TypeError (repr() and str() describe it instead); none may crash. The bound
classes are found by walking the extension module and the garbage
collector's list of pybind11 types, so a class added later is covered
without being listed here.
"""

import gc
import inspect

import numpy as np
import pytest

import strideweave as sw
import strideweave._core as core
from conftest import F32, I32, raises_exactly

PYBIND_METACLASS = type(sw.Tensor)
UNINITIALISED = "is not initialised"


def _bound_classes():
    found = {}
    candidates = [v for v in vars(core).values() if isinstance(v, type)]
    candidates += [o for o in gc.get_objects() if isinstance(o, type)]
    for cls in candidates:
        if type(cls) is PYBIND_METACLASS and cls.__module__.startswith("strideweave"):
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


BOUND_CLASSES = _bound_classes()
CORE_FUNCTIONS = sorted((v for v in vars(core).values() if inspect.isbuiltin(v)), key=lambda f: f.__name__)


def _subclass(cls):
    """A Python subclass of cls, or None when cls is final."""
    try:
        return type("Sub" + cls.__name__, (cls,), {})
    except TypeError:
        return None


def _variants(cls):
    sub = _subclass(cls)
    return [cls] if sub is None else [cls, sub]


def _is_bound_function(f):
    """A function pybind11 made, bare or wrapped as an instancemethod (a
    def_readonly getter is one)."""
    return inspect.isbuiltin(f) or type(f).__name__ == "instancemethod"


def _bound_members(cls):
    """(name, kind) of every function pybind11 bound on cls or a bound base."""
    members = []
    for name in sorted(dir(cls)):
        if name in ("__init__", "__new__"):
            continue
        raw = inspect.getattr_static(cls, name, None)
        if type(raw).__name__ == "instancemethod":
            members.append((name, "method"))
        elif type(raw) is property and _is_bound_function(raw.fget):  # not a class-level static property
            members.append((name, "property"))
        elif isinstance(raw, staticmethod) and inspect.isbuiltin(raw.__func__):
            members.append((name, "static"))
    return members


def _refuses(call):
    """call() raises a TypeError (an operator whose arguments do not match
    may return NotImplemented instead, as pybind11 operators do)."""
    try:
        result = call()
    except TypeError as e:
        return e
    assert result is NotImplemented, f"returned {result!r}"
    return None


def test_the_walk_finds_the_bound_classes():
    names = {c.__name__ for c in BOUND_CLASSES}
    assert {"Tensor", "Carrier", "DependentCarrier", "CPU", "Generic", "Layout", "Shape", "DType", "OperationPlan",
            "OperationCapability", "MoveOperation", "AwaitMove", "ResultSpec", "KernelPack", "Output"} <= names
    assert len(CORE_FUNCTIONS) > 50


@pytest.mark.parametrize("cls", BOUND_CLASSES, ids=lambda c: c.__qualname__)
def test_python_md_uninitialised_instance_of_every_bound_class_raises_type_error(cls):
    for variant in _variants(cls):
        obj = variant.__new__(variant)
        members = _bound_members(variant)
        # A bound __repr__/__str__ says what the object is; without one,
        # Python's default applies.
        for name, describe in (("__repr__", repr), ("__str__", str)):
            text = describe(obj)
            if (name, "method") in members:
                assert "not initialised" in text, text
        for name, kind in members:
            if name in ("__repr__", "__str__"):
                continue
            if kind == "property":
                with pytest.raises(TypeError, match=UNINITIALISED):
                    getattr(obj, name)
                continue
            method = getattr(obj, name)
            if kind == "static":
                _refuses(lambda: method(obj))
                continue
            for args in ((), (0,), (obj,), (None,), (0, 0), (obj, obj), (1.5,), ("x",)):
                _refuses(lambda: method(*args))
            # A call that matches the signature reaches the check itself.
            error = _refuses(lambda: method(obj))
            if error is not None:
                assert name in str(error) or "incompatible function arguments" in str(error), str(error)


@pytest.mark.parametrize("cls", BOUND_CLASSES, ids=lambda c: c.__qualname__)
def test_python_md_every_function_refuses_an_uninitialised_argument(cls):
    obj = cls.__new__(cls)
    t = sw.tensor([1.0, 2.0])
    for f in CORE_FUNCTIONS:
        for args, kwargs in (((obj,), {}), ((obj, obj), {}), ((t, obj), {}), ((t,), {"out": obj}),
                             ((t, t), {"options": obj})):
            raises_exactly(TypeError, f, *args, **kwargs)


@pytest.mark.parametrize("cls", BOUND_CLASSES, ids=lambda c: c.__qualname__)
def test_python_md_methods_of_live_objects_refuse_an_uninitialised_argument(cls):
    obj = cls.__new__(cls)
    live = [sw.tensor([[1.0, 2.0]]), sw.CPU(2), sw.Layout.compact(sw.Shape(2)), sw.Shape(2, 3), F32,
            sw.resolve_operation_plan("add", F32, F32), sw.Generic([1], dtype=I32)]
    for target in live:
        for name, kind in _bound_members(type(target)):
            if kind != "method":
                continue
            method = getattr(target, name)
            for args in ((obj,), (obj, obj), (0, obj)):
                _refuses(lambda: method(*args))
    assert live[0].tolist() == [[1.0, 2.0]] and live[1].version == 0


def test_python_md_carrier_subclass_repr_without_init():
    class My(sw.Carrier):
        pass

    obj = My.__new__(My)
    assert repr(obj).startswith("<") and "not initialised" in repr(obj)
    raises_exactly(TypeError, obj.size, match=UNINITIALISED)
    raises_exactly(TypeError, sw.Tensor, obj, 0, sw.Layout.compact(sw.Shape(1)), match=UNINITIALISED)
    raises_exactly(TypeError, sw.tensor, [1.0], carrier=obj)


def test_python_md_dependent_carrier_subclass_repr_without_init():
    class MyDependent(sw.DependentCarrier):
        pass

    obj = MyDependent.__new__(MyDependent)
    assert "not initialised" in repr(obj)
    for method in (obj.size, obj.dtype, obj.is_capability_finalized, obj.finalize_operation_capabilities,
                   obj.operation_capabilities, obj.release):
        raises_exactly(TypeError, method, match=UNINITIALISED)


def test_python_md_an_init_that_raises_before_super_init_leaves_a_refusing_object():
    escaped = []

    class Failing(sw.Carrier):
        def __init__(self):
            escaped.append(self)
            raise ValueError("before super().__init__()")

        def supports_storage_dtype(self, dtype):
            return True

    with pytest.raises(ValueError, match="before super"):
        Failing()
    (obj,) = escaped
    raises_exactly(TypeError, obj.get_value, 0, match=UNINITIALISED)
    raises_exactly(TypeError, lambda: obj.version, match=UNINITIALISED)
    assert "not initialised" in repr(obj)


def test_python_md_a_definition_free_carrier_whose_super_init_fails_refuses_every_method():
    escaped = []

    class Unsupported(sw.Carrier):
        def __init__(self):
            escaped.append(self)
            super().__init__(dtype=I32)

        def supports_storage_dtype(self, dtype):
            return dtype is F32

        def _storage_size(self):
            return 0

        def _read_slot(self, index):
            return 0.0

        def _write_slot(self, index, value):
            pass

        def _release_storage(self):
            pass

    raises_exactly(ValueError, Unsupported, match="not a supported storage dtype")
    (obj,) = escaped
    raises_exactly(TypeError, obj.size, match=UNINITIALISED)
    raises_exactly(TypeError, obj.supports_operation_plan, sw.resolve_operation_plan("add", F32, F32))


def test_python_md_a_definition_backed_carrier_whose_construction_failed_refuses_every_method():
    from strideweave.carriers.extension import CarrierDefinition, StorageProvider, register_carrier_definition

    seen = []

    class Backed(sw.Carrier):
        pass

    def allocate(carrier, slots):
        seen.append(carrier)
        raise MemoryError("no storage today")

    storage = StorageProvider(supports_dtype=lambda c, d: True, physical_size=lambda c: 0, allocate=allocate,
                              release=lambda c: None, read=lambda c, i: 0.0, write=lambda c, i, v: None)
    register_carrier_definition(Backed, CarrierDefinition(storage))
    with pytest.raises(MemoryError):
        Backed(2, dtype=F32)
    (obj,) = seen
    assert "not initialised" in repr(obj)
    raises_exactly(TypeError, obj.size, match=UNINITIALISED)
    raises_exactly(TypeError, obj.get_value, 0, match=UNINITIALISED)


def test_python_md_init_on_an_uninitialised_object_initialises_it():
    s = sw.Shape.__new__(sw.Shape)
    raises_exactly(TypeError, lambda: s.size, match=UNINITIALISED)
    s.__init__(2, 3)
    assert s.size == 6 and s == sw.Shape(2, 3)
    t = sw.Tensor.__new__(sw.Tensor)
    t.__init__(sw.CPU(2), 0, sw.Layout.compact(sw.Shape(2)))
    assert t.tolist() == [0.0, 0.0]
    assert np.asarray(t).shape == (2,)


def test_python_md_buffer_and_dlpack_export_of_an_uninitialised_tensor():
    t = sw.Tensor.__new__(sw.Tensor)
    with pytest.raises(TypeError, match="never initialised"):
        memoryview(t)
    with pytest.raises(TypeError):
        np.from_dlpack(t)
    raises_exactly(TypeError, t.__dlpack__, match=UNINITIALISED)
    raises_exactly(TypeError, sw.asarray, t)
