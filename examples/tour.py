"""A tour of strideweave for numpy users, top to bottom.

Run it:  PYTHONPATH=build-test/python /usr/bin/python3 examples/tour.py
(python/tests/test_tour_example.py runs it as part of the suite: every
`assert` below is a claim the tour makes, checked.)
"""

import os
import tempfile

import numpy as np

import strideweave as sw

F32, I32 = sw.DType.Float32, sw.DType.Int32

# ---------------------------------------------------------------- 1. creation
# The functions you know, with dtype= and carrier= (None is the fast CPU
# carrier; sw.Generic is the slow, obvious reference). Float32 is the default
# float: there is no float64 storage.
x = sw.zeros(2, 3)                       # or sw.zeros((2, 3))
assert x.shape == (2, 3) and x.dtype() is F32
i = sw.arange(6)                         # integers in: Int32 out
assert i.dtype() is I32 and i.tolist() == [0, 1, 2, 3, 4, 5]
assert sw.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
assert sw.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
g = sw.random.Generator(42)              # the same seed gives the same values on every carrier
w = g.normal(size=(3, 2))
assert sw.random.Generator(42).normal(size=(3, 2), carrier=sw.Generic).tolist() == w.tolist()
a = sw.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])   # nested data, row-major as written
assert a[1, 2].item() == 6.0             # coordinates mean what they mean in numpy

# ------------------------------------------------------ 2. views and the order
# Views share storage. Coordinates agree with numpy, but the library's flat
# order is first-axis-fastest (numpy's order="F"): reshape walks it that way.
assert a.T.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
assert a.reshape(6).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]        # first axis fastest
assert a.reshape(6, order="C").tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # numpy's row-major, on request
row = a[0, ::2]
assert row.carrier is a.carrier and row.tolist() == [1.0, 3.0]

# ----------------------------------------------------------------- 3. arithmetic
# One central dtype policy decides every call; nothing is promoted that the
# policy does not promote, and a number beside a comparison must be exact.
b = a + 1                                # Float32 + int: Float32
assert (b - a).tolist() == [[1.0, 1.0, 1.0]] * 2
assert (i * 2).dtype() is I32            # Int32 arithmetic stays Int32, checked
assert (a > 2).tolist() == [[False, False, True], [True, True, True]]
try:
    a > 0.1                              # 0.1 is not a Float32 value: said, not rounded
except TypeError:
    pass
else:
    raise AssertionError("a > 0.1 should be a TypeError")
assert isinstance(a + np.ones(3, np.float32), sw.Tensor)   # ndarrays join in; the result stays ours
assert np.asarray(a).tolist() == a.tolist()                # and numpy views CPU memory without a copy

# ----------------------------------------------------------------- 4. reductions
assert sw.reduce_sum(a).item() == 21.0
assert a.mean(axis=0).tolist() == [2.5, 3.5, 4.5]
assert sw.argmax(a, axis=1).tolist() == [2, 2]
p = sw.softmax(a, axis=1)
assert abs(sw.reduce_sum(p, axes=[1]).tolist()[0] - 1.0) < 1e-6
assert sw.concatenate([a, a], axis=0).shape == (4, 3)

# ------------------------------------------------------------------- 5. autograd
# Every Float32 tensor takes part in the graph while grad mode is on; there
# is no requires_grad flag to set. Inference runs under no_grad().
v = sw.tensor([1.0, 2.0, 3.0])
loss = sw.reduce_sum(v * v)
loss.backward()
assert v.grad.tolist() == [2.0, 4.0, 6.0]
with sw.no_grad():
    assert (v * 2).is_leaf

# ------------------------------------------------------------------- 6. formats
with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory, "a.npy")
    sw.save_npy(path, a)
    assert np.load(path).tolist() == a.tolist()            # numpy reads it
    assert sw.load_npy(path).tolist() == a.tolist()        # and so do we
    weights = os.path.join(directory, "w.safetensors")
    sw.save_safetensors(weights, {"w": w})
    assert sw.load_safetensors(weights)["w"].tolist() == w.tolist()

# ---------------------------------------------------------- 7. a custom operation
# An operation is one record: schema, resolve (its plan), reference (its
# meaning) and VJP. Carriers declare what they execute: the shipped CPU runs
# no user-defined operation, and says so before doing anything.
from strideweave.operation import (NON_DIFFERENTIABLE, OperandKind, OperandSpec, OperationSchema, OptionSpec,
                                   ResolvedInvocation, ResultSpec, define_operation, execute_reference, resolve_call)


def resolve(call):
    x = call.operands[0]
    plan = sw.OperationPlan(operation=call.definition.name, operands=(sw.OperandPlan(sw.OperandRole.TENSOR, x.dtype(), F32),),
                            compute=sw.Arithmetic.BINARY32, accumulation=None, accumulator_dtype=None, output=F32)
    return ResolvedInvocation(call, plan, [ResultSpec.compact(F32, x.shape)], saved_operands=[0])


def reference(invocation):
    return sw.mul(invocation.operands[0], invocation.options["scale"])


scaled = define_operation("tour.scaled", OperationSchema([OperandSpec("x", OperandKind.TENSOR, True)],
                                                         [OptionSpec("scale", 2.0)]),
                          resolve, reference, vjp=NON_DIFFERENTIABLE)
invocation = resolve_call(scaled, v)
assert execute_reference(scaled, invocation)[0].tolist() == [2.0, 4.0, 6.0]
try:
    scaled(v)
except sw.UnsupportedOperationPlan as refusal:
    assert refusal.plan == invocation.plan  # a structured refusal, never a nearby kernel
else:
    raise AssertionError("CPU should refuse a user-defined operation")

# ------------------------------------------------------------ 8. out of memory
# FileBacked keeps values in a file. copy_to copies without giving the source
# up; move relocates (the source carrier is released afterwards).
on_disk = a.copy_to(sw.FileBacked(dtype=F32))
assert on_disk.carrier_type() is sw.FileBacked and on_disk.tolist() == a.tolist()
assert not a.carrier.is_released()
back = sw.move(on_disk, sw.CPU(on_disk.size()))
assert back.tolist() == a.tolist() and on_disk.carrier.is_released()

print("tour: every claim held")
