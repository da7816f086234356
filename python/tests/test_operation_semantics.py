"""operation-semantics.md through strideweave.operation, requirement by
requirement. Test names start with the requirement's number in the
specification's order, then the rule or scenario they check:

    R1  Operation extension values have one stable import surface
    R2  OperationSchema binds operands and options before semantic resolution
    R3  The direct tiled operation set has complete semantic definitions
    R4  Namespaced custom operations use the same public definition contract
    R5  Resolved invocations fully describe backend obligations
    R6  Reference execution provides a carrier-neutral oracle
    R7  Capability and execution select from the same kernel patterns
    R8  Automatic differentiation belongs to the semantic definition
    R9  Composite translation preserves the declared public boundary
    R10 Result publication validates provider output

Here: binding, resolution and its validation, the exact-object alias rule,
the capability gate, reference execution, and built-in definitions on every
carrier, mostly on definition-free carriers (where a user-defined operation
that passes the gate raises NotImplementedError). Execution by kernel
patterns, composite providers and result publication are tested in
test_carrier_extension.py; gradients through user-defined operations (R8:
definition nodes, Python VJPs, return validation, a fused backward) in
test_definition_autograd.py.
"""

import copy
import gc
import itertools
import pickle
import threading
import weakref

import pytest

import strideweave as sw
from strideweave import operation as op

from conftest import BOOL, F32, HANG_DEADLINE, I32, join_bounded, make_carrier_class, raises_exactly

T = sw.OperandRole.TENSOR
W = sw.OperandRole.WEAK_SCALAR
TENSOR, WEAK_SCALAR, STRUCTURAL = op.OperandKind.TENSOR, op.OperandKind.WEAK_SCALAR, op.OperandKind.STRUCTURAL

SPEC_OPERATION_NAMES = {
    "define_operation", "OperationDefinition", "OperationSchema", "OperandSpec", "OptionSpec", "OperandKind",
    "REQUIRED", "NON_DIFFERENTIABLE", "ResultSpec", "ResolvedInvocation", "BoundOperationCall", "VJPContext",
    "ProviderContractError",
}
SPEC_TOP_LEVEL_NAMES = {
    "define_operation", "OperationDefinition", "OperationSchema", "OperandSpec", "OptionSpec", "OperandKind",
    "REQUIRED", "NON_DIFFERENTIABLE", "ResultSpec", "ProviderContractError",
}
DIRECT_TILED = ("add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul")

_names = itertools.count()


def fresh(stem):
    """A new namespaced operation name (the registry is process-wide and one-shot)."""
    return f"pytest_opsem{next(_names)}.{stem}"


def plan_of(name, *operands):
    """An OperationPlan of `name`: one (role, stored dtype) per Tensor / weak-scalar operand, Float32 compute."""
    return sw.OperationPlan(operation=name, operands=tuple(sw.OperandPlan(role, dtype, F32) for role, dtype in operands),
                            compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)


UNARY = op.OperationSchema([op.OperandSpec("x", TENSOR, True)], [op.OptionSpec("scale", 1.0)])


def unary_resolve(log=None, alias_of=None, results=1):
    """resolve of an elementwise unary operation: Float32 results of x's shape (saved: x)."""

    def resolve(call):
        if log is not None:
            log.append(call)
        x = call.operands[0]
        spec = op.ResultSpec(F32, x.shape, sw.Layout.compact(x.shape), alias_of)
        specs = [op.ResultSpec.compact(F32, x.shape)] * (results - 1) + [spec]
        return op.ResolvedInvocation(call, plan_of(call.definition.name, (T, x.dtype())), specs, saved_operands=[0])

    return resolve


def define_unary(stem="unary", resolve=None, reference=None, vjp=op.NON_DIFFERENTIABLE, schema=UNARY):
    return op.define_operation(fresh(stem), schema, resolve or unary_resolve(), reference, vjp=vjp)


def f32(*values):
    return sw.tensor([float(v) for v in values])


def list_tensor(cls, values, dtype=F32):
    carrier = cls(values, dtype=dtype)
    return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(len(values)))), carrier


def capable_class(*plans):
    """A fresh definition-free Python carrier class whose capabilities name `plans`."""
    cls = make_carrier_class("Capable")
    sw.register_operation_capabilities(cls, [sw.OperationCapability.from_plan(p) for p in plans])
    return cls


def no_storage_work(carrier, before):
    return carrier.calls == before and all(carrier.calls[k] == 0 for k in ("_write_slot", "_make_like"))


# ---------------------------------------------------------------- R1 import surface


def test_R1_operation_module_exports_exactly_the_specified_names():
    assert set(op.__all__) == SPEC_OPERATION_NAMES
    for name in SPEC_OPERATION_NAMES:
        assert getattr(op, name) is not None


def test_R1_top_level_reexports_the_same_objects():
    for name in SPEC_TOP_LEVEL_NAMES:
        assert name in sw.__all__, name
        assert getattr(sw, name) is getattr(op, name), name


def test_R1_scenario_import_custom_operation_contracts():
    # Every contract type comes from strideweave itself: no backend-private or
    # framework-internal type is needed to define, resolve or differentiate.
    from strideweave.operation import (BoundOperationCall, OperandSpec, OperationDefinition, OperationSchema,
                                       OptionSpec, ResolvedInvocation, ResultSpec, VJPContext)

    for cls in (BoundOperationCall, OperandSpec, OperationDefinition, OperationSchema, OptionSpec,
                ResolvedInvocation, ResultSpec, VJPContext, op.OperandKind):
        assert isinstance(cls, type) and cls.__module__.startswith("strideweave"), cls
        assert not cls.__name__.startswith("_"), cls


# ---------------------------------------------------------------- R2 schema and binding


def test_R2_operand_kind_members_have_the_explicit_string_values():
    assert [(m.name, m.value) for m in op.OperandKind] == [
        ("TENSOR", "tensor"), ("WEAK_SCALAR", "weak_scalar"), ("STRUCTURAL", "structural")]
    assert op.OperandKind("weak_scalar") is WEAK_SCALAR
    with pytest.raises(ValueError):
        op.OperandKind(1)  # no generated ordinal values


