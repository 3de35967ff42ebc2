"""Array creation on tracers: asarray, *_like, zeros, arange, linspace, eye, meshgrid...

np.zeros, np.arange, ... never see a tracer, so NumPy cannot hand them to us:
those are registered by name only and reached through `jitlib.numpy`.
"""
import itertools

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import shapes
from jitlib.trace.functions._common import (
    apply, canonical_dtype, contains_tracer, full, given, int_arg, shape_arg, tracer)
from jitlib.trace.registry import implements


# -- from existing data

def _leaf_dtypes(x):
    if isinstance(x, (list, tuple)):
        return [dt for v in x for dt in _leaf_dtypes(v)]
    return [x.dtype if isinstance(x, T.Tracer) else T.concrete(x).dtype]


def _build_nested(x, dtype):
    """A nested sequence holding tracers as one IR value of `dtype` (np.array's rules)."""
    if not isinstance(x, (list, tuple)):
        return T.as_instr(x if isinstance(x, T.Tracer) else T.concrete(x), dtype)
    items = [_build_nested(v, dtype) for v in x]
    if not items:
        return B.constant(np.zeros((0,), dtype))
    shape = items[0].shape
    if any(v.shape != shape for v in items):
        raise errors.ShapeError(
            "setting an array element with a sequence. The requested array has an "
            "inhomogeneous shape: the elements have shapes "
            + ", ".join(str(v.shape) for v in items),
            hint="every element of the list must have the same shape")
    return B.concatenate([B.reshape(v, (1,) + shape) for v in items], 0)


@implements(name="asarray")
def asarray(a, dtype=None, order=None, *, copy=None, device=None, like=None):
    """The traced array itself; a list holding tracers: concatenate; else a constant."""
    if isinstance(a, T.Tracer):
        if given(dtype) and canonical_dtype(dtype) != a.dtype:
            return T.Tracer(B.convert(a.instr, canonical_dtype(dtype)))
        return T.Tracer(a.instr) if (a._weak or copy) else a
    if isinstance(a, (list, tuple)) and contains_tracer(a):
        leaves = _leaf_dtypes(a)
        dt = canonical_dtype(dtype) if given(dtype) else dtypes.result_type(*leaves)
        return T.Tracer(_build_nested(a, dt))
    return T.Tracer(B.constant(T.concrete(a, canonical_dtype(dtype) if given(dtype) else None)))


@implements(np.fromiter)
def fromiter(iter, dtype, count=-1, *, like=None):
    """The iterable's items as a 1-d array of dtype: traced items are stacked.

    Without traced items it is NumPy's own array (a constant of the program)."""
    items = list(itertools.islice(iter, None if count < 0 else count))
    if 0 <= count != len(items):
        raise errors.JitlibValueError(f"iterator too short: Expected {count} but iterator "
                                      f"had only {len(items)} items.",
                                      hint="pass count=-1, or a longer iterable")
    if not contains_tracer(items):
        return np.fromiter(items, dtype, len(items))
    try:
        dt = canonical_dtype(dtype)
    except errors.JitlibTypeError as e:   # the iterable is consumed: NumPy cannot retry
        raise errors.UnsupportedError(str(e), hint="use a numeric or bool dtype") from None
    values = [tracer(item, dt) for item in items]
    if any(v.ndim for v in values):
        raise errors.JitlibValueError("setting an array element with a sequence.",
                                      hint="np.fromiter takes scalars: use np.stack")
    return np.stack(values)


@implements(name="asanyarray")
def asanyarray(a, dtype=None, order=None, *, like=None):
    """asarray."""
    return asarray(a, dtype)


@implements(name="array")
def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """asarray, copied unless copy=False, with ndmin leading unit dims."""
    x = asarray(object, dtype, copy=copy is not False and copy is not None)
    if x.ndim < ndmin:
        x = T.Tracer(B.reshape(x.instr, (1,) * (ndmin - x.ndim) + x.shape))
    return x


