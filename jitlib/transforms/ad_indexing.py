"""Derivatives of gather and scatter, shared by forward and reverse mode: the index
rules of gather (clamp) and scatter (drop) spelled out as IR, and who wins a scatter.
"""
from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op
from jitlib.transforms.ad_util import (
    as_float, compare, div, full_like, scalar, select, zeros_like)


def clamped_indices(idx, n):
    """Gather's index rule (clamp into [0, n-1]) spelled out, for a scatter to reuse."""
    hi = min(max(n - 1, 0), int(dtypes.iinfo(idx.dtype).max))
    lo = build.full(0, (), idx.dtype)
    return build.clamp(lo, idx, scalar(hi, idx.dtype))


def in_range(idx, n):
    """Where a scatter index lands inside [0, n) (scatter drops the others)."""
    if n > dtypes.iinfo(idx.dtype).max:
        inside = build.full(True, idx.shape, dtypes.BOOL)
    else:
        inside = compare(idx, build.full(n, idx.shape, idx.dtype), "LT")
    if dtypes.is_signed(idx.dtype):
        inside = build.binary(Op.AND, inside, compare(idx, zeros_like(idx), "GE"))
    return inside


def index_mask_for_updates(mask, updates, axis):
    """A mask over the indices, broadcast over the updates of a gather/scatter."""
    dims = range(axis, axis + mask.ndim)
    return build.broadcast_in_dim(mask, updates.shape, dims)


def scatter_set_winners(idx, n):
    """Where each index's update is the one a scatter-set keeps: inside [0, n) and the
    last (in flattened index order) of those writing the same position."""
    order = build.reshape(build.iota((idx.size,), dtypes.INDEX, 0), idx.shape)
    flat_pos = build.convert(idx, dtypes.INDEX)
    last = build.scatter(build.full(-1, (max(n, 0),), dtypes.INDEX), flat_pos, order, 0, "max")
    winner = compare(build.gather(last, flat_pos, 0), order, "EQ") if n else None
    inside = in_range(idx, n)
    return inside if winner is None else build.binary(Op.AND, inside, winner)


def scatter_extremum_shares(instr):
    """For a scatter min/max: (x's share, each update's share) of the slope at every
    result position, split evenly among the values equal to the result (as JAX)."""
    x, idx, upd = instr.operands
    axis, n = instr.attrs["axis"], x.shape[instr.attrs["axis"]]
    x_hits = as_float(compare(x, instr, "EQ"), x)
    result_at_update = build.gather(instr, clamped_indices(idx, n), axis) if n else upd
    inside = index_mask_for_updates(in_range(idx, n), upd, axis)
    upd_hits = as_float(build.binary(Op.AND, inside, compare(upd, result_at_update, "EQ")), upd)
    # at least 1, so a NaN result (equal to nothing) gives 0 rather than 0/0
    counts = build.binary(Op.MAX, build.scatter(x_hits, idx, upd_hits, axis, "add"),
                          full_like(x, 1))
    count_at_update = build.gather(counts, clamped_indices(idx, n), axis) if n else upd_hits
    return div(x_hits, counts), div(upd_hits, select(inside, count_at_update,
                                                     full_like(upd, 1)))


def scatter_mul_error(instr):
    return errors.UnsupportedError(
        "the derivative of a multiplying scatter (np.multiply.at) with respect to its "
        "updates is not implemented (JAX has it only for unique indices)",
        location=instr.loc,
        hint="multiply by a scatter-set of the factors instead, or treat the updates "
             "as constants")
