"""numpy interop and pickling for Tensor, Shape, Stride, Layout and the plan
records (issue 21, step 3; docs/python.md, "numpy interop" and "Pickling").

Installed on the compiled classes by the package's __init__ (install()).
Everything here composes public functions: no rule of the library is
written again.
"""



from . import _core

# ---------------------------------------------------------------- numpy


def _host_view(self):
    """A memoryview of the tensor's values in host memory, and whether it is
    a copy: the tensor's own memory when its carrier is host memory and its
    layout has strides numpy can describe, else (CPU only) a compact copy.
    TypeError for a carrier that is not host memory."""
    from ._grad_mode import no_grad

    try:
        return memoryview(self), False
    except BufferError as error:
        if self.carrier_type() is not _core.CPU:
            raise TypeError(
                f"numpy.asarray: this tensor's {self.carrier_type().__name__} carrier is not host memory numpy can "
                f"view ({error}); copy it first: tensor.copy_to(strideweave.CPU)") from None
        with no_grad():  # a layout numpy has no strides for (a nested mode): the values, compact
            return memoryview(_core.clone(self)), True


def _array(self, dtype=None, copy=None):
    """numpy's __array__: the tensor's memory when its carrier is host memory
    (CPU: the buffer protocol, without a copy unless copy=True, a dtype or a
    layout numpy cannot describe asks for one; copy=False then raises
    ValueError, as numpy 2 asks); a TypeError for any other carrier, never
    an object array of rank-0 tensors."""
    import numpy

    view, copied = _host_view(self)
    array = numpy.asarray(view)
    converts = dtype is not None and numpy.dtype(dtype) != array.dtype
    if copy is False and (copied or converts):
        raise ValueError("numpy.asarray(copy=False): this tensor's values cannot be viewed without a copy")
    if converts:
        return array.astype(dtype)
    return array.copy() if copy and not copied else array


# numpy ufuncs the registered operations compute with the same meaning. A
# ufunc outside this table, a method other than __call__, or out=/where=
# keywords give NotImplemented (numpy then raises its TypeError).
def _ufuncs():
    import numpy as np

    sw = _core
    return {
        np.add: sw.add, np.subtract: sw.sub, np.multiply: sw.mul, np.true_divide: sw.div,
        np.power: sw.pow, np.maximum: sw.maximum, np.minimum: sw.minimum,
        np.equal: sw.eq, np.not_equal: sw.ne, np.less: sw.lt, np.less_equal: sw.le,
        np.greater: lambda a, b: sw.lt(b, a), np.greater_equal: lambda a, b: sw.le(b, a),
        np.matmul: sw.matmul, np.negative: sw.neg, np.absolute: sw.abs, np.sign: sw.sign,
        np.exp: sw.exp, np.exp2: sw.exp2, np.log: sw.log, np.log2: sw.log2, np.sqrt: sw.sqrt,
        np.sin: sw.sin, np.cos: sw.cos, np.tanh: sw.tanh, np.floor: sw.floor, np.ceil: sw.ceil,
        np.logical_not: sw.logical_not,
    }


_UFUNCS = None


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's __array_ufunc__: a ufunc with a strideweave tensor among its
    operands runs as the registered operation of the same meaning, so
    `tensor + ndarray` and `numpy.exp(tensor)` are strideweave tensors. numpy
    arrays become CPU tensors without a copy (asarray); numbers stay numbers
    (the operation's own rule)."""
    global _UFUNCS
    if _UFUNCS is None:
        _UFUNCS = _ufuncs()
    function = _UFUNCS.get(ufunc)
    if function is None or method != "__call__" or kwargs:
        return NotImplemented
    import numpy

    # ndarrays become CPU tensors without a copy; numpy scalars and 0-d
    # arrays become Python numbers (the operation's number rule).
    operands = [(_core.asarray(x) if numpy.ndim(x) > 0 else x.item())
                if isinstance(x, (numpy.ndarray, numpy.generic)) else x for x in inputs]
    return function(*operands)


# ---------------------------------------------------------------- pickling


def _restore_tensor(class_name, dtype, modes, values):
    """A pickled tensor: a fresh compact tensor of `class_name` (Generic or
    CPU) holding `values` (a numpy array, row-major as written) in the shape
    `modes`."""
    carrier = getattr(_core, class_name)
    flat = _core.tensor(values, dtype=dtype, carrier=carrier)
    return flat.reshape(_core.Shape(*modes))


def _reduce_tensor(self):
    """Pickles the values, the dtype, the (possibly hierarchical) shape and
    the carrier class: a view unpickles as a compact tensor of its own, and a
    tensor unpickles as a leaf. Classes that cannot be built from nothing
    (FileBacked, BlockDevice, definition-backed) are a TypeError: copy_to a
    CPU first."""
    import numpy

    cls = self.carrier_type()
    if cls not in (_core.CPU, _core.Generic):
        raise TypeError(f"pickle: a tensor on {cls.__name__} cannot be rebuilt from its values (only Generic and CPU "
                        "can be made from nothing); pickle tensor.copy_to(strideweave.CPU)")
    from ._grad_mode import no_grad

    with no_grad():  # the values, compact, in host memory
        host = _core.clone(self) if cls is _core.CPU else _core.copy_to(self, _core.CPU)
    flat = host.reshape(*host.shape.extents) if host.rank else host
    values = numpy.array(flat, copy=True)
    return (_restore_tensor, (cls.__name__, self.dtype(), tuple(self.shape.modes), values))


def _deepcopy_tensor(self, memo):
    """A fresh copy of the values on the same carrier class (a leaf: the
    graph is not copied), through strideweave.clone under no_grad."""
    from ._grad_mode import no_grad

    with no_grad():
        return _core.clone(self)


def install():
    T = _core.Tensor
    T.__array__ = _array
    T.__array_ufunc__ = _array_ufunc
    T.__array_priority__ = 1000
    T.__reduce__ = _reduce_tensor
    T.__deepcopy__ = _deepcopy_tensor
    T.__copy__ = lambda self: self  # copy.copy: the same tensor (a handle), as for numpy views
    _core.Shape.__reduce__ = lambda s: (_core.Shape, tuple(s.modes))
    _core.Stride.__reduce__ = lambda s: (_core.Stride, tuple(s.modes))
    _core.Layout.__reduce__ = lambda layout: (_core.Layout, (layout.shape, layout.stride))
    _core.OperandPlan.__reduce__ = lambda p: (_core.OperandPlan, (p.role, p.dtype, p.convert_to))
    _core.OperationPlan.__reduce__ = lambda p: (
        _core.OperationPlan, (p.operation, p.operands, p.compute, p.accumulation, p.accumulator_dtype, p.output))
    for immutable in (_core.Shape, _core.Stride, _core.Layout, _core.OperandPlan, _core.OperationPlan):
        immutable.__copy__ = lambda self: self
        immutable.__deepcopy__ = lambda self, memo: self


__all__ = []
