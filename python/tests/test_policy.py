"""The dtype policy through the Python surface (operation-dtype-policy.md):
one test per requirement's scenarios, named R<n>_..., so a reader finds each
from the spec."""

import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly

F64 = sw.DType.Float64
T, W = sw.OperandRole.TENSOR, sw.OperandRole.WEAK_SCALAR


def test_R1_add_int32_float32_converts_both_to_float32():
    p = sw.resolve_operation_plan("add", I32, F32)
    assert p == sw.OperationPlan(
        operation="add",
        operands=(sw.OperandPlan(role=T, dtype=I32, convert_to=F32), sw.OperandPlan(role=T, dtype=F32, convert_to=F32)),
        compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)
    assert hash(p) == hash(sw.resolve_operation_plan("add", I32, F32))


def test_R1_records_and_enums_are_immutable_and_hashable():
    p = sw.resolve_operation_plan("mul", I32, 2)
    for record, field in [(p, "output"), (p.operands[1], "dtype"), (p, "anything")]:
        raises_exactly(AttributeError, setattr, record, field, None)
    assert p.operands[1] == sw.OperandPlan(W, None, I32) and len({p, sw.resolve_operation_plan("mul", I32, 2)}) == 1
    assert sw.OperandRole.TENSOR.value == "tensor" and sw.OperandRole.WEAK_SCALAR.value == "weak_scalar"
    raises_exactly(TypeError, sw.OperandPlan, "tensor", F32, F32)
    raises_exactly(TypeError, sw.OperationPlan, "add", (), sw.Arithmetic.BINARY32, None, None, "float32")


def test_R1_autograd_participation_is_output_exactly_float32():
    x = sw.tensor([1.0])
    assert sw.mul(x, 2.0).requires_grad and not sw.lt(x, 2.0).requires_grad


def test_R2_arithmetic_values_are_lower_case_names():
    assert {a.value for a in sw.Arithmetic} >= {"binary32", "int32_exact_checked", "int32_exact"}


def test_R2_int32_sum_with_an_out_of_range_partial_sum_but_in_range_total_succeeds():
    t = sw.tensor([sw.INT32_MAX, 1, -2])
    assert sw.reduce_sum(t).item() == sw.INT32_MAX - 1
    raises_exactly(OverflowError, sw.reduce_sum, sw.tensor([sw.INT32_MAX, 1]))


def test_R3_single_overload_spec_exposes_roles_and_rule_multi_overload_raises():
    specs = {s.name: s for s in sw.registered_operations()}
    assert specs["add"].roles == (T, T)
    raises_exactly(AttributeError, lambda: specs["mul"].roles)
    raises_exactly(AttributeError, lambda: specs["mul"].rule)


def test_R3_dtype_operand_positions_keep_options_out_of_planning():
    specs = {s.name: s for s in sw.registered_operations()}
    assert specs["cumsum"].dtype_operand_positions == (0,)  # the axis never becomes a weak scalar
    assert specs["conv_general"].dtype_operand_positions == (0, 1)
    assert specs["add"].dtype_operand_positions is None  # every forward argument plans


def test_R4_registry_sorted_by_name_and_representation_only_names_absent():
    names = [s.name for s in sw.registered_operations()]
    assert names == sorted(names) and len(names) == len(set(names)) == 56
    assert {"view", "reshape", "permute", "broadcast_to", "squeeze", "unsqueeze", "move"}.isdisjoint(names)


def test_R4_defaults_yield_101_plans_with_both_accumulators_and_no_select():
    plans = sw.resolvable_plans()
    assert len(plans) == 101 and len(set(plans)) == 101
    assert not any(p.operation == "select" for p in plans)
    for op in ("reduce_sum", "matmul"):
        accs = {p.accumulator_dtype for p in plans if p.operation == op and p.output is F32}
        assert accs == {F32, F64}
    assert sw.SUPPORTED_TENSOR_DTYPES == (F32, I32) and sw.WEAK_SCALAR_PROBES == (3, -1, 0.5)
    assert sw.SUPPORTED_ACCUMULATOR_DTYPES == (F32, F64) and set(sw.CONFIGURABLE_OPERATIONS) == {"reduce_sum", "matmul"}
    assert (sw.INT32_MIN, sw.INT32_MAX, sw.POW_INTEGER_EXPONENT_MAX) == (-2**31, 2**31 - 1, 2**31 - 1)


