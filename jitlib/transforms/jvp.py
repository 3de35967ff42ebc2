"""Forward mode: a Module -> Module transform pushing tangents along with primals.

`jvp_module(module, wrt)` returns a Module taking (primals..., one tangent per
differentiated parameter) and returning (results..., one tangent per result). The
primal instructions are the original ones (instructions are interned, so they are the
very same objects); tangent instructions are added beside them.

Tangents are symbolic zeros (None) until a differentiated parameter reaches them, so
constants, captured values and integer values cost nothing. A rule sees the
instruction and its operands' tangents and returns the result's tangent:
`jvp_rules[op](instr, tangents) -> Instr or None`.
"""
import itertools

from jitlib.hlo import build
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_complex as C
from jitlib.transforms import ad_elementwise as E
from jitlib.transforms import ad_expand as X
from jitlib.transforms import ad_indexing as I
from jitlib.transforms import ad_linalg as LA
from jitlib.transforms import ad_reductions as R
from jitlib.transforms import ad_util as U

jvp_rules = {}
_tangent_ids = itertools.count()


def jvp_module(module, wrt=None):
    """The forward-mode derivative of `module` with respect to the parameters `wrt`
    (indices; default: every floating-point parameter)."""
    params = module.params
    wrt = [i for i, p in enumerate(params) if U.is_differentiable(p)] if wrt is None else wrt
    k = next(_tangent_ids)
    tangent_params = [
        build.parameter(len(params) + j, params[i].shape, params[i].dtype,
                        f"{params[i].attrs['name']}_dot{k}")
        for j, i in enumerate(wrt)]
    tangents = {params[i]: t for i, t in zip(wrt, tangent_params)}
    push_forward(module.instructions, tangents)
    out_tangents = [U.instantiate(tangents.get(r), r) for r in module.results]
    return Module(f"jvp_{module.name}", params + tuple(tangent_params),
                  module.results + tuple(out_tangents))


def push_forward(order, tangents):
    """Extend `tangents` (instr -> tangent) over the instructions `order`, in order."""
    for instr in order:
        if instr in tangents:
            continue
        operand_tangents = [tangents.get(o) for o in instr.operands]
        if all(t is None for t in operand_tangents):
            continue
        if not (U.is_differentiable(instr) or is_multi_output(instr)):
            continue    # integer and bool results carry no tangent
        rule = jvp_rules.get(instr.op)
        if rule is None:
            raise U.missing_rule("JVP", instr)
        # derivative instructions carry the line of the instruction they differentiate
        with build.locations(lambda: instr.loc):
            tangent = rule(instr, operand_tangents)
        if tangent is not None:
            tangents[instr] = tangent


# -- elementwise: tangent = sum_i tangent_i * d out / d operand_i

def _by_partials(instr, tangents):
    total = None
    for t, slope in zip(tangents, E.partials[instr.op](instr)):
        if t is not None and slope is not None:
            total = U.add_any(total, U.mul(t, slope))
    return total


for _op in E.partials:
    jvp_rules[_op] = _by_partials


def _abs(instr, tangents):
    # |z| is not holomorphic: no complex partial, a real part of one (ad_complex.py)
    if C.is_complex_abs(instr):
        return C.abs_jvp(instr, tangents[0])
    return _by_partials(instr, tangents)


jvp_rules[Op.ABS] = _abs


def _select(instr, tangents):
    pred, on_true, on_false = instr.operands
    _, t_true, t_false = tangents
    return U.select(pred, U.instantiate(t_true, on_true), U.instantiate(t_false, on_false))


jvp_rules[Op.SELECT] = _select


# -- linear in their floating-point operands: the same op applied to the tangents

def _linear(instr, tangents):
    operands = [U.instantiate(t, o) if U.is_differentiable(o) else o
                for o, t in zip(instr.operands, tangents)]
    return build.make(instr.op, operands, instr.attrs)


