"""Reductions and scans: sum, prod, max, min, mean, var, std, argmax, any, cumsum, ...

Each follows NumPy's own recipe (numpy/_core/_methods.py) step by step, so dtypes
and rounding match eager NumPy: small ints accumulate in int64, mean of float16
sums in float32, var is sum(|x - mean|**2) / max(n - ddof, 0).
"""
import builtins

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import complex_order
from jitlib.trace.functions._common import (
    along_axis, apply, canonical_dtype, finish, flag, full, given, is_inexact, keep_dims, since,
    tracer)
from jitlib.trace.registry import implements

_BOOL_REDUCE = {Op.REDUCE_SUM: Op.REDUCE_OR, Op.REDUCE_PROD: Op.REDUCE_AND,
                Op.REDUCE_MAX: Op.REDUCE_OR, Op.REDUCE_MIN: Op.REDUCE_AND}
_COMBINE = {Op.REDUCE_SUM: Op.ADD, Op.REDUCE_PROD: Op.MUL, Op.REDUCE_MAX: Op.MAX,
            Op.REDUCE_MIN: Op.MIN, Op.REDUCE_OR: Op.OR, Op.REDUCE_AND: Op.AND}
_UFUNC_NAME = {Op.REDUCE_MAX: "maximum", Op.REDUCE_MIN: "minimum"}


def _identity(op, dtype):
    if op in (Op.REDUCE_SUM, Op.REDUCE_OR):
        return 0
    if op in (Op.REDUCE_PROD, Op.REDUCE_AND):
        return 1
    return dtypes.lowest(dtype) if op is Op.REDUCE_MAX else dtypes.highest(dtype)


def _mask(where, shape):
    """`where=` as a bool IR value of `shape`, or None when it is True."""
    if where is True or where is np._NoValue:
        return None
    return T.broadcast(B.convert(tracer(where).instr, dtypes.BOOL), shape)


def _reduce(op, v, axes, where=True, initial=None):
    """Reduce IR value `v` over `axes` with `op`, honouring where= and initial=."""
    if dtypes.is_bool(v.dtype):
        op = _BOOL_REDUCE.get(op, op)
    mask = _mask(where, v.shape)
    if mask is not None:
        v = B.select(mask, v, full(_identity(op, v.dtype), v.shape, v.dtype))
    r = B.reduce(op, v, axes)
    if given(initial):
        init = B.convert(tracer(initial).instr, r.dtype)
        if init.shape != ():
            raise errors.ShapeError("initial= must be a scalar", hint="pass a scalar initial value")
        r = B.binary(_COMBINE[op], T.broadcast(init, r.shape), r)
    return r


def _axes(x, axis):
    return T.normalize_axes(axis, x.ndim)


def _sum_instr(x, axes, dtype, where=True, initial=None, op=Op.REDUCE_SUM):
    """umr_sum / umr_prod: NumPy's add.reduce with its default accumulation dtype."""
    dt = canonical_dtype(dtype) if given(dtype) else dtypes.accumulation_type(x.dtype)
    return _reduce(op, B.convert(x.instr, dt), axes, where, initial)


def _shaped(r, axes, ndim, keepdims):
    return keep_dims(r, axes, ndim) if flag(keepdims) else r


@implements(np.sum)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """reduce_sum (or on bool); bool and small ints accumulate in int64/uint64."""
    x = tracer(a)
    axes = _axes(x, axis)
    r = _sum_instr(x, axes, dtype, where, initial)
    return finish(T.Tracer(_shaped(r, axes, x.ndim, keepdims)), out, "sum")


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """reduce_prod (and on bool); bool and small ints accumulate in int64/uint64."""
    x = tracer(a)
    axes = _axes(x, axis)
    r = _sum_instr(x, axes, dtype, where, initial, Op.REDUCE_PROD)
    return finish(T.Tracer(_shaped(r, axes, x.ndim, keepdims)), out, "prod")


