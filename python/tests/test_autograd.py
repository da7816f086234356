"""Autograd basics through the Python surface (core-concepts.md section 6):
differentiability, grad mode as context managers, backward, grad, .grad."""

import threading

import pytest

import strideweave as sw
from conftest import F32, I32, join_bounded, raises_exactly


def leaf(values):
    t = sw.tensor(values)
    t.requires_grad = True
    return t


def test_only_exact_float32_is_differentiable():
    i = sw.tensor([1, 2])
    assert not i.is_differentiable() and sw.tensor([1.0]).is_differentiable()
    raises_exactly(RuntimeError, setattr, i, "requires_grad", True)
    raises_exactly(RuntimeError, lambda: i.grad)
    raises_exactly(RuntimeError, i.retain_grad)
    raises_exactly(RuntimeError, i.backward)


def test_backward_accumulates_into_leaves():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = sw.reduce_sum(x * x)
    assert y.grad_fn.name == y.autograd_ctx.name == "reduce_sum"
    assert not y.is_leaf and x.is_leaf
    y.backward()
    assert x.grad.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    sw.reduce_sum(x * 3.0).backward()
    assert x.grad.tolist() == [[5.0, 7.0], [9.0, 11.0]]  # contributions add up
    x.grad = None
    assert x.grad is None


def test_implicit_unit_cotangent_only_for_one_element():
    x = leaf([1.0, 2.0])
    raises_exactly(ValueError, (x * 2).backward)
    (x * 2).backward(sw.tensor([1.0, 1.0]))
    assert x.grad.tolist() == [2.0, 2.0]
    raises_exactly(TypeError, (x * 2).backward, sw.tensor([1, 1]))
    raises_exactly(ValueError, (x * 2).backward, sw.tensor([1.0]))


def test_graph_is_released_without_retain_graph():
    x = leaf([1.0])
    y = sw.exp(x)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_modified_saved_input_is_detected():
    x = leaf([1.0, 2.0])
    w = sw.tensor([3.0, 4.0])
    y = sw.reduce_sum(x * w)
    w.carrier[0] = 5.0
    raises_exactly(RuntimeError, y.backward)


def test_grad_returns_vjps_without_touching_grad():
    x = leaf([1.0, 2.0])
    z = leaf([5.0])
    y = sw.reduce_sum(x * x)
    (gx, gz) = sw.grad(y, [x, z])
    assert gx.tolist() == [2.0, 4.0] and gz is None and x.grad is None
    (gx,) = sw.grad([sw.reduce_sum(x * x)], (x,), [sw.tensor(2.0)])
    assert gx.tolist() == [4.0, 8.0]
    raises_exactly(NotImplementedError, sw.grad, sw.reduce_sum(x * x), [x], batched=True)


def test_node_backward_alone():
    x = leaf([1.0, 2.0])
    y = sw.mul(x, 3.0)
    (gx, gs) = y.grad_fn.backward(sw.tensor([1.0, 1.0]))
    assert gx.tolist() == [3.0, 3.0] and gs is None
    assert y.grad_fn.plan == sw.resolve_operation_plan("mul", F32, 3.0)


def test_retain_grad_and_detach():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    h.retain_grad()
    sw.reduce_sum(h).backward()
    assert h.grad.tolist() == [1.0, 1.0]
    d = h.detach()
    assert d.is_leaf and not d.requires_grad and d.carrier is h.carrier


def test_grad_mode_context_managers_restore_and_are_thread_local():
    assert sw.is_grad_enabled()
    x = leaf([1.0])
    with sw.no_grad():
        assert not sw.is_grad_enabled()
        assert not (x * 2.0).requires_grad
        with sw.set_grad_enabled(True):
            assert (x * 2.0).requires_grad
        assert not sw.is_grad_enabled()
    assert sw.is_grad_enabled()
    with pytest.raises(KeyError):
        with sw.no_grad():
            raise KeyError
    assert sw.is_grad_enabled()
    seen = []
    with sw.no_grad():
        thread = threading.Thread(target=lambda: seen.append(sw.is_grad_enabled()))
        thread.start()
        join_bounded([thread], "the thread reading its grad mode")
    assert seen == [True]  # each thread starts enabled
    sw.set_grad_enabled(False)
    assert not sw.is_grad_enabled()
    sw.set_grad_enabled(True)
    raises_exactly(TypeError, sw.set_grad_enabled, 1)

    @sw.no_grad()
    def decorated():
        return sw.is_grad_enabled()

    assert decorated() is False and sw.is_grad_enabled()


def test_caller_output_while_recording_is_refused():
    x = leaf([1.0])
    out = sw.tensor([0.0])
    raises_exactly(RuntimeError, sw.mul, x, 2.0, out=out)
    with sw.no_grad():
        assert sw.mul(x, 2.0, out=out).item() == 2.0


def test_int32_results_never_record():
    x = leaf([1.0])
    assert sw.argmax(x).grad_fn is None
