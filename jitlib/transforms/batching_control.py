"""Batching rules for loops and conditionals (see `batching.py` for the conventions).

A conditional whose index is the same for every example stays a conditional, over
batched branches. When the index varies per example, each example may take another
branch, so (as JAX does) every branch runs on the whole batch and a select per example
keeps the one its index picks.

A loop batches its body where the carry varies per example. A carry the body makes
depend on a batched one is batched from the start (a fixed point). When the condition
is the same for every example, the loop keeps its shape. When it varies, the loop runs
while any example's condition holds, and a trip updates only the examples whose
condition still holds (a select on the carry); the others keep their final values.
"""
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import is_multi_output
from jitlib.hlo.ops import Op
from jitlib.transforms import regions as R
from jitlib.transforms.batching import batch_into, batch_rules, ensure_batched


def _batched_type(x, flag, size):
    return ((size,) + x.shape if flag else x.shape), x.dtype


def _region_types(params, flags, size):
    return [_batched_type(p, f, size) for p, f in zip(params, flags)]


def _batched_region(module, flags, size, batch_out=None, name=None):
    """`module` on parameters batched where `flags` says: (new Module, which results
    are batched). `batch_out`: results to batch even where they do not vary (a loop's
    carry and a conditional's results must keep one type)."""
    out_flags = []

    def body(ps):
        values = batch_into(module, ps, flags, size)
        wanted = batch_out or [False] * len(values)
        out_flags[:] = [b or w for (_, b), w in zip(values, wanted)]
        return [ensure_batched(v, b, size) if w else v for (v, b), w in zip(values, wanted)]
    new = R.region(name or module.name, _region_types(module.params, flags, size), body)
    return new, out_flags


def _per_example(pred, like):
    """A per-example flag (size,) broadcast over a batched value `like`."""
    return build.broadcast_in_dim(pred, like.shape, (0,))


def _shaped(instr, outs):
    return tuple(outs) if is_multi_output(instr) else outs[0]


# -- conditional

def _conditional(instr, args, flags, size):
    index, *operands = args
    arg_flags = list(flags[1:])
    branches = instr.attrs["branches"]
    n = len(branches[0].results)
    if not flags[0]:
        new_branches = tuple(_batched_region(b, arg_flags, size, [True] * n)[0]
                             for b in branches)
        new = build.make(Op.CONDITIONAL, [index] + operands, dict(branches=new_branches))
        return _shaped(instr, R.values(new, n))
    results = []
    for branch in branches:
        values = batch_into(branch, operands, arg_flags, size)
        results.append([ensure_batched(v, b, size) for v, b in values])
    if index.dtype == dtypes.BOOL:
        picks = [None, index]
    else:   # as lax.switch: an index out of range picks the nearest branch
        last = len(branches) - 1
        clamped = build.clamp(build.full(0, (), index.dtype), index,
                              build.full(last, (), index.dtype))
        picks = [None] + [build.compare(clamped, build.full(k, (size,), index.dtype), "EQ")
                          for k in range(1, len(branches))]
    outs = results[0]
    for pick, candidate in zip(picks[1:], results[1:]):
        outs = [build.select(_per_example(pick, o), c, o) for o, c in zip(outs, candidate)]
    return _shaped(instr, outs)


# -- while

def _while(instr, args, flags, size):
    cond, body = instr.attrs["cond"], instr.attrs["body"]
    n = len(args)
    carried = list(flags)
    while True:   # a carry the body makes vary per example varies from the start
        _, out_flags = _batched_region(body, carried, size)
        grown = [a or b for a, b in zip(carried, out_flags)]
        if grown == carried:
            break
        carried = grown
    new_cond, (pred_varies,) = _batched_region(cond, carried, size)
    if pred_varies:
        carried = [True] * n
    carry = [ensure_batched(a, f, size) if c else a
             for a, f, c in zip(args, flags, carried)]
    trips = instr.attrs.get("trip_count")
    if pred_varies:
        outs = R.loop(carry, _any_cond(cond, size), _masked_body(cond, body, size), trips)
    else:
        new_body, _ = _batched_region(body, carried, size, carried)
        outs = R.loop(carry, new_cond, new_body, trips)
    return _shaped(instr, [ensure_batched(o, c, size) for o, c in zip(outs, carried)])


def _any_cond(cond, size):
    """The condition of a loop over examples whose conditions differ: any holds."""
    every = [True] * len(cond.params)

    def any_holds(ps):
        (pred,) = _batched_region_values(cond, ps, size)
        return [build.reduce(Op.REDUCE_OR, pred, (0,))]
    return R.region("cond", _region_types(cond.params, every, size), any_holds)


def _masked_body(cond, body, size):
    """A trip that updates only the examples whose condition holds."""
    every = [True] * len(body.params)

    def masked(ps):
        (pred,) = _batched_region_values(cond, ps, size)
        new = _batched_region_values(body, ps, size)
        return [build.select(_per_example(pred, old), value, old)
                for value, old in zip(new, ps)]
    return R.region("body", _region_types(body.params, every, size), masked)


def _batched_region_values(module, params, size):
    """`module` inlined on all-batched `params`, its values all batched."""
    values = batch_into(module, params, [True] * len(params), size)
    return [ensure_batched(v, b, size) for v, b in values]


def register():
    batch_rules[Op.WHILE] = _while
    batch_rules[Op.CONDITIONAL] = _conditional
