"""strideweave.operation.opcheck (issue 11 step 7; docs/opcheck.md):
operation-semantics.md "Reference execution provides a carrier-neutral
oracle", checked pattern by pattern for a user-defined operation whose
carrier, kernels, reference and VJP are all written in Python. Each class of
bug is planted in one pattern (or VJP) and must be caught with its field."""

import itertools

import pytest

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, I32

T = sw.OperandRole.TENSOR
_names = itertools.count()


def fresh_name(stem):
    return f"pytest_opcheck{next(_names)}.{stem}"


def plan_of(name, dtype=F32):
    return sw.OperationPlan(operation=name, operands=(sw.OperandPlan(T, dtype, dtype),), compute=sw.Arithmetic.BINARY32,
                            accumulation=None, accumulator_dtype=None, output=dtype)


def storage():
    def allocate(c, n):
        c.slots_ = [sw.storage_zero(F32)] * n

    def release(c):
        c.slots_ = []

    def write(c, i, v):
        c.slots_[i] = v

    return ext.StorageProvider(lambda c, d: d is F32 or d is I32, lambda c: len(c.slots_), allocate, release,
                               lambda c, i: c.slots_[i], write)


def mapped(x, like_cls, f):
    """A compact Float32 tensor on like_cls holding f of x's elements."""
    values = x.values()
    c = like_cls(len(values), dtype=F32)
    for i, v in enumerate(values):
        c.set_value(i, f(v))
    return sw.Tensor(c, 0, sw.Layout.compact(x.shape))


def define_double(cls_box, vjp_factor=2.0):
    def resolve(call):
        x = call.operands[0]
        return op.ResolvedInvocation(call, plan_of(call.definition.name, x.dtype()),
                                     [op.ResultSpec(x.dtype(), x.shape, sw.Layout.compact(x.shape), atol=1e-6, rtol=1e-6)])

    def reference(invocation):
        return mapped(invocation.operands[0], cls_box[0], lambda v: 2 * v)

    def vjp(context, cotangents):
        return (mapped(cotangents[0], cls_box[0], lambda v: vjp_factor * v),)

    return op.define_operation(fresh_name("double"), op.OperationSchema([op.OperandSpec("x", op.OperandKind.TENSOR, True)]),
                               resolve, reference, vjp=vjp)


def kernel(kernel_id, definition, body):
    def prepare(invocation, iface):
        return ext.PreparedKernel(iface, lambda: ext.ProviderResult([body(invocation)]))

    return ext.KernelPattern(definition, [sw.OperationCapability.from_plan(plan_of(definition.name))], kernel_id, prepare)


@pytest.fixture(scope="module")
def planted():
    """One Python carrier class with a correct pattern and one per planted bug, for an operation with a
    correct VJP, and one more operation whose VJP is wrong."""
    box = []
    good, bad = define_double(box), define_double(box, vjp_factor=3.0)
    cls = type("OpcheckAccel", (sw.Carrier,), {})
    box.append(cls)

    def alias(invocation):  # writes 2x into the operand's own storage and returns a new view of it
        x = invocation.operands[0]
        for i in range(x.size()):
            k = x.offset + x.layout(i)
            x.carrier.slots_[k] = 2 * x.carrier.slots_[k]
        return sw.Tensor(x.carrier, x.offset, x.layout)

    def scribble(invocation):  # right result; writes behind the framework's back
        x = invocation.operands[0]
        out = mapped(x, cls, lambda v: 2 * v)
        if x.carrier.slots_:
            x.carrier.slots_[0] = -99.0
        return out

    def wrong_dtype(invocation):
        x = invocation.operands[0]
        c = cls(x.size(), dtype=I32)
        return sw.Tensor(c, 0, sw.Layout.compact(x.shape))

    def wrong_strides(invocation):
        x = invocation.operands[0]
        c = cls(x.size(), dtype=F32)
        layout = sw.Layout.row_major(x.shape)
        for i, v in enumerate(x.values()):
            c.set_value(layout(i), 2 * v)
        return sw.Tensor(c, 0, layout)

    patterns = [
        kernel("correct", good, lambda inv: mapped(inv.operands[0], cls, lambda v: 2 * v)),
        kernel("wrong_value", good, lambda inv: mapped(inv.operands[0], cls, lambda v: v if v < 0 else 2 * v)),
        kernel("wrong_dtype", good, wrong_dtype),
        kernel("wrong_strides", good, wrong_strides),
        kernel("unexpected_alias", good, alias),
        kernel("unadvertised_mutation", good, scribble),
        kernel("bad_vjp_correct_kernel", bad, lambda inv: mapped(inv.operands[0], cls, lambda v: 2 * v)),
    ]
    ext.register_carrier_definition(cls, ext.CarrierDefinition(
        storage(), ext.KernelProvider(ext.KernelExecutionInterface("1"), patterns)))
    samples = [op.OpcheckSample([op.SampleTensor(F32, (2, 3))], label="matrix")]
    return good, bad, cls, samples


