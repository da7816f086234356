"""Operators and functions on a definition-backed carrier written in Python
(issue 11 step 4, "Definition-free carriers enter the same front and leave it
at their kernel table"; carrier-extension R11.3-R11.5; docs/extension.md,
"Typed functions on definition-backed carriers"): `a + b`, `a @ b`,
`sw.relu(a)` and the rest reach the class's kernel patterns through the
built-in's OperationDefinition, with the result calling by definition gives;
the built-in gradients run on the class and equal those on CPU.
"""

import itertools

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, I32, plan, raises_exactly

_names = itertools.count()


def values(t):
    return [t.carrier[t.offset + t.layout(i)] for i in range(t.size())]


class RefDevice:
    """A fresh definition-backed Float32 class whose kernel pack covers the
    given built-in plans; every kernel runs the built-in's reference and
    publishes its values in fresh storage of the class."""

    def __init__(self, plans):
        self.ran = []
        self.cls = type(f"RefDev{next(_names)}", (sw.Carrier,), {})
        provider = ext.StorageProvider(
            lambda carrier, dtype: dtype is F32 or dtype is I32, lambda carrier: len(carrier.slots_),
            self._allocate, lambda carrier: None, lambda carrier, index: carrier.slots_[index], self._write)
        patterns = [ext.KernelPattern(op.get_definition(name), [sw.OperationCapability.from_plan(p) for p in ps],
                                      f"ref_{name}", self._prepare)
                    for name, ps in plans.items()]
        ext.register_carrier_definition(
            self.cls, ext.CarrierDefinition(provider, kernels=ext.KernelProvider(ext.KernelExecutionInterface("1"),
                                                                                 patterns)))

    @staticmethod
    def _allocate(carrier, slots):
        carrier.slots_ = [0.0] * slots

    @staticmethod
    def _write(carrier, index, value):
        carrier.slots_[index] = value

    def tensor(self, vals, *extents):
        c = self.cls(len(vals), dtype=F32)
        for i, v in enumerate(vals):
            c.set_value(i, float(v))
        return sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(*(extents or (len(vals),)))))

    def _prepare(self, invocation, iface):
        def submit():
            self.ran.append(invocation.definition.name)
            outputs = []
            for spec, reference in zip(invocation.results, op.execute_reference(invocation.definition, invocation)):
                c = self.cls(reference.size(), dtype=spec.dtype)
                for i, v in enumerate(values(reference)):
                    c.set_value(i, v)
                outputs.append(sw.Tensor(c, 0, spec.layout))
            return ext.ProviderResult(outputs)
        return ext.PreparedKernel(iface, submit)


def scalar_first(p):
    """mul(weak, tensor)'s plan: the (tensor, weak) plan with its operands in
    the call's order (docs/policy.md)."""
    return sw.OperationPlan(p.operation, (p.operands[1], p.operands[0]), p.compute, p.accumulation,
                            p.accumulator_dtype, p.output)


PLANS = {
    "add": [plan("add", F32, F32)], "sub": [plan("sub", F32, F32)], "div": [plan("div", F32, F32)],
    "mul": [plan("mul", F32, F32), plan("mul", F32, 2.5), scalar_first(plan("mul", F32, 2.5))],
    "neg": [plan("neg", F32)], "relu": [plan("relu", F32)], "reduce_sum": [plan("reduce_sum", F32)],
    "matmul": [plan("matmul", F32, F32)],
}


def device():
    return RefDevice(PLANS)


def same(typed, by_definition):
    assert type(typed.carrier) is type(by_definition.carrier)
    assert typed.dtype() is by_definition.dtype() and typed.shape == by_definition.shape
    assert values(typed) == values(by_definition)


def test_step4_operators_and_functions_equal_the_call_by_definition():
    d = device()
    a = d.tensor([1, -2, 3, -4], 2, 2)
    b = d.tensor([0.5, 4, -1, 2], 2, 2)
    add, mul, sub, div = (sw.operation.get_definition(n) for n in ("add", "mul", "sub", "div"))
    same(a + b, add(a, b))
    same(sw.add(a, b), add(a, b))
    same(a - b, sub(a, b))
    same(a / b, div(a, b))
    same(a * b, mul(a, b))
    same(a * 2.5, mul(a, 2.5))
    same(2.5 * a, mul(2.5, a))
    same(-a, sw.operation.get_definition("neg")(a))
    same(sw.relu(a), sw.operation.get_definition("relu")(a))
    assert type((a + b).carrier) is d.cls and values(a + b) == [1.5, 2.0, 2.0, -2.0]
    same(a @ b, sw.operation.get_definition("matmul")(a, b))
    same(sw.reduce_sum(a, axes=[1]), sw.operation.get_definition("reduce_sum")(a, axes=[1]))
    assert "add" in d.ran and "relu" in d.ran


