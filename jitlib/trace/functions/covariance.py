"""np.cov and np.corrcoef: NumPy's own recipes, step by step, on tracers.

Each NumPy call below dispatches to the traced implementation, so the results round
as eager NumPy's do. The checks NumPy makes on weight values (integer, non-negative
fweights) cannot run on traced values and are left out; a non-positive count of
degrees of freedom gives inf/NaN, where NumPy warns and divides by zero too.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import dtypes
from jitlib.trace.functions._common import tracer
from jitlib.trace.registry import implements


def _rows(m, rowvar, dtype):
    x = tracer(m)
    if x.ndim > 2:
        raise errors.ShapeError("m has more than 2 dimensions", hint="pass a 1-d or 2-d array")
    x = x.astype(dtype) if x.dtype != dtype else x
    x = x.reshape((1, -1)) if x.ndim < 2 else x
    return x.T if not rowvar and x.shape[0] != 1 else x


def _weights(fweights, aweights, n):
    w = None
    for given, name in ((fweights, "fweights"), (aweights, "aweights")):
        if given is None:
            continue
        v = tracer(given)
        if name == "fweights":
            v = v.astype(np.float64)
        if v.ndim > 1 or v.shape[0] != n:
            raise errors.ShapeError(f"incompatible numbers of samples and {name}",
                                    hint=f"pass one weight per observation ({n})")
        w = v if w is None else w * v
    return w


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's recipe: weighted means removed, X @ X.T / (samples - ddof), squeezed."""
    if ddof is not None and ddof != int(ddof):
        raise errors.JitlibValueError("ddof must be integer", hint="pass an integer ddof")
    if dtype is None:
        kinds = [tracer(m).dtype] + ([tracer(y).dtype] if y is not None else [])
        dtype = dtypes.result_type(*kinds, np.dtype(np.float64))
    X = _rows(m, rowvar, dtype)
    if y is not None:
        X = np.concatenate((X, _rows(y, rowvar, dtype)), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = _weights(fweights, aweights, X.shape[1])
    avg, w_sum = np.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * np.sum(w * tracer(aweights)) / w_sum
    if not isinstance(fact, (int, float)):
        fact = np.maximum(fact, 0.0)
    elif fact <= 0:
        fact = 0.0
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w).T
    c = np.dot(X, X_T)
    c = c * np.true_divide(1, fact)
    return np.squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """cov divided by the outer product of the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = np.diag(c)
    stddev = np.sqrt(d)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return np.clip(c, -1, 1)
