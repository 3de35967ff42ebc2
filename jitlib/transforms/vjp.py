"""Reverse mode: a Module -> Module transform pulling cotangents back to the inputs.

`vjp_module(module, wrt, seeded)` returns a Module taking (primals..., one cotangent
per seeded result) and returning (results..., one cotangent per parameter in `wrt`).
Its forward half is the original instructions (interned, so the very same objects);
its backward half walks them in reverse, accumulating each value's cotangent by
addition, and asks each instruction's rule for its operands' shares:
`vjp_rules[op](instr, cotangent) -> [share per operand]`, where a share is a
cotangent, None (no share), or a function building the cotangent, called only when
the operand needs one (a constant weight of a matmul gets no cotangent built).

Rules emit ordinary IR ops, so the result can be differentiated again: grad of grad,
and jvp of grad (Hessian-vector products). Only instructions that depend on a
differentiated parameter are visited; everything else is a constant.
"""
import itertools

from jitlib.hlo import build
from jitlib.hlo.ir import Module, is_multi_output, result_module
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_complex as C
from jitlib.transforms import ad_elementwise as E
from jitlib.transforms import ad_fft as F
from jitlib.transforms import ad_expand as X
from jitlib.transforms import ad_indexing as I
from jitlib.transforms import ad_linalg as LA
from jitlib.transforms import ad_reductions as R
from jitlib.transforms import ad_util as U

vjp_rules = {}
_cotangent_ids = itertools.count()


def vjp_module(module, wrt=None, seeded=None):
    """The reverse-mode derivative of `module`: cotangents of the parameters `wrt`
    (indices; default every floating-point one) from cotangents of the results
    `seeded` (indices; default every floating-point one)."""
    params, results = module.params, module.results
    wrt = [i for i, p in enumerate(params) if U.is_differentiable(p)] if wrt is None else wrt
    if seeded is None:
        seeded = [i for i, r in enumerate(results) if U.is_differentiable(r)]
    k = next(_cotangent_ids)
    seeds = [build.parameter(len(params) + j, results[i].shape, results[i].dtype,
                             f"ct{i}_{k}")
             for j, i in enumerate(seeded)]
    cotangents = {}
    for i, seed in zip(seeded, seeds):
        _accumulate(cotangents, results[i], seed)
    live = _reaching(module.instructions, {params[i] for i in wrt})
    pull_back(module.instructions, live, cotangents)
    grads = [U.instantiate(cotangents.get(params[i]), params[i]) for i in wrt]
    return Module(f"vjp_{module.name}", params + tuple(seeds), results + tuple(grads))


def _reaching(order, sources):
    """The instructions of `order` that depend on one of `sources`."""
    live = set(sources)
    for instr in order:
        if any(o in live for o in instr.operands):
            live.add(instr)
    return live


def _accumulate(cotangents, instr, ct):
    if ct is not None:
        cotangents[instr] = U.add_any(cotangents.get(instr), ct)


def pull_back(order, live, cotangents):
    """Propagate `cotangents` (instr -> cotangent) backwards through `order`, visiting
    only the instructions in `live`."""
    for instr in reversed(order):
        if instr.op is Op.PARAMETER or instr not in live:
            continue
        ct = cotangents.get(instr)
        if ct is None:
            continue
        rule = vjp_rules.get(instr.op)
        if rule is None:
            raise U.missing_rule("VJP", instr)
        # derivative instructions carry the line of the instruction they differentiate
        with build.locations(lambda: instr.loc):
            shares = rule(instr, ct)
            for operand, share in zip(instr.operands, shares):
                if operand in live and share is not None:
                    if callable(share):
                        share = share()
                    if is_multi_output(operand):
                        _accumulate_output(cotangents, operand, instr.attrs["index"], share)
                    elif U.is_differentiable(operand):
                        _accumulate(cotangents, operand, share)


def _accumulate_output(cotangents, multi, index, ct):
    """A multi-output op's (fusion, loop, conditional) cotangent is a list, one entry
    per value it gives."""
    slots = cotangents.setdefault(multi, [None] * len(result_module(multi).results))
    slots[index] = U.add_any(slots[index], ct)


