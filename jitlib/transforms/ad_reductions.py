"""Derivatives of reductions and scans, shared by forward and reverse mode.

Products are differentiated without division (exact where elements are zero), and
max/min share each result evenly among the elements equal to it, as JAX does.
"""
import numpy as np

from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op
from jitlib.transforms.ad_util import (
    as_float, broadcast_like, compare, div, kept_dims, mul, scalar, select, zeros_like)


def exclusive_products(x, axis, reverse=False):
    """prod of the elements strictly before each one along `axis` (after, if reverse)."""
    n = x.shape[axis]
    if n == 0:
        return x
    start = [0] * x.ndim
    limit = list(x.shape)
    low, high = [0] * x.ndim, [0] * x.ndim
    # cumprod shifted by one place, a 1 entering at the start
    if reverse:
        start[axis] = 1
        high[axis] = 1
    else:
        limit[axis] = n - 1
        low[axis] = 1
    inclusive = build.cumulative(Op.CUMPROD, x, axis, reverse)
    shifted = build.slice(inclusive, start, limit)
    return build.pad(shifted, scalar(1, x.dtype), low, high)


def flatten_dims_last(x, dims):
    """x with `dims` moved to the end and merged into one: (kept..., prod(dims))."""
    kept = kept_dims(x.ndim, dims)
    moved = build.transpose(x, kept + tuple(dims))
    n = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    return build.reshape(moved, tuple(x.shape[d] for d in kept) + (n,))


def unflatten_dims_last(y, like, dims):
    """The inverse of flatten_dims_last: y back in `like`'s layout."""
    kept = kept_dims(like.ndim, dims)
    order = kept + tuple(dims)
    moved = build.reshape(y, tuple(like.shape[d] for d in order))
    inverse = tuple(order.index(d) for d in range(like.ndim))
    return build.transpose(moved, inverse)


def reduce_prod_slope(instr):
    """d prod / d x_i = prod of all the other elements, exact where some are zero:
    the product of the elements before i times the product of those after."""
    (x,) = instr.operands
    dims = instr.attrs["dims"]
    flat = flatten_dims_last(x, dims)
    last = flat.ndim - 1
    others = mul(exclusive_products(flat, last), exclusive_products(flat, last, reverse=True))
    return unflatten_dims_last(others, x, dims)


def extremum_share(instr):
    """For reduce_max/min: each element's share of the slope, 1/count where it equals
    the result (ties split evenly, as JAX), 0 elsewhere."""
    (x,) = instr.operands
    dims = instr.attrs["dims"]
    out = broadcast_like(instr, x, kept_dims(x.ndim, dims))
    hits = as_float(compare(x, out, "EQ"), x)
    counts = build.reduce(Op.REDUCE_SUM, hits, dims)
    return div(hits, broadcast_like(counts, x, kept_dims(x.ndim, dims)))


def scan_matrix(instr):
    """The Jacobian of a cumprod/cummax/cummin along its axis, as an array J of shape
    (..., n_source, n_result) with the axis moved last: out[..., i] has slope
    J[..., j, i] in x[..., j].

    Scans are sequential products and extrema, whose exact slopes (with zeros in a
    product, ties in an extremum) are not a scan themselves; the n x n Jacobian is,
    at a cost of n^2 per scanned row (cumsum, being linear, does not need it).
    """
    (x,) = instr.operands
    axis, reverse = instr.attrs["axis"], instr.attrs["reverse"]
    xs, out = scan_layout(x, axis, reverse), scan_layout(instr, axis, reverse)
    lead = xs.shape[:-1]
    n = xs.shape[-1]
    square = lead + (n, n)
    j = build.iota(square, dtypes.INDEX, len(lead))        # source position
    i = build.iota(square, dtypes.INDEX, len(lead) + 1)    # result position
    reaches = compare(j, i, "LE")
    rows = list(range(len(lead)))
    if instr.op is Op.CUMPROD:
        # prod_{k<j} x_k * prod_{j<k<=i} x_k: the second a cumprod of the row with
        # every x_k up to and including x_j replaced by 1
        x_k = build.broadcast_in_dim(xs, square, rows + [len(lead) + 1])
        after_j = select(compare(i, j, "GT"), x_k, build.full(1, square, xs.dtype))
        tail = build.cumulative(Op.CUMPROD, after_j, len(lead) + 1)
        head = build.broadcast_in_dim(exclusive_products(xs, len(lead)), square, rows + [len(lead)])
        slope = mul(head, tail)
    else:
        # the result's value shared evenly among the prefix elements equal to it
        x_j = build.broadcast_in_dim(xs, square, rows + [len(lead)])
        out_i = build.broadcast_in_dim(out, square, rows + [len(lead) + 1])
        hits = as_float(build.binary(Op.AND, reaches, compare(x_j, out_i, "EQ")), xs)
        counts = build.reduce(Op.REDUCE_SUM, hits, [len(lead)])
        slope = div(hits, build.broadcast_in_dim(counts, square, rows + [len(lead) + 1]))
    return select(reaches, slope, zeros_like(slope))


def scan_layout(x, axis, reverse):
    """x with the scan axis last, flipped for a reverse scan, so every scan runs forward."""
    perm = tuple(d for d in range(x.ndim) if d != axis) + (axis,)
    moved = build.transpose(x, perm)
    return build.reverse(moved, (x.ndim - 1,)) if reverse else moved


def from_scan_layout(y, like, axis, reverse):
    if reverse:
        y = build.reverse(y, (y.ndim - 1,))
    perm = tuple(d for d in range(like.ndim) if d != axis) + (axis,)
    return build.transpose(y, tuple(perm.index(d) for d in range(like.ndim)))


def apply_scan_matrix(matrix, v, like, axis, reverse, cotangent):
    """v (shaped like the scan) through the scan's Jacobian `matrix`: a tangent goes
    from sources to results, a cotangent (cotangent=True) from results to sources."""
    vs = scan_layout(v, axis, reverse)
    lead = len(vs.shape) - 1
    rows = list(range(lead))
    # a tangent is indexed by source (axis lead), a cotangent by result (axis lead + 1)
    along = lead + 1 if cotangent else lead
    spread = build.broadcast_in_dim(vs, matrix.shape, rows + [along])
    summed = build.reduce(Op.REDUCE_SUM, mul(matrix, spread), [along])
    return from_scan_layout(summed, like, axis, reverse)
