"""Polynomials as coefficient arrays: np.poly and np.vander, written as NumPy writes
them (convolutions, a running product), so results match to the bit. np.polymul is
refused (unsupported.py): NumPy strips its inputs' leading zeros first.

np.poly of a square matrix needs its eigenvalues, which are complex in general: only
1-d sequences of (real) roots are traced.
"""
import numpy as np

from jitlib import errors
from jitlib.trace.functions._common import static_ints, tracer
from jitlib.trace.registry import implements


@implements(np.poly)
def poly(seq_of_zeros):
    """The monic polynomial with these roots: (x - r0)(x - r1)... by convolutions."""
    zeros = np.atleast_1d(tracer(seq_of_zeros))
    if zeros.ndim != 1:
        raise errors.UnsupportedError(
            "np.poly of a matrix needs its (complex) eigenvalues, which jit does not trace",
            hint="pass the roots as a 1-d array")
    zeros = zeros.astype(np.mintypecode(zeros.dtype.char))
    if zeros.shape[0] == 0:
        return 1.0
    a = np.ones((1,), dtype=zeros.dtype)
    for k in range(zeros.shape[0]):
        a = np.convolve(a, np.stack([np.ones((), zeros.dtype), -zeros[k]]), mode="full")
    return a


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """Columns of powers of x, formed by a running product as NumPy's accumulate does.

    Decreasing powers unless increasing=True."""
    x = tracer(x)
    if x.ndim != 1:
        raise errors.JitlibValueError("x must be a one-dimensional array or sequence.",
                                      hint="pass a 1-d array")
    n = x.shape[0] if N is None else static_ints([N], "np.vander's N")[0]
    dt = np.promote_types(x.dtype, int)
    if n == 0:
        return np.zeros((x.shape[0], 0), dt)
    columns = [np.ones((x.shape[0], 1), dt)]
    if n > 1:
        repeated = np.broadcast_to(x.astype(dt)[:, None], (x.shape[0], n - 1))
        columns.append(np.cumprod(repeated, axis=1))
    v = np.concatenate(columns, axis=1)
    return v if increasing else v[:, ::-1]