# -- elementwise: operand cotangent = cotangent * d out / d operand

def _by_partials(instr, ct):
    return [None if slope is None else U.mul(ct, slope)
            for slope in E.partials[instr.op](instr)]


for _op in E.partials:
    vjp_rules[_op] = _by_partials


def _abs(instr, ct):
    # |z| is not holomorphic: the transpose of its JVP (ad_complex.py)
    if C.is_complex_abs(instr):
        return [C.abs_vjp(instr, ct)]
    return _by_partials(instr, ct)


vjp_rules[Op.ABS] = _abs
vjp_rules.update(C.VJPS)   # real, imag, conj, complex: transposes of linear maps
vjp_rules[Op.FFT] = F.fft_vjp


def _select(instr, ct):
    pred = instr.operands[0]
    zeros = U.zeros_like(ct)
    return [None, U.select(pred, ct, zeros), U.select(pred, zeros, ct)]


vjp_rules[Op.SELECT] = _select


def _convert(instr, ct):
    return [build.convert(ct, instr.operands[0].dtype)]


vjp_rules[Op.CONVERT] = _convert


# -- data movement: each rule is the transpose of a linear map

def _broadcast_in_dim(instr, ct):
    (x,) = instr.operands
    dims = instr.attrs["dims"]
    new = [d for d in range(instr.ndim) if d not in dims]
    stretched = [out_d for size, out_d in zip(x.shape, dims) if size != instr.shape[out_d]]
    summed = build.reduce(Op.REDUCE_SUM, ct, new + stretched) if new or stretched else ct
    return [build.reshape(summed, x.shape)]


def _reshape(instr, ct):
    return [build.reshape(ct, instr.operands[0].shape)]


def _transpose(instr, ct):
    perm = instr.attrs["perm"]
    return [build.transpose(ct, [perm.index(d) for d in range(len(perm))])]


def _slice(instr, ct):
    (x,) = instr.operands
    a = instr.attrs
    if 0 in instr.shape:
        return [U.zeros_like(x)]
    # spread the slice back out: the gaps between strided elements, then the borders
    high = [d - s - (n - 1) * st - 1
            for d, s, n, st in zip(x.shape, a["start"], instr.shape, a["strides"])]
    interior = [st - 1 for st in a["strides"]]
    return [build.pad(ct, U.scalar(0, ct.dtype), a["start"], high, interior)]


def _pad(instr, ct):
    x, value = instr.operands
    a = instr.attrs
    # undo the borders (a negative border comes back as zeros), then drop the interior
    unpadded = build.pad(ct, U.scalar(0, ct.dtype), [-lo for lo in a["low"]],
                         [-hi for hi in a["high"]])
    ct_x = build.slice(unpadded, [0] * x.ndim, unpadded.shape,
                       [it + 1 for it in a["interior"]])
    every = range(ct.ndim)
    ct_value = build.binary(Op.SUB, build.reduce(Op.REDUCE_SUM, ct, every),
                            build.reduce(Op.REDUCE_SUM, ct_x, every))
    return [ct_x, ct_value]


def _concatenate(instr, ct):
    dim = instr.attrs["dim"]
    shares, offset = [], 0
    for x in instr.operands:
        start, limit = [0] * ct.ndim, list(ct.shape)
        start[dim], limit[dim] = offset, offset + x.shape[dim]
        shares.append(build.slice(ct, start, limit))
        offset += x.shape[dim]
    return shares


def _reverse(instr, ct):
    return [build.reverse(ct, instr.attrs["dims"])]


def _dynamic_slice(instr, ct):
    x, *starts = instr.operands
    return [build.dynamic_update_slice(U.zeros_like(x), ct, starts)] + [None] * len(starts)


def _dynamic_update_slice(instr, ct):
    x, update, *starts = instr.operands
    ct_x = build.dynamic_update_slice(ct, U.zeros_like(update), starts)
    ct_update = build.dynamic_slice(ct, starts, update.shape)
    return [ct_x, ct_update] + [None] * len(starts)


def _gather(instr, ct):
    x, idx = instr.operands
    axis = instr.attrs["axis"]
    # gather clamps its indices, scatter drops the out-of-range ones: clamp first
    safe = I.clamped_indices(idx, x.shape[axis])
    return [build.scatter(U.zeros_like(x), safe, ct, axis, "add"), None]


