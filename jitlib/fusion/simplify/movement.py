"""Rules for data movement: identities, chains that collapse, reductions of broadcasts,
and transposes folded into dot_general.

All are exact: they move the same values to the same places, and a folded dot_general
even hands BLAS the same strided view (see `dot_of_transpose`). The one sum that rounds
(floats) is opt-in.
"""
import math

import numpy as np

from jitlib.fusion.rewrite import RuleTable, full_like, unsafe
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op


# ** identities **

def transpose_identity(instr, options):
    (x,) = instr.operands
    return x if instr.attrs["perm"] == tuple(range(x.ndim)) else None


def reshape_identity(instr, options):
    (x,) = instr.operands
    return x if x.shape == instr.shape else None


def broadcast_identity(instr, options):
    (x,) = instr.operands
    return x if x.shape == instr.shape and instr.attrs["dims"] == tuple(range(x.ndim)) else None


def slice_identity(instr, options):
    (x,) = instr.operands
    a = instr.attrs
    full = a["start"] == (0,) * x.ndim and a["limit"] == x.shape
    return x if full and a["strides"] == (1,) * x.ndim else None


# ** chains collapse **

def transpose_transpose(instr, options):
    (inner,) = instr.operands
    if inner.op is not Op.TRANSPOSE:
        return None
    p, q = inner.attrs["perm"], instr.attrs["perm"]
    return build.transpose(inner.operands[0], [p[i] for i in q], loc=instr.loc)


def reshape_reshape(instr, options):
    (inner,) = instr.operands
    if inner.op is not Op.RESHAPE:
        return None
    return build.reshape(inner.operands[0], instr.shape, loc=instr.loc)


def broadcast_broadcast(instr, options):
    (inner,) = instr.operands
    if inner.op is not Op.BROADCAST_IN_DIM:
        return None
    outer_dims = instr.attrs["dims"]
    dims = [outer_dims[d] for d in inner.attrs["dims"]]
    return build.broadcast_in_dim(inner.operands[0], instr.shape, dims, loc=instr.loc)


def slice_slice(instr, options):
    (inner,) = instr.operands
    if inner.op is not Op.SLICE:
        return None
    x, a, b = inner.operands[0], inner.attrs, instr.attrs
    start, limit, strides = [], [], []
    for s1, t1, s2, t2, n in zip(a["start"], a["strides"], b["start"], b["strides"],
                                 instr.shape):
        if n == 0:      # any empty slice will do; the composed start may lie past the end
            start.append(0), limit.append(0), strides.append(1)
            continue
        s, t = s1 + s2 * t1, t1 * t2          # element k of the result is x[s + k*t]
        start.append(s), limit.append(s + (n - 1) * t + 1), strides.append(t)
    return build.slice(x, start, limit, strides, loc=instr.loc)


def update_over_update(instr, options):
    """dus(dus(x, u, i), v, i) -> dus(x, v, i) for u and v of one shape: the outer write
    covers every element the inner one wrote (the same clamped box). `A[k+1:, k] /= d`
    writes twice so: once through the view, once by the setitem Python adds."""
    inner, update, *starts = instr.operands
    if inner.op is not Op.DYNAMIC_UPDATE_SLICE:
        return None
    x, previous, *inner_starts = inner.operands
    # instructions are interned: equal constant starts are one object
    if previous.shape != update.shape or any(
            a is not b for a, b in zip(starts, inner_starts)):
        return None
    return build.dynamic_update_slice(x, update, starts, loc=instr.loc)


def _constant_int(instr):
    """The integer a rank-0 constant holds, else None."""
    if instr.op is not Op.CONSTANT or instr.shape != ():
        return None
    return int(instr.attrs["value"].array)


def update_of_window_row(instr, options):
    """dus(x, scatter(x[box], i, v, axis a, set), box start) -> scatter(x, i, row, a, set),
    row = x's row i with v laid over the box's part of it, where the box spans x's whole
    axis a: `u[i, 1:-1] = v` with a traced i wrote one row of a copy of the window, then
    the whole window back (Gauss-Seidel's row sweep: three copies of the grid a trip). An
    i outside axis a writes nothing either way (the scatter drops it)."""
    x, window_out, *starts = instr.operands
    if window_out.op is not Op.SCATTER or window_out.attrs["mode"] != "set":
        return None
    window, index, row_update = window_out.operands
    a = window_out.attrs["axis"]
    if window.op is not Op.SLICE or window.operands[0] is not x or index.shape != ():
        return None
    start, limit = window.attrs["start"], window.attrs["limit"]
    if any(s != 1 for s in window.attrs["strides"]) or start[a] != 0 \
            or limit[a] != x.shape[a] \
            or [_constant_int(s) for s in starts] != list(start):
        return None
    row = build.gather(x, index, a, loc=instr.loc)
    at = [starts[d] for d in range(x.ndim) if d != a]
    row = build.dynamic_update_slice(row, row_update, at, loc=instr.loc)
    return build.scatter(x, index, row, a, mode="set", loc=instr.loc)


