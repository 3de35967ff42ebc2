"""What the control-flow transforms (jvp_control, vjp_control, batching_control) share:
building a region Module on fresh parameters, inlining a region into the IR being
built, and reading a loop's or conditional's values.

Region parameters get fresh names: instructions are interned, so a new parameter with
the name, index and type of one in the region being transformed would be that very
object, and the region's old instructions would leak into the new one.
"""
import itertools

from jitlib.fusion.rewrite import rebuild
from jitlib.hlo import build
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.transforms import ad_util as U

_ids = itertools.count()


def region(name, types, fn):
    """A Module named `name` on fresh parameters of `types` [(shape, dtype)], whose
    results are `fn(params)` (a list of values built on those parameters)."""
    k = next(_ids)
    params = [build.parameter(i, shape, dtype, f"t{k}_{i}")
              for i, (shape, dtype) in enumerate(types)]
    return Module(name, params, list(fn(params)))


def inline(module, args):
    """The values of `module`'s results with its parameters bound to `args`, built in
    the current IR (the caller's source location applies to the new instructions)."""
    env = dict(zip(module.params, args))
    for instr in module.instructions:
        if instr not in env:
            env[instr] = rebuild(instr, [env[o] for o in instr.operands])
    return [env[r] for r in module.results]


def values(instr, n):
    """The `n` values a loop or conditional gives, in order."""
    if not is_multi_output(instr):
        return [instr]
    return [build.get_output(instr, i) for i in range(n)]


def types_of(xs):
    return [(x.shape, x.dtype) for x in xs]


def loop(carry, cond, body, trip_count=None):
    """A `while` over `carry` (values) with regions `cond` and `body`: its values."""
    attrs = dict(cond=cond, body=body)
    if trip_count is not None:
        attrs["trip_count"] = trip_count
    return values(build.make(Op.WHILE, list(carry), attrs), len(carry))


def counted_cond(types, trips, counter=0):
    """A loop condition over carry `types`: the i64 counter at `counter` is below `trips`."""
    return region("cond", types, lambda ps: [
        U.compare(ps[counter], U.scalar(trips, ps[counter].dtype), "LT")])


def reached(module, params):
    """The instructions of `module` that depend on one of `params`."""
    live = set(params)
    for instr in module.instructions:
        if instr.op is not Op.PARAMETER and any(o in live for o in instr.operands):
            live.add(instr)
    return live
