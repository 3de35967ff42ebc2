"""Distributions from random bits, as IR built only of exactly rounded operations.

Bit-identity across backends rests on one rule: every float op used here is +, -, *, /,
sqrt, compare, select or an exact convert, which IEEE 754 rounds the same way everywhere
(and no backend contracts a*b+c into an fma: the LLVM backend emits plain fmul/fadd, the
Triton backend compiles with `enable_fp_fusion=False`). No transcendental op is used, so
`normal` carries its own logarithm (`log_unit`) and erfinv (Giles' polynomials).

Floats in [0, 1) are the top mantissa-width bits times 2^-mantissa, the same values JAX
gets by OR-ing bits into the mantissa of 1.0 and subtracting 1 (the IR has no bitcast;
neither way rounds).
"""
import math

import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.random import threefry as T
from jitlib.random.threefry import full

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _mul(a, b):
    return B.binary(Op.MUL, a, b)


def _add(a, b):
    return B.binary(Op.ADD, a, b)


def _sub(a, b):
    return B.binary(Op.SUB, a, b)


def _lt(a, b):
    return B.compare(a, b, "LT")


def unit_floats(key, shape, dtype):
    """Uniform floats in [0, 1) of `dtype`, each of its mantissa's width of random bits
    (JAX's layout: 64 bits for f64, the low 16 for f16, the low 8 for bf16)."""
    if dtype == F64:
        b0, b1 = T.hash_counters(key, shape)
        # (b0 << 20 | b1 >> 12) * 2^-52, as two exact terms whose sum is exact
        hi = _mul(B.convert(b0, F64), B.full(2.0 ** -32, shape, F64))
        lo = _mul(B.convert(T.shift_right(b1, 12), F64), B.full(2.0 ** -52, shape, F64))
        return _add(hi, lo)
    nmant = dtypes.finfo(dtype).nmant
    nbits = 8 * dtype.itemsize if nmant >= 8 else 8
    word = T.bits32(key, shape)
    if nbits < 32:
        word = B.binary(Op.AND, word, full((1 << nbits) - 1, word))
    mantissa = T.shift_right(word, nbits - nmant)
    f = _mul(B.convert(mantissa, F32), B.full(2.0 ** -nmant, shape, F32))
    return B.convert(f, dtype)   # exact: nmant bits fit the narrow type


def uniform(key, shape, dtype, lo, hi):
    """JAX's uniform: f * (hi - lo) + lo, floored at lo; `lo`, `hi` of `shape`, `dtype`."""
    f = unit_floats(key, shape, dtype)
    return B.binary(Op.MAX, lo, _add(_mul(f, _sub(hi, lo)), lo))


# -- log of (0, 1] from exact ops

# ln 2 split so that e * _LN2_HI is exact for |e| < 64 (f32) or 2^11 (f64)
_LN2_HI = {F32: 0.693145751953125, F64: 6.93147180369123816490e-01}
_LN2_LO = {F32: 1.428606765330187e-06, F64: 1.90821492927058770002e-10}
# 2 atanh(s) = log((1+s)/(1-s)); |s| <= 0.1716 after centring, so the series
# s^2k / (2k+1) reaches f32's precision by k = 5 and f64's by k = 10
_ATANH_TERMS = {F32: 5, F64: 10}


def log_unit(y):
    """log(y) for y in [2^-63, 1] (f32 or f64), from exact ops only: y = m * 2^e by
    compare-and-scale steps, then log(m) = 2 atanh((m-1)/(m+1)) by its series."""
    dt = np.dtype(y.dtype)

    def c(v):
        return B.full(v, y.shape, dt)
    m, e = y, c(0.0)
    for s in (32, 16, 8, 4, 2, 1):   # m into [1/2, 1]; every scale is a power of two
        small = _lt(m, c(2.0 ** -s))
        m = B.select(small, _mul(m, c(2.0 ** s)), m)
        e = B.select(small, _sub(e, c(float(s))), e)
    low = _lt(m, c(math.sqrt(0.5)))   # m into [sqrt(1/2), sqrt(2))
    m = B.select(low, _mul(m, c(2.0)), m)
    e = B.select(low, _sub(e, c(1.0)), e)
    f = _sub(m, c(1.0))               # exact (Sterbenz)
    s = B.binary(Op.DIV, f, _add(f, c(2.0)))
    z = _mul(s, s)
    n = _ATANH_TERMS[dt]
    r = c(1.0 / (2 * n + 1))
    for k in range(n - 1, 0, -1):
        r = _add(_mul(r, z), c(1.0 / (2 * k + 1)))
    half_log_m = _add(s, _mul(s, _mul(z, r)))       # atanh(s)
    log_m = _mul(half_log_m, c(2.0))
    return _add(_mul(e, c(_LN2_HI[dt])), _add(_mul(e, c(_LN2_LO[dt])), log_m))


# -- erfinv: M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade
# Edition (2011): a polynomial in w = -log(1 - x^2), one per range of w. Highest
# degree first.

