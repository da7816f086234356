"""Every operation as a function and the Tensor operators (issue 12, item
3), with the C++ rule for Python numbers, execution options and
caller-provided outputs (docs/python.md, "Operations")."""

import math
import threading
import time

import pytest

import strideweave as sw
from conftest import BOOL, F32, HANG_DEADLINE, I32, join_bounded, raises_exactly


def test_every_public_operation_is_a_function_of_the_package():
    public = {s.name for s in sw.registered_operations() if s.public}
    internal = {s.name for s in sw.registered_operations() if not s.public}
    # sort and topk are the public faces of the internal value/index plans.
    assert set(sw.OPERATION_NAMES) == public | {"sort", "topk"}
    assert internal == {"_sort_values", "_sort_indices", "_topk_values", "_topk_indices"}
    for name in sw.OPERATION_NAMES:
        function = getattr(sw, name)
        assert callable(function) and function.__name__ == name
        assert function.__doc__ and name in function.__doc__


def test_functions_take_operands_positionally_and_options_by_keyword():
    x = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert sw.reduce_sum(x, axes=[1]).tolist() == [3.0, 7.0]
    assert sw.reduce_sum(x, axes=[0], keepdims=True).tolist() == [[4.0, 6.0]]
    assert sw.cumsum(x, axis=1).tolist() == [[1.0, 3.0], [3.0, 7.0]]
    assert sw.argmax(x).item() == 3
    assert sw.elu(sw.tensor([-1.0]), alpha=2.0).item() == pytest.approx(2.0 * math.expm1(-1.0), rel=1e-6)
    assert sw.clamp(x, 1.5, 3.5).tolist() == [[1.5, 2.0], [3.0, 3.5]]
    raises_exactly(TypeError, sw.reduce_sum, x, unknown=1)
    raises_exactly(TypeError, sw.cumsum, x)  # axis is required
    raises_exactly(TypeError, sw.add, x)  # wrong operand count
    raises_exactly(TypeError, sw.relu, 1.0)  # a unary operation takes a tensor
    raises_exactly(TypeError, sw.add, x, "x")


def test_operators_are_the_operations():
    a = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = sw.tensor([[2.0, 2.0], [2.0, 2.0]])
    pairs = [
        (a + b, sw.add(a, b)), (a - b, sw.sub(a, b)), (a * b, sw.mul(a, b)), (a / b, sw.div(a, b)),
        (a ** b, sw.pow(a, b)), (a @ b, sw.matmul(a, b)), (-a, sw.neg(a)), (abs(-a), sw.abs(-a)),
        (a == b, sw.eq(a, b)), (a != b, sw.ne(a, b)), (a < b, sw.lt(a, b)), (a <= b, sw.le(a, b)),
        (a > b, sw.lt(b, a)), (a >= b, sw.le(b, a)),
    ]
    for operator_result, function_result in pairs:
        assert operator_result.dtype() is function_result.dtype()
        assert operator_result.tolist() == function_result.tolist()
    assert (a > b).dtype() is BOOL


def test_weak_scalars_of_mul_and_pow_pick_a_branch_without_a_dtype():
    i = sw.tensor([1, 2, 3])
    assert (i * 2).dtype() is I32 and (2 * i).tolist() == [2, 4, 6]
    assert (i * 0.5).dtype() is F32 and (i * True).dtype() is F32  # bool counts as FLOAT
    assert (i ** 2).dtype() is I32 and (i ** 2).tolist() == [1, 4, 9]
    assert (i ** -1).dtype() is F32 and (2 ** i).dtype() is F32
    raises_exactly(OverflowError, sw.mul, i, 2**31)
    assert (sw.tensor([1.0]) * 2**31).item() == 2.0**31


def test_numbers_in_other_binary_operations_are_rank0_tensors_of_their_own_dtype():
    i, f = sw.tensor([1, 2]), sw.tensor([1.0, 2.0])
    assert (i + 1).dtype() is I32  # checked Int32, as two Int32 tensors
    assert (i + 0.5).dtype() is F32 and (f + 1).dtype() is F32
    assert (1 - f).tolist() == [0.0, -1.0] and (2 / f).tolist() == [2.0, 1.0]
    assert (f > 1.5).tolist() == [False, True]
    raises_exactly(OverflowError, sw.add, i, 2**31)
    raises_exactly(OverflowError, sw.add, sw.tensor([2**31 - 1]), 1)  # checked, never wraps
    # The comparison functions admit Float32 operands only: an int is an
    # Int32 tensor, never silently the other operand's dtype. The comparison
    # OPERATORS take a number exactly representable as the tensor's dtype as
    # that dtype (issue 21, step 2; docs/composition.md).
    error = raises_exactly(TypeError, sw.lt, 1, f)
    assert "became an Int32 rank-0 tensor" in str(error)
    assert (f > 1).tolist() == [False, True]
    raises_exactly(TypeError, lambda: f > 2**24 + 1)
    assert sw.maximum(f, 1.5).tolist() == [1.5, 2.0]


def test_operators_with_other_objects_are_not_implemented():
    f = sw.tensor([1.0])
    with pytest.raises(TypeError):
        f + "a"
    assert (f == None) is False and (f != None) is True  # noqa: E711 (identity fallback)
    raises_exactly(TypeError, sw.add, 1.0, 2.0)


