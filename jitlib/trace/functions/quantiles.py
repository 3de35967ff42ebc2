"""median, percentile and quantile: a sort, then NumPy's own recipe step by step.

NumPy partitions where jitlib sorts; the values picked are the same. The recipe is
numpy/lib/_function_base_impl.py's: median is the mean of the middle one or two
values (so float16 averages in float32, ints give float64); quantile's default
'linear' method interpolates between the neighbours of the virtual index (n - 1) * q
with NumPy's _lerp (two formulas, picked by gamma >= 0.5). A slice holding a NaN
gives NaN (its last sorted value). q must be known while tracing: it fixes which
elements are read.
"""
import numpy as np

from jitlib import errors
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._common import finish, is_inexact, tracer
from jitlib.trace.functions.sorting import sorted_along
from jitlib.trace.registry import implements


def _last_axis(x, axis):
    """x with the reduced axes merged into one last axis (NumPy's _ureduce), and the
    shape keepdims=True gives."""
    axes = T.normalize_axes(axis, x.ndim)
    keep = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, keep + list(axes)) if x.ndim else x
    merged = np.reshape(moved, tuple(x.shape[d] for d in keep) + (-1,))
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    return merged, kept_shape


def _nan_from_last(sorted_x, result):
    """NumPy's NaN check: where a slice's last sorted value is NaN, the result is it."""
    if not is_inexact(sorted_x.dtype) or sorted_x.shape[-1] == 0:
        return result
    last = sorted_x[..., -1]
    return np.where(np.isnan(last), last.astype(result.dtype), result)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """sort, then the mean of the middle one or two values (NaN if a slice has one)."""
    x = tracer(a)
    flat, kept_shape = _last_axis(x, axis)
    s = sorted_along(flat, -1)
    n = s.shape[-1]
    if n == 0:
        result = reductions.mean(s, axis=-1)   # NaN, in mean's dtype
    else:
        half = n // 2
        middle = s[..., half:half + 1] if n % 2 else s[..., half - 1:half + 1]
        result = _nan_from_last(s, reductions.mean(middle, axis=-1))
    if keepdims:
        result = np.reshape(result, kept_shape)
    return finish(T.Tracer(tracer(result).instr), out, "median")


def _static_q(q, fname):
    if isinstance(q, T.Tracer):
        known = q._known()
        if known is None:
            raise errors.UnsupportedError(
                f"np.{fname} with a traced q is not supported: q picks which sorted "
                "elements are read", hint="pass q as a Python number, list or NumPy array")
        return known
    return q


def _quantile(a, q, axis, out, method, keepdims, weights, fname, divisor):
    if method != "linear":
        raise errors.UnsupportedError(f"np.{fname}(method={method!r}) is not supported "
                                      "inside jit", hint="use the default method='linear'")
    if weights is not None:
        raise errors.UnsupportedError(f"np.{fname}(weights=...) is not supported inside jit",
                                      hint="leave weights out")
    x = tracer(a)
    weak_q = type(q) in (int, float)
    q = _static_q(q, fname)
    q = np.true_divide(q, divisor) if divisor != 1 else np.asanyarray(q)
    q = np.asanyarray(q)
    if q.ndim > 2 or not (q.size == 0 or (q.min() >= 0 and q.max() <= 1)):
        lo_hi = "[0, 100]" if divisor != 1 else "[0, 1]"
        raise errors.ShapeError(f"{'Percentiles' if divisor != 1 else 'Quantiles'} must be "
                                f"in the range {lo_hi}", hint="pass q inside the range")
    flat, kept_shape = _last_axis(x, axis)
    s = np.moveaxis(sorted_along(flat, -1), -1, 0)   # NumPy samples along axis 0
    n = s.shape[0]
    if n == 0:
        raise errors.ShapeError(f"np.{fname} of an empty array",
                                hint="the reduced axes must not be empty")
    result = _lerp_at(s, q, weak_q)
    result = _nan_from_last(np.moveaxis(s, 0, -1), result)
    if keepdims:
        result = np.reshape(result, q.shape + kept_shape)
    return finish(T.Tracer(tracer(result).instr), out, fname)


def _lerp_at(s, q, weak_q):
    """NumPy's 'linear' quantiles of `s` (sorted along axis 0) at the concrete `q`."""
    n = s.shape[0]
    virtual = np.asanyarray((n - 1) * q)   # NumPy's 'linear' virtual index
    if np.issubdtype(virtual.dtype, np.integer):   # integer q: the elements themselves
        return np.take(s, virtual, axis=0)
    # NumPy's _get_indexes: past the end reads the last value, before 0 the first
    below = np.floor(virtual)
    prev = np.where(virtual < 0, 0, np.where(virtual >= n - 1, -1, below)).astype(np.intp)
    nxt = np.where(virtual < 0, 0, np.where(virtual >= n - 1, -1, below + 1)).astype(np.intp)
    # gamma from the adjusted index, as NumPy's _get_gamma takes it
    gamma = np.asanyarray(virtual - prev, dtype=virtual.dtype)
    prev, nxt = prev % n, nxt % n
    a, b = np.take(s, prev, axis=0), np.take(s, nxt, axis=0)
    if weak_q:
        t = float(gamma)
    else:
        t = gamma.reshape(virtual.shape + (1,) * (s.ndim - 1))
    diff = b - a
    low = a + diff * t
    high = b - diff * (1 - t)
    return np.where(np.asarray(t) >= 0.5, high.astype(low.dtype), low)


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """sort, then NumPy's 'linear' interpolation at the concrete q."""
    return _quantile(a, q, axis, out, method, keepdims, weights, "quantile", 1)


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """quantile at q / 100."""
    return _quantile(a, q, axis, out, method, keepdims, weights, "percentile", 100)
