"""Issue 21, step 1: creation (docs/creation.md): zeros, ones, full, empty,
the *_like functions, arange, linspace, eye and strideweave.random, with
dtype= and carrier=, checked against numpy's meaning where numpy has one."""

import pickle
import threading

import numpy as np
import pytest

import strideweave as sw


def assert_fresh(t, extents):
    assert t.shape.extents == tuple(extents)
    assert t.layout == sw.Layout.compact(sw.Shape(*extents))
    assert t.offset == 0
    assert t.carrier.is_mutable()


@pytest.mark.parametrize("make", [sw.zeros, sw.ones, sw.empty])
def test_issue21_step1_shapes_are_given_as_numpy_and_torch_users_give_them(make):
    for args, extents in [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([2, 3],), (2, 3)), ((5,), (5,)),
                          (((),), ()), ((sw.Shape(4, 1),), (4, 1))]:
        t = make(*args)
        assert_fresh(t, extents)
        assert t.dtype() is sw.DType.Float32 and t.carrier_type() is sw.CPU
    with pytest.raises(TypeError, match="give a shape"):
        make()
    with pytest.raises(TypeError):
        make(2.5)
    with pytest.raises(ValueError):
        make(-1)


def test_issue21_step1_constant_fills_have_their_values_dtype_and_carrier():
    assert sw.zeros(2, 3).tolist() == np.zeros((2, 3)).tolist()
    o = sw.ones(2, 2, dtype=sw.DType.Int32, carrier=sw.Generic)
    assert o.carrier_type() is sw.Generic and o.dtype() is sw.DType.Int32 and o.tolist() == [[1, 1], [1, 1]]
    assert sw.ones(3, dtype=sw.DType.Bool).tolist() == [True, True, True]
    assert sw.empty(50, dtype=sw.DType.Bool).tolist() == [False] * 50  # Bool is never unspecified
    assert sw.full((2,), 7).dtype() is sw.DType.Int32
    assert sw.full(2, 7.5).tolist() == [7.5, 7.5]
    assert sw.full((), True).dtype() is sw.DType.Bool
    assert sw.full([1, 2], 3, dtype=sw.DType.Float32).tolist() == [[3.0, 3.0]]
    with pytest.raises(TypeError):
        sw.full(2, 0.5, dtype=sw.DType.Int32)  # never truncated
    with pytest.raises(OverflowError):
        sw.full(2, 2**40, dtype=sw.DType.Int32)
    with pytest.raises(ValueError):
        sw.zeros(2, dtype=sw.DType.Float64)
    with pytest.raises(TypeError):
        sw.full(2, "x")


def test_issue21_step1_like_functions_follow_their_prototype():
    g = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], carrier=sw.Generic).permute(1, 0)
    z = sw.zeros_like(g)
    assert_fresh(z, (3, 2))
    assert z.carrier_type() is sw.Generic and z.carrier is not g.carrier
    assert sw.full_like(g, 2, dtype=sw.DType.Int32, carrier=sw.CPU).tolist() == [[2, 2]] * 3
    assert sw.ones_like(g).dtype() is sw.DType.Float32
    assert sw.empty_like(g).shape == g.shape
    # A carrier instance is a prototype: its class makes the storage.
    proto = sw.FileBacked(dtype=sw.DType.Float32)
    f = sw.ones(4, carrier=proto)
    assert f.carrier_type() is sw.FileBacked and f.carrier is not proto
    assert f.tolist() == [1.0] * 4
    with pytest.raises(TypeError, match="prototype"):
        sw.zeros(2, carrier=sw.FileBacked)


@pytest.mark.parametrize("args", [(5,), (2, 9), (9, 2, -2), (-3, 4, 3), (3, 3), (0.0, 1.0, 0.1), (1.5, -2.0, -0.25),
                                  (0, 1, 0.3), (-1e3, 1e3, 7.25)])
def test_issue21_step1_arange_matches_numpy(args):
    t = sw.arange(*args)
    integral = all(isinstance(a, int) for a in args)
    expected = np.arange(*args)
    assert t.dtype() is (sw.DType.Int32 if integral else sw.DType.Float32)
    # Element i is start + i * step in double (exact for integers), rounded once.
    assert t.tolist() == expected.astype(np.int32 if integral else np.float32).tolist()


def test_issue21_step1_arange_refuses_what_it_cannot_represent():
    with pytest.raises(ValueError, match="zero"):
        sw.arange(0, 5, 0)
    with pytest.raises(ValueError, match="finite"):
        sw.arange(0.0, float("inf"))
    with pytest.raises(OverflowError):
        sw.arange(2**31 - 2, 2**31 + 1)  # the last value leaves Int32
    with pytest.raises(TypeError):
        sw.arange(0.5, 3, dtype=sw.DType.Int32)
    with pytest.raises(TypeError):
        sw.arange(True)
    assert sw.arange(3, dtype=sw.DType.Float32, carrier=sw.Generic).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("start, stop, num, endpoint", [(0, 1, 5, True), (0.1, 0.7, 7, True), (-3, 11, 13, False),
                                                        (2, 2, 4, True), (1, 5, 1, True), (1, 5, 0, True),
                                                        (1e-3, 1e3, 50, True)])
def test_issue21_step1_linspace_matches_numpy(start, stop, num, endpoint):
    t = sw.linspace(start, stop, num, endpoint=endpoint)
    assert t.tolist() == np.linspace(start, stop, num, endpoint=endpoint).astype(np.float32).tolist()


