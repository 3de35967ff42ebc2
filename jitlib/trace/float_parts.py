"""The ufuncs that take floats apart: frexp, ldexp, modf, nextafter, spacing.

The IR has no bit casts, so a float's exponent is found arithmetically: a log gives it
to within one, an exact scaling by powers of two and one comparison each way fix it.
Everything is exact (multiplications by powers of two, sums of neighbours), so the
results are NumPy's bit for bit, edge values included. Narrow types compute in float64,
which holds each of their values and neighbours exactly. Registered into
ufuncs.BUILDERS on import.
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace.composed_ufuncs import _negative
from jitlib.trace.ufuncs import _F32, _F64, _INV_LN2, _and, _c, _cmp, _scale_by_pow2, builder

_F16 = np.dtype(np.float16)


def _u(op, x):
    return B.unary(op, x)


def _b(op, x, y):
    return B.binary(op, x, y)


def _f64(x):
    return B.convert(x, _F64)


def _finite_nonzero(a):
    """0 < a < inf for a = |x| (False for NaN)."""
    return _and(_cmp(a, _c(0, a), "GT"), _cmp(a, _c(np.inf, a), "LT"))


def _mantissa_exponent(a):
    """(m, e) with a = m * 2**e and 0.5 <= m < 1, for float64 a > 0 finite (subnormals
    too); e is an integral float64. round(log2(a)) is within one of the binary exponent;
    the exact scaling and the two corrections make it right."""
    e = _u(Op.ROUND, _b(Op.MUL, _u(Op.LOG, a), _c(_INV_LN2[0], a)))
    m = _scale_by_pow2(a, e)
    for too_big, factor, step in ((_cmp(m, _c(1, m), "GE"), 0.5, 1),
                                  (_cmp(m, _c(0.5, m), "LT"), 2.0, -1)):
        m = B.select(too_big, _b(Op.MUL, m, _c(factor, m)), m)
        e = B.select(too_big, _b(Op.ADD, e, _c(step, e)), e)
    return m, e


def _pow2(n):
    """2**n exactly, for integral float64 n in [-1074, 1023]: a product of one power of
    two per bit of |n|, smallest first, so every partial product lies between 1 and the
    result and is a double (2**-1024 is a subnormal one; 2**1024 is never needed)."""
    k = B.convert(_u(Op.ABS, n), np.dtype(np.int32))
    down = _cmp(n, _c(0, n), "LT")
    out = _c(1, n)
    for bit in range(11):
        on = _cmp(_b(Op.AND, k, _c(2 ** bit, k)), _c(0, k), "NE")
        up_factor = 2.0 ** (2 ** bit) if bit < 10 else 1.0
        factor = B.select(down, _c(2.0 ** -(2 ** bit), n), _c(up_factor, n))
        out = _b(Op.MUL, out, B.select(on, factor, _c(1, n)))
    return out


@builder(np.frexp)
def _frexp(x):
    a = _u(Op.ABS, _f64(x))
    regular = _finite_nonzero(a)
    m, e = _mantissa_exponent(B.select(regular, a, _c(1, a)))
    m = B.select(_negative(x), _u(Op.NEG, m), m)
    # 0, inf and NaN come back as they are, with exponent 0
    mantissa = B.select(regular, B.convert(m, x.dtype), x)
    return mantissa, B.convert(B.select(regular, e, _c(0, e)), np.dtype(np.int32))


@builder(np.ldexp)
def _ldexp(x, n):
    if x.dtype != _F64:
        # NumPy's (and ml_dtypes') narrow loops are float32 ldexpf, rounded to the type
        # once more; in float64 a clamped n scales every float32 exactly, then one rounding
        n = _clamp(n, 400)
        wide = _b(Op.MUL, _f64(x), _pow2(_f64(n)))
        return B.convert(B.convert(wide, _F32), x.dtype)
    return _scalbn(x, _f64(_clamp(n, 2200)))


def _clamp(n, limit):
    # past +-limit every result is already 0 or inf (or x itself: 0, inf, NaN)
    return _b(Op.MIN, _b(Op.MAX, n, _c(-limit, n)), _c(limit, n))


def _scalbn(y, n):
    """y * 2**n in float64 with one rounding (musl's scalbn): large |n| is taken in
    steps that are exact, or whose result is so small that only zero can follow."""
    for _ in range(2):
        up, down = _cmp(n, _c(1023, n), "GT"), _cmp(n, _c(-1022, n), "LT")
        y = B.select(up, _b(Op.MUL, y, _c(2.0 ** 1023, y)),
                     B.select(down, _b(Op.MUL, y, _c(2.0 ** -969, y)), y))
        n = B.select(up, _b(Op.SUB, n, _c(1023, n)),
                     B.select(down, _b(Op.ADD, n, _c(969, n)), n))
    n = _b(Op.MIN, _b(Op.MAX, n, _c(-1022, n)), _c(1023, n))
    return _b(Op.MUL, y, _pow2(n))


@builder(np.modf)
def _modf(x):
    whole = B.select(_cmp(x, _c(0, x), "LT"), _u(Op.CEIL, x), _u(Op.FLOOR, x))
    frac = _u(Op.ABS, _b(Op.SUB, x, whole))        # exact; inf - inf is NaN, fixed below
    is_inf = _cmp(_u(Op.ABS, x), _c(np.inf, x), "EQ")
    frac = B.select(is_inf, _c(0, x), frac)
    # the fraction keeps x's sign, -0.0 included (modf(-2.0) is (-0.0, -2.0)); NaN stays
    frac = B.select(_negative(x), _u(Op.NEG, frac), frac)
    return B.select(_cmp(x, x, "NE"), x, frac), whole


class _Format:
    """A float type's precision and range, as float64 constants."""

    def __init__(self, dtype):
        info = dtypes.finfo(dtype)
        self.digits = info.nmant + 1                 # significand bits, the hidden one too
        self.min_exponent = info.minexp + 1          # frexp exponent of the least normal
        self.tiny = 2.0 ** (info.minexp - info.nmant)  # the least subnormal
        self.max = float(info.max)


def _step_away(a, fmt, shift=None):
    """The distance from a (finite, > 0) to the next float of the type away from zero,
    and the distance to the next one toward zero; both times 2**shift if given."""
    m, e = _mantissa_exponent(a)
    e = _b(Op.MAX, e, _c(fmt.min_exponent, e))     # subnormals share the least ulp
    n = _b(Op.SUB, e, _c(fmt.digits, e))
    ulp = _pow2(n if shift is None else _b(Op.ADD, n, shift))
    # below a power of two (m == 0.5) the floats are twice as dense, unless subnormal
    denser = _and(_cmp(m, _c(0.5, m), "EQ"), _cmp(e, _c(fmt.min_exponent, e), "GT"))
    return ulp, B.select(denser, _b(Op.MUL, ulp, _c(0.5, ulp)), ulp)


@builder(np.nextafter)
def _nextafter(x, y):
    fmt = _Format(x.dtype)
    xd, yd = _f64(x), _f64(y)
    a = _u(Op.ABS, xd)
    regular = _finite_nonzero(a)
    safe = B.select(regular, a, _c(1, a))
    # near the float64 subnormals the sum is formed 2**64 times larger and scaled back
    # (exactly): no step is subnormal, which XLA would flush to zero
    shift = B.select(_cmp(safe, _c(2.0 ** -900, a), "LT"), _c(64, a), _c(0, a))
    up, down = _step_away(safe, fmt, shift)
    away = _cmp(_cmp(yd, xd, "GT"), _cmp(xd, _c(0, xd), "GT"), "EQ")
    scaled = _scale_by_pow2(safe, _u(Op.NEG, shift))
    magnitude = _scale_by_pow2(B.select(away, _b(Op.ADD, scaled, up),
                                        _b(Op.SUB, scaled, down)), shift)
    out = B.select(_cmp(xd, _c(0, xd), "LT"), _u(Op.NEG, magnitude), magnitude)
    toward_y = B.select(_cmp(yd, xd, "GT"), _c(1, xd), _c(-1, xd))
    # from zero: the least subnormal toward y; from an infinity: the largest finite
    out = B.select(_cmp(a, _c(0, a), "EQ"), _b(Op.MUL, toward_y, _c(fmt.tiny, xd)), out)
    largest = B.select(_cmp(xd, _c(0, xd), "GT"), _c(fmt.max, xd), _c(-fmt.max, xd))
    out = B.select(_cmp(a, _c(np.inf, a), "EQ"), largest, out)
    # equal: C's nextafter answers y (the sign of y's zero), NumPy's half loop x
    out = B.select(_cmp(xd, yd, "EQ"), xd if x.dtype == _F16 else yd, out)
    unordered = B.binary(Op.OR, _cmp(xd, xd, "NE"), _cmp(yd, yd, "NE"))
    return B.convert(B.select(unordered, _b(Op.ADD, xd, yd), out), x.dtype)


@builder(np.spacing)
def _spacing(x):
    fmt = _Format(x.dtype)
    xd = _f64(x)
    a = _u(Op.ABS, xd)
    regular = _finite_nonzero(a)
    up, down = _step_away(B.select(regular, a, _c(1, a)), fmt)
    # past the largest finite the next float is inf, and so is the distance to it
    up = B.select(_cmp(a, _c(fmt.max, a), "EQ"), _c(np.inf, a), up)
    negative = _negative(xd)
    if x.dtype == _F16:
        # NumPy's half loop: the positive distance to the neighbour of larger value
        out = B.select(regular, B.select(negative, down, up), _c(fmt.tiny, xd))
    else:
        # NumPy's spacing(-0.0) is +tiny; ml_dtypes' bfloat16 one keeps the zero's sign
        out = B.select(_cmp(a, _c(0, a), "EQ"), _c(fmt.tiny, a), up)
        if not dtypes.is_bfloat16(x.dtype):
            negative = _cmp(xd, _c(0, xd), "LT")
        out = B.select(negative, _u(Op.NEG, out), out)
    out = B.select(_cmp(a, _c(np.inf, a), "LT"), out, _c(np.nan, a))   # inf and NaN: NaN
    return B.convert(out, x.dtype)
