"""Issue 20, step 9: one converter for option values (python/src/options.cpp).

The by-name calls of the built-in operations and the calls of user
definitions used to convert options with two different functions: a numpy
integer was an int for one and an opaque object for the other, a range was a
list for one and an object for the other, and the by-name path formatted its
error text before converting. Both now go through option_value_arg, so the
same Python value becomes the same option value on every path."""

import numpy as np
import pytest

import strideweave as sw
from strideweave import operation as op
from option_support import echo_definition



@pytest.mark.parametrize("given, expected", [
    (np.int64(3), 3), (np.int32(-2), -2), (np.float32(0.5), 0.5), (np.bool_(True), True),
    (range(3), (0, 1, 2)), ([np.int64(1), 2], (1, 2)), (sw.Shape(2, 3), (2, 3)), (None, None), ("text", "text"),
])
def test_a_definition_sees_the_value_the_builtins_read(given, expected):
    d, seen = echo_definition()
    op.resolve_call(d, sw.tensor([1.0]), v=given)
    assert seen["v"] == expected and type(seen["v"]) is type(expected)


def test_builtins_accept_the_same_values():
    x = sw.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert sw.reduce_sum(x, axes=range(1)).tolist() == sw.reduce_sum(x, axes=[0]).tolist()
    assert sw.reduce_sum(x, axes=(np.int64(1),)).tolist() == sw.reduce_sum(x, axes=[1]).tolist()
    assert sw.elu(x, alpha=np.float32(0.5)).tolist() == sw.elu(x, alpha=0.5).tolist()
    assert sw.sort(x, axis=np.int32(0)).values.tolist() == sw.sort(x, axis=0).values.tolist()


def test_an_integer_beyond_64_bits_is_an_overflow_error_naming_the_option_on_both_paths():
    x = sw.tensor([1.0, 2.0])
    with pytest.raises(OverflowError, match=r"sort: option 'axis': 1180591620717411303424 does not fit"):
        sw.sort(x, axis=2**70)
    d, _ = echo_definition()
    with pytest.raises(OverflowError, match=r"option 'v': .* does not fit in 64 bits"):
        op.resolve_call(d, x, v=[1, 2**70])


def test_an_object_of_no_option_kind_is_kept_by_a_definition_and_refused_by_a_builtin_by_name():
    token = object()
    d, seen = echo_definition()
    op.resolve_call(d, sw.tensor([1.0]), v=token)
    assert seen["v"] is token
    with pytest.raises(TypeError, match=r"elu: option 'alpha' must be a real number"):
        sw.elu(sw.tensor([1.0]), alpha=token)
    with pytest.raises(TypeError, match=r"reduce_sum: option 'axes' must be a list of integers"):
        sw.reduce_sum(sw.tensor([1.0]), axes=["a"])


def test_the_catalog_exposes_each_schema_as_data():
    catalog = {entry["name"]: entry for entry in sw._core._operation_catalog()}
    assert set(catalog) == set(sw.OPERATION_NAMES)
    for name, entry in catalog.items():
        schema = entry["schema"]
        assert isinstance(schema, op.OperationSchema)
        assert entry["operands"] == [o.name for o in schema.operands]
        if not name.startswith(("sort", "topk")):
            assert schema == op.get_definition(name).schema
    # sort and topk have no definition: their schema is their values plan's.
    assert catalog["topk"]["schema"] == op.get_definition("_topk_values").schema


def test_an_overflowing_item_of_a_range_is_named_after_the_range_is_gone():
    # The overflowing item is held, not borrowed from the range's iterator.
    with pytest.raises(OverflowError, match=r"reduce_sum: option 'axes': 9223372036854775808 does not fit"):
        sw.reduce_sum(sw.tensor([1.0]), axes=range(2**63, 2**63 + 1))


def test_a_numpy_array_is_an_opaque_object_not_a_list_or_an_integer():
    # ndarray defines __index__ (for one-element integer arrays); it is still
    # not an integer option and not a list of integers.
    array = np.array([0, 1])
    d, seen = echo_definition()
    op.resolve_call(d, sw.tensor([1.0]), v=array)
    assert seen["v"] is array
    op.resolve_call(d, sw.tensor([1.0]), v=np.array([3]))
    assert isinstance(seen["v"], np.ndarray)
    with pytest.raises(TypeError, match=r"reduce_sum: option 'axes' must be a list of integers"):
        sw.reduce_sum(sw.tensor([[1.0]]), axes=array)


def test_issue21_step4_builtin_option_kinds_are_checked_before_resolve():
    """A built-in option whose value does not fit its declared kind (the
    operations.def type) is a TypeError naming the option, even where
    resolve would refuse the operand dtypes: the kind check comes first.
    (User-defined OptionSpecs declare no kind yet: issue 21, step 4.)"""
    ints, bools = sw.tensor([1, 2]), sw.tensor([True])
    for call, option in [(lambda: sw.elu(ints, alpha="a"), "alpha"),
                         (lambda: sw.reduce_sum(bools, keepdims="x"), "keepdims"),
                         (lambda: sw.cumsum(bools, axis="x"), "axis"),
                         (lambda: sw.operation.get_definition("elu")(ints, alpha="a"), "alpha")]:
        with pytest.raises(TypeError, match=f"option '{option}'"):
            call()