def test_R4_adding_bool_to_the_domain_makes_domainless_overloads_not_implemented():
    raises_exactly(NotImplementedError, sw.resolvable_plans, (F32, I32, BOOL))


def test_R5_tensor_tensor_and_tensor_scalar_choose_distinct_overloads():
    for op in ("mul", "pow"):
        assert sw.resolve_operation_plan(op, F32, F32).roles == (T, T)
        assert sw.resolve_operation_plan(op, F32, 2).roles == (T, W)


def test_R5_errors():
    raises_exactly(NotImplementedError, sw.resolve_operation_plan, "no_such_op", F32)
    raises_exactly(TypeError, sw.resolve_operation_plan, "add", F32)
    raises_exactly(TypeError, sw.resolve_operation_plan, "add", F32, 2)  # no (tensor, weak) overload
    raises_exactly(TypeError, sw.resolve_operation_plan, "mul", F32, "2")
    options = sw.OperationExecutionOptions("reduce_sum", F64)
    raises_exactly(TypeError, sw.resolve_operation_plan, "reduce_sum", F32, accumulator_dtype=F64, options=options)
    raises_exactly(TypeError, sw.resolve_operation_plan, "reduce_sum", F32, options="float64")
    raises_exactly(ValueError, sw.resolve_operation_plan, "matmul", F32, F32, options=options)


def test_R6_categories_compounds_and_unimplemented_dtypes():
    for category in (sw.DType.Any, sw.DType.Floating, sw.DType.Integer):
        raises_exactly(TypeError, sw.resolve_operation_plan, "add", category, F32)
    compound = sw.PlanarCompoundDType("py_policy_complex", simple_types=(F32, F32))
    raises_exactly(NotImplementedError, sw.resolve_operation_plan, "add", compound, F32)
    for d in (F64, sw.DType.Int8, sw.DType.E4M3, BOOL):
        raises_exactly(NotImplementedError, sw.resolve_operation_plan, "add", d, F32)
    raises_exactly(TypeError, sw.resolve_operation_plan, "select", F32, F32, F32)  # Float32 as the condition


def test_R6_matching_is_by_identity():
    impostor = sw.SimpleDType("py_policy_float32_lookalike", bits=32, supertype=sw.DType.Floating)
    raises_exactly(NotImplementedError, sw.resolve_operation_plan, "add", impostor, F32)


def test_R7_weak_scalar_kinds_and_bool_counts_as_float():
    assert sw.weak_scalar_kind(True) is sw.WeakScalarKind.FLOAT
    assert sw.weak_scalar_kind(3) is sw.WeakScalarKind.INTEGER and sw.weak_scalar_kind(0.5) is sw.WeakScalarKind.FLOAT
    raises_exactly(TypeError, sw.weak_scalar_kind, "3")
    assert sw.resolve_operation_plan("mul", I32, True).output is F32


def test_R7_int32_mul_overflowing_scalar_but_float32_is_fine():
    raises_exactly(OverflowError, sw.mul, sw.tensor([1]), 2**31)
    assert sw.mul(sw.tensor([1.0]), 2**31).item() == 2.0**31