def test_issue21_step1_linspace_and_eye_refuse_bad_arguments():
    with pytest.raises(ValueError):
        sw.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="Float32"):
        sw.linspace(0, 4, 5, dtype=sw.DType.Int32)
    with pytest.raises(ValueError):
        sw.eye(-1)


@pytest.mark.parametrize("n, m, k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, None, 0)])
def test_issue21_step1_eye_matches_numpy(n, m, k):
    assert sw.eye(n, m, k).tolist() == np.eye(n, m, k).tolist()
    assert sw.eye(n, m, k, dtype=sw.DType.Int32, carrier=sw.Generic).tolist() == np.eye(n, m, k, dtype=int).tolist()


def test_issue21_step1_same_seed_same_values_on_every_carrier_and_thread_count():
    threads = sw.num_threads()
    try:
        sw.set_num_threads(1)
        a = sw.random.Generator(2024)
        first = [a.uniform(size=(17, 5)).tolist(), a.normal(2.0, 3.0, size=40).tolist(),
                 a.integers(-7, 7, size=(3, 3)).tolist(), a.permutation(30).tolist()]
        sw.set_num_threads(max(2, threads))
        b = sw.random.Generator(2024)
        second = [b.uniform(size=(17, 5), carrier=sw.Generic).tolist(),
                  b.normal(2.0, 3.0, size=40, carrier=sw.Generic).tolist(),
                  b.integers(-7, 7, size=(3, 3), carrier=sw.Generic).tolist(),
                  b.permutation(30, carrier=sw.Generic).tolist()]
    finally:
        sw.set_num_threads(threads)
    assert first == second
    # Four elements a draw (uniform, integers, permutation steps), two for normal.
    assert a.position == b.position == 22 + 20 + 3 + 8
    assert sw.random.Generator(2025).uniform(size=10).tolist() != sw.random.Generator(2024).uniform(size=10).tolist()


def test_issue21_step1_distributions_have_their_range_and_moments():
    g = sw.random.Generator(1)
    u = np.asarray(g.uniform(-1.0, 2.0, size=50000))
    assert u.dtype == np.float32 and u.min() >= -1.0 and u.max() < 2.0
    assert abs(u.mean() - 0.5) < 0.03
    n = np.asarray(g.normal(1.0, 0.5, size=50000))
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    k = np.asarray(g.integers(5, size=5000))  # high None: [0, low)
    assert set(k.tolist()) == {0, 1, 2, 3, 4}
    assert g.uniform().shape.rank == 0  # size None: rank 0
    p = g.permutation(100).tolist()
    assert sorted(p) == list(range(100)) and p != list(range(100))


def test_issue21_step1_permutation_of_a_tensor_permutes_its_first_axis():
    x = sw.tensor([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    order = sw.random.Generator(5).permutation(3).tolist()
    px = sw.random.Generator(5).permutation(x)
    assert px.tolist() == [x.tolist()[i] for i in order]
    # Through gather: its gradient comes from autograd.
    w = sw.tensor([1.0, 2.0, 3.0])  # Float32: differentiable, no opt-in flag
    y = sw.random.Generator(5).permutation(w)
    sw.reduce_sum(sw.mul(y, y)).backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(TypeError, match="own carrier"):
        sw.random.Generator(5).permutation(x, carrier=sw.Generic)


def test_issue21_step1_a_failed_call_takes_no_draws():
    g = sw.random.Generator(8)
    g.uniform(size=3)
    before = g.position
    for call in [lambda: g.uniform(1.0, 1.0, size=3), lambda: g.normal(0.0, -1.0, size=3),
                 lambda: g.integers(3, 3, size=2), lambda: g.integers(0, 2**32, size=2),
                 lambda: g.uniform(size=3, dtype=sw.DType.Int32), lambda: g.uniform(size=3, carrier=sw.FileBacked),
                 lambda: g.permutation(sw.tensor([1, 2, 3]))]:
        with pytest.raises((ValueError, TypeError, OverflowError, NotImplementedError)):
            call()
    assert g.position == before


def test_issue21_step1_generator_seed_position_pickle_and_threads():
    with pytest.raises(ValueError):
        sw.random.Generator(-1)
    with pytest.raises(TypeError):
        sw.random.Generator(1.5)
    g = sw.random.Generator(2**64 - 1)
    g.normal(size=4)
    h = pickle.loads(pickle.dumps(g))
    assert (h.seed, h.position) == (g.seed, g.position) == (2**64 - 1, 2)
    assert h.normal(size=4).tolist() == g.normal(size=4).tolist()
    assert repr(sw.random.Generator(3)) == "Generator(seed=3, position=0)"

    shared = sw.random.Generator(0)
    workers = [threading.Thread(target=lambda: [shared.uniform(size=8) for _ in range(20)]) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert shared.position == 4 * 20 * 2


def test_issue21_step1_draw_words_is_the_documented_philox():
    # Random123's known-answer vector for Philox4x32-10 at key 0, counter 0.
    assert sw.random.draw_words(0, 0) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    u = sw.random.Generator(7, 3).uniform(size=6).tolist()
    for k, value in enumerate(u):  # element k: word k % 4 of draw 3 + k // 4
        assert value == (sw.random.draw_words(7, 3 + k // 4)[k % 4] >> 8) / 2**24
    with pytest.raises(ValueError):
        sw.random.draw_words(-1, 0)
