"""Grad mode as context managers (core-concepts.md 6.3): thread-local, and
restored on exit, also when an exception leaves the block."""

import functools

from . import _core

__all__ = ["is_grad_enabled", "set_grad_enabled", "no_grad"]

is_grad_enabled = _core.is_grad_enabled


class set_grad_enabled:
    """set_grad_enabled(enabled): sets grad mode for this thread now.

    Used as a context manager (``with set_grad_enabled(False): ...``) it
    restores the previous mode on exit. ``enabled`` must be a bool
    (TypeError otherwise).
    """

    def __init__(self, enabled):
        self._previous = _core.is_grad_enabled()
        _core._set_grad_enabled(enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._previous)
        return False


class no_grad:
    """no_grad(): a context manager (and decorator) that disables recording
    for operations in its block on this thread, restoring the previous grad
    mode on exit."""

    def __enter__(self):
        self._previous = _core.is_grad_enabled()
        _core._set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._previous)
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def without_grad(*args, **kwargs):
            with no_grad():
                return function(*args, **kwargs)

        return without_grad
