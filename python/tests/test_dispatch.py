"""carrier.dispatch_op and Operation (core-concepts.md 1.8 and 6.7; upstream
carrier-dispatch), and definition-free custom carriers that compute through
their dispatch hook (carrier-extension.md R13.1). Each test that needs a
custom class makes a fresh one: a class is sealed on first observation."""

import pytest

import strideweave as sw
from conftest import F32, I32, make_carrier_class, raises_exactly

ADD = sw.resolve_operation_plan("add", F32, F32)
MUL = sw.resolve_operation_plan("mul", F32, F32)


# ---- dispatch_op and its Operation


def test_carrier_dispatch_dispatch_is_an_instance_operation_with_exact_class_metadata():
    x = sw.tensor([1.0, 2.0])
    op = x.carrier.dispatch_op("add")
    assert isinstance(op, sw.Operation)
    assert op._operation_name == "add" and op._dispatch_carrier_class is sw.CPU
    raises_exactly(TypeError, sw.CPU.dispatch_op, "add")  # no instance
    raises_exactly(TypeError, x.carrier.dispatch_op, 3)  # not a str
    raises_exactly(NotImplementedError, x.carrier.dispatch_op, "no_such_operation")


def test_carrier_dispatch_every_dispatch_returns_a_fresh_single_use_operation():
    x = sw.tensor([1.0, 2.0])
    a, b = x.carrier.dispatch_op("add"), x.carrier.dispatch_op("add")
    assert a is not b
    y = a.forward(x, x)
    assert y.tolist() == [2.0, 4.0]
    raises_exactly(RuntimeError, a.forward, x, x)  # single use
    assert b.forward(x, x).tolist() == [2.0, 4.0]


def test_core_concepts_6_2_the_result_autograd_ctx_is_the_dispatched_operation():
    x, w = sw.tensor([1.0, 2.0]), sw.tensor([3.0, 4.0])
    op = x.carrier.dispatch_op("mul")
    y = op.forward(x, w)
    assert y.autograd_ctx is op
    assert op.inputs()[0] is x and op.inputs()[1] is w  # the caller's very objects
    sw.reduce_sum(y).backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_typed_function_by_name_and_dispatch_op_reach_the_same_path():
    x = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    typed = sw.reduce_sum(x, axes=[0])
    dispatched = x.carrier.dispatch_op("reduce_sum").forward(x, options={"axes": [0]})
    assert typed.tolist() == dispatched.tolist()
    assert typed.autograd_ctx._operation_name == dispatched.autograd_ctx._operation_name == "reduce_sum"
    assert typed.autograd_ctx._dispatch_carrier_class is dispatched.autograd_ctx._dispatch_carrier_class


def test_carrier_dispatch_options_must_be_bound_to_the_operation():
    x = sw.tensor([1.0, 2.0])
    bound = sw.OperationExecutionOptions("reduce_sum", accumulator_dtype=sw.DType.Float64)
    assert x.carrier.dispatch_op("reduce_sum").forward(x, options=bound).item() == 3.0
    raises_exactly(ValueError, x.carrier.dispatch_op("matmul").forward, x, x, options=bound)
    raises_exactly(TypeError, x.carrier.dispatch_op("reduce_sum").forward, x, options=3)
    raises_exactly(TypeError, x.carrier.dispatch_op("reduce_sum").forward, x, axes=[0])  # only options=


def test_carrier_dispatch_views_are_dispatch_names():
    x = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    op = x.carrier.dispatch_op("permute")
    y = op.forward(x, (1, 0))
    assert y.shape == sw.Shape(3, 2) and y.carrier is x.carrier
    assert y.autograd_ctx is op and op.inputs()[0] is x
    assert x.carrier.dispatch_op("reshape").forward(x, (6,)).shape == sw.Shape(6)


def test_carrier_dispatch_storage_only_classes_refuse_every_name():
    fb = sw.FileBacked(dtype=F32)
    raises_exactly(NotImplementedError, fb.dispatch_op, "add")


def test_an_operation_never_dispatched_cannot_forward():
    raises_exactly(NotImplementedError, sw.Operation().forward, sw.tensor([1.0]))
    assert sw.Operation()._operation_name is None


# ---- definition-free custom carriers: the dispatch hook (R13.1)


class AddKernel(sw.Operation):
    """A custom class's add: writes the elementwise sum into call.output."""

    calls = 0

    def _forward(self, call):
        AddKernel.calls += 1
        a, b = call.operands
        out = call.output
        for i in range(out.size()):
            out.carrier[i] = a.values()[i] + b.values()[i]


def hook_class(kernels):
    cls = make_carrier_class("Hooked")

    def _dispatch_op(self, name):
        if name in kernels:
            return kernels[name]()
        return sw.Carrier._dispatch_op(self, name)

    cls._dispatch_op = _dispatch_op
    return cls


def test_r13_1_a_custom_definition_free_class_executes_a_declared_built_in_through_its_hook():
    cls = hook_class({"add": AddKernel})
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(ADD)])
    x = sw.Tensor(cls([1.0, 2.0]), 0, sw.Layout.compact(sw.Shape(2)))
    y = sw.Tensor(cls([10.0, 20.0]), 0, sw.Layout.compact(sw.Shape(2)))
    before = AddKernel.calls
    z = sw.add(x, y)  # ordinary dispatch
    assert AddKernel.calls == before + 1
    assert type(z.carrier) is cls and z.values() == [11.0, 22.0]
    assert isinstance(z.autograd_ctx, AddKernel) and z.autograd_ctx._dispatch_carrier_class is cls
    # dispatch_op asks the same hook.
    op = x.carrier.dispatch_op("add")
    assert isinstance(op, AddKernel)
    assert op.forward(x, y).values() == [11.0, 22.0]


