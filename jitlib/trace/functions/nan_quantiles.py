"""nanmedian, nanpercentile and nanquantile: NumPy's quantiles of each slice's
non-NaN values.

A sort puts NaNs last, so a slice's non-NaN values are the first n of its sorted
values, n a traced count: the virtual index (n - 1) * q is traced too, and the two
neighbours are gathered at it (take_along_axis). The 'linear' recipe is then
quantiles.py's; an all-NaN slice gives NaN (NumPy also warns).
"""
import numpy as np

from jitlib import errors
from jitlib.trace.functions import quantiles
from jitlib.trace.functions._common import NOVALUE, finish, flag, is_inexact, tracer
from jitlib.trace.functions.sorting import sorted_along
from jitlib.trace.registry import implements


def _sorted_with_counts(x, axis):
    """Slices sorted along the last axis (NaNs last), their non-NaN counts, and the shape
    keepdims=True gives."""
    flat, kept_shape = quantiles._last_axis(x, axis)
    s = sorted_along(flat, -1)
    return s, np.sum(~np.isnan(s), axis=-1), kept_shape


def _at(s, index):
    """s[..., index] for a traced index per slice, index shaped (q...,) + slices."""
    lead = index.ndim - (s.ndim - 1)
    src = np.reshape(s, (1,) * lead + s.shape)
    return np.take_along_axis(src, index[..., None], axis=-1)[..., 0]


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=NOVALUE):
    """The median of each slice's non-NaN values: the middle one, or the mean of two."""
    x = tracer(a)
    if not is_inexact(x.dtype) or x.size == 0:
        return quantiles.median(x, axis, out, keepdims=flag(keepdims))
    s, n, kept_shape = _sorted_with_counts(x, axis)
    upper = _at(s, np.clip(n // 2, 0, s.shape[-1] - 1))
    lower = _at(s, np.clip((n - 1) // 2, 0, s.shape[-1] - 1))
    mean = np.mean(np.stack([lower, upper], axis=-1), axis=-1)
    result = np.where(n % 2 == 1, upper.astype(mean.dtype), mean)
    result = np.where(n == 0, np.nan, result).astype(mean.dtype)
    if flag(keepdims):
        result = np.reshape(result, kept_shape)
    return finish(result, out, "nanmedian")


def _nan_quantile(a, q, axis, out, method, keepdims, weights, fname, divisor):
    x = tracer(a)
    if not is_inexact(x.dtype):
        return quantiles._quantile(x, q, axis, out, method, flag(keepdims), weights,
                                   fname[3:], divisor)
    if method != "linear" or weights is not None:
        raise errors.UnsupportedError(
            f"np.{fname} supports only method='linear' without weights inside jit",
            hint="use the defaults")
    weak_q = type(q) in (int, float)
    q = np.asanyarray(quantiles._static_q(q, fname))
    q = np.true_divide(q, divisor) if divisor != 1 else q
    if q.ndim > 2 or not (q.size == 0 or (q.min() >= 0 and q.max() <= 1)):
        raise errors.ShapeError(f"{'Percentiles' if divisor != 1 else 'Quantiles'} must be "
                                f"in the range {'[0, 100]' if divisor != 1 else '[0, 1]'}",
                                hint="pass q inside the range")
    s, n, kept_shape = _sorted_with_counts(x, axis)
    if s.shape[-1] == 0:
        raise errors.ShapeError(f"np.{fname} of an empty array",
                                hint="the reduced axes must not be empty")
    result = _lerp_counted(s, q, n, weak_q)
    if flag(keepdims):
        result = np.reshape(result, q.shape + kept_shape)
    return finish(result, out, fname)


def _lerp_counted(s, q, n, weak_q):
    """quantiles._lerp_at with a traced count n of valid values per slice."""
    qb = np.reshape(q, q.shape + (1,) * n.ndim)
    virtual = (n - 1) * qb   # traced, q's shape + the slices'
    if np.issubdtype(virtual.dtype, np.integer):
        value = _at(s, np.clip(virtual, 0, s.shape[-1] - 1))
    else:
        below = np.floor(virtual)
        past = virtual >= n - 1
        prev = np.where(virtual < 0, 0, np.where(past, -1, below))
        nxt = np.where(virtual < 0, 0, np.where(past, -1, below + 1))
        gamma = virtual - prev   # as NumPy's _get_gamma, from the adjusted index
        last = np.maximum(n, 1)
        lo = _at(s, np.remainder(prev.astype(np.intp), last))
        hi = _at(s, np.remainder(nxt.astype(np.intp), last))
        t = gamma.astype(s.dtype) if weak_q else gamma
        diff = hi - lo
        low, high = lo + diff * t, hi - diff * (1 - t)
        value = np.where(t >= 0.5, high.astype(low.dtype), low)
    return np.where(n == 0, np.nan, value).astype(value.dtype)


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=NOVALUE, *, weights=None, interpolation=None):
    """quantile of each slice's non-NaN values, at the concrete q."""
    return _nan_quantile(a, q, axis, out, method, keepdims, weights, "nanquantile", 1)


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=NOVALUE, *, weights=None, interpolation=None):
    """nanquantile at q / 100."""
    return _nan_quantile(a, q, axis, out, method, keepdims, weights, "nanpercentile", 100)
