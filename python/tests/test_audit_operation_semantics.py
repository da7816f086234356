"""Issue 24, item 5: the conformance audit's findings against
operation-semantics.md (mul(weak, tensor), result contracts, reference
aliasing, identifiers, STRUCTURAL operands) and carrier-extension R5.6 (the
legacy move registry). Each test names the requirement it checks."""

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from strideweave.carriers import move as movement
from conftest import BOOL, F32, I32, raises_exactly
from audit_support import (TENSOR, STRUCTURAL, T, W, _names, compact, defined_class, f32_plan, fresh_name,
                           values_of)


# ---- item 5: mul(weak, tensor)

def test_operation_semantics_R3_mul_weak_tensor_invocation_lists_its_plan_in_call_order():
    mul = op.get_definition("mul")
    x = sw.tensor([1.0, 2.0])
    inv = op.resolve_call(mul, 2.0, x)
    # The plan's operand roles are the call's, position by position, and its
    # fields otherwise those of the registry's (tensor, weak_scalar) plan.
    assert inv.plan.roles == (W, T)
    assert inv.plan.operands[1].dtype is F32 and inv.plan.operands[0].dtype is None
    reverse = sw.resolve_operation_plan("mul", F32, 2.0)
    assert inv.plan.operands == (reverse.operands[1], reverse.operands[0])
    assert (inv.plan.compute, inv.plan.output) == (reverse.compute, reverse.output)
    assert mul(2.0, x).tolist() == [2.0, 4.0] and (2.0 * x).tolist() == [2.0, 4.0]


def test_operation_semantics_R3_mul_weak_tensor_reaches_a_kernel_pattern_in_plan_role_order():
    seen = []
    cls_box = {}

    def prepare(invocation, iface):
        seen.append(invocation)

        def submit():
            operands = invocation.operands
            # Plan operand i describes call operand i.
            scalar, tensor = operands
            assert [r for r in invocation.plan.roles] == [W, T]
            out = cls_box["cls"](tensor.size(), dtype=F32)
            for i, v in enumerate(values_of(tensor)):
                out[i] = v * scalar
            return ext.ProviderResult([compact(out, tensor.size())])
        return ext.PreparedKernel(iface, submit)

    mul = op.get_definition("mul")
    x_probe = sw.tensor([1.0])
    scalar_first = op.resolve_call(mul, 2.5, x_probe).plan
    iface = ext.KernelExecutionInterface("1")
    pattern = ext.KernelPattern(mul, [sw.OperationCapability.from_plan(scalar_first)], "mul_st", prepare)
    cls = cls_box["cls"] = defined_class(kernels=ext.KernelProvider(iface, [pattern]))
    c = cls(2, dtype=F32)
    c[0], c[1] = 1.0, -3.0
    x = compact(c, 2)
    y = 2.5 * x
    assert values_of(y) == [2.5, -7.5] and type(y.carrier) is cls and len(seen) == 1
    # The (tensor, weak_scalar) call is another plan: this class does not run it.
    raises_exactly(sw.UnsupportedOperationPlan, lambda: x * 2.5)


# ---- item 5: ResolvedInvocation and ResultSpec validation

def schema_x():
    return op.OperationSchema([op.OperandSpec("x", TENSOR, True)])


def test_operation_semantics_resolved_invocation_refuses_a_result_dtype_other_than_the_plan_output():
    d = op.define_operation(fresh_name("dt"), schema_x(), lambda call: None, vjp=op.NON_DIFFERENTIABLE)
    x = sw.tensor([1.0, 2.0])
    call = op.bind(d, x)
    plan = f32_plan(d.name)
    good = op.ResolvedInvocation(call, plan, [op.ResultSpec.compact(F32, x.shape)])
    assert good.results[0].dtype is F32
    raises_exactly(ValueError, op.ResolvedInvocation, call, plan, [op.ResultSpec.compact(I32, x.shape)])
    raises_exactly(ValueError, op.ResolvedInvocation, call, plan,
                   [op.ResultSpec.compact(BOOL, x.shape), op.ResultSpec.compact(F32, x.shape)])
    # The plan's output is the first result's dtype; a later result of a
    # multi-result operation declares its own (an Int32 index beside values).
    pair = op.ResolvedInvocation(call, plan, [op.ResultSpec.compact(F32, x.shape), op.ResultSpec.compact(I32, x.shape)])
    assert [r.dtype for r in pair.results] == [F32, I32]


def test_operation_semantics_resolved_invocation_refuses_an_alias_whose_shape_or_layout_is_not_the_operand():
    d = op.define_operation(fresh_name("alias"), schema_x(), lambda call: None, vjp=op.NON_DIFFERENTIABLE)
    x = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    call = op.bind(d, x)
    plan = f32_plan(d.name)
    same = op.ResolvedInvocation(call, plan, [op.ResultSpec(F32, x.shape, x.layout, 0)])
    assert same.results[0].alias_of == 0
    flat = sw.Shape(6)
    raises_exactly(ValueError, op.ResolvedInvocation, call, plan, [op.ResultSpec(F32, flat, sw.Layout.compact(flat), 0)])
    other_layout = sw.Layout(x.shape, sw.Stride(3, 1))
    assert other_layout != x.layout
    raises_exactly(ValueError, op.ResolvedInvocation, call, plan, [op.ResultSpec(F32, x.shape, other_layout, 0)])
    raises_exactly(ValueError, op.ResolvedInvocation, call, plan,
                   [op.ResultSpec(F32, x.shape, x.layout, 0), op.ResultSpec(F32, flat, sw.Layout.compact(flat), 0)])


