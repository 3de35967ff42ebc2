"""After hypothesis has shrunk a failing program, cut what its draw could not: results
the failure does not need, and parameters nothing reads any more.

Hypothesis shrinks the choices a program was drawn from, so a step that made a spare
parameter or result often survives. `minimize` drops results one at a time, keeping each
cut while the failure stays the same kind (`Mismatch.signature`), then renumbers the
parameters that are left.
"""
from jitlib.hlo import build
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op

from . import oracle


def minimize(mismatch, variants=None):
    """The smallest failing program found from `mismatch` by cutting results."""
    if mismatch.program is not None:   # found at the NumPy level: no module to cut
        return mismatch
    best = mismatch
    progress = True
    while progress and len(best.module.results) > 1:
        progress = False
        for i in range(len(best.module.results)):
            results = best.module.results[:i] + best.module.results[i + 1:]
            module, inputs = _without_unused_params(best.module, results, best.inputs)
            failure = _failure(module, inputs, variants)
            if failure is not None and failure.signature == mismatch.signature:
                best, progress = failure, True
                break
    return best


def _failure(module, inputs, variants):
    try:
        oracle.check_program(module, inputs, variants)
    except oracle.Mismatch as m:
        return m
    return None


def _without_unused_params(module, results, inputs):
    """A module of `results` whose parameters are only those it reads, renumbered."""
    order = Module(module.name, module.params, results).instructions
    reached = set(results) | {o for instr in order for o in instr.operands}
    kept = [(p, x) for p, x in zip(module.params, inputs) if p in reached]
    env = {p: build.parameter(n, p.shape, p.dtype, p.attrs["name"], loc=p.loc)
           for n, (p, _) in enumerate(kept)}
    for instr in order:
        if instr.op is Op.PARAMETER:
            continue
        if instr not in env:
            env[instr] = build.make(instr.op, [env[o] for o in instr.operands], instr.attrs,
                                    loc=instr.loc)
    return (Module(module.name, [env[p] for p, _ in kept], [env[r] for r in results]),
            [x for _, x in kept])