def fields(report, kernel_id):
    (carrier,) = report.carriers
    (pattern,) = [p for p in carrier.patterns if p.kernel_id == kernel_id]
    return {c.field for c in pattern.cases if c.status == "failed"}


def test_opcheck_is_importable_from_strideweave_operation():
    assert callable(op.opcheck) and op.opcheck is sw._core.opcheck


def test_reference_execution_a_correct_pattern_passes_every_generated_case(planted):
    good, _, cls, samples = planted
    report = op.opcheck(good, samples, [cls(0, dtype=F32)])
    (carrier,) = report.carriers
    assert carrier.carrier == "OpcheckAccel" and carrier.problem is None
    (correct,) = [p for p in carrier.patterns if p.kernel_id == "correct"]
    assert {c.status for c in correct.cases} == {"passed"}, str(report)
    assert {"random", "edge values", "strided", "transposed", "broadcast", "empty (extent 2 -> 0)"} <= {
        c.variant for c in correct.cases}
    assert [(g.variant, g.status) for g in carrier.gradients] == [("x", "passed")], str(report)
    assert not report.passed() and report.failed() > 0  # the planted patterns fail
    assert str(report).startswith(f"opcheck {good.name}: ")


@pytest.mark.parametrize("kernel_id, field", [
    ("wrong_value", "values"),
    ("wrong_dtype", "dtype"),
    ("wrong_strides", "layout"),
    ("unexpected_alias", "alias"),
    ("unadvertised_mutation", "mutation"),
])
def test_reference_execution_each_planted_bug_is_caught_with_its_field(planted, kernel_id, field):
    good, _, cls, samples = planted
    report = op.opcheck(good, samples, [cls(0, dtype=F32)], gradients=False)
    (carrier,) = report.carriers
    (pattern,) = [p for p in carrier.patterns if p.kernel_id == kernel_id]
    compact = [c for c in pattern.cases if c.variant in ("random", "edge values")]
    assert compact and {(c.status, c.field) for c in compact} == {("failed", field)}, str(report)
    # The aliasing view keeps the operand's strided/broadcast layout: there the layout differs first.
    allowed = {field, "layout"} if kernel_id == "unexpected_alias" else {field}
    assert {c.field for c in pattern.cases if c.status == "failed"} <= allowed, str(report)


def test_automatic_differentiation_a_wrong_vjp_fails_the_finite_difference_check(planted):
    _, bad, cls, samples = planted
    report = op.opcheck(bad, samples, [cls(0, dtype=F32)])
    (carrier,) = report.carriers
    assert fields(report, "bad_vjp_correct_kernel") == set()
    assert [(g.status, g.field) for g in carrier.gradients] == [("failed", "gradient")], str(report)
    assert op.opcheck(bad, samples, [cls(0, dtype=F32)], gradients=False).passed()


def test_registered_inputs_are_used_when_none_are_given(planted):
    box = []
    d = define_double(box)
    cls = type("OpcheckRegistered", (sw.Carrier,), {})
    box.append(cls)
    ext.register_carrier_definition(cls, ext.CarrierDefinition(
        storage(), ext.KernelProvider(ext.KernelExecutionInterface("1"),
                                      [kernel("k", d, lambda inv: mapped(inv.operands[0], cls, lambda v: 2 * v))])))
    with pytest.raises(ValueError):
        op.opcheck(d)  # no samples yet
    op.register_opcheck_inputs(d, [op.OpcheckSample([op.SampleTensor(F32, (3,))])], [cls(0, dtype=F32)])
    with pytest.raises(ValueError):
        op.register_opcheck_inputs(d, [op.OpcheckSample([op.SampleTensor(F32, (3,))])])  # one-shot
    report = op.opcheck(d)
    assert report.passed() and report.count("passed") > 3, str(report)


def test_bad_arguments_are_typed_errors(planted):
    good, _, cls, samples = planted
    with pytest.raises(TypeError):
        op.OpcheckSample([sw.tensor([1.0])])  # a Tensor instead of SampleTensor
    with pytest.raises(TypeError):
        op.opcheck(good, [object()])
    with pytest.raises(TypeError):
        op.opcheck("not a definition")
    with pytest.raises(ValueError):
        op.opcheck(op.get_definition("add"), samples)  # built-ins: the conformance harness
    with pytest.raises(ValueError):
        op.opcheck(good, samples, [sw.tensor([1.0]).carrier])  # a definition-free prototype
    with pytest.raises(ValueError):
        op.opcheck(good, samples, [cls(0, dtype=F32)], gradients=False).count("bogus")