def test_step4_a_plan_without_a_pattern_is_unsupported_operation_plan_before_any_kernel():
    d = device()
    a = d.tensor([1, 2])
    d.ran.clear()
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.exp, a)
    assert isinstance(error, NotImplementedError)
    raises_exactly(sw.UnsupportedOperationPlan, lambda: a < a)
    assert d.ran == []


def test_step4_builtin_gradients_on_a_python_definition_backed_carrier_equal_cpu():
    d = device()
    x_values, w_values = [1.0, -2.0, 3.0], [0.5, 4.0, -1.0]
    xa, wa = d.tensor(x_values), d.tensor(w_values)
    xc, wc = sw.tensor(x_values), sw.tensor(w_values)
    ya = sw.reduce_sum(xa * wa + xa * 2.5 - wa)
    yc = sw.reduce_sum(xc * wc + xc * 2.5 - wc)
    ya.backward()
    yc.backward()
    assert type(xa.grad.carrier) is d.cls and type(wa.grad.carrier) is d.cls
    assert values(xa.grad) == values(xc.grad) and values(wa.grad) == values(wc.grad)


def test_out_on_a_python_definition_backed_carrier_is_written_after_validation():
    d = device()
    a, b = d.tensor([1, 2]), d.tensor([10, 20])
    out = d.tensor([0, 0])
    version = out.carrier.version
    raises_exactly(RuntimeError, sw.add, a, b, out=out)  # grad mode: a caller output carries no node
    assert out.carrier.version == version
    with sw.no_grad():
        out_without_a_graph(d, a, b, out, version)


def out_without_a_graph(d, a, b, out, version):
    assert sw.add(a, b, out=out) is out
    assert values(out) == [11.0, 22.0] and out.carrier.version == version + 1
    raises_exactly(ValueError, sw.add, a, b, out=d.tensor([0, 0, 0]))
    raises_exactly(TypeError, sw.add, a, b, out=sw.tensor([0.0, 0.0]))
    assert values(out) == [11.0, 22.0] and out.carrier.version == version + 1


SORT_PLANS = {name: [plan(name, F32)] for name in ("_sort_values", "_sort_indices", "_topk_values", "_topk_indices")}


def test_step4_sort_and_topk_run_their_two_internal_definitions_and_equal_cpu():
    # sort and topk run two plans; on a definition-backed carrier each runs
    # its internal definition, so values and Int32 indices equal the calls by
    # definition and CPU's (stable: equal elements keep their order).
    d = RefDevice(SORT_PLANS)
    data = [2.0, 1.0, 0.0, 1.0, 2.0, -3.0]
    a = d.tensor(data)
    cpu = sw.tensor(data)
    get = sw.operation.get_definition
    for typed, on_cpu, prefix, options in [
            (sw.sort(a), sw.sort(cpu), "_sort", {}),
            (sw.sort(a, descending=True), sw.sort(cpu, descending=True), "_sort", {"descending": True}),
            (sw.topk(a, k=3), sw.topk(cpu, k=3), "_topk", {"k": 3}),
            (sw.topk(a, k=4, largest=False), sw.topk(cpu, k=4, largest=False), "_topk", {"k": 4, "largest": False})]:
        same(typed.values, get(prefix + "_values")(a, **options))
        same(typed.indices, get(prefix + "_indices")(a, **options))
        assert type(typed.values.carrier) is d.cls and typed.indices.dtype() is I32
        assert values(typed.values) == values(on_cpu.values)
        assert values(typed.indices) == values(on_cpu.indices)
    assert values(sw.sort(a).indices) == [5, 2, 1, 3, 0, 4]
    assert values(sw.sort(a, descending=True).indices) == [0, 4, 1, 3, 2, 5]
    assert "_sort_values" in d.ran and "_topk_indices" in d.ran


def test_step4_sort_without_its_indices_pattern_is_unsupported_before_either_kernel():
    d = RefDevice({name: ps for name, ps in SORT_PLANS.items() if name != "_sort_indices"})
    a = d.tensor([2, 1])
    error = raises_exactly(sw.UnsupportedOperationPlan, sw.sort, a)
    assert error.plan.operation == "_sort_indices"
    assert d.ran == []
