"""NumPy ufuncs on tracers: one builder per ufunc, keyed by the ufunc object.

NumPy itself picks each ufunc's loop (`ufunc.resolve_dtypes`, with Python scalars
passed as the weak types they are), so the result dtype is eager NumPy's by
construction; inputs of one float dtype take the loop of that type from `ufunc.types`
(`same_type_loop`, checked against `resolve_dtypes` for every traced ufunc). A builder
then sees operands already converted to the loop's input dtype and broadcast to one
shape, and emits IR in the loop's output dtype.
"""
import decimal
import math

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import int_ranges
from jitlib.trace import tracer as T
from jitlib.trace import ufunc_at

BUILDERS = {}
# NumPy ufuncs jitlib refuses on purpose: ufunc -> (why, what to do instead)
REFUSED = {
    np.isnat: ("NumPy defines it only for datetime64 and timedelta64, which are not "
               "dtypes of jitlib's IR", "test the dates before or after the jitted call"),
}


def builder(*ufuncs):
    def register(fn):
        for uf in ufuncs:
            BUILDERS[uf] = fn
        return fn
    return register


# -- small IR helpers: every operand has the same shape and dtype

def _c(value, like):
    """`value` as a constant broadcast to `like`'s shape and dtype."""
    return B.full(value, like.shape, like.dtype)


def _cmp(a, b, direction):
    return B.compare(a, b, direction)


def _and(*ps):
    out = ps[0]
    for p in ps[1:]:
        out = B.binary(Op.AND, out, p)
    return out


def _neq(a, b):
    return B.compare(a, b, "NE")


def _lt0(x):
    return _cmp(x, _c(0, x), "LT")


# -- arithmetic

def _simple(op, bool_op=None):
    def build_op(*xs):
        if bool_op is not None and dtypes.is_bool(xs[0].dtype):
            return B.make(bool_op, xs)
        return B.make(op, xs)
    return build_op


builder(np.add)(_simple(Op.ADD, Op.OR))
builder(np.subtract)(_simple(Op.SUB))
builder(np.multiply)(_simple(Op.MUL, Op.AND))
builder(np.true_divide)(_simple(Op.DIV))
builder(np.fmod)(_simple(Op.REM))
builder(np.maximum)(_simple(Op.MAX, Op.OR))
builder(np.minimum)(_simple(Op.MIN, Op.AND))
builder(np.arctan2)(_simple(Op.ATAN2))
builder(np.bitwise_and)(_simple(Op.AND))
builder(np.bitwise_or)(_simple(Op.OR))
builder(np.bitwise_xor)(_simple(Op.XOR))
builder(np.invert)(_simple(Op.NOT))
builder(np.negative)(_simple(Op.NEG))


def _truth(x):
    # NumPy's logical loops may run on numbers: truth is `!= 0`
    return x if dtypes.is_bool(x.dtype) else _neq(x, _c(0, x))


def _logical(op):
    def build_op(*xs):
        return B.make(op, [_truth(x) for x in xs])
    return build_op


builder(np.logical_and)(_logical(Op.AND))
builder(np.logical_or)(_logical(Op.OR))
builder(np.logical_xor)(_logical(Op.XOR))
builder(np.logical_not)(_logical(Op.NOT))


@builder(np.absolute, np.fabs)
def _abs(x):
    return x if dtypes.is_bool(x.dtype) or dtypes.is_unsigned(x.dtype) else B.unary(Op.ABS, x)
builder(np.sign)(_simple(Op.SIGN))
builder(np.exp)(_simple(Op.EXP))
builder(np.expm1)(_simple(Op.EXPM1))
builder(np.log)(_simple(Op.LOG))
builder(np.log1p)(_simple(Op.LOG1P))
builder(np.sqrt)(_simple(Op.SQRT))
builder(np.tanh)(_simple(Op.TANH))
builder(np.sin)(_simple(Op.SIN))
builder(np.cos)(_simple(Op.COS))
builder(np.tan)(_simple(Op.TAN))
builder(np.rint)(_simple(Op.ROUND))


@builder(np.positive, np.conjugate)
def _identity(x):
    return x


def _float_or_int(float_op):
    # NumPy 2 defines floor/ceil/trunc on integers as the identity.
    def build_op(x):
        return B.unary(float_op, x) if dtypes.is_float(x.dtype) else x
    return build_op


builder(np.floor)(_float_or_int(Op.FLOOR))
builder(np.ceil)(_float_or_int(Op.CEIL))


@builder(np.trunc)
def _trunc(x):
    if not dtypes.is_float(x.dtype):
        return x
    return B.select(_lt0(x), B.unary(Op.CEIL, x), B.unary(Op.FLOOR, x))


