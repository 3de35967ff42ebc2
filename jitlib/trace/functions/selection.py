"""Picking elements by index: take, take_along_axis, diagonal, trace, diag, compress,
choose.

Concrete indices are checked while tracing and raise IndexError like NumPy.
Traced indices wrap negatives like NumPy but cannot raise when out of range:
they clamp into range (the gather op's rule), where NumPy would raise.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._common import (
    along_axis, apply, finish, full, index_constant, int_arg, operand, read_only, tracer, view)
from jitlib.trace.indexing import JitlibIndexError
from jitlib.trace.registry import implements


def _indices(indices):
    """Indices as a Tracer or an int64 ndarray; floats are refused as NumPy does."""
    idx = operand(indices)
    if isinstance(idx, T.Tracer) and idx._known() is not None:
        idx = idx._known()   # indices made inside the function: checked as NumPy's are
    if T.is_weak(idx) and not isinstance(idx, T.Tracer):
        idx = np.asarray(idx)
    dt = idx.dtype
    if not (dtypes.is_integer(dt) or dtypes.is_bool(dt)):
        if isinstance(indices, (list, tuple, float)) and not isinstance(idx, T.Tracer):
            return np.asarray(indices, dtype=dtypes.INDEX)   # NumPy casts Python lists
        raise errors.JitlibTypeError(
            f"Cannot cast array data from {dt!r} to dtype('int64') according to the rule "
            "'same_kind'", hint="convert the indices with .astype(int)")
    if isinstance(idx, T.Tracer):
        return idx
    return np.asarray(idx).astype(dtypes.INDEX)


def _check_concrete(idx, n, axis):
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise JitlibIndexError(f"index {idx[bad].flat[0]} is out of bounds for axis {axis} "
                               f"with size {n}",
                               hint="indices must lie in [-n, n) for an axis of size n")
    return np.where(idx < 0, idx + n, idx)


def _wrap_negative(idx, n):
    """Traced indices as int64 with negatives counted from the end."""
    v = B.convert(idx.instr, dtypes.INDEX)
    if not dtypes.is_signed(idx.dtype):
        return v
    negative = B.compare(v, full(0, v.shape, v.dtype), "LT")
    return B.select(negative, B.binary(Op.ADD, v, full(n, v.shape, v.dtype)), v)


def _normalized(idx, n, axis, mode="raise"):
    """Indices in [0, n) where they are known; traced ones as the gather op wants them."""
    size = int(np.prod(T.shape_of(idx), dtype=np.int64))
    if n == 0 and size:
        raise JitlibIndexError("cannot do a non-empty take from an empty axes.",
                               hint="the indexed axis is empty: check the shape")
    if mode not in ("raise", "wrap", "clip"):
        raise errors.ShapeError(f"clipmode must be one of 'clip', 'raise', or 'wrap' "
                                f"(got {mode!r})", hint="pass mode='raise', 'wrap' or 'clip'")
    if isinstance(idx, np.ndarray):
        if mode == "wrap":
            idx = np.mod(idx, max(n, 1))
        elif mode == "clip":
            idx = np.clip(idx, 0, max(n - 1, 0))
        return index_constant(_check_concrete(idx, n, axis))
    if mode == "wrap":
        return B.convert(apply(np.remainder, idx, np.int64(n)).instr, dtypes.INDEX)
    if mode == "clip":
        return B.convert(idx.instr, dtypes.INDEX)   # gather clamps, negatives to 0
    return _wrap_negative(idx, n)


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    """gather; negative indices wrap; traced out-of-range indices clamp (NumPy raises)."""
    x = tracer(a)
    v, ax = along_axis(x, axis)
    idx = _normalized(_indices(indices), v.shape[ax], ax, mode)
    return finish(T.Tracer(B.gather(v, idx, ax)), out, "take")


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """gather on the flattened array with row-major linear indices (broadcasting as NumPy)."""
    x = tracer(arr)
    idx = _indices(indices)
    if axis is None:
        if len(T.shape_of(idx)) != 1:
            raise errors.ShapeError("when axis=None, `indices` must have a single dimension.",
                                    hint="flatten the indices")
        x, axis = T.Tracer(B.reshape(x.instr, (x.size,))), 0
    idx_shape = T.shape_of(idx)
    if len(idx_shape) != x.ndim:
        raise errors.ShapeError("`indices` and `arr` must have the same number of dimensions",
                                hint="give the indices arr's number of dims (e.g. idx[:, None])")
    ax = T.normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    others = [1 if d == ax else x.shape[d] for d in range(x.ndim)]
    out_shape = T.broadcast_shapes(idx_shape, tuple(others))
    src_shape = out_shape[:ax] + (n,) + out_shape[ax + 1:]
    src = T.broadcast(x.instr, src_shape)
    pos = T.broadcast(_normalized(idx, n, ax), out_shape)
    strides = [int(np.prod(src_shape[d + 1:], dtype=np.int64)) for d in range(x.ndim)]
    linear = B.binary(Op.MUL, pos, full(strides[ax], out_shape, dtypes.INDEX))
    for d in range(x.ndim):
        if d != ax and out_shape[d] > 1:
            step = B.binary(Op.MUL, B.iota(out_shape, dtypes.INDEX, d),
                            full(strides[d], out_shape, dtypes.INDEX))
            linear = B.binary(Op.ADD, linear, step)
    flat = B.reshape(src, (int(np.prod(src_shape, dtype=np.int64)),))
    return T.Tracer(B.gather(flat, linear, 0))


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    """gather of the positions where a concrete condition holds."""
    if isinstance(condition, T.Tracer) or (isinstance(condition, (list, tuple)) and
                                           any(isinstance(c, T.Tracer) for c in condition)):
        raise errors.UnsupportedError(
            "np.compress with a traced condition is not supported: the result's shape "
            "would depend on the data", hint="use np.where(condition, a, fill) instead")
    positions = np.flatnonzero(np.asarray(condition))
    return take(a, positions, axis, out)


# -- diagonals

def _diagonal_positions(n, m, offset):
    if offset >= 0:
        length = max(0, min(n, m - offset))
        rows, cols = np.arange(length), np.arange(length) + offset
    else:
        length = max(0, min(n + offset, m))
        rows, cols = np.arange(length) - offset, np.arange(length)
    return rows, cols


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """gather of the diagonal's linear positions (a read-only view, as in NumPy)."""
    x = tracer(a)
    if x.ndim < 2:
        raise errors.ShapeError("diag requires an array of at least two dimensions",
                                hint="pass an array of at least 2 dimensions")
    a1, a2 = T.normalize_axis(axis1, x.ndim), T.normalize_axis(axis2, x.ndim)
    if a1 == a2:
        raise errors.ShapeError("axis1 and axis2 cannot be the same",
                                hint="pass two different axes")
    offset = int_arg(offset, "the diagonal offset")
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    n, m = x.shape[a1], x.shape[a2]
    rows, cols = _diagonal_positions(n, m, offset)
    positions = index_constant(rows * m + cols)

    def derive(base):
        moved = B.transpose(base, rest + [a1, a2])
        flat = B.reshape(moved, [x.shape[d] for d in rest] + [n * m])
        return B.gather(flat, positions, len(rest))
    return view(x, derive, read_only("a diagonal"), "a diagonal")


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """reduce_sum of the diagonal (sum's dtype rules: small ints give int64)."""
    return reductions.sum(diagonal(a, offset, axis1, axis2), -1, dtype, out)


