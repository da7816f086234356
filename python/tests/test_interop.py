"""numpy interop without copies (issue 12, item 5; core-concepts.md 7.5):
the buffer protocol and DLPack export of CPU tensors, strideweave.asarray
over numpy memory, numpy.asarray(tensor)."""

import ctypes
import gc
import sys
import weakref

import numpy as np
import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly


def address(array):
    return array.__array_interface__["data"][0]


PyBUF_WRITABLE, PyBUF_STRIDES, PyBUF_C_CONTIGUOUS = 0x1, 0x18, 0x38


def request_buffer(obj, flags):
    """What a C consumer asking for `flags` gets: PyObject_GetBuffer, then
    PyBuffer_Release (Python-level consumers rewrite BufferError)."""
    view = (ctypes.c_char * 256)()  # larger than a Py_buffer
    api = ctypes.pythonapi
    api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.c_void_p, ctypes.c_int]
    api.PyBuffer_Release.argtypes = [ctypes.c_void_p]
    api.PyObject_GetBuffer(obj, view, flags)  # raises what the exporter raised
    api.PyBuffer_Release(view)


# ---- export: numpy views a CPU tensor's memory


@pytest.mark.parametrize(
    "values, dtype, np_dtype",
    [([[1.5, 0.0, 1.0], [0.0, 1.0, 2.0]], F32, np.float32), ([[1, 0, 1], [0, 1, 2]], I32, np.int32),
     ([[True, False, True], [False, True, True]], BOOL, np.bool_)],
)
def test_numpy_asarray_of_a_cpu_tensor_is_a_view_of_its_memory(values, dtype, np_dtype):
    t = sw.tensor(values, dtype=dtype)
    a = np.asarray(t)
    assert a.dtype == np_dtype and a.shape == (2, 3) and a.tolist() == values
    # The canonical compact layout is first mode fastest (docs/layout.md), so
    # the exported array is Fortran-ordered.
    assert a.flags.f_contiguous and address(a) == address(np.asarray(t))
    a[1, 0] = a[0, 0]  # a write through the view is seen by the tensor: no copy was made
    assert t.at(1, 0) == values[0][0] and t.carrier.get_value(1) == values[0][0]


def test_strided_views_export_their_strides_without_copying():
    t = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    tt = t.permute(1, 0)
    a = np.asarray(tt)
    assert a.shape == (3, 2) and a.tolist() == tt.tolist()
    assert a.strides == (8, 4) and a.flags.c_contiguous and np.shares_memory(a, np.asarray(t))
    s = t[:, ::2]
    assert np.asarray(s).tolist() == [[1.0, 3.0], [4.0, 6.0]]
    assert np.asarray(t[1]).tolist() == [4.0, 5.0, 6.0]  # offset honoured
    assert np.asarray(sw.tensor(2.5)).shape == ()  # rank 0


def test_broadcast_and_immutable_views_are_read_only():
    t = sw.tensor([1.0, 2.0])
    wide = t.broadcast_to(sw.Shape(3, 2))
    a = np.asarray(wide)
    assert a.tolist() == [[1.0, 2.0]] * 3 and not a.flags.writeable
    frozen = sw.Tensor(sw.CPU(2, mutable=False), 0, sw.Layout.compact(sw.Shape(2)))
    assert not np.asarray(frozen).flags.writeable
    # A consumer that asks for writable memory:
    raises_exactly(BufferError, request_buffer, frozen, PyBUF_WRITABLE | PyBUF_STRIDES)
    raises_exactly(BufferError, request_buffer, wide, PyBUF_WRITABLE | PyBUF_STRIDES)
    request_buffer(t, PyBUF_WRITABLE | PyBUF_STRIDES)