def test_R2_operand_spec_is_immutable_with_field_equality():
    s = op.OperandSpec("x_1", TENSOR, True)
    assert (s.name, s.kind, s.differentiable) == ("x_1", TENSOR, True)
    assert op.OperandSpec("s", WEAK_SCALAR).differentiable is False  # the default
    assert s == op.OperandSpec("x_1", TENSOR, True) and hash(s) == hash(op.OperandSpec("x_1", TENSOR, True))
    assert s != op.OperandSpec("x_1", TENSOR, False)
    for field in ("name", "kind", "differentiable"):
        with pytest.raises(AttributeError):
            setattr(s, field, None)


@pytest.mark.parametrize("args", [(1, TENSOR), ("x", "tensor"), ("x", TENSOR, 1), ("x", sw.OperandRole.TENSOR)])
def test_R2_operand_spec_field_of_the_wrong_type_is_type_error(args):
    raises_exactly(TypeError, op.OperandSpec, *args)


@pytest.mark.parametrize("args", [("", TENSOR), ("2x", TENSOR), ("a-b", TENSOR), ("s", WEAK_SCALAR, True),
                                  ("k", STRUCTURAL, True)])
def test_R2_operand_spec_bad_name_or_non_tensor_differentiable_is_value_error(args):
    raises_exactly(ValueError, op.OperandSpec, *args)


def test_R2_option_spec_defaults_to_the_one_required_marker():
    s = op.OptionSpec("axis")
    assert s.default is op.REQUIRED and s.required
    assert op.OptionSpec("axis", default=0).default == 0 and not op.OptionSpec("axis", 0).required
    # One marker: copies and pickles are the same object; it is immutable.
    assert copy.copy(op.REQUIRED) is op.REQUIRED and copy.deepcopy(op.REQUIRED) is op.REQUIRED
    assert pickle.loads(pickle.dumps(op.REQUIRED)) is op.REQUIRED
    with pytest.raises(AttributeError):
        op.REQUIRED.value = 1
    with pytest.raises(AttributeError):
        s.default = 1
    assert s == op.OptionSpec("axis") and hash(s) == hash(op.OptionSpec("axis")) and s != op.OptionSpec("axis", 0)


def test_R2_option_spec_name_type_and_value_errors():
    raises_exactly(TypeError, op.OptionSpec, 3)
    raises_exactly(TypeError, op.OptionSpec, None, 0)
    for bad in ("", "a.b", "1a", "a b"):
        raises_exactly(ValueError, op.OptionSpec, bad)


def test_R2_schema_materialises_iterables_once_into_immutable_tuples():
    operands = (op.OperandSpec(n, TENSOR) for n in ("a", "b"))  # a generator: readable once
    options = iter([op.OptionSpec("k", 2)])
    schema = op.OperationSchema(operands, options)
    assert schema.operands == (op.OperandSpec("a", TENSOR), op.OperandSpec("b", TENSOR))
    assert schema.options == (op.OptionSpec("k", 2),)
    assert isinstance(schema.operands, tuple) and isinstance(schema.options, tuple)
    assert op.OperationSchema([op.OperandSpec("a", TENSOR)]).options == ()  # options=() by default
    with pytest.raises(AttributeError):
        schema.operands = ()
    assert schema == op.OperationSchema([op.OperandSpec("a", TENSOR), op.OperandSpec("b", TENSOR)],
                                        [op.OptionSpec("k", 2)])
    assert hash(schema) == hash(op.OperationSchema(list(schema.operands), list(schema.options)))


@pytest.mark.parametrize("operands, options", [
    ([op.OptionSpec("a")], ()),                      # an option where an operand belongs
    ([op.OperandSpec("a", TENSOR)], [op.OperandSpec("b", TENSOR)]),
    (["a"], ()),
    (op.OperandSpec("a", TENSOR), ()),               # not an iterable
    ("ab", ()),
])
def test_R2_schema_wrong_entry_type_is_type_error(operands, options):
    raises_exactly(TypeError, op.OperationSchema, operands, options)


@pytest.mark.parametrize("operands, options", [
    ((), ()),
    ([op.OperandSpec("x", TENSOR), op.OperandSpec("x", WEAK_SCALAR)], ()),
    ([op.OperandSpec("x", TENSOR)], [op.OptionSpec("x")]),
    ([op.OperandSpec("x", TENSOR)], [op.OptionSpec("k"), op.OptionSpec("k", 1)]),
])
def test_R2_schema_empty_operands_or_repeated_name_is_value_error(operands, options):
    raises_exactly(ValueError, op.OperationSchema, operands, options)


ORDERED = op.OperationSchema(
    [op.OperandSpec("x", TENSOR, True), op.OperandSpec("s", WEAK_SCALAR), op.OperandSpec("axes", STRUCTURAL)],
    [op.OptionSpec("mode"), op.OptionSpec("scale", 2.5)])


def ordered_resolve(log):
    def resolve(call):
        log.append(call)
        x = call.operands[0]
        return op.ResolvedInvocation(call, plan_of(call.definition.name, (T, x.dtype()), (W, None)),
                                     [op.ResultSpec.compact(F32, x.shape)])

    return resolve


def test_R2_scenario_bind_defaults_and_preserve_operand_order():
    log = []
    d = op.define_operation(fresh("ordered"), ORDERED, ordered_resolve(log), vjp=op.NON_DIFFERENTIABLE)
    x = f32(1, 2)
    with pytest.raises(sw.UnsupportedOperationPlan):  # CPU declares no capability for it
        d(x, 3, [0, 1], mode="fast")
    [call] = log
    assert isinstance(call, op.BoundOperationCall) and call.definition is d
    assert call.operands[0] is x  # the caller's own Tensor object
    assert call.operands[1:] == (3, [0, 1])  # the STRUCTURAL list passed unchanged
    assert dict(call.options) == {"mode": "fast", "scale": 2.5}  # the declared default is present
    with pytest.raises(TypeError):
        call.options["mode"] = "slow"  # a read-only mapping
    with pytest.raises(AttributeError):
        call.operands = ()
    raises_exactly(TypeError, op.BoundOperationCall)  # only the framework makes one


