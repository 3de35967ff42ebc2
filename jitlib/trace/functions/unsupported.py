"""NumPy functions jitlib refuses on purpose, each with the reason and what to do instead.

They are registered (rather than left to the generic "not supported" error) so the
message can say why; `UNSUPPORTED` lists them for docs/numpy_support.md.
"""
import numpy as np

from jitlib import errors
from jitlib.trace.registry import implements

UNSUPPORTED = {}

_DATA_DEPENDENT = ("its result's shape depends on the values, and shapes must be known "
                   "while tracing")


def _refuse(numpy_function, name, why, hint):
    def refuse(*args, **kwargs):
        raise errors.UnsupportedError(f"np.{name} is not supported inside jit: {why}",
                                      hint=hint)
    refuse.__name__ = name
    refuse.__doc__ = f"Unsupported: {why}."
    implements(numpy_function, name=name)(refuse)
    UNSUPPORTED[name] = (why, hint)


_MASK_HINT = "compute with a mask instead (np.where(cond, x, 0), sums of the mask)"
_refuse(np.nonzero, "nonzero", _DATA_DEPENDENT, _MASK_HINT)
_refuse(np.argwhere, "argwhere", _DATA_DEPENDENT, _MASK_HINT)
_refuse(np.flatnonzero, "flatnonzero", _DATA_DEPENDENT, _MASK_HINT)
_refuse(np.extract, "extract", _DATA_DEPENDENT, _MASK_HINT)