@builder(np.square)
def _square(x):
    return B.binary(Op.MUL, x, x)


@builder(np.reciprocal)
def _reciprocal(x):
    if dtypes.is_float(x.dtype):
        return B.binary(Op.DIV, _c(1, x), x)
    # NumPy's integer loop is `1.0 / x` in double, cast back: 0 gives inf, which the
    # cast turns into the type's indefinite value (INT_MIN for int32/int64, else 0)
    f64 = np.dtype(np.float64)
    return B.convert(B.binary(Op.DIV, B.full(1.0, x.shape, f64), B.convert(x, f64)), x.dtype)


@builder(np.exp2)
def _exp2(x):
    return B.binary(Op.POW, _c(2, x), x)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _half_in_f32(fn):
    """NumPy computes these ufuncs' float16 loops (and ml_dtypes its bfloat16 ones) in
    float32 and rounds once at the end; a composition done in the 16-bit type would round
    after every step (and its constants to 16 bits)."""
    def build_op(*xs):
        if xs[0].dtype.itemsize == 2:
            return B.convert(fn(*[B.convert(x, _F32) for x in xs]), xs[0].dtype)
        return fn(*xs)
    return build_op


def _dd(value):
    """`value` (a decimal string) as a double-double (hi, lo)."""
    with decimal.localcontext(prec=60):
        d = decimal.Decimal(value)
        hi = float(d)
        return hi, float(d - decimal.Decimal(hi))


_INV_LN2 = _dd("1.44269504088896340735992468100189213742664595415298593413544")
_INV_LN10 = _dd("0.434294481903251827651128918916605082294397005803666566114454")
# log10(2) split so that e * hi is exact for every binary exponent e (|e| < 2**12)
_LOG10_2_HI = 3.01029995663611771306e-01      # 0x3FD34413509F6000
_LOG10_2_LO = 3.69423907715893078616e-13