# ** reductions **

def reduce_of_one(instr, options):
    (x,) = instr.operands
    if math.prod(x.shape[d] for d in instr.attrs["dims"]) != 1:
        return None
    # NumPy starts a float sum at +0.0, so a one-element sum of -0.0 is +0.0.
    if instr.op is Op.REDUCE_SUM and dtypes.is_inexact(x.dtype):
        return None
    return build.reshape(x, instr.shape, loc=instr.loc)


def _reduced_broadcast(instr):
    """(y, n) when `instr` reduces `broadcast(x)` over dims holding copies of x only:
    the result is then n copies of y, the unreduced part of the broadcast."""
    (b,) = instr.operands
    if b.op is not Op.BROADCAST_IN_DIM:
        return None
    x, dims, reduced = b.operands[0], b.attrs["dims"], set(instr.attrs["dims"])
    if any(out in reduced and size != 1 for size, out in zip(x.shape, dims)):
        return None
    kept_x = [i for i, out in enumerate(dims) if out not in reduced]
    kept_out = [d for d in range(b.ndim) if d not in reduced]
    squeezed = build.reshape(x, [x.shape[i] for i in kept_x], loc=instr.loc)
    y = build.broadcast_in_dim(squeezed, instr.shape,
                               [kept_out.index(dims[i]) for i in kept_x], loc=instr.loc)
    return y, math.prod(b.shape[d] for d in reduced)


def sum_of_broadcast_int(instr, options):
    if dtypes.is_inexact(instr.dtype):
        return None
    found = _reduced_broadcast(instr)
    if found is None:
        return None
    y, n = found
    # n copies of y add up to y*n modulo 2**bits; for bool (add is or) to y and n>0.
    count = np.array(n).astype(instr.dtype)
    return build.binary(Op.MUL, y, full_like(instr, count, instr.loc), loc=instr.loc)


@unsafe("sum_of_broadcast")
def sum_of_broadcast(instr, options):
    found = _reduced_broadcast(instr) if dtypes.is_inexact(instr.dtype) else None
    if found is None:
        return None
    y, n = found
    return build.binary(Op.MUL, y, full_like(instr, n, instr.loc), loc=instr.loc)


def idempotent_reduce_of_broadcast(instr, options):
    found = _reduced_broadcast(instr)
    if found is None or found[1] == 0:   # an empty max is the identity, not y
        return None
    return found[0]


# ** transposes into dot_general **

def dot_of_transpose(instr, options):
    # The interpreter evaluates transpose as a view and dot_general by transposing its
    # operands (as views) to [batch, free, contract]: folding the permutation here gives
    # np.matmul the very same strided view, so the result is the same to the bit.
    a = dict(instr.attrs)
    for side, (contract, batch) in enumerate((("lhs_contract", "lhs_batch"),
                                              ("rhs_contract", "rhs_batch"))):
        t = instr.operands[side]
        if t.op is not Op.TRANSPOSE:
            continue
        perm = t.attrs["perm"]
        free = [perm[i] for i in range(t.ndim) if i not in a[contract] + a[batch]]
        if free != sorted(free):     # the result's dims would come out permuted
            continue
        a[contract] = tuple(perm[i] for i in a[contract])
        a[batch] = tuple(perm[i] for i in a[batch])
        operands = list(instr.operands)
        operands[side] = t.operands[0]
        return build.make(Op.DOT_GENERAL, operands, a, loc=instr.loc)
    return None


