"""np.cov and np.corrcoef, step by step as numpy/lib/_function_base_impl.py computes
them (np.average for the means, a matmul for the products), so dtypes and rounding
follow NumPy's. NumPy's checks on weights' values (integer, non-negative) read data
and are not made; a non-positive divisor gives inf/NaN without NumPy's warning.
"""
import numpy as np

from jitlib import errors
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import tracer
from jitlib.trace.registry import implements


def _rows(m, rowvar, dtype, is_y):
    x = tracer(m)
    if x.ndim > 2:
        raise errors.JitlibValueError(f"{'y' if is_y else 'm'} has more than 2 dimensions",
                                      hint="pass a 1-d or 2-d array of observations")
    ndim = x.ndim
    x = x.astype(dtype).reshape((1,) * (2 - x.ndim) + x.shape)
    # NumPy's own tests, which differ for m and y
    transpose = x.shape[0] != 1 if is_y else ndim != 1
    return x.T if not rowvar and transpose else x


def _weights(fweights, aweights):
    w = None
    for given in (fweights, aweights):
        if given is not None:
            given = tracer(given).astype(np.float64)
            if given.ndim != 1:
                raise errors.ShapeError("cannot handle multidimensional weights",
                                        hint="pass one weight per observation")
            w = given if w is None else w * given
    return w


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """(X - mean) @ (X - mean).T / (observations - ddof), weights as NumPy's."""
    if dtype is None:
        dtype = np.result_type(tracer(m).dtype, np.float64) if y is None else \
            np.result_type(tracer(m).dtype, tracer(y).dtype, np.float64)
    X = _rows(m, rowvar, dtype, False)
    if X.shape[0] == 0:
        return tracer(np.array([]).reshape(0, 0))
    if y is not None:
        X = np.concatenate((X, _rows(y, rowvar, dtype, True)), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = _weights(fweights, aweights)
    if w is not None and w.shape[0] != X.shape[1]:
        raise errors.ShapeError("incompatible numbers of samples and weights",
                                hint="pass one weight per observation")
    avg, w_sum = np.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = max(X.shape[1] - ddof, 0.0)   # NumPy warns, then divides by zero
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * np.sum(w * tracer(aweights)) / w_sum
    if isinstance(fact, T.Tracer):
        fact = np.where(fact <= 0, 0.0, fact)
    X = X - avg[:, None]
    c = np.dot(X, (X if w is None else X * w).T)
    # NumPy's c *= 1 / fact: computed at the scalar's precision, stored at c's
    c = (c * np.true_divide(1, fact)).astype(c.dtype)
    return np.squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """cov divided by the outer product of the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c   # NumPy: a single variable correlates as 1 (NaN if constant)
    stddev = np.sqrt(np.diag(c))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return np.clip(c, -1, 1)
