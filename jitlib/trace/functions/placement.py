"""In-place writes by flat position: np.put, np.place and np.putmask.

Both write into a traced array (an argument, or one made inside the function), so the
caller sees the change as eagerly. np.place's count of True values is data, but no
shape depends on it: the k-th True position takes vals[k % len(vals)], and k is a
cumulative sum of the mask, so a traced mask is exact.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions, shapes
from jitlib.trace.functions._common import apply, index_constant, tracer
from jitlib.trace.registry import implements

_MODES = ("raise", "wrap", "clip")


def _target(a, fname):
    if not isinstance(a, T.Tracer):
        raise errors.TracerConversionError(
            f"np.{fname} cannot write a traced value into a NumPy array from outside the "
            "function", hint="write into an array made inside the function, or into an "
                             "argument (writes into arguments reach the caller)")
    return a


def _values(v, dtype, fname):
    """`v` as a flat Tracer of `dtype`. Python values convert as np.asarray(v, dtype)
    does (OverflowError for ints out of range); arrays cast unsafely for np.put and only
    safely for np.place and np.putmask, whose C code asks for that."""
    if fname in ("place", "putmask") and (isinstance(v, (T.Tracer, np.ndarray, np.generic))):
        if not np.can_cast(v.dtype, dtype, "safe"):
            raise errors.JitlibTypeError(
                f"Cannot cast array data from {np.dtype(v.dtype)!r} to {np.dtype(dtype)!r} "
                "according to the rule 'safe'", hint=f"convert vals with .astype({dtype})")
    if isinstance(v, T.Tracer):
        return T.Tracer(B.reshape(B.convert(v.instr, dtype), (v.size,)))
    try:
        arr = np.asarray(v, dtype=dtype)
    except OverflowError as e:
        raise errors.IntegerOverflowError(str(e), hint=f"the values must fit {dtype}") from None
    return tracer(arr.reshape(-1))


def _cycled(values, n):
    """The first n of values, values, ... (NumPy repeats short value lists)."""
    k = values.shape[0]
    if k == n:
        return values
    return T.Tracer(B.gather(values.instr, index_constant(np.arange(n) % k), 0))


def _flat_indices(ind, size, mode):
    if isinstance(ind, T.Tracer) or (isinstance(ind, (list, tuple))
                                     and any(isinstance(i, T.Tracer) for i in ind)):
        idx = tracer(ind, dtypes.INDEX).reshape(-1)
        if mode == "wrap":
            idx = apply(np.remainder, idx, size)
        elif mode == "clip":
            idx = apply(np.minimum, apply(np.maximum, idx, 0), size - 1)
        return idx
    idx = np.asarray(ind).astype(dtypes.INDEX).reshape(-1)
    if mode == "wrap":
        idx = idx % size
    elif mode == "clip":
        idx = np.clip(idx, 0, size - 1)
    return idx


@implements(np.put)
def put(a, ind, v, mode="raise"):
    """Scatter into the flat array (values repeat; the last write to a place wins).

    Traced indices out of range are dropped under mode='raise' (NumPy raises)."""
    a = _target(a, "put")
    if mode not in _MODES:
        raise errors.JitlibValueError(
            f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})",
            hint="pass mode='raise', 'wrap' or 'clip'")
    values = _values(v, a.dtype, "put")
    count = int(np.prod(np.shape(ind))) if not isinstance(ind, T.Tracer) else ind.size
    if count == 0 or values.shape[0] == 0:
        return None
    if a.size == 0:
        raise errors.JitlibIndexError("cannot replace elements of an empty array",
                                      hint="np.put needs a non-empty target")
    idx = _flat_indices(ind, a.size, mode)
    flat = shapes.reshape_view(a, (a.size,), "np.put's flat view")
    flat[idx] = _cycled(values, count)
    return None


@implements(np.place)
def place(arr, mask, vals):
    """select(mask, vals[(cumsum(mask) - 1) % len(vals)], arr): exact for traced masks."""
    arr = _target(arr, "place")
    m = tracer(mask)
    if m.size != arr.size:
        raise errors.ShapeError("place: mask and data must be the same size",
                                hint="the mask needs one entry per element of arr")
    m = T.Tracer(B.reshape(B.convert(m.instr, dtypes.BOOL), (arr.size,)))
    values = _values(vals, arr.dtype, "place")
    if values.shape[0] == 0:
        known = m._known()
        if known is not None and not known.any():
            return None
        raise errors.JitlibValueError(
            "Cannot insert from an empty array!" if known is not None else
            "np.place with empty vals raises unless the mask is all False, which a traced "
            "mask does not tell while tracing", hint="pass at least one value")
    rank = apply(np.subtract, reductions.cumsum(m, dtype=dtypes.INDEX), 1)
    picked = T.Tracer(B.gather(values.instr,
                               apply(np.remainder, rank, values.shape[0]).instr, 0))
    flat = T.Tracer(B.reshape(arr.instr, (arr.size,)))
    new = T.Tracer(B.select(m.instr, picked.instr, flat.instr))
    arr[...] = T.Tracer(B.reshape(new.instr, arr.shape))
    return None


@implements(np.putmask)
def putmask(a, mask, values):
    """Where the mask is True, the i-th flat element takes values[i % len(values)]."""
    a = _target(a, "putmask")
    m = tracer(mask)
    if m.size != a.size:
        raise errors.ShapeError("putmask: mask and data must be the same size",
                                hint="the mask needs one entry per element of a")
    values = _values(values, a.dtype, "putmask")
    if values.shape[0] == 0:
        return None   # NumPy: nothing to put
    m = B.reshape(B.convert(m.instr, dtypes.BOOL), (a.size,))
    flat = B.reshape(a.instr, (a.size,))
    new = B.select(m, _cycled(values, a.size).instr, flat)
    a[...] = T.Tracer(B.reshape(new, a.shape))
    return None
