"""Autograd through operations defined in Python (operation-semantics.md R8,
"Automatic differentiation belongs to the semantic definition"; issue 12
item 4: define_operation with Python resolve and vjp runs through ordinary
dispatch, backward included; docs/autograd.md, "Definition nodes").

The operations run on a definition-backed carrier class written in Python
whose kernel patterns compute on the host; the VJPs are Python callables.
Test names start with R8 and name the rule or scenario they check.
"""

import itertools

import pytest

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, I32, raises_exactly

TENSOR = op.OperandKind.TENSOR
_names = itertools.count()


def fresh(stem):
    return f"pytest_ad{next(_names)}.{stem}"


def plan_of(name, tensors):
    return sw.OperationPlan(name, tuple(sw.OperandPlan(sw.OperandRole.TENSOR, F32, F32) for _ in range(tensors)),
                            sw.Arithmetic.BINARY32, None, None, F32)


def values(t):
    return [t.carrier[t.offset + t.layout(i)] for i in range(t.size())]


class Device:
    """A fresh definition-backed Float32 carrier class; `kernels` maps an
    OperationDefinition to (tensor operand count, host function returning one
    list of floats per result)."""

    def __init__(self, kernels):
        self.ran = []
        self.cls = type(f"Dev{next(_names)}", (sw.Carrier,), {})
        provider = ext.StorageProvider(
            lambda carrier, dtype: dtype is F32 or dtype is I32,
            lambda carrier: len(carrier.slots_),
            self._allocate, lambda carrier: None,
            lambda carrier, index: carrier.slots_[index], self._write)
        iface = ext.KernelExecutionInterface("1")
        patterns = [ext.KernelPattern(d, [sw.OperationCapability.from_plan(plan_of(d.name, n))], d.name,
                                      self._prepare(d.name, f))
                    for d, (n, f) in kernels.items()]
        ext.register_carrier_definition(self.cls, ext.CarrierDefinition(provider, kernels=ext.KernelProvider(iface, patterns)))

    @staticmethod
    def _allocate(carrier, slots):
        carrier.slots_ = [0.0] * slots

    @staticmethod
    def _write(carrier, index, value):
        carrier.slots_[index] = value

    def tensor(self, vals):
        c = self.cls(len(vals), dtype=F32)
        for i, v in enumerate(vals):
            c.set_value(i, float(v))
        return sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(len(vals))))

    def like(self, vals):
        return self.tensor(vals)

    def _prepare(self, name, function):
        def prepare(invocation, iface):
            def submit():
                self.ran.append(name)
                return ext.ProviderResult([self.tensor(v) for v in function(*invocation.call.operands)])
            return ext.PreparedKernel(iface, submit)
        return prepare


def resolve_elementwise(results=1, saved=(), alias_last=False):
    def resolve(call):
        x = call.operands[0]
        specs = [op.ResultSpec.compact(F32, x.shape) for _ in range(results)]
        if alias_last:
            specs[-1] = op.ResultSpec(F32, x.shape, x.layout, 0)
        return op.ResolvedInvocation(call, plan_of(call.definition.name, len(call.operands)), specs,
                                     saved_operands=saved)
    return resolve


class MulFixture:
    """pyad.mul(x, w) = x * w, whose Python VJP calls the fused backward
    pyad.mul_backward(g, x, w) -> (g w, g x), another namespaced operation."""

    def __init__(self, vjp=None):
        self.contexts = []
        self.backward = op.define_operation(
            fresh("mul_backward"), op.OperationSchema([op.OperandSpec(n, TENSOR) for n in ("g", "x", "w")]),
            resolve_elementwise(results=2), vjp=op.NON_DIFFERENTIABLE)
        self.mul = op.define_operation(
            fresh("mul"), op.OperationSchema([op.OperandSpec("x", TENSOR, True), op.OperandSpec("w", TENSOR, True)]),
            resolve_elementwise(saved=(1, 0)), vjp=vjp or self.vjp)
        self.device = Device({
            self.mul: (2, lambda x, w: [[a * b for a, b in zip(values(x), values(w))]]),
            self.backward: (3, lambda g, x, w: [[a * b for a, b in zip(values(g), values(w))],
                                                [a * b for a, b in zip(values(g), values(x))]]),
        })

    def vjp(self, context, cotangents):
        self.contexts.append(context)
        (g,) = cotangents
        w, x = context.saved_operands  # declared order: (1, 0)
        gx, gw = self.backward(g, x, w)
        return (gx, gw)


