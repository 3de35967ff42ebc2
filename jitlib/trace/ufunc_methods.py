"""`ufunc.reduce`, `ufunc.accumulate` and `ufunc.reduceat` (static indices) for every
binary ufunc jitlib traces.

The ufuncs with a reduction or scan op of their own (np.add.reduce is np.sum, ...) are
routed to it in ufuncs.dispatch; the rest fold in NumPy's order, the first element
with the second, that with the third, ...: unrolled for short axes, as one `scan` loop
for long ones. NumPy itself decides the typing and refuses what it refuses (a unary
ufunc, two axes of a non-reorderable one, no loop for the dtype), on a one-element
probe array of the same dtype and rank, so the rules cannot drift from its own.
"""
import warnings

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import contains_tracer, finish, keep_dims, tracer

# folds up to this many steps are unrolled (and fuse); longer ones loop
_UNROLL = 32
_NO_VALUE = np._NoValue


def _probe(ufunc, method, x, shape=None, **kwargs):
    """NumPy's answer for an array like `x` of `shape` (default: one element): its result
    dtype, or its error as the jitlib error of the same type."""
    sample = np.ones((1,) * x.ndim if shape is None else shape, x.dtype)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(getattr(ufunc, method)(sample, **kwargs)).dtype
    except TypeError as e:
        raise errors.JitlibTypeError(f"np.{ufunc.__name__}.{method}: {e}") from None
    except IndexError as e:
        raise errors.JitlibIndexError(f"np.{ufunc.__name__}.{method}: {e}") from None
    except ValueError as e:   # AxisError too
        raise errors.JitlibValueError(f"np.{ufunc.__name__}.{method}: {e}") from None


def _step(ufunc, acc, item, dtype):
    from jitlib.trace import ufuncs
    out = ufuncs.apply(ufunc, (T.Tracer(acc), T.Tracer(item)))
    return B.convert(out.instr, dtype)


def _front(x, axes):
    """x with `axes` moved to the front and merged into one (C order: NumPy's order
    of visiting them)."""
    rest = [d for d in range(x.ndim) if d not in axes]
    moved = B.transpose(x.instr, list(axes) + rest)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    return B.reshape(moved, (n,) + tuple(x.shape[d] for d in rest))


def _fold(ufunc, acc, items, dtype, keep_all):
    """acc folded with items[0], items[1], ... (their leading axis); with `keep_all`,
    also every intermediate result, stacked (accumulate)."""
    n = items.shape[0]
    if n <= _UNROLL:
        partial = []
        for i in range(n):
            item = B.reshape(B.slice(items, (i,) + (0,) * (items.ndim - 1),
                                     (i + 1,) + items.shape[1:]), items.shape[1:])
            acc = _step(ufunc, acc, item, dtype)
            partial.append(B.reshape(acc, (1,) + acc.shape))
        return acc, (B.concatenate(partial, 0) if keep_all and partial else None)
    from jitlib.trace.control_flow import scan

    def body(carry, item):
        new = T.Tracer(_step(ufunc, carry.instr, item.instr, dtype))
        return new, (new if keep_all else None)
    carry, ys = scan(body, T.Tracer(acc), T.Tracer(items))
    return carry.instr, (ys.instr if keep_all else None)


def reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
           where=True):
    """`ufunc.reduce` as a left fold over the reduced axes."""
    x = tracer(a)
    if where is not True:
        raise errors.UnsupportedError(
            f"np.{ufunc.__name__}.reduce(..., where=) is not supported inside jit",
            hint="mask the input first: np.where(mask, x, identity)")
    result_dt = _probe(ufunc, "reduce", x, axis=axis, dtype=dtype, keepdims=keepdims,
                       initial=initial)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        T.normalize_axis(ax, x.ndim) for ax in (axis if isinstance(axis, tuple) else (axis,)))
    items = _front(x, axes)
    if initial is not _NO_VALUE:
        acc = B.full(initial, items.shape[1:], result_dt)
    elif items.shape[0] == 0:
        if ufunc.identity is None:
            raise errors.JitlibValueError(
                f"zero-size array to reduction operation {ufunc.__name__} which has no "
                "identity", hint="pass initial=")
        identity = np.asarray(ufunc.identity).astype(result_dt)   # -1 is 255 as uint8
        acc = B.full(identity, items.shape[1:], result_dt)
    else:
        acc = B.convert(B.reshape(B.slice(items, (0,) * items.ndim, (1,) + items.shape[1:]),
                                  items.shape[1:]), result_dt)
        items = B.slice(items, (1,) + (0,) * (items.ndim - 1), items.shape)
    acc, _ = _fold(ufunc, acc, items, result_dt, keep_all=False)
    if keepdims:
        acc = keep_dims(acc, axes, x.ndim)
    return finish(T.Tracer(acc), out, f"{ufunc.__name__}.reduce")


