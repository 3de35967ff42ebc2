"""The cost model: bytes a module moves between kernels.

A kernel reads each of its inputs once and writes each output once; values
inside a kernel never touch memory. On a module before fusion every non-leaf
instruction is its own kernel. This is the quantity fusion minimises, and what
`benchmarks/fusion_vs_xla.py` compares with XLA.
"""
from jitlib.hlo.ops import Op

# inlined into every kernel that uses them, so they cost no traffic
FREE = frozenset({Op.PARAMETER, Op.CONSTANT, Op.GET_OUTPUT})


def nbytes(instr):
    return instr.size * instr.dtype.itemsize


def kernel_bytes(instr):
    """Bytes one kernel moves: its distinct inputs read once, its outputs written once."""
    read = sum(nbytes(x) for x in _distinct(instr.operands) if not _inlined(x))
    if instr.op is Op.FUSION:
        written = sum(nbytes(r) for r in instr.attrs["body"].results)
    else:
        written = nbytes(instr)
    return read + written


def bytes_moved(module):
    """Total bytes read and written by the kernels of `module` in one run."""
    return sum(kernel_bytes(i) for i in module.instructions if i.op not in FREE)


def kernel_count(module):
    return sum(1 for i in module.instructions if i.op not in FREE)


def _distinct(values):
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _inlined(x):
    # scalar constants are baked into the code that reads them
    return x.op is Op.CONSTANT and x.size <= 1
