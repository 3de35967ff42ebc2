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
_refuse(np.unique, "unique", _DATA_DEPENDENT, "compute it outside jit, or on static data")
_refuse(np.extract, "extract", _DATA_DEPENDENT, _MASK_HINT)
_SORT_WHY = "jitlib's IR has no sort operation yet"
_refuse(np.sort, "sort", _SORT_WHY, "sort outside the jitted function")
_refuse(np.argsort, "argsort", _SORT_WHY, "sort outside the jitted function")
_refuse(np.median, "median", _SORT_WHY, "compute the median outside the jitted function")
_refuse(np.percentile, "percentile", _SORT_WHY, "compute it outside the jitted function")
_refuse(np.quantile, "quantile", _SORT_WHY, "compute it outside the jitted function")
