"""Ops differentiated through an equivalent expression of other ops: a clamp as the
min(max(x, lo), hi) the interpreter defines it as (so np.clip's ties split as
jnp.clip's do), a fusion as its body inlined on its operands.
"""
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


# op -> fn(instr) -> [instrs computing the same values from instr.operands]
expansions = {
    Op.CLAMP: lambda instr: [clamp_as_max_min(instr)],
    Op.FUSION: fusion_body_inline,
}
