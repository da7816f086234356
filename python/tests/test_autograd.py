"""Autograd basics through the Python surface (core-concepts.md section 6):
differentiability, grad mode as context managers, backward, grad, .grad."""

import threading

import pytest

import strideweave as sw
from conftest import F32, I32, join_bounded, raises_exactly


def leaf(values):
    t = sw.tensor(values)
    return t


def test_only_exact_float32_is_differentiable():
    i = sw.tensor([1, 2])
    assert not i.is_differentiable() and sw.tensor([1.0]).is_differentiable()
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



def test_core_concepts_6_7_operation_backward_returns_one_entry_per_saved_input():
    x = leaf([1.0, 2.0])
    y = sw.mul(x, 3.0)
    (gx,) = y.grad_fn.backward(sw.tensor([1.0, 1.0]))  # the weak scalar is not a saved input
    assert gx.tolist() == [3.0, 3.0]
    assert y.grad_fn.plan == sw.resolve_operation_plan("mul", F32, 3.0)
    assert y.autograd_ctx.inputs()[0] is x


def test_core_concepts_6_2_a_user_built_float32_tensor_takes_part_without_any_flag():
    x = sw.tensor([1.0, 2.0])
    w = sw.tensor([3.0, 4.0])
    y = sw.mul(x, w)
    op = y.autograd_ctx
    assert isinstance(op, sw.Operation)
    assert op._operation_name == "mul" and op._dispatch_carrier_class is sw.CPU
    assert op.inputs()[0] is x and op.inputs()[1] is w
    ((c0, v0),), ((c1, v1),) = op.input_versions()
    assert c0 is x.carrier and v0 == x.carrier.version and c1 is w.carrier
    sw.reduce_sum(y).backward()
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]
    assert x.requires_grad and not sw.tensor([1, 2]).requires_grad
    raises_exactly(AttributeError, setattr, x, "requires_grad", False)  # read-only: no opt-in flag


def test_upstream_autograd_grad_input_rules():
    x = leaf([1.0, 2.0])
    y = sw.reduce_sum(x * x)
    raises_exactly(ValueError, sw.grad, y, [x, sw.tensor([1, 2])])
    raises_exactly(RuntimeError, sw.grad, sw.tensor([1]), [x])
    raises_exactly(TypeError, sw.grad, y, x)  # inputs is a Tensor, not a sequence
    raises_exactly(TypeError, sw.grad, y, None)
    raises_exactly(TypeError, sw.grad, y, 3)


def test_upstream_autograd_batched_grad_reconstructs_a_jacobian():
    x = leaf([1.0, 2.0])
    y = sw.mul(x, sw.tensor([3.0, 5.0]))
    # K = 2 cotangents: a prepended batch mode (stride 2) followed by exactly
    # the output's layout (2):(1).
    basis = sw.Tensor(sw.tensor([1.0, 0.0, 0.0, 1.0]).carrier, 0, sw.Layout(sw.Shape(2, 2), sw.Stride(2, 1)))
    (jac,) = sw.grad(y, [x], basis, batched=True)
    assert jac.shape == sw.Shape(2, 2) and jac.tolist() == [[3.0, 0.0], [0.0, 5.0]]
    assert x.grad is None
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        sw.grad(y, [x], basis, batched=True)


def test_retain_grad_and_detach():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    h.retain_grad()
    sw.reduce_sum(h).backward()
    assert h.grad.tolist() == [1.0, 1.0]
    d = h.detach()
    assert d.is_leaf and d.autograd_ctx is None and d.carrier is h.carrier
    g = x * 3.0
    g.retain_grad(retain=False)
    sw.reduce_sum(g).backward()
    assert g.grad is None
    raises_exactly(TypeError, g.retain_grad, 1)


def test_grad_mode_context_managers_restore_and_are_thread_local():
    assert sw.is_grad_enabled()
    x = leaf([1.0])
    with sw.no_grad():
        assert not sw.is_grad_enabled()
        assert (x * 2.0).autograd_ctx is None
        with sw.set_grad_enabled(True):
            assert (x * 2.0).autograd_ctx is not None
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


def test_core_concepts_6_2_an_overwritten_output_carries_the_calls_node_and_accumulation_is_refused():
    x = leaf([1.0])
    out = sw.tensor([0.0])
    assert sw.mul(x, 2.0, out=out) is out and out.autograd_ctx._operation_name == "mul"
    out.backward()
    assert x.grad.tolist() == [2.0]
    acc = sw.tensor([0.0])
    raises_exactly(RuntimeError, sw.mul, x, 2.0, out=sw.accumulate_into(acc))
    assert acc.carrier.version == 0
    with sw.no_grad():
        assert sw.mul(x, 2.0, out=sw.accumulate_into(acc)).item() == 2.0


def test_int32_results_never_record():
    x = leaf([1.0])
    assert sw.argmax(x).grad_fn is None