def test_memoryview_reports_format_and_contiguity():
    t = sw.tensor([[1, 2], [3, 4]])
    m = memoryview(t)
    assert m.format == "i" and m.itemsize == 4 and m.shape == (2, 2) and m.strides == (4, 8)
    assert m.f_contiguous and not m.c_contiguous
    m.release()
    transposed = t.permute(1, 0)
    assert memoryview(transposed).c_contiguous
    # A consumer that needs C-contiguous memory (no strides) is refused for
    # another layout rather than handed wrongly ordered bytes.
    raises_exactly(BufferError, request_buffer, t, PyBUF_C_CONTIGUOUS)
    raises_exactly(BufferError, request_buffer, t, 0)  # PyBUF_SIMPLE: plain bytes in C order
    request_buffer(transposed, PyBUF_C_CONTIGUOUS)


def test_other_carriers_export_nothing():
    g = sw.tensor([1.0, 2.0], carrier=sw.Generic)
    raises_exactly(BufferError, memoryview, g)
    raises_exactly(BufferError, g.__dlpack__)
    raises_exactly(BufferError, g.__dlpack_device__)


def test_release_is_refused_while_a_view_is_alive():
    t = sw.tensor([1.0, 2.0])
    a = np.asarray(t)
    raises_exactly(BufferError, t.carrier.release)
    assert not t.carrier.is_released() and a.tolist() == [1.0, 2.0]
    del a
    gc.collect()
    t.carrier.release()
    assert t.carrier.is_released()
    raises_exactly(RuntimeError, memoryview, t)


# ---- DLPack