@implements(np.diag)
def diag(v, k=0):
    """1-d: select on an iota comparison, building the matrix; 2-d: the diagonal."""
    x = tracer(v)
    k = int_arg(k, "the diagonal offset k")
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise errors.ShapeError("Input must be 1- or 2-d.", hint="np.diag takes a 1-d or 2-d array")
    size = x.shape[0] + abs(k)
    shape = (size, size)
    rows, cols = B.iota(shape, dtypes.INDEX, 0), B.iota(shape, dtypes.INDEX, 1)
    on_diag = B.compare(B.binary(Op.SUB, cols, rows), full(k, shape, dtypes.INDEX), "EQ")
    values = B.gather(x.instr, rows if k >= 0 else cols, 0) if x.shape[0] else \
        full(0, shape, x.dtype)
    return T.Tracer(B.select(on_diag, values, full(0, shape, x.dtype)))


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """Element i from choices[a[i]]: the choices stacked and gathered along a new axis.

    Under mode='raise' traced indices clamp (NumPy raises)."""
    if mode not in ("raise", "wrap", "clip"):
        raise errors.JitlibValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' "
                                      f"(got {mode!r})", hint="pass mode='raise', 'wrap' or 'clip'")
    idx = tracer(a)
    if not dtypes.is_integer(idx.dtype) and idx.dtype != bool:
        raise errors.JitlibTypeError(
            f"Cannot cast array data from {idx.dtype!r} to dtype('int64') according to "
            "the rule 'safe'", hint="pass integer indices to np.choose")
    options = [operand(c) for c in (choices if isinstance(choices, (list, tuple))
                                    else list(choices))]
    dt = T.result_type(*options)
    shape = np.broadcast_shapes(idx.shape, *(np.shape(c) for c in options))
    stacked = np.stack([np.broadcast_to(tracer(c, dt), shape) for c in options])
    n = len(options)
    idx = idx.astype(dtypes.INDEX)
    idx = apply(np.remainder, idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)
    picked = np.take_along_axis(stacked, np.broadcast_to(idx, shape)[None], 0)[0]
    return finish(picked, out, "choose")
