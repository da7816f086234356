"""Issue 24, item 6: a capability's identity is its six plan-shape fields
(backend-capabilities.md, "A capability mirrors every plan matching
dimension"); the descriptor note's execution axes are kept beside it, per
carrier class and capability (backend-capability-descriptor.md;
docs/capabilities.md, "What a capability is, and what sits beside it")."""

import strideweave as sw
from strideweave import operation as op
from conftest import F32, I32, make_carrier_class, raises_exactly

SHIPPED = (sw.Generic, sw.CPU)


def test_backend_capabilities_require_operation_plan_equals_from_plan_for_every_shipped_plan():
    instances = {sw.Generic: sw.Generic([0.0], dtype=F32), sw.CPU: sw.CPU(1)}
    checked = 0
    for cls in SHIPPED:
        for capability in sw.capabilities_for_carrier_class(cls):
            plan = capability.to_plan()
            mirrored = sw.OperationCapability.from_plan(plan)
            required = instances[cls].require_operation_plan(plan)
            assert required == mirrored and hash(required) == hash(mirrored), plan
            assert sw.require_capability(cls, plan) == mirrored and sw.matching_capability(cls, plan) == mirrored
            checked += 1
    assert checked > 100


def test_backend_capability_descriptor_execution_axes_are_queried_beside_the_capability():
    cpu = sw.CPU(1)
    for cls, instance in ((sw.Generic, sw.Generic([0.0], dtype=F32)), (sw.CPU, cpu)):
        for capability in sw.capabilities_for_carrier_class(cls):
            axes = sw.execution_axes(cls, capability)
            assert type(axes) is sw.ExecutionAxes and instance.execution_axes(capability) == axes
    add = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))
    assert sw.execution_axes(sw.CPU, add).borrowed_input is sw.SupportLevel.FallbackCopy
    assert sw.execution_axes(sw.Generic, add).borrowed_input is sw.SupportLevel.Native
    assert not hasattr(add, "axes")
    other = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", I32, I32))
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [add])
    raises_exactly(sw.UnsupportedOperationPlan, sw.execution_axes, cls, other)
    raises_exactly(TypeError, sw.execution_axes, cpu, add)  # an instance where a class is required
    raises_exactly(TypeError, sw.execution_axes, sw.CPU, add.to_plan())  # not a capability
    raises_exactly(TypeError, cpu.execution_axes, sw.CPU)


def test_backend_capability_descriptor_explain_reports_the_axes_beside_the_admitting_capability():
    x = sw.tensor([1.0, 2.0])
    e = sw.explain(op.get_definition("add"), x, x)
    assert e.admitted_by == sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))
    assert e.admitted_axes == sw.execution_axes(sw.CPU, e.admitted_by)
    assert "axes:" in str(e)


def test_backend_capabilities_declared_execution_axes_stay_beside_the_declared_shapes():
    add = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))
    mul = sw.OperationCapability.from_plan(sw.resolve_operation_plan("mul", F32, F32))
    wide = sw.ExecutionAxes(caller_output=sw.SupportLevel.FallbackCopy)
    cls = make_carrier_class()
    sw.register_operation_capabilities(cls, [add, mul], execution_axes={add: wide})
    assert sw.execution_axes(cls, add) == wide and sw.execution_axes(cls, mul) == sw.ExecutionAxes()
    assert sw.capabilities_for_carrier_class(cls) == tuple(sorted([add, mul]))
    stray = make_carrier_class()
    raises_exactly(ValueError, sw.register_operation_capabilities, stray, [add], execution_axes={mul: wide})
    raises_exactly(TypeError, sw.register_operation_capabilities, stray, [add], execution_axes={add: "Native"})
    sw.register_operation_capabilities(stray, [add])  # the refused declarations published nothing


def test_backend_capabilities_duplicate_exact_shape_means_the_same_six_fields():
    add = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))
    twin = sw.OperationCapability(add.operation, add.operands, add.compute, add.accumulation, add.accumulator_dtype,
                                  add.output)
    assert twin == add and hash(twin) == hash(add) and len({add, twin}) == 1
    raises_exactly(ValueError, sw.register_operation_capabilities, make_carrier_class(), [add, twin])


def test_backend_capabilities_operation_capability_operands_must_be_a_tuple():
    add = sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))
    args = (add.compute, add.accumulation, add.accumulator_dtype, add.output)
    for bad in (list(add.operands), iter(add.operands), add.operands[0]):
        raises_exactly(TypeError, sw.OperationCapability, "add", bad, *args)
    assert sw.OperationCapability("add", tuple(add.operands), *args) == add
