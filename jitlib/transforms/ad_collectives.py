"""Derivatives of the collectives, as JAX's for pmap.

Every summing collective is linear, so its JVP is the op on the tangents. Transposes
pair up as in JAX: psum's is psum (each device's cotangent reaches every device's
input), all_gather's is psum_scatter and back, ppermute's is ppermute along the
reversed pairs. pmax/pmin would need a tie rule across devices: refused, as JAX
refuses them under grad.
"""
from jitlib import errors
from jitlib.hlo import build
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util as U


def _refuse_extremum(instr):
    if instr.op is Op.ALL_REDUCE and instr.attrs["reduction"] != "sum":
        raise errors.UnsupportedError(
            f"differentiating p{instr.attrs['reduction']} over axis "
            f"{instr.attrs['axis_name']!r} is not supported", location=instr.loc,
            hint="differentiate through psum or all_gather and reduce on each device")


def collective_jvp(instr, tangents):
    _refuse_extremum(instr)
    return build.make(instr.op, [U.instantiate(tangents[0], instr.operands[0])],
                      instr.attrs)


def collective_vjp(instr, ct):
    _refuse_extremum(instr)
    a = dict(instr.attrs)
    if instr.op is Op.ALL_GATHER:
        return [build.make(Op.REDUCE_SCATTER, [ct], a)]
    if instr.op is Op.REDUCE_SCATTER:
        return [build.make(Op.ALL_GATHER, [ct], a)]
    if instr.op is Op.COLLECTIVE_PERMUTE:
        a["pairs"] = tuple((d, s) for s, d in a["pairs"])
    return [build.make(instr.op, [ct], a)]


LINEAR = (Op.ALL_REDUCE, Op.ALL_GATHER, Op.REDUCE_SCATTER, Op.COLLECTIVE_PERMUTE)
