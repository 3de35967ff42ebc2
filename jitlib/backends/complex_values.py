"""Finding complex values in a module, for the backends that do not compile them yet.

Both compiled backends run a kernel that touches a complex value on the reference
interpreter (NumPy's complex loops, bit for bit): the cpu backend on its own arrays, the
gpu backend through host memory (complex Arrays stay on the device between kernels;
each such kernel copies its operands to the host and its results back).
"""
from jitlib.hlo import dtypes
from jitlib.hlo.ir import is_multi_output, regions


def first_complex(module):
    """The first instruction of `module` (regions included) with a complex result or
    operand, or None. A worklist, not recursion: regions nest as deep as the program."""
    pending = [module]
    while pending:
        for instr in pending.pop().instructions:
            inner = regions(instr)
            if inner:
                pending.extend(inner)
            if not is_multi_output(instr) and dtypes.is_complex(instr.dtype):
                return instr
    return None
