"""What forward mode (jvp.py) and reverse mode (vjp.py) share.

* Which values carry derivatives: floating-point ones only. Integer and bool values
  (indices, masks, argmax results) carry none, like JAX's float0: internally their
  tangent and cotangent are simply absent (None).
* `partials`: for the elementwise ops, d(out)/d(operand) as IR, one per operand. The JVP
  of such an op is sum(tangent_i * partial_i), its VJP is (cotangent * partial_i).
* The derivative formulas both modes need for the same op (products of reductions and
  scans, ties of max/min, the winners of a scatter-set), written once as IR builders.

Every builder emits ordinary IR ops, so derivatives are themselves differentiable.
Conventions follow JAX: max/min split ties evenly (jnp.maximum, jnp.max, lax.cummax),
abs has slope 1 at 0, pow's slope is y * x^(y-1) even at 0 ** 0 (NaN), floor/ceil/
round/sign have slope 0.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op


def is_differentiable(x):
    """Whether values like `x` (an Instr) carry tangents and cotangents."""
    return dtypes.is_float(x.dtype)


def missing_rule(transform, instr):
    """The error for an op `transform` has no rule for, at the user's line."""
    return errors.UnsupportedError(
        f"{transform} rule for '{instr.op}' is not implemented "
        f"(while differentiating {instr.type_str} {instr.op})",
        location=instr.loc,
        hint="rewrite this line with other NumPy operations, or mark the value as "
             "constant by computing it outside the differentiated function")


def scatter_mul_error(instr):
    return errors.UnsupportedError(
        "the derivative of a multiplying scatter (np.multiply.at) with respect to its "
        "updates is not implemented (JAX has it only for unique indices)",
        location=instr.loc,
        hint="multiply by a scatter-set of the factors instead, or treat the updates "
             "as constants")


# -- small builders

def scalar(value, dtype):
    return build.constant(np.array(value, dtype=dtypes.canonicalize(dtype)))


def full_like(x, value):
    return build.full(value, x.shape, x.dtype)


def zeros_like(x):
    return full_like(x, 0)


def instantiate(tangent, like):
    """A symbolic zero (None) made concrete: zeros shaped like `like`."""
    return zeros_like(like) if tangent is None else tangent


def add_any(a, b):
    """a + b where either may be a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return build.binary(Op.ADD, a, b)


def mul(a, b):
    return build.binary(Op.MUL, a, b)


def div(a, b):
    return build.binary(Op.DIV, a, b)


def neg(a):
    return build.unary(Op.NEG, a)


def select(pred, a, b):
    return build.select(pred, a, b)


def compare(a, b, direction):
    return build.compare(a, b, direction)


def as_float(pred, like):
    """A bool mask as 1.0/0.0 in `like`'s dtype."""
    return build.convert(pred, like.dtype)


def broadcast_like(x, like, dims):
    """`x` broadcast to `like`'s shape, x's dims landing on `dims`."""
    return build.broadcast_in_dim(x, like.shape, dims)


def sum_to_shape(x, shape):
    """Sum `x` (shape `x.shape`) down to `shape` for a scalar-or-same-shape operand."""
    if x.shape == tuple(shape):
        return x
    return build.reduce(Op.REDUCE_SUM, x, range(x.ndim))


def kept_dims(ndim, reduced):
    return tuple(d for d in range(ndim) if d not in reduced)


# -- elementwise partial derivatives: partials[op](instr) -> [d out / d operand_i or None]

partials = {}


def _balanced_eq(x, out, other):
    """JAX's tie rule for max/min: x's share of the slope, 1 where x alone is the
    result, 1/2 where both operands are (jax.lax.max's _balanced_eq)."""
    mine = as_float(compare(x, out, "EQ"), out)
    both = select(compare(other, out, "EQ"), full_like(out, 2), full_like(out, 1))
    return div(mine, both)


def _max_min_partials(instr):
    x, y = instr.operands
    return [_balanced_eq(x, instr, y), _balanced_eq(y, instr, x)]


partials[Op.MAX] = _max_min_partials
partials[Op.MIN] = _max_min_partials


def _unary(fn):
    def rule(instr):
        return [fn(instr.operands[0], instr)]
    return rule


def _zero_slope(instr):
    return [None] * len(instr.operands)


for _op in (Op.SIGN, Op.FLOOR, Op.CEIL, Op.ROUND):
    partials[_op] = _zero_slope


def _one_plus(x, y):
    return build.binary(Op.ADD, full_like(x, 1), y)


def _one_minus(x, y):
    return build.binary(Op.SUB, full_like(x, 1), y)


