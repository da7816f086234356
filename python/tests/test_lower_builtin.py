"""strideweave.operation.lower_builtin: a built-in call as its kernels see it
(docs/extension.md, "Built-in operations in a kernel pattern"). Beyond the
specification; it is the seam the CUDA carrier's patterns use (docs/cuda.md).
"""

import pytest

import strideweave as sw
from strideweave import operation as op


def lowered(name, *operands, **options):
    return op.lower_builtin(op.resolve_call(op.get_definition(name), *operands, **options))


def test_broadcast_operands_are_views_of_the_result_grid():
    a = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = sw.tensor([10.0, 20.0])
    call = lowered("add", a, b)
    assert call.plan == sw.resolve_operation_plan("add", sw.DType.Float32, sw.DType.Float32)
    assert [tuple(t.shape) for t in call.operands] == [(2, 2), (2, 2)]
    assert call.operands[1].tolist() == [[10.0, 20.0], [10.0, 20.0]]
    assert tuple(call.kernel_shape) == (2, 2)
    assert call.squeeze == ()
    assert call.attributes == {}


def test_options_are_normalised_as_generic_reads_them():
    x = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    call = lowered("reduce_sum", x, axes=[-1])
    assert call.attributes == {"axes": [1], "keepdims": False}
    assert tuple(call.kernel_shape) == (2,)
    assert lowered("cumsum", x, axis=-1).attributes == {"axis": 1}


def test_matmul_vector_promotion_is_squeezed():
    v = sw.tensor([1.0, 2.0])
    m = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    call = lowered("matmul", v, m)
    assert tuple(call.operands[0].shape) == (1, 2)
    assert tuple(call.kernel_shape) == (1, 2)
    assert call.squeeze == (0,)


def test_weak_scalars_are_materialised_and_scalar_first_mul_runs_the_registry_order():
    x = sw.tensor([1.0, 2.0])
    call = lowered("mul", 2.5, x)
    assert call.plan == sw.resolve_operation_plan("mul", sw.DType.Float32, 2.5)
    assert call.operands[1] == 2.5
    assert call.operands[0].tolist() == [1.0, 2.0]


def test_errors_are_the_typed_calls_and_user_definitions_are_refused():
    x = sw.tensor([1.0, 2.0])
    with pytest.raises(ValueError):
        lowered("cumsum", x, axis=3)  # the typed function's own axis check
    f32 = sw.DType.Float32
    name = "test_lower_builtin.identity"
    plan = sw.OperationPlan(operation=name, operands=(sw.OperandPlan(sw.OperandRole.TENSOR, f32, f32),),
                            compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=f32)
    mine = op.define_operation(
        name, op.OperationSchema([op.OperandSpec("x", op.OperandKind.TENSOR)]),
        lambda call: op.ResolvedInvocation(call, plan, [op.ResultSpec.compact(f32, call.operands[0].shape)]),
        vjp=op.NON_DIFFERENTIABLE)
    with pytest.raises(TypeError, match="not a built-in"):
        op.lower_builtin(op.resolve_call(mine, x))
    with pytest.raises(TypeError):
        op.lower_builtin(x)
