"""max/min and argmax/argmin of complex arrays, in NumPy's lexicographic order.

The IR orders no complex values, so these are spelled with real reductions: the first
element with a NaN part wins (NumPy's reductions propagate it), else the first element
with the largest (smallest) real part and, among those, imaginary part. max/min take
the element at that position, as NumPy's maximum.reduce keeps the first of equals.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op


def complex_arg(op, v, axis):
    """The i64 position along `axis` of complex `v`'s max (op ARGMAX) or min (ARGMIN)."""
    reduce_op = Op.REDUCE_MAX if op is Op.ARGMAX else Op.REDUCE_MIN
    worst = -np.inf if op is Op.ARGMAX else np.inf
    re, im = B.unary(Op.REAL, v), B.unary(Op.IMAG, v)
    nan = B.binary(Op.OR, B.compare(re, re, "NE"), B.compare(im, im, "NE"))
    fill = B.full(worst, v.shape, re.dtype)
    re_ok = B.select(nan, fill, re)
    best_re = B.reduce(reduce_op, re_ok, (axis,))
    shape = v.shape

    def back(r):
        return B.broadcast_in_dim(r, shape, [d for d in range(len(shape)) if d != axis])

    candidate = B.binary(Op.AND, B.compare(re_ok, back(best_re), "EQ"), B.unary(Op.NOT, nan))
    best_im = B.reduce(reduce_op, B.select(candidate, im, fill), (axis,))
    hit = B.binary(Op.AND, candidate, B.compare(im, back(best_im), "EQ"))
    first_hit = B.arg_reduce(Op.ARGMAX, hit, axis)
    first_nan = B.arg_reduce(Op.ARGMAX, nan, axis)
    return B.select(B.reduce(Op.REDUCE_OR, nan, (axis,)), first_nan, first_hit)


def complex_extreme(op, v, axes, fname):
    """max (op REDUCE_MAX) or min of complex `v` over `axes`: the element at its
    complex_arg, over the axes flattened into one (moved last)."""
    if not axes:
        return v
    if any(v.shape[a] == 0 for a in axes):
        raise errors.ShapeError(f"zero-size array to reduction operation {fname} which has "
                                "no identity", hint="the reduced axes are empty")
    kept = [d for d in range(v.ndim) if d not in axes]
    moved = B.transpose(v, kept + list(axes))
    n = int(np.prod([v.shape[a] for a in axes], dtype=np.int64))
    rows = B.reshape(moved, tuple(v.shape[d] for d in kept) + (n,))
    arg = complex_arg(Op.ARGMAX if op is Op.REDUCE_MAX else Op.ARGMIN, rows, len(kept))
    picked = B.take_along(rows, B.reshape(arg, arg.shape + (1,)), len(kept))
    return B.reshape(picked, arg.shape)


def refuse_options(fname, initial, where):
    if initial is not None or (where is not True and where is not np._NoValue):
        raise errors.UnsupportedError(
            f"np.{fname} of complex values with initial= or where= is not supported "
            "inside jit", hint="select the elements first (np.where) and reduce those")


def is_complex(x):
    return dtypes.is_complex(x.dtype)
