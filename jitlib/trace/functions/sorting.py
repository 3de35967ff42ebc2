"""Sorting and selection: sort, argsort, lexsort, partition, searchsorted, unique, top_k.

All are built on the one `sort` op (stable, NaN last, -0.0 equal to 0.0: NumPy's
stable sort), so ties keep their input order on every backend. NumPy's default sort
is not stable, so where a sort meets equal values whose bits differ (-0.0 and 0.0,
two NaNs) jitlib gives what `kind="stable"` gives; `kind` is accepted and ignored.
partition and argpartition sort fully: the kth element and the partition property
are what NumPy promises, and a full sort keeps both.
Medians and quantiles live in `quantiles.py`.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import along_axis, full, int_arg, operand, tracer
from jitlib.trace.registry import implements


def _no_order(order, fname):
    if order is not None:
        raise errors.UnsupportedError(f"np.{fname}(order=...) sorts structured arrays, "
                                      "which jitlib does not trace",
                                      hint="sort the fields' arrays with np.lexsort")


def sorted_along(x, axis, indices=False):
    """The sort op on a Tracer along `axis` (None: the flattened array)."""
    if axis is None:
        v, ax = along_axis(x, None)
    else:
        v, ax = x.instr, T.normalize_axis(axis, x.ndim)
    if dtypes.is_complex(v.dtype):
        return _complex_sorted(v, ax, indices)
    return T.Tracer(B.sort([v], ax, indices))


def _complex_sorted(v, ax, indices):
    """NumPy's complex order: lexicographic on (real, imag), NaNs last as
    [R + Rj, R + nanj, nan + Rj, nan + nanj]: three keys, the NaN class major."""
    re, im = B.unary(Op.REAL, v), B.unary(Op.IMAG, v)
    nan_re, nan_im = B.compare(re, re, "NE"), B.compare(im, im, "NE")
    nan_class = B.binary(Op.ADD, B.convert(nan_im, dtypes.INDEX), B.binary(
        Op.MUL, B.convert(nan_re, dtypes.INDEX), B.full(2, v.shape, dtypes.INDEX)))
    order = B.sort([nan_class, re, im], ax, indices=True)
    return T.Tracer(order if indices else B.take_along(v, order, ax))


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """sort op (stable: equal values keep their order, NaN last)."""
    _no_order(order, "sort")
    return sorted_along(tracer(a), axis)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """sort op giving the permutation (always stable, as kind='stable')."""
    _no_order(order, "argsort")
    return sorted_along(tracer(a), axis, indices=True)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """sort op on several keys, the last one major (NumPy's order)."""
    if isinstance(keys, T.Tracer) or isinstance(keys, np.ndarray):
        keys = [keys[i] for i in range(len(keys))] if np.ndim(keys) > 1 else [keys]
    keys = [tracer(operand(k)) for k in keys]
    if not keys:
        raise errors.ShapeError("need sequence of keys with len > 0 in lexsort",
                                hint="pass at least one key")
    shape = T.broadcast_shapes(*[k.shape for k in keys])
    if not shape:
        raise errors.ShapeError("lexsort of 0-d keys", hint="pass 1-d or larger keys")
    ax = T.normalize_axis(axis, len(shape))
    instrs = [T.broadcast(k.instr, shape) for k in reversed(keys)]
    return T.Tracer(B.sort(instrs, ax, indices=True))


def _check_kth(kth, n):
    kth = np.asarray(kth.instr.attrs["value"].array if isinstance(kth, T.Tracer)
                     and kth.instr.op is Op.CONSTANT else kth)
    if isinstance(kth, T.Tracer) or kth.dtype.kind not in "iu":
        raise errors.JitlibTypeError("Partition index must be integer",
                                     hint="pass kth as Python ints")
    bad = (kth < -n) | (kth >= n)
    if bad.any():
        raise errors.ShapeError(f"kth(={int(kth[bad].flat[0])}) out of bounds ({n})",
                                hint="kth must lie in [-n, n) for an axis of size n")


def _partitioned(a, kth, axis, indices):
    x = tracer(a)
    if x.ndim == 0:
        raise errors.ShapeError("axis -1 is out of bounds for array of dimension 0",
                                hint="partition a 1-d or larger array")
    n = x.size if axis is None else x.shape[T.normalize_axis(axis, x.ndim)]
    _check_kth(kth, n)
    return sorted_along(x, axis, indices)


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """a full stable sort, which is one valid partition for every kth."""
    _no_order(order, "partition")
    return _partitioned(a, kth, axis, False)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """a full stable argsort, which is one valid partition for every kth."""
    _no_order(order, "argpartition")
    return _partitioned(a, kth, axis, True)


# -- searching sorted data

def _before(x, y):
    """x sorts before y: x < y, with NaN after every number (NumPy's sort order)."""
    lt = np.less(x, y)
    if not any(dtypes.is_float(tracer(operand(v)).dtype) for v in (x, y)):
        return lt
    return np.logical_or(lt, np.logical_and(np.isnan(y), np.logical_not(np.isnan(x))))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """compare and count: for sorted `a`, the number of elements before each v (left)
    or not after it (right), the positions NumPy's binary search finds. It costs
    len(a) * v.size comparisons, so it suits modest sizes."""
    if side not in ("left", "right"):
        raise errors.ShapeError(f"side must be 'left' or 'right' (got {side!r})",
                                hint="pass side='left' or side='right'")
    sa = tracer(a)
    if sa.ndim != 1:
        raise errors.ShapeError("object too deep for desired array",
                                hint="np.searchsorted takes a 1-d sorted array")
    if sorter is not None:
        sa = np.take(sa, sorter)
    vt = tracer(v)
    rows = np.expand_dims(vt, -1)
    if side == "left":
        hits = _before(sa, rows)
    else:
        hits = np.logical_not(_before(rows, sa))
    return np.sum(hits, axis=-1, dtype=np.int64)


# -- unique with a static size, like jnp.unique(x, size=N)

_UNIQUE_HINT = ("pass a static size= through jitlib.numpy.unique(x, size=N, fill_value=v): "
                "it returns N values, padded with fill_value (default: the smallest value)")


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True, size=None, fill_value=None):
    """sort op, then each first of a run of equal values scattered to the front; `size`
    (static) is the result's length, padded with `fill_value` (indices and counts with 0)."""
    if size is None:
        raise errors.UnsupportedError(
            "np.unique's result length depends on the values, and shapes must be known "
            "while tracing", hint=_UNIQUE_HINT)
    if axis is not None:
        raise errors.UnsupportedError("unique(axis=...) is not supported inside jit",
                                      hint="call it on the flattened array (axis=None)")
    size = int_arg(size, "unique's size")
    x = tracer(ar)
    flat = B.reshape(x.instr, (x.size,))
    perm = T.Tracer(B.sort([flat], 0, indices=True))
    s = T.Tracer(B.take_along(flat, perm.instr, 0)) if x.size else T.Tracer(flat)
    first = _run_starts(s, equal_nan)
    slot = np.cumsum(first.astype(np.int64)) - 1        # each value's place among uniques
    target = np.where(first, slot, size)                # non-firsts land out of range
    if fill_value is None:
        fill_value = s[0] if x.size else 0
    values = _scatter_set(T.broadcast(tracer(fill_value, x.dtype).instr, (size,)), target, s)
    out = [values]
    if return_index:
        out.append(_scatter_set(np.zeros(size, np.int64), target, perm))
    if return_inverse:
        inverse = T.Tracer(B.scatter(full(0, (x.size,), dtypes.INDEX), perm.instr,
                                     slot.instr, 0, "set"))
        out.append(np.reshape(inverse, x.shape))
    if return_counts:
        counts = B.scatter(full(0, (size,), dtypes.INDEX), slot.instr,
                           full(1, (x.size,), dtypes.INDEX), 0, "add")
        out.append(T.Tracer(counts))
    return out[0] if len(out) == 1 else tuple(out)


