"""Providers cannot leak or half-publish (issue 24 item 4; operation-semantics.md
"Result publication validates provider output" and "Automatic
differentiation belongs to the semantic definition"; carrier-extension.md R4;
docs/extension.md "Providers run without a graph", "Provider writes to
operands"), from Python providers:

- every provider callback runs with graph construction disabled, and a
  NON_DIFFERENTIABLE result carries no node;
- a completion whose ``done`` is still false after ``wait()`` returned is a
  ProviderContractError naming "completion";
- a public write to an operand's carrier during provider execution is refused
  when the operation does not declare the operand mutated, and a declared
  one advances the version exactly once, or not at all when the call fails.
"""

import itertools

import pytest

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import F32, raises_exactly

TENSOR = op.OperandKind.TENSOR
_names = itertools.count()


def track_gradients(t):
    """Graph recording needs a differentiable operand under grad mode
    (core-concepts 6.2): a Float32 tensor needs no mark."""
    assert t.is_differentiable()


def fresh(stem):
    return f"pytest_pc{next(_names)}.{stem}"


def plan_of(name, tensors):
    return sw.OperationPlan(name, tuple(sw.OperandPlan(sw.OperandRole.TENSOR, F32, F32) for _ in range(tensors)),
                            sw.Arithmetic.BINARY32, None, None, F32)


def values(t):
    return [t.carrier[t.offset + t.layout(i)] for i in range(t.size())]


def fresh_result(resolve_alias=None, mutated=()):
    def resolve(call):
        x = call.operands[0]
        spec = (op.ResultSpec(F32, x.shape, x.layout, resolve_alias) if resolve_alias is not None
                else op.ResultSpec.compact(F32, x.shape))
        return op.ResolvedInvocation(call, plan_of(call.definition.name, len(call.operands)), [spec],
                                     mutated_operands=mutated)
    return resolve


def define(stem, tensors=1, vjp=op.NON_DIFFERENTIABLE, **resolve):
    schema = op.OperationSchema([op.OperandSpec(f"x{i}", TENSOR, i == 0) for i in range(tensors)])
    return op.define_operation(fresh(stem), schema, fresh_result(**resolve), vjp=vjp)


class Device:
    """A fresh definition-backed Float32 carrier class with one kernel
    pattern per definition: `submits` maps a definition to
    submit(invocation) -> ProviderResult or completion; `prepares` (optional)
    to a callable run in prepare."""

    def __init__(self, submits, prepares=None):
        prepares = prepares or {}
        self.cls = type(f"PcDev{next(_names)}", (sw.Carrier,), {})
        provider = ext.StorageProvider(lambda c, dtype: dtype is F32, lambda c: len(c.slots_), self._allocate,
                                       lambda c: None, lambda c, i: c.slots_[i], self._write)

        def prepare_for(definition):
            def prepare(invocation, iface):
                if definition in prepares:
                    prepares[definition]()
                return ext.PreparedKernel(iface, lambda: submits[definition](invocation))
            return prepare

        patterns = [ext.KernelPattern(d, [sw.OperationCapability.from_plan(plan_of(d.name, len(d.schema.operands)))],
                                      d.name, prepare_for(d)) for d in submits]
        ext.register_carrier_definition(self.cls, ext.CarrierDefinition(
            provider, kernels=ext.KernelProvider(ext.KernelExecutionInterface("1"), patterns)))

    @staticmethod
    def _allocate(carrier, slots):
        carrier.slots_ = [0.0] * slots

    @staticmethod
    def _write(carrier, index, value):
        carrier.slots_[index] = value

    def tensor(self, vals):
        c = self.cls(len(vals), dtype=F32)
        c.slots_ = [float(v) for v in vals]  # private storage: no version step
        return sw.Tensor(c, 0, sw.Layout.compact(sw.Shape(len(vals))))

    def doubled(self, x):
        return ext.ProviderResult([self.tensor([2 * v for v in values(x)])])


class Completion:
    def __init__(self, wait, done_after_wait=True):
        self._wait, self._done_after_wait, self.waited = wait, done_after_wait, False

    @property
    def done(self):
        return self.waited and self._done_after_wait

    def wait(self):
        self.waited = True
        return self._wait()


# ---- graph construction

def test_item4_every_python_provider_callback_runs_with_graph_construction_disabled():
    seen = []
    d = define("double", vjp=lambda context, cotangents: (cotangents[0],))
    device = None

    def submit(invocation):
        seen.append(("submit", sw.is_grad_enabled()))

        def wait():
            seen.append(("wait", sw.is_grad_enabled()))
            return device.doubled(invocation.call.operands[0])
        return Completion(wait)

    device = Device({d: submit}, prepares={d: lambda: seen.append(("prepare", sw.is_grad_enabled()))})
    x = device.tensor([1.0, 2.0])
    track_gradients(x)
    y = d(x)
    assert seen == [("prepare", False), ("submit", False), ("wait", False)]
    assert sw.is_grad_enabled()
    assert y.grad_fn is not None and y.grad_fn.name == d.name  # the call itself records


