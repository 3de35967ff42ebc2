"""Reverse-mode rules for loops and conditionals (registered in vjp.vjp_rules).

A loop with a known trip count T (fori_loop with int bounds, scan) is pulled back the
way JAX pulls back a scan: a forward loop saves, at the start of each trip t, the carry
values the backward pass reads into stacked buffers of T rows; a backward loop then
runs t = T-1 down to 0, each trip applying the vjp of the body, evaluated at the saved
carry of trip t, to the carry's cotangent. Only what the body's vjp actually reads is
saved, and a carry the body passes through unchanged (a captured weight, scan's xs) is
one value for every trip, so it is passed to the backward loop once, not stacked. A
scan's ys buffer is written by a scatter whose vjp needs only its indices, so it is not
saved either.

The saving loop recomputes the forward pass beside the original loop, whose values the
rest of the program keeps using.

A loop with no known trip count cannot be reversed without recording how many trips it
ran (JAX refuses too): that is an error at the user's line. A conditional is pulled
back by a conditional over the same index whose branches are the vjps of the old ones.
"""
from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util as U
from jitlib.transforms import regions as R

INDEX = dtypes.INDEX


def _listed(ct, n):
    return list(ct) if isinstance(ct, list) else [ct] + [None] * (n - 1)


def _no_trip_count(instr):
    return errors.UnsupportedError(
        "reverse-mode differentiation does not work for a while_loop, whose number of "
        "trips is known only when it runs (jax.lax.while_loop has the same limit)",
        location=instr.loc,
        hint="write the loop as fori_loop with int bounds, or as scan: their trip count "
             "is known, so grad can run them backwards; jvp (forward mode) works for any "
             "while_loop")


def while_rule(instr, ct):
    trips = instr.attrs.get("trip_count")
    if trips is None:
        raise _no_trip_count(instr)
    from jitlib.transforms.vjp import vjp_module
    carry, body = instr.operands, instr.attrs["body"]
    n = len(carry)
    cts = _listed(ct, n)
    floats = [j for j in range(n) if U.is_differentiable(carry[j])]
    if trips == 0:     # the loop is the identity
        return [cts[j] if j in floats else None for j in range(n)]
    pulled = vjp_module(body, floats, floats)
    step = Module("body_vjp", pulled.params, pulled.results[n:])
    # (a module lists every parameter among its instructions: look at what is read)
    used = set(step.results).union(*(i.operands for i in step.instructions))
    needed = [j for j in range(n) if body.params[j] in used]
    passed = [j for j in needed if body.results[j] is body.params[j]]
    saved = [j for j in needed if j not in passed]
    stacks = _saving_loop(instr, saved, trips)
    outs = _backward_loop(instr, step, floats, cts, passed, saved, stacks, trips)
    shares = [None] * n
    for pos, j in enumerate(floats):
        shares[j] = outs[pos]
    return shares


def _counter(value=0):
    return U.scalar(value, INDEX)


def _saving_loop(instr, saved, trips):
    """The loop `instr` run again, saving carries `saved` at the start of each trip:
    one stack of `trips` rows per saved carry."""
    carry, body = instr.operands, instr.attrs["body"]
    n = len(carry)
    stack_types = [((trips,) + carry[j].shape, carry[j].dtype) for j in saved]

    def step(ps):
        values, k, stacks = ps[:n], ps[n], ps[n + 1:]
        written = []
        for j, stack in zip(saved, stacks):
            row = build.reshape(values[j], (1,) + values[j].shape)
            starts = [k] + [_counter()] * values[j].ndim
            written.append(build.dynamic_update_slice(stack, row, starts))
        return R.inline(body, values) + [U.add_any(k, _counter(1))] + written

    types = R.types_of(carry) + [((), INDEX)] + stack_types
    init = list(carry) + [_counter()] + [build.full(0, s, d) for s, d in stack_types]
    outs = R.loop(init, R.counted_cond(types, trips, counter=n),
                  R.region("save_body", types, step), trips)
    return outs[n + 1:]


def _backward_loop(instr, step, floats, cts, passed, saved, stacks, trips):
    """The cotangents of the float carries before the loop, from `cts` after it."""
    carry, body = instr.operands, instr.attrs["body"]
    m = len(floats)
    consts = [carry[j] for j in passed] + list(stacks)

    def back(ps):
        k, ct_in, held = ps[0], ps[1:1 + m], ps[1 + m:]
        trip = build.binary(Op.SUB, _counter(trips - 1), k)   # trips run backwards
        at = {j: held[pos] for pos, j in enumerate(passed)}
        for j, stack in zip(saved, held[len(passed):]):
            shape = carry[j].shape
            row = build.dynamic_slice(stack, [trip] + [_counter()] * len(shape),
                                      (1,) + shape)
            at[j] = build.reshape(row, shape)
        # a carry the body's vjp never reads: any value of its type will do
        primals = [at[j] if j in at else U.zeros_like(p) for j, p in enumerate(body.params)]
        return [U.add_any(k, _counter(1))] + R.inline(step, primals + list(ct_in)) \
            + list(held)

    types = [((), INDEX)] + R.types_of([carry[j] for j in floats]) + R.types_of(consts)
    init = [_counter()] + [U.instantiate(cts[j], carry[j]) for j in floats] + consts
    outs = R.loop(init, R.counted_cond(types, trips), R.region("vjp_body", types, back),
                  trips)
    return outs[1:1 + m]


def conditional_rule(instr, ct):
    from jitlib.transforms.vjp import vjp_module
    index, *args = instr.operands
    branches = instr.attrs["branches"]
    results = branches[0].results
    n = len(results)
    cts = _listed(ct, n)
    seeded = [i for i, r in enumerate(results) if U.is_differentiable(r)]
    wrt = [j for j, a in enumerate(args) if U.is_differentiable(a)]
    if not wrt:
        return [None] * len(instr.operands)
    new_branches = []
    for branch in branches:
        pulled = vjp_module(branch, wrt, seeded)
        new_branches.append(Module(branch.name, pulled.params, pulled.results[n:]))
    seeds = [U.instantiate(cts[i], results[i]) for i in seeded]
    new = build.make(Op.CONDITIONAL, [index] + list(args) + seeds,
                     dict(branches=tuple(new_branches)))
    outs = R.values(new, len(wrt))
    shares = [None] * len(instr.operands)
    for pos, j in enumerate(wrt):
        shares[1 + j] = outs[pos]
    return shares


def register(vjp_rules):
    vjp_rules[Op.WHILE] = while_rule
    vjp_rules[Op.CONDITIONAL] = conditional_rule
