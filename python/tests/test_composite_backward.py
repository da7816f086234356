"""CompositeProvider.backward (docs/extension.md, "Composite backward"): a
definition-backed composite may run the backward of a call it executed, by
evaluating the invocation's own VJP its own way; the framework validates the
return exactly as a VJP's."""

import pytest

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, raises_exactly
from audit_support import TENSOR, _names, ListProvider, compact, f32_plan, fresh_name, leaf, values_of


def tripling(backward):
    """A user operation triple(x) = 3x run by a definition-backed dependent
    class whose CompositeProvider has `backward`; returns (operation, class)."""

    def resolve(call):
        x = call.operands[0]
        return op.ResolvedInvocation(call, f32_plan(call.definition.name), [op.ResultSpec.compact(F32, x.shape)])

    def vjp(context, cotangents):
        (g,) = cotangents
        return (sw.mul(g, 3.0),)

    triple = op.define_operation(fresh_name("triple"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                                 resolve, vjp=vjp)
    plan = f32_plan(triple.name)

    def prepare(carrier, invocation):
        (x,) = invocation.operands
        return ext.PreparedComposite(lambda: ext.ProviderResult([sw.tensor([3.0 * v for v in values_of(x)])]))

    cls = type(f"Tiered{next(_names)}", (sw.DependentCarrier,), {})

    def init(self, primary, slots, **kw):
        self.primary = primary
        sw.DependentCarrier.__init__(self, slots, **kw)

    cls.__init__ = init
    composite = ext.CompositeProvider(lambda carrier: [sw.OperationCapability.from_plan(plan)],
                                      lambda carrier, invocation: (sw.CPU,), prepare, backward=backward)
    assert composite.backward is backward
    ext.register_carrier_definition(cls, ext.CarrierDefinition(ListProvider().provider, composite=composite))
    return triple, cls


def operand(cls):
    c = cls(sw.CPU(8), 2, dtype=F32)
    c[0], c[1] = 1.0, 2.0
    return c, leaf(compact(c, 2))


def test_composite_backward_runs_the_invocations_own_vjp_and_its_gradients_are_used():
    calls = []

    def backward(carrier, context, cotangents):
        calls.append((carrier, context.invocation.operation))
        return context.invocation.definition.vjp(context, cotangents)

    triple, cls = tripling(backward)
    c, x = operand(cls)
    triple(x).backward(sw.tensor([1.0, -1.0]))
    assert calls == [(c, triple.name)]
    assert x.grad.tolist() == [3.0, -3.0]


def test_composite_backward_returns_are_validated_like_a_vjps():
    triple, cls = tripling(lambda carrier, context, cotangents: (None, None))
    _, x = operand(cls)
    with pytest.raises(ValueError):
        triple(x).backward(sw.tensor([1.0, 1.0]))
    triple, cls = tripling(lambda carrier, context, cotangents: "gradients")
    _, x = operand(cls)
    with pytest.raises(TypeError):
        triple(x).backward(sw.tensor([1.0, 1.0]))


def test_composite_backward_must_be_callable_or_none():
    f = lambda *a: ()  # noqa: E731
    raises_exactly(TypeError, ext.CompositeProvider, f, f, f, backward=5)
    assert ext.CompositeProvider(f, f, f).backward is None
