"""Shape, Stride and Layout (core-concepts.md section 3)."""

import pytest

import strideweave as sw
from conftest import raises_exactly


def test_shape_of_hierarchical_items():
    s = sw.Shape(2, (3, 4))
    assert s.rank == len(s) == 2
    assert s.modes == (2, (3, 4)) and tuple(s) == (2, (3, 4)) and s[1] == (3, 4)
    assert s.extents == (2, 12) and s.size == 24 and not s.is_flat
    assert sw.Shape().size == 1 and sw.Shape().rank == 0


@pytest.mark.parametrize("bad", [-1, 2.5, "ab", None, (2, -3)])
def test_bad_shape_values_are_value_errors(bad):
    raises_exactly(ValueError, sw.Shape, bad)


def test_stride_is_non_negative_and_nested():
    assert sw.Stride(1, (2, 6)).modes == (1, (2, 6))
    raises_exactly(ValueError, sw.Stride, -1)
    raises_exactly(ValueError, sw.Stride, 1.5)


def test_layout_requires_identical_nesting():
    raises_exactly(ValueError, sw.Layout, sw.Shape(2, (3, 4)), sw.Stride(1, 2))
    raises_exactly(ValueError, sw.Layout, sw.Shape(2, 3), sw.Stride(1))
    raises_exactly(TypeError, sw.Layout, sw.Shape(2), "1")


def test_index_is_the_sum_of_leaf_coordinate_times_leaf_stride():
    layout = sw.Layout(sw.Shape(2, (3, 4)), sw.Stride(1, (2, 6)))
    assert layout((1, (2, 3))) == 1 * 1 + 2 * 2 + 3 * 6
    # An integer key expands mixed-radix, first mode fastest.
    assert layout(1 + 2 * 2 + 3 * 6) == 1 + 2 * 2 + 3 * 6  # compact here: key == index
    assert layout((1, 11)) == layout((1, (2, 3)))  # a mode's integer key
    assert [layout(k) for k in range(4)] == [0, 1, 2, 3]


def test_out_of_domain_is_a_value_error():
    layout = sw.Layout.compact(sw.Shape(2, 3))
    raises_exactly(ValueError, layout, 6)
    raises_exactly(ValueError, layout, (2, 0))
    raises_exactly(ValueError, layout, (0, 0, 0))
    raises_exactly(ValueError, sw.Layout(sw.Shape((2, 2)), sw.Stride((1, 2))), ((0, 2),))


def test_size_cosize_and_injectivity():
    gaps = sw.Layout(sw.Shape(2, 3), sw.Stride(1, 4))
    assert (gaps.size, gaps.cosize, gaps.is_injective) == (6, 10, True)
    broadcast = sw.Layout(sw.Shape(2, 3), sw.Stride(0, 1))
    assert (broadcast.size, broadcast.cosize, broadcast.is_injective) == (6, 3, False)
    collision = sw.Layout(sw.Shape(2, 2), sw.Stride(1, 1))
    assert not collision.is_injective
    empty = sw.Layout.compact(sw.Shape(0, 3))
    assert (empty.size, empty.cosize) == (0, 0)


def test_broadcast_to_keeps_the_profile_and_widens_extent_one_leaves_with_stride_zero():
    layout = sw.Layout(sw.Shape(1, 3), sw.Stride(3, 1))
    wide = layout.broadcast_to(sw.Shape(2, 3))
    assert wide.shape.extents == (2, 3) and wide.stride.modes == (0, 1)
    raises_exactly(ValueError, layout.broadcast_to, sw.Shape(2, 4))


def test_views_of_a_layout():
    c = sw.Layout.compact(sw.Shape(2, 3))
    assert c.stride.modes == (1, 2) and c.is_compact
    assert sw.Layout.row_major(sw.Shape(2, 3)).stride.modes == (3, 1)
    assert c.permute(1, 0).stride.modes == (2, 1) and c.permute([1, 0]) == c.permute(1, 0)
    sliced, delta = c.slice(1, 1, 3)
    assert sliced.shape.extents == (2, 2) and delta == 2
    assert c.reshape(sw.Shape(6)).stride.modes == (1,)
    assert sw.Layout.compact(sw.Shape(1, 3)).squeeze().shape.extents == (3,)
    assert c.unsqueeze(0).shape.extents == (1, 2, 3)


def test_records_are_immutable_and_hashable():
    a, b = sw.Layout.compact(sw.Shape(2, 3)), sw.Layout(sw.Shape(2, 3), sw.Stride(1, 2))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert hash(sw.Shape(2, (3, 4))) == hash(sw.Shape(2, (3, 4)))
    for record, field in [(a, "shape"), (a, "cosize"), (sw.Shape(2), "size"), (sw.Stride(1), "modes")]:
        raises_exactly(AttributeError, setattr, record, field, None)
    raises_exactly(AttributeError, setattr, a, "anything", 1)
    assert repr(a) == "Layout(Shape(2, 3), Stride(1, 2))" and str(a) == "(2,3):(1,2)"