@pytest.mark.parametrize("dtype, np_dtype", [(F32, np.float32), (I32, np.int32)])
def test_dlpack_export_is_zero_copy(dtype, np_dtype):
    t = sw.tensor([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    assert t.__dlpack_device__() == (1, 0)
    capsule = t.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    del capsule  # an unconsumed capsule frees its export
    gc.collect()
    t.carrier.version  # still alive
    if not hasattr(np, "from_dlpack"):
        pytest.skip("this numpy has no from_dlpack")
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype and a.tolist() == t.tolist() and a.flags.f_contiguous
    t.set((0, 0), 7)  # numpy marks DLPack imports read-only; writes through the tensor show
    assert a[0, 0] == 7
    raises_exactly(BufferError, t.carrier.release)
    del a
    gc.collect()
    t.carrier.release()


def test_dlpack_refuses_bool_but_reports_its_device():
    # interop-movement "Only Float32 and Int32 logical dtypes are exportable";
    # "Report a device for a non-exportable dtype".
    b = sw.tensor([True])
    assert b.__dlpack_device__() == (1, 0)
    raises_exactly(BufferError, b.__dlpack__)


def test_dlpack_arguments():
    # interop-movement "Export is zero-copy, same-device, and stream-agnostic"
    # and "DLPack export produces version 1.0 or the legacy structure".
    t = sw.tensor([1.0, 2.0])
    for capsule in (t.__dlpack__(1), t.__dlpack__(stream=object()), t.__dlpack__(copy=False),
                    t.__dlpack__(dl_device=(1, 0)), t.__dlpack__(dl_device=[1, 0])):
        assert type(capsule).__name__ == "PyCapsule"
    raises_exactly(BufferError, t.__dlpack__, copy=True)
    raises_exactly(BufferError, t.__dlpack__, dl_device=(2, 0))
    raises_exactly(TypeError, t.__dlpack__, dl_device=1)
    raises_exactly(ValueError, t.__dlpack__, dl_device=(1, 0, 0))
    raises_exactly(TypeError, t.__dlpack__, max_version=1)
    raises_exactly(ValueError, t.__dlpack__, max_version=(1,))
    raises_exactly(ValueError, t.__dlpack__, max_version=(1, -1))
    assert type(t.__dlpack__(max_version=(0, 8))).__name__ == "PyCapsule"


@pytest.mark.skipif(not hasattr(np, "from_dlpack"), reason="this numpy has no from_dlpack")
def test_dlpack_numpy_sees_offsets_leaf_modes_and_broadcasts_without_a_copy():
    # interop-movement "The exported buffer describes the layout's flattened
    # leaf modes": byte_offset selects the window, nested modes flatten,
    # stride-0 modes stay 0; export changes no version.
    c = sw.CPU(32, dtype=I32)
    for i in range(32):
        c[i] = i
    t = sw.Tensor(c, 5, sw.Layout(sw.Shape((2, 3), 4), sw.Stride((1, 2), 0)))
    before = c.version
    a = np.from_dlpack(t)
    assert c.version == before  # export changes no version
    assert a.shape == (2, 3, 4) and a.strides == (4, 8, 0)
    assert a[1, 2, 3] == 5 + 1 + 4 and a[0, 0, 0] == 5
    c[5] = 100  # the same memory
    assert a[0, 0, 2] == 100
    assert c.version == before + 1  # only the carrier's own write counted
    del a
    gc.collect()


def test_dlpack_non_cpu_carriers_are_refused_for_both_calls():
    # interop-movement "Reject a non-exporting carrier" (FileBacked here;
    # BlockDeviceCarrier in tests/carriers/test_dlpack.cpp).
    f = sw.FileBacked(dtype=F32, size=2)
    t = sw.Tensor(f, 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    raises_exactly(BufferError, t.__dlpack__)
    raises_exactly(BufferError, t.__dlpack_device__)


# ---- import: a CPU carrier over numpy memory


@pytest.mark.parametrize("np_dtype, dtype", [(np.float32, F32), (np.int32, I32), (np.bool_, BOOL)])
def test_asarray_wraps_numpy_memory_without_a_copy(np_dtype, dtype):
    a = np.arange(6).reshape(2, 3).astype(np_dtype)
    t = sw.asarray(a)
    assert type(t.carrier) is sw.CPU and t.dtype() is dtype and t.tolist() == a.tolist()
    a[0, 1] = 0
    assert t.at(0, 1) == a[0, 1]
    assert np.shares_memory(np.asarray(t), a) and address(np.asarray(t)) == address(a)


def test_asarray_keeps_the_array_alive_and_follows_its_strides():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ref = weakref.ref(base := a.base if a.base is not None else a)
    view = a[::2, 1::2]
    t = sw.asarray(view)
    assert t.tolist() == view.tolist() and t.layout.stride.modes == (8, 2)
    del a, view, base
    gc.collect()
    assert ref() is not None  # the carrier keeps the exporter alive
    assert sw.add(t, t).tolist() == [[2.0, 6.0], [18.0, 22.0]]
    del t
    gc.collect()
    assert ref() is None  # and lets it go with the carrier


def test_asarray_of_a_read_only_array_is_an_immutable_carrier():
    a = np.ones(3, dtype=np.float32)
    a.flags.writeable = False
    t = sw.asarray(a)
    assert not t.carrier.is_mutable()
    raises_exactly(RuntimeError, t.carrier.set_value, 0, 2.0)


def test_asarray_refuses_what_it_cannot_wrap():
    raises_exactly(ValueError, sw.asarray, np.ones(2, dtype=np.float64))
    raises_exactly(ValueError, sw.asarray, np.ones(2, dtype=np.float32)[::-1])
    raises_exactly(TypeError, sw.asarray, [1.0, 2.0])
    t = sw.tensor([1.0])
    assert sw.asarray(t) is t


def test_round_trip_numpy_to_tensor_to_numpy_shares_one_buffer():
    a = np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4)
    back = np.asarray(sw.asarray(a))
    assert np.shares_memory(a, back) and (back == a).all()
    b = np.asarray(sw.exp(sw.asarray(a)))  # a result is CPU memory numpy views
    assert np.allclose(b, np.exp(a), rtol=1e-6)


def test_refcounts_return_to_where_they_were():
    a = np.ones(4, dtype=np.float32)
    before = sys.getrefcount(a)
    t = sw.asarray(a)
    m = np.asarray(t)
    del t, m
    gc.collect()
    assert sys.getrefcount(a) == before
