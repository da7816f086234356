"""Helpers shared by the issue-24 audit tests (test_audit_*.py): names,
plans, tensors over Python-list storage, and definition-backed classes."""

import itertools

import strideweave as sw
from strideweave import operation as op
from strideweave.carriers import extension as ext
from conftest import BOOL, F32, I32

TENSOR, WEAK_SCALAR, STRUCTURAL = op.OperandKind.TENSOR, op.OperandKind.WEAK_SCALAR, op.OperandKind.STRUCTURAL
T, W = sw.OperandRole.TENSOR, sw.OperandRole.WEAK_SCALAR
_names = itertools.count()

def fresh_name(stem):
    return f"pyaudit{next(_names)}.{stem}"


def leaf(t):
    """A gradient leaf: a Float32 tensor takes part in every graph built under
    grad mode (core-concepts 6.2); nothing to mark."""
    return t


def f32_plan(name, tensors=1):
    return sw.OperationPlan(name, tuple(sw.OperandPlan(T, F32, F32) for _ in range(tensors)), sw.Arithmetic.BINARY32,
                            None, None, F32)


def compact(carrier, *extents):
    return sw.Tensor(carrier, 0, sw.Layout.compact(sw.Shape(*extents)))


def values_of(t):
    return [t.carrier[t.offset + t.layout(i)] for i in range(t.size())]


class ListProvider:
    """A StorageProvider over a Python list in the instance (`slots_`)."""

    def __init__(self):
        self.provider = ext.StorageProvider(
            lambda carrier, dtype: dtype is F32 or dtype is I32 or dtype is BOOL,
            lambda carrier: len(carrier.slots_), self.allocate, lambda carrier: None,
            lambda carrier, index: carrier.slots_[index], self.write)

    @staticmethod
    def allocate(carrier, slots):
        carrier.slots_ = [sw.storage_zero(carrier.dtype())] * slots

    @staticmethod
    def write(carrier, index, value):
        carrier.slots_[index] = value


def defined_class(name="Acme", base=sw.Carrier, **fields):
    cls = type(name, (base,), {})
    ext.register_carrier_definition(cls, ext.CarrierDefinition(ListProvider().provider, **fields))
    return cls
