"""Backend capabilities through the Python surface (backend-capabilities.md):
the records, exact matching, class-level and carrier queries, and the
shipped classes' sealed sets. Custom classes are in test_python_carriers.py."""

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, make_carrier_class, raises_exactly

T, W = sw.OperandRole.TENSOR, sw.OperandRole.WEAK_SCALAR
ADD = sw.resolve_operation_plan("add", F32, F32)
SUM = sw.resolve_operation_plan("reduce_sum", F32)


def test_construct_a_valid_capability_exposing_its_fields():
    c = sw.OperationCapability(operation="add", operands=(sw.OperandCapability(T, F32, F32),) * 2,
                               compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)
    assert (c.operation, c.compute, c.accumulation, c.accumulator_dtype, c.output) == (
        "add", sw.Arithmetic.BINARY32, None, None, F32)
    assert c == sw.OperationCapability.from_plan(ADD) and hash(c) == hash(sw.OperationCapability.from_plan(ADD))
    raises_exactly(AttributeError, setattr, c, "output", I32)
    assert not hasattr(c, "execute") and not hasattr(c, "kernel")


def test_reject_invalid_fields():
    raises_exactly(TypeError, sw.OperandCapability, W, F32, F32)  # a weak scalar has no storage dtype
    raises_exactly(TypeError, sw.OperandCapability, T, None, F32)
    raises_exactly(TypeError, sw.OperandCapability, "tensor", F32, F32)
    raises_exactly(TypeError, sw.OperandCapability, T, sw.DType.Floating, F32)
    ok = (sw.OperandCapability(T, F32, F32),)
    raises_exactly(ValueError, sw.OperationCapability, "add", (), sw.Arithmetic.BINARY32, None, None, F32)
    raises_exactly(TypeError, sw.OperationCapability, 3, ok, sw.Arithmetic.BINARY32, None, None, F32)
    raises_exactly(TypeError, sw.OperationCapability, "neg", ok, "binary32", None, None, F32)
    raises_exactly(TypeError, sw.OperationCapability, "neg", ok, sw.Arithmetic.BINARY32, "floating", None, F32)
    raises_exactly(TypeError, sw.OperationCapability, "neg", ok, sw.Arithmetic.BINARY32, None, "f32", F32)
    raises_exactly(TypeError, sw.OperationCapability, "neg", ok, sw.Arithmetic.BINARY32, None, None, None)
    raises_exactly(TypeError, sw.OperationCapability, "neg", [F32], sw.Arithmetic.BINARY32, None, None, F32)


def test_round_trip_a_resolved_plan_and_reject_near_matches():
    for plan in sw.resolvable_plans():
        assert sw.OperationCapability.from_plan(plan).matches(plan)
        assert sw.OperationCapability.from_plan(plan).to_plan() == plan
    c = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", I32, F32))
    assert not c.matches(sw.resolve_operation_plan("add", F32, I32))  # operand order
    assert not c.matches(sw.resolve_operation_plan("add", F32, F32))  # conversion
    wide = sw.resolve_operation_plan("reduce_sum", F32, options=sw.OperationExecutionOptions("reduce_sum", sw.DType.Float64))
    assert not sw.OperationCapability.from_plan(SUM).matches(wide)  # accumulator
    assert not sw.OperationCapability.from_plan(sw.resolve_operation_plan("lt", F32, F32)).matches(
        sw.resolve_operation_plan("sub", F32, F32))


def test_class_queries_share_one_deterministic_set():
    caps = sw.capabilities_for_carrier_class(sw.CPU)
    assert caps == tuple(sorted(caps)) and len(caps) == len(set(caps))
    adds = sw.capabilities_for_carrier_class(sw.CPU, "add")
    assert adds and all(c.operation == "add" for c in adds) and adds == tuple(c for c in caps if c.operation == "add")
    # Equality is the six plan-shape fields (the execution axes live beside it).
    assert sw.matching_capability(sw.CPU, ADD) == sw.OperationCapability.from_plan(ADD)
    assert sw.supports_operation_plan(sw.CPU, ADD) and sw.unsupported_plan_reason(sw.CPU, ADD) is None
    assert sw.require_capability(sw.CPU, ADD) == sw.matching_capability(sw.CPU, ADD)
    for query in (sw.matching_capability, sw.supports_operation_plan, sw.unsupported_plan_reason, sw.require_capability):
        raises_exactly(TypeError, query, sw.CPU(1), ADD)  # an instance where a class is required
        raises_exactly(TypeError, query, sw.CPU, "add")  # not an OperationPlan
    raises_exactly(TypeError, sw.capabilities_for_carrier_class, "CPU")


def test_require_an_unsupported_shape_names_the_unmatched_plan():
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(ADD)])
    plan = sw.resolve_operation_plan("add", I32, I32)
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.require_capability, cls, plan)
    assert error.plan == plan and error.reason == str(error) == sw.unsupported_plan_reason(cls, plan)
    assert "none matches the plan" in error.reason
    other = raises_exactly(sw.UnsupportedOperationPlan, sw.require_capability, cls, SUM)
    assert "no capability for operation 'reduce_sum'" in other.reason


def test_a_float32_cpu_reports_its_int32_reach():
    c = sw.CPU(2, dtype=F32)
    int_plans = [cap for cap in c.operation_capabilities() if cap.output is I32]
    assert int_plans and c.operation_capabilities() == sw.capabilities_for_carrier_class(sw.CPU)
    c.release()  # reach, not state: a released carrier answers the same
    assert c.supports_operation_plan(sw.resolve_operation_plan("add", I32, I32))
    raises_exactly(TypeError, c.supports_operation_plan, "add")
    assert c.require_operation_plan(ADD).to_plan() == ADD


def test_shipped_declarations_are_complete_and_sealed():
    for cls in (sw.Generic, sw.CPU):
        declared = {c.to_plan() for c in sw.capabilities_for_carrier_class(cls)}
        for plan in sw.resolvable_plans():
            assert plan in declared, (cls.__name__, plan)
        assert sw.supports_operation_plan(cls, sw.resolve_operation_plan("select", BOOL, F32, F32))
        raises_exactly(TypeError, sw.register_operation_capabilities, cls, [sw.OperationCapability.from_plan(ADD)])


def test_gate_a_backend_execution_before_any_work():
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [])
    c = cls([1.0, 2.0])
    t = sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(2)))
    out = sw.Tensor(cls([0.0, 0.0]), 0, sw.Layout.compact(sw.Shape(2)))
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.add, t, t, out=out)
    assert error.plan == ADD and out.carrier.version == 0 and out.carrier.slots == [0.0, 0.0]
    assert c.calls["_read_slot"] == 0 and c.calls["_make_like"] == 0


def test_descriptor_query_by_operation_and_dtype():
    assert sw.capability(sw.CPU, "add", F32).matches(ADD)
    assert sw.capability(sw.CPU, "no_such_operation", F32) is None
    error = raises_exactly(sw.UnsupportedOpDType, sw.require_capability, sw.CPU, "no_such_operation", F32)
    assert (error.backend, error.operation, error.dtype, error.axis, error.plan) == (
        "CPU", "no_such_operation", F32, None, None)
    table = sw.render_capability_table(sw.CPU).splitlines()
    assert table[0].startswith("| operation | operands |")
    assert len(table) == 2 + len(sw.capabilities_for_carrier_class(sw.CPU))