def _extreme(op, a, axis, out, keepdims, initial, where, fname):
    x = tracer(a)
    axes = _axes(x, axis)
    if complex_order.is_complex(x):
        complex_order.refuse_options(fname, initial, where)
        r = complex_order.complex_extreme(op, x.instr, axes, fname)
        return finish(T.Tracer(_shaped(r, axes, x.ndim, keepdims)), out, fname)
    name = _UFUNC_NAME[op]
    if not given(initial):
        if builtins.any(x.shape[ax] == 0 for ax in axes):
            raise errors.ShapeError(
                f"zero-size array to reduction operation {name} which has no identity",
                hint="pass initial= to give empty reductions a value")
        if where is not True and where is not np._NoValue:
            raise errors.ShapeError(
                f"reduction operation '{name}' does not have an identity, so to use a "
                "where mask one has to specify 'initial'",
                hint="pass initial=, e.g. initial=-np.inf for max")
    r = _reduce(op, x.instr, axes, where, initial)
    return finish(T.Tracer(_shaped(r, axes, x.ndim, keepdims)), out, fname)


@implements(np.max, np.amax)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """reduce_max (NaN propagates; or on bool); empty reductions need initial=."""
    return _extreme(Op.REDUCE_MAX, a, axis, out, keepdims, initial, where, "max")


@implements(np.min, np.amin)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """reduce_min (NaN propagates; and on bool); empty reductions need initial=."""
    return _extreme(Op.REDUCE_MIN, a, axis, out, keepdims, initial, where, "min")


def _count(x, axes, keepdims, where):
    """NumPy's _count_reduce_items: a strong int64 (np.intp) count, traced under where=."""
    mask = _mask(where, x.shape)
    if mask is None:
        n = 1
        for ax in axes:
            n *= x.shape[ax]
        return np.intp(n)
    counts = B.reduce(Op.REDUCE_SUM, B.convert(mask, dtypes.INDEX), axes)
    return T.Tracer(_shaped(counts, axes, x.ndim, keepdims))


def _divide(total, count):
    """true_divide(total, count, out=total, casting='unsafe'): f64 math, total's dtype."""
    return B.convert(apply(np.true_divide, T.Tracer(total), count).instr, total.dtype)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """reduce_sum / count; ints and bool give float64, float16 sums in float32."""
    x = tracer(a)
    axes = _axes(x, axis)
    half = False
    if given(dtype):
        dt = canonical_dtype(dtype)
    elif dtypes.is_integer(x.dtype) or dtypes.is_bool(x.dtype):
        dt = np.dtype(np.float64)
    elif x.dtype == np.float16:
        dt, half = np.dtype(np.float32), True
    else:
        dt = x.dtype
    total = _shaped(_sum_instr(x, axes, dt, where), axes, x.ndim, keepdims)
    r = _divide(total, _count(x, axes, keepdims, where))
    if half:
        r = B.convert(r, x.dtype)
    return finish(T.Tracer(r), out, "mean")


def _var_instr(a, axis, dtype, ddof, keepdims, where, mean, correction):
    x = tracer(a)
    axes = _axes(x, axis)
    if given(correction):
        if ddof != 0:
            raise errors.JitlibTypeError("ddof and correction can't be provided simultaneously.",
                                         hint="pass only one of ddof= and correction=")
        ddof = correction
    if not given(dtype) and (dtypes.is_integer(x.dtype) or dtypes.is_bool(x.dtype)):
        dtype = np.float64
    dt = canonical_dtype(dtype) if given(dtype) else None
    if given(mean):
        arrmean = mean
    else:
        total = keep_dims(_sum_instr(x, axes, dt, where), axes, x.ndim)
        arrmean = T.Tracer(_divide(total, _count(x, axes, True, where)))
    dev = apply(np.subtract, x, arrmean)
    if dtypes.is_complex(dev.dtype):   # NumPy: re*re + im*im, a real variance
        re, im = dev.real, dev.imag
        sq = apply(np.add, apply(np.multiply, re, re), apply(np.multiply, im, im))
    else:
        sq = apply(np.multiply, dev, dev)
    ret = _shaped(_sum_instr(sq, axes, dt, where), axes, x.ndim, keepdims)
    count = _count(x, axes, keepdims, where)
    if isinstance(count, T.Tracer):
        dof = apply(np.maximum, apply(np.subtract, count, ddof), 0)
    else:
        dof = np.maximum(count - ddof, 0)
    return _divide(ret, dof)


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=None, correction=None):
    """Composite: mean, subtract, multiply, reduce_sum, divide (NumPy's order)."""
    r = _var_instr(a, axis, dtype, ddof, keepdims, where, mean, correction)
    return finish(T.Tracer(r), out, "var")


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=None, correction=None):
    """Composite: sqrt of var."""
    r = _var_instr(a, axis, dtype, ddof, keepdims, where, mean, correction)
    r = B.convert(apply(np.sqrt, T.Tracer(r)).instr, r.dtype)
    return finish(T.Tracer(r), out, "std")


