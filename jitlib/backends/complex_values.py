"""Finding complex values in a module, for the backends that do not compile them yet.

The cpu backend runs a kernel that touches a complex value on the reference interpreter
(NumPy's complex loops, bit for bit); the gpu backend refuses the program at the line
that made the first complex value, since its device buffers and kernels are real only.
"""
from jitlib import errors
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


def refuse_on_gpu(module):
    """An UnsupportedError at the user's line where `module` makes a complex value."""
    instr = first_complex(module)
    if instr is None:
        return
    raise errors.UnsupportedError(
        f"the gpu backend does not run complex values yet ({dtypes.name(instr.dtype)} "
        f"from {instr.op})", location=instr.loc,
        hint="run this function with backend='cpu' (or 'jax'); complex arrays stay on "
             "the host")
