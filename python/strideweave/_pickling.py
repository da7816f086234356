"""Reconstructors that pickle stores by reference.

A pybind11 function cannot be pickled by reference (its ``__self__`` is a
capsule, not a module), so ``DType.__reduce__`` names this Python function,
which resolves the descriptor in the unpickling process.
"""


def unpickle_dtype(name, kind):
    """The descriptor registered as `name` in this process (LookupError if
    none; ValueError if it is of another kind than `kind`)."""
    from . import _core

    return _core._unpickle_dtype(name, kind)