def _arg(op, a, axis, out, keepdims, fname):
    x = tracer(a)
    v = x.instr
    if axis is None or x.ndim == 0:
        if axis is not None:
            T.normalize_axis(axis, 1)
        v, ax = B.reshape(v, (x.size,)), 0
    else:
        ax = T.normalize_axis(axis, x.ndim)
    if v.shape[ax] == 0:
        raise errors.ShapeError(f"attempt to get {fname} of an empty sequence",
                                hint="the reduced axis is empty: check the shape")
    if complex_order.is_complex(v):
        r = complex_order.complex_arg(op, v, ax)
    else:
        r = B.arg_reduce(op, v, ax)
    if flag(keepdims):
        flat = axis is None or x.ndim == 0
        r = B.reshape(r, (1,) * x.ndim) if flat else keep_dims(r, (ax,), x.ndim)
    return finish(T.Tracer(r), out, fname)


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    """argmax (int64; first occurrence, NaN wins); axis=None searches the flattened array."""
    return _arg(Op.ARGMAX, a, axis, out, keepdims, "argmax")


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    """argmin (int64; first occurrence, NaN wins); axis=None searches the flattened array."""
    return _arg(Op.ARGMIN, a, axis, out, keepdims, "argmin")


def _logical(op, a, axis, out, keepdims, where, fname):
    x = tracer(a)
    axes = _axes(x, axis)
    r = _reduce(op, B.convert(x.instr, dtypes.BOOL), axes, where)
    return finish(T.Tracer(_shaped(r, axes, x.ndim, keepdims)), out, fname)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """reduce_or of x != 0."""
    return _logical(Op.REDUCE_OR, a, axis, out, keepdims, where, "any")


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """reduce_and of x != 0."""
    return _logical(Op.REDUCE_AND, a, axis, out, keepdims, where, "all")


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """reduce_sum of x != 0 as int64 (a traced 0-d array where NumPy gives an int)."""
    x = tracer(a)
    axes = _axes(x, axis)
    nonzero = B.convert(B.convert(x.instr, dtypes.BOOL), dtypes.INDEX)
    return T.Tracer(_shaped(B.reduce(Op.REDUCE_SUM, nonzero, axes), axes, x.ndim, keepdims))


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    """max - min (subtract's dtype rules: bool is an error, as in NumPy)."""
    hi = max(a, axis, keepdims=keepdims)
    lo = min(a, axis, keepdims=keepdims)
    return finish(apply(np.subtract, hi, lo), out, "ptp")


# -- scans

_BOOL_SCAN = {Op.CUMSUM: Op.CUMMAX, Op.CUMPROD: Op.CUMMIN}


def _scan(op, a, axis, dtype):
    x = tracer(a)
    v, ax = along_axis(x, axis)
    dt = canonical_dtype(dtype) if given(dtype) else dtypes.accumulation_type(x.dtype)
    v = B.convert(v, dt)
    if dtypes.is_bool(dt):
        op = _BOOL_SCAN[op]
    return B.cumulative(op, v, ax), ax


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """cumsum (max on bool); axis=None scans the flattened array; sum's dtype rules."""
    return finish(T.Tracer(_scan(Op.CUMSUM, a, axis, dtype)[0]), out, "cumsum")


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """cumprod (min on bool); axis=None scans the flattened array; prod's dtype rules."""
    return finish(T.Tracer(_scan(Op.CUMPROD, a, axis, dtype)[0]), out, "cumprod")


def _cumulative(op, x, axis, dtype, out, include_initial, fname):
    x = tracer(x)
    if axis is None and x.ndim > 1:
        raise errors.ShapeError("For arrays which have more than one dimension ``axis`` "
                                "argument is required.", hint="pass axis=")
    r, ax = _scan(op, x, axis, dtype)
    if include_initial:
        low = [0] * r.ndim
        low[ax] = 1
        r = B.pad(r, B.constant(np.array(1 if op is Op.CUMPROD else 0, r.dtype)),
                  low, [0] * r.ndim)
    return finish(T.Tracer(r), out, fname)


