"""Issue 21, step 2: composition over the registered operations
(docs/composition.md): concatenate, stack, split, mean, var, std, softmax,
log_softmax, astype, clone, copy_to, .T, ndim, shape == tuple, reshape's
order="C", and Python numbers beside the comparison operators; each
compared with numpy."""

import numpy as np
import pytest

import strideweave as sw


def arr(t):
    return np.asarray(t)


@pytest.fixture
def matrix():
    return np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5) - np.float32(1.0)


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_issue21_step2_concatenate_matches_numpy_on_both_paths(matrix, grad, axis):
    a, b = sw.tensor(matrix), sw.tensor(matrix[:, :2] if axis else matrix[:1])
    if axis == 0:
        pieces = [a, b, a]
        expected = np.concatenate([matrix, matrix[:1], matrix], axis=0)
    else:
        pieces = [a, b]
        expected = np.concatenate([matrix, matrix[:, :2]], axis=axis)
    with sw.set_grad_enabled(grad):
        out = sw.concatenate(pieces, axis=axis)
    assert out.is_leaf is (not grad)
    assert out.layout == sw.Layout.compact(out.shape)
    np.testing.assert_array_equal(arr(out), expected)


def test_issue21_step2_concatenate_gradients_and_errors(matrix):
    a, b = sw.tensor(matrix), sw.tensor(matrix[:1])
    y = sw.concatenate([a, b])
    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    y.backward(sw.tensor(w))
    np.testing.assert_array_equal(arr(a.grad), w[:3])
    np.testing.assert_array_equal(arr(b.grad), w[3:])
    np.testing.assert_array_equal(arr(sw.concatenate([sw.tensor([1, 2]), sw.tensor([3])])), [1, 2, 3])
    with pytest.raises(TypeError, match="astype"):
        sw.concatenate([a, sw.tensor([[1, 2, 3, 4]])])
    with pytest.raises(TypeError, match="copy_to"):
        sw.concatenate([a, sw.tensor(matrix, carrier=sw.Generic)])
    with pytest.raises(ValueError):
        sw.concatenate([a, sw.tensor(matrix[:, :2])])
    with pytest.raises(ValueError):
        sw.concatenate([])
    with pytest.raises(TypeError):
        sw.concatenate(a)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_issue21_step2_stack_matches_numpy(matrix, axis):
    out = sw.stack([sw.tensor(matrix[0]), sw.tensor(matrix[1])], axis=axis)
    np.testing.assert_array_equal(arr(out), np.stack([matrix[0], matrix[1]], axis=axis))


@pytest.mark.parametrize("spec", [3, [1, 2], [2, -1, 10], [0, 0]])
def test_issue21_step2_split_matches_numpy(spec):
    x = np.arange(6, dtype=np.float32)
    parts = sw.split(sw.tensor(x), spec)
    expected = np.split(x, spec)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        np.testing.assert_array_equal(arr(p) if p.size() else np.zeros(0, np.float32), e)
    with pytest.raises(ValueError):
        sw.split(sw.tensor(x), 4)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_issue21_step2_mean_var_std_match_numpy(matrix, axis, keepdims):
    t = sw.tensor(matrix)
    for ours, theirs in [(sw.mean(t, axis, keepdims=keepdims), np.mean(matrix, axis, keepdims=keepdims)),
                         (t.var(axis, keepdims=keepdims), np.var(matrix, axis, keepdims=keepdims)),
                         (sw.std(t, axis, ddof=1, keepdims=keepdims), np.std(matrix, axis, ddof=1, keepdims=keepdims))]:
        np.testing.assert_allclose(arr(ours), theirs, rtol=1e-6, atol=1e-6)
        assert ours.dtype() is sw.DType.Float32
    np.testing.assert_allclose(arr(sw.tensor([1, 2, 4]).mean()), 7 / 3, rtol=1e-7)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_issue21_step2_softmax_and_log_softmax(matrix, axis):
    x = matrix * 40  # large values: the maximum is subtracted first
    shifted = x - x.max(axis=axis, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(arr(sw.softmax(sw.tensor(x), axis)), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(arr(sw.log_softmax(sw.tensor(x), axis)),
                               shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)), rtol=1e-5, atol=1e-5)
    t = sw.tensor(matrix)
    sw.reduce_sum(sw.softmax(t, axis)).backward(sw.tensor(1.0))
    np.testing.assert_allclose(arr(t.grad), 0, atol=1e-6)  # sum(softmax) does not depend on x