def test_operation_semantics_result_spec_tolerance_beyond_a_finite_double_is_a_value_error():
    s = sw.Shape(2)
    for kwargs in ({"atol": 10 ** 400}, {"rtol": 10 ** 400}, {"atol": -(10 ** 400)}):
        raises_exactly(ValueError, op.ResultSpec, F32, s, sw.Layout.compact(s), **kwargs)
        raises_exactly(ValueError, op.ResultSpec.compact, F32, s, **kwargs)
    assert op.ResultSpec(F32, s, sw.Layout.compact(s), atol=10 ** 30).atol == float(10 ** 30)


def test_operation_semantics_result_spec_shape_must_be_a_shape():
    s = sw.Shape(2)
    for bad in ((2,), [2], 2, "2"):
        raises_exactly(TypeError, op.ResultSpec, F32, bad, sw.Layout.compact(s))
    assert op.ResultSpec(F32, s, sw.Layout.compact(s)).shape == s


def test_operation_semantics_reference_returning_an_operand_without_alias_of_is_a_contract_error():
    def resolve_with(alias):
        def resolve(call):
            x = call.operands[0]
            spec = op.ResultSpec(F32, x.shape, x.layout, 0) if alias else op.ResultSpec.compact(F32, x.shape)
            return op.ResolvedInvocation(call, f32_plan(call.definition.name), [spec])
        return resolve

    x = sw.tensor([1.0, 2.0])
    fresh = op.define_operation(fresh_name("ref_fresh"), schema_x(), resolve_with(False),
                                reference=lambda inv: inv.operands[0], vjp=op.NON_DIFFERENTIABLE)
    error = raises_exactly(sw.ProviderContractError, op.execute_reference, fresh, op.resolve_call(fresh, x))
    assert "alias" in str(error)
    aliased = op.define_operation(fresh_name("ref_alias"), schema_x(), resolve_with(True),
                                  reference=lambda inv: sw.tensor([1.0, 2.0]), vjp=op.NON_DIFFERENTIABLE)
    raises_exactly(sw.ProviderContractError, op.execute_reference, aliased, op.resolve_call(aliased, x))
    honest = op.define_operation(fresh_name("ref_ok"), schema_x(), resolve_with(True),
                                 reference=lambda inv: inv.operands[0], vjp=op.NON_DIFFERENTIABLE)
    (same,) = op.execute_reference(honest, op.resolve_call(honest, x))
    assert same is x


# ---- item 5: names are Python identifiers

IDENTIFIER_SAMPLES = ["x", "_", "größe", "x1", "Ω", "ñame", "变量", "x\u0301", "_1", "ℕ", "ｘ",
                      "", "1x", "a-b", "x y", "é-", "·x", "x·", "\u0301x", "a.b", "💡", "x\u200d", "ab\x00"]


def test_operation_semantics_operand_and_option_names_are_checked_as_python_identifiers():
    for name in IDENTIFIER_SAMPLES:
        if name.isidentifier():
            assert op.OperandSpec(name, TENSOR).name == name
            assert op.OptionSpec(name, default=1).name == name
        else:
            raises_exactly(ValueError, op.OperandSpec, name, TENSOR)
            raises_exactly(ValueError, op.OptionSpec, name, default=1)


def test_operation_semantics_define_operation_segments_are_python_identifiers():
    x = sw.tensor([1.0])

    def resolve(call):
        return op.ResolvedInvocation(call, f32_plan(call.definition.name), [op.ResultSpec.compact(F32, x.shape)])

    d = op.define_operation(f"pyaudit_ü{next(_names)}.größe", schema_x(), resolve, vjp=op.NON_DIFFERENTIABLE)
    assert op.get_definition(d.name) is not None
    raises_exactly(ValueError, op.define_operation, f"pyaudit{next(_names)}.a-b", schema_x(), resolve,
                   vjp=op.NON_DIFFERENTIABLE)


# ---- item 5: STRUCTURAL operands reach resolve unchanged

def test_operation_semantics_structural_operands_reach_resolve_unchanged():
    seen = []

    def resolve(call):
        seen.append(call.operands[1])
        x = call.operands[0]
        return op.ResolvedInvocation(call, f32_plan(call.definition.name), [op.ResultSpec.compact(F32, x.shape)])

    d = op.define_operation(fresh_name("structural"),
                            op.OperationSchema([op.OperandSpec("x", TENSOR), op.OperandSpec("k", STRUCTURAL)]),
                            resolve, vjp=op.NON_DIFFERENTIABLE)
    x = sw.tensor([1.0])
    big = 10 ** 40
    samples = [[1, 2, 3], (4, 5), big, -big, {"a": 1}, [1, "two"], 7, 2.5, None, "text", F32]
    for value in samples:
        op.resolve_call(d, x, value)
        assert seen[-1] is value, (value, seen[-1])
        assert op.bind(d, x, value).operands[1] is value

# ---- item 5: the legacy move registry refuses definition-backed pairs

def test_carrier_extension_R5_6_dispatch_move_refuses_a_definition_backed_pair():
    cls = defined_class()
    for pair in ((cls, sw.CPU), (sw.CPU, cls), (cls, cls)):
        raises_exactly(RuntimeError, movement.dispatch_move, *pair)
    assert movement.dispatch_move(sw.CPU, sw.Generic) is not None