@implements(*since("cumulative_sum"), name="cumulative_sum")
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """cumsum, plus a leading 0 with include_initial (Array API)."""
    return _cumulative(Op.CUMSUM, x, axis, dtype, out, include_initial, "cumulative_sum")


@implements(*since("cumulative_prod"), name="cumulative_prod")
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """cumprod, plus a leading 1 with include_initial (Array API)."""
    return _cumulative(Op.CUMPROD, x, axis, dtype, out, include_initial, "cumulative_prod")


def extreme_accumulate(op, fname, a, axis=0, dtype=None, out=None):
    """np.maximum.accumulate / np.minimum.accumulate (`op` CUMMAX or CUMMIN): the
    running max/min along one axis, in the input's own type (or `dtype`), NaN winning
    from where it appears, as the ufunc's loop does."""
    x = tracer(a)
    if x.ndim == 0:
        raise errors.JitlibTypeError(f"np.{fname}: cannot accumulate on a scalar",
                                     hint="pass an array of at least one dimension")
    if axis is None and x.ndim > 1:
        raise errors.ShapeError(f"np.{fname}: accumulate does not allow multiple axes",
                                hint="pass one axis=")
    v, ax = along_axis(x, axis)
    if given(dtype):
        v = B.convert(v, canonical_dtype(dtype))
    return finish(T.Tracer(B.cumulative(op, v, ax)), out, fname)


# -- NaN-ignoring variants

def _nan_to(x, value):
    """x with NaNs replaced by `value` (ints and bool have no NaN)."""
    if not is_inexact(x.dtype):
        return x
    v = x.instr
    return T.Tracer(B.select(B.compare(v, v, "NE"), full(value, v.shape, v.dtype), v))


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """sum with NaNs counted as 0."""
    return sum(_nan_to(tracer(a), 0), axis, dtype, out, keepdims, initial, where)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """prod with NaNs counted as 1."""
    return prod(_nan_to(tracer(a), 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(op, a, axis, out, keepdims, initial, where, fname):
    x = tracer(a)
    if not dtypes.is_float(x.dtype):   # NumPy uses fmax.reduce, bfloat16 included
        return _extreme(op, x, axis, out, keepdims, initial, where, fname)
    v = x.instr
    isnan = B.compare(v, v, "NE")
    fill = full(-np.inf if op is Op.REDUCE_MAX else np.inf, v.shape, v.dtype)
    r = _extreme(op, T.Tracer(B.select(isnan, fill, v)), axis, None, keepdims, initial, where,
                 fname)
    if given(initial):
        return finish(r, out, fname)
    # an all-NaN slice gives NaN (NumPy also warns)
    axes = _axes(x, axis)
    all_nan = _shaped(_reduce(Op.REDUCE_AND, isnan, axes, where), axes, x.ndim, keepdims)
    r = r.instr
    return finish(T.Tracer(B.select(all_nan, full(np.nan, r.shape, r.dtype), r)), out, fname)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """max ignoring NaNs (all-NaN slices give NaN)."""
    return _nan_extreme(Op.REDUCE_MAX, a, axis, out, keepdims, initial, where, "nanmax")


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """min ignoring NaNs (all-NaN slices give NaN)."""
    return _nan_extreme(Op.REDUCE_MIN, a, axis, out, keepdims, initial, where, "nanmin")


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """sum of non-NaN values / their count (NumPy's recipe)."""
    x = tracer(a)
    if not is_inexact(x.dtype):
        return mean(x, axis, dtype, out, keepdims, where=where)
    axes = _axes(x, axis)
    isnum = B.compare(x.instr, x.instr, "EQ")
    counts = _sum_instr(T.Tracer(isnum), axes, dtypes.INDEX, where)
    counts = T.Tracer(_shaped(counts, axes, x.ndim, keepdims))
    total = _shaped(_sum_instr(_nan_to(x, 0), axes, dtype, where), axes, x.ndim, keepdims)
    return finish(T.Tracer(_divide(total, counts)), out, "nanmean")