def test_R2_bind_gives_the_call_resolve_would_receive():
    d = op.define_operation(fresh("bind"), ORDERED, ordered_resolve([]), vjp=op.NON_DIFFERENTIABLE)
    x = f32(1)
    call = op.bind(d, x, 0.5, 7, mode=None)
    assert call.operands[0] is x and call.operands[1:] == (0.5, 7)
    assert dict(call.options) == {"mode": None, "scale": 2.5}


def binding_probe():
    log = []
    d = op.define_operation(fresh("strict"), ORDERED, ordered_resolve(log), vjp=op.NON_DIFFERENTIABLE)
    return d, log


@pytest.mark.parametrize("case, call", [
    ("missing operand", lambda d, x: d(x, 1.0, mode=1)),
    ("extra operand", lambda d, x: d(x, 1.0, 2, 3, mode=1)),
    ("unknown option", lambda d, x: d(x, 1.0, 2, mode=1, other=True)),
    ("omitted required option", lambda d, x: d(x, 1.0, 2)),
    ("two values for one option", lambda d, x: d(x, 1.0, 2, **{"mode": 1}, mode=2)),
    ("number for a tensor", lambda d, x: d(1.0, 1.0, 2, mode=1)),
    ("text for a weak scalar", lambda d, x: d(x, "1.0", 2, mode=1)),
    ("None for a tensor", lambda d, x: d(None, 1.0, 2, mode=1)),
])
def test_R2_binding_error_is_type_error_before_resolve(case, call):
    d, log = binding_probe()
    raises_exactly(TypeError, call, d, f32(1))
    assert log == [], case


def test_R2_scenario_reject_a_tensor_in_a_weak_scalar_role():
    d, log = binding_probe()
    cls = capable_class(plan_of(d.name, (T, F32), (W, None)))
    x, carrier = list_tensor(cls, [1.0])
    before = dict(carrier.calls)
    raises_exactly(TypeError, d, x, x, 2, mode=1)
    assert log == [] and no_storage_work(carrier, before)
    raises_exactly(TypeError, op.resolve_call, d, x, x, 2, mode=1)
    raises_exactly(TypeError, op.bind, d, x, x, 2, mode=1)
    assert log == []


def test_R2_structural_operands_and_option_values_are_passed_unchanged():
    class Token:
        pass

    token = Token()
    ref = weakref.ref(token)
    schema = op.OperationSchema([op.OperandSpec("x", TENSOR), op.OperandSpec("k", STRUCTURAL)],
                                [op.OptionSpec(n) for n in ("a", "b", "c", "d", "e", "f", "g", "h", "i")])
    d = op.define_operation(fresh("values"), schema, unary_resolve(), vjp=op.NON_DIFFERENTIABLE)
    x = f32(1)
    inv = op.resolve_call(d, x, token, a=None, b=True, c=3, d=2.5, e="text", f=F32, g=[1, 2], h=(), i=token)
    assert inv.operands[1] is token and inv.options["i"] is token  # any other object: the object itself
    assert [inv.options[k] for k in "abcde"] == [None, True, 3, 2.5, "text"]
    assert type(inv.options["c"]) is int and type(inv.options["b"]) is bool
    assert inv.options["f"] is F32 and inv.options["g"] == (1, 2) and inv.options["h"] == ()
    # Kept alive while the call lives, released after.
    del token
    gc.collect()
    assert ref() is not None
    del inv
    gc.collect()
    assert ref() is None
    # An option is an option value (64-bit ints); a STRUCTURAL operand is any
    # object, passed unchanged.
    raises_exactly(OverflowError, op.bind, d, x, 0, a=2**70, b=0, c=0, d=0, e=0, f=0, g=0, h=0, i=0)
    big = 2**70
    assert op.bind(d, x, big, a=0, b=0, c=0, d=0, e=0, f=0, g=0, h=0, i=0).operands[1] is big


# ---------------------------------------------------------------- R3 the direct tiled set (built-in definitions)


@pytest.mark.parametrize("name", DIRECT_TILED)
def test_R3_each_direct_tiled_name_resolves_through_one_immutable_definition(name):
    d = op.get_definition(name)
    assert isinstance(d, op.OperationDefinition) and d.name == name and d.is_builtin()
    assert op.get_definition(name) is d
    assert any(r is d for r in op.registered_definitions())
    assert all(s.kind is TENSOR for s in d.schema.operands)
    assert d.reference is not None and d.is_differentiable() and callable(d.vjp)
    with pytest.raises(AttributeError):
        d.name = "other"


def direct_tiled_call(name):
    x = sw.tensor([[1.0, -2.0], [3.0, 4.0]])
    y = sw.tensor([[0.5, 1.0], [-1.0, 2.0]])
    return {"add": ((x, y), {}), "elementwise_mul": ((x, y), {}), "mul": ((x, y), {}), "relu": ((x,), {}),
            "reduce_sum": ((x,), {"axes": [1]}), "matmul": ((x, y), {})}[name]


@pytest.mark.parametrize("name", DIRECT_TILED)
def test_R3_scenario_resolve_one_direct_tiled_operation(name):
    # Resolution fixes dtype, result and save; the definition call is ordinary
    # dispatch and agrees with the by-name function.
    d = op.get_definition(name)
    operands, options = direct_tiled_call(name)
    inv = op.resolve_call(d, *operands, **options)
    assert inv.definition is d and inv.operation == name and inv.kernel_id == name
    assert inv.plan == sw.resolve_operation_plan(name, *(t.dtype() for t in operands))
    assert inv.saved_operands == tuple(range(len(operands)))
    expected = getattr(sw, name)(*operands, **options)
    [result] = inv.results
    assert result.dtype is expected.dtype() and result.shape == expected.shape
    got = d(*operands, **options)
    assert got.tolist() == expected.tolist() and got.dtype() is expected.dtype()
    assert got.carrier_type() is sw.CPU


