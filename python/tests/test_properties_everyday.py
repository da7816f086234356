"""Property-based checks of the everyday surface against numpy (issue 21:
creation, composition, interop; Hypothesis, derandomised, with the profile
of test_properties.py: STRIDEWEAVE_HYPOTHESIS_PROFILE)."""

import os
import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import strideweave as sw

EXAMPLES = {"default": 200, "sanitizer": 20}[os.environ.get("STRIDEWEAVE_HYPOTHESIS_PROFILE", "default")]
PROFILE = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=False,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FLOATS = st.floats(-1e3, 1e3, width=32)
SW = {np.dtype(np.float32): sw.DType.Float32, np.dtype(np.int32): sw.DType.Int32, np.dtype(np.bool_): sw.DType.Bool}


def array_of(dtype, shape):
    elements = {np.float32: FLOATS, np.int32: st.integers(-1000, 1000), np.bool_: st.booleans()}[dtype]
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def joinable(draw):
    """Two to four arrays of one dtype that concatenate along `axis`."""
    dtype = draw(st.sampled_from([np.float32, np.int32, np.bool_]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    arrays = []
    for _ in range(draw(st.integers(1, 4))):
        s = list(shape)
        s[axis] = draw(st.integers(0, 3))
        arrays.append(draw(array_of(dtype, tuple(s))))
    return arrays, axis


@PROFILE
@given(joinable(), st.booleans(), st.sampled_from([sw.CPU, sw.Generic]))
def test_concatenate_is_numpys(case, grad, carrier):
    arrays, axis = case
    with sw.set_grad_enabled(grad):
        out = sw.concatenate([sw.tensor(a, carrier=carrier) for a in arrays], axis=axis)
    assert out.tolist() == np.concatenate(arrays, axis=axis).tolist()


@PROFILE
@given(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), st.integers(1, 3), st.data())
def test_stack_is_numpys(shape, count, data):
    arrays = [data.draw(array_of(np.float32, shape)) for _ in range(count)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert sw.stack([sw.tensor(a) for a in arrays], axis).tolist() == np.stack(arrays, axis).tolist()


@PROFILE
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), st.data())
def test_statistics_are_numpys(shape, data):
    a = data.draw(array_of(np.float32, shape))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    keepdims = data.draw(st.booleans())
    t = sw.tensor(a)
    wide = a.astype(np.float64)
    np.testing.assert_allclose(np.asarray(sw.mean(t, axis, keepdims=keepdims)),
                               np.mean(wide, axis, keepdims=keepdims), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(sw.var(t, axis, keepdims=keepdims)),
                               np.var(wide, axis, keepdims=keepdims), rtol=1e-3, atol=1e-1)
    softmax_axis = axis if axis is not None else -1
    shifted = wide - wide.max(axis=softmax_axis, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=softmax_axis, keepdims=True)
    np.testing.assert_allclose(np.asarray(sw.softmax(t, softmax_axis)), expected, rtol=1e-4, atol=1e-6)


@PROFILE
@given(st.sampled_from([np.float32, np.int32, np.bool_]), st.sampled_from([np.float32, np.int32, np.bool_]),
       hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), st.data())
def test_astype_is_numpys(source, target, shape, data):
    a = data.draw(array_of(source, shape))
    out = sw.astype(sw.tensor(a, dtype=SW[np.dtype(source)]), SW[np.dtype(target)])
    assert out.dtype() is SW[np.dtype(target)]
    assert out.tolist() == a.astype(target).tolist()


@PROFILE
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_reshape_order_c_is_numpys(shape, data):
    a = data.draw(array_of(np.int32, shape))
    size = a.size
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = (first, size // first)
    t = sw.tensor(a)
    if data.draw(st.booleans()):
        t, a = t.T, a.T
    assert t.reshape(target, order="C").tolist() == a.reshape(target).tolist()
    assert t.T.tolist() == a.T.tolist()


@PROFILE
@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-7, 7).filter(bool))
def test_integer_arange_is_numpys(start, stop, step):
    assert sw.arange(start, stop, step).tolist() == np.arange(start, stop, step).tolist()


@PROFILE
@given(FLOATS, FLOATS, st.integers(0, 40), st.booleans())
def test_linspace_is_numpys(start, stop, num, endpoint):
    expected = np.linspace(float(start), float(stop), num, endpoint=endpoint).astype(np.float32)
    assert sw.linspace(start, stop, num, endpoint=endpoint).tolist() == expected.tolist()


@PROFILE
@given(st.integers(0, 6), st.one_of(st.none(), st.integers(0, 6)), st.integers(-7, 7))
def test_eye_and_fills_are_numpys(n, m, k):
    assert sw.eye(n, m, k).tolist() == np.eye(n, m, k).tolist()
    shape = (n, m or 1)
    assert sw.full(shape, 3).tolist() == np.full(shape, 3).tolist()
    assert sw.zeros(shape, dtype=sw.DType.Bool).tolist() == np.zeros(shape, bool).tolist()


