"""What forward mode (jvp.py) and reverse mode (vjp.py) share: which values carry
derivatives, the missing-rule error, and small IR builders for the rule files.

Only floating-point values carry derivatives. Integer and bool values (indices,
masks, argmax results) carry none, like JAX's float0: internally their tangent and
cotangent are simply absent (None), as is any symbolic zero.

The derivative formulas live by family, each written once for both modes:
ad_elementwise.py (partial derivatives), ad_reductions.py (reductions and scans),
ad_indexing.py (gather and scatter), ad_expand.py (ops differentiated through an
equivalent expression: clamp, fusion). They emit ordinary IR ops, so derivatives are
themselves differentiable.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op
from jitlib.hlo.printer import print_instr


def is_differentiable(x):
    """Whether values like `x` (an Instr) carry tangents and cotangents: floats and
    complex values (ad_complex.py)."""
    return dtypes.is_inexact(x.dtype)


def missing_rule(transform, instr):
    """The error for an op `transform` has no rule for, at the user's line."""
    names = {operand: str(i) for i, operand in enumerate(instr.operands)}
    names[instr] = "out"
    line = " ".join(print_instr(instr, names, short_locs=True).split())
    return errors.UnsupportedError(
        f"{transform} rule for '{instr.op}' is not implemented (differentiating `{line}`)",
        location=instr.loc,
        hint="rewrite this line with other NumPy operations, or mark the value as "
             "constant by computing it outside the differentiated function")


# -- small builders

def scalar(value, dtype):
    return build.constant(np.array(value, dtype=dtypes.canonicalize(dtype)))


def full_like(x, value):
    return build.full(value, x.shape, x.dtype)


def zeros_like(x):
    return full_like(x, 0)


def instantiate(tangent, like):
    """A symbolic zero (None) made concrete: zeros shaped like `like`."""
    return zeros_like(like) if tangent is None else tangent


def add_any(a, b):
    """a + b where either may be a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return build.binary(Op.ADD, a, b)


def mul(a, b):
    return build.binary(Op.MUL, a, b)


def div(a, b):
    return build.binary(Op.DIV, a, b)


def neg(a):
    return build.unary(Op.NEG, a)


def select(pred, a, b):
    return build.select(pred, a, b)


def compare(a, b, direction):
    return build.compare(a, b, direction)


def as_float(pred, like):
    """A bool mask as 1.0/0.0 in `like`'s dtype."""
    return build.convert(pred, like.dtype)


def broadcast_like(x, like, dims):
    """`x` broadcast to `like`'s shape, x's dims landing on `dims`."""
    return build.broadcast_in_dim(x, like.shape, dims)


def kept_dims(ndim, reduced):
    return tuple(d for d in range(ndim) if d not in reduced)
