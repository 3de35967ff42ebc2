"""Ops differentiated through an equivalent expression of other ops: a clamp as the
min(max(x, lo), hi) the interpreter defines it as (so np.clip's ties split as
jnp.clip's do), a fusion as its body inlined on its operands, sorted values as a
gather through the sorting permutation (as JAX: ties keep their own slopes).
"""
from jitlib.hlo import build
from jitlib.hlo.ir import toposort
from jitlib.hlo.ops import Op
from jitlib.transforms.ad_elementwise import clamp_as_max_min


def subgraph_order(leaves, roots):
    """The instructions between `leaves` (excluded) and `roots`, operands first."""
    leaves = list(leaves)
    return list(toposort(leaves, roots)[len(leaves):])


def fusion_body_inline(instr):
    """A fusion's results computed by its body's instructions on its operands."""
    from jitlib.transforms.core import inline   # core imports the tracer; keep it lazy
    return inline(instr.attrs["body"], list(instr.operands))


def sort_as_gather(instr):
    """Sorted values as their key read through the permutation (an integer value, which
    carries no derivative), so the gather's rules differentiate them."""
    (key,) = instr.operands
    axis = instr.attrs["dimension"]
    perm = build.sort([key], axis, indices=True)
    return [build.take_along(key, perm, axis)]


# op -> fn(instr) -> [instrs computing the same values from instr.operands]
expansions = {
    Op.CLAMP: lambda instr: [clamp_as_max_min(instr)],
    Op.FUSION: fusion_body_inline,
    Op.SORT: sort_as_gather,
}