vjp_rules.update({
    Op.BROADCAST_IN_DIM: _broadcast_in_dim, Op.RESHAPE: _reshape, Op.TRANSPOSE: _transpose,
    Op.SLICE: _slice, Op.PAD: _pad, Op.CONCATENATE: _concatenate, Op.REVERSE: _reverse,
    Op.DYNAMIC_SLICE: _dynamic_slice, Op.DYNAMIC_UPDATE_SLICE: _dynamic_update_slice,
    Op.GATHER: _gather,
})


def _scatter(instr, ct):
    x, idx, upd = instr.operands
    axis, mode = instr.attrs["axis"], instr.attrs["mode"]
    n = x.shape[axis]
    if mode == "mul":
        return [lambda: build.scatter(ct, idx, upd, axis, "mul"), None,
                _scatter_mul_updates(instr)]
    if mode in ("min", "max"):
        x_share, upd_share = I.scatter_extremum_shares(instr)
        return [U.mul(ct, x_share), None,
                lambda: U.mul(_gathered(ct, idx, axis, upd), upd_share)]
    if mode == "add":
        return [ct, None, lambda: _kept_updates(ct, idx, upd, axis, I.in_range(idx, n))]
    # set: overwritten positions owe nothing to x; only the winning update counts
    return [lambda: build.scatter(ct, idx, U.zeros_like(upd), axis, "set"), None,
            lambda: _kept_updates(ct, idx, upd, axis, I.scatter_set_winners(idx, n))]


def _kept_updates(ct, idx, upd, axis, keeps):
    """ct read back at each update's position where `keeps` (one flag per index)
    holds, 0 for the updates the scatter dropped or overwrote."""
    kept = I.index_mask_for_updates(keeps, upd, axis)
    return U.select(kept, _gathered(ct, idx, axis, upd), U.zeros_like(upd))


def _gathered(ct, idx, axis, upd):
    """ct read back at each update's position (any value where it was dropped)."""
    n = ct.shape[axis]
    if n == 0:
        return U.zeros_like(upd)
    return build.gather(ct, I.clamped_indices(idx, n), axis)


vjp_rules[Op.SCATTER] = _scatter


def _scatter_mul_updates(instr):
    def share():
        raise I.scatter_mul_error(instr)
    return share


# -- contraction

def _dot_general(instr, ct):
    lhs, rhs = instr.operands
    a = instr.attrs
    lhs_dims = (a["lhs_batch"], _free(lhs, a["lhs_contract"], a["lhs_batch"]), a["lhs_contract"])
    rhs_dims = (a["rhs_batch"], _free(rhs, a["rhs_contract"], a["rhs_batch"]), a["rhs_contract"])
    nb, nl = len(a["lhs_batch"]), len(lhs_dims[1])
    ct_lhs_free = range(nb, nb + nl)
    ct_rhs_free = range(nb + nl, ct.ndim)
    p = a.get("precision")   # cotangents round as the product does
    return [lambda: _dot_transpose(ct, rhs, lhs_dims, rhs_dims, ct_rhs_free, p),
            lambda: _dot_transpose(ct, lhs, rhs_dims, lhs_dims, ct_lhs_free, p)]


def _free(x, contract, batch):
    return tuple(d for d in range(x.ndim) if d not in contract and d not in batch)


def _dot_transpose(ct, other, own_dims, other_dims, ct_other_free, precision=None):
    """The cotangent of one dot operand ("own"): ct contracted with the other operand
    over the other's free dims, laid out in own's dim order. Of the two operand orders
    the one needing no transpose is used (x^T @ ct for the rhs of a matmul)."""
    own_batch, own_free, own_contract = own_dims
    other_batch, other_free, other_contract = other_dims
    nb = len(own_batch)
    ct_batch, ct_other_free = tuple(range(nb)), tuple(ct_other_free)
    # each order's result lays out the batch dims, then the left operand's remaining
    # dims, then the right's; own's contracted dims come out as other's (sorted)
    remaining = sorted(other_contract)
    from_other = [remaining.index(partner) for partner in other_contract]
    ct_first = _layout(own_dims, nb, list(range(len(own_free))),
                       [len(own_free) + i for i in from_other])
    other_first = _layout(own_dims, nb, [len(own_contract) + m for m in range(len(own_free))],
                          from_other)
    if other_first == sorted(other_first):
        r = build.dot_general(other, ct, other_free, ct_other_free, other_batch, ct_batch,
                              precision=precision)
        return build.transpose(r, other_first)
    r = build.dot_general(ct, other, ct_other_free, other_free, ct_batch, other_batch,
                          precision=precision)
    return build.transpose(r, ct_first)