def test_R3_mul_includes_its_three_overloads():
    mul = op.get_definition("mul")
    x = f32(1, 2)
    assert mul(x, f32(3, 4)).tolist() == [3.0, 8.0]
    assert mul(x, 2.0).tolist() == [2.0, 4.0]
    assert mul(3.0, x).tolist() == [3.0, 6.0]
    assert op.resolve_call(mul, x, 2.0).plan == sw.resolve_operation_plan("mul", F32, 2.0)
    # The registry's (tensor, weak_scalar) plan, its operands in the call's order.
    assert op.resolve_call(mul, 2.0, x).plan.roles == (W, T)


def test_R3_scenario_reject_invalid_input_before_backend_work():
    # matmul's inner extents disagree: the definition's resolution refuses it
    # (before any capability or kernel work), as the by-name call does.
    a, b = sw.tensor([[1.0, 2.0, 3.0]]), sw.tensor([[1.0, 2.0]])
    with pytest.raises(ValueError) as by_name:
        sw.matmul(a, b)
    raises_exactly(type(by_name.value), op.resolve_call, op.get_definition("matmul"), a, b)
    raises_exactly(TypeError, op.get_definition("relu"), 1.0)  # a number where relu takes a Tensor


def test_R3_scenario_preserve_a_definition_free_operation():
    # Generic and CPU keep their own implementations of every name: the
    # by-name functions and the built-in definitions give the same results.
    x = sw.tensor([1.0, -2.0, 3.0], carrier=sw.Generic)
    y = sw.tensor([2.0, 2.0, 2.0], carrier=sw.Generic)
    assert op.get_definition("add")(x, y).tolist() == sw.add(x, y).tolist() == [3.0, 0.0, 5.0]
    assert op.get_definition("add")(x, y).carrier_type() is sw.Generic


# ---------------------------------------------------------------- R4 custom operations


def test_R4_define_operation_returns_an_immutable_callable_definition():
    resolve, reference = unary_resolve(), (lambda inv: inv.operands[0])
    name = fresh("fields")
    d = op.define_operation(name, UNARY, resolve, reference, vjp=op.NON_DIFFERENTIABLE)
    assert isinstance(d, op.OperationDefinition) and callable(d)
    assert (d.name, d.schema, d.resolve, d.reference, d.vjp) == (name, UNARY, resolve, reference, op.NON_DIFFERENTIABLE)
    assert d.resolve is resolve and d.reference is reference and d.vjp is op.NON_DIFFERENTIABLE
    assert not d.is_builtin() and not d.is_differentiable()
    assert op.get_definition(name) is d and any(r is d for r in op.registered_definitions())
    for field in ("name", "schema", "resolve", "reference", "vjp"):
        with pytest.raises(AttributeError):
            setattr(d, field, None)
    raises_exactly(TypeError, op.OperationDefinition)  # only define_operation makes one
    assert define_unary("defaults").reference is None  # reference=None by default


def test_R4_registered_definitions_are_sorted_and_include_the_built_ins():
    d = define_unary("listed")
    names = [r.name for r in op.registered_definitions()]
    assert names == sorted(names) and d.name in names and set(DIRECT_TILED) <= set(names)


@pytest.mark.parametrize("name", ["flat", "", "acme..x", "acme.", ".x", "acme.2x", "acme.a-b", "strideweave.mine",
                                  "add.fast", "relu.x", "sort.x", "topk.mine"])
def test_R4_invalid_or_reserved_name_is_value_error_and_registers_nothing(name):
    raises_exactly(ValueError, op.define_operation, name, UNARY, unary_resolve(), vjp=op.NON_DIFFERENTIABLE)
    raises_exactly(LookupError, op.get_definition, name)


@pytest.mark.parametrize("field, value", [("name", b"acme.x"), ("schema", [op.OperandSpec("x", TENSOR)]),
                                          ("resolve", "resolve"), ("reference", 3), ("vjp", None), ("vjp", 3)])
def test_R4_invalid_argument_type_is_type_error_and_registers_nothing(field, value):
    name = fresh("typed")
    args = {"name": name, "schema": UNARY, "resolve": unary_resolve(), "reference": None, "vjp": op.NON_DIFFERENTIABLE}
    args[field] = value
    raises_exactly(TypeError, op.define_operation, **args)
    raises_exactly(LookupError, op.get_definition, name)


def test_R4_scenario_require_an_explicit_gradient_declaration():
    name = fresh("no_vjp")
    raises_exactly(ValueError, op.define_operation, name, UNARY, unary_resolve())
    raises_exactly(ValueError, op.define_operation, name, UNARY, unary_resolve(), None)
    raises_exactly(LookupError, op.get_definition, name)  # the name never became observable
    assert op.define_operation(name, UNARY, unary_resolve(), vjp=lambda ctx, cot: (None,)).is_differentiable()


def test_R4_registration_is_one_shot():
    first = unary_resolve()
    name = fresh("once")
    d = op.define_operation(name, UNARY, first, vjp=op.NON_DIFFERENTIABLE)
    raises_exactly(ValueError, op.define_operation, name, UNARY, unary_resolve(), vjp=op.NON_DIFFERENTIABLE)
    assert op.get_definition(name) is d and op.get_definition(name).resolve is first
    assert not any(hasattr(op, n) for n in ("undefine_operation", "unregister_operation", "replace_operation"))


def test_R4_concurrent_definitions_of_one_name_have_one_winner():
    name = fresh("raced")
    barrier = threading.Barrier(8, timeout=HANG_DEADLINE)
    outcomes = []

    def define():
        barrier.wait()
        try:
            outcomes.append(op.define_operation(name, UNARY, unary_resolve(), vjp=op.NON_DIFFERENTIABLE))
        except ValueError as error:
            outcomes.append(error)

    threads = [threading.Thread(target=define) for _ in range(8)]
    for t in threads:
        t.start()
    join_bounded(threads, "the racing definitions")
    winners = [o for o in outcomes if isinstance(o, op.OperationDefinition)]
    assert len(outcomes) == 8 and len(winners) == 1
    assert op.get_definition(name) is winners[0]


