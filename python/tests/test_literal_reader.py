"""strideweave.tensor(data): the literal reader (docs/python.md, "Tensors
from Python data"). Each case here crashed or answered wrongly before the
reader owned what it reads: borrowed handles to items that iteration had
already freed, numpy arrays read element by element through those handles,
and unbounded recursion on the C stack."""

import numbers
import sys

import numpy as np
import pytest

import strideweave as sw
from conftest import BOOL, F32, I32, raises_exactly


# ---- the reported crashes and wrong answers

def test_core_concepts_4_1_tensor_from_numpy_int64_arange():
    t = sw.tensor(np.arange(6))
    assert t.dtype() is I32 and t.shape == sw.Shape(6)
    assert t.tolist() == [0, 1, 2, 3, 4, 5]


def test_core_concepts_4_1_tensor_from_numpy_int32_array():
    t = sw.tensor(np.zeros((2, 2), np.int32))
    assert t.dtype() is I32 and t.shape == sw.Shape(2, 2)
    assert t.tolist() == [[0, 0], [0, 0]]
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert sw.tensor(a).tolist() == a.tolist()


def test_core_concepts_4_1_tensor_from_a_range_of_large_integers():
    # Integers above 256 are fresh objects on every iteration step.
    t = sw.tensor(range(10**6, 10**6 + 4))
    assert t.dtype() is I32 and t.tolist() == [10**6, 10**6 + 1, 10**6 + 2, 10**6 + 3]


def test_literal_reader_keeps_items_alive():
    # A numpy array's items are fresh float64 objects: the reader must own
    # them until it has converted them.
    t = sw.tensor([np.array([1000.5, 2000.5]), np.array([3.5, 4.5])])
    assert t.dtype() is F32 and t.tolist() == [[1000.5, 2000.5], [3.5, 4.5]]


def test_literal_reader_keeps_items_alive_when_conversion_empties_the_list():
    # A number whose conversion (numbers.Real -> __float__) clears the list
    # being read: the reader reads its own snapshot, not the list.
    class Clearing:
        def __init__(self, target):
            self.target = target

        def __float__(self):
            self.target.clear()
            return 0.25

    numbers.Real.register(Clearing)
    data = [float(i) + 0.5 for i in range(1000, 1008)]
    data.insert(0, Clearing(data))
    expected = [0.25] + [float(i) + 0.5 for i in range(1000, 1008)]
    t = sw.tensor(data)
    assert data == [] and t.tolist() == expected


def test_literal_reader_nesting_deeper_than_64_levels_is_a_value_error():
    deep = 0
    for _ in range(100_000):
        deep = [deep]
    raises_exactly(ValueError, sw.tensor, deep, match="nested more than 64 levels")
    ok = 1.5
    for _ in range(64):
        ok = [ok]
    t = sw.tensor(ok)
    assert t.rank == 64 and t.size() == 1 and t.item() == 1.5
    raises_exactly(ValueError, sw.tensor, [ok], match="nested more than 64 levels")


def test_literal_reader_a_list_that_contains_itself_is_a_value_error():
    loop = []
    loop.append(loop)
    loop.append(loop)
    raises_exactly(ValueError, sw.tensor, [loop, loop], match="nested more than 64 levels")
    own = []
    own.append(own)
    raises_exactly(ValueError, sw.tensor, own, match="nested more than 64 levels")
    ragged = [1]
    ragged.append(ragged)
    raises_exactly(ValueError, sw.tensor, ragged, match="ragged")


# ---- containers

def test_literal_reader_accepts_tuples_ranges_generators_and_iterables():
    assert sw.tensor((1, 2, 3)).tolist() == [1, 2, 3]
    assert sw.tensor(range(3)).tolist() == [0, 1, 2]
    assert sw.tensor(x * 0.5 for x in range(4)).tolist() == [0.0, 0.5, 1.0, 1.5]
    assert sw.tensor((range(i, i + 2) for i in range(3))).tolist() == [[0, 1], [1, 2], [2, 3]]
    assert sw.tensor(iter([[True], [False]])).tolist() == [[True], [False]]
    assert sw.tensor({"a": 1, "b": 2}.values()).tolist() == [1, 2]
    assert sw.tensor([(1, 2), [3, 4], range(5, 7), np.array([7, 8])]).tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]


