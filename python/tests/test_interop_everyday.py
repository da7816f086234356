"""Issue 21, step 3: interop both ways (docs/python.md, "numpy interop",
"Pickling"): from_dlpack and asarray over DLPack producers, __array__ that
refuses carriers numpy cannot view, numpy ufuncs and operators with ndarrays
giving strideweave tensors, and pickling / deep copies of tensors, layouts
and plans."""

import copy
import pickle

import numpy as np
import pytest

import strideweave as sw


class DlpackOnly:
    """A producer with __dlpack__ and no buffer protocol (as torch tensors)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_issue21_step3_from_dlpack_is_zero_copy(dtype):
    base = np.arange(12, dtype=dtype).reshape(3, 4)
    view = base[:, ::2]
    t = sw.from_dlpack(view)
    assert t.tolist() == view.tolist() and t.carrier_type() is sw.CPU
    base[0, 0] = 7  # the same memory
    assert t.at(0, 0) == 7
    producer = DlpackOnly(np.arange(4, dtype=dtype))
    a = sw.asarray(producer)  # no buffer protocol: through DLPack
    assert a.tolist() == [0, 1, 2, 3]
    del producer
    assert a.tolist() == [0, 1, 2, 3]  # the producer's memory lives as long as the tensor


def test_issue21_step3_from_dlpack_refuses_what_it_cannot_hold():
    with pytest.raises(ValueError, match="storage dtype"):
        sw.from_dlpack(np.arange(3, dtype=np.float64))
    with pytest.raises(TypeError, match="__dlpack__"):
        sw.from_dlpack([1.0, 2.0])

    class OnDevice(DlpackOnly):
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(BufferError, match="CPU"):
        sw.from_dlpack(OnDevice(np.arange(3, dtype=np.float32)))


def test_issue21_step3_numpy_cannot_view_other_carriers():
    assert np.asarray(sw.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]
    assert np.asarray(sw.tensor([1.0, 2.0]), dtype=np.float64).dtype == np.float64
    g = sw.tensor([1.0, 2.0], carrier=sw.Generic)
    with pytest.raises(TypeError, match="copy_to"):
        np.asarray(g)  # never an object array of rank-0 tensors
    assert np.asarray(g.copy_to(sw.CPU)).tolist() == [1.0, 2.0]


def test_issue21_step3_ndarrays_beside_tensors_give_tensors():
    t = sw.tensor([1.0, 2.0, 3.0])
    n = np.array([10.0, 20.0, 30.0], np.float32)
    for result in (t + n, n + t, np.add(t, n), n * t, t - n, n / t):
        assert isinstance(result, sw.Tensor)
    np.testing.assert_array_equal(np.asarray(n - t), n - np.asarray(t))
    np.testing.assert_allclose(np.asarray(np.exp(t)), np.exp(np.asarray(t)), rtol=1e-6)  # expf within ulps
    np.testing.assert_array_equal(np.asarray(np.greater(t, n[::-1] / 15)), [False, True, True])  # 1>2, 2>1.33, 3>0.67
    assert isinstance(np.sqrt(t), sw.Tensor)
    with pytest.raises(TypeError):
        np.arctan2(t, n)  # no registered operation of that meaning: numpy's TypeError


def test_issue21_step3_pickle_and_deepcopy():
    for t in (sw.tensor([[1.0, 2.0], [3.0, 4.0]]).T, sw.tensor([1, 2], carrier=sw.Generic),
              sw.tensor([True, False]), sw.tensor(2.5), sw.zeros(0, 3)):
        back = pickle.loads(pickle.dumps(t))
        assert back.tolist() == t.tolist() and back.dtype() is t.dtype() and back.shape == t.shape
        assert back.carrier_type() is t.carrier_type() and back.carrier is not t.carrier
        deep = copy.deepcopy(t)
        assert deep.tolist() == t.tolist() and deep.carrier is not t.carrier and deep.is_leaf
    with pytest.raises(TypeError, match="copy_to"):
        pickle.dumps(sw.tensor([1.0]).copy_to(sw.FileBacked(dtype=sw.DType.Float32)))
    layout = sw.Layout(sw.Shape(2, (3, 4)), sw.Stride(1, (2, 6)))
    assert pickle.loads(pickle.dumps(layout)) == layout and copy.deepcopy(layout) == layout
    plan = sw.resolve_operation_plan("add", sw.DType.Float32, sw.DType.Int32)
    assert pickle.loads(pickle.dumps(plan)) == plan and copy.deepcopy(plan) == plan
    assert pickle.loads(pickle.dumps(plan.operands[1])) == plan.operands[1]


def test_issue21_step3_review_fixes():
    a = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    nested = sw.asarray(np.ones((2, 3), np.float32)).reshape(6)  # a nested mode: numpy has no strides for it
    assert np.asarray(nested).tolist() == [1.0] * 6               # a compact copy, not "not host memory"
    assert pickle.loads(pickle.dumps(nested)).tolist() == [1.0] * 6
    with pytest.raises(ValueError, match="copy=False"):
        nested.__array__(copy=False)
    assert a.__array__(copy=False).base is not None                 # a view needs no copy
    flat = a.reshape(6, order="C")
    assert flat.shape == (6,) and flat[1:3].tolist() == [2.0, 3.0] and np.asarray(flat).tolist() == [1, 2, 3, 4, 5, 6]
    assert (a + np.array(2.0, np.float32)).tolist() == [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]  # a 0-d array is a number
    assert isinstance(np.add(a, np.float32(1.0)), sw.Tensor)
    assert [p.tolist() for p in sw.split(sw.arange(10), [5, 3])] == [list(range(5)), [], list(range(3, 10))]