class ResolveSaysNo(Exception):
    pass


def test_R4_a_resolve_exception_propagates_as_the_same_exception_before_capability_work():
    error = ResolveSaysNo("resolve says no")

    def resolve(call):
        raise error

    d = define_unary("raising", resolve=resolve)
    cls = make_carrier_class("NoCapabilities")  # a dispatch past resolve would be UnsupportedOperationPlan
    x, carrier = list_tensor(cls, [1.0])
    before = dict(carrier.calls)
    with pytest.raises(ResolveSaysNo) as info:
        d(x)
    assert info.value is error and no_storage_work(carrier, before)
    with pytest.raises(ResolveSaysNo) as info:
        op.resolve_call(d, f32(1))
    assert info.value is error


@pytest.mark.parametrize("returned", [None, "invocation", {"plan": None}])
def test_R4_a_non_resolved_invocation_return_is_type_error(returned):
    d = define_unary("wrong_return", resolve=lambda call: returned)
    raises_exactly(TypeError, d, f32(1))
    raises_exactly(TypeError, op.resolve_call, d, f32(1))


def test_R4_an_invocation_of_another_bound_call_is_value_error():
    donor = define_unary("donor")
    stolen = op.bind(donor, f32(1))
    thief = define_unary("thief", resolve=lambda call: unary_resolve()(stolen))
    raises_exactly(ValueError, op.resolve_call, thief, f32(1))
    raises_exactly(ValueError, thief, f32(1))
    # The right definition, but an earlier bound call of it.
    earlier = {}
    d = define_unary("self_thief", resolve=lambda call: unary_resolve()(earlier["call"]))
    earlier["call"] = op.bind(d, f32(1))
    raises_exactly(ValueError, op.resolve_call, d, f32(1))


@pytest.mark.parametrize("make", [lambda v: sw.tensor(v), lambda v: sw.tensor(v, carrier=sw.Generic)],
                         ids=["CPU", "Generic"])
def test_R4_scenario_leave_another_carrier_unsupported(make):
    calls = []
    d = define_unary("nowhere", reference=lambda inv: calls.append(inv) or inv.operands[0])
    x = make([1.0, 2.0])
    version = x.carrier.version
    error = raises_exactly(sw.UnsupportedOperationPlan, d, x)
    assert error.plan == op.resolve_call(d, x).plan and d.name in error.reason
    assert x.carrier.version == version
    assert calls == []  # the reference is no execution fallback for a definition-free carrier


def test_R4_a_capable_definition_free_carrier_without_an_implementation_is_unsupported():
    # The capability gate admits the plan; a definition-free class whose
    # dispatch hook supplies no implementation is UnsupportedOperationPlan
    # (carrier-extension R13.1: never a plain NotImplementedError), and
    # nothing is allocated or written.
    d = define_unary("gated")
    cls = capable_class(plan_of(d.name, (T, F32)))
    x, carrier = list_tensor(cls, [1.0, 2.0])
    before = dict(carrier.calls)
    error = raises_exactly(sw.UnsupportedOperationPlan, d, x)
    assert "dispatch hook" in str(error) and d.name in str(error)
    assert no_storage_work(carrier, before) and carrier.version == 0


def test_R4_reference_and_vjp_are_never_called_to_infer_resolution():
    calls = []
    d = define_unary("no_inference", reference=lambda inv: calls.append("reference"),
                     vjp=lambda ctx, cot: calls.append("vjp"))
    x = f32(1)
    op.resolve_call(d, x)
    with pytest.raises(sw.UnsupportedOperationPlan):
        d(x)
    assert calls == []


def test_R4_a_released_operand_is_runtime_error_after_resolve():
    log = []
    d = define_unary("released", resolve=unary_resolve(log))
    x = f32(1)
    x.carrier.release()
    raises_exactly(RuntimeError, d, x)
    assert len(log) == 1


def test_R4_resolution_ignores_the_carrier_class():
    # Calls differing only in their carrier resolve to the same plan, results,
    # effects, save recipe and kernel identifier.
    d = define_unary("carrier_neutral")
    invocations = [op.resolve_call(d, x) for x in (f32(1, 2), sw.tensor([1.0, 2.0], carrier=sw.Generic),
                                                   list_tensor(make_carrier_class(), [1.0, 2.0])[0])]
    fields = {(i.plan, i.results, i.mutated_operands, i.saved_operands, i.kernel_id) for i in invocations}
    assert len(fields) == 1


def test_R4_callbacks_run_from_many_threads():
    # resolve takes the GIL only while it runs: concurrent calls from several
    # Python threads complete, each seeing its own operands.
    d = define_unary("threads")
    errors = []

    def work(k):
        try:
            for _ in range(50):
                x = f32(k)
                assert op.resolve_call(d, x).operands[0] is x
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    join_bounded(threads, "the resolving threads")
    assert errors == []


# ---------------------------------------------------------------- R5 results and invocations


def test_R5_result_spec_fields_defaults_and_immutability():
    s = sw.Shape(2, 3)
    r = op.ResultSpec(F32, s, sw.Layout.compact(s))
    assert (r.dtype, r.shape, r.layout, r.alias_of, r.atol, r.rtol) == (F32, s, sw.Layout.compact(s), None, 0.0, 0.0)
    assert r.dtype is F32
    t = op.ResultSpec(I32, s, sw.Layout(s, sw.Stride(3, 1)), 0, atol=1e-6, rtol=1e-5)
    assert (t.alias_of, t.atol, t.rtol, t.layout) == (0, 1e-6, 1e-5, sw.Layout(s, sw.Stride(3, 1)))
    assert r == op.ResultSpec.compact(F32, s) and hash(r) == hash(op.ResultSpec.compact(F32, s)) and r != t
    for field in ("dtype", "shape", "layout", "alias_of", "atol", "rtol"):
        with pytest.raises(AttributeError):
            setattr(r, field, None)


