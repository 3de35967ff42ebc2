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

_SHAPE = "the result's length depends on the values, unknown while tracing"

_refuse(np.polymul, "polymul", "NumPy strips the inputs' leading zeros first (poly1d), so "
        + _SHAPE, "np.convolve(a1, a2) gives the product when the leading coefficients "
        "are nonzero")
_refuse(np.polydiv, "polydiv", "NumPy trims the remainder's leading near-zeros, so "
        + _SHAPE, "divide outside jit, or keep a fixed-length remainder yourself")
_refuse(np.roots, "roots", "the roots are eigenvalues (complex in general) and leading "
        "zeros are stripped first", "compute the roots outside jit")
_refuse(np.trim_zeros, "trim_zeros", _SHAPE, "slice with static bounds, or trim outside jit")
for _fn in (np.setdiff1d, np.intersect1d, np.union1d, np.setxor1d):
    _refuse(_fn, _fn.__name__, _SHAPE + " (np.unique)",
            "np.isin(a, b) gives a fixed-shape mask of the same membership")
# NumPy 2's array-API spellings of np.unique: each has a static-size form in jitlib.numpy
for _name, _returns in (("unique_values", ""), ("unique_counts", ", return_counts=True"),
                        ("unique_inverse", ", return_inverse=True"),
                        ("unique_all", ", return_index=True, return_inverse=True, "
                                       "return_counts=True")):
    _refuse(getattr(np, _name), _name, _SHAPE + " (np.unique)",
            f"jitlib.numpy.unique(x, size=N{_returns}) returns N sorted values, padded "
            "with fill_value (default: the smallest value)")
_refuse(np.asarray_chkfinite, "asarray_chkfinite", "checking finiteness reads the values, "
        "and a compiled program cannot raise", "use np.asarray, and check "
        "np.isfinite(x).all() on the result outside jit")

# Text and files hold values, which a trace does not have. (Readers such as np.loadtxt
# never see a tracer: they run at trace time and their result becomes a constant.)
_TEXT = "the text shows values, which are not known while jit traces the function"
for _fn in (np.array_repr, np.array_str, np.array2string):
    _refuse(_fn, _fn.__name__, _TEXT, "return the array and format it outside jit")
for _fn in (np.save, np.savez, np.savez_compressed, np.savetxt):
    _refuse(_fn, _fn.__name__, "writing a file would happen once, at trace time, not at "
            "each call of the compiled program", "return the array and save it outside jit")

# None at the moment: np.nonzero, np.argwhere, np.flatnonzero and np.extract, once refused
# for their data-dependent shapes, now return masked selections (functions/nonzero.py).
