"""Dtype descriptors (core-concepts.md section 5) through the Python
surface: identity objects, built-in attributes, registration, queries,
immutability, copies and pickling."""

import copy
import pickle
import uuid

import pytest

import strideweave as sw
from conftest import F32, I32, raises_exactly


def unique(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


BUILTINS = {
    "Any": ("any", "category", None), "Floating": ("floating", "category", "Any"),
    "Integer": ("integer", "category", "Any"), "Bool": ("bool", "simple", "Any"),
    "Int32": ("int32", "simple", "Integer"), "Int8": ("int8", "simple", "Integer"),
    "Float32": ("float32", "simple", "Floating"), "Float64": ("float64", "simple", "Floating"),
    "E8M0": ("e8m0", "simple", "Floating"), "E5M2": ("e5m2", "simple", "Floating"),
    "E4M3": ("e4m3", "simple", "Floating"), "E3M2": ("e3m2", "simple", "Floating"),
    "E2M3": ("e2m3", "simple", "Floating"), "E2M1": ("e2m1", "simple", "Floating"),
}
BITS = {"Bool": 8, "Int32": 32, "Int8": 8, "Float32": 32, "Float64": 64, "E8M0": 8, "E5M2": 8, "E4M3": 8,
        "E3M2": 6, "E2M3": 6, "E2M1": 4}


@pytest.mark.parametrize("attribute", sorted(BUILTINS))
def test_builtins_are_dtype_attributes_with_their_names_kinds_supertypes_and_bits(attribute):
    name, kind, super_attribute = BUILTINS[attribute]
    d = getattr(sw.DType, attribute)
    assert d.name == name
    assert (d.is_category(), d.is_simple(), d.is_compound()) == (kind == "category", kind == "simple", False)
    assert d.supertype is (getattr(sw.DType, super_attribute) if super_attribute else None)
    assert d.bits == BITS.get(attribute)
    assert sw.DType.from_name(name) is d


def test_registered_lists_builtins_first_in_registration_order():
    names = [d.name for d in sw.DType.registered()]
    assert names[: len(BUILTINS)] == [v[0] for v in BUILTINS.values()]


def test_identity_equality_and_hash():
    assert sw.DType.Float32 == sw.DType.from_name("float32")
    assert sw.DType.Float32 != sw.DType.Float64
    assert len({sw.DType.Float32, sw.DType.from_name("float32")}) == 1
    assert (sw.DType.Float32 == "float32") is False


def test_queries_supertypes_and_subtypes():
    assert sw.DType.Int32.supertypes() == (sw.DType.Integer, sw.DType.Any)
    assert sw.DType.Int32.is_subtype_of(sw.DType.Any) and sw.DType.Int32.is_subtype_of(sw.DType.Int32)
    assert not sw.DType.Int32.is_subtype_of(sw.DType.Floating)
    raises_exactly(TypeError, sw.DType.Int32.is_subtype_of, "any")


def test_descriptors_are_immutable():
    raises_exactly(AttributeError, setattr, F32, "name", "other")
    raises_exactly(AttributeError, setattr, F32, "new_attribute", 1)
    raises_exactly(AttributeError, setattr, F32, "bits", 16)


def test_copies_and_unpickling_are_the_same_object():
    assert copy.copy(F32) is F32 and copy.deepcopy(F32) is F32
    assert pickle.loads(pickle.dumps(F32)) is F32
    category = sw.DTypeCategory(unique("cat"))
    assert pickle.loads(pickle.dumps(category)) is category


def test_unpickling_an_unknown_name_is_a_lookup_error_and_another_kind_a_value_error():
    raises_exactly(LookupError, sw._core._unpickle_dtype, unique("never_registered"), "simple")
    raises_exactly(ValueError, sw._core._unpickle_dtype, "float32", "category")


def test_construction_registers_a_unique_name_atomically():
    name = unique("floaty")
    d = sw.SimpleDType(name, bits=16, supertype=sw.DType.Floating)
    assert sw.DType.from_name(name) is d and d.bits == 16 and d.supertype is sw.DType.Floating
    assert d in sw.DType.registered()
    raises_exactly(ValueError, sw.SimpleDType, name, bits=16, supertype=sw.DType.Floating)
    raises_exactly(ValueError, sw.DTypeCategory, name)
    raises_exactly(ValueError, sw.DTypeCategory, "")
    before = len(sw.DType.registered())
    raises_exactly(ValueError, sw.SimpleDType, unique("bad"), bits=0, supertype=sw.DType.Floating)
    assert len(sw.DType.registered()) == before


def test_constructor_argument_types():
    raises_exactly(TypeError, sw.DTypeCategory, 5)
    raises_exactly(TypeError, sw.SimpleDType, unique("x"), bits="8", supertype=sw.DType.Floating)
    raises_exactly(TypeError, sw.SimpleDType, unique("x"), bits=8, supertype="floating")
    raises_exactly(TypeError, sw.DType)  # abstract
    raises_exactly(TypeError, sw.CompoundDType)  # abstract: PlanarCompoundDType is the concrete kind


def test_extensions_never_become_dtype_attributes():
    name = unique("ext")
    sw.DTypeCategory(name)
    assert not hasattr(sw.DType, name)


def test_compound_dtype_planes_and_rules():
    c = sw.PlanarCompoundDType(unique("complex"), simple_types=(F32, F32), representation_rules=("re", "im"))
    assert c.is_compound() and not c.is_simple()
    assert c.simple_types == (F32, F32) and c.num_carriers == 2 and c.representation_rules == ("re", "im")
    assert isinstance(c, sw.CompoundDType)
    raises_exactly(TypeError, sw.PlanarCompoundDType, unique("bad"), simple_types=(sw.DType.Any,))


def test_storage_zero():
    assert sw.storage_zero(F32) == 0.0 and isinstance(sw.storage_zero(F32), float)
    assert sw.storage_zero(I32) == 0 and isinstance(sw.storage_zero(I32), int)
    assert sw.storage_zero(sw.DType.Bool) is False
    assert sw.storage_zero(sw.DType.Float64) is None
