"""Issue 21, step 4: options checked against their specs.

An option whose value does not fit its declared kind is a TypeError naming
the option before resolve runs (beyond operation-semantics.md: OptionSpec's
kind=, docs/python.md "Option kinds"). A spec without a kind accepts every
value, as the specification's OptionSpec does."""

import numpy as np
import pytest

import strideweave as sw
from strideweave import operation as op
from option_support import echo_definition as echo

K = op.OptionKind


def test_option_kind_is_a_string_valued_enum_also_at_the_top_level():
    assert sw.OptionKind is op.OptionKind
    assert [k.value for k in K] == ["any", "bool", "int", "real", "ints", "str", "dtype"]
    assert op.OptionSpec("v").kind is K.ANY
    spec = op.OptionSpec("v", 1.0, kind=K.REAL)
    assert spec.kind is K.REAL and repr(spec) == "OptionSpec('v', default=1.0, kind=<OptionKind.REAL: 'real'>)"
    assert spec != op.OptionSpec("v", 1.0)
    with pytest.raises(TypeError, match="OptionSpec: kind"):
        op.OptionSpec("v", 1.0, kind="real")


def test_a_mismatch_is_a_type_error_naming_the_option_before_resolve():
    d, seen = echo(op.OptionSpec("axis", 0, kind=K.INTEGER))
    x = sw.tensor([1.0])
    for bad in (1.5, True, None, "0", [0]):
        with pytest.raises(TypeError, match=rf"{d.name}: option 'axis' must be an integer, got"):
            op.resolve_call(d, x, axis=bad)
        with pytest.raises(TypeError, match=r"option 'axis' must be an integer"):
            op.bind(d, x, axis=bad)
    assert seen["resolves"] == 0
    op.resolve_call(d, x, axis=np.int64(-1))
    assert seen["resolves"] == 1 and seen["axis"] == -1


@pytest.mark.parametrize("kind, default, given, expected", [
    (K.REAL, 1.0, 2, 2.0),
    (K.REAL, 1.0, np.float32(0.5), 0.5),
    (K.REAL, 1.0, 2**53, float(2**53)),
    (K.INTEGERS, None, 3, (3,)),
    (K.INTEGERS, None, range(2), (0, 1)),
    (K.INTEGERS, None, sw.Shape(2, 3), (2, 3)),
    (K.INTEGERS, None, None, None),
    (K.BOOL, False, np.bool_(True), True),
    (K.TEXT, None, "fast", "fast"),
    (K.DTYPE, None, sw.DType.Int32, sw.DType.Int32),
    (K.ANY, None, "anything", "anything"),
])
def test_each_kind_binds_its_values(kind, default, given, expected):
    d, seen = echo(op.OptionSpec("v", default, kind=kind))
    op.resolve_call(d, sw.tensor([1.0]), v=given)
    assert seen["v"] == expected and type(seen["v"]) is type(expected)


@pytest.mark.parametrize("kind, default, given", [
    (K.REAL, 1.0, 2**53 + 1),       # no double holds it: refused, not rounded
    (K.REAL, 1.0, False),
    (K.BOOL, False, 1),
    (K.INTEGERS, None, ["a"]),
    (K.INTEGERS, None, 1.0),
    (K.TEXT, None, sw.DType.Int32),
    (K.DTYPE, None, "int32"),
    (K.DTYPE, sw.DType.Float32, None),  # None fits only where the default is None
])
def test_each_kind_refuses_what_does_not_fit(kind, default, given):
    d, seen = echo(op.OptionSpec("v", default, kind=kind))
    with pytest.raises(TypeError, match=r"option 'v' must be"):
        op.resolve_call(d, sw.tensor([1.0]), v=given)
    assert seen["resolves"] == 0


def test_admit_and_accepted_are_the_binding_check_itself():
    spec = op.OptionSpec("axes", None, kind=K.INTEGERS)
    assert spec.accepted() == "a list of integers or None"
    assert spec.admit("mine", 3) == (3,) and spec.admit("mine", None) is None
    with pytest.raises(TypeError, match=r"mine: option 'axes' must be a list of integers or None, got 'x'"):
        spec.admit("mine", "x")
    assert op.OptionSpec("scale", 1.0, kind=K.REAL).admit("mine", 2) == 2.0
    assert op.OptionSpec("v").accepted() == "any value"


def test_a_default_must_fit_its_kind():
    with pytest.raises(TypeError, match=r"OptionSpec: option 'v' must be an integer, got 'x'"):
        op.OptionSpec("v", "x", kind=K.INTEGER)
    assert op.OptionSpec("v", 2, kind=K.REAL).default == 2.0
    assert op.OptionSpec("v", None, kind=K.TEXT).default is None
    assert op.OptionSpec("v", kind=K.DTYPE).required


def test_every_builtin_option_declares_a_kind_its_default_fits():
    count = 0
    for d in op.registered_definitions():
        if "." in d.name:
            continue  # user-defined (namespaced)
        for o in d.schema.options:
            count += 1
            assert o.kind is not K.ANY, f"{d.name}.{o.name}"
            if not o.required and o.default is not None:
                op.OptionSpec(o.name, o.default, kind=o.kind)  # fits
    assert count > 20
    assert op.get_definition("softplus").schema.options[0].kind is K.REAL
    assert op.get_definition("argmax").schema.options[0].kind is K.INTEGER


def test_builtins_say_the_same_through_every_path():
    x = sw.tensor([1.0, -1.0])
    pattern = r"gelu: option 'approximate' must be a bool"
    with pytest.raises(TypeError, match=pattern):
        sw.gelu(x, approximate=1)
    with pytest.raises(TypeError, match=pattern):
        op.resolve_call(op.get_definition("gelu"), x, approximate=1)
    with pytest.raises(TypeError, match=pattern):
        x.carrier.dispatch_op("gelu").forward(x, options={"approximate": 1})
    # An integer is a real number: bound as a float.
    assert sw.elu(x, alpha=1).tolist() == sw.elu(x, alpha=1.0).tolist()
    # Only the kind check catches an integer no double holds (the built-in's
    # own reader would round it): the binding refuses it on every path.
    with pytest.raises(TypeError, match=r"elu: option 'alpha' must be a real number, got 9007199254740993"):
        sw.elu(x, alpha=2**53 + 1)
    with pytest.raises(TypeError, match=r"elu: option 'alpha' must be a real number"):
        op.resolve_call(op.get_definition("elu"), x, alpha=2**53 + 1)