def accumulate(ufunc, a, axis=0, dtype=None, out=None):
    """`ufunc.accumulate`: the left fold's every step, along one axis."""
    x = tracer(a)
    result_dt = _probe(ufunc, "accumulate", x, axis=axis, dtype=dtype)
    ax = 0 if axis is None else T.normalize_axis(axis, x.ndim)
    items = _front(x, (ax,))
    if items.shape[0] == 0:
        return finish(T.Tracer(B.convert(x.instr, result_dt)), out,
                      f"{ufunc.__name__}.accumulate")
    first = B.convert(B.slice(items, (0,) * items.ndim, (1,) + items.shape[1:]), result_dt)
    rest = B.slice(items, (1,) + (0,) * (items.ndim - 1), items.shape)
    _, steps = _fold(ufunc, B.reshape(first, items.shape[1:]), rest, result_dt,
                     keep_all=True)
    stacked = first if steps is None else B.concatenate([first, steps], 0)
    # back from the front to the axis' place
    perm = list(range(1, ax + 1)) + [0] + list(range(ax + 1, x.ndim))
    return finish(T.Tracer(B.transpose(stacked, perm)), out, f"{ufunc.__name__}.accumulate")


def reduceat(ufunc, a, indices, axis=0, dtype=None, out=None):
    """`ufunc.reduceat` with static indices (a list or NumPy array), by NumPy's rules:
    segment i reduces a[idx[i]:idx[i+1]] along the axis, or is a[idx[i]] where
    idx[i] >= idx[i+1]; the last runs to the axis' end. Each segment is one `reduce`
    (np.add's a sum), and equal segments of width k covering the axis
    (`np.arange(0, n, k)`: block sums) one reduction of the axis split in two."""
    from jitlib.trace.registry import lookup
    name = f"{ufunc.__name__}.reduceat"
    if contains_tracer(indices):
        raise errors.UnsupportedError(
            f"np.{name} with traced indices: the segments would depend on the data",
            hint="pass the indices as a list or NumPy array (static), or reduce with a "
                 "mask per segment")
    x = tracer(a)
    idx = np.asarray(indices)
    idx = idx.astype(np.intp) if idx.size == 0 else idx   # [] is float64 to asarray
    if idx.ndim != 1 or idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise errors.JitlibTypeError(f"np.{name}: indices must be a 1-d sequence of ints",
                                     hint="pass a list or 1-d NumPy array of ints")
    ax = T.normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    # along the axis at full length: NumPy checks the indices against it
    result_dt = _probe(ufunc, "reduceat", x, [n if d == ax else 1 for d in range(x.ndim)],
                       indices=idx, axis=ax, dtype=dtype)

    def part(start, stop):
        where = [slice(None)] * x.ndim
        where[ax] = slice(int(start), int(stop))
        return x[tuple(where)]
    typed = {} if dtype is None else {"dtype": dtype}
    k = int(idx[1] - idx[0]) if idx.size > 1 else n
    if idx.size and k > 0 and n % k == 0 and np.array_equal(idx, np.arange(0, n, k)):
        split = lookup("reshape")(x, x.shape[:ax] + (n // k, k) + x.shape[ax + 1:])
        result = ufunc.reduce(split, axis=ax + 1, **typed)
    elif idx.size:
        ends = list(idx[1:]) + [n]
        segments = [ufunc.reduce(part(s, e), axis=ax, keepdims=True, **typed) if s < e
                    else part(s, s + 1) for s, e in zip(idx, ends)]
        result = lookup("concatenate")([lookup("astype")(g, result_dt) for g in segments],
                                       axis=ax)
    else:
        result = part(0, 0)
    return finish(lookup("astype")(result, result_dt), out, name)