def test_issue21_step2_astype_clone_copy_to():
    f = sw.tensor([2.7, -2.7, -0.0, 1e9])
    np.testing.assert_array_equal(arr(f.astype(sw.DType.Int32)),
                                  np.array([2.7, -2.7, -0.0, 1e9], np.float32).astype(np.int32))
    np.testing.assert_array_equal(arr(sw.astype(f, sw.DType.Bool)), [True, True, False, True])
    np.testing.assert_array_equal(arr(sw.tensor([True, False]).astype(sw.DType.Float32)), [1.0, 0.0])
    with pytest.raises(ValueError, match="element 0"):
        sw.tensor([float("nan")]).astype(sw.DType.Int32)
    c = f.clone()
    assert c.carrier is not f.carrier and c.tolist() == f.tolist()
    g = sw.copy_to(f, sw.Generic)
    assert g.carrier_type() is sw.Generic and g.tolist() == f.tolist() and not f.carrier.is_released()
    assert g.is_leaf  # copy_to records nothing
    file_copy = f.copy_to(sw.FileBacked(dtype=sw.DType.Float32))
    assert file_copy.carrier_type() is sw.FileBacked and file_copy.tolist() == f.tolist()


def test_issue21_step2_T_ndim_shape_and_reshape_order(matrix):
    t = sw.tensor(matrix)
    np.testing.assert_array_equal(arr(t.T), matrix.T)
    assert t.ndim == 2 and t.T.ndim == 2
    assert t.shape == (3, 4) and t.shape != (4, 3) and (3, 4) == t.shape
    assert t.shape != [3, 4]  # as numpy's shape: a tuple, not a list
    assert hash(t.shape) == hash((3, 4)) and {(3, 4): 1}[t.shape] == 1
    np.testing.assert_array_equal(arr(t.reshape(4, 3, order="C")), matrix.reshape(4, 3))
    np.testing.assert_array_equal(arr(t.reshape((2, 6), order="C")), matrix.reshape(2, 6))
    np.testing.assert_array_equal(arr(t.reshape(12, order="F")), matrix.reshape(12, order="F"))
    np.testing.assert_array_equal(arr(t.reshape(12)), matrix.reshape(12, order="F"))  # the default: logical order
    with pytest.raises(ValueError, match="order"):
        t.reshape(12, order="K")


def test_issue21_step2_numbers_beside_comparison_operators():
    f = sw.tensor([-1.0, 0.0, 2.5])
    np.testing.assert_array_equal(arr(f > 0), [False, False, True])
    np.testing.assert_array_equal(arr(0 < f), [False, False, True])
    np.testing.assert_array_equal(arr(f == 2.5), [False, False, True])
    np.testing.assert_array_equal(arr(f != 0), [True, False, True])
    with pytest.raises(TypeError, match="exactly representable as Float32"):
        f > 2**24 + 1
    with pytest.raises(TypeError, match="exactly representable as Float32"):
        f < 0.1
    with pytest.raises(TypeError, match="exactly representable as Int32"):
        sw.tensor([1, 2]) > 0.5
    with pytest.raises(TypeError, match="True or False"):
        sw.tensor([True]) == 1
    # The functions keep the documented rule: a number has its own dtype.
    with pytest.raises(TypeError):
        sw.lt(f, 0)
    # Arithmetic on both sides (the policy decides).
    np.testing.assert_array_equal(arr(2 - f), 2 - np.array([-1.0, 0.0, 2.5], np.float32))


def test_issue21_step2_transpose_and_comparison_scalar_functions():
    t = sw.tensor([[1.0, 2.0, 3.0]])
    assert sw.transpose(t).tolist() == [[1.0], [2.0], [3.0]] and sw.transpose(t).carrier is t.carrier
    s = sw.comparison_scalar(t, 2)
    assert s.dtype() is sw.DType.Float32 and s.item() == 2.0 and s.shape == ()
    assert sw.comparison_scalar(sw.tensor([1, 2]), 2.0).dtype() is sw.DType.Int32
    with pytest.raises(TypeError, match="exactly representable"):
        sw.comparison_scalar(t, 0.1)
