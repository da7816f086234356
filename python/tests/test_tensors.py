"""Tensor versus carrier (core-concepts.md section 4): construction and its
checks, what a tensor reads, views, element access and indexing."""

import gc
import weakref

import numpy as np
import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, make_carrier_class, raises_exactly


def test_construct_a_subtensor_over_a_carrier():
    c = sw.CPU(8)
    for i in range(8):
        c[i] = float(i)
    t = sw.Tensor(c, 1, sw.Layout(sw.Shape(2, 3), sw.Stride(1, 2)))
    assert t.carrier is c and t.offset == 1 and t.layout == sw.Layout(sw.Shape(2, 3), sw.Stride(1, 2))
    assert t.dtype() is F32 and t.size() == 6 and t.shape == sw.Shape(2, 3) and t.rank == 2
    assert t.carrier_type() is sw.CPU
    assert t.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
    assert t.values() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # logical order: first mode fastest
    assert t.at(1, 2) == 6.0 and t.at_ordinal(5) == 6.0


def test_construction_checks():
    c = sw.CPU(4)
    layout = sw.Layout.compact(sw.Shape(4))
    raises_exactly(TypeError, sw.Tensor, "carrier", 0, layout)
    raises_exactly(TypeError, sw.Tensor, c, 0.0, layout)
    raises_exactly(TypeError, sw.Tensor, c, True, layout)
    raises_exactly(TypeError, sw.Tensor, c, 0, sw.Shape(4))
    raises_exactly(ValueError, sw.Tensor, c, -1, layout)
    raises_exactly(ValueError, sw.Tensor, c, 1, layout)  # offset + cosize > size
    c.release()
    raises_exactly(RuntimeError, sw.Tensor, c, 0, layout)


def test_a_tensor_keeps_its_carrier_alive_and_never_releases_it():
    c = sw.CPU(2)
    ref = weakref.ref(c)
    t = sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(2)))
    del c
    gc.collect()
    assert ref() is not None
    view = t.slice(0, 1, 2)
    del t
    gc.collect()
    assert not view.carrier.is_released()


def test_many_tensors_and_views_share_one_carrier():
    t = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = t.permute(1, 0)
    assert v.carrier is t.carrier
    t.carrier[0] = 10.0
    assert v.at(0, 0) == 10.0


def test_views():
    t = sw.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.permute(1, 0).tolist() == [[1, 4], [2, 5], [3, 6]]
    assert t.slice(1, 0, 3, 2).tolist() == [[1, 3], [4, 6]]
    assert t.reshape(3, 2).shape.extents == (3, 2) and t.reshape(sw.Shape(6)).size() == 6
    assert t.unsqueeze(0).shape.extents == (1, 2, 3)
    assert t.unsqueeze(0).squeeze().shape.extents == (2, 3)
    assert t.slice(0, 0, 1).squeeze(0).tolist() == [1, 2, 3]
    b = sw.tensor([1.0, 2.0]).broadcast_to(sw.Shape(3, 2))
    assert b.tolist() == [[1.0, 2.0]] * 3 and not b.layout.is_injective
    s = t.as_strided(sw.Layout(sw.Shape(2), sw.Stride(2)), 1)
    assert s.carrier is t.carrier and s.offset == 1
    raises_exactly(ValueError, t.permute, 0, 0)
    raises_exactly(ValueError, t.reshape, 4)


def test_basic_indexing_makes_views():
    t = sw.tensor([[1, 2, 3], [4, 5, 6]])
    assert t[1].tolist() == [4, 5, 6] and t[-1].tolist() == [4, 5, 6]
    assert t[:, 0].tolist() == [1, 4] and t[0, 1:].tolist() == [2, 3]
    assert t[..., 2].tolist() == [3, 6] and t[None].shape.extents == (1, 2, 3)
    assert t[0, 0].shape.rank == 0 and t[0, 0].item() == 1
    assert t[1].carrier is t.carrier
    assert [row.tolist() for row in t] == [[1, 2, 3], [4, 5, 6]]
    raises_exactly(IndexError, t.__getitem__, 2)
    raises_exactly(IndexError, t.__getitem__, (0, 0, 0))
    raises_exactly(ValueError, t.__getitem__, slice(None, None, -1))
    raises_exactly(TypeError, t.__getitem__, 1.5)