S2 = sw.Shape(2)


@pytest.mark.parametrize("args, kwargs", [
    (("float32", S2, sw.Layout.compact(S2)), {}),
    ((F32, "2", sw.Layout.compact(S2)), {}),
    ((F32, (2,), sw.Layout.compact(S2)), {}),  # a tuple of extents is not a Shape
    ((F32, S2, (2,)), {}),
    ((F32, S2, sw.Layout.compact(S2), 1.0), {}),
    ((F32, S2, sw.Layout.compact(S2), True), {}),
    ((F32, S2, sw.Layout.compact(S2)), {"atol": True}),
    ((F32, S2, sw.Layout.compact(S2)), {"rtol": "0"}),
    ((F32, S2, sw.Layout.compact(S2), None, 0.1), {}),  # atol is keyword-only
])
def test_R5_result_spec_field_of_the_wrong_type_is_type_error(args, kwargs):
    raises_exactly(TypeError, op.ResultSpec, *args, **kwargs)


@pytest.mark.parametrize("args, kwargs", [
    ((F32, sw.Shape(2, 3), sw.Layout.compact(sw.Shape(3, 2))), {}),
    ((F32, S2, sw.Layout.compact(S2), -1), {}),
    ((F32, S2, sw.Layout.compact(S2)), {"atol": -1.0}),
    ((F32, S2, sw.Layout.compact(S2)), {"rtol": float("inf")}),
    ((F32, S2, sw.Layout.compact(S2)), {"atol": float("nan")}),
])
def test_R5_result_spec_bad_value_is_value_error(args, kwargs):
    raises_exactly(ValueError, op.ResultSpec, *args, **kwargs)


THREE = op.OperationSchema([op.OperandSpec("x", TENSOR, True), op.OperandSpec("s", WEAK_SCALAR),
                            op.OperandSpec("k", STRUCTURAL)])
OK = op.ResultSpec.compact(F32, sw.Shape(2))


def good_plan(call):
    return plan_of(call.definition.name, (T, F32), (W, None))


INVALID_INVOCATIONS = {
    "plan of another operation": lambda c: op.ResolvedInvocation(c, plan_of("add", (T, F32), (W, None)), [OK]),
    "roles differ": lambda c: op.ResolvedInvocation(c, plan_of(c.definition.name, (T, F32), (T, F32)), [OK]),
    "plan reads another dtype": lambda c: op.ResolvedInvocation(c, plan_of(c.definition.name, (T, I32), (W, None)), [OK]),
    "too few plan operands": lambda c: op.ResolvedInvocation(c, plan_of(c.definition.name, (T, F32)), [OK]),
    "no results": lambda c: op.ResolvedInvocation(c, good_plan(c), []),
    "duplicate mutated index": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], [0, 0]),
    "saved index out of range": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], (), [5]),
    "saved weak scalar": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], (), [1]),
    "negative mutated index": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], [-1]),
    "empty kernel id": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], kernel_id=""),
    "alias out of range": lambda c: op.ResolvedInvocation(c, good_plan(c), [op.ResultSpec(F32, sw.Shape(2), sw.Layout.compact(sw.Shape(2)), 3)]),
    "alias of a structural": lambda c: op.ResolvedInvocation(c, good_plan(c), [op.ResultSpec(F32, sw.Shape(2), sw.Layout.compact(sw.Shape(2)), 2)]),
}


@pytest.mark.parametrize("case", sorted(INVALID_INVOCATIONS))
def test_R5_an_invocation_that_conflicts_with_the_call_is_value_error_before_capability_matching(case):
    d = op.define_operation(fresh("invalid"), THREE, INVALID_INVOCATIONS[case], vjp=op.NON_DIFFERENTIABLE)
    raises_exactly(ValueError, op.resolve_call, d, f32(1, 2), 2.0, 4)
    # On a carrier without capabilities the gate would say UnsupportedOperationPlan.
    x, carrier = list_tensor(make_carrier_class("Bare"), [1.0, 2.0])
    before = dict(carrier.calls)
    raises_exactly(ValueError, d, x, 2.0, 4)
    assert no_storage_work(carrier, before)


INVALID_TYPES = {
    "call": lambda c: op.ResolvedInvocation(None, good_plan(c), [OK]),
    "plan": lambda c: op.ResolvedInvocation(c, "plan", [OK]),
    "results": lambda c: op.ResolvedInvocation(c, good_plan(c), OK),
    "result entry": lambda c: op.ResolvedInvocation(c, good_plan(c), [F32]),
    "mutated entry": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], ["0"]),
    "saved bool": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], (), [True]),
    "kernel id": lambda c: op.ResolvedInvocation(c, good_plan(c), [OK], kernel_id=7),
}


@pytest.mark.parametrize("case", sorted(INVALID_TYPES))
def test_R5_an_invocation_field_of_the_wrong_type_is_type_error(case):
    d = op.define_operation(fresh("typed"), THREE, INVALID_TYPES[case], vjp=op.NON_DIFFERENTIABLE)
    raises_exactly(TypeError, op.resolve_call, d, f32(1, 2), 2.0, 4)


