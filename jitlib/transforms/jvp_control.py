"""Forward-mode rules for loops and conditionals (registered in jvp.jvp_rules).

As in JAX, a loop's tangents ride in its carry: the new loop carries (primals...,
tangents of the active carries...), its body is the jvp of the old body, and its
condition looks at the primals only. A carry is active when a tangent comes in with it
or the body makes it depend on an active carry (a fixed point: a carry that starts
without a tangent may pick one up on the first trip). A conditional becomes a
conditional over the same index whose branches are the jvps of the old ones.

The new instruction recomputes the primals beside the original one, which the rest of
the program keeps using; the primal halves are equal by construction.
"""
from jitlib.hlo import build
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util as U
from jitlib.transforms import regions as R


def _active_carries(body, start):
    """The smallest set of float carries holding `start` that the body maps into itself."""
    active = set(start)
    while True:
        live = R.reached(body, [body.params[j] for j in active])
        grown = active | {j for j, r in enumerate(body.results)
                          if r in live and U.is_differentiable(r)}
        if grown == active:
            return sorted(active)
        active = grown


def _shaped_like(instr, tangents):
    """One tangent per value of `instr`: a tuple for a multi-output op."""
    return tuple(tangents) if is_multi_output(instr) else tangents[0]


def while_rule(instr, tangents):
    from jitlib.transforms.jvp import jvp_module
    carry, cond, body = instr.operands, instr.attrs["cond"], instr.attrs["body"]
    n = len(carry)
    active = _active_carries(body, [j for j, t in enumerate(tangents)
                                    if t is not None and U.is_differentiable(carry[j])])
    if not active:
        return None
    pushed = jvp_module(body, active)
    new_body = Module("body", pushed.params,
                      list(body.results) + [pushed.results[n + j] for j in active])
    types = R.types_of(new_body.params)
    new_cond = R.region("cond", types, lambda ps: R.inline(cond, ps[:n]))
    operands = list(carry) + [U.instantiate(tangents[j], carry[j]) for j in active]
    outs = R.loop(operands, new_cond, new_body, instr.attrs.get("trip_count"))
    out = [None] * n
    for pos, j in enumerate(active):
        out[j] = outs[n + pos]
    return _shaped_like(instr, out)


def conditional_rule(instr, tangents):
    from jitlib.transforms.jvp import jvp_module
    index, *args = instr.operands
    branches = instr.attrs["branches"]
    active = [j for j, t in enumerate(tangents[1:]) if t is not None]
    results = branches[0].results
    n = len(results)
    floats = [i for i, r in enumerate(results) if U.is_differentiable(r)]
    new_branches = []
    for branch in branches:
        pushed = jvp_module(branch, active)
        new_branches.append(Module(branch.name, pushed.params, list(branch.results)
                                   + [pushed.results[n + i] for i in floats]))
    operands = [index] + list(args) + [tangents[1 + j] for j in active]
    new = build.make(Op.CONDITIONAL, operands, dict(branches=tuple(new_branches)))
    outs = R.values(new, n + len(floats))
    out = [None] * n
    for pos, i in enumerate(floats):
        out[i] = outs[n + pos]
    return _shaped_like(instr, out)


def register(jvp_rules):
    jvp_rules[Op.WHILE] = while_rule
    jvp_rules[Op.CONDITIONAL] = conditional_rule