partials[Op.NEG] = _unary(lambda x, y: full_like(x, -1))
# abs: slope +1 at 0, as JAX (select(x >= 0, g, -g))
partials[Op.ABS] = _unary(lambda x, y: select(compare(x, zeros_like(x), "GE"),
                                              full_like(x, 1), full_like(x, -1)))
partials[Op.EXP] = _unary(lambda x, y: y)
partials[Op.EXPM1] = _unary(lambda x, y: _one_plus(x, y))
partials[Op.LOG] = _unary(lambda x, y: div(full_like(x, 1), x))
partials[Op.LOG1P] = _unary(lambda x, y: div(full_like(x, 1), _one_plus(x, x)))
partials[Op.SQRT] = _unary(lambda x, y: div(full_like(x, 0.5), y))
partials[Op.RSQRT] = _unary(lambda x, y: mul(full_like(x, -0.5), div(y, x)))
partials[Op.TANH] = _unary(lambda x, y: _one_minus(x, mul(y, y)))
partials[Op.LOGISTIC] = _unary(lambda x, y: mul(y, _one_minus(x, y)))
partials[Op.SIN] = _unary(lambda x, y: build.unary(Op.COS, x))
partials[Op.COS] = _unary(lambda x, y: neg(build.unary(Op.SIN, x)))
partials[Op.TAN] = _unary(lambda x, y: _one_plus(x, mul(y, y)))


def _add_partials(instr):
    return [full_like(instr, 1), full_like(instr, 1)]


def _sub_partials(instr):
    return [full_like(instr, 1), full_like(instr, -1)]


def _mul_partials(instr):
    x, y = instr.operands
    return [y, x]


def _div_partials(instr):
    x, y = instr.operands
    return [div(full_like(y, 1), y), neg(div(instr, y))]


def _rem_partials(instr):
    # rem = x - y * trunc(x / y): slope 1 in x, -trunc(x / y) in y (as JAX)
    x, y = instr.operands
    quotient = div(x, y)
    truncated = mul(build.unary(Op.SIGN, quotient),
                    build.unary(Op.FLOOR, build.unary(Op.ABS, quotient)))
    return [full_like(x, 1), neg(truncated)]


def _pow_partials(instr):
    # As jax.lax.pow with a float exponent: y * x^(y-1) (NaN at 0 ** 0, as JAX), and
    # log(x) * x^y with log(0) read as log(1).
    x, y = instr.operands
    x_slope = mul(y, build.binary(Op.POW, x, build.binary(Op.SUB, y, full_like(y, 1))))
    safe_x = select(compare(x, zeros_like(x), "EQ"), full_like(x, 1), x)
    y_slope = mul(build.unary(Op.LOG, safe_x), instr)
    return [x_slope, y_slope]


def _atan2_partials(instr):
    # atan2(x, y) = atan(x / y): slopes y / (x^2 + y^2) and -x / (x^2 + y^2)
    x, y = instr.operands
    norm = build.binary(Op.ADD, mul(x, x), mul(y, y))
    return [div(y, norm), neg(div(x, norm))]


partials[Op.ADD] = _add_partials
partials[Op.SUB] = _sub_partials
partials[Op.MUL] = _mul_partials
partials[Op.DIV] = _div_partials
partials[Op.REM] = _rem_partials
partials[Op.POW] = _pow_partials
partials[Op.ATAN2] = _atan2_partials


def clamp_as_max_min(instr):
    """clamp(lo, x, hi) spelled as the min(max(x, lo), hi) the interpreter defines it
    as, so its derivative follows np.clip's (and jnp.clip's) tie rule."""
    lo, x, hi = instr.operands
    lo, hi = (b if b.shape == x.shape else broadcast_like(b, x, ()) for b in (lo, hi))
    return build.binary(Op.MIN, build.binary(Op.MAX, x, lo), hi)


# -- reductions and scans

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
    product, ties in an extremum) are not a scan themselves; the n x n Jacobian is.
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
        # prod_{k<j} x_k * prod_{j<k<=i} x_k: a cumprod of the row with x_j masked to 1
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


# -- gather and scatter

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


# -- differentiating through an equivalent expression

def subgraph_order(leaves, roots):
    """The instructions between `leaves` (excluded) and `roots`, operands first."""
    order, seen = [], set(leaves)
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in seen:
                continue
            if expanded:
                seen.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((o, False) for o in reversed(node.operands) if o not in seen)
    return order


def fusion_body_inline(instr):
    """A fusion's results computed by its body's instructions on its operands."""
    from jitlib.transforms.core import inline   # core imports the tracer; keep it lazy
    return inline(instr.attrs["body"], list(instr.operands))


# op -> fn(instr) -> [instrs computing the same values from instr.operands]
expansions = {
    Op.CLAMP: lambda instr: [clamp_as_max_min(instr)],
    Op.FUSION: fusion_body_inline,
}