def _run_starts(s, equal_nan):
    """Where the sorted 1-d `s` starts a run of equal values (NaNs one run with equal_nan)."""
    if s.size == 0:
        return np.zeros(0, bool)
    differs = np.not_equal(s[1:], s[:-1])
    if equal_nan and dtypes.is_float(s.dtype):   # NaNs sort last: one run, as NumPy's
        both_nan = np.logical_and(np.isnan(s[1:]), np.isnan(s[:-1]))
        differs = np.logical_and(differs, np.logical_not(both_nan))
    return np.concatenate([np.ones(1, bool), differs])


def _scatter_set(into, positions, values):
    into = into if not isinstance(into, (T.Tracer, np.ndarray)) else tracer(into).instr
    positions, values = tracer(positions), tracer(values)
    return T.Tracer(B.scatter(into, positions.instr, values.instr, 0, "set"))


def unique_eager(ar, return_index=False, return_inverse=False, return_counts=False,
                 axis=None, *, equal_nan=True, sorted=True, size=None, fill_value=None):
    """jitlib.numpy.unique outside a trace: np.unique, padded to `size` like the traced one."""
    if size is None:
        return np.unique(ar, return_index, return_inverse, return_counts, axis,
                         equal_nan=equal_nan)
    got = np.unique(ar, True, True, True, axis, equal_nan=equal_nan)
    values, index, inverse, counts = (np.asarray(g) for g in got)
    fill = (values[0] if values.size else 0) if fill_value is None else fill_value

    def padded(arr, pad):
        out = np.full(size, pad, arr.dtype)
        out[:min(size, arr.size)] = arr[:size]
        return out
    out = [padded(values, fill)]
    if return_index:
        out.append(padded(index, 0))
    if return_inverse:
        out.append(inverse.reshape(np.shape(ar)))
    if return_counts:
        out.append(padded(counts, 0))
    return out[0] if len(out) == 1 else tuple(out)


# -- top_k, like jax.lax.top_k

@implements(name="top_k")
def top_k(operand_, k):
    """The k largest values along the last axis and their indices, largest first; equal
    values in index order, NaN above everything (jax.lax.top_k's order)."""
    x = tracer(operand_)
    k = int_arg(k, "top_k's k")
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise errors.ShapeError(f"top_k needs 0 <= k <= the last axis' length, got k={k} "
                                f"for shape {x.shape}", hint="pass a smaller k")
    ax = x.ndim - 1
    # ascending by (value, -index), reversed: descending, lower index first among ties
    later_first = B.unary(Op.NEG, B.iota(x.shape, dtypes.INDEX, ax))
    perm = B.reverse(B.sort([x.instr, later_first], ax, indices=True), (ax,))
    perm = B.slice(perm, [0] * x.ndim, x.shape[:-1] + (k,))
    return T.Tracer(B.take_along(x.instr, perm, ax)), T.Tracer(perm)


def top_k_eager(operand_, k):
    """jitlib.numpy.top_k outside a trace, in NumPy."""
    x = np.asarray(operand_)
    n = x.shape[-1]
    order = np.lexsort((np.broadcast_to(-np.arange(n), x.shape), x), axis=-1)[..., ::-1][..., :k]
    return np.take_along_axis(x, order, -1), order