def test_R8_a_python_vjp_runs_end_to_end_and_matches_finite_differences():
    f = MulFixture()
    xv, wv, cv = [0.5, -1.25, 2.0], [1.5, 0.75, -0.5], [1.0, -2.0, 0.5]
    x, w = f.device.tensor(xv), f.device.tensor(wv)
    y = f.mul(x, w)
    assert y.grad_fn is not None and y.grad_fn.name == f.mul.name
    y.backward(f.device.tensor(cv))
    assert type(x.grad.carrier) is f.device.cls

    def loss(xs, ws):
        with sw.no_grad():
            return sum(c * v for c, v in zip(cv, values(f.mul(f.device.tensor(xs), f.device.tensor(ws)))))

    h = 1e-2
    for grad, base, which in ((x.grad, xv, 0), (w.grad, wv, 1)):
        for i, analytic in enumerate(values(grad)):
            up, down = list(base), list(base)
            up[i] += h
            down[i] -= h
            args_up = (up, wv) if which == 0 else (xv, up)
            args_down = (down, wv) if which == 0 else (xv, down)
            numeric = (loss(*args_up) - loss(*args_down)) / (2 * h)
            assert abs(analytic - numeric) <= 1e-2 * max(1.0, abs(analytic), abs(numeric))


def test_R8_scenario_use_a_fused_namespaced_backward():
    f = MulFixture()
    x = f.device.tensor([1.0, 2.0])
    y = f.mul(x, f.device.tensor([3.0, 4.0]))
    assert f.device.ran == [f.mul.name]
    (gx,) = sw.grad(y, [x], f.device.tensor([1.0, 1.0]))
    assert f.device.ran == [f.mul.name, f.backward.name]  # ordinary kernel selection on the same class
    assert gx.tolist() == [3.0, 4.0]


def test_R8_the_vjp_context_exposes_invocation_outputs_and_saved_operands_in_declared_order():
    f = MulFixture()
    x, w = f.device.tensor([1.0, 2.0]), f.device.tensor([3.0, 4.0])
    y = f.mul(x, w)
    y.backward(f.device.tensor([1.0, 1.0]))
    (context,) = f.contexts
    assert isinstance(context, op.VJPContext)
    assert context.invocation.call.definition is f.mul
    assert [values(t) for t in context.saved_operands] == [[3.0, 4.0], [1.0, 2.0]]
    assert [values(t) for t in context.outputs] == [[3.0, 8.0]]
    assert context.needs_grad(0) and context.needs_grad(1)  # both Float32 operands take part (no opt-in flag)
    assert w.grad.tolist() == [1.0, 2.0] and x.grad.tolist() == [3.0, 4.0]


