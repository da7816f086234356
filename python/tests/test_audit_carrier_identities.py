"""Issue 24, items 5 and 6: Python carriers and identities as the texts
define them -- a definition-backed dependent instance (its second
finalisation, its allocation path, backward through it), tensor.carrier,
VJPContext's invocation and outputs, and the await handles' results."""

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, I32, make_carrier_class, make_dependent_class, raises_exactly
from audit_support import TENSOR, _names, ListProvider, compact, defined_class, f32_plan, fresh_name, leaf, values_of


def schema_x():
    return op.OperationSchema([op.OperandSpec("x", TENSOR, True)])


# ---- item 5: definition-backed dependent carriers

def dependent_defined_class(capabilities=lambda carrier: (), result_carriers=lambda c, inv: (),
                            prepare=lambda c, inv: ext.Unsupported("x")):
    """A definition-backed DependentCarrier class whose constructor takes its
    dependency first: Tiered(primary, slots, *, dtype, mutable=True)."""
    cls = type(f"Tiered{next(_names)}", (sw.DependentCarrier,), {})

    def init(self, primary, slots, **kw):
        self.primary = primary
        sw.DependentCarrier.__init__(self, slots, **kw)

    cls.__init__ = init
    composite = ext.CompositeProvider(capabilities, result_carriers, prepare)
    ext.register_carrier_definition(cls, ext.CarrierDefinition(ListProvider().provider, composite=composite))
    return cls


def test_backend_capabilities_a_second_finalization_of_a_definition_backed_dependent_is_a_runtime_error():
    cls = dependent_defined_class(capabilities=lambda carrier: [
        sw.OperationCapability.from_plan(sw.resolve_operation_plan("add", F32, F32))])
    c = cls(sw.CPU(1), 2, dtype=F32)
    before = c.operation_capabilities()
    raises_exactly(RuntimeError, c.finalize_operation_capabilities)
    assert c.operation_capabilities() == before and c.is_capability_finalized()


def test_carrier_extension_R3_7_new_like_of_a_dependent_whose_constructor_takes_its_dependencies():
    cls = dependent_defined_class()
    primary = sw.CPU(4)
    c = cls(primary, 2, dtype=F32)
    made = c.new_like([1.5, -2.0])
    assert type(made) is cls and made is not c and made.primary is primary
    assert [made[0], made[1]] == [1.5, -2.0] and made.is_capability_finalized()
    empty = c.allocate_like(3, dtype=I32)
    assert type(empty) is cls and empty.size() == 3 and empty.dtype() is I32


def test_operation_semantics_backward_through_a_python_dependent_carrier_built_from_its_dependencies():
    def resolve(call):
        x = call.operands[0]
        return op.ResolvedInvocation(call, f32_plan(call.definition.name), [op.ResultSpec.compact(F32, x.shape)])

    def vjp(context, cotangents):
        (g,) = cotangents
        return (sw.mul(g, 3.0),)

    triple = op.define_operation(fresh_name("triple"), schema_x(), resolve, vjp=vjp)
    plan = f32_plan(triple.name)

    def prepare(carrier, invocation):
        (x,) = invocation.operands

        def submit():
            return ext.ProviderResult([sw.tensor([3.0 * v for v in values_of(x)])])
        return ext.PreparedComposite(submit)

    cls = dependent_defined_class(capabilities=lambda carrier: [sw.OperationCapability.from_plan(plan)],
                                  result_carriers=lambda carrier, invocation: (sw.CPU,), prepare=prepare)
    c = cls(sw.CPU(8), 2, dtype=F32)
    c[0], c[1] = 1.0, 2.0
    x = leaf(compact(c, 2))
    y = triple(x)
    assert y.tolist() == [3.0, 6.0]
    y.backward(sw.tensor([1.0, -1.0]))
    assert type(x.grad.carrier) is cls and x.grad.tolist() == [3.0, -3.0]
    assert x.grad.carrier.primary is c.primary

# ---- item 6: identities

def test_core_concepts_tensor_carrier_is_the_exact_carrier_object_for_every_carrier_kind():
    plan = sw.resolve_operation_plan("add", F32, F32)
    dependent_free = make_dependent_class()
    instances = [
        sw.CPU(2),
        sw.Generic([0.0, 0.0], dtype=F32),
        make_carrier_class()([0.0, 0.0]),
        dependent_free(sw.CPU(2), []),
        defined_class()(2, dtype=F32),
        dependent_defined_class(capabilities=lambda carrier: [sw.OperationCapability.from_plan(plan)])(
            sw.CPU(2), 2, dtype=F32),
    ]
    for c in instances:
        t = compact(c, 2)
        assert t.carrier is c, type(c)
        assert type(t.carrier) is type(c) and t.carrier_type() is type(c)


def test_operation_semantics_vjp_context_shows_the_providers_invocation_and_the_published_outputs():
    captured = {"prepared": [], "contexts": []}

    def resolve(call):
        x = call.operands[0]
        inv = op.ResolvedInvocation(call, f32_plan(call.definition.name), [op.ResultSpec.compact(F32, x.shape)],
                                    saved_operands=(0,))
        captured["resolved"] = inv
        return inv

    def vjp(context, cotangents):
        captured["contexts"].append(context)
        return (sw.mul(cotangents[0], 2.0),)

    double = op.define_operation(fresh_name("double"), schema_x(), resolve, vjp=vjp)

    def prepare(carrier, invocation):
        captured["prepared"].append(invocation)

        def submit():
            return ext.ProviderResult([sw.tensor([2.0 * v for v in values_of(invocation.operands[0])])])
        return ext.PreparedComposite(submit)

    # A definition-free CPU runs no user-defined operation: a
    # definition-backed dependent class whose results live on CPU provides it.
    plan = f32_plan(double.name)
    cls = dependent_defined_class(capabilities=lambda carrier: [sw.OperationCapability.from_plan(plan)],
                                  result_carriers=lambda carrier, invocation: (sw.CPU,), prepare=prepare)
    c = cls(sw.CPU(2), 2, dtype=F32)
    c[0], c[1] = 1.0, 2.0
    x = leaf(compact(c, 2))
    y = double(x)
    y.backward(sw.tensor([1.0, 1.0]))
    (context,) = captured["contexts"]
    (given,) = captured["prepared"]
    assert context.invocation is given and given is captured["resolved"]
    assert len(context.outputs) == 1 and context.outputs[0] is y
    assert context.saved_operands[0].tolist() == [1.0, 2.0]


def test_interop_movement_await_move_wait_returns_the_same_object_every_time():
    source = sw.tensor([1.0, 2.0, 3.0])
    pending = sw.move_async(source, sw.Generic([0.0, 0.0, 0.0], dtype=F32))
    first = pending.wait()
    assert pending.wait() is first and pending.wait() is first
    assert first.tolist() == [1.0, 2.0, 3.0]
