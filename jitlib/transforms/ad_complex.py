"""Derivatives where complex values meet real ones, in JAX's convention.

JAX differentiates complex functions as maps of R^2 without conjugating: a VJP is the
transpose of the JVP's linear map (not its adjoint), so a holomorphic op's partial is
its complex derivative in both modes (ad_elementwise.partials), and `grad` of a
real-valued function of z returns the cotangent JAX returns (the conjugate of the
usual gradient df/dx + i df/dy). What is left for this module: the ops that are not
holomorphic (abs) and the parts real, imag, conj and complex, whose transposes are
JAX's `real_p`, `imag_p`, `conj_p` and `complex_p` rules.
"""
from jitlib.hlo import build, dtypes
from jitlib.hlo.ops import Op
from jitlib.transforms.ad_util import compare, full_like, mul, neg, select, zeros_like


def _as_complex(re, like):
    """The real `re` as a complex value of `like`'s dtype, imaginary part 0."""
    return build.binary(Op.COMPLEX, re, zeros_like(re)) if re.dtype != like.dtype else re


def _abs_direction(instr):
    """conj(z) / |z| for out = |z| (|z| = 0 read as 1, as JAX's _replace_zero), in z's
    complex dtype: d|z| = real(dz * conj(z) / |z|)."""
    (z,) = instr.operands
    safe = select(compare(instr, zeros_like(instr), "EQ"), full_like(instr, 1), instr)
    return build.binary(Op.DIV, build.unary(Op.CONJ, z), _as_complex(safe, z))


def abs_jvp(instr, tangent):
    return build.unary(Op.REAL, mul(tangent, _abs_direction(instr)))


def abs_vjp(instr, ct):
    return mul(_as_complex(ct, instr.operands[0]), _abs_direction(instr))


def is_complex_abs(instr):
    return instr.op is Op.ABS and dtypes.is_complex(instr.operands[0].dtype)


# -- transposes of the parts (the JVPs are the ops themselves: they are linear)

def real_vjp(instr, ct):
    return [build.binary(Op.COMPLEX, ct, zeros_like(ct))]


def imag_vjp(instr, ct):
    return [build.binary(Op.COMPLEX, zeros_like(ct), neg(ct))]


def conj_vjp(instr, ct):
    return [build.unary(Op.CONJ, ct)]


def complex_vjp(instr, ct):
    return [build.unary(Op.REAL, ct), neg(build.unary(Op.IMAG, ct))]


VJPS = {Op.REAL: real_vjp, Op.IMAG: imag_vjp, Op.CONJ: conj_vjp, Op.COMPLEX: complex_vjp}
