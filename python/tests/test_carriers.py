"""Carriers and version counters (core-concepts.md sections 1, 2 and 8)
through the shipped Generic and CPU."""

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly

SHIPPED = [sw.Generic, sw.CPU]


def make(cls, values, dtype):
    if cls is sw.Generic:
        return sw.Generic(values, dtype=dtype)
    c = sw.CPU(len(values), dtype=dtype)
    for i, v in enumerate(values):
        c[i] = v
    return c


@pytest.mark.parametrize("cls", SHIPPED)
def test_slot_sequence_access_and_errors(cls):
    c = make(cls, [1.5, 2.5], F32)
    assert c.size() == len(c) == 2 and c.dtype() is F32
    assert c[0] == c.get_value(0) == 1.5 and list(c) == [1.5, 2.5]
    c[1] = 4.0
    c.set_value(0, 3)  # an int is a real number: stored as Float32
    assert [c[0], c[1]] == [3.0, 4.0]
    raises_exactly(TypeError, c.get_value, 1.0)
    raises_exactly(TypeError, c.__getitem__, "0")
    raises_exactly(IndexError, c.get_value, 2)
    raises_exactly(IndexError, c.get_value, -1)
    raises_exactly(TypeError, c.set_value, 0, True)


@pytest.mark.parametrize("cls", SHIPPED)
def test_values_of_each_stored_dtype(cls):
    assert make(cls, [1, -2], I32)[1] == -2
    assert make(cls, [True, False], BOOL)[0] is True
    raises_exactly(TypeError, make, cls, [1.5], I32)
    raises_exactly(TypeError, make, cls, [1], BOOL)
    raises_exactly(OverflowError, make, cls, [2**31], I32)


@pytest.mark.parametrize("cls", SHIPPED)
def test_write_when_not_publicly_mutable_is_a_runtime_error(cls):
    c = sw.Generic([1.0], dtype=F32, mutable=False) if cls is sw.Generic else sw.CPU(1, mutable=False)
    assert not c.is_mutable() and not c.is_owned()
    raises_exactly(RuntimeError, c.set_value, 0, 2.0)
    assert c.version == 0


@pytest.mark.parametrize("cls", SHIPPED)
def test_supports_storage_dtype_is_identity_based(cls):
    c = make(cls, [1.0], F32)
    assert [c.supports_storage_dtype(d) for d in (F32, I32, BOOL)] == [True, True, True]
    assert not c.supports_storage_dtype(sw.DType.Float64)
    assert not c.supports_storage_dtype(sw.DType.Floating)
    raises_exactly(TypeError, c.supports_storage_dtype, "float32")


def test_constructors_reject_unsupported_and_non_dtypes():
    raises_exactly(ValueError, sw.Generic, [1.0], dtype=sw.DType.Float64)
    raises_exactly(ValueError, sw.CPU, 1, dtype=sw.DType.Floating)
    raises_exactly(TypeError, sw.CPU, 1, dtype="float32")
    raises_exactly(TypeError, sw.Generic, [1.0], dtype=None)
    raises_exactly(TypeError, sw.Generic, [1.0])  # dtype is required, keyword-only
    raises_exactly(ValueError, sw.CPU, -1)


def test_cpu_signature_and_empty():
    c = sw.CPU(3, dtype=I32, empty=False)
    assert [c[i] for i in range(3)] == [0, 0, 0]
    assert sw.CPU(4, empty=True).size() == 4
    raises_exactly(TypeError, sw.CPU, 1, mutable=1)


@pytest.mark.parametrize("cls", SHIPPED)
def test_new_like_and_allocate_like_keep_the_exact_class(cls):
    c = make(cls, [1.0], F32)
    n = c.new_like([1, 2], dtype=I32)
    assert type(n) is cls and n.dtype() is I32 and [n[0], n[1]] == [1, 2]
    a = c.allocate_like(3, mutable=False, dtype=BOOL)
    assert type(a) is cls and a.size() == 3 and not a.is_mutable() and a[2] is False
    raises_exactly(ValueError, c.new_like, [1.0], dtype=sw.DType.Float64)
    raises_exactly(TypeError, c.new_like, [1.5], dtype=I32)


@pytest.mark.parametrize("cls", SHIPPED)
def test_versions_count_successful_writes_only(cls):
    c = sw.Generic([0.0, 0.0], dtype=F32) if cls is sw.Generic else sw.CPU(2, dtype=F32)
    assert c.version == 0  # construction adds nothing
    c[0] = 1.0
    c.set_value(1, 2.0)
    assert c.version == 2
    raises_exactly(IndexError, c.set_value, 5, 1.0)
    raises_exactly(TypeError, c.set_value, 0, "x")
    assert c.version == 2
    c.allocate_like(2)
    c.release()
    assert c.version == 2


@pytest.mark.parametrize("cls", SHIPPED)
def test_release_is_permanent_and_idempotent(cls):
    c = make(cls, [1.0], F32)
    c.release()
    c.release()
    assert c.is_released()
    for access in (lambda: c.size(), lambda: c[0], lambda: c.set_value(0, 1.0)):
        raises_exactly(RuntimeError, access)
    assert c.dtype() is F32 and c.supports_storage_dtype(F32)
    assert type(c.new_like([2.0])) is cls  # new_like works on a released prototype


@pytest.mark.parametrize("cls", SHIPPED)
def test_carrier_scatter_maps_source_values_into_storage(cls):
    """core-concepts.md 1.7: source value i -> slot onto.offset + mapping_offset + mapping(i)."""
    dest = make(cls, [0.0] * 6, F32)
    src = sw.Tensor(make(cls, [1.0, 2.0, 3.0], F32), 0, sw.Layout(sw.Shape(3), sw.Stride(1)))
    onto = sw.Tensor(dest, 1, sw.Layout(sw.Shape(5), sw.Stride(1)))
    before = dest.version
    dest.scatter(src, onto, sw.Layout(sw.Shape(3), sw.Stride(2)))
    assert [dest[i] for i in range(6)] == [0.0, 1.0, 0.0, 2.0, 0.0, 3.0] and dest.version == before + 1
    raises_exactly(IndexError, dest.scatter, src, onto, sw.Layout(sw.Shape(3), sw.Stride(2)), 1)
    raises_exactly(ValueError, dest.scatter, src, onto, sw.Layout(sw.Shape(2), sw.Stride(1)))
    raises_exactly(ValueError, dest.scatter, src, src, sw.Layout(sw.Shape(3), sw.Stride(1)))
    raises_exactly(TypeError, dest.scatter, src, onto, "layout")
    raises_exactly(TypeError, dest.scatter, [1.0], onto, sw.Layout(sw.Shape(3), sw.Stride(1)))
    assert dest.version == before + 1


def test_shipped_carriers_are_closed_to_subclassing():
    for cls in SHIPPED:
        with pytest.raises(TypeError):
            type("Sub", (cls,), {})


def test_carrier_roots_are_abstract():
    raises_exactly(TypeError, sw.Carrier, dtype=F32)
    raises_exactly(TypeError, sw.DependentCarrier, dtype=F32)
