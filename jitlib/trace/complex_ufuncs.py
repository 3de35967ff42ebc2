"""NumPy's ufuncs on complex operands: which ones jitlib traces, and how.

Most are the real builder's op applied to complex values (the IR's arithmetic,
exp/log/sqrt/trig and pow take complex operands, with NumPy's complex loops as their
meaning). The IR has no order on complex numbers, so comparisons and maximum/minimum
spell NumPy's lexicographic one (real parts first, then imaginary parts) out of the
parts, with NumPy's NaN rules. A ufunc NumPy defines on complex values that is not
listed here is refused by name rather than traced through a real formula.
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op

COMPLEX_BUILDERS = {}


def _complex_builder(*ufuncs):
    def register(fn):
        for uf in ufuncs:
            COMPLEX_BUILDERS[uf] = fn
        return fn
    return register


def _same_op(op):
    def build_op(*xs):
        return B.make(op, xs)
    return build_op


for _uf, _op in ((np.add, Op.ADD), (np.subtract, Op.SUB), (np.multiply, Op.MUL),
                 (np.true_divide, Op.DIV), (np.power, Op.POW), (np.negative, Op.NEG),
                 (np.absolute, Op.ABS), (np.sign, Op.SIGN), (np.exp, Op.EXP),
                 (np.expm1, Op.EXPM1), (np.log, Op.LOG), (np.log1p, Op.LOG1P),
                 (np.sqrt, Op.SQRT), (np.tanh, Op.TANH), (np.sin, Op.SIN), (np.cos, Op.COS),
                 (np.tan, Op.TAN), (np.conjugate, Op.CONJ), (np.sinh, Op.SINH),
                 (np.cosh, Op.COSH), (np.arcsin, Op.ASIN), (np.arccos, Op.ACOS),
                 (np.arctan, Op.ATAN), (np.arcsinh, Op.ASINH), (np.arccosh, Op.ACOSH),
                 (np.arctanh, Op.ATANH)):
    _complex_builder(_uf)(_same_op(_op))


def _scaled(fn, factor):
    """NumPy's exp2/log2/log10 of complex values: exp(z * ln 2), log(z) * log2(e), ...,
    the real factor applied to each part (not a complex product, which would turn an
    infinite part's 0 * inf into NaN)."""
    def scale(z):
        re, im = B.unary(Op.REAL, z), B.unary(Op.IMAG, z)
        c = B.full(factor, re.shape, re.dtype)
        return B.binary(Op.COMPLEX, B.binary(Op.MUL, re, c), B.binary(Op.MUL, im, c))
    return scale if fn is None else lambda z: fn(scale(z))


# NumPy's NPY_LOGE2, NPY_LOG2E and NPY_LOG10E, rounded to double
_LN2, _LOG2E, _LOG10E = 0.6931471805599453, 1.4426950408889634, 0.4342944819032518
_complex_builder(np.exp2)(_scaled(lambda z: B.unary(Op.EXP, z), _LN2))
_complex_builder(np.log2)(lambda z: _scaled(None, _LOG2E)(B.unary(Op.LOG, z)))
_complex_builder(np.log10)(lambda z: _scaled(None, _LOG10E)(B.unary(Op.LOG, z)))


@_complex_builder(np.rint)
def _rint(z):
    # NumPy's nc_rint: each part to the nearest integer, ties to even
    re, im = _parts(z)
    return B.binary(Op.COMPLEX, B.unary(Op.ROUND, re), B.unary(Op.ROUND, im))


@_complex_builder(np.positive)
def _positive(x):
    return x


@_complex_builder(np.square)
def _square(x):
    return B.binary(Op.MUL, x, x)


@_complex_builder(np.reciprocal)
def _reciprocal(x):
    # pow's exponent -1 is np.reciprocal for complex values (interpreter.py), which
    # rounds unlike 1/x
    return B.binary(Op.POW, x, B.full(-1, x.shape, x.dtype))


# -- parts and their predicates

def _parts(z):
    return B.unary(Op.REAL, z), B.unary(Op.IMAG, z)


def _either(*ps):
    out = ps[0]
    for p in ps[1:]:
        out = B.binary(Op.OR, out, p)
    return out


def _both(*ps):
    out = ps[0]
    for p in ps[1:]:
        out = B.binary(Op.AND, out, p)
    return out


def _nan(x):
    return B.compare(x, x, "NE")


@_complex_builder(np.isnan)
def _isnan(z):
    return _either(*map(_nan, _parts(z)))


@_complex_builder(np.isfinite)
def _isfinite(z):
    return _both(*(B.unary(Op.IS_FINITE, p) for p in _parts(z)))


@_complex_builder(np.isinf)
def _isinf(z):
    return _either(*(B.compare(B.unary(Op.ABS, p), B.full(np.inf, p.shape, p.dtype), "EQ")
                     for p in _parts(z)))


# -- NumPy's lexicographic order (its CLT/CLE/CGT/CGE macros)

def _ordered(a, b, direction):
    """a OP b on complex values: the real parts decide, unless an imaginary part is NaN;
    equal real parts leave it to the imaginary parts."""
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    strict = direction[:1] + "T"    # LE -> LT, GE -> GT
    by_real = _both(B.compare(ar, br, strict),
                    B.unary(Op.NOT, _either(_nan(ai), _nan(bi))))
    by_imag = _both(B.compare(ar, br, "EQ"), B.compare(ai, bi, direction))
    return _either(by_real, by_imag)


for _uf, _dir in ((np.less, "LT"), (np.less_equal, "LE"), (np.greater, "GT"),
                  (np.greater_equal, "GE")):
    _complex_builder(_uf)(lambda a, b, _d=_dir: _ordered(a, b, _d))
for _uf, _dir in ((np.equal, "EQ"), (np.not_equal, "NE")):
    _complex_builder(_uf)(lambda a, b, _d=_dir: B.compare(a, b, _d))


def _extreme(keep_first_when):
    """maximum/minimum: the first operand when it is NaN anywhere or wins, else the
    second (NumPy's complex loop, so NaNs propagate from either side)."""
    def build_op(a, b):
        keep = _either(_isnan(a), _ordered(a, b, keep_first_when))
        return B.select(keep, a, b)
    return build_op


_complex_builder(np.maximum)(_extreme("GE"))
_complex_builder(np.minimum)(_extreme("LE"))


def _nan_ignoring(keep_first_when):
    """fmax/fmin: the first operand when the second is NaN anywhere or the first wins."""
    def build_op(a, b):
        keep = _either(_isnan(b), _ordered(a, b, keep_first_when))
        return B.select(keep, a, b)
    return build_op


_complex_builder(np.fmax)(_nan_ignoring("GE"))
_complex_builder(np.fmin)(_nan_ignoring("LE"))


def _truth(z):
    return B.compare(z, B.full(0, z.shape, z.dtype), "NE")


for _uf, _op in ((np.logical_and, Op.AND), (np.logical_or, Op.OR),
                 (np.logical_xor, Op.XOR), (np.logical_not, Op.NOT)):
    _complex_builder(_uf)(lambda *xs, _o=_op: B.make(
        _o, [_truth(x) if dtypes.is_complex(x.dtype) else x for x in xs]))