def _like(a, dtype, shape):
    x = a if isinstance(a, T.Tracer) else None
    dt = canonical_dtype(dtype) if given(dtype) else (
        x.dtype if x is not None else T.concrete(a).dtype)
    shp = shape_arg(shape) if given(shape) else T.shape_of(a)
    return dt, tuple(shp)


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """A constant 0 broadcast to a's shape."""
    dt, shape = _like(a, dtype, shape)
    return T.Tracer(full(0, shape, dt))


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """A constant 1 broadcast to a's shape."""
    dt, shape = _like(a, dtype, shape)
    return T.Tracer(full(1, shape, dt))


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """zeros_like (NumPy leaves the values undefined; jitlib fills with 0)."""
    return zeros_like(prototype, dtype, shape=shape)


def _fill(fill_value, shape, dt):
    """`fill_value` cast to `dt` (NumPy's unsafe copyto) and broadcast to `shape`."""
    if isinstance(fill_value, T.Tracer):
        v = B.convert(fill_value.instr, dt)
    elif T.is_weak(fill_value):
        v = T.as_instr(fill_value, dt)
    else:
        v = B.constant(T.concrete(fill_value).astype(dt))
    return T.broadcast(v, shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """fill_value cast to a's dtype and broadcast to its shape."""
    dt, shape = _like(a, dtype, shape)
    return T.Tracer(_fill(fill_value, shape, dt))


# -- static facts

@implements(np.shape)
def shape(a):
    """Static: the shape tuple."""
    return tuple(T.shape_of(a))


@implements(np.ndim)
def ndim(a):
    """Static: the number of dims."""
    return len(T.shape_of(a))


@implements(np.size)
def size(a, axis=None):
    """Static: the number of elements (along axis)."""
    shp = T.shape_of(a)
    if axis is None:
        return int(np.prod(shp, dtype=np.int64))
    return shp[T.normalize_axis(axis, len(shp))]


# -- from shapes (jitlib.numpy only)

def _dtype_or(dtype, default):
    return canonical_dtype(dtype) if given(dtype) else np.dtype(default)


@implements(name="zeros")
def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """A constant 0 broadcast to shape."""
    return T.Tracer(full(0, shape_arg(shape), _dtype_or(dtype, float)))


@implements(name="ones")
def ones(shape, dtype=None, order="C", *, device=None, like=None):
    """A constant 1 broadcast to shape."""
    return T.Tracer(full(1, shape_arg(shape), _dtype_or(dtype, float)))


@implements(name="empty")
def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """zeros (NumPy leaves the values undefined; jitlib fills with 0)."""
    return zeros(shape, dtype)


@implements(name="full")
def full_(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """fill_value broadcast to shape (dtype: fill_value's, as np.full)."""
    if given(dtype):
        dt = canonical_dtype(dtype)
    elif isinstance(fill_value, T.Tracer):
        dt = fill_value.dtype
    else:
        dt = T.concrete(fill_value).dtype
    return T.Tracer(_fill(fill_value, shape_arg(shape), dt))


@implements(name="arange")
def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """iota for arange(n); other static ranges become constants. Traced bounds are refused."""
    for bound in (start, stop, step):
        if isinstance(bound, T.Tracer):
            bound._concrete("An arange bound", "the bounds set the result's length, which "
                            "must be known while tracing: pass Python numbers")
    values = np.arange(start, stop, step, dtype=canonical_dtype(dtype) if given(dtype)
                       else None)
    if not dtypes.is_supported(values.dtype):
        raise errors.JitlibTypeError(f"arange of dtype {values.dtype} is not supported",
                                     hint="pass a numeric dtype")
    if (stop is None and step is None and values.ndim == 1 and
            dtypes.is_integer(values.dtype)):
        return T.Tracer(B.iota(values.shape, values.dtype, 0))
    return T.Tracer(B.constant(values))


@implements(np.linspace)   # dispatched for traced ends, hooked for static ones
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """NumPy's formula: iota * step + start, the last sample set to stop."""
    num = int_arg(num, "linspace's num")
    if num < 0:
        raise errors.ShapeError(f"Number of samples, {num}, must be non-negative.",
                                hint="pass num >= 0")
    div = (num - 1) if endpoint else num
    dt = T.result_type(start, stop)
    if not dtypes.is_float(dt):
        dt = dtypes.result_type(dt, 1.0)
    lo, hi = tracer(start), tracer(stop)
    delta = apply(np.subtract, hi, lo, dtype=dt)
    bshape = delta.shape
    steps = T.Tracer(B.iota((num,) + bshape, dt, 0))
    lo_b, delta_b = (T.Tracer(T.broadcast(B.convert(t.instr, dt), (num,) + bshape))
                     for t in (lo, delta))
    if div > 0:
        step = apply(np.true_divide, delta, div)
        step_b = T.Tracer(T.broadcast(step.instr, (num,) + bshape))
        tiny = T.Tracer(T.broadcast(B.compare(step.instr, full(0, bshape, dt), "EQ"),
                                    (num,) + bshape))
        scaled = _select(tiny, apply(np.multiply, apply(np.true_divide, steps, div), delta_b),
                         apply(np.multiply, steps, step_b))
    else:
        step = np.nan
        scaled = apply(np.multiply, steps, delta_b)
    y = apply(np.add, scaled, lo_b)
    if endpoint and num > 1:
        last = T.broadcast(B.convert(hi.instr, dt), (1,) + bshape)
        y = T.Tracer(B.concatenate([B.slice(y.instr, (0,) * y.ndim, (num - 1,) + bshape),
                                    last], 0))
    if axis != 0:
        y = T.Tracer(shapes.moveaxis(y, 0, axis).instr)
    if given(dtype):
        target = canonical_dtype(dtype)
        if dtypes.is_integer(target):
            y = apply(np.floor, y)
        y = T.Tracer(B.convert(y.instr, target))
    return (y, step) if retstep else y


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's recipe, the ends traced: logspace between their logs, sign put back.

    The ends are divided by sign(start) first and set exactly afterwards. A zero end,
    which NumPy refuses by reading the values, gives NaN or inf."""
    start, stop = tracer(start), tracer(stop)
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    start, stop = start.astype(dt), stop.astype(dt)
    out_sign = np.sign(start)
    start, stop = (start / out_sign).astype(dt), (stop / out_sign).astype(dt)
    result = np.logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint,
                         base=10.0, dtype=dt)
    if num > 0:
        result[0] = start
        if num > 1 and endpoint:
            result[-1] = stop
    result = (result * out_sign).astype(dt)
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result.astype(dt if dtype is None else canonical_dtype(dtype))


def _select(pred, a, b):
    return T.Tracer(B.select(pred.instr, a.instr, b.instr))


def _triangle_mask(rows, cols, k):
    shape = (rows, cols)
    offset = B.binary(Op.SUB, B.iota(shape, dtypes.INDEX, 1), B.iota(shape, dtypes.INDEX, 0))
    return offset, full(k, shape, dtypes.INDEX)


@implements(name="eye")
def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """iota comparison converted to dtype: ones on the k-th diagonal."""
    n = int_arg(N, "N")
    m = n if M is None else int_arg(M, "M")
    offset, kk = _triangle_mask(n, m, int_arg(k, "k"))
    return T.Tracer(B.convert(B.compare(offset, kk, "EQ"), _dtype_or(dtype, float)))


@implements(name="identity")
def identity(n, dtype=None, *, like=None):
    """eye(n)."""
    return eye(n, dtype=_dtype_or(dtype, float))


@implements(name="tri")
def tri(N, M=None, k=0, dtype=float, *, like=None):
    """iota comparison converted to dtype: ones at and below the k-th diagonal."""
    n = int_arg(N, "N")
    m = n if M is None else int_arg(M, "M")
    offset, kk = _triangle_mask(n, m, int_arg(k, "k"))
    return T.Tracer(B.convert(B.compare(offset, kk, "LE"), _dtype_or(dtype, float)))


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """reshape each input onto its own axis, then broadcast (copies, as by default)."""
    if indexing not in ("xy", "ij"):
        raise errors.ShapeError("Valid values for `indexing` are 'xy' and 'ij'.",
                                hint="pass indexing='xy' or 'ij'")
    ndim = len(xi)
    outs = []
    for i, x in enumerate(xi):
        t = tracer(x)
        shape = [1] * ndim
        shape[i] = t.size
        if indexing == "xy" and ndim > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        outs.append(T.Tracer(B.reshape(t.instr, shape)))
    if not sparse:
        common = T.broadcast_shapes(*[o.shape for o in outs])
        outs = [T.Tracer(T.broadcast(o.instr, common)) for o in outs]
    return tuple(outs)