def test_literal_reader_empty_and_rank_0_data():
    assert sw.tensor([]).shape == sw.Shape(0) and sw.tensor([]).dtype() is F32
    assert sw.tensor([[], []]).shape == sw.Shape(2, 0)
    assert sw.tensor(iter(())).shape == sw.Shape(0)
    t = sw.tensor(7)
    assert t.rank == 0 and t.item() == 7 and t.dtype() is I32
    assert sw.tensor(np.float32(2.5)).item() == 2.5
    assert sw.tensor(np.array(3, np.int16)).tolist() == 3


def test_literal_reader_ragged_data_is_a_value_error():
    raises_exactly(ValueError, sw.tensor, [[1, 2], [3]], match="ragged")
    raises_exactly(ValueError, sw.tensor, [[1, 2], 3], match="ragged")
    raises_exactly(ValueError, sw.tensor, [1, [2]], match="ragged")
    raises_exactly(ValueError, sw.tensor, [np.zeros(2), np.zeros(3)], match="ragged")
    raises_exactly(ValueError, sw.tensor, [np.zeros((2, 2)), [1.0, 2.0]], match="ragged")
    raises_exactly(ValueError, sw.tensor, [[1.0, 2.0], np.zeros(2), 1.0], match="ragged")


@pytest.mark.parametrize("leaf", ["ab", b"ab", bytearray(b"ab"), {"a": 1}, {1, 2}, frozenset({1}), None, object(),
                                  1 + 2j, np.complex64(1), np.datetime64("2020-01-01"), np.str_("ab"), np.bytes_(b"ab"),
                                  np.void(b"abcd")])
def test_literal_reader_non_numbers_are_type_errors(leaf):
    raises_exactly(TypeError, sw.tensor, leaf)
    raises_exactly(TypeError, sw.tensor, [leaf, leaf])
    raises_exactly(TypeError, sw.tensor, [leaf], dtype=F32)


def test_literal_reader_a_tensor_is_not_literal_data():
    raises_exactly(TypeError, sw.tensor, [sw.tensor(1.0)], match="not a number")


def test_literal_reader_a_generators_own_error_propagates():
    def failing():
        yield 1.0
        raise KeyError("from the generator")

    with pytest.raises(KeyError, match="from the generator"):
        sw.tensor(failing())
    with pytest.raises(KeyError, match="from the generator"):
        sw.tensor([failing(), failing()])


# ---- numpy arrays: every numeric dtype converts exactly as Python numbers would

@pytest.mark.parametrize("np_dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                      np.uint64])
def test_literal_reader_numpy_integer_arrays_are_int32_exactly(np_dtype):
    info = np.iinfo(np_dtype)
    values = [max(info.min, -(2**31)), 0, 1, min(info.max, 2**31 - 1)]
    a = np.array(values, dtype=np_dtype)
    t = sw.tensor(a)
    assert t.dtype() is I32 and t.tolist() == values
    assert sw.tensor(a, dtype=F32).tolist() == np.array(values, np.float64).astype(np.float32).tolist()
    raises_exactly(TypeError, sw.tensor, a, dtype=BOOL)


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63 - 1, -(2**63)])
def test_literal_reader_numpy_integers_outside_int32_are_overflow_errors(value):
    a = np.array([0, value], dtype=np.int64)
    raises_exactly(OverflowError, sw.tensor, a, match="outside Int32")
    # As Float32 they round once to nearest even, as Python ints do.
    assert sw.tensor(a, dtype=F32).tolist() == sw.tensor([0, value], dtype=F32).tolist()


def test_literal_reader_numpy_uint64_beyond_int64():
    a = np.array([2**64 - 1], dtype=np.uint64)
    raises_exactly(OverflowError, sw.tensor, a)
    assert sw.tensor(a, dtype=F32).tolist() == [float(np.float32(2**64))]