def test_R5_an_invocation_exposes_its_whole_contract():
    seen = {}
    flag = op.OptionSpec("flag", False)
    schema = op.OperationSchema([op.OperandSpec("x", TENSOR, True), op.OperandSpec("s", WEAK_SCALAR)], [flag])

    def resolve(call):
        seen["call"] = call
        seen["invocation"] = op.ResolvedInvocation(
            call, plan_of(call.definition.name, (T, F32), (W, None)),
            (r for r in [op.ResultSpec.compact(F32, sw.Shape(2), atol=1e-6)]),  # iterables are read once
            mutated_operands=iter([0]), saved_operands=iter([0]))
        return seen["invocation"]

    name = fresh("whole")
    d = op.define_operation(name, schema, resolve, vjp=op.NON_DIFFERENTIABLE)
    x = f32(1, 2)
    inv = op.resolve_call(d, x, 0.5)
    assert inv is seen["invocation"] and inv.call is seen["call"]  # resolve's own objects
    assert inv.definition is d and inv.operation == name and inv.kernel_id == name  # kernel_id defaults to the name
    assert inv.operands == (x, 0.5) and inv.operands[0] is x and dict(inv.options) == {"flag": False}
    assert inv.plan == plan_of(name, (T, F32), (W, None))
    assert inv.results == (op.ResultSpec.compact(F32, sw.Shape(2), atol=1e-6),)
    assert inv.mutated_operands == (0,) and inv.saved_operands == (0,)
    for field in ("call", "plan", "results", "kernel_id", "saved_operands"):
        with pytest.raises(AttributeError):
            setattr(inv, field, None)


def test_R5_an_explicit_kernel_id_is_kept():
    d = define_unary("kernel", resolve=lambda c: op.ResolvedInvocation(
        c, plan_of(c.definition.name, (T, F32)), [op.ResultSpec.compact(F32, sw.Shape(1))], kernel_id="acme.fast_path"))
    assert op.resolve_call(d, f32(1)).kernel_id == "acme.fast_path"


# ---------------------------------------------------------------- R6 reference execution


def test_R6_a_single_tensor_reference_is_normalised_to_a_one_element_tuple():
    seen = []
    fresh_result = f32(2, 4)
    d = define_unary("ref_one", reference=lambda inv: seen.append(inv) or fresh_result)
    x = f32(1, 2)
    inv = op.resolve_call(d, x)
    results = op.execute_reference(d, inv)
    assert isinstance(results, tuple) and len(results) == 1 and results[0] is fresh_result
    assert seen == [inv]  # the reference receives the very invocation


def test_R6_a_tensor_tuple_reference_keeps_its_order():
    first, second = f32(1, 2), f32(3, 4)
    d = define_unary("ref_two", resolve=unary_resolve(results=2), reference=lambda inv: (second, first))
    results = op.execute_reference(d, op.resolve_call(d, f32(0, 0)))
    assert results[0] is second and results[1] is first


@pytest.mark.parametrize("returned", [None, 3.0, "x", [0], lambda x: ([x],), lambda x: (x, 1.0)],
                         ids=["None", "float", "str", "list", "list in tuple", "float in tuple"])
def test_R6_another_reference_return_type_is_type_error(returned):
    x = f32(1, 2)
    value = returned(x) if callable(returned) else returned
    d = define_unary("ref_type", resolve=unary_resolve(results=2), reference=lambda inv: value)
    raises_exactly(TypeError, op.execute_reference, d, op.resolve_call(d, x))


@pytest.mark.parametrize("field, returned", [
    ("count", lambda x: ()),
    ("count", lambda x: (x, x, x)),
    ("dtype", lambda x: sw.tensor([1, 2])),
    ("shape", lambda x: f32(1, 2, 3)),
])
def test_R6_a_reference_result_that_conflicts_with_the_result_specs_is_provider_contract_error(field, returned):
    x = f32(1, 2)
    d = define_unary("ref_conflict", reference=lambda inv: returned(x))
    error = raises_exactly(op.ProviderContractError, op.execute_reference, d, op.resolve_call(d, x))
    assert error.field == field and isinstance(error, RuntimeError)


def test_R6_a_reference_exception_propagates_as_the_same_exception():
    error = ResolveSaysNo("reference says no")

    def reference(inv):
        raise error

    d = define_unary("ref_raises", reference=reference)
    with pytest.raises(ResolveSaysNo) as info:
        op.execute_reference(d, op.resolve_call(d, f32(1)))
    assert info.value is error


def test_R6_no_reference_or_another_definitions_invocation():
    none = define_unary("no_reference")
    inv = op.resolve_call(none, f32(1))
    raises_exactly(NotImplementedError, op.execute_reference, none, inv)
    other = define_unary("other_reference", reference=lambda i: i.operands[0])
    raises_exactly(ValueError, op.execute_reference, other, inv)
    raises_exactly(TypeError, op.execute_reference, other, "invocation")
    raises_exactly(TypeError, op.execute_reference, "definition", inv)


def test_R6_scenario_omit_a_definition_backed_fallback_deliberately():
    # reference=None: registering gives the operation no execution anywhere.
    d = define_unary("no_fallback")
    assert d.reference is None
    raises_exactly(sw.UnsupportedOperationPlan, d, f32(1))
    raises_exactly(sw.UnsupportedOperationPlan, d, sw.tensor([1.0], carrier=sw.Generic))


@pytest.mark.parametrize("name", DIRECT_TILED)
def test_R6_each_direct_tiled_reference_agrees_with_the_carrier(name):
    d = op.get_definition(name)
    operands, options = direct_tiled_call(name)
    inv = op.resolve_call(d, *operands, **options)
    [reference] = op.execute_reference(d, inv)
    ours = d(*operands, **options)
    assert reference.carrier_type() is sw.Generic  # the executable reference carrier
    assert reference.dtype() is ours.dtype() and reference.shape == ours.shape
    # The built-in ResultSpecs declare atol = rtol = 0: the values agree exactly.
    assert inv.results[0].atol == inv.results[0].rtol == 0.0
    assert reference.values() == ours.values()
    [callable_reference] = [d.reference(inv)]
    assert callable_reference.tolist() == reference.tolist()


# ---------------------------------------------------------------- R7 capability and execution


def test_R7_scenario_keep_introspection_and_execution_aligned():
    # A carrier class whose capabilities omit the resolved plan: introspection
    # says so and execution rejects the plan before any storage work.
    d = define_unary("aligned")
    cls = capable_class(sw.resolve_operation_plan("add", F32, F32))
    x, carrier = list_tensor(cls, [1.0])
    plan = op.resolve_call(d, x).plan
    assert not sw.supports_operation_plan(cls, plan)
    before = dict(carrier.calls)
    error = raises_exactly(sw.UnsupportedOperationPlan, d, x)
    assert error.plan == plan and error.reason == sw.unsupported_plan_reason(cls, plan)
    assert no_storage_work(carrier, before)
    # A plan differing only in the operand's stored dtype is another plan.
    i, _ = list_tensor(capable_class(plan), [1], dtype=I32)
    assert raises_exactly(sw.UnsupportedOperationPlan, d, i).plan == plan_of(d.name, (T, I32))