def test_item4_a_non_differentiable_result_viewing_its_operand_carries_no_node():
    d = define("view")
    device = Device({d: lambda invocation: ext.ProviderResult([invocation.call.operands[0].reshape(2)])})
    x = device.tensor([1.0, 2.0])
    track_gradients(x)
    y = d(x)
    assert y is not x and y.carrier is x.carrier
    assert y.grad_fn is None


def test_item4_a_kernel_that_reenables_graph_construction_still_publishes_no_foreign_node():
    def submit(invocation):
        with sw.set_grad_enabled(True):
            v = invocation.call.operands[0].reshape(2)
        assert v.grad_fn is not None  # recorded inside the kernel
        return ext.ProviderResult([v])

    d = define("view_with_graph")
    device = Device({d: submit})
    x = device.tensor([1.0, 2.0])
    track_gradients(x)
    assert d(x).grad_fn is None


# ---- completions (R4.1)

def test_item4_a_completion_that_is_not_done_after_wait_is_a_provider_contract_error():
    d = define("never_done")
    device = None
    device = Device({d: lambda invocation: Completion(lambda: device.doubled(invocation.call.operands[0]),
                                                     done_after_wait=False)})
    x = device.tensor([1.0, 2.0])
    error = raises_exactly(sw.ProviderContractError, d, x)
    assert error.field == "completion" and "done" in str(error)
    # The same check for a transfer's completion.
    error = raises_exactly(sw.ProviderContractError, sw._core._submit_prepared,
                           ext.PreparedTransfer(lambda: Completion(lambda: None, done_after_wait=False)))
    assert error.field == "completion"
    # A completion that is done after wait() is accepted.
    ok = define("done")
    device = Device({ok: lambda invocation: Completion(lambda: device.doubled(invocation.call.operands[0]))})
    assert values(ok(device.tensor([1.0, 2.0]))) == [2.0, 4.0]


# ---- provider writes to operands

def test_item4_an_undeclared_public_write_from_a_python_kernel_is_refused_before_it_writes():
    refused = []

    def submit(invocation):
        x = invocation.call.operands[0]
        try:
            x.carrier.set_value(0, 100.0)
        except sw.ProviderContractError as e:  # swallowing the refusal gains nothing
            refused.append(e.field)
        return device.doubled(x)

    d = define("scribbler")
    device = Device({d: submit})
    x = device.tensor([1.0, 2.0])
    version = x.carrier.version
    error = raises_exactly(sw.ProviderContractError, d, x)
    assert error.field == "mutation" and refused == ["mutation"]
    assert values(x) == [1.0, 2.0] and x.carrier.version == version


def axpy_submit(fail=None):
    def submit(invocation):
        y, x = invocation.call.operands
        sums = [a + b for a, b in zip(values(y), values(x))]
        for k, v in enumerate(sums):
            y.carrier.set_value(y.offset + y.layout(k), v)
        if fail == "raise":
            raise OSError("device lost after the write (test)")
        if fail == "new handle":
            return ext.ProviderResult([sw.Tensor(y.carrier, y.offset, y.layout)])  # not y itself
        return ext.ProviderResult([y])
    return submit


def test_item4_a_declared_mutation_through_set_value_steps_the_version_exactly_once():
    d = define("axpy_", tensors=2, resolve_alias=0, mutated=(0,))
    device = Device({d: axpy_submit()})
    y, x = device.tensor([1.0, 2.0, 3.0]), device.tensor([10.0, 20.0, 30.0])
    before = y.carrier.version
    assert d(y, x).carrier is y.carrier
    assert values(y) == [11.0, 22.0, 33.0]
    assert y.carrier.version == before + 1


@pytest.mark.parametrize("fail, error", [("raise", OSError), ("new handle", sw.ProviderContractError)])
def test_item4_a_call_failing_after_a_declared_public_write_leaves_values_and_version(fail, error):
    d = define(f"axpy_{fail.replace(' ', '_')}_", tensors=2, resolve_alias=0, mutated=(0,))
    device = Device({d: axpy_submit(fail)})
    y, x = device.tensor([1.0, 2.0]), device.tensor([10.0, 20.0])
    before = y.carrier.version
    raises_exactly(error, d, y, x)
    assert values(y) == [1.0, 2.0] and y.carrier.version == before
    assert values(x) == [10.0, 20.0]
