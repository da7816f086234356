"""The layout algebra on Layout (issue 22 step 0; docs/layout.md, "Layout
algebra"): CuTe's compose, complement, logical_divide, zipped_divide,
tiled_divide and logical_product, with CuTe's documented examples
(NVIDIA CUTLASS, media/docs/cute/02_layout_algebra.md) and identities."""

import itertools

import pytest

import strideweave as sw
from conftest import raises_exactly


def L(shape, stride):
    return sw.Layout(sw.Shape(*shape), sw.Stride(*stride))


def test_compose_cute_examples():
    assert str(L((20,), (2,)).compose(L((5, 4), (4, 1)))) == "(5,4):(8,2)"
    assert str(L((10, 2), (16, 4)).compose(L((5, 4), (1, 5)))) == "(5,(2,2)):(16,(80,4))"
    assert str(L((6, 2), (8, 2)).compose(L((4, 3), (3, 1)))) == "((2,2),3):((24,2),8)"


def test_compose_with_a_tiler_goes_mode_by_mode_and_ints_are_unit_strides():
    a = L((12, (4, 8)), (59, (13, 1)))
    assert str(a.compose([L((3,), (4,)), L((8,), (2,))])) == "(3,(2,4)):(236,(26,1))"
    assert a.compose((3, 8)) == a.compose([L((3,), (1,)), L((8,), (1,))])


def test_compose_is_the_function_composition():
    shapes = [(2,), (4,), (2, 3), (3, 2), (2, 2, 2)]
    strides = [0, 1, 2, 3]
    checked = 0
    a = L((4, 3, 2), (1, 5, 20))
    for shape in shapes:
        for stride in itertools.product(strides, repeat=len(shape)):
            b = L(shape, stride)
            if b.cosize > a.size:
                raises_exactly(ValueError, a.compose, b)
                continue
            try:
                r = a.compose(b)
            except ValueError:
                continue
            checked += 1
            assert r.size == b.size and [r.shape.extents[i] for i in range(r.rank)] == list(b.shape.extents)
            assert [r(k) for k in range(b.size)] == [a(b(k)) for k in range(b.size)], (b, r)
    assert checked > 20


def test_one_mode_layouts_compose_with_everything_in_their_domain():
    # A layout that coalesces to one mode is linear on its domain: no
    # divisibility condition or carry applies, so nothing is refused (a guard
    # against spurious refusals in the test above).
    for a in (L((24,), (3,)), sw.Layout.compact((4, 6)), L((2, 12), (5, 10))):
        for shape in [(2,), (4,), (2, 3), (3, 2), (2, 2, 2)]:
            for stride in itertools.product([0, 1, 2, 3], repeat=len(shape)):
                b = L(shape, stride)
                if b.cosize > a.size:
                    continue
                r = a.compose(b)
                assert [r(k) for k in range(b.size)] == [a(b(k)) for k in range(b.size)], (a, b, r)


def test_complement_cute_examples():
    assert str(L((4,), (1,)).complement(24)) == "(6):(4)"
    assert str(L((6,), (4,)).complement(24)) == "(4):(1)"
    assert str(L((4, 6), (1, 4)).complement(24)) == "(1):(0)"
    assert str(L((4,), (2,)).complement(24)) == "(2,3):(1,8)"
    assert str(L((2, 2), (1, 6)).complement(24)) == "(3,2):(2,12)"
    assert str(L((4,), (2,)).complement()) == "(2):(1)"


def test_complement_completes_an_injective_layout():
    a = L((2, 2), (1, 6))
    r = a.complement(24)
    both = L(tuple(a.shape.extents) + tuple(r.shape.extents), tuple(a.stride.modes) + tuple(r.stride.modes))
    assert sorted(both(k) for k in range(both.size)) == list(range(24))


def test_divisions_cute_examples():
    assert str(L((4, 2, 3), (2, 1, 8)).logical_divide(L((4,), (2,)))) == "((2,2),(2,3)):((4,1),(2,8))"
    a = L((9, (4, 8)), (59, (13, 1)))
    tiler = [L((3,), (3,)), L((2, 4), (1, 8))]
    assert str(a.zipped_divide(tiler)) == "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"
    assert str(a.tiled_divide(tiler)) == "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))"
    assert str(a.logical_divide(tiler)) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"


def test_zipped_divide_gives_tile_footprints():
    # An 8x6 compact tensor in 4x3 tiles: mode 0 walks a tile, mode 1 the tiles.
    z = sw.Layout.compact((8, 6)).zipped_divide([4, 3])
    assert str(z) == "((4,3),(2,2)):((1,8),(4,24))"
    footprints = [sorted(z((k, t)) for k in range(12)) for t in range(4)]
    assert sorted(i for f in footprints for i in f) == list(range(48))
    assert footprints[1] == sorted(r + 8 * c for r in range(4, 8) for c in range(3))


def test_logical_product_cute_example():
    p = L((2, 2), (4, 1)).logical_product(L((6,), (1,)))
    assert str(p) == "((2,2),(2,3)):((4,1),(2,8))"
    assert sorted(p(k) for k in range(p.size)) == list(range(24))


def test_refusals_are_typed():
    a = L((4, 3), (1, 5))
    raises_exactly(ValueError, a.compose, L((13,), (1,)))  # outside the domain
    raises_exactly(ValueError, a.compose, L((6,), (1,)))  # shape divisibility
    raises_exactly(ValueError, a.compose, L((2,), (3,)))  # stride divisibility
    raises_exactly(ValueError, L((4, 3), (0, 1)).compose, L((4, 3), (1, 1)))  # terms carry
    raises_exactly(ValueError, L((2, 2), (1, 1)).complement, 8)
    raises_exactly(ValueError, a.complement, 0)
    raises_exactly(ValueError, L((6,), (1,)).logical_divide, L((4,), (1,)))
    raises_exactly(ValueError, L((2, 2), (1, 2)).logical_divide, L((2,), (0,)))  # repeats indices
    assert L((4,), (1,)).complement(2**63 - 1).size == (2**63 - 1) // 4 + 1  # exact near the limit
    raises_exactly(ValueError, a.logical_divide, [2, 3, 1])
    raises_exactly(ValueError, L((0, 3), (1, 1)).compose, L((1,), (0,)))
    raises_exactly(TypeError, a.zipped_divide, L((2,), (1,)))
    raises_exactly(TypeError, a.zipped_divide, "ab")
    raises_exactly(TypeError, a.compose, [1.5])
