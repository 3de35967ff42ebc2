"""Order statistics of masked selections: np.median, np.quantile, np.percentile of x[mask].

The reduced axes are merged into one last axis and sorted with the unselected values
pushed to the end (+inf, or the dtype's highest value), so the selected ones come first
and in order; the answer is read at traced positions among the first `count` with
NumPy's recipes (functions/quantiles.py). An empty selection, or one holding a NaN,
gives NaN (NumPy's median does the same; its quantile raises for an empty one).
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import dtypes
from jitlib.trace.functions import quantiles
from jitlib.trace.registry import lookup


def _within(sel, name, logical, axes, keepdims, lead=0, **options):
    """Reducing only the other axes: each selected element on its own, a selection."""
    result = lookup(name)(sel._data, axis=axes, keepdims=keepdims, **options)
    return sel._reduced_within(result, logical, keepdims, lead)


def _kept_shape(sel, logical):
    """The shape keepdims=True gives a reduction over all of `logical`."""
    k, at = sel._mask.ndim, sel._at
    static = sel._data.shape[:at] + (None,) + sel._data.shape[at + k:]
    return tuple(1 if ax in logical else n for ax, n in enumerate(static))


def _sorted(sel, axes):
    """(sorted values along a last merged axis, count (..., 1), where undefined (...))."""
    keep = [d for d in range(sel._data.ndim) if d not in axes]
    merged = tuple(sel._data.shape[d] for d in keep) + (-1,)
    values = np.reshape(np.transpose(sel._data, keep + list(axes)), merged)
    mask = np.reshape(np.transpose(sel._full_mask(), keep + list(axes)), merged)
    last = np.inf if dtypes.is_float(sel.dtype) else dtypes.highest(sel.dtype)
    s = np.sort(np.where(mask, values, np.asarray(last, sel.dtype)), axis=-1)
    n = np.sum(mask, axis=-1, keepdims=True)
    undefined = np.equal(n[..., 0], 0)
    if dtypes.is_float(sel.dtype):
        undefined = np.logical_or(undefined, np.any(np.isnan(values) & mask, axis=-1))
    return s, n, undefined


def _nan_where(undefined, result):
    return np.where(undefined, np.asarray(np.nan, result.dtype), result)


def median(sel, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The mean of the middle one or two of the selected values (NumPy's recipe)."""
    if out is not None:
        sel._escape(f"np.median(..., out=) of {sel._what}")
    logical, axes = sel._axes(axis)
    if sel._at not in logical:
        return _within(sel, "median", logical, axes, keepdims)
    s, n, undefined = _sorted(sel, axes)
    middle = [np.take_along_axis(s, np.maximum(i, 0), -1) for i in ((n - 1) // 2, n // 2)]
    result = np.mean(np.concatenate(middle, axis=-1), axis=-1)
    return sel._kept(_nan_where(undefined, result), logical, keepdims)


def quantile(sel, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, divisor=1, fname="quantile"):
    """NumPy's 'linear' quantile of the selected values at the concrete q."""
    if method != "linear" or weights is not None or out is not None:
        raise errors.UnsupportedError(
            f"np.{fname} of {sel._what} supports only the default method='linear', "
            "without weights= or out=", hint="leave those arguments out")
    given, weak_q = q, type(q) in (int, float)
    q = np.asanyarray(quantiles._static_q(q, fname))
    q = np.true_divide(q, divisor) if divisor != 1 else q
    if np.issubdtype(q.dtype, np.integer) and not dtypes.is_float(sel.dtype):
        raise errors.UnsupportedError(
            f"np.{fname} of {sel._what} at an integer q is not supported inside jit: "
            "NumPy returns the integer element there, and raises for an empty selection",
            hint="pass q as a float (0.0, 1.0), or use .min()/.max() with initial=")
    if q.ndim > 1 or not (q.size == 0 or (q.min() >= 0 and q.max() <= 1)):
        raise errors.ShapeError(f"np.{fname}: q must be a scalar or 1-d, within range",
                                hint="pass q in [0, 1] (quantile) or [0, 100] (percentile)")
    logical, axes = sel._axes(axis)
    if sel._at not in logical:
        return _within(sel, fname, logical, axes, keepdims, q.ndim, q=given)
    s, n, undefined = _sorted(sel, axes)
    result = _lerp(s, n, q.reshape(-1).astype(np.float64), weak_q)    # (..., len(q))
    result = np.moveaxis(_nan_where(undefined[..., None], result), -1, 0)
    if keepdims:
        result = np.reshape(result, result.shape[:1] + _kept_shape(sel, logical))
    return result if q.ndim else result[0]


def percentile(sel, q, *args, **kwargs):
    """quantile at q / 100."""
    return quantile(sel, q, *args, divisor=100, fname="percentile", **kwargs)


def _lerp(s, n, q, weak_q):
    """NumPy's 'linear' method at virtual index (n - 1) * q, per row of `s`."""
    virtual = (n - 1) * q                        # float64, (..., len(q))
    last = np.maximum(n - 1, 0)
    below = np.floor(virtual).astype(np.int64)
    prev = np.where(virtual >= last, last, np.maximum(below, 0))
    nxt = np.where(virtual >= last, last, np.maximum(below + 1, 0))
    gamma = virtual - prev
    a, b = np.take_along_axis(s, prev, -1), np.take_along_axis(s, nxt, -1)
    if weak_q and dtypes.is_float(s.dtype):      # a Python q computes in s's type
        gamma = gamma.astype(s.dtype)
    diff = b - a
    low = a + diff * gamma
    high = b - diff * (1 - gamma)
    return np.where(gamma >= 0.5, high.astype(low.dtype), low)