def test_core_concepts_4_4_indexing_a_tensor_empty_in_another_axis():
    # Found by test_properties.py: t[1] of a (2, 0) tensor was a ValueError
    # (offset 1 past the end of the empty carrier); numpy gives shape (0,).
    t = sw.tensor(np.zeros((2, 0), np.float32))
    assert t[1].shape == sw.Shape(0) and t[1].offset == 0
    assert t.slice(0, 1, 2).shape == sw.Shape(1, 0)
    assert sw.tensor(np.zeros((3, 0, 2), np.int32))[:, :, 1].shape == sw.Shape(3, 0)


def test_item_bool_len_and_conversions():
    one = sw.tensor([2.5])
    assert one.item() == 2.5 and float(one) == 2.5 and bool(one)
    assert int(sw.tensor([3])) == 3 and len(sw.tensor([[1, 2]])) == 1
    raises_exactly(ValueError, sw.tensor([1.0, 2.0]).item)
    raises_exactly(ValueError, bool, sw.tensor([1.0, 2.0]))
    raises_exactly(TypeError, len, sw.tensor(1.0))


def test_set_writes_one_element_through_the_carriers_versioned_write():
    t = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    t.set((1, 0), 9.0)
    assert t.tolist() == [[1.0, 2.0], [9.0, 4.0]] and t.carrier.version == 1


def test_tensor_from_python_data():
    assert sw.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert sw.tensor([1, 2]).dtype() is I32 and sw.tensor([True]).dtype() is BOOL
    assert sw.tensor([1, 2.5]).dtype() is F32 and sw.tensor(3.0).shape.rank == 0
    assert sw.tensor([1, 2], dtype=F32).tolist() == [1.0, 2.0]
    assert type(sw.tensor([1.0], carrier=sw.Generic).carrier) is sw.Generic
    raises_exactly(ValueError, sw.tensor, [[1, 2], [3]])
    raises_exactly(TypeError, sw.tensor, [True, 1])
    raises_exactly(TypeError, sw.tensor, [1.5], dtype=I32)
    raises_exactly(OverflowError, sw.tensor, [2**31])
    raises_exactly(TypeError, sw.tensor, ["a"])


def test_tensor_from_data_on_a_python_carrier_prototype():
    cls = make_carrier_class()
    t = sw.tensor([[1.0, 2.0]], carrier=cls([0.0]))
    assert type(t.carrier) is cls and t.tolist() == [[1.0, 2.0]]


def test_printing():
    assert repr(sw.tensor([[1.0, 2.0], [3.0, 4.5]])) == "tensor([[1.0, 2.0], [3.0, 4.5]], dtype=float32, carrier=CPU)"


def test_tensors_hash_by_identity_because_comparisons_are_elementwise():
    a, b = sw.tensor([1.0]), sw.tensor([1.0])
    assert len({a, b}) == 2
    assert (a == b).tolist() == [True]


def test_python_numbers_stored_as_float32_round_once_to_nearest_even():
    # An int rounds directly (through a double it would round twice: 2**60 +
    # 2**36 + 1 would become 2**60); beyond the float range a value becomes
    # +-inf as IEEE rounding says, never an undefined cast.
    assert sw.tensor([2**60 + 2**36 + 1], dtype=F32).item() == float(2**60 + 2**37)
    assert sw.tensor([1e300, -1e300]).tolist() == [float("inf"), float("-inf")]
    assert sw.tensor([2**200, -(2**200)], dtype=F32).tolist() == [float("inf"), float("-inf")]
    flt_max = 3.4028234663852886e38
    assert sw.tensor([flt_max + 2.0**102]).item() == flt_max  # below FLT_MAX + half an ulp
    assert sw.tensor([flt_max + 2.0**103]).item() == float("inf")  # the tie rounds to even: infinity
    c = sw.CPU(1)
    c[0] = 2**60 + 2**36 + 1
    assert c[0] == float(2**60 + 2**37)


def test_slice_bounds_are_read_as_python_reads_them():
    # Issue 20 step 9: t[key] converts the key for the C++ index(); a slice's
    # bounds go through PySlice_Unpack, so bounds beyond 64 bits clamp and
    # bools are integers, as for a list.
    t = sw.tensor([1.0, 2.0, 3.0])
    data = [1.0, 2.0, 3.0]
    for key in (slice(None, 2**64), slice(-10**30, None), slice(True, None), slice(None, None, 2**70)):
        assert t[key].tolist() == data[key]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