def test_R8_promotion_families():
    assert sw.resolve_operation_plan("add", I32, I32).compute is sw.Arithmetic.INT32_EXACT_CHECKED
    assert sw.resolve_operation_plan("elementwise_mul", I32, F32).output is F32
    assert sw.resolve_operation_plan("div", I32, I32).output is F32
    exact = sw.resolve_operation_plan("pow", I32, 2**31 - 1)
    assert exact.output is I32 and exact.operands[1].convert_to is I32
    for exponent in (-1, 2**31, 2.0, True):
        assert sw.resolve_operation_plan("pow", I32, exponent).output is F32
    assert sw.resolve_operation_plan("pow", I32, I32).output is F32
    assert sw.resolve_operation_plan("relu", I32).output is I32 and sw.resolve_operation_plan("tanh", I32).output is F32
    assert sw.resolve_operation_plan("lt", F32, F32).output is BOOL
    assert sw.resolve_operation_plan("logical_not", F32).output is BOOL


def test_R9_select_and_restricted_domains():
    p = sw.resolve_operation_plan("select", BOOL, F32, F32)
    assert (p.output, p.compute, p.accumulation) == (F32, sw.Arithmetic.BINARY32, None)
    raises_exactly(TypeError, sw.resolve_operation_plan, "reduce_prod", I32)


def test_R10_accumulator_options():
    o = sw.OperationExecutionOptions("reduce_sum", F64)
    assert o.accumulator_dtype is F64 and sw.operation_execution_options("matmul").accumulator_dtype in (None, F32)
    raises_exactly(TypeError, sw.OperationExecutionOptions, "add", F64)
    raises_exactly(TypeError, sw.OperationExecutionOptions, "reduce_sum", "float64")
    raises_exactly(TypeError, sw.OperationExecutionOptions, "reduce_sum", sw.DType.Floating)
    raises_exactly(NotImplementedError, sw.OperationExecutionOptions, "reduce_sum", I32)
    raises_exactly(TypeError, sw.resolve_operation_plan, "reduce_sum", I32, options=o)
    base = sw.resolve_operation_plan("reduce_sum", F32)
    wide = sw.resolve_operation_plan("reduce_sum", F32, options=o)
    assert wide.accumulator_dtype is F64
    assert (wide.operands, wide.compute, wide.output) == (base.operands, base.compute, base.output)
    assert sw.plan_accumulator_variants(base) == (base, wide)
    assert sw.plan_accumulator_variants(sw.resolve_operation_plan("add", F32, F32)) == (
        sw.resolve_operation_plan("add", F32, F32),)


def test_R10_options_reach_the_operation_as_a_keyword():
    x = sw.tensor([1.0, 2.0])
    assert sw.reduce_sum(x, options=sw.OperationExecutionOptions("reduce_sum", F64)).dtype() is F32
    raises_exactly(TypeError, sw.reduce_sum, x, options="float64")
    raises_exactly(ValueError, sw.reduce_sum, x, options=sw.OperationExecutionOptions("matmul", F64))


def test_R11_generic_and_cpu_agree_on_every_default_plan_they_share():
    # One evaluation per (operation, representative dtype) both classes
    # declare, on equal inputs: the same dtype and values.
    compared = 0
    for p in sw.capabilities_for_carrier_class(sw.Generic):
        if not sw.supports_operation_plan(sw.CPU, p.to_plan()):
            continue
        plan = p.to_plan()
        if plan.operation not in ("add", "sub", "mul", "div", "exp", "tanh", "relu", "neg", "abs"):
            continue
        operands = []
        for o in plan.operands:
            if o.role is W:
                operands.append(2 if o.convert_to is I32 else 0.5)
            else:
                operands.append([1, -2, 3] if o.dtype is I32 else [1.5, -2.25, 3.0])
        results = []
        for cls in (sw.Generic, sw.CPU):
            args = [sw.tensor(v, dtype=o.dtype, carrier=cls) if isinstance(v, list) else v
                    for v, o in zip(operands, plan.operands)]
            results.append(getattr(sw, plan.operation)(*args))
        assert results[0].dtype() is results[1].dtype() is plan.output
        assert results[0].tolist() == results[1].tolist(), plan
        compared += 1
    assert compared >= 12