def test_r13_1_the_gate_comes_first_and_an_unimplemented_plan_is_unsupported():
    cls = hook_class({"add": AddKernel})
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(ADD),
                                             sw.OperationCapability.from_plan(MUL)])
    x = sw.Tensor(cls([1.0, 2.0]), 0, sw.Layout.compact(sw.Shape(2)))
    i = sw.Tensor(cls([1, 2], dtype=I32), 0, sw.Layout.compact(sw.Shape(2)))
    raises_exactly(sw.UnsupportedOperationPlan, sw.add, i, i)  # not declared: the gate
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.mul, x, x)  # declared, but the hook supplies none
    assert "dispatch hook" in str(error)


def twice_definition(stem):
    """A user-defined elementwise operation (Float32 in, Float32 out)."""
    schema = sw.operation.OperationSchema([sw.operation.OperandSpec("x", sw.operation.OperandKind.TENSOR, True)])
    name = f"pytest_dispatch_{stem}.twice"

    def resolve(call):
        x = call.operands[0]
        plan = sw.OperationPlan(operation=name, operands=(sw.OperandPlan(sw.OperandRole.TENSOR, F32, F32),),
                                compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)
        return sw.operation.ResolvedInvocation(call, plan, [sw.operation.ResultSpec.compact(F32, x.shape)],
                                               saved_operands=[0])

    def vjp(context, cotangents):
        return (sw.mul(cotangents[0], 2.0),)

    d = sw.operation.define_operation(name, schema, resolve, None, vjp=vjp)
    plan = sw.OperationPlan(operation=name, operands=(sw.OperandPlan(sw.OperandRole.TENSOR, F32, F32),),
                            compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)
    return d, plan


class TwiceKernel(sw.Operation):
    def _forward(self, call):
        (x,) = call.operands
        assert call.invocation is not None and call.invocation.operation == call.operation
        for i, v in enumerate(x.values()):
            call.output.carrier[i] = 2.0 * v


def test_r13_1_a_custom_operation_without_an_implementation_is_unsupported_and_does_no_storage_work():
    d, plan = twice_definition("missing")
    cls = make_carrier_class("NoCustom")
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(plan)])
    carrier = cls([1.0, 2.0])
    x = sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(2)))
    error = raises_exactly(sw.UnsupportedOperationPlan, d, x)
    assert d.name in str(error)
    assert carrier.calls["_make_like"] == 0 and carrier.version == 0


class ScaleKernel(sw.Operation):
    """mul(tensor, weak scalar) on a custom class (the VJP of twice uses it)."""

    def _forward(self, call):
        x, factor = call.operands
        for i, v in enumerate(x.values()):
            call.output.carrier[i] = v * factor


def test_r13_1_a_custom_operation_runs_through_the_hook_and_its_definition_vjp_through_ordinary_dispatch():
    d, plan = twice_definition("present")
    cls = hook_class({d.name: TwiceKernel, "mul": ScaleKernel})
    scale = sw.resolve_operation_plan("mul", F32, 2.0)
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(plan),
                                             sw.OperationCapability.from_plan(scale)])
    x = sw.Tensor(cls([1.0, 2.0]), 0, sw.Layout.compact(sw.Shape(2)))
    y = d(x)
    assert type(y.carrier) is cls and y.values() == [2.0, 4.0]
    assert isinstance(y.autograd_ctx, TwiceKernel) and y.autograd_ctx.invocation is not None
    y.backward(sw.Tensor(cls([1.0, 3.0]), 0, sw.Layout.compact(sw.Shape(2))))
    assert type(x.grad.carrier) is cls and x.grad.values() == [2.0, 6.0]


# ---- one tensor, one object (what inputs() and the caller's objects need)


def test_a_tensor_handed_back_by_cpp_is_the_callers_very_object():
    x = sw.Tensor(sw.tensor([1.0, 2.0]).carrier, 0, sw.Layout.compact(sw.Shape(2)))  # built by Tensor(...)
    y = sw.add(x, x)
    assert y.autograd_ctx.inputs()[0] is x and y.autograd_ctx.inputs()[1] is x
    out = sw.tensor([0.0, 0.0])
    with sw.no_grad():
        assert sw.add(x, x, out=out) is out
    inputs = y.autograd_ctx.inputs()
    del x
    assert inputs[0].tolist() == [1.0, 2.0]  # the object lives as long as someone holds it


def test_a_tensor_whose_object_died_gets_one_new_object():
    # Issue 20: the object is kept in the tensor's binding slot; the slot is
    # cleared when its object dies and filled again by the next object.
    x = sw.tensor([1.0, 2.0])
    y = sw.add(x, x)
    del x
    first = y.autograd_ctx.inputs()[0]
    assert first.tolist() == [1.0, 2.0]
    assert y.autograd_ctx.inputs()[0] is first and y.autograd_ctx.inputs()[1] is first
    del first
    again = y.autograd_ctx.inputs()
    assert again[0] is again[1] and again[0].tolist() == [1.0, 2.0]