# ---------------------------------------------------------------- R8 automatic differentiation


def aliasing(stem, vjp=lambda ctx, cot: (None,), results=1, saved=True):
    return define_unary(stem, resolve=unary_resolve(alias_of=0, results=results), vjp=vjp)


class AliasKernel(sw.Operation):
    """The dispatch hook's computation of an aliasing operation: the result
    is the operand itself, so there is nothing to write."""

    def _forward(self, call):
        assert call.outputs[-1] is not None


def graph_probe(stem, **kwargs):
    d = aliasing(stem, **kwargs)
    cls = capable_class(plan_of(d.name, (T, F32)))
    cls._dispatch_op = lambda self, name: AliasKernel()
    x, carrier = list_tensor(cls, [1.0, 2.0])
    return d, x, carrier


def test_R8_scenario_reject_a_differentiable_exact_object_alias_before_provider_work():
    d, x, carrier = graph_probe("alias_grad")
    before = dict(carrier.calls)
    error = raises_exactly(ValueError, d, x)  # a capable carrier: without the rule this is NotImplementedError
    assert "alias" in str(error)
    assert x.grad_fn is None and x.requires_grad and carrier.version == 0 and no_storage_work(carrier, before)


def test_R8_scenario_reject_one_graph_building_alias_atomically_among_multiple_results():
    d, x, carrier = graph_probe("alias_two", results=2)  # the second of two results aliases x
    raises_exactly(ValueError, d, x)
    assert carrier.version == 0


def test_R8_scenario_permit_a_non_differentiable_exact_object_alias():
    d, x, carrier = graph_probe("alias_nondiff", vjp=op.NON_DIFFERENTIABLE)
    r = d(x)  # provider execution proceeds; publication validates the exact object
    assert r.carrier is x.carrier and r.grad_fn is None and x.grad_fn is None


def test_R8_scenario_permit_a_no_grad_exact_object_alias():
    d, x, carrier = graph_probe("alias_nograd")
    with sw.no_grad():
        r = d(x)
        assert r.carrier is x.carrier and r.grad_fn is None
    raises_exactly(ValueError, d, x)  # and the rule is back with graph construction


def test_R8_every_float32_operand_takes_part_so_a_plain_operand_triggers_the_rule():
    # core-concepts 6.2: no opt-in flag decides; a Float32 operand under grad
    # mode is enough for the alias rule (before any provider work).
    d, x, carrier = graph_probe("alias_plain")
    raises_exactly(ValueError, d, x)
    assert carrier.version == 0


def test_R8_a_released_carrier_raises_its_runtime_error_before_the_alias_rule():
    d, x, carrier = graph_probe("alias_released")
    carrier.release()
    raises_exactly(RuntimeError, d, x)


def test_R8_vjp_context_exposes_invocation_outputs_and_saved_operands():
    add = op.get_definition("add")
    x, y = f32(1, 2), f32(3, 4)
    inv = op.resolve_call(add, x, y)
    out = add(x, y)
    ctx = op.VJPContext(inv, [out], (x, y))
    assert ctx.invocation is inv
    assert [t.tolist() for t in ctx.outputs] == [[4.0, 6.0]]
    assert [t.tolist() for t in ctx.saved_operands] == [[1.0, 2.0], [3.0, 4.0]]
    assert ctx.needs_grad(0) and ctx.needs_grad(1)
    for field in ("invocation", "outputs", "saved_operands"):
        with pytest.raises(AttributeError):
            setattr(ctx, field, None)
    raises_exactly(TypeError, op.VJPContext, "invocation", [out], ())
    raises_exactly(TypeError, op.VJPContext, inv, [1.0], ())


@pytest.mark.parametrize("name", ["add", "mul", "matmul"])
def test_R8_a_built_in_vjp_matches_autograd(name):
    d = op.get_definition(name)
    x, y = sw.tensor([[1.0, 2.0], [3.0, 4.0]]), sw.tensor([[0.5, -1.0], [2.0, 1.0]])
    inv = op.resolve_call(d, x, y)
    out = d(x, y)
    cotangent = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
    grads = d.vjp(op.VJPContext(inv, [out], [x, y]), (cotangent,))
    a, b = x.detach(), y.detach()
    expected = sw.grad(getattr(sw, name)(a, b), [a, b], cotangent)
    assert isinstance(grads, tuple) and len(grads) == 2
    assert [g.tolist() for g in grads] == [e.tolist() for e in expected]
    assert d.vjp(op.VJPContext(inv, [out], [x, y]), (None,)) == (None, None)  # no cotangent flows


def test_R8_non_differentiable_definitions_carry_the_one_marker():
    d = define_unary("marker")
    assert d.vjp is op.NON_DIFFERENTIABLE and not d.is_differentiable()
    assert copy.deepcopy(op.NON_DIFFERENTIABLE) is op.NON_DIFFERENTIABLE
    assert pickle.loads(pickle.dumps(op.NON_DIFFERENTIABLE)) is op.NON_DIFFERENTIABLE
    vjp = lambda ctx, cot: (None,)  # noqa: E731
    assert define_unary("callable_vjp", vjp=vjp).vjp is vjp


# ---------------------------------------------------------------- R10 result publication


def test_R10_provider_contract_error_is_a_runtime_error_naming_the_field():
    assert issubclass(op.ProviderContractError, RuntimeError) and op.ProviderContractError is sw.ProviderContractError
    error = op.ProviderContractError("dtype differs", "dtype")
    assert (error.reason, error.field, str(error)) == ("dtype differs", "dtype", "dtype differs")
