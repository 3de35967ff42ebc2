"""NumPy functions jitlib refuses on purpose, each with the reason and what to do instead.

They are registered (rather than left to the generic "not supported" error) so the
message can say why; `UNSUPPORTED` lists them for docs/numpy_support.md.
"""
import numpy as np

from jitlib import errors
from jitlib.trace.registry import implements

UNSUPPORTED = {}


def _refuse(numpy_function, name, why, hint):
    def refuse(*args, **kwargs):
        raise errors.UnsupportedError(f"np.{name} is not supported inside jit: {why}",
                                      hint=hint)
    refuse.__name__ = name
    refuse.__doc__ = f"Unsupported: {why}."
    implements(numpy_function, name=name)(refuse)
    UNSUPPORTED[name] = (why, hint)

# None at the moment: np.nonzero, np.argwhere, np.flatnonzero and np.extract, once refused
# for their data-dependent shapes, now return masked selections (functions/nonzero.py).
