"""Batched matrix compositions of IR ops: batch dims lead, matrices are the last two.

What the linear-algebra derivatives (transforms/ad_linalg.py) and the np.linalg
functions (trace/functions/decompositions.py) build from: transposes, products,
triangle masks, diagonals and row permutations.
"""
import numpy as np

from jitlib.hlo import build
from jitlib.hlo.ops import Op


def mT(x):
    n = x.ndim
    return build.transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def mm(a, b):
    nb = a.ndim - 2
    return build.dot_general(a, b, (nb + 1,), (nb,), range(nb), range(nb))


def _band(x, k, lower):
    """x's entries on and below (lower) or on and above diagonal k, zero elsewhere."""
    rows = build.iota(x.shape, np.int64, x.ndim - 2)
    cols = build.iota(x.shape, np.int64, x.ndim - 1)
    shifted = build.binary(Op.ADD, rows, build.full(k, rows.shape, rows.dtype))
    keep = build.compare(shifted, cols, "GE" if lower else "LE")
    return build.select(keep, x, build.full(0, x.shape, x.dtype))


def tril(x, k=0):
    return _band(x, k, lower=True)


def triu(x, k=0):
    return _band(x, k, lower=False)


def _diagonal_mask(shape):
    rows = build.iota(shape, np.int64, len(shape) - 2)
    cols = build.iota(shape, np.int64, len(shape) - 1)
    return build.compare(rows, cols, "EQ")


def eye(shape, dtype):
    return build.convert(_diagonal_mask(shape), dtype)


def eye_like(x):
    return eye(x.shape, x.dtype)


def diag_part(x):
    """The diagonals (batch + (n,)) of square matrices: every (n+1)-th element."""
    batch, n = x.shape[:-2], x.shape[-1]
    flat = build.reshape(x, batch + (n * n,))
    nb = len(batch)
    return build.slice(flat, (0,) * (nb + 1), batch + (n * n,), (1,) * nb + (n + 1,))


def diag_embed(v):
    """The matrices batch + (n, n) with v (batch + (n,)) on their diagonals."""
    shape = v.shape + v.shape[-1:]
    rows = build.broadcast_in_dim(v, shape, tuple(range(v.ndim - 1)) + (v.ndim,))
    return build.select(_diagonal_mask(shape), rows, build.full(0, shape, v.dtype))


def rows_at(x, index):
    """x[..., index[..., i], :]: x's rows in the order `index` (batch + (n,)) gives."""
    nb = index.ndim - 1
    full = build.broadcast_in_dim(index, x.shape, tuple(range(nb + 1)))
    return build.take_along(x, full, nb)