@pytest.mark.parametrize("np_dtype", [np.float16, np.float32, np.float64])
def test_literal_reader_numpy_float_arrays_are_float32_rounded_once(np_dtype):
    info = np.finfo(np_dtype)
    a = np.array([0.1, -2.5, 1e-8, 1024.0, float(info.tiny), float(info.max), -float(info.max), np.inf, -np.inf,
                  float(info.smallest_subnormal)], dtype=np_dtype)
    t = sw.tensor(a)
    assert t.dtype() is F32
    with np.errstate(over="ignore"):
        expected = a.astype(np.float32)
    assert np.array_equal(np.asarray(t), expected)
    assert t.tolist() == sw.tensor([float(x) for x in a]).tolist()
    raises_exactly(TypeError, sw.tensor, a, dtype=I32, match="no silent truncation")
    raises_exactly(TypeError, sw.tensor, a, dtype=BOOL)


def test_literal_reader_numpy_float64_beyond_float32_rounds_to_infinity_or_max():
    big = float(np.finfo(np.float32).max)
    a = np.array([1e300, -1e300, big * (1 + 2**-25), np.nan])
    t = sw.tensor(a).tolist()
    assert t[0] == np.inf and t[1] == -np.inf and t[2] == big and np.isnan(t[3])


def test_literal_reader_numpy_bool_arrays_are_bool():
    a = np.array([[True, False], [False, True]])
    t = sw.tensor(a)
    assert t.dtype() is BOOL and t.tolist() == a.tolist()
    raises_exactly(TypeError, sw.tensor, a, dtype=I32)
    raises_exactly(TypeError, sw.tensor, a, dtype=F32)
    raises_exactly(TypeError, sw.tensor, [a[0], np.array([1, 2])], match="bools do not mix")


@pytest.mark.parametrize("array", [np.array([1 + 2j]), np.array([1.0], dtype=np.longdouble), np.array(["ab"]),
                                   np.array([b"ab"]), np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.zeros(2, dtype=[("x", np.int32)])])
def test_literal_reader_numpy_arrays_of_other_elements_are_type_errors(array):
    raises_exactly(TypeError, sw.tensor, array)
    raises_exactly(TypeError, sw.tensor, [array, array], dtype=F32)


def test_literal_reader_numpy_object_arrays_convert_element_by_element():
    a = np.array([[1, 2.5], [3, 4]], dtype=object)
    assert sw.tensor(a).tolist() == [[1.0, 2.5], [3.0, 4.0]]
    raises_exactly(TypeError, sw.tensor, np.array([1, "x"], dtype=object))


def test_literal_reader_numpy_strided_views_and_byte_orders():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for view in (a.T, a[:, ::2, 1:], a[::-1, :, ::-2], np.broadcast_to(a[0, 0], (3, 4))):
        assert sw.tensor(view).tolist() == view.tolist()
    swapped = np.arange(6, dtype=">i4").reshape(2, 3)
    assert sw.tensor(swapped).tolist() == swapped.tolist()
    floats = np.linspace(-1, 1, 5).astype(">f8")
    assert np.array_equal(np.asarray(sw.tensor(floats)), floats.astype(np.float32))
    assert sw.tensor(np.zeros((0, 3), np.int32)).shape == sw.Shape(0, 3)
    assert sw.tensor(np.zeros((2, 0), np.bool_)).dtype() is BOOL


def test_literal_reader_any_buffer_exporter_is_read_from_memory():
    import array

    assert sw.tensor(array.array("d", [0.5, 1.5])).tolist() == [0.5, 1.5]
    assert sw.tensor(memoryview(array.array("h", [-3, 4]))).tolist() == [-3, 4]


def test_literal_reader_a_large_numpy_array_round_trips():
    a = np.arange(10**6, dtype=np.int64).reshape(1000, 1000)
    t = sw.tensor(a)
    assert np.array_equal(np.asarray(t), a.astype(np.int32))


def test_literal_reader_mixed_arrays_and_numbers_infer_one_dtype():
    t = sw.tensor([np.array([1, 2], np.int8), [3, 4.5]])
    assert t.dtype() is F32 and t.tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert sw.tensor([np.array([1, 2], np.uint8), (3, 4)]).dtype() is I32