def _layout(own_dims, nb, free_at, contract_at):
    """For each dim of own, where a dot's result holds it: batch dims first, then own's
    free dims at nb + free_at[m], contracted dims at nb + contract_at[q]."""
    own_batch, own_free, own_contract = own_dims
    source = {d: k for k, d in enumerate(own_batch)}
    source.update((d, nb + at) for d, at in zip(own_free, free_at))
    source.update((d, nb + at) for d, at in zip(own_contract, contract_at))
    return [source[d] for d in range(len(source))]


vjp_rules[Op.DOT_GENERAL] = _dot_general


# -- reductions and scans

def _reduce_sum(instr, ct):
    (x,) = instr.operands
    return [U.broadcast_like(ct, x, U.kept_dims(x.ndim, instr.attrs["dims"]))]


def _reduce_with_slope(slope_fn):
    def rule(instr, ct):
        (x,) = instr.operands
        spread = U.broadcast_like(ct, x, U.kept_dims(x.ndim, instr.attrs["dims"]))
        return [U.mul(spread, slope_fn(instr))]
    return rule


def _cumsum(instr, ct):
    a = instr.attrs
    return [build.cumulative(Op.CUMSUM, ct, a["axis"], not a["reverse"])]


def _scan(instr, ct):
    a = instr.attrs
    return [R.apply_scan_matrix(R.scan_matrix(instr), ct, instr, a["axis"], a["reverse"],
                                cotangent=True)]


vjp_rules[Op.REDUCE_SUM] = _reduce_sum
vjp_rules[Op.REDUCE_PROD] = _reduce_with_slope(R.reduce_prod_slope)
vjp_rules[Op.REDUCE_MAX] = _reduce_with_slope(R.extremum_share)
vjp_rules[Op.REDUCE_MIN] = _reduce_with_slope(R.extremum_share)
vjp_rules[Op.CUMSUM] = _cumsum
for _op in (Op.CUMPROD, Op.CUMMAX, Op.CUMMIN):
    vjp_rules[_op] = _scan


# -- ops differentiated through an equivalent expression (clamp, fusion)

def _expanded(instr, ct):
    outs = X.expansions[instr.op](instr)
    cts = ct if isinstance(ct, list) else [ct]
    local = {}
    for out, c in zip(outs, cts):
        _accumulate(local, out, c)
    order = X.subgraph_order(instr.operands, outs)
    live = _reaching(order, {o for o in instr.operands if U.is_differentiable(o)})
    live.update(o for o in instr.operands if U.is_differentiable(o))
    pull_back(order, live, local)
    # an operand used twice (clamp(x, x, x)) has one total: give it to the first use
    first_use = {o: i for i, o in reversed(list(enumerate(instr.operands)))}
    return [local.get(o) if first_use[o] == i else None
            for i, o in enumerate(instr.operands)]


def _get_output(instr, ct):
    return [ct]     # pull_back files it under the fusion's result `index`


for _op in X.expansions:
    vjp_rules[_op] = _expanded
vjp_rules[Op.GET_OUTPUT] = _get_output


# -- linear algebra: JAX's formulas (ad_linalg.py)

vjp_rules.update(LA.VJP)


# -- loops and conditionals: their rules live in vjp_control.py

from jitlib.transforms import ad_collectives  # noqa: E402

vjp_rules.update({op: ad_collectives.collective_vjp for op in ad_collectives.LINEAR})

from jitlib.transforms import vjp_control  # noqa: E402  (imports this module's vjp_module)

vjp_control.register(vjp_rules)
