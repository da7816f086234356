"""Errors are Python's built-ins (issue 12, item 2; cpp-mapping.md
"Errors"): each strideweave error is raised as exactly the built-in of its
name, UnsupportedOperationPlan is a NotImplementedError subclass carrying
the refused plan, and UnsupportedOpDType carries the descriptor's backend,
operation, dtype and axis as attributes."""

import builtins

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, make_carrier_class, raises_exactly


@pytest.mark.parametrize(
    "error, trigger",
    [
        (TypeError, lambda: sw.resolve_operation_plan("add", F32, "not a dtype")),
        (ValueError, lambda: sw.Shape(-1)),
        (RuntimeError, lambda: _released().get_value(0)),
        (NotImplementedError, lambda: sw.resolve_operation_plan("no_such_operation", F32)),
        (OverflowError, lambda: sw.mul(sw.tensor([1]), 2**31)),
        (AttributeError, lambda: _multi_overload_spec().rule),
        (BufferError, lambda: memoryview(sw.tensor([1.0], carrier=sw.Generic))),
        (IndexError, lambda: sw.CPU(2)[2]),
        (LookupError, lambda: sw.DType.from_name("no such dtype")),
        (MemoryError, lambda: sw.CPU(1 << 46, empty=True)),
    ],
    ids=lambda x: x.__name__ if isinstance(x, type) else "",
)
def test_each_error_is_exactly_the_builtin_of_its_name(error, trigger):
    raises_exactly(error, trigger)
    assert getattr(builtins, error.__name__) is error


def _released():
    c = sw.CPU(1)
    c.release()
    return c


def _multi_overload_spec():
    return next(s for s in sw.registered_operations() if s.name == "mul")


def test_provider_contract_error_is_an_importable_runtime_error_with_its_field():
    # operation-semantics.md: a RuntimeError subtype, importable from the top
    # level (strideweave.operation, which also names it, is not bound yet).
    assert issubclass(sw.ProviderContractError, RuntimeError)
    assert not issubclass(sw.ProviderContractError, NotImplementedError)
    e = sw.ProviderContractError("the provider returned 2 results for 1 ResultSpec", "count")
    assert (e.field, e.reason, str(e)) == ("count", e.reason, e.reason)


def test_index_error_is_a_lookup_error_and_not_implemented_a_runtime_error():
    # The hierarchy is Python's: one `except LookupError` covers both.
    with pytest.raises(LookupError):
        sw.CPU(1)[5]
    assert issubclass(sw.UnsupportedOperationPlan, NotImplementedError)
    assert issubclass(sw.UnsupportedOperationPlan, RuntimeError)


def test_unsupported_operation_plan_is_a_not_implemented_error_with_its_plan():
    cls = make_carrier_class()
    t = sw.Tensor(cls([1.0, 2.0]), 0, sw.Layout.compact(sw.Shape(2)))
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.add, t, t)
    assert isinstance(error, NotImplementedError)
    assert error.plan == sw.resolve_operation_plan("add", F32, F32)
    assert error.reason == str(error) == "ListCarrier has no capability for operation 'add'."


def test_require_capability_raises_the_plan_and_the_stable_reason():
    near = sw.resolve_operation_plan("add", F32, F32)
    near = sw.OperationPlan(operation="add", operands=near.operands, compute=near.compute, accumulation=None,
                            accumulator_dtype=None, output=I32)
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.require_capability, sw.CPU, near)
    assert error.plan == near
    assert error.reason == sw.unsupported_plan_reason(sw.CPU, near)


def test_unsupported_op_dtype_carries_backend_operation_dtype_and_axis():
    # The descriptor note: CPU's comparisons cannot accumulate into an output.
    error = raises_exactly(sw.UnsupportedOpDType, sw.require_capability, sw.CPU, "eq", F32,
                           axis=sw.ExecutionAxis.accumulation)
    assert isinstance(error, sw.UnsupportedOperationPlan)
    assert (error.backend, error.operation, error.dtype, error.axis) == ("CPU", "eq", F32, sw.ExecutionAxis.accumulation)
    assert error.plan == sw.resolve_operation_plan("eq", F32, F32)


def test_unsupported_op_dtype_without_an_entry_has_no_plan_and_no_axis():
    error = raises_exactly(sw.UnsupportedOpDType, sw.require_capability, sw.CPU, "select", I32)
    assert (error.backend, error.operation, error.dtype, error.axis, error.plan) == ("CPU", "select", I32, None, None)


def test_unsupported_op_dtype_from_an_operation_call():
    a = sw.tensor([1.0, 2.0])
    out = sw.tensor([False, False])
    error = raises_exactly(sw.UnsupportedOpDType, sw.eq, a, a, out=sw.accumulate_into(out))
    assert error.axis == sw.ExecutionAxis.accumulation
    assert out.tolist() == [False, False] and out.carrier.version == 0


def test_errors_leave_everything_as_it_was():
    c = sw.CPU(2, dtype=I32)
    raises_exactly(TypeError, c.set_value, 0, 1.5)
    raises_exactly(OverflowError, c.set_value, 0, 2**31)
    raises_exactly(IndexError, c.set_value, 2, 1)
    assert c.version == 0 and [c[0], c[1]] == [0, 0]
    assert BOOL is sw.DType.Bool