def test_R8_one_cotangent_per_result_in_result_order_and_one_node_per_call():
    seen = []

    def vjp(context, cotangents):
        seen.append(tuple(c is not None for c in cotangents))
        (x,) = context.saved_operands
        g = [0.0] * x.size()
        if cotangents[0] is not None:
            g = [a + 2 * c for a, c in zip(g, values(cotangents[0]))]
        if cotangents[1] is not None:
            g = [a + 2 * xv * c for a, xv, c in zip(g, values(x), values(cotangents[1]))]
        return (device.tensor(g),)

    split = op.define_operation(fresh("split"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                                resolve_elementwise(results=2, saved=(0,)), vjp=vjp)
    device = Device({split: (1, lambda x: [[2 * v for v in values(x)], [v * v for v in values(x)]])})
    x = device.tensor([1.0, 3.0])
    a, b = split(x)
    assert a.grad_fn is not None and b.grad_fn is not None
    (g,) = sw.grad(b, [x], device.tensor([1.0, 1.0]), retain_graph=True)
    assert seen == [(False, True)] and g.tolist() == [2.0, 6.0]
    # The node alone: its invocation, its results, one cotangent per result.
    node = a.grad_fn
    assert node.invocation.call.definition is split and len(node.outputs) == 2
    (g2,) = node.backward((device.tensor([1.0, 1.0]), None))
    assert g2.tolist() == [2.0, 2.0] and seen[-1] == (True, False)
    raises_exactly(ValueError, node.backward, (device.tensor([1.0, 1.0]),))


@pytest.mark.parametrize("returned, error", [
    (lambda x: [x], TypeError),                    # not a tuple
    (lambda x: (3,), TypeError),                   # an entry that is neither a Tensor nor None
    (lambda x: (x, None), ValueError),             # wrong length
    (lambda x: (), ValueError),
    ("shape", ValueError),                         # incompatible shape
    ("dtype", TypeError),                          # incompatible dtype
])
def test_R8_a_wrong_vjp_return_is_refused_before_any_gradient_accumulates(returned, error):
    holder = {}

    def vjp(context, cotangents):
        (x,) = context.saved_operands
        if returned == "shape":
            return (holder["device"].tensor([1.0]),)
        if returned == "dtype":
            c = holder["device"].cls(x.size(), dtype=I32)
            return (sw.Tensor(c, 0, sw.Layout.compact(x.shape)),)
        return returned(cotangents[0])

    d = op.define_operation(fresh("checked"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                            resolve_elementwise(saved=(0,)), vjp=vjp)
    holder["device"] = device = Device({d: (1, lambda x: [values(x)])})
    x = device.tensor([1.0, 2.0])
    y = d(x)
    raises_exactly(error, y.backward, device.tensor([1.0, 1.0]))
    assert x.grad is None


def test_R8_non_differentiable_attaches_no_node_and_never_calls_a_vjp():
    d = op.define_operation(fresh("nd"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                            resolve_elementwise(), vjp=op.NON_DIFFERENTIABLE)
    device = Device({d: (1, lambda x: [values(x)])})
    x = device.tensor([1.0])
    y = d(x)
    assert y.grad_fn is None and y.is_leaf


def test_R8_scenario_detect_a_modified_saved_input():
    f = MulFixture()
    x, w = f.device.tensor([1.0, 2.0]), f.device.tensor([3.0, 4.0])
    y = f.mul(x, w)
    w.carrier.set_value(0, 9.0)
    error = raises_exactly(RuntimeError, y.backward, f.device.tensor([1.0, 1.0]))
    assert "modified by an inplace operation" in str(error)
    assert f.contexts == [] and x.grad is None


def test_R8_alias_paths_on_a_definition_backed_carrier():
    def vjp(context, cotangents):
        return (cotangents[0],)

    d = op.define_operation(fresh("ident_"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                            resolve_elementwise(alias_last=True), vjp=vjp)
    nd = op.define_operation(fresh("nd_ident_"), op.OperationSchema([op.OperandSpec("x", TENSOR, True)]),
                             resolve_elementwise(alias_last=True), vjp=op.NON_DIFFERENTIABLE)
    def aliasing(invocation, iface):
        (x,) = invocation.call.operands
        return ext.PreparedKernel(iface, lambda: ext.ProviderResult([x]))

    cls = type(f"Alias{next(_names)}", (sw.Carrier,), {})
    patterns = [ext.KernelPattern(definition, [sw.OperationCapability.from_plan(plan_of(definition.name, 1))], definition.name,
                                  aliasing) for definition in (d, nd)]
    provider = ext.StorageProvider(lambda c, dtype: dtype is F32, lambda c: len(c.slots_), Device._allocate,
                                   lambda c: None, lambda c, i: c.slots_[i], Device._write)
    ext.register_carrier_definition(cls, ext.CarrierDefinition(provider, kernels=ext.KernelProvider(
        ext.KernelExecutionInterface("1"), patterns)))
    x = sw.Tensor(cls(2, dtype=F32), 0, sw.Layout.compact(sw.Shape(2)))
    raises_exactly(ValueError, d, x)                      # reject a differentiable exact-object alias
    r = nd(x)                                             # permit a non-differentiable one
    assert r.carrier is x.carrier and r.grad_fn is None and x.grad_fn is None
    with sw.no_grad():                                    # permit a no-grad one
        r = d(x)
    assert r.carrier is x.carrier and x.grad_fn is None