def test_execution_options_reach_reduce_sum_and_matmul_only():
    x = sw.tensor([1.0, 2.0])
    wide = sw.OperationExecutionOptions("reduce_sum", sw.DType.Float64)
    assert sw.reduce_sum(x, options=wide).item() == 3.0
    matmul_options = sw.operation_execution_options("matmul", accumulator_dtype=sw.DType.Float64)
    raises_exactly(ValueError, sw.reduce_sum, x, options=matmul_options)
    raises_exactly(ValueError, sw.add, x, x, options=wide)
    raises_exactly(TypeError, sw.reduce_sum, x, options="float64")


def test_caller_provided_outputs_are_returned_and_written_once():
    a = sw.tensor([1.0, 2.0])
    out = sw.tensor([0.0, 0.0])
    # Under grad mode an accumulation cannot be recorded (docs/autograd.md,
    # "Recording"): refused before anything is written.
    raises_exactly(RuntimeError, sw.add, a, a, out=sw.accumulate_into(out))
    assert out.tolist() == [0.0, 0.0] and out.carrier.version == 0
    with sw.no_grad():
        caller_outputs_without_a_graph(a)


def caller_outputs_without_a_graph(a):
    out = sw.tensor([0.0, 0.0])
    assert sw.add(a, a, out=out) is out and out.tolist() == [2.0, 4.0] and out.carrier.version == 1
    assert sw.add(a, a, out=sw.into(out)) is out
    assert sw.mul(a, 2, out=sw.accumulate_into(out)) is out and out.tolist() == [4.0, 8.0]
    assert sw.matmul(a, a, out=sw.tensor(0.0)).item() == 5.0
    raises_exactly(TypeError, sw.add, a, a, out=sw.tensor([0, 0]))  # the plan's output is Float32
    raises_exactly(ValueError, sw.add, a, a, out=sw.tensor([0.0]))  # shape
    raises_exactly(ValueError, sw.add, a, a, out=a)  # shares a carrier with an operand
    raises_exactly(TypeError, sw.sort, a, out=out)
    raises_exactly(TypeError, sw.add, a, a, out=[0.0, 0.0])
    assert out.tolist() == [4.0, 8.0]


def test_sort_and_topk_return_values_and_indices():
    x = sw.tensor([3.0, 1.0, 2.0])
    values, indices = sw.sort(x)
    assert values.tolist() == [1.0, 2.0, 3.0] and indices.tolist() == [1, 2, 0]
    top = sw.topk(x, k=2)
    assert top.values.tolist() == [3.0, 2.0] and top.indices.tolist() == [0, 2]
    assert isinstance(top, sw.SortResult)


def test_operations_across_families():
    x = sw.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert sw.relu(x).tolist() == [[1.0, 0.0], [3.0, 0.5]]
    assert sw.reduce_max(x).item() == 3.0 and sw.reduce_min(x, axes=[1]).tolist() == [-2.0, 0.5]
    assert sw.select(x > 0.0, x, -x).tolist() == [[1.0, 2.0], [3.0, 0.5]]
    idx = sw.tensor([[1], [0]])
    assert sw.gather(x, idx, axis=1).tolist() == [[-2.0], [3.0]]
    assert sw.logical_not(sw.tensor([0.0, 1.0])).tolist() == [True, False]
    conv = sw.conv_general(sw.tensor([[[1.0, 2.0, 3.0]]]), sw.tensor([[[1.0, 1.0]]]))
    assert conv.tolist() == [[[3.0, 5.0]]]
    raises_exactly(TypeError, sw.sqrt, sw.tensor([4]))  # Float32-only math refuses Int32


def test_operands_on_different_carrier_classes_are_a_type_error():
    raises_exactly(TypeError, sw.add, sw.tensor([1.0]), sw.tensor([1.0], carrier=sw.Generic))


def test_generic_and_cpu_agree_through_the_python_surface():
    for values in ([1.0, -2.5, 3.25], [0.1, 0.2, 0.3]):
        g = sw.tensor(values, carrier=sw.Generic)
        c = sw.tensor(values)
        for op in (sw.exp, sw.tanh, sw.sigmoid, sw.neg):
            assert op(g).tolist() == op(c).tolist()
        assert sw.matmul(g, g).tolist() == sw.matmul(c, c).tolist()


def test_kernels_run_with_the_gil_released():
    # While one thread is inside a long C++ kernel, another Python thread
    # keeps running: the call released the GIL.
    n = 1024
    big = sw.Tensor(sw.CPU(n * n), 0, sw.Layout.compact(sw.Shape(n, n)))
    window = {}

    def worker():
        # Enough kernel calls to span a window the ticker can sample on a
        # machine of any speed (not a timing threshold: only a minimum span).
        window["start"] = time.perf_counter()
        calls = 0
        while calls < 3 or (time.perf_counter() - window["start"] < 0.2 and calls < 200):
            sw.matmul(big, big)
            calls += 1
        window["end"] = time.perf_counter()

    ticks = []
    thread = threading.Thread(target=worker)
    thread.start()
    deadline = time.perf_counter() + HANG_DEADLINE  # catches a hang only
    while thread.is_alive() and time.perf_counter() < deadline:
        ticks.append(time.perf_counter())
        time.sleep(0.0005)
    join_bounded([thread], "the thread running kernels")
    start, end = window["start"], window["end"]
    middle = [t for t in ticks if start + 0.25 * (end - start) < t < end - 0.25 * (end - start)]
    assert end - start > 0.05, "the kernel was too short to tell"
    assert len(middle) >= 3