@PROFILE
@given(st.integers(0, 2**64 - 1), hnp.array_shapes(min_dims=0, max_dims=3, max_side=5), st.integers(0, 9))
def test_generators_are_reproducible_on_every_carrier(seed, shape, skip):
    a, b = sw.random.Generator(seed, skip), sw.random.Generator(seed, skip)
    assert a.normal(size=shape).tolist() == b.normal(size=shape, carrier=sw.Generic).tolist()
    u = a.uniform(-2.0, 3.0, size=shape)
    assert u.tolist() == b.uniform(-2.0, 3.0, size=shape, carrier=sw.Generic).tolist()
    assert all(-2.0 <= v < 3.0 for v in np.asarray(u).ravel())
    n = len(shape) + skip
    assert sorted(a.permutation(n).tolist()) == list(range(n))
    assert a.position - b.position == max(n - 1, 0) // 4 + (1 if max(n - 1, 0) % 4 else 0)  # its steps, four a draw


@PROFILE
@given(st.sampled_from([np.float32, np.int32, np.bool_]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                                           max_side=4), st.data())
def test_pickle_round_trips(dtype, shape, data):
    a = data.draw(array_of(dtype, shape))
    for t in (sw.tensor(a), sw.tensor(a, carrier=sw.Generic)):
        back = pickle.loads(pickle.dumps(t))
        assert back.tolist() == t.tolist() and back.shape == t.shape and back.carrier_type() is t.carrier_type()


@PROFILE
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6), st.data())
def test_split_is_numpys(shape, data):
    a = data.draw(array_of(np.int32, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    extent = shape[axis]
    if data.draw(st.booleans()):
        sections = data.draw(st.sampled_from([d for d in range(1, extent + 1) if extent % d == 0] or [1]))
    else:
        sections = sorted(data.draw(st.lists(st.integers(-extent - 2, extent + 2), max_size=4)))
    parts = sw.split(sw.tensor(a), sections, axis)
    expected = np.split(a, sections, axis)
    assert [p.tolist() for p in parts] == [e.tolist() for e in expected]


@PROFILE
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), st.data())
def test_std_and_log_softmax_are_numpys(shape, data):
    a = data.draw(array_of(np.float32, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ddof = data.draw(st.integers(0, 1))
    keepdims = data.draw(st.booleans())
    t, wide = sw.tensor(a), a.astype(np.float64)
    if shape[axis] > ddof:
        np.testing.assert_allclose(np.asarray(sw.std(t, axis, ddof=ddof, keepdims=keepdims)),
                                   np.std(wide, axis, ddof=ddof, keepdims=keepdims), rtol=1e-3, atol=1e-2)
    shifted = wide - wide.max(axis=axis, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(np.asarray(sw.log_softmax(t, axis)), expected, rtol=1e-4, atol=1e-4)


@PROFILE
@given(st.sampled_from([np.float32, np.int32, np.bool_]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                                           max_side=4),
       st.sampled_from([sw.CPU, sw.Generic]), st.data())
def test_like_fills_ones_and_empty_are_numpys(dtype, shape, carrier, data):
    like = sw.tensor(data.draw(array_of(dtype, shape)), carrier=carrier)
    kind = SW[np.dtype(dtype)]
    assert sw.ones(shape, dtype=kind).tolist() == np.ones(shape, dtype).tolist()
    assert sw.zeros_like(like).tolist() == np.zeros(shape, dtype).tolist()
    assert sw.ones_like(like).tolist() == np.ones(shape, dtype).tolist()
    fill = True if dtype is np.bool_ else 1  # a Bool fill takes a bool, as literals do (docs/creation.md)
    assert sw.full_like(like, fill).tolist() == np.full(shape, fill, dtype).tolist()
    for made in (sw.empty(shape, dtype=kind), sw.empty_like(like)):
        assert made.shape == shape and made.dtype() is kind
    assert sw.empty_like(like).carrier_type() is carrier and sw.ones_like(like).carrier_type() is carrier


@PROFILE
@given(st.sampled_from([np.float32, np.int32, np.bool_]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                                           max_side=4),
       st.sampled_from([sw.CPU, sw.Generic]), st.sampled_from([sw.CPU, sw.Generic]), st.data())
def test_clone_copy_to_transpose_and_ndim_keep_values(dtype, shape, source, target, data):
    a = data.draw(array_of(dtype, shape))
    t = sw.tensor(a, carrier=source)
    c = sw.clone(t)
    assert c.tolist() == a.tolist() and c.carrier is not t.carrier and c.carrier_type() is source
    moved = sw.copy_to(t, target)
    assert moved.tolist() == a.tolist() and moved.carrier_type() is target
    assert t.tolist() == a.tolist() and not t.carrier.is_released()  # non-destructive
    assert sw.transpose(t).tolist() == a.T.tolist() and t.ndim == a.ndim


@PROFILE
@given(st.sampled_from([np.float32, np.int32]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       st.data())
def test_from_dlpack_is_a_zero_copy_view_of_numpy(dtype, shape, data):
    # (numpy 1.24's own __dlpack__ refuses bool arrays.)
    a = data.draw(array_of(dtype, shape))
    t = sw.from_dlpack(a)
    assert t.tolist() == a.tolist() and t.shape == a.shape
    if a.size and a.flags.writeable:
        a.flat[0] = a.flat[-1]
        assert t.tolist() == a.tolist()  # the same memory
