"""The ufuncs jitlib builds from its IR ops: inverse trigonometric and hyperbolic functions,
sinh/cosh, cbrt, copysign and heaviside, each with the formula a careful libm uses so
that the edge values (0, -0.0, 1, inf, NaN) come out as NumPy's and ordinary values
within a few ulps. float32 computes in float64 and rounds once; float16 and bfloat16 in
float32, as NumPy's loops do. Registered into ufuncs.BUILDERS on import.
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo.ops import Op
from jitlib.trace.ufuncs import _F32, _F64, _c, _cmp, builder

_LN2 = 0.6931471805599453
# past this, x*x overflows or 1 is below x's last bit: log(2x) is the answer
_LARGE = 2.0 ** 28


def _wide(fn):
    """Compute in float64 for float32 (one rounding at the end), in float32 for 16 bits."""
    def build_op(*xs):
        dt = xs[0].dtype
        wide = _F64 if dt == _F32 else _F32 if dt.itemsize == 2 else None
        if wide is None:
            return fn(*xs)
        return B.convert(fn(*[B.convert(x, wide) for x in xs]), dt)
    return build_op


def _u(op, x):
    return B.unary(op, x)


def _b(op, x, y):
    return B.binary(op, x, y)


def _mul(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = _b(Op.MUL, out, x)
    return out


def _one_minus_x2(x):
    """(1 - x)(1 + x): 1 - x*x without the cancellation near |x| = 1."""
    return _b(Op.MUL, _b(Op.SUB, _c(1, x), x), _b(Op.ADD, _c(1, x), x))


@builder(np.arctan)
@_wide
def _arctan(x):
    return _b(Op.ATAN2, x, _c(1, x))


@builder(np.arcsin)
@_wide
def _arcsin(x):
    return _b(Op.ATAN2, x, _u(Op.SQRT, _one_minus_x2(x)))


@builder(np.arccos)
@_wide
def _arccos(x):
    return _b(Op.ATAN2, _u(Op.SQRT, _one_minus_x2(x)), x)


@builder(np.arctanh)
@_wide
def _arctanh(x):
    # on a = |x|: 0.5 * log((1 + a) / (1 - a)) = 0.5 * log1p(2a / (1 - a)), with the
    # argument split as 2a + 2a*a / (1 - a) below 0.5 (exact near 0); near 1 the
    # argument is large, where log1p is well conditioned (near -1 it would not be)
    a = _u(Op.ABS, x)
    two_a = _b(Op.ADD, a, a)
    one_minus = _b(Op.SUB, _c(1, x), a)
    small = _b(Op.ADD, two_a, _b(Op.DIV, _b(Op.MUL, two_a, a), one_minus))
    large = _b(Op.DIV, two_a, one_minus)
    arg = B.select(_cmp(a, _c(0.5, x), "LT"), small, large)
    return _signed(x, _mul(_c(0.5, x), _u(Op.LOG1P, arg)))


def _signed(x, magnitude):
    """`magnitude` (a function of |x|) with x's sign, -0.0 included."""
    return B.select(_negative(x), _u(Op.NEG, magnitude), magnitude)


@builder(np.arcsinh)
@_wide
def _arcsinh(x):
    a = _u(Op.ABS, x)
    a2 = _b(Op.MUL, a, a)
    near = _u(Op.LOG1P, _b(Op.ADD, a, _b(Op.DIV, a2, _b(Op.ADD, _c(1, x), _u(
        Op.SQRT, _b(Op.ADD, _c(1, x), a2))))))
    far = _b(Op.ADD, _u(Op.LOG, a), _c(_LN2, x))
    return _signed(x, B.select(_cmp(a, _c(_LARGE, x), "LT"), near, far))


@builder(np.arccosh)
@_wide
def _arccosh(x):
    t = _b(Op.SUB, x, _c(1, x))
    near = _u(Op.LOG1P, _b(Op.ADD, t, _u(Op.SQRT, _b(Op.MUL, t, _b(Op.ADD, t, _c(2, x))))))
    far = _b(Op.ADD, _u(Op.LOG, x), _c(_LN2, x))
    out = B.select(_cmp(x, _c(_LARGE, x), "LT"), near, far)
    return B.select(_cmp(x, _c(1, x), "LT"), _c(np.nan, x), out)   # below 1: NaN


def _half_exp(a):
    """exp(a) / 2 for a >= 0 without overflowing where the result is finite (a < 710.5)."""
    h = _u(Op.EXP, _b(Op.MUL, a, _c(0.5, a)))
    return _mul(h, _c(0.5, a), h)


@builder(np.sinh)
@_wide
def _sinh(x):
    a = _u(Op.ABS, x)
    e = _u(Op.EXPM1, a)
    # (e + e / (e + 1)) / 2 = (exp(a) - exp(-a)) / 2, with no cancellation for small a
    near = _mul(_c(0.5, x), _b(Op.ADD, e, _b(Op.DIV, e, _b(Op.ADD, e, _c(1, x)))))
    return _signed(x, B.select(_cmp(a, _c(22.0, x), "LT"), near, _half_exp(a)))


@builder(np.cosh)
@_wide
def _cosh(x):
    a = _u(Op.ABS, x)
    e = _u(Op.EXP, a)
    near = _mul(_c(0.5, x), _b(Op.ADD, e, _b(Op.DIV, _c(1, x), e)))
    return B.select(_cmp(a, _c(22.0, x), "LT"), near, _half_exp(a))


@builder(np.cbrt)
@_wide
def _cbrt(x):
    a = _u(Op.ABS, x)
    y = _b(Op.POW, a, _c(1.0 / 3.0, x))
    # one Newton step on y**3 = a: pow's 1/3 is not a third, so perfect cubes come out
    # exact only after it (cbrt(27) is 3.0); 0 and inf stay as they are
    step = _b(Op.DIV, _b(Op.SUB, _mul(y, y, y), a), _mul(_c(3, x), y, y))
    finite = _b(Op.AND, _cmp(y, _c(0, x), "GT"), _cmp(y, _c(np.inf, x), "LT"))
    return _signed(x, B.select(finite, _b(Op.SUB, y, step), y))


def _negative(x):
    """x < 0, or x is -0.0 (1/x is -inf). A NaN's sign is not visible to the IR."""
    inv = _b(Op.DIV, _c(1, x), x)
    return _b(Op.OR, _cmp(x, _c(0, x), "LT"), _cmp(inv, _c(-np.inf, x), "EQ"))


@builder(np.copysign)
def _copysign(a, b):
    magnitude = _u(Op.ABS, a)
    return B.select(_negative(b), _u(Op.NEG, magnitude), magnitude)


@builder(np.heaviside)
def _heaviside(x, h):
    step = B.select(_cmp(x, _c(0, x), "LT"), _c(0, x),
                    B.select(_cmp(x, _c(0, x), "GT"), _c(1, x), h))
    return B.select(_cmp(x, x, "NE"), x, step)   # NaN stays NaN