for _op in (Op.CONVERT, Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.PAD,
            Op.CONCATENATE, Op.REVERSE, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE,
            Op.GATHER, Op.REDUCE_SUM, Op.CUMSUM, Op.REAL, Op.IMAG, Op.CONJ, Op.COMPLEX, Op.FFT):
    jvp_rules[_op] = _linear


def _scatter(instr, tangents):
    mode = instr.attrs["mode"]
    if mode in ("add", "set"):
        return _linear(instr, tangents)
    x, idx, upd = instr.operands
    t_x, _, t_upd = tangents
    if mode == "mul":
        if t_upd is not None:
            raise I.scatter_mul_error(instr)
        return build.make(instr.op, (t_x, idx, upd), instr.attrs)
    x_share, upd_share = I.scatter_extremum_shares(instr)
    pushed = U.mul(U.instantiate(t_x, x), x_share)
    if t_upd is None:
        return pushed
    return build.scatter(pushed, idx, U.mul(t_upd, upd_share), instr.attrs["axis"], "add")


jvp_rules[Op.SCATTER] = _scatter


def _dot_general(instr, tangents):
    lhs, rhs = instr.operands
    t_lhs, t_rhs = tangents
    a = instr.attrs
    dims = (a["lhs_contract"], a["rhs_contract"], a["lhs_batch"], a["rhs_batch"])
    p = dict(precision=a.get("precision"))   # tangents round as the product does
    total = None
    if t_lhs is not None:
        total = build.dot_general(t_lhs, rhs, *dims, **p)
    if t_rhs is not None:
        total = U.add_any(total, build.dot_general(lhs, t_rhs, *dims, **p))
    return total


jvp_rules[Op.DOT_GENERAL] = _dot_general


# -- reductions and scans

def _reduce_with_slope(slope_fn):
    def rule(instr, tangents):
        (t,) = tangents
        return build.reduce(Op.REDUCE_SUM, U.mul(t, slope_fn(instr)), instr.attrs["dims"])
    return rule


jvp_rules[Op.REDUCE_PROD] = _reduce_with_slope(R.reduce_prod_slope)
jvp_rules[Op.REDUCE_MAX] = _reduce_with_slope(R.extremum_share)
jvp_rules[Op.REDUCE_MIN] = _reduce_with_slope(R.extremum_share)


def _scan(instr, tangents):
    (t,) = tangents
    a = instr.attrs
    return R.apply_scan_matrix(R.scan_matrix(instr), t, instr, a["axis"], a["reverse"],
                               cotangent=False)


for _op in (Op.CUMPROD, Op.CUMMAX, Op.CUMMIN):
    jvp_rules[_op] = _scan


# -- ops differentiated through an equivalent expression (clamp, fusion)

def _expanded(instr, tangents):
    outs = X.expansions[instr.op](instr)
    local = {o: t for o, t in zip(instr.operands, tangents) if t is not None}
    push_forward(X.subgraph_order(instr.operands, outs), local)
    out_tangents = [U.instantiate(local.get(o), o) for o in outs]
    # a multi-output fusion's tangent is the tuple of its results' tangents
    return tuple(out_tangents) if is_multi_output(instr) else out_tangents[0]


def _get_output(instr, tangents):
    (t,) = tangents
    return t[instr.attrs["index"]] if isinstance(t, tuple) else t


for _op in X.expansions:
    jvp_rules[_op] = _expanded
jvp_rules[Op.GET_OUTPUT] = _get_output


# -- linear algebra: JAX's formulas (ad_linalg.py)

jvp_rules.update(LA.JVP)


# -- loops and conditionals: their rules live in jvp_control.py

from jitlib.transforms import ad_collectives  # noqa: E402

jvp_rules.update({op: ad_collectives.collective_jvp for op in ad_collectives.LINEAR})

from jitlib.transforms import jvp_control  # noqa: E402  (imports this module's jvp_module)

jvp_control.register(jvp_rules)
