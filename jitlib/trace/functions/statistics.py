"""NaN-ignoring statistics (nanvar, nanstd, nanargmax, nancumsum, ...) and np.average.

Each follows NumPy's recipe in numpy/lib/_nanfunctions_impl.py or _function_base_impl.py
step by step, so dtypes and rounding match. NumPy raises on some data (an all-NaN
slice for nanargmax, weights that sum to zero for average): a traced value cannot
raise, so those return what JAX returns, as the docstrings say.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._common import (
    NOVALUE, apply, finish, flag, full, given, is_inexact, tracer)
from jitlib.trace.registry import implements


def _nan_mask(x):
    """isnan(x) as a Tracer, or None for dtypes without NaN (NumPy's _replace_nan)."""
    if not is_inexact(x.dtype):
        return None
    return T.Tracer(B.compare(x.instr, x.instr, "NE"))


def _replace(x, mask, value):
    v = x.instr
    return T.Tracer(B.select(mask.instr, full(value, v.shape, v.dtype), v))


def _nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction):
    x = tracer(a)
    mask = _nan_mask(x)
    if mask is None:
        return reductions.var(x, axis, dtype, None, ddof, keepdims, where=where,
                              mean=mean if given(mean) else None, correction=correction)
    if given(correction):
        if ddof != 0:
            raise errors.JitlibTypeError("ddof and correction can't be provided simultaneously.",
                                         hint="pass only one of ddof= and correction=")
        ddof = correction
    arr = _replace(x, mask, 0)
    dt = dtype if given(dtype) else None
    kept = dict(axis=axis, keepdims=True, where=where)
    cnt = reductions.sum(apply(np.logical_not, mask), dtype=np.intp, **kept)
    if given(mean):
        avg = tracer(mean)
    else:
        avg = reductions.sum(arr, dtype=dt, **kept)
        avg = T.Tracer(reductions._divide(avg.instr, cnt))
    # subtract(arr, avg, out=arr, casting='unsafe'): the deviations keep arr's dtype
    dev = T.Tracer(B.convert(apply(np.subtract, arr, avg).instr, arr.dtype))
    dev = _replace(dev, mask, 0)
    sqr = apply(np.multiply, dev, dev)
    var = reductions.sum(sqr, axis=axis, dtype=dt, keepdims=keepdims, where=where)
    if not flag(keepdims):
        cnt = T.Tracer(B.reshape(cnt.instr, var.shape))
    dof = apply(np.subtract, cnt, ddof)
    var = T.Tracer(reductions._divide(var.instr, dof))
    bad = apply(np.less_equal, dof, 0)
    return _replace(var, bad, np.nan)


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NOVALUE, *, where=NOVALUE,
           mean=NOVALUE, correction=NOVALUE):
    """var of the non-NaN values (NumPy's recipe); fewer than ddof + 1 of them give NaN."""
    where = True if where is NOVALUE else where
    r = _nanvar(a, axis, dtype, ddof, flag(keepdims), where, mean, correction)
    return finish(r, out, "nanvar")


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NOVALUE, *, where=NOVALUE,
           mean=NOVALUE, correction=NOVALUE):
    """sqrt of nanvar, in nanvar's dtype."""
    where = True if where is NOVALUE else where
    var = _nanvar(a, axis, dtype, ddof, flag(keepdims), where, mean, correction)
    std = T.Tracer(B.convert(apply(np.sqrt, var).instr, var.dtype))
    return finish(std, out, "nanstd")


def _nan_arg(pick, fill, a, axis, out, keepdims, fname):
    x = tracer(a)
    mask = _nan_mask(x)
    if mask is None:
        return pick(x, axis, out, keepdims=keepdims)
    found = pick(_replace(x, mask, fill), axis, keepdims=keepdims)
    if x.size == 0:
        return finish(found, out, fname)
    # NumPy raises ValueError("All-NaN slice encountered") here; like JAX, give -1
    all_nan = reductions.all(mask, axis, keepdims=keepdims)
    if axis is None and flag(keepdims):
        all_nan = T.Tracer(B.reshape(all_nan.instr, found.shape))
    r = B.select(all_nan.instr, full(-1, found.shape, found.dtype), found.instr)
    return finish(T.Tracer(r), out, fname)


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=NOVALUE):
    """argmax with NaN as -inf; an all-NaN slice gives -1 (NumPy raises; JAX gives -1)."""
    return _nan_arg(reductions.argmax, -np.inf, a, axis, out, flag(keepdims), "nanargmax")


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=NOVALUE):
    """argmin with NaN as +inf; an all-NaN slice gives -1 (NumPy raises; JAX gives -1)."""
    return _nan_arg(reductions.argmin, np.inf, a, axis, out, flag(keepdims), "nanargmin")


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum with NaNs counted as 0."""
    x = tracer(a)
    mask = _nan_mask(x)
    return reductions.cumsum(x if mask is None else _replace(x, mask, 0), axis, dtype, out)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod with NaNs counted as 1."""
    x = tracer(a)
    mask = _nan_mask(x)
    return reductions.cumprod(x if mask is None else _replace(x, mask, 1), axis, dtype, out)


# -- weighted mean

def _weights_for(x, w, axes):
    """Weights shaped to broadcast against x: NumPy's checks and transposition."""
    if w.shape == x.shape:
        return w
    if axes is None:
        raise errors.JitlibTypeError("Axis must be specified when shapes of a and weights "
                                     "differ.", hint="pass axis= naming the weighted axes")
    if w.shape != tuple(x.shape[ax] for ax in axes):
        raise errors.ShapeError("Shape of weights must be consistent with shape of a along "
                                "specified axis.",
                                hint="weights need a's length along each of the axes")
    w = w.transpose(tuple(int(i) for i in np.argsort(axes)))
    return w.reshape(tuple(s if ax in axes else 1 for ax, s in enumerate(x.shape)))


def _average_axes(axis, ndim):
    if axis is None:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    normalized = tuple(T.normalize_axis(a, ndim) for a in axes)
    if len(set(normalized)) != len(normalized):
        raise errors.ShapeError("repeated axis", hint="name each axis once")
    return normalized


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=NOVALUE):
    """mean, or sum(a * w) / sum(w) in NumPy's result dtype.

    Weights summing to zero give inf or NaN (NumPy raises ZeroDivisionError; JAX
    divides)."""
    x = tracer(a)
    axes = _average_axes(axis, x.ndim)
    kw = {} if keepdims is NOVALUE else {"keepdims": keepdims}
    if weights is None:
        avg = reductions.mean(x, axes, **kw)
        # NumPy's count per average, in the average's type
        scl = T.Tracer(B.constant(np.asarray(avg.dtype.type(x.size / max(avg.size, 1)))))
    else:
        w = tracer(weights)
        if dtypes.is_integer(x.dtype) or dtypes.is_bool(x.dtype):
            rdt = dtypes.result_type(x.dtype, w.dtype, np.dtype(np.float64))
        else:
            rdt = dtypes.result_type(x.dtype, w.dtype)
        w = _weights_for(x, w, axes)
        scl = reductions.sum(w, axes, dtype=rdt, **kw)
        total = reductions.sum(apply(np.multiply, x, w, dtype=rdt), axes, **kw)
        avg = apply(np.true_divide, total, scl)
    if not flag(returned):
        return avg
    if scl.shape != avg.shape:
        scl = T.Tracer(T.broadcast(scl.instr, avg.shape))
    return avg, scl
