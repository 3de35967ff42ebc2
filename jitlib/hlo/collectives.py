"""What a collective means: a module run over the N devices of one named axis.

`evaluate(module, args_per_device, axis_name)` is the reference for pmap'ed programs,
as `interpreter.evaluate` is for one device. It runs the per-device program for all
devices in lockstep, instruction by instruction: an ordinary op is the interpreter's
rule applied to each device's operands; a collective on the axis takes every device's
operand at once and gives each device its result.

Order is fixed so results are deterministic: all_reduce and reduce_scatter fold device
0, then 1, ... left to right (((x0 + x1) + x2) + ...), in the operand's dtype. A
collective over another axis name, or one inside a loop or branch region, is refused
(regions run per device, and their collectives would need the lockstep inside them).
"""
import numpy as np

from jitlib.errors import InterpretError, UnsupportedError
from jitlib.hlo import interpreter as I
from jitlib.hlo.ir import regions
from jitlib.hlo.ops import COLLECTIVE, Op

_FOLD = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _fold(values, reduction):
    out = values[0]
    for v in values[1:]:
        out = _FOLD[reduction](out, v)
    return out


def _all_reduce(instr, xs):
    total = _fold(xs, instr.attrs["reduction"]).astype(instr.dtype, copy=False)
    return [total] * len(xs)


def _all_gather(instr, xs):
    return [np.stack(xs, axis=instr.attrs["axis"])] * len(xs)


def _reduce_scatter(instr, xs):
    total = _fold(xs, "sum").astype(instr.dtype, copy=False)
    axis = instr.attrs["axis"]
    return [np.take(total, k, axis=axis) for k in range(len(xs))]


def _collective_permute(instr, xs):
    out = [np.zeros(instr.shape, instr.dtype) for _ in xs]
    for src, dst in instr.attrs["pairs"]:
        out[dst] = xs[src]
    return out


def _axis_index(instr, n):
    return [np.array(k, np.int32) for k in range(n)]


# rule(instr, [device 0's operand, device 1's, ...]) -> [each device's result]
combine_rules = {Op.ALL_REDUCE: _all_reduce, Op.ALL_GATHER: _all_gather,
                 Op.REDUCE_SCATTER: _reduce_scatter,
                 Op.COLLECTIVE_PERMUTE: _collective_permute}
assert set(combine_rules) | {Op.AXIS_INDEX} == COLLECTIVE


def has_collectives(module):
    """Whether `module` (or any region in it) holds a collective."""
    return any(i.op in COLLECTIVE or any(has_collectives(r) for r in regions(i))
               for i in module.instructions)


def check_axis(module, axis_name, n):
    """Refuse a module whose collectives name another axis or size, or sit in regions."""
    for instr in module.instructions:
        if instr.op in COLLECTIVE:
            name, size = instr.attrs["axis_name"], instr.attrs["axis_size"]
            if name != axis_name:
                raise InterpretError(f"unbound axis name: {name!r} (this program runs "
                                     f"over axis {axis_name!r})", location=instr.loc)
            if size != n:
                raise InterpretError(f"{instr.op} over axis {name!r} expects {size} "
                                     f"devices, the program runs on {n}",
                                     location=instr.loc)
        elif any(has_collectives(r) for r in regions(instr)):
            raise UnsupportedError(f"a collective inside a {instr.op} region is not "
                                 "supported yet", location=instr.loc,
                                 hint="move the collective out of the loop or branch")


def evaluate(module, args_per_device, axis_name):
    """Run `module` on every device: `args_per_device[k]` are device k's arguments;
    returns each device's results (fresh arrays)."""
    n = len(args_per_device)
    check_axis(module, axis_name, n)
    envs = [dict(zip(module.params, I._check_args(module, list(args))))
            for args in args_per_device]
    with np.errstate(all="ignore"):
        for instr in module.instructions:
            if instr in envs[0]:
                continue
            if instr.op is Op.AXIS_INDEX:
                outs = _axis_index(instr, n)
            elif instr.op in COLLECTIVE:
                outs = combine_rules[instr.op](instr, [env[instr.operands[0]]
                                                       for env in envs])
            else:
                outs = [I._apply(instr, [env[o] for o in instr.operands], module)
                        for env in envs]
            for env, out in zip(envs, outs):
                env[instr] = out
    return [[np.array(env[r], order="C") for r in module.results] for env in envs]