_GILES_F32 = (
    (5.0, 2.5, False, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                       0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                       1.50140941)),
    (math.inf, 3.0, True, (-0.000200214257, 0.000100950558, 0.00134934322,
                           -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                           1.00167406, 2.83297682)),
)
_GILES_F64 = (
    (6.25, 3.125, False, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (math.inf, 5.0, True, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def erfinv(x):
    """erfinv(x) for x in (-1, 1), x of f32 or f64, with 1 - x^2 >= 2^-63."""
    dt = np.dtype(x.dtype)

    def c(v):
        return B.full(v, x.shape, dt)
    one = c(1.0)
    w = B.unary(Op.NEG, log_unit(_mul(_sub(one, x), _add(one, x))))
    root_w = B.unary(Op.SQRT, w)
    p = None
    # every range's polynomial, then a select from the widest range down
    for bound, centre, on_root, coeffs in reversed(_GILES_F32 if dt == F32 else _GILES_F64):
        t = _sub(root_w if on_root else w, c(centre))
        q = c(coeffs[0])
        for a in coeffs[1:]:
            q = _add(_mul(q, t), c(a))
        p = q if p is None else B.select(_lt(w, c(bound)), q, p)
    return _mul(p, x)


def normal(key, shape, dtype):
    """Standard normal: sqrt(2) erfinv(u), u uniform in (-1, 1) as JAX draws it. 16-bit
    types are drawn in f32 and rounded once."""
    wide = F64 if dtype == F64 else F32
    lo = B.full(np.nextafter(wide.type(-1.0), wide.type(0.0)), shape, wide)
    u = uniform(key, shape, wide, lo, B.full(1.0, shape, wide))
    z = _mul(B.full(math.sqrt(2.0), shape, wide), erfinv(u))
    return B.convert(z, dtype)


# -- integers

def _rem_or_self(a, span):
    # a % span, or a itself where span is 0: a span of 2^nbits wrapped to 0
    safe = B.select(B.compare(span, full(0, span), "EQ"), full(1, span), span)
    return B.select(B.compare(span, full(0, span), "EQ"), a,
                    B.binary(Op.REM, a, safe))


def randint(key, shape, lo, hi, above_max, dtype):
    """JAX's randint: two draws of the type's width, combined modulo the span, which
    halves the bias of a single draw's modulo. `lo`, `hi` are already clipped into
    `dtype` (of `shape`); `above_max` says where the caller's maxval was above the
    type's maximum, so the span reaches the top value."""
    nbits = 8 * dtype.itemsize
    udt = np.dtype(f"uint{nbits}")
    k1, k2 = T.split_pair(key)
    high_bits, low_bits = T.bits(k1, nbits, shape), T.bits(k2, nbits, shape)
    span = _sub(B.convert(hi, udt), B.convert(lo, udt))   # wraps, as the span should
    empty = B.compare(hi, lo, "LE")
    span = B.select(empty, full(1, span), span)
    span = B.select(B.binary(Op.AND, above_max, B.unary(Op.NOT, empty)),
                    _add(span, full(1, span)), span)
    mult = _rem_or_self(full(1 << (nbits // 2), span), span)   # 2^nbits mod span
    mult = _rem_or_self(_mul(mult, mult), span)
    offset = _add(_mul(_rem_or_self(high_bits, span), mult), _rem_or_self(low_bits, span))
    offset = _rem_or_self(offset, span)
    return _add(lo, B.convert(offset, dtype))


# -- permutations

def shuffle_rounds(n):
    """Sorts by fresh 32-bit keys JAX makes so that ties are unlikely to survive."""
    return int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))


def stable_order(keys):
    """The permutation that sorts uint32 `keys` [n] stably, as int64 [n]: order[r] is the
    index of the r-th smallest. Built from n x n compares and sums (the IR has no sort),
    so it costs O(n^2)."""
    n = keys.shape[0]
    i64 = dtypes.INDEX
    k_i = B.broadcast_in_dim(keys, (n, n), (0,))
    k_j = B.broadcast_in_dim(keys, (n, n), (1,))
    idx_i, idx_j = B.iota((n, n), i64, 0), B.iota((n, n), i64, 1)
    before = B.binary(Op.OR, _lt(k_j, k_i),
                      B.binary(Op.AND, B.compare(k_j, k_i, "EQ"), _lt(idx_j, idx_i)))
    rank = B.reduce(Op.REDUCE_SUM, B.convert(before, i64), (1,))   # rank of element i
    # order[r] = the i whose rank is r: one match per row
    hit = B.compare(B.broadcast_in_dim(rank, (n, n), (1,)), idx_i, "EQ")
    return B.reduce(Op.REDUCE_SUM, B.select(hit, idx_j, B.full(0, (n, n), i64)), (1,))


def sort_keys(key, n, rounds):
    """The rounds' 32-bit sort keys [n] each, and their subkeys, as JAX's shuffle
    draws them: key, sub = split(key) before every round."""
    out = []
    for _ in range(rounds):
        key, sub = T.split_pair(key)
        out.append(T.bits32(sub, (n,)))
    return out