def test_literal_reader_reference_counts_are_balanced():
    items = [float(i) + 0.5 for i in range(10)]
    arrays = [np.arange(3.0), np.arange(3.0)]
    before = [sys.getrefcount(x) for x in items + arrays]
    for _ in range(3):
        sw.tensor(items)
        sw.tensor(arrays)
        with pytest.raises(TypeError):
            sw.tensor([items, ["x"] * 10])
    assert [sys.getrefcount(x) for x in items + arrays] == before


# ---- LiteralBuilder: the C++ rules, fed piece by piece (issue 20 step 9)

def test_literal_builder_reads_pieces_by_the_rules_of_tensor():
    b = sw.LiteralBuilder()
    b.open(2)
    b.item([1, 2])
    b.item(np.array([3, 4], np.int64))
    b.close()
    assert b.shape == (2, 2) and b.inferred_dtype is I32
    t = b.build()
    assert t.tolist() == [[1, 2], [3, 4]] and t.tolist() == sw.tensor([[1, 2], [3, 4]]).tolist()
    g = b.build(dtype=F32, carrier=sw.Generic)
    assert type(g.carrier) is sw.Generic and g.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    p = b.build(carrier=sw.CPU(1))  # a prototype instance
    assert type(p.carrier) is sw.CPU and p.carrier is not t.carrier


def test_literal_builder_names_its_caller_and_refuses_ragged_pieces_without_changing():
    b = sw.LiteralBuilder("reader")
    b.open(2)
    b.item([1.0, 2.0])
    with pytest.raises(ValueError, match=r"^reader: ragged"):
        b.item([3.0])
    b.item((3.0, 4.0))  # the builder is as it was before the refused item
    b.close()
    assert b.build().tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_literal_builder_reader_contract():
    b = sw.LiteralBuilder()
    b.open(2)
    b.item(1)
    with pytest.raises(RuntimeError, match="closed after 1 items"):
        b.close()
    with pytest.raises(RuntimeError, match="not complete"):
        b.shape
    b.item(2)
    with pytest.raises(RuntimeError, match="more items"):
        b.item(3)
    b.close()
    with pytest.raises(RuntimeError, match="after the outermost"):
        b.item(4)
    f = sw.LiteralBuilder()
    f.fixed_rank(2)
    f.open(0)
    f.close()
    assert f.shape == (0, 0) and f.build().shape == sw.Shape(0, 0)


def test_literal_builder_converts_only_when_built():
    b = sw.LiteralBuilder()
    b.open(2)
    b.item("x")  # not a number: refused when converted, so a ragged shape is reported first
    with pytest.raises(ValueError, match="ragged"):
        b.item([1])
    b.item(2**200)
    b.close()
    with pytest.raises(TypeError, match="'x' is not a number"):
        b.inferred_dtype
    with pytest.raises(TypeError, match="got str"):
        b.build(dtype=F32)


def test_literal_builder_an_item_refused_part_way_leaves_the_builder_as_it_was():
    b = sw.LiteralBuilder()
    b.open(2)
    b.item([1.0, 2.0])
    with pytest.raises(ValueError, match="ragged"):
        b.item([3.0, [4.0]])  # fails after reading 3.0
    with pytest.raises(TypeError):
        b.item([np.array(["x"]), 1.0])  # an array of strings, after the sequence opened
    b.item([3.0, 4.0])
    b.close()
    assert b.build().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    deep = 0.0
    for _ in range(100):
        deep = [deep]
    fresh = sw.LiteralBuilder()
    fresh.open(1)
    with pytest.raises(ValueError, match="nested more than 64"):
        fresh.item(deep)  # refused with 63 of its sequences open
    fresh.item(5.0)
    fresh.close()
    assert fresh.shape == (1,) and fresh.build().tolist() == [5.0]


def test_literal_builder_keeps_array_buffers_alive_until_build():
    b = sw.LiteralBuilder()
    b.open(2)
    b.item(np.arange(3, dtype=np.int32))
    b.item(np.arange(3, 6, dtype=np.int64) * 1)  # a temporary array: only the builder holds it
    b.close()
    assert b.build().tolist() == [[0, 1, 2], [3, 4, 5]]