def _scale_by_pow2(x, e):
    """x * 2**-e, exactly, for f64 x and integral f64 e with |e| < 2048: one power of two
    per bit of |e|. Every factor moves x the same way, toward 2**-e * x, so no step
    overflows or underflows where the result does not."""
    n = B.convert(B.unary(Op.ABS, e), np.dtype(np.int32))
    up = _lt0(e)
    for bit in range(11):
        step = min(2 ** bit, 512)   # 2**1024 is no double: bit 10 is two steps of 2**512
        on = _neq(B.binary(Op.AND, n, _c(2 ** bit, n)), _c(0, n))
        factor = B.select(on, B.select(up, _c(2.0 ** step, x), _c(2.0 ** -step, x)), _c(1, x))
        for _ in range(2 ** bit // step):
            x = B.binary(Op.MUL, x, factor)
    return x


def _mul_dd(x, c):
    """x * (c[0] + c[1]), the constant carried beyond double precision."""
    return B.binary(Op.ADD, B.binary(Op.MUL, x, _c(c[0], x)), B.binary(Op.MUL, x, _c(c[1], x)))


def _log_base(x, base):
    """log2 or log10 (`base` 2 or 10) as NumPy's libm gives them: exact at powers of the
    base, within an ulp elsewhere. float64: x = 2**e * m with m near 1, then e (times
    log10(2), carried in two parts) plus log(m) / ln(base); log(m) is small, so its own
    rounding error stays far below the result's last bit. float32 runs that in float64."""
    if x.dtype == _F32:
        return B.convert(_log_base(B.convert(x, _F64), base), _F32)
    inv_ln = _INV_LN2 if base == 2 else _INV_LN10
    regular = _and(_cmp(x, _c(0, x), "GT"), _cmp(x, _c(np.inf, x), "LT"))
    xs = B.select(regular, x, _c(1, x))
    e = B.unary(Op.ROUND, B.binary(Op.MUL, B.unary(Op.LOG, xs), _c(_INV_LN2[0], x)))
    small = _mul_dd(B.unary(Op.LOG, _scale_by_pow2(xs, e)), inv_ln)
    if base == 2:
        out = B.binary(Op.ADD, e, small)
    else:
        small = B.binary(Op.ADD, B.binary(Op.MUL, e, _c(_LOG10_2_LO, x)), small)
        out = B.binary(Op.ADD, B.binary(Op.MUL, e, _c(_LOG10_2_HI, x)), small)
    # 0, negatives, inf and NaN: log's own answers (-inf, NaN, inf, NaN)
    special = B.binary(Op.MUL, B.unary(Op.LOG, x), _c(inv_ln[0], x))
    return B.select(regular, out, special)


@builder(np.log2)
@_half_in_f32
def _log2(x):
    return _log_base(x, 2)


@builder(np.log10)
@_half_in_f32
def _log10(x):
    return _log_base(x, 10)


def _float32_or_double(x, float32_value, double_value):
    return _c(float32_value if x.dtype == _F32 else double_value, x)


@builder(np.deg2rad, np.radians)
@_half_in_f32
def _deg2rad(x):
    # NumPy's constants: pi / 180 worked out in the loop's own type
    f = np.float32
    return B.binary(Op.MUL, x, _float32_or_double(x, f(math.pi) / f(180), math.pi / 180))


@builder(np.rad2deg, np.degrees)
@_half_in_f32
def _rad2deg(x):
    f = np.float32
    return B.binary(Op.MUL, x, _float32_or_double(x, f(180) / f(math.pi), 180 / math.pi))


@builder(np.hypot)
@_half_in_f32
def _hypot(a, b):
    """sqrt(a*a + b*b) with no overflow or underflow in the squares: float32 squares in
    float64 (whose range holds them), float64 scales both by a power of two first (exact).
    An infinity wins over NaN, as in C's hypot."""
    a, b = B.unary(Op.ABS, a), B.unary(Op.ABS, b)
    if a.dtype == _F32:
        out = B.convert(_root_of_squares(B.convert(a, _F64), B.convert(b, _F64)), _F32)
    else:
        big = B.binary(Op.MAX, a, b)
        # below 2**-450 a square may be subnormal (XLA flushes those) where it still counts
        huge, tiny = _cmp(big, _c(2.0 ** 500, a), "GT"), _cmp(big, _c(2.0 ** -450, a), "LT")
        scale = B.select(huge, _c(2.0 ** -600, a),
                         B.select(tiny, _c(2.0 ** 600, a), _c(1, a)))
        root = _root_of_squares(B.binary(Op.MUL, a, scale), B.binary(Op.MUL, b, scale))
        out = B.binary(Op.DIV, root, scale)
    either_inf = B.binary(Op.OR, _cmp(a, _c(np.inf, a), "EQ"), _cmp(b, _c(np.inf, b), "EQ"))
    return B.select(either_inf, _c(np.inf, out), out)


def _root_of_squares(a, b):
    return B.unary(Op.SQRT, B.binary(Op.ADD, B.binary(Op.MUL, a, a), B.binary(Op.MUL, b, b)))


@builder(np.power)
def _power(a, b):
    return B.binary(Op.POW, a, b)


_NEGATIVE_POWER = "Integers to negative integer powers are not allowed."


def _refuse_negative_int_power(exponent):
    """NumPy's integer power raises ValueError when any exponent is negative. A concrete
    exponent (a constant, a Python int argument's range) is checked here; a traced one
    only where its IR shows it cannot be negative, since jit cannot look at its values."""
    bounds = T.known_int_bounds(exponent)
    if bounds is not None:
        lo, hi = bounds
        if (lo is None or lo < 0) and (hi is None or hi >= 0):
            raise int_ranges.needs_values("the sign of an integer power's exponent")
        negative = hi is not None and hi < 0
    elif isinstance(exponent, T.Tracer):
        if _never_negative(exponent.instr):
            return
        raise errors.JitlibValueError(
            f"np.power: NumPy raises ValueError ({_NEGATIVE_POWER}) when an integer "
            f"exponent is negative, and a traced {exponent.dtype} exponent's values are "
            "not known while tracing",
            hint="clamp it (x ** np.maximum(n, 0)), make it unsigned, pass it as a "
                 "static argument, or use floats (np.float_power)")
    else:
        negative = bool((T.concrete(exponent) < 0).any())
    if negative:
        raise errors.JitlibValueError(_NEGATIVE_POWER,
                                      hint="use a float base or np.float_power for x**-n")


def _never_negative(instr, depth=8):
    """Whether the IR proves `instr` is never negative (a bounded look through the ops
    that keep that: constants, iota, movement, max with such a value, select of two)."""
    if not dtypes.is_signed(instr.dtype):
        return True
    if depth == 0:
        return False
    op = instr.op
    if op is Op.CONSTANT:
        return bool((instr.attrs["value"].array >= 0).all())
    if op is Op.IOTA:
        return True
    if op is Op.CONVERT:   # a widening integer convert keeps the sign
        src = instr.operands[0].dtype
        return not dtypes.is_float(src) and src.itemsize < instr.dtype.itemsize and \
            _never_negative(instr.operands[0], depth - 1)
    if op in (Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.REVERSE):
        return _never_negative(instr.operands[0], depth - 1)
    if op is Op.MAX:
        return any(_never_negative(x, depth - 1) for x in instr.operands)
    if op is Op.MIN:   # not add or mul: they wrap
        return all(_never_negative(x, depth - 1) for x in instr.operands)
    if op is Op.SELECT:
        return all(_never_negative(x, depth - 1) for x in instr.operands[1:])
    return False


@builder(np.float_power)
def _float_power(a, b):
    return B.binary(Op.POW, a, b)


# -- division with NumPy's floor semantics (npy_divmod)

def _floor_divide_int(a, b):
    q, r = B.binary(Op.DIV, a, b), B.binary(Op.REM, a, b)
    if dtypes.is_unsigned(a.dtype):
        return q
    fix = _and(_neq(r, _c(0, r)), _neq(_lt0(r), _lt0(b)))
    return B.select(fix, B.binary(Op.SUB, q, _c(1, q)), q)


def _remainder_int(a, b):
    r = B.binary(Op.REM, a, b)
    if dtypes.is_unsigned(a.dtype):
        return r
    fix = _and(_neq(r, _c(0, r)), _neq(_lt0(r), _lt0(b)))
    return B.select(fix, B.binary(Op.ADD, r, b), r)


def _divmod_float(a, b):
    if a.dtype.itemsize == 2:
        # NumPy computes half-precision divmod in float32 and rounds once
        f32 = np.dtype(np.float32)
        div, mod = _divmod_float(B.convert(a, f32), B.convert(b, f32))
        return B.convert(div, a.dtype), B.convert(mod, a.dtype)
    mod = B.binary(Op.REM, a, b)
    div = B.binary(Op.DIV, B.binary(Op.SUB, a, mod), b)
    fix = _and(_neq(mod, _c(0, mod)), _neq(_lt0(b), _lt0(mod)))
    mod = B.select(fix, B.binary(Op.ADD, mod, b), mod)
    # a zero remainder takes the divisor's sign
    mod = B.select(_cmp(mod, _c(0, mod), "EQ"),
                   B.select(_lt0(b), _c(-0.0, mod), _c(0.0, mod)), mod)
    div = B.select(fix, B.binary(Op.SUB, div, _c(1, div)), div)
    floordiv = B.unary(Op.FLOOR, div)
    round_up = _cmp(B.binary(Op.SUB, div, floordiv), _c(0.5, div), "GT")
    floordiv = B.select(round_up, B.binary(Op.ADD, floordiv, _c(1, div)), floordiv)
    # NumPy's copysign(0, a/b): a quotient of -0.0 counts as negative
    signed_zero = B.select(_signbit(B.binary(Op.DIV, a, b)), _c(-0.0, div), _c(0.0, div))
    floordiv = B.select(_cmp(div, _c(0, div), "EQ"), signed_zero, floordiv)
    # division by zero: NumPy returns a/b and fmod's NaN
    by_zero = _cmp(b, _c(0, b), "EQ")
    floordiv = B.select(by_zero, B.binary(Op.DIV, a, b), floordiv)
    return floordiv, mod


@builder(np.floor_divide)
def _floor_divide(a, b):
    if dtypes.is_float(a.dtype):
        return _divmod_float(a, b)[0]
    return _floor_divide_int(a, b)


@builder(np.remainder)
def _remainder(a, b):
    if dtypes.is_float(a.dtype):
        return _divmod_float(a, b)[1]
    return _remainder_int(a, b)


@builder(np.divmod)
def _divmod(a, b):
    if dtypes.is_float(a.dtype):
        return _divmod_float(a, b)
    return _floor_divide_int(a, b), _remainder_int(a, b)


# -- NaN-aware and log-domain

def _isnan(x):
    return _neq(x, x)


@builder(np.fmax)
def _fmax(a, b):
    if not dtypes.is_float(a.dtype):
        return B.make(Op.OR if dtypes.is_bool(a.dtype) else Op.MAX, (a, b))
    return B.select(_isnan(b), a, B.select(_isnan(a), b, B.binary(Op.MAX, a, b)))


@builder(np.fmin)
def _fmin(a, b):
    if not dtypes.is_float(a.dtype):
        return B.make(Op.AND if dtypes.is_bool(a.dtype) else Op.MIN, (a, b))
    return B.select(_isnan(b), a, B.select(_isnan(a), b, B.binary(Op.MIN, a, b)))


@builder(np.logaddexp)
@_half_in_f32
def _logaddexp(a, b):
    # max + log1p(exp(-|a - b|)); a == b (both infinite included) gives a + log 2
    tail = B.unary(Op.LOG1P, B.unary(Op.EXP, B.unary(Op.NEG, B.unary(
        Op.ABS, B.binary(Op.SUB, a, b)))))
    out = B.binary(Op.ADD, B.binary(Op.MAX, a, b), tail)
    return B.select(_cmp(a, b, "EQ"), B.binary(Op.ADD, a, _c(math.log(2), a)), out)


@builder(np.logaddexp2)
@_half_in_f32
def _logaddexp2(a, b):
    # NumPy's npy_log2_1p: log1p times log2(e), rather than divided by ln 2
    neg_abs = B.unary(Op.NEG, B.unary(Op.ABS, B.binary(Op.SUB, a, b)))
    tail = B.binary(Op.MUL, B.unary(Op.LOG1P, _exp2(neg_abs)), _c(1 / math.log(2), a))
    out = B.binary(Op.ADD, B.binary(Op.MAX, a, b), tail)
    return B.select(_cmp(a, b, "EQ"), B.binary(Op.ADD, a, _c(1, a)), out)


# -- comparisons and classification

def _compare(a, b, direction):
    if a.dtype == b.dtype:
        return B.compare(a, b, direction)
    # NumPy's exact loops for uint64 against int64 (the only mixed pair it resolves): a
    # negative int64 lies below every uint64; otherwise both compare as uint64
    if np.dtype(a.dtype) == np.int64:
        return _compare(b, a, _MIRRORED[direction])
    signed = b
    negative = _lt0(signed)
    as_unsigned = B.convert(B.select(negative, _c(0, signed), signed), a.dtype)
    below = direction in ("GT", "GE", "NE")   # `a OP b` when b < 0 <= a
    return B.select(negative, B.full(below, a.shape, dtypes.BOOL),
                    B.compare(a, as_unsigned, direction))


_MIRRORED = {"EQ": "EQ", "NE": "NE", "LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}

for _uf, _dir in ((np.equal, "EQ"), (np.not_equal, "NE"), (np.less, "LT"),
                  (np.less_equal, "LE"), (np.greater, "GT"), (np.greater_equal, "GE")):
    builder(_uf)(lambda a, b, _d=_dir: _compare(a, b, _d))


@builder(np.isnan)
def _isnan_builder(x):
    return _isnan(x)


@builder(np.isfinite)
def _isfinite(x):
    if dtypes.is_float(x.dtype):
        return B.unary(Op.IS_FINITE, x)
    return B.full(True, x.shape, dtypes.BOOL)


@builder(np.isinf)
def _isinf(x):
    if dtypes.is_float(x.dtype):
        return B.compare(B.unary(Op.ABS, x), _c(np.inf, x), "EQ")
    return B.full(False, x.shape, dtypes.BOOL)


@builder(np.signbit)
def _signbit(x):
    if not dtypes.is_float(x.dtype):
        return _lt0(x) if dtypes.is_signed(x.dtype) else B.full(False, x.shape, dtypes.BOOL)
    # -0.0 is told apart by 1/x == -inf. The sign of a NaN is not observable in the
    # IR, so NaNs give False (NumPy reports the sign bit of the NaN's encoding).
    zero_sign = _lt0(B.binary(Op.DIV, _c(1, x), x))
    return B.select(_cmp(x, _c(0, x), "EQ"), zero_sign, _lt0(x))


# -- shifts, as multiplication and floor division by powers of two

def _pow2(n, like):
    return B.binary(Op.POW, _c(2, like), n)


def _count_past(n, limit):
    """n >= limit, or n < 0: NumPy compares the count as unsigned, so a negative one is
    past every width."""
    past = _cmp(n, _c(limit, n), "GE")
    return B.binary(Op.OR, past, _lt0(n)) if dtypes.is_signed(n.dtype) else past


@builder(np.left_shift)
def _left_shift(x, n):
    bits = x.dtype.itemsize * 8
    shifted = B.binary(Op.MUL, x, _pow2(n, x))   # wraps exactly like the shift
    return B.select(_count_past(n, bits), _c(0, x), shifted)


@builder(np.right_shift)
def _right_shift(x, n):
    bits = x.dtype.itemsize * 8
    if dtypes.is_unsigned(x.dtype):
        safe_n = B.select(_cmp(n, _c(bits, n), "GE"), _c(0, n), n)
        shifted = B.binary(Op.DIV, x, _pow2(safe_n, x))
        return B.select(_cmp(n, _c(bits, n), "GE"), _c(0, x), shifted)
    # signed: an arithmetic shift is floor division; 2**(bits-1) does not fit, so
    # shifts by bits-1 or more leave only the sign
    too_far = _count_past(n, bits - 1)
    safe_n = B.select(too_far, _c(0, n), n)
    shifted = _floor_divide_int(x, _pow2(safe_n, x))
    return B.select(too_far, B.select(_lt0(x), _c(-1, x), _c(0, x)), shifted)


# -- dispatch from NumPy's protocol

_REDUCE_AS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
              np.logical_and: "all", np.logical_or: "any"}
_ACCUMULATE_AS = {np.add: "cumsum", np.multiply: "cumprod"}
_ACCUMULATE_EXTREME = {np.maximum: Op.CUMMAX, np.minimum: Op.CUMMIN}


def dispatch(ufunc, method, inputs, kwargs):
    """`__array_ufunc__`: route a ufunc call (or one of its methods) to jitlib."""
    from jitlib.trace.registry import lookup
    if ufunc in REFUSED:
        why, hint = REFUSED[ufunc]
        raise errors.UnsupportedError(f"np.{ufunc.__name__} is not supported inside jit: "
                                      f"{why}", hint=hint)
    if ufunc.signature is not None:
        return _generalized(ufunc, method, inputs, kwargs)
    if method == "__call__":
        out = kwargs.pop("out", None)
        where = kwargs.pop("where", True)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("casting", None)
        kwargs.pop("order", None)
        kwargs.pop("subok", None)
        if kwargs:
            raise errors.UnsupportedError(
                f"np.{ufunc.__name__} with {', '.join(kwargs)}= is not supported inside jit")
        return apply(ufunc, inputs, out=out, dtype=dtype, where=where)
    if method == "reduce" and ufunc in _REDUCE_AS:
        (x,) = inputs
        kwargs.setdefault("axis", 0)
        return lookup(_REDUCE_AS[ufunc])(x, **kwargs)
    if method == "accumulate" and ufunc in _ACCUMULATE_AS:
        (x,) = inputs
        kwargs.setdefault("axis", 0)
        if kwargs["axis"] is None and len(T.shape_of(x)) > 1:   # cumsum would flatten
            raise errors.ShapeError(f"np.{ufunc.__name__}.accumulate: accumulate does not "
                                    "allow multiple axes", hint="pass one axis=")
        return lookup(_ACCUMULATE_AS[ufunc])(x, **kwargs)
    if method == "accumulate" and ufunc in _ACCUMULATE_EXTREME:
        from jitlib.trace.functions.reductions import extreme_accumulate
        (x,) = inputs
        return extreme_accumulate(_ACCUMULATE_EXTREME[ufunc], f"{ufunc.__name__}.accumulate",
                                  x, **kwargs)
    if method in ("reduce", "accumulate", "reduceat") and ufunc in BUILDERS:
        from jitlib.trace import ufunc_methods
        return getattr(ufunc_methods, method)(ufunc, *inputs, **kwargs)
    if method == "outer":
        a, b = inputs
        a_shape = T.shape_of(a)
        a = lookup("reshape")(a, tuple(a_shape) + (1,) * len(T.shape_of(b)))
        return apply(ufunc, (a, b), **kwargs)
    if method == "at" and ufunc_at.supported(ufunc):
        target, index, *values = inputs
        if len(values) != 1:
            raise errors.JitlibTypeError(f"np.{ufunc.__name__}.at takes the array, the "
                                         "indices and the values", hint="pass the values")
        loop = _loop(ufunc, (target, _coerce_sequence(values[0])), None)
        ufunc_at.ufunc_at(ufunc, loop, target, index, values[0])
        return None
    if method == "at":
        raise errors.UnsupportedError(
            f"np.{ufunc.__name__}.at is not supported on traced arrays",
            hint="jitlib traces np.add.at, np.subtract.at, np.multiply.at, np.maximum.at "
                 "and np.minimum.at; x.at[i].divide(v) and x.at[i].power(v) cover more")
    raise errors.UnsupportedError(
        f"np.{ufunc.__name__}.{method} is not supported on traced arrays",
        hint="reduce, accumulate, reduceat (static indices), outer and at are")


def _generalized(ufunc, method, inputs, kwargs):
    """A generalized ufunc (matmul, vecdot, ...) is its function, not elementwise;
    NumPy defines none of the methods on them."""
    from jitlib.trace.registry import lookup
    if method != "__call__":
        raise errors.JitlibTypeError(f"method {method} is not allowed in ufunc with "
                                      "non-trivial signature",
                                      hint=f"call np.{ufunc.__name__} itself")
    out = kwargs.pop("out", None)
    for unsupported in ("axes", "axis", "keepdims"):
        if unsupported in kwargs and not (unsupported == "axis" and ufunc is np.vecdot):
            raise errors.UnsupportedError(
                f"np.{ufunc.__name__}(..., {unsupported}=) is not supported inside jit",
                hint="move the core axes last with np.moveaxis first")
    result = lookup(ufunc.__name__)(*inputs, **kwargs)
    return result if out is None else _write_out(ufunc, [result], out, True)[0]


def _loop(ufunc, inputs, dtype):
    # resolve_dtypes takes int/float/complex as weak types; bool is the lowest kind anyway
    keys = tuple(np.dtype(bool) if k is bool else k
                 for k in (T.promotion_key(x) for x in inputs))
    if dtype is None:
        loop = same_type_loop(ufunc, keys)
        if loop is not None:
            return loop
    extra = {}
    if dtype is not None:
        extra["signature"] = (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout
    try:
        loop = ufunc.resolve_dtypes(keys + (None,) * ufunc.nout, **extra)
        if _OBJECT in loop:
            # Python scalars only (a comparison of two ints resolves to the object
            # loop): they are traced as NumPy's default types, which is their loop
            keys = tuple(_DEFAULT_TYPES.get(k, k) for k in keys)
            loop = ufunc.resolve_dtypes(keys + (None,) * ufunc.nout, **extra)
        return loop
    except TypeError as e:  # NumPy's UFuncTypeError / no-loop errors are TypeErrors
        raise errors.JitlibTypeError(f"np.{ufunc.__name__}: {e}") from None


def same_type_loop(ufunc, keys):
    """The loop NumPy picks when every input is one float dtype, given as that dtype or a
    weak Python float (NEP 50: the float dtype wins), found in `ufunc.types`; None for
    anything else. NumPy's own resolution costs 20-40 us the first time each ufunc is
    resolved in a process, a tenth of a warm start's trace; this one agrees with it on
    every ufunc jitlib traces (tested against `resolve_dtypes`)."""
    strong = None
    for k in keys:
        if k is float:
            if ufunc in _WEAK_TO_BOOL:
                return None
            continue
        if k.__class__ is not _DTYPE_CLASS_OF.get(k) or (strong is not None and k != strong):
            return None
        strong = k
    if strong is None or strong.kind != "f":
        return None
    key = (ufunc, strong.char)
    outs = _LOOPS.get(key)
    if outs is None:
        prefix = strong.char * ufunc.nin + "->"
        loop = next((t for t in ufunc.types if t.startswith(prefix)), None)
        if loop is None:
            return None
        outs = _LOOPS[key] = tuple([np.dtype(c) for c in loop[len(prefix):]])
    return (strong,) * ufunc.nin + outs


# NumPy's float dtypes' classes (a weak Python float or another type is no float dtype;
# bfloat16's kind is not "f", so it has no place here)
_DTYPE_CLASS_OF = {np.dtype(t): np.dtype(t).__class__ for t in (np.float16, np.float32,
                                                               np.float64)}
_LOOPS = {}   # (ufunc, input type char) -> output dtypes of its one-type loop
# NumPy's promoters send these to their bool loop when a Python scalar takes part
_WEAK_TO_BOOL = {np.logical_and, np.logical_or, np.logical_xor}
_OBJECT = np.dtype(object)
_DEFAULT_TYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}


def apply(ufunc, inputs, out=None, dtype=None, where=True, operator=False):
    """Trace `ufunc(*inputs, out=out, dtype=dtype, where=where)` with NumPy's semantics.

    `operator`: the call comes from a Python operator (`x * 2.0`), whose result stays
    weak when every operand is (a Python float times a Python float is a Python
    float); a real np.* call returns a NumPy scalar, which is strong.
    """
    build_fn = BUILDERS.get(ufunc)
    if build_fn is None and ufunc in REFUSED:
        return dispatch(ufunc, "__call__", inputs, {})    # raises, with the reason
    if build_fn is None:
        raise errors.UnsupportedError(
            f"np.{ufunc.__name__} is not supported on traced arrays",
            hint="see docs/numpy_support.md for the supported ufuncs")
    if len(inputs) != ufunc.nin:
        raise errors.JitlibTypeError(
            f"np.{ufunc.__name__} takes {ufunc.nin} inputs, got {len(inputs)}")
    inputs = tuple(_coerce_sequence(x) for x in inputs)
    loop = _loop(ufunc, inputs, dtype)
    if any(dtypes.is_complex(dt) for dt in loop[:ufunc.nin]):
        build_fn = _complex_builder_of(ufunc)
    shape = T.broadcast_shapes(*[T.shape_of(x) for x in inputs])
    known = _compare_past_range(ufunc, inputs, loop)
    if known is not None:
        result = T.Tracer(B.full(known, shape, dtypes.BOOL))
        return _write_out(ufunc, [result], out, where)[0] if (
            out is not None or where is not True) else result
    if ufunc is np.power and dtypes.is_integer(loop[-1]):
        _refuse_negative_int_power(inputs[1])
    operands = [T.broadcast(T.as_instr(x, dt), shape) for x, dt in zip(inputs, loop)]
    results = build_fn(*operands)
    if not isinstance(results, tuple):
        results = (results,)
    results = [B.convert(r, dt) for r, dt in zip(results, loop[ufunc.nin:])]
    weak = operator and all(T.is_weak(x) for x in inputs)
    if weak and len(results) == 1 and dtypes.is_integer(results[0].dtype):
        # Python int arithmetic: the range of the exact result, where it is followed
        weak = int_ranges.result_range(ufunc, [T.known_int_bounds(x) for x in inputs]) \
            or True
    wrapped = [T.Tracer(r, weak=weak) for r in results]
    if out is not None or where is not True:
        wrapped = _write_out(ufunc, wrapped, out, where)
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


def _complex_builder_of(ufunc):
    from jitlib.trace.complex_ufuncs import COMPLEX_BUILDERS
    build_fn = COMPLEX_BUILDERS.get(ufunc)
    if build_fn is None:
        raise errors.UnsupportedError(
            f"np.{ufunc.__name__} of complex values is not supported inside jit yet",
            hint="see docs/numpy_support.md for the ufuncs jitlib traces on complex arrays")
    return build_fn


_FLIPPED = {np.less: np.greater, np.less_equal: np.greater_equal, np.greater: np.less,
            np.greater_equal: np.less_equal, np.equal: np.equal, np.not_equal: np.not_equal}


def _compare_past_range(ufunc, inputs, loop):
    """The answer of comparing integers with a Python int their type cannot hold, which
    NumPy gives as the exact one (`uint8_array < 300` is all True), or None."""
    if ufunc not in _FLIPPED or not dtypes.is_integer(loop[0]):
        return None
    for i, value in enumerate(inputs):
        bounds = T.known_int_bounds(value)
        where = int_ranges.placement(bounds, loop[0]) if bounds is not None else None
        if where not in ("below", "above"):
            continue   # inside: an ordinary comparison; unknown: as_instr asks for values
        info = np.iinfo(loop[0])
        op = ufunc if i == 1 else _FLIPPED[ufunc]   # as `array op value`
        # every element (and every int of the range) lies on one side: compare one pair
        return bool(op(info.min, bounds[0]) if where == "above" else op(info.max, bounds[1]))
    return None


def _coerce_sequence(x):
    # lists and tuples of numbers are arrays to NumPy; tracers inside them are not allowed
    if isinstance(x, (list, tuple)):
        if any(isinstance(v, T.Tracer) for v in np.ravel(np.asarray(x, dtype=object))):
            from jitlib.trace.registry import lookup
            return lookup("asarray")(x)
        return T.concrete(x)
    return x


def _write_out(ufunc, results, out, where):
    if out is None:
        raise errors.UnsupportedError(
            f"np.{ufunc.__name__}(..., where=...) without out= leaves elements "
            "uninitialised in NumPy; jitlib cannot reproduce that",
            hint="pass out=, or use np.where(mask, f(x), fallback)")
    if not isinstance(out, tuple):
        out = (out,)
    written = []
    for result, target in zip(results, out):
        if target is None:
            written.append(result)
            continue
        if not isinstance(target, T.Tracer):
            raise errors.TracerConversionError(
                f"np.{ufunc.__name__}(..., out=) cannot write a traced result into a NumPy "
                "array", hint="allocate the output from a traced array (np.empty_like(x)) "
                              "or use the return value")
        if not np.can_cast(result.dtype, target.dtype, "same_kind"):
            raise errors.JitlibTypeError(
                f"Cannot cast ufunc '{ufunc.__name__}' output from {result.dtype} to "
                f"{target.dtype} with casting rule 'same_kind'",
                hint=f"convert explicitly, e.g. x = (x {ufunc.__name__} y).astype(...)")
        if T.broadcast_shapes(result.shape, target.shape) != target.shape:
            raise errors.ShapeError(
                f"non-broadcastable output operand with shape {target.shape} doesn't match "
                f"the broadcast shape {result.shape}")
        value = T.broadcast(B.convert(result.instr, target.dtype), target.shape)
        if where is not True:
            mask = T.broadcast(T.as_instr(where, dtypes.BOOL), target.shape)
            value = B.select(mask, value, target.instr)
        target._assign(value)
        written.append(target)
    return written


# the ufuncs composed in a module of their own register themselves here
from jitlib.trace import composed_ufuncs, float_parts, integer_ufuncs  # noqa: E402,F401
