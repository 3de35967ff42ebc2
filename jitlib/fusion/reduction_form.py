"""The shape of a reduction kernel, as fuse.py builds it, read back for the backends.

A reduction kernel reduces an S-shaped value over dims R. Its body holds S-level values
(elementwise on S), the reductions themselves, K-level values (elementwise on what the
reductions give, K = S without R, size-1 dims aside) and broadcasts of K-level values back
along R, which the epilogue combines with S-level ones (softmax: x - max, exp, / sum).
Each backend emits the loops its own way; this module only checks the form and splits it.
"""
from typing import NamedTuple

from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

REDUCING = O.REDUCE | O.ARG_REDUCE


class NotReductionForm(Exception):
    """The body is not in the form fuse.py gives reduction kernels."""


class ReductionPlan(NamedTuple):
    S: tuple             # the shape every reduction reads
    R: tuple             # the dims they reduce, sorted
    reductions: list
    s_outputs: list      # (result position, instr): S-shaped results
    k_outputs: list      # (result position, instr): per-row (K-level) results


def reduced_dims(instr):
    return (instr.attrs["axis"],) if instr.op in O.ARG_REDUCE else tuple(instr.attrs["dims"])


def squeeze(shape):
    return tuple(d for d in shape if d != 1)


def plan_reduction(body, error=NotReductionForm):
    """Check `body` has the reduction-kernel form and split it; else raise `error` (a
    backend passes its own "cannot generate this kernel" exception) saying why not."""
    reductions = [i for i in body.instructions if i.op in REDUCING]
    if not reductions:
        raise error("a reduction kernel without a reduction")
    S, R = reductions[0].operands[0].shape, tuple(sorted(reduced_dims(reductions[0])))
    kept = [d for d in range(len(S)) if d not in R]
    K = squeeze(S[d] for d in kept)
    k_level = set(reductions)
    for m in body.instructions:
        if m in k_level:
            if (m.operands[0].shape, tuple(sorted(reduced_dims(m)))) != (S, R):
                raise error("reductions over different dims in one kernel")
            continue
        if not any(o in k_level for o in m.operands):
            continue
        if m.op is Op.BROADCAST_IN_DIM:
            x = m.operands[0]
            targets = [d for d, n in zip(m.attrs["dims"], x.shape) if n != 1]
            if m.shape != S or any(t not in kept for t in targets):
                raise error("a reduced value broadcast other than along R")
        elif m.op in O.ELEMENTWISE or m.op is Op.RESHAPE:
            if squeeze(m.shape) != K:
                raise error(f"{m.op} mixes reduced values with others")
            k_level.add(m)
        else:
            raise error(f"{m.op} of a reduced value")
    s_out, k_out = [], []
    for j, out in enumerate(body.results):
        if out in k_level:
            k_out.append((j, out))
        elif out.shape == S:
            s_out.append((j, out))
        else:
            raise error(f"output {out.type_str} is neither S- nor K-shaped")
    return ReductionPlan(S, R, reductions, s_out, k_out)
