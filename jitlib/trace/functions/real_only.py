"""NumPy's complex-number functions on the real arrays jit traces.

jitlib has no complex dtypes, so each of these takes its real-input branch: an angle
is 0 or pi, nothing is complex, every value is real and close to itself.
"""
import numpy as np

from jitlib import errors
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import apply, full, tracer
from jitlib.trace.registry import implements


def _real(x, fname):
    x = tracer(x)
    if np.issubdtype(x.dtype, np.complexfloating):   # unreachable today; says why if not
        raise errors.UnsupportedError(f"np.{fname} of complex values is not supported",
                                      hint="jit traces real dtypes only")
    return x


@implements(np.iscomplex)
def iscomplex(x):
    """All False: a real array has no imaginary parts (NumPy returns a scalar for 0-d)."""
    x = _real(x, "iscomplex")
    return T.Tracer(full(False, x.shape, np.bool_))


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """`a` itself, as NumPy returns real input unchanged."""
    return _real(a, "real_if_close")


@implements(np.angle)
def angle(z, deg=False):
    """arctan2(0, z) as NumPy computes it: pi for negative values (and -0.0), else 0."""
    a = apply(np.arctan2, 0, _real(z, "angle"))
    return a * (180 / np.pi) if deg else a


@implements(np.sinc)
def sinc(x):
    """sin(pi x) / (pi x), NumPy's formula: pi x = 0 is replaced by eps, giving 1."""
    y = np.pi * _real(x, "sinc")
    eps = np.finfo(y.dtype).eps if y.dtype.kind == "f" else 1e-20
    y = np.where(y != 0, y, eps)
    return np.sin(y) / y