def dot_of_batch_broadcast(instr, options):
    # x @ W with a 3-D x: the tracer broadcasts W along the batch, and the product ran
    # as a batch of small ones (with W copied out per batch first). A right operand
    # that is the same matrix in every batch folds the batch into the left's rows: one
    # product of [b*m, k] @ [k, n], whose result has the same dims in the same order.
    a = instr.attrs
    lhs, rhs = instr.operands
    lb, rb = tuple(a["lhs_batch"]), tuple(a["rhs_batch"])
    if not lb or lb != tuple(range(len(lb))) or rhs.op is not Op.BROADCAST_IN_DIM:
        return None
    dims = tuple(rhs.attrs["dims"])
    source = rhs.operands[0]
    kept = [d for d in range(rhs.ndim) if d not in rb]
    if sorted(dims) != kept or source.shape != tuple(rhs.shape[d] for d in dims):
        return None   # it varies along the batch, or it is widened elsewhere too
    free = [dims.index(d) for d in kept if d not in a["rhs_contract"]]
    if free != sorted(free):
        return None   # the result's dims would come out permuted
    attrs = dict(a, lhs_batch=(), rhs_batch=(),
                 rhs_contract=tuple(dims.index(d) for d in a["rhs_contract"]))
    return build.make(Op.DOT_GENERAL, [lhs, source], attrs, loc=instr.loc)


def dot_without_contraction(instr, options):
    # Nothing summed: each output element is one product, rounded once, which is what
    # the elementwise multiply computes (16-bit floats too: NumPy and ml_dtypes multiply
    # in f32 and round once), added to the sum's +0.0. Kernels then fuse it like any
    # product, and the Triton backend is spared a rank-0 or rank-1 tl.dot.
    a = instr.attrs
    if a["lhs_contract"] or a["rhs_contract"]:
        return None
    nb = len(a["lhs_batch"])
    sides = []
    for x, batch in zip(instr.operands, (a["lhs_batch"], a["rhs_batch"])):
        free = [d for d in range(x.ndim) if d not in batch]
        perm = tuple(batch) + tuple(free)
        if perm != tuple(range(x.ndim)):
            x = build.transpose(x, perm, loc=instr.loc)
        sides.append((x, len(free)))
    (lhs, n_lhs), (rhs, n_rhs) = sides
    lhs = build.broadcast_in_dim(lhs, instr.shape, tuple(range(nb + n_lhs)), loc=instr.loc)
    rhs = build.broadcast_in_dim(rhs, instr.shape, tuple(range(nb)) + tuple(
        range(nb + n_lhs, nb + n_lhs + n_rhs)), loc=instr.loc)
    product = build.binary(Op.MUL, lhs, rhs, loc=instr.loc)
    if not dtypes.is_inexact(instr.dtype):
        return product
    # a dot's sum starts at +0.0: a lone -0.0 product comes out +0.0
    return build.binary(Op.ADD, product, full_like(instr, 0, instr.loc), loc=instr.loc)


RULES = RuleTable([
    # ** identities (the builder never makes these; parsed or rewritten IR may) **
    (Op.TRANSPOSE, transpose_identity),               # transpose(x, [0,1,...]) -> x
    (Op.RESHAPE, reshape_identity),                   # reshape(x: S) to S -> x
    (Op.BROADCAST_IN_DIM, broadcast_identity),        # broadcast(x: S) to S, dims 0.. -> x
    (Op.SLICE, slice_identity),                       # x[0:n:1] -> x
    # ** chains collapse **
    (Op.TRANSPOSE, transpose_transpose),              # transpose(transpose(x, p), q) -> one
    (Op.RESHAPE, reshape_reshape),                    # reshape(reshape(x)) -> reshape(x)
    (Op.BROADCAST_IN_DIM, broadcast_broadcast),       # broadcast(broadcast(x)) -> one
    (Op.SLICE, slice_slice),                          # x[a:b:s][c:d:t] -> x[a+c*s::s*t]
    (Op.DYNAMIC_UPDATE_SLICE, update_over_update),    # dus(dus(x, u, i), v, i) -> dus(x, v, i)
    (Op.DYNAMIC_UPDATE_SLICE, update_of_window_row),  # x[i, 1:-1] = v: one row, not the window
    # ** reductions **
    (O.REDUCE, reduce_of_one),                        # reduce over one element -> reshape
    (Op.REDUCE_SUM, sum_of_broadcast_int),            # sum(broadcast(x)) -> x*n (integers)
    (Op.REDUCE_SUM, sum_of_broadcast),                # the same for floats (opt-in)
    ({Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_AND, Op.REDUCE_OR},
     idempotent_reduce_of_broadcast),                 # max(broadcast(x)) -> x
    # ** transposes into dot_general **
    (Op.DOT_GENERAL, dot_of_transpose),               # dot(transpose(a), b) -> dot(a, b)
    (Op.DOT_GENERAL, dot_of_batch_broadcast),         # x3 @ broadcast(W) -> one product
    (Op.DOT_GENERAL, dot_without_contraction),        # dot summing nothing -> a * b
])
