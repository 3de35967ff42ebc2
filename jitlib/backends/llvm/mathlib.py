"""Vectorizable transcendental functions, as LLVM IR text, for the CPU backend.

Calls into libm stop LLVM's loop vectorizer, so each function here is straight-line IR:
range reduction, a polynomial, and `select`s for the special cases; the only calls are
LLVM intrinsics with vector forms (fma, fabs, floor, rint, copysign; ldexp where the
host has AVX-512, `_native_ldexp`). Once inlined into a kernel loop, LLVM turns them
into AVX2 / AVX-512 code.

    function_ir("exp", np.float32)     # -> 'define internal float @jl_exp_f32(float %x) ...'
    declarations_for([("exp", np.float32), ("pow", np.float64)])   # for one module

Every function uses `llvm.fma` (exact fused multiply-add), so results are the same bits on
every x86-64 CPU; without hardware FMA they are still right, only slow. Polynomial
coefficients were fitted offline (weighted Lawson/minimax fits in 40-digit arithmetic,
then rounded to the target precision). Accuracy and special cases: docs/cpu_math_accuracy.md.
"""
import functools
import struct

import numpy as np

UNARY = ("exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "erf")
BINARY = ("pow", "atan2")
# Forms of a function for a restricted domain, which a caller uses where it knows the
# argument lies there; elsewhere their value is unspecified (but never undefined
# behaviour). name -> (the full function, the domain in words).
RESTRICTED = {"exp_nonpositive": ("exp", "x <= 0 or NaN")}
# (name, np.dtype) pairs; `is_supported` also accepts scalar types such as np.float32.
SUPPORTED = frozenset((n, np.dtype(t)) for n in UNARY + BINARY + tuple(RESTRICTED)
                      for t in (np.float32, np.float64))


def is_supported(name, dtype) -> bool:
    """Whether `function_ir(name, dtype)` exists."""
    try:
        return (name, np.dtype(dtype)) in SUPPORTED
    except TypeError:
        return False


class _Fmt:
    """What the generators need to know about one floating-point format."""

    def __init__(self, ty, ity, suffix, mant, bias, dtype):
        self.ty, self.ity, self.suffix = ty, ity, suffix
        self.mant, self.bias, self.dtype = mant, bias, np.dtype(dtype)
        self.min_normal = float(np.finfo(dtype).smallest_normal)


_F32 = _Fmt("float", "i32", "f32", 23, 127, np.float32)
_F64 = _Fmt("double", "i64", "f64", 52, 1023, np.float64)
_FMTS = {np.dtype(np.float32): _F32, np.dtype(np.float64): _F64}
_FLOAT_TYS = ("float", "double")
_INTRINSIC_SUFFIX = {"float": "f32", "double": "f64"}


# ---------------------------------------------------------------- the IR builder

class _Val:
    """An SSA value or constant of LLVM type `ty`; the operators emit IR."""

    __slots__ = ("e", "ref", "ty")

    def __init__(self, e, ref, ty):
        self.e, self.ref, self.ty = e, ref, ty

    def __str__(self):
        return self.ref

    def _c(self, o):
        return o if isinstance(o, _Val) else self.e.const(o, self.ty)

    def _arith(self, fop, iop, a, b):
        return self.e.bin(fop if self.ty in _FLOAT_TYS else iop, self._c(a), self._c(b))

    def __add__(self, o):
        return self._arith("fadd", "add", self, o)

    def __radd__(self, o):
        return self._arith("fadd", "add", o, self)

    def __sub__(self, o):
        return self._arith("fsub", "sub", self, o)

    def __rsub__(self, o):
        return self._arith("fsub", "sub", o, self)

    def __mul__(self, o):
        return self._arith("fmul", "mul", self, o)

    def __rmul__(self, o):
        return self._arith("fmul", "mul", o, self)

    def __truediv__(self, o):
        return self.e.bin("fdiv", self, self._c(o))

    def __rtruediv__(self, o):
        return self.e.bin("fdiv", self._c(o), self)

    def __neg__(self):
        return self.e.emit(self.ty, f"fneg {self.ty} {self}")

    def __and__(self, o):
        return self.e.bin("and", self, self._c(o))

    def __or__(self, o):
        return self.e.bin("or", self, self._c(o))

    def __lshift__(self, o):
        return self.e.bin("shl", self, self._c(o))

    def __rshift__(self, o):      # arithmetic: exponents are signed
        return self.e.bin("ashr", self, self._c(o))

    def _cmp(self, pred, o):
        if self.ty in _FLOAT_TYS:
            return self.e.emit("i1", f"fcmp {pred} {self.ty} {self}, {self._c(o)}")
        ipred = {"olt": "slt", "ogt": "sgt", "oeq": "eq", "une": "ne"}[pred]
        return self.e.emit("i1", f"icmp {ipred} {self.ty} {self}, {self._c(o)}")

    # Ordered comparisons are false on NaN; `ult` (less, or unordered) is true on NaN.
    def lt(self, o):
        return self._cmp("olt", o)

    def gt(self, o):
        return self._cmp("ogt", o)

    def eq(self, o):
        return self._cmp("oeq", o)

    def ne(self, o):
        return self._cmp("une", o)

    def ult(self, o):
        return self._cmp("ult", o)

    def ugt(self, o):
        return self._cmp("ugt", o)

    def isnan(self):
        return self._cmp("uno", self)


class _Emitter:
    """Collects the body of one function and the intrinsics it calls."""

    def __init__(self):
        self.lines = []
        self.intrinsics = {}      # declare line -> None, in first-use order
        self._n = 0

    def emit(self, ty, text):
        self._n += 1
        ref = f"%t{self._n}"
        self.lines.append(f"  {ref} = {text}")
        return _Val(self, ref, ty)

    def const(self, v, ty):
        if ty in _FLOAT_TYS:
            if ty == "float":       # LLVM spells float constants as the exact double value
                v = float(np.float32(v))
            bits = struct.unpack("<Q", struct.pack("<d", float(v)))[0]
            return _Val(self, f"0x{bits:016X}", ty)
        if ty == "i1":
            return _Val(self, "true" if v else "false", ty)
        return _Val(self, str(int(v)), ty)

    def bin(self, op, a, b):
        return self.emit(a.ty, f"{op} {a.ty} {a}, {b}")

    def call(self, name, *args):
        ty = args[0].ty
        fn = f"llvm.{name}.{_INTRINSIC_SUFFIX[ty]}"
        params = ", ".join([ty] * len(args))
        self.intrinsics.setdefault(f"declare {ty} @{fn}({params})")
        return self.emit(ty, f"call {ty} @{fn}({', '.join(f'{ty} {a}' for a in args)})")

    def ldexp(self, p, k):
        """p * 2**k for an i32 k, rounded once (llvm.ldexp)."""
        fn = f"llvm.ldexp.{_INTRINSIC_SUFFIX[p.ty]}.i32"
        self.intrinsics.setdefault(f"declare {p.ty} @{fn}({p.ty}, i32)")
        return self.emit(p.ty, f"call {p.ty} @{fn}({p.ty} {p}, i32 {k})")

    def cast(self, op, v, ty):
        return self.emit(ty, f"{op} {v.ty} {v} to {ty}")


def _fma(a, b, c):
    a = a if isinstance(a, _Val) else b._c(a)
    return a.e.call("fma", a, a._c(b), a._c(c))


def _fabs(a):
    return a.e.call("fabs", a)


def _rint(a):
    return a.e.call("rint", a)


def _floor(a):
    return a.e.call("floor", a)


def _copysign(mag, sign):
    return mag.e.call("copysign", mag, sign)


def _select(cond, a, b):
    ref = a if isinstance(a, _Val) else b
    a, b = ref._c(a), ref._c(b)
    return ref.e.emit(ref.ty, f"select i1 {cond}, {ref.ty} {a}, {ref.ty} {b}")


def _or(c1, c2):
    return c1.e.bin("or", c1, c2)


def _and(c1, c2):
    return c1.e.bin("and", c1, c2)


def _horner(x, coeffs):
    """coeffs[0] + x*coeffs[1] + ..., by fused Horner steps."""
    acc = x._c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fma(acc, x, c)
    return acc


def _clamp(x, lo, hi):
    """`x` limited to [lo, hi]; NaN becomes `lo` (callers select NaN back in)."""
    t = _select(x.gt(lo), x, lo)
    return _select(t.lt(hi), t, hi)


def _to_int(f, v):
    return v.e.cast("fptosi", v, f.ity)


def _pow2(f, ki):
    """2**ki as a float, for an integer `ki` in the normal exponent range."""
    return ki.e.cast("bitcast", (ki + f.bias) << f.mant, f.ty)


def _two_sum(a, b):
    """(s, err) with s + err == a + b exactly, for any order of magnitudes."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _div_pair(nh, nl, dh, dl):
    """(nh + nl) / (dh + dl) to ~0.5 ulp, the pairs unevaluated sums with |lo| < |hi|.

    One reciprocal, a quotient, and one correction step on the residual of the whole pairs.
    """
    inv = 1.0 / (dh + dl)
    q = (nh + nl) * inv
    return _fma(_fma(-q, dh, nh) + (nl - q * dl), inv, q)


def _two_sum_fast(a, b):
    """(s, err) with s + err == a + b exactly, provided |a| >= |b| or a == 0."""
    s = a + b
    return s, b - (s - a)


# ---------------------------------------------------------------- constants

_LN2 = 0.6931471805599453
# ln2 minus _LN2 as rounded to each format (the second Cody-Waite part)
_LN2_LO = {"f32": -1.9046542121259336e-09, "f64": 2.3190468138462996e-17}
_LOG2E = 1.4426950408889634
# ln2 with its low bits cleared (16 / 40 significant bits), so that e * LN2_HI is exact for
# every binary exponent e that log meets; LN2_HI_LO is the rest of ln2.
_LN2_HI = {"f32": 0.693145751953125, "f64": 0.6931471805601177}
_LN2_HI_LO = {"f32": 1.428606765330187e-06, "f64": -1.7239444525614835e-13}

_TWO_OVER_PI = 0.6366197723675814
# 2/pi - TWO_OVER_PI rounded to each format: n's rounding check in _trig_reduce needs it.
_TWO_OVER_PI_LO = {"f32": 2.5682552973194106e-08, "f64": -3.935735335036497e-17}
# pi/2 as a sum of three (four for float32) parts, each rounded to the format.
_PIO2 = {
    "f32": (1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15,
            1.056299898220315e-23),
    "f64": (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33),
}

# expm1(r) ~= r + r*r*Q(r) on |r| <= ln2/2 (+ slack for the rounding of k); relative fit.
_EXPM1_Q = {
    "f32": (0.4999999701976776, 0.16666537523269653, 0.041667211800813675,
            0.008367249742150307, 0.0013882931089028716),
    "f64": (0.5000000000000006, 0.16666666666666577, 0.04166666666656794,
            0.008333333333396295, 0.0013888888934633337, 0.00019841269707809018,
            2.480150140531842e-05, 2.7557413701096464e-06, 2.7627636016356716e-07,
            2.505323027573679e-08),
}
# log1p(f) = 2s + s*z*R(z), s = f/(2+f), z = s*s, |s| <= 3 - 2*sqrt(2).
_LOG_R = {
    "f32": (0.6666678190231323, 0.3997706472873688, 0.2988549768924713),
    "f64": (0.666666666666674, 0.3999999999938046, 0.28571428750741623,
            0.22222197642609706, 0.181836163036164, 0.15312633175243137, 0.1481096193669129),
}
# pow's extra-precise log: R(z) = 2/3 + z*T2(z).
_POW_T2 = (0.40000000000002417, 0.28571428570018004, 0.2222222253518175,
           0.18181782977144192, 0.15386823650649376, 0.132552248320347, 0.13211525748308794)
# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4.
_SIN_S = {
    "f32": (-0.1666666716337204, 0.008333329111337662, -0.00019839296874124557,
            2.717978759392281e-06),
    "f64": (-0.1666666666666663, 0.008333333333321927, -0.0001984126982942381,
            2.755731356037997e-06, -2.5050737742316073e-08, 1.589562569755248e-10),
}
_COS_C = {
    "f32": (0.04166664555668831, -0.0013887304812669754, 2.4431816200376488e-05),
    "f64": (0.04166666666666659, -0.0013888888888872728, 2.4801587288645668e-05,
            -2.755731411896526e-07, 2.087569250301749e-09, -1.1358096835236377e-11),
}
# atan(t) = t + t^3 A(t^2) on |t| <= tan(pi/8).
_ATAN_A = {
    "f32": (-0.3333331346511841, 0.1999841332435608, -0.1424238532781601,
            0.10584953427314758, -0.060549356043338776),
    "f64": (-0.3333333333333318, 0.19999999999949014, -0.14285714279716324,
            0.1111111075864259, -0.09090897024575197, 0.07692046875209906,
            -0.0666294944343352, 0.05846745109437871, -0.05034071211340786,
            0.03792980156065818, -0.017757847752444118),
}
# erf(x) = x + x*P(x^2) on |x| <= 1.
_ERF_P = {
    "f32": (0.12837916612625122, -0.3761262595653534, 0.1128358393907547,
            -0.02685377188026905, 0.005188257899135351, -0.0008009631419554353,
            7.852161070331931e-05),
    "f64": (0.1283791670955126, -0.3761263890318375, 0.11283791670954858,
            -0.026866170645072948, 0.005223977624781467, -0.0008548326978779256,
            0.00012055331038297046, -1.4925593540921595e-05, 1.6460973363741737e-06,
            -1.6350030984483658e-07, 1.4657918185807683e-08, -1.1365812140503488e-09,
            5.945505123188838e-11),
}
# erf(x) = 1 - exp(-x^2 + H(|x| - center)) for 1 <= |x|, piecewise: (upper bound, center,
# coefficients); fitted for absolute error in erf (weight erfc/erf).
_ERF_H = {
    "f32": ((4.0, 2.5, (-1.556817889213562, -0.3526943624019623, 0.05611524358391762,
                        -0.010714075528085232, 0.0024629521649330854, -0.00015300273662433028,
                        0.00018620683113113046)),),
    "f64": (
        (1.5, 1.25, (-1.0001536619221256, -0.5677239416692396, 0.12918983594122135,
                     -0.0326870086826292, 0.007791961611593491, -0.0016069509614641845,
                     0.0002467839937704688, -1.0041702101294794e-05, -1.0830867733223818e-05,
                     5.166882222548911e-06, -1.44591846854786e-06, 2.466889394445208e-07)),
        (2.25, 1.875, (-1.3114467176930773, -0.43802371386343436, 0.08277314955270097,
                       -0.01837039942972158, 0.004061666999004368, -0.0008408815204869287,
                       0.0001542383369080736, -2.2498167958677525e-05, 1.5818260384034577e-06,
                       4.739326321346748e-07, -2.754281238425966e-07, 8.898901842817616e-08)),
        (6.0, 4.125, (-2.0169177647005454, -0.22991140695329962, 0.0251858214873769,
                      -0.003515756619236515, 0.0005285185878518261, -8.08283934573639e-05,
                      1.279725455181454e-05, -1.4716677040089038e-06, 5.013132523862145e-07,
                      5.1355652088903144e-08, 2.3860727825584928e-08, 1.146546045985513e-09)),
    ),
}

_INF = float("inf")
_NAN = float("nan")


# ---------------------------------------------------------------- shared cores

def _minus_k_ln2(f, k, x):
    """x - k*ln2 for an integer-valued float k near x/ln2, in two fmas (Cody-Waite). The
    first is exact: x and k*LN2 are multiples of ulp(LN2)/2 (or k = 0) and differ by
    less than 1."""
    return _fma(-k, _LN2_LO[f.suffix], _fma(-k, _LN2, x))


def _exponent_field(f, kf):
    """The float whose exponent field (sign included) holds the low bits of kf's
    mantissa: 2^(those bits - bias) where a shifter fma left them in [1, 2*bias]."""
    return kf.e.cast("bitcast", kf.e.cast("bitcast", kf, f.ity) << f.mant, f.ty)


def _exp_reduce(f, x, lo=None):
    """(k, r) with x + lo = k*ln2 + r, |r| <= ~ln2/2; `x` finite and clamped by the caller."""
    k = _rint(x * _LOG2E)
    r = _minus_k_ln2(f, k, x)
    if lo is not None:
        r = r + lo
    return k, r


def _expm1_poly(f, r):
    return _fma(r * r, _horner(r, _EXPM1_Q[f.suffix]), r)


def _scale2(f, p, k, ki=None):
    """p * 2**k rounded once (to a subnormal where it is one, to inf past the range):
    `llvm.ldexp` where the host does it in one instruction (AVX-512's vscalef: the
    same bits in 3 instructions instead of 9, exp f32 a quarter faster), else in two
    exact-then-rounding multiplications by powers of two. `ki`: k as an integer, where
    the caller has it without a conversion."""
    if ki is None:
        ki = _to_int(f, k)
    if _native_ldexp():
        k32 = ki if f.ity == "i32" else ki.e.cast("trunc", ki, "i32")
        return p.e.ldexp(p, k32)
    k1 = ki >> 1
    return p * _pow2(f, k1) * _pow2(f, ki - k1)


@functools.lru_cache(maxsize=None)
def _native_ldexp():
    """Whether the host has AVX-512F, where LLVM lowers a vector ldexp to vscalef.
    Elsewhere it may become a libm call per element, which stops vectorization."""
    import llvmlite.binding as llvm   # here only: mathlib is imported without it
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:              # no feature list on this host
        features = ""
    return "+avx512f" in features.split(",")


def _exp_core(f, x, lo=None):
    """exp(x + lo), for x clamped so that 2^(k/2) is a normal number (k = rint(x/ln2))."""
    k, r = _exp_reduce(f, x, lo)
    return _scale2(f, 1.0 + _expm1_poly(f, r), k)


def _expm1_parts(f, x):
    """(s, rh, p) with expm1(x) ~= 2 * (s*p + (s*rh + (s - 1/2))), s = 2^(k-1).

    x is clamped to [-60, 710] (f64) / [-30, 89] (f32) and not tiny. With s = 2^(k-1) the
    scale cannot overflow at k = 1024, and rh is kept apart from p = expm1(r) - rh until the
    end, so the cancellation in 2^k * expm1(r) + (2^k - 1) does not magnify a rounding.
    """
    k = _rint(x * _LOG2E)
    r1 = _fma(-k, _LN2, x)
    # r = rh + rl exactly (Fast2Sum): expm1 keeps r's rounding error, which exp can afford.
    rh, rl = _two_sum_fast(r1, -k * _LN2_LO[f.suffix])
    p = _fma(rh * rh, _horner(rh, _EXPM1_Q[f.suffix]), rl)   # expm1(rh + rl) - rh
    return _pow2(f, _to_int(f, k) - 1), rh, p


def _exp_pair(f, x):
    """exp(x) as an unevaluated sum hi + lo, for x <= 0 clamped as in `_exp_core`."""
    k = _rint(x * _LOG2E)
    rh, rl = _two_sum_fast(_fma(-k, _LN2, x), -k * _LN2_LO[f.suffix])
    e1, e1_err = _two_sum_fast(x._c(1.0), rh)
    lo = e1_err + _fma(rh * rh, _horner(rh, _EXPM1_Q[f.suffix]), rl)   # exp(r) = e1 + lo
    return _scale2(f, e1, k), _scale2(f, lo, k)


def _expm1_core(f, x):
    s, rh, p = _expm1_parts(f, x)
    return _fma(s, p, _fma(s, rh, s - 0.5)) * 2.0


def _expm1_pair(f, x):
    """expm1(x) as an unevaluated sum hi + lo (x >= 0, as in `_expm1_core`)."""
    s, rh, p = _expm1_parts(f, x)
    ih, il = _two_sum(s * rh, s - 0.5)          # both terms exact for k >= 0
    hi, lo = _two_sum_fast(ih, _fma(s, p, il))  # normalized: lo is below hi's last bit
    return hi * 2.0, lo * 2.0


def _log_decompose(f, x):
    """(e, m) with x = 2**e * m, m in [sqrt(1/2), sqrt(2)), for finite x > 0 (subnormal too)."""
    sub = x.lt(f.min_normal)
    shift = f.mant + 2
    xs = _select(sub, x * 2.0 ** shift, x)
    ix = x.e.cast("bitcast", xs, f.ity)
    sqrt_half_bits = int(np.array(0.7071067811865476, f.dtype).view(f"i{f.dtype.itemsize}"))
    ei = (ix - sqrt_half_bits) >> f.mant
    m = x.e.cast("bitcast", ix - (ei << f.mant), f.ty)
    ei = ei + _select(sub, ix._c(-shift), ix._c(0))
    return x.e.cast("sitofp", ei, f.ty), m


def _log_core(f, e, m, corr=None):
    """e*ln2 + log(m) (+ corr, a small correction), m in [sqrt(1/2), sqrt(2))."""
    fr = m - 1.0                          # exact (Sterbenz)
    s = fr / (fr + 2.0)
    z = s * s
    rz = z * _horner(z, _LOG_R[f.suffix])
    # log1p(fr) = 2s + s*rz, and 2s = fr - s*fr: the latter keeps s's rounding error small.
    low = e * _LN2_HI_LO[f.suffix]
    if corr is not None:
        low = low + corr
    t = _fma(s, rz - fr, low)
    hi, err = _two_sum_fast(e * _LN2_HI[f.suffix], fr)
    return hi + (t + err)


def _trig_reduce(f, x, pair):
    """(rh, rl, q): x = q*pi/2 + rh + rl (mod 2*pi), |rh| <= ~pi/4, q in 0..3 as an i32.

    With `pair`, rh + rl is normalized and carries the reduced argument beyond its own
    rounding (tan needs it); without, rl is None and rh alone is within ~1 ulp.
    """
    ax = _fabs(x)
    xs = _select(ax.lt(_INF), x, 0.0)            # inf/NaN would make fptosi poison
    # n = nearest integer to x*2/pi. The product's rounding can pick the wrong neighbour
    # (and push r past pi/4) once it has few fraction bits, so check against its exact error.
    t = xs * _TWO_OVER_PI
    n = _rint(t)
    frac = (t - n) + (_fma(xs, _TWO_OVER_PI, -t) + xs * _TWO_OVER_PI_LO[f.suffix])
    n = n + _select(frac.gt(0.5), xs._c(1.0), _select(frac.lt(-0.5), xs._c(-1.0), 0.0))
    # Cody-Waite with fma: x - n*P1 is exact (n*P1 and x agree in all high bits).
    p1, p2, *rest = _PIO2[f.suffix]
    rh, rl = _fma(-n, p1, xs), None
    if pair:                                      # the n*P2 step exactly, as a pair
        w = n * p2
        rh, rl = _two_sum(rh, -w)
        rl = rl - _fma(n, p2, -w)
        for part in rest:
            rl = _fma(-n, part, rl)
        rh, rl = _two_sum_fast(rh, rl)
        rl = _select(ax.lt(2.0 ** (f.mant + 3)), rl, 0.0)   # only meaningful in range
    else:
        for part in (p2, *rest):
            rh = _fma(-n, part, rh)
    # Past the accurate range n and r lose meaning; keep rh bounded so that sin and cos
    # stay in [-1, 1].
    rh = _clamp(rh, -0.8, 0.8)
    q = n - _floor(n * 0.25) * 4.0                # n mod 4, exact
    return rh, rl, x.e.cast("fptosi", q, "i32")


def _sin_parts(f, rh, rl):
    """lo with sin(rh + rl) = rh + lo (rl may be None)."""
    z = rh * rh
    tail = rh._c(0.0) if rl is None else rl * (1.0 - z * 0.5)
    return _fma(rh * z, _horner(z, _SIN_S[f.suffix]), tail)


def _cos_parts(f, rh, rl):
    """(hi, lo) with cos(rh + rl) = hi + lo; (1 - hi) - z/2 is the rounding of 1 - z/2."""
    z = rh * rh
    hz = z * 0.5
    hi = 1.0 - hz
    tail = (1.0 - hi) - hz
    if rl is not None:
        tail = tail - rl * rh
    return hi, _fma(z * z, _horner(z, _COS_C[f.suffix]), tail)


def _bit(qi, mask):
    return (qi & mask).ne(0)


def _sincos(f, x, shift):
    # The one-word reduction: 1 ulp (f32: 2 ulp past 1e5) for 20 fewer instructions.
    r, _, qi = _trig_reduce(f, x, pair=False)
    qi = qi + shift                      # cos(x) = sin(x + pi/2)
    z = r * r
    sin_r = _fma(r * z, _horner(z, _SIN_S[f.suffix]), r)
    cos_hi, cos_lo = _cos_parts(f, r, None)
    v = _select(_bit(qi, 1), cos_hi + cos_lo, sin_r)
    return _select(_bit(qi, 2), -v, v)


def _poly_pieces(x, pieces):
    """Horner on t = x - center, with the piece's coefficients chosen by `select`s."""
    *firsts, last = pieces
    center = x._c(last[1])
    coeffs = [x._c(c) for c in last[2]]
    for bound, c0, cs in reversed(firsts):
        below = x.lt(bound)
        center = _select(below, c0, center)
        coeffs = [_select(below, a, b) for a, b in zip(cs, coeffs)]
    return _horner(x - center, coeffs)


# ---------------------------------------------------------------- the functions

# 1.5 * 2^mant: fma(x, 1/ln2, shifter) rounds x/ln2 to an integer k in the low mantissa
# bits (|k| < 2^(mant-1), ulp 1), so k as a float and as an integer each cost one
# subtraction, instead of a rint and a float->int conversion.
_EXP_SHIFTER = {"f32": 1.5 * 2.0 ** 23, "f64": 1.5 * 2.0 ** 52}
# exp(r) = 1 + r + r^2 Q(r) by plain Horner steps (the _EXPM1_Q coefficients): one fma
# fewer than expm1's r + r^2 Q(r) and an add of 1, within the same 1 ulp (exhaustive f32).
_EXP_POLY = {s: (1.0, 1.0) + q for s, q in _EXPM1_Q.items()}


def _exp(f, x, upper_clamp=True):
    """exp(x): `_exp_core`'s reduction and scaling in fewer vector operations, which is
    what softmax's and logsumexp's throughput hangs on. The clamp compares `ugt`/`ult`
    (one vmax/vmin each), which let NaN through; every later step is defined for NaN
    and keeps it (the integer k of a NaN is garbage, and ldexp(NaN, garbage) is NaN),
    so no select is needed for it. Without `upper_clamp` (`_exp_nonpositive`), x above
    the clamp gives garbage: a float, never poison (the integer steps do not wrap with
    nsw/nuw flags)."""
    lo, hi = (-110.0, 90.0) if f is _F32 else (-760.0, 720.0)
    xc = _select(x.ugt(lo), x, lo)               # keeps 2^(k/2) representable
    if upper_clamp:
        xc = _select(xc.ult(hi), xc, hi)
    shifter = _EXP_SHIFTER[f.suffix]
    kf = _fma(xc, _LOG2E, shifter)
    k = kf - shifter                             # exact
    shifter_bits = int(np.array(shifter, f.dtype).view(f"i{f.dtype.itemsize}"))
    ki = x.e.cast("bitcast", kf, f.ity) - shifter_bits
    return _scale2(f, _horner(_minus_k_ln2(f, k, xc), _EXP_POLY[f.suffix]), k, ki)


# exp(x) for x <= 0 (clamped at -110 / -760) has k in [-159, 0] / [-1097, 0], so 2^(k + c)
# is a normal number for these c; the polynomial's coefficients carry the 2^-c.
_EXP_NONPOSITIVE_SHIFT = {"f32": 33, "f64": 75}


def _exp_nonpositive(f, x):
    """exp(x) for x <= 0 or NaN, such as x - max(x) of x's own row (softmax, logsumexp):
    the same bits as `_exp` in two vector operations fewer, as these arguments allow.

    - No upper clamp (never reached).
    - The scale is one multiplication by 2^(k + c), whose bits are those of the
      shifter fma's result shifted into the exponent field (the low bits of
      1.5*2^mant + bias + c + k are bias + c + k, in [1, 2*bias]: a normal number),
      against an integer subtraction, a conversion and vscalef. The polynomial's
      coefficients are scaled by 2^-c, exactly (powers of two, nothing subnormal), so
      it returns p*2^-c to the bit, and p*2^-c * 2^(k + c) rounds once, to a subnormal
      where exp is one: RN(p * 2^k), as vscalef's.
    - NaN: the clamp lets it through (`ugt`), the polynomial returns it, and NaN times
      the garbage scale is NaN. -inf is clamped, and exp(-110) rounds to 0."""
    lo = -110.0 if f is _F32 else -760.0
    xc = _select(x.ugt(lo), x, lo)
    c = _EXP_NONPOSITIVE_SHIFT[f.suffix]
    shifter = 1.5 * 2.0 ** f.mant + f.bias + c
    kf = _fma(xc, _LOG2E, shifter)
    k = kf - shifter                             # exact
    p = _horner(_minus_k_ln2(f, k, xc), [v * 2.0 ** -c for v in _EXP_POLY[f.suffix]])
    return p * _exponent_field(f, kf)


def _expm1(f, x):
    lo, hi, tiny = (-30.0, 89.0, 2.0 ** -24) if f is _F32 else (-60.0, 710.0, 2.0 ** -53)
    res = _expm1_core(f, _clamp(x, lo, hi))
    return _select(_fabs(x).ult(tiny), x, res)   # keeps -0.0, tiny values and NaN


def _log(f, x):
    e, m = _log_decompose(f, x)
    res = _log_core(f, e, m)
    res = _select(x.eq(_INF), x, res)
    res = _select(x.eq(0.0), -_INF, res)
    return _select(x.ult(0.0), _NAN, res)        # negative or NaN


def _log1p(f, x):
    u = x + 1.0
    # (1 + x) - u exactly (Fast2Sum with the larger operand first).
    big = _fabs(x).gt(1.0)
    hi_op = _select(big, x, 1.0)
    lo_op = _select(big, 1.0, x)
    c = lo_op - (u - hi_op)
    e, m = _log_decompose(f, u)
    res = _log_core(f, e, m, c / u)
    tiny = 2.0 ** -24 if f is _F32 else 2.0 ** -53
    res = _select(x.eq(_INF), x, res)
    res = _select(x.eq(-1.0), -_INF, res)
    res = _select(x.lt(-1.0), _NAN, res)
    return _select(_fabs(x).ult(tiny), x, res)


# tanh f32 below |x| = _TANH_SMALL: x + x^3 P(x^2), P degree 4 (weighted Lawson fit of
# the relative error of tanh in 40-digit arithmetic, 1.3e-9 before rounding to f32).
_TANH_SMALL = 0.5625     # above ln(3)/2: 2/(e^2|x| + 1) < 1/2, so 1 - q cancels little
_TANH_P = (-0.3333331346511841, 0.13332471251487732, -0.053839243948459625,
           0.021014273166656494, -0.00618863245472312)


# tanh's exp(2|x|), 2|x| = k*ln2 + r, is reduced on |x| itself against ln2/2 (saving the
# doubling); expm1(r)/2 = h + h^2 Q(2h)*2 with h = r/2, so these are _EXPM1_Q scaled by
# powers of two: the same bits as evaluating _EXPM1_Q at r, one operation fewer.
_TANH_Q_HALF = tuple(c * 2.0 ** (i + 1) for i, c in enumerate(_EXPM1_Q["f32"]))
# fma(|x|, 2/ln2, _TANH_SHIFTER) rounds to an integer and leaves k + 128 in the low
# mantissa bits (the float is 1.5*2^23 + 128 + k, ulp 1): one operation for rint, and
# those bits shifted into the exponent field are 2^(k+1), with no float->int conversion.
_TANH_SHIFTER = 1.5 * 2.0 ** 23 + 128


def _tanh_f32(f, x):
    """tanh in single precision with no double-word arithmetic: about half the
    instructions of `_tanh`'s pair form, which is what gelu's throughput hangs on.

    |x| < _TANH_SMALL: the odd polynomial. Above: 1 - 2/(e + 1) with e = exp(2|x|);
    e + 1 = s*p + (s + 1) in one fma (s = 2^k, s + 1 exact while it matters, p =
    exp(r)-1), so q = 2/(e + 1) carries about one rounding more than the division's.
    The vectorized loop runs both forms for every lane, so each step here is counted:
    - the two polynomials, x + x*z*P(z) and h + h*h*Q(h), run as one Horner chain whose
      variable and coefficients each lane selects: the same operations per lane, so the
      same bits, with 6 fewer multiplies and fmas, which only two of Zen's four vector
      pipes execute (the selects run on all four);
    - the polynomial also serves tiny x (x*z underflows and the fma returns x; the
      closing copysign restores -0.0, which the fma turns into +0.0) and NaN (`ult`
      sends it to the polynomial, which returns it).
    """
    a = _fabs(x)
    small = a.ult(_TANH_SMALL)
    ac = _select(a.lt(10.0), a, 10.0)                # tanh(10) rounds to 1
    kf = _fma(ac, 2.0 * _LOG2E, _TANH_SHIFTER)
    k = kf - _TANH_SHIFTER
    s2 = _exponent_field(f, kf)                      # 2^(k+1)
    h = _fma(-k, _LN2 / 2, ac)                       # exact, as in _exp_reduce
    h = _fma(-k, _LN2_LO[f.suffix] / 2, h)           # r/2
    # small lanes: fma(x*z, P(z), x) = tanh(x); the others: fma(h*h, Q(h), h) = expm1(r)/2
    var = _select(small, x * x, h)
    lead = _select(small, x, h)
    coeffs = [_select(small, x._c(c_small), c_exp) for c_small, c_exp in zip(_TANH_P, _TANH_Q_HALF)]
    poly = _fma(lead * var, _horner(var, coeffs), lead)
    q = 2.0 / _fma(s2, poly, _fma(s2, 0.5, 1.0))
    return _copysign(_select(small, poly, 1.0 - q), x)


def _tanh(f, x):
    if f is _F32:
        return _tanh_f32(f, x)
    hi, tiny = 22.0, 2.0 ** -28
    a = _fabs(x)
    th, tl = _expm1_pair(f, _select(a.lt(hi), a, hi) * 2.0)
    dh, dl = _two_sum(th, th._c(2.0))
    res = _copysign(_div_pair(th, tl, dh, dl + tl), x)        # t / (t + 2)
    return _select(a.ult(tiny), x, res)


def _logistic(f, x):
    hi = 110.0 if f is _F32 else 760.0
    a = _fabs(x)
    eh, el = _exp_pair(f, -_select(a.lt(hi), a, hi))    # exp(-|x|) <= 1: no overflow
    dh, dl = _two_sum_fast(eh._c(1.0), eh)
    neg = x.lt(0.0)
    res = _div_pair(_select(neg, eh, 1.0), _select(neg, el, 0.0), dh, dl + el)
    return _select(x.isnan(), x, res)


def _sin(f, x):
    res = _sincos(f, x, 0)
    res = _select(x.eq(0.0), x, res)             # sin(-0.0) = -0.0
    return _select(_fabs(x).lt(_INF), res, _NAN)


def _cos(f, x):
    return _select(_fabs(x).lt(_INF), _sincos(f, x, 1), _NAN)


def _tan(f, x):
    rh, rl, qi = _trig_reduce(f, x, pair=True)
    sin_lo = _sin_parts(f, rh, rl)
    cos_hi, cos_lo = _cos_parts(f, rh, rl)
    odd = _bit(qi, 1)                            # tan(r + pi/2) = -cos(r)/sin(r)
    nh, nl = _select(odd, -cos_hi, rh), _select(odd, -cos_lo, sin_lo)
    dh, dl = _select(odd, rh, cos_hi), _select(odd, sin_lo, cos_lo)
    res = _div_pair(nh, nl, dh, dl)
    res = _select(x.eq(0.0), x, res)
    return _select(_fabs(x).lt(_INF), res, _NAN)


def _erf(f, x):
    xmax = 4.0 if f is _F32 else 6.0             # erf rounds to 1 beyond
    a = _fabs(x)
    ac = _select(a.lt(xmax), a, xmax)
    small = _fma(ac, _horner(ac * ac, _ERF_P[f.suffix]), ac)
    # 1 - erfc, erfc = exp(-x^2 + h): x^2 is carried as hi + lo so its rounding is not lost.
    h = _poly_pieces(ac, _ERF_H[f.suffix])
    x2 = ac * ac
    x2_lo = _fma(ac, ac, -x2)
    y, y_err = _two_sum_fast(-x2, h)
    erfc = _exp_core(f, y, y_err - x2_lo)
    res = _select(ac.lt(1.0), small, 1.0 - erfc)
    res = _copysign(res, x)
    return _select(x.isnan(), x, res)


def _pow_log_f64(f, ax):
    """log(ax) as an unevaluated sum hi + lo, good to ~2^-67 relative, for finite ax > 0."""
    e, m = _log_decompose(f, ax)
    fr = m - 1.0
    d = fr + 2.0
    d_lo = (2.0 - d) + fr                         # d + d_lo == fr + 2 exactly
    sh = fr / d
    sl = (_fma(-sh, d, fr) - sh * d_lo) / d       # s = fr / (fr + 2) = sh + sl
    zh = sh * sh
    zl = _fma(sh, sh, -zh) + (sh * sl) * 2.0
    s3h = zh * sh
    s3l = _fma(zh, sh, -s3h) + (zl * sh + zh * sl)
    # log1p(fr) = 2s + s^3 * (2/3 + z*T2(z)); the 2/3 term is carried in double-double.
    th, tl = _two_sum_fast(ax._c(0.6666666666666666), zh * _horner(zh, _POW_T2))
    tl = tl + 3.700743415417188e-17               # 2/3 - double(2/3)
    ph = s3h * th
    pl = _fma(s3h, th, -ph) + (s3h * tl + s3l * th)
    hi, err = _two_sum_fast(sh * 2.0, ph)
    lo = err + (sl * 2.0 + pl)
    hi2, err2 = _two_sum_fast(e * _LN2_HI["f64"], hi)
    return hi2, err2 + (lo + e * _LN2_HI_LO["f64"])


def _pow_magnitude(f, ax, y):
    """|x|**y for finite ax > 0 and finite y (anything else is selected away later)."""
    if f is _F32:
        # float32: log and exp in double precision are far more precise than needed.
        e, m = _log_decompose(_F64, ax.e.cast("fpext", ax, "double"))
        z = y.e.cast("fpext", y, "double") * _log_core(_F64, e, m)
        res = _exp_core(_F64, _clamp(z, -760.0, 720.0))
        return res.e.cast("fptrunc", res, "float")
    hi, lo = _pow_log_f64(f, ax)
    zh = y * hi
    zl = _fma(y, hi, -zh) + y * lo
    zc = _clamp(zh, -760.0, 720.0)
    return _exp_core(f, zc, _select(zc.eq(zh), zl, 0.0))


def _pow(f, x, y):
    ax = _fabs(x)
    finite_x = _and(ax.lt(_INF), ax.gt(0.0))
    mag = _pow_magnitude(f, _select(finite_x, ax, 1.0), _select(_fabs(y).lt(_INF), y, 0.0))
    y_neg = y.lt(0.0)
    mag = _select(ax.eq(0.0), _select(y_neg, ax._c(_INF), 0.0), mag)
    mag = _select(ax.eq(_INF), _select(y_neg, ax._c(0.0), _INF), mag)
    # y = +-inf: 1 for |x| == 1, else inf or 0 as |x| > 1 agrees with y > 0 or not.
    agree = ax.gt(1.0).eq(y.gt(0.0))
    inf_y = _select(ax.eq(1.0), 1.0, _select(agree, ax._c(_INF), 0.0))
    mag = _select(_fabs(y).eq(_INF), inf_y, mag)
    half = y * 0.5
    y_odd = _and(_floor(y).eq(y), _floor(half).ne(half))    # false for +-inf
    x_neg = x.e.cast("bitcast", x, f.ity).lt(0)              # sign bit: -0.0 counts
    res = _select(_and(x_neg, y_odd), -mag, mag)
    # Negative finite base with a non-integral exponent (ne is true for NaN too).
    bad = _and(_and(x.lt(0.0), x.gt(-_INF)), _floor(y).ne(y))
    res = _select(bad, _NAN, res)
    res = _select(_or(x.isnan(), y.isnan()), x + y, res)
    return _select(_or(y.eq(0.0), x.eq(1.0)), 1.0, res)     # C99: even for NaN


def _atan2(f, y, x):
    ax, ay = _fabs(x), _fabs(y)
    swap = ay.gt(ax)
    num, den = _select(swap, ax, ay), _select(swap, ay, ax)
    # Tiny operands: scale both up so den * tan(pi/8) below is not rounded coarsely.
    scale = _select(den.lt(f.min_normal * 2.0 ** (f.mant + 2)), ax._c(2.0 ** (f.mant + 2)), 1.0)
    # Huge ones: scale down so num + den below cannot overflow.
    scale = _select(den.gt(2.0 ** (f.bias - 2)), ax._c(0.25), scale)
    num, den = num * scale, den * scale
    both_inf = _and(ax.eq(_INF), ay.eq(_INF))
    num, den = _select(both_inf, 1.0, num), _select(both_inf, 1.0, den)
    den = _select(den.eq(0.0), 1.0, den)             # atan2(+-0, +-0): t = 0
    # t = num/den in [0, 1]; above tan(pi/8) use atan(t) = pi/4 + atan((t-1)/(t+1)).
    red = num.gt(den * 0.41421356237309503)
    t = _select(red, num - den, num) / _select(red, num + den, den)
    a = _fma(t * (t * t), _horner(t * t, _ATAN_A[f.suffix]), t)
    pio4_lo = -1.2154201256553e-08 if f is _F32 else 3.061616997868383e-17
    pio2_lo = -4.371138828673793e-08 if f is _F32 else 6.123233995736766e-17
    pi_lo = -8.742277657347586e-08 if f is _F32 else 1.2246467991473532e-16
    a = _select(red, (a + pio4_lo) + 0.7853981633974483, a)
    # |y| > |x|: pi/2 -+ a by x's sign, in one step (pi - (pi/2 - a) rounds twice, so
    # atan2(inf, -1) came out an ulp above pi/2)
    x_neg = x.e.cast("bitcast", x, f.ity).lt(0)
    swapped = (pio2_lo + _select(x_neg, a, -a)) + 1.5707963267948966
    a = _select(swap, swapped, _select(x_neg, (pi_lo - a) + 3.141592653589793, a))
    res = _copysign(a, y)
    return _select(_or(x.isnan(), y.isnan()), x + y, res)


_GENERATORS = {
    "exp": _exp, "expm1": _expm1, "log": _log, "log1p": _log1p, "tanh": _tanh,
    "logistic": _logistic, "sin": _sin, "cos": _cos, "tan": _tan, "erf": _erf,
    "pow": _pow, "atan2": _atan2, "exp_nonpositive": _exp_nonpositive,
}


# ---------------------------------------------------------------- public API

def _fmt(dtype):
    try:
        return _FMTS[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(f"mathlib: no LLVM math for dtype {dtype!r}") from None


def symbol(name, dtype) -> str:
    """The LLVM name of function `name` for `dtype`, e.g. 'jl_exp_f32' (without the '@');
    a restricted form's is its function's with the domain after it, as wide_math.py's
    are: 'jl_exp_f32_nonpositive'."""
    function = RESTRICTED.get(name, (name,))[0]
    domain = name[len(function):]
    return f"jl_{function}_{_fmt(dtype).suffix}{domain}"


def arity(name) -> int:
    """How many operands function `name` takes (1, or 2 for pow and atan2)."""
    if name not in _GENERATORS:
        raise ValueError(f"mathlib: unknown function {name!r}")
    return 2 if name in BINARY else 1


_CACHE = {}


def _build(name, dtype):
    """(definition text, declare lines) of one function; cached."""
    f = _fmt(dtype)
    key = (name, f.suffix)
    if key not in _CACHE:
        if name not in _GENERATORS:
            raise ValueError(f"mathlib: unknown function {name!r}; have {sorted(_GENERATORS)}")
        e = _Emitter()
        params = ["x", "y"][:arity(name)]
        args = [_Val(e, f"%{p}", f.ty) for p in params]
        if name == "atan2":                       # atan2(y, x): %x is the first operand
            args = [_Val(e, "%x", f.ty), _Val(e, "%y", f.ty)]
        res = _GENERATORS[name](f, *args)
        sig = ", ".join(f"{f.ty} %{p}" for p in params)
        body = "\n".join(e.lines)
        text = (f"define internal {f.ty} @{symbol(name, dtype)}({sig}) alwaysinline nounwind {{\n"
                f"{body}\n  ret {f.ty} {res}\n}}\n")
        _CACHE[key] = (text, tuple(e.intrinsics))
    return _CACHE[key]


def function_ir(name, dtype) -> str:
    """LLVM IR text defining `@jl_<name>_<f32|f64>` plus the intrinsic declares it needs.

    Binary functions take `(%x, %y)`: pow(x, y) = x**y, atan2(x, y) = arctan2(x, y) with
    NumPy's argument order (the first operand is the ordinate). To put several functions in
    one module use `declarations_for`, which declares each intrinsic once.
    """
    text, declares = _build(name, dtype)
    return "\n".join(declares) + "\n\n" + text


def declarations_for(names_dtypes) -> str:
    """IR text with each (name, dtype) function defined once and each intrinsic declared once.

    Intrinsics are declared here, so the including module must not declare the same
    `llvm.*` intrinsics again.
    """
    seen, defs, declares = set(), [], {}
    for name, dtype in names_dtypes:
        key = (name, _fmt(dtype).suffix)
        if key in seen:
            continue
        seen.add(key)
        text, decls = _build(name, dtype)
        defs.append(text)
        for d in decls:
            declares.setdefault(d)
    return "\n".join(declares) + "\n\n" + "\n".join(defs)
