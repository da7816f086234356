"""Property-based checks against numpy (Hypothesis; docs/python.md, "Tests").

Tensors are built from every form the literal reader accepts (lists,
tuples, ranges, generators, numpy arrays of every numeric dtype, mixtures)
and from numpy memory (asarray); their views, arithmetic and reductions are
compared with numpy's on the same values. The examples are derandomised (a
fixed seed per test), so CI runs the same few thousand every time. The
profile comes from STRIDEWEAVE_HYPOTHESIS_PROFILE: "default" (400 examples
per test) or "sanitizer" (40, for the ASan and TSan legs, where every call
is an order of magnitude slower; python/CMakeLists.txt sets it).
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import strideweave as sw
from conftest import BOOL, F32, I32

EXAMPLES = {"default": 400, "sanitizer": 40}[os.environ.get("STRIDEWEAVE_HYPOTHESIS_PROFILE", "default")]
PROFILE = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=False,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SW_DTYPE = {np.dtype(np.float32): F32, np.dtype(np.int32): I32, np.dtype(np.bool_): BOOL}

# Float32 values without NaN (compared with ==) and small Int32 values
# (sums and products of a few stay inside Int32, where numpy would wrap).
FLOATS = st.floats(width=32, allow_nan=False, allow_infinity=False)
SMALL_INTS = st.integers(-(2**15), 2**15)


def shapes(min_dims=0, max_dims=4, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side)


@st.composite
def arrays(draw, dtype=None, shape=None, elements=None, min_dims=0):
    """A numpy array of a stored dtype (float32, int32 or bool)."""
    dtype = dtype or draw(st.sampled_from([np.float32, np.int32, np.bool_]))
    if elements is None:
        elements = {np.float32: FLOATS, np.int32: SMALL_INTS, np.bool_: st.booleans()}[dtype]
    shape = shape if shape is not None else draw(shapes(min_dims=min_dims))
    return draw(hnp.arrays(dtype, shape, elements=elements))


def numpy_view(draw, a):
    """`a` itself or a strided, transposed or reversed view of a bigger array
    holding the same values."""
    how = draw(st.sampled_from(["plain", "transposed", "strided", "reversed"]))
    if a.ndim == 0:  # (numpy.ascontiguousarray would make it 1-D)
        return a
    if how == "transposed":
        return np.ascontiguousarray(a.T).T
    if how == "strided":
        big = np.zeros(tuple(2 * s for s in a.shape), a.dtype)
        big[tuple(slice(None, None, 2) for _ in a.shape)] = a
        return big[tuple(slice(None, None, 2) for _ in a.shape)]
    if how == "reversed":
        return np.ascontiguousarray(a[::-1])[::-1]
    return a


def as_container(draw, a):
    """The values of `a` written in one of the literal reader's forms:
    (data, the array it stands for, the dtype inference gives)."""
    form = draw(st.sampled_from(["list", "tuple", "generator", "numpy", "other_numpy", "rows", "range"]))
    if (a.ndim == 0 and form != "other_numpy") or (form == "rows" and (a.ndim < 2 or a.size == 0)):
        form = "numpy"
    # Python containers: an empty one infers Float32 and ends the shape
    # (nested lists cannot write the extents after a zero one).
    python_dtype = SW_DTYPE[a.dtype] if a.size else F32
    python_shape = a.shape[:a.shape.index(0) + 1] if 0 in a.shape else a.shape
    python_a = np.zeros(python_shape, a.dtype) if a.size == 0 else a
    if form == "list":
        return a.tolist(), python_a, python_dtype
    if form == "tuple":
        def tup(x):
            return tuple(tup(y) for y in x) if isinstance(x, list) else x
        return tup(a.tolist()), python_a, python_dtype
    if form == "generator":
        def gen(x):
            return (gen(y) for y in x) if isinstance(x, list) else x
        return gen(a.tolist()), python_a, python_dtype
    if form == "numpy":
        return numpy_view(draw, a), a, SW_DTYPE[a.dtype]
    if form == "other_numpy":  # another numpy dtype that holds the values exactly
        targets = {"f": [np.float64], "b": [np.bool_], "i": [np.int64]}[a.dtype.kind]
        if a.dtype.kind == "i" and (a.size == 0 or (a.min() >= -(2**15) + 1 and a.max() < 2**15)):
            targets += [np.int16]
        if a.dtype.kind == "i" and (a.size == 0 or a.min() >= 0):
            targets += [np.uint16, np.uint32, np.uint64]
        return numpy_view(draw, a.astype(draw(st.sampled_from(targets)))), a, SW_DTYPE[a.dtype]
    if form == "rows":  # numpy rows and nested lists in one outer list
        rows = [row if i % 2 or len(a) == 1 else row.tolist() for i, row in enumerate(a)]
        return rows, a, SW_DTYPE[a.dtype]
    # range: a 1-D arithmetic progression of integers
    start = draw(st.integers(-100, 100))
    step = draw(st.integers(1, 5))
    n = a.shape[0]
    r = range(start, start + step * n, step) if a.ndim == 1 else range(0)
    return r, np.array(r, dtype=np.int32), I32 if len(r) else F32


# ---- construction

@PROFILE
@given(st.data())
def test_literal_reader_property_every_form_builds_the_same_tensor(data):
    source, a, dtype = as_container(data.draw, data.draw(arrays()))
    t = sw.tensor(source)
    assert t.dtype() is dtype
    assert t.shape == sw.Shape(*a.shape)
    assert t.tolist() == a.tolist()


@PROFILE
@given(arrays(dtype=np.float64, elements=st.floats(allow_nan=False)), st.booleans())
def test_literal_reader_property_float64_rounds_like_numpy_astype(a, as_python):
    with np.errstate(over="ignore"):
        expected = a.astype(np.float32)
    t = sw.tensor(a.tolist() if as_python and a.size else a)
    assert t.dtype() is F32
    assert np.array_equal(np.asarray(t), expected)


@PROFILE
@given(arrays(dtype=np.int64, elements=st.integers(-(2**63), 2**63 - 1)), st.sampled_from([None, F32]))
def test_literal_reader_property_int64_is_exact_or_overflow(a, dtype):
    fits = bool(np.all((a >= -(2**31)) & (a <= 2**31 - 1)))
    if dtype is None and not fits:
        with pytest.raises(OverflowError):
            sw.tensor(a)
        return
    t = sw.tensor(a, dtype=dtype)
    assert t.dtype() is (dtype or I32)
    # Each element converts as the same Python int does.
    assert t.tolist() == sw.tensor(a.tolist(), dtype=t.dtype()).tolist()
    if dtype is None:
        assert t.tolist() == a.tolist()


# ---- views

@st.composite
def view_steps(draw, shape):
    """A few view operations valid for `shape`, applied to both libraries."""
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        rank = len(shape)
        options = ["unsqueeze", "broadcast"]
        if rank:
            options += ["permute", "slice", "index", "squeeze"]
        kind = draw(st.sampled_from(options))
        if kind == "permute":
            perm = draw(st.permutations(range(rank)))
            steps.append(("permute", tuple(perm)))
            shape = tuple(shape[p] for p in perm)
        elif kind == "slice":
            axis = draw(st.integers(0, rank - 1))
            start = draw(st.integers(-5, 5))
            stop = draw(st.integers(-5, 5) | st.none())
            step = draw(st.integers(1, 3))
            steps.append(("slice", axis, slice(start, stop, step)))
            shape = shape[:axis] + (len(range(*slice(start, stop, step).indices(shape[axis]))),) + shape[axis + 1:]
        elif kind == "index":
            axis = draw(st.integers(0, rank - 1))
            if shape[axis] == 0:
                continue
            i = draw(st.integers(-shape[axis], shape[axis] - 1))
            steps.append(("index", axis, i))
            shape = shape[:axis] + shape[axis + 1:]
        elif kind == "squeeze":
            ones = [i for i, s in enumerate(shape) if s == 1]
            if not ones:
                continue
            axis = draw(st.sampled_from(ones))
            steps.append(("squeeze", axis))
            shape = shape[:axis] + shape[axis + 1:]
        elif kind == "unsqueeze":
            axis = draw(st.integers(0, rank))
            steps.append(("unsqueeze", axis))
            shape = shape[:axis] + (1,) + shape[axis:]
        else:  # broadcast: widen extent-1 axes, maybe add leading ones
            lead = draw(st.integers(0, 1))
            target = tuple(draw(st.integers(0, 3)) for _ in range(lead)) + tuple(
                draw(st.integers(0, 3)) if s == 1 else s for s in shape)
            steps.append(("broadcast", target))
            shape = target
    return steps


def apply_numpy(a, step):
    kind = step[0]
    if kind == "permute":
        return a.transpose(step[1])
    if kind == "slice":
        key = [slice(None)] * a.ndim
        key[step[1]] = step[2]
        return a[tuple(key)]
    if kind == "index":
        key = [slice(None)] * a.ndim
        key[step[1]] = step[2]
        return a[tuple(key)]
    if kind == "squeeze":
        return a.squeeze(step[1])
    if kind == "unsqueeze":
        return np.expand_dims(a, step[1])
    return np.broadcast_to(a, step[1])


def apply_strideweave(t, step):
    kind = step[0]
    if kind == "permute":
        return t.permute(*step[1])
    if kind == "slice":
        axis, s = step[1], step[2]
        start, stop, stride = s.indices(t.shape.extents[axis])
        return t.slice(axis, start, max(start, stop), stride)
    if kind == "index":
        key = [slice(None)] * t.rank
        key[step[1]] = step[2]
        return t[tuple(key)]
    if kind == "squeeze":
        return t.squeeze(step[1])
    if kind == "unsqueeze":
        return t.unsqueeze(step[1])
    return t.broadcast_to(step[1])


@PROFILE
@given(st.data())
def test_core_concepts_4_5_property_views_agree_with_numpy(data):
    a = data.draw(arrays())
    t = sw.tensor(a) if data.draw(st.booleans()) else sw.asarray(a.copy())
    steps = data.draw(view_steps(a.shape))
    for step in steps:
        a = apply_numpy(a, step)
        t = apply_strideweave(t, step)
        assert t.shape == sw.Shape(*a.shape), step
        assert t.tolist() == a.tolist(), step
    assert np.array_equal(np.asarray(t), a)


@PROFILE
@given(st.data())
def test_core_concepts_4_5_property_reshape_is_in_logical_order(data):
    a = data.draw(arrays(shape=data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))))
    t = sw.tensor(a)
    size = a.size
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = (first, size // first)
    # Logical order is first axis fastest (docs/layout.md): numpy's order="F".
    assert t.reshape(*target).tolist() == a.reshape(target, order="F").tolist()
    assert t.reshape(size).tolist() == a.reshape(size, order="F").tolist()


# ---- arithmetic and reductions

@st.composite
def broadcast_pair(draw, dtype, elements):
    shape = draw(shapes(max_dims=3))
    other = list(shape)
    for i in range(len(other)):
        if draw(st.booleans()):
            other[i] = 1
    other = tuple(other[draw(st.integers(0, len(other))):])
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    b = draw(hnp.arrays(dtype, other, elements=elements))
    return (a, b) if draw(st.booleans()) else (b, a)


def same(t, expected):
    got = np.asarray(t)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=expected.dtype.kind == "f"), (got, expected)


FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
                "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal}


@PROFILE
@given(broadcast_pair(np.float32, FLOATS), st.sampled_from(sorted(FLOAT_BINARY)))
def test_operation_semantics_property_float32_elementwise_agrees_with_numpy(pair, op):
    a, b = pair
    with np.errstate(all="ignore"):
        expected = FLOAT_BINARY[op](a, b)
    same(getattr(sw, op)(sw.tensor(a), sw.tensor(b)), expected)


@PROFILE
@given(broadcast_pair(np.int32, SMALL_INTS), st.sampled_from(["add", "sub", "mul", "div"]))
def test_operation_semantics_property_int32_arithmetic_agrees_with_numpy(pair, op):
    a, b = pair
    with np.errstate(all="ignore"):
        expected = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b) if op != "div" else (
            np.divide(a.astype(np.float64), b.astype(np.float64)).astype(np.float32))
    same(getattr(sw, op)(sw.tensor(a), sw.tensor(b)), expected)


@PROFILE
@given(arrays(dtype=np.float32), st.sampled_from([-2, 0.5, 3, -1.25, True]))
def test_operation_semantics_property_python_numbers_agree_with_numpy(a, number):
    t = sw.tensor(a)
    n32 = np.float32(number)
    with np.errstate(all="ignore"):
        same(t * number, a * n32)
        same(-t, -a)
        same(abs(t), np.abs(a))
        if not isinstance(number, bool):
            same(t + number, a + n32)
            same(t - number, a - n32)


@PROFILE
@given(st.data())
def test_operation_semantics_property_reductions_agree_with_numpy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.int32]))
    elements = st.floats(-1e6, 1e6, width=32) if dtype == np.float32 else SMALL_INTS
    a = data.draw(arrays(dtype=dtype, elements=elements, min_dims=1))
    axes = sorted(data.draw(st.sets(st.integers(0, a.ndim - 1))))
    keepdims = data.draw(st.booleans())
    t = sw.tensor(a)
    kwargs = {"axes": axes, "keepdims": keepdims} if axes else {"keepdims": keepdims}
    numpy_axes = tuple(axes) if axes else None
    got = np.asarray(sw.reduce_sum(t, **kwargs))
    expected = np.sum(a.astype(np.float64), axis=numpy_axes, keepdims=keepdims)
    assert got.shape == np.shape(expected)
    if dtype == np.int32:
        assert got.dtype == np.int32 and np.array_equal(got, expected.astype(np.int32))
        return
    bound = np.sum(np.abs(a.astype(np.float64)), axis=numpy_axes, keepdims=keepdims)
    assert np.all(np.abs(got - expected) <= 1e-6 * bound * max(a.size, 1) + 1e-30)
    if a.size:
        for name, f in (("reduce_max", np.max), ("reduce_min", np.min)):
            same(getattr(sw, name)(t, **kwargs), f(a, axis=numpy_axes, keepdims=keepdims))
