"""np.real_if_close and np.sinc.

real_if_close returns real input unchanged; for complex input NumPy drops the imaginary
parts only when all of them are small, so the result's dtype depends on the values:
refused, with the static alternative. (np.angle, np.iscomplex and np.isreal, complex
or not, are in elementwise.py.)
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import dtypes
from jitlib.trace.functions._common import tracer
from jitlib.trace.registry import implements


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """`a` itself for real input, as NumPy returns it."""
    x = tracer(a)
    if dtypes.is_complex(x.dtype):
        raise errors.UnsupportedError(
            "np.real_if_close of a complex array: whether the result is real depends on "
            "the values, and a traced result's dtype must be known while tracing",
            hint="use np.real(a) where the imaginary parts are known to be negligible")
    return x


@implements(np.sinc)
def sinc(x):
    """sin(pi x) / (pi x), NumPy's formula: pi x = 0 is replaced by eps, giving 1."""
    y = np.pi * tracer(x)
    eps = np.finfo(y.dtype).eps if y.dtype.kind in "fc" else 1e-20
    y = np.where(y != 0, y, eps)
    return np.sin(y) / y
