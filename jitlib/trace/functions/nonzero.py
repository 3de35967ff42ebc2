"""np.nonzero and its family: lazy masked selections, or a static size= as in JAX.

Without size=, their results' length is the number of nonzeros, which the data decides:
they return masked selections (trace/masked.py) that reductions, elementwise math and
`x[np.nonzero(m)]` accept. `jitlib.numpy.nonzero(x, size=N, fill_value=v)` (and
flatnonzero, argwhere) returns N indices like jnp.nonzero: the first nonzeros in
row-major order, padded with fill_value (default 0) or truncated to N.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import masked
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import full, int_arg, tracer
from jitlib.trace.registry import implements


def _mask_of(a, fname):
    x = tracer(a)
    if x.ndim == 0:
        raise errors.ShapeError(
            f"calling np.{fname} on a 0-d array is not allowed",
            hint=f"use np.atleast_1d(x) first: np.{fname}(np.atleast_1d(x))")
    return x if dtypes.is_bool(x.dtype) else np.not_equal(x, 0)


def _selection(data, mask, what, nonzero_dim=None):
    return masked.MaskedSelection(data, mask, 0, errors.user_location(), what, nonzero_dim)


def _iota(shape, dim):
    return T.Tracer(B.iota(shape, dtypes.INDEX, dim))


@implements(np.nonzero)
def nonzero(a, *, size=None, fill_value=None):
    """Masked selections of iotas, one per dim; with size= (jnp), a scatter per dim.

    The sized form scatters each nonzero's coordinates to its rank among the nonzeros."""
    mask = _mask_of(a, "nonzero")
    if size is not None:
        return _sized(mask, size, fill_value)
    return tuple(_selection(_iota(mask.shape, d), mask, f"np.nonzero(...)[{d}]", d)
                 for d in range(mask.ndim))


@implements(np.flatnonzero)
def flatnonzero(a, *, size=None, fill_value=None):
    """nonzero of the flattened array."""
    return nonzero(np.ravel(tracer(a)), size=size, fill_value=fill_value)[0]


@implements(np.argwhere)
def argwhere(a, *, size=None, fill_value=None):
    """A masked selection of stacked iotas (count, ndim); with size=, stacked nonzero."""
    x = tracer(a)
    if size is not None:
        columns = nonzero(np.atleast_1d(x), size=size, fill_value=fill_value)
        rows = np.stack(columns, axis=1)
        return rows[:, :0] if x.ndim == 0 else rows
    mask = _mask_of(x, "argwhere")
    coords = np.stack([_iota(mask.shape, d) for d in range(mask.ndim)], axis=-1)
    return _selection(coords, mask, "np.argwhere(...)")


@implements(np.extract)
def extract(condition, arr):
    """The flattened arr where the flattened condition is nonzero, as a masked selection."""
    cond = np.ravel(tracer(condition))
    values = np.ravel(tracer(arr))
    if values.size < cond.size:
        raise errors.JitlibIndexError(
            f"np.extract: condition has {cond.size} elements but arr only {values.size}",
            hint="pass a condition no larger than arr")
    mask = cond if dtypes.is_bool(cond.dtype) else np.not_equal(cond, 0)
    return _selection(values[:cond.size], mask, "np.extract(...)")


def _sized(mask, size, fill_value):
    """jnp.nonzero(mask, size=size, fill_value=fill_value)'s index arrays."""
    size = int_arg(size, "nonzero's size")
    ndim = mask.ndim
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * ndim
    if len(fills) != ndim or any(np.ndim(f) != 0 for f in fills):
        raise errors.ShapeError(f"fill_value must be a scalar or a tuple of length {ndim}; "
                                f"got {fill_value}", hint="pass one scalar per dimension")
    if mask.size == 0:   # as jnp.nonzero: zeros, whatever fill_value says
        return tuple(T.Tracer(full(0, (size,), dtypes.INDEX)) for _ in range(ndim))
    flat = np.ravel(mask)
    rank = np.cumsum(flat.astype(np.int64)) - 1
    target = np.where(flat, rank, size).instr     # the rest land out of range: dropped
    out = []
    for d, fill in enumerate(fills):
        into = T.broadcast(tracer(0 if fill is None else fill, dtypes.INDEX).instr, (size,))
        coords = B.reshape(B.iota(mask.shape, dtypes.INDEX, d), (mask.size,))
        out.append(T.Tracer(B.scatter(into, target, coords, 0, "set")))
    return tuple(out)


# -- the same outside a trace (jitlib.numpy's eager path)

def nonzero_eager(a, *, size=None, fill_value=None):
    """jitlib.numpy.nonzero outside a trace: np.nonzero, padded to `size` as in JAX."""
    if size is None:
        return np.nonzero(a)
    arr = np.asarray(a)
    if arr.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed.")
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * arr.ndim
    if arr.size == 0:
        fills = (0,) * arr.ndim
    out = []
    for index, fill in zip(np.nonzero(arr), fills):
        padded = np.full(size, 0 if fill is None else fill, np.intp)
        padded[:min(size, index.size)] = index[:size]
        out.append(padded)
    return tuple(out)


def flatnonzero_eager(a, *, size=None, fill_value=None):
    if size is None:
        return np.flatnonzero(a)
    return nonzero_eager(np.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere_eager(a, *, size=None, fill_value=None):
    if size is None:
        return np.argwhere(a)
    rows = np.stack(nonzero_eager(np.atleast_1d(a), size=size, fill_value=fill_value), 1)
    return rows[:, :0] if np.ndim(a) == 0 else rows
