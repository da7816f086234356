"""Seeded random tensors (docs/creation.md, "Random tensors").

    >>> import strideweave as sw
    >>> g = sw.random.Generator(42)
    >>> x = g.normal(size=(3, 4))          # Float32, on CPU
    >>> y = g.uniform(-1.0, 1.0, size=5, carrier=sw.Generic)

Draw k of a Generator is a pure function of (seed, k) (Philox4x32-10), so
the values depend only on the seed, the calls made before and the shape:
the same on every carrier and thread count. The C++ class is
strideweave::random::Generator (<strideweave/random.h>).
"""

from ._core import _random

Generator = _random.Generator
Generator.__module__ = __name__
draw_words = _random.draw_words


def _restore_generator(seed, position):
    """Unpickles a Generator at the position it was pickled at."""
    return Generator(seed, position)


Generator.__reduce__ = lambda self: (_restore_generator, (self.seed, self.position))

__all__ = ["Generator", "draw_words"]
