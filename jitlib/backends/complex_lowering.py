"""Complex values as pairs of real ones, so that compiled backends run complex kernels.

A kernel body with complex values is rewritten into one over real values only: each
complex value becomes its real and imaginary parts (two real values of its shape), each
op on complex values the real ops NumPy's complex loops compute. At the kernel's edge a
complex parameter is read as a real array with a trailing axis of 2 and a complex
result written as one (NumPy stores re, im side by side), so the lowered kernel runs on
the very buffers the complex kernel would: only the kernel's text changes.

What NumPy computes, and so what the parts are:

- `a * b`: (ar*br - ai*bi, ar*bi + ai*br), each rounded as written (NumPy's x86 loops
  fuse one product of each into an fma, so the last bit may differ);
- `a / b`: Smith's algorithm with NumPy's branches (the larger part of b divides; b == 0
  divides by |br|, giving NumPy's inf or nan), the same bits;
- `abs(a)`: hypot of the parts as max * sqrt(1 + (min/max)^2), inf where a part is inf,
  within an ulp or two of NumPy's;
- `exp(a)`: glibc's cexp, exp(ar) * (cos(ai), sin(ai)) (ai == 0 giving (exp(ar), ai)
  exactly), past overflow scaled as glibc scales it;
- `a ** n` for a constant integer |n| < 100: NumPy's repeated squaring and its zeros
  (n = -1 is NumPy's reciprocal); another constant exponent: glibc's cpow, exp(b log a);
  a computed exponent: NumPy's npy_cpow element by element (np.power's loop: b = 0, a = 0,
  an integral real |b| < 100 by repeated squaring, the same bits; else glibc's cpow, within
  16 ulps of |a ** b| times 1 + |b log a|, 1.6 measured), every branch per element, with
  the IR's paths at b = 2, 0.5 and -1 (below);
- `sqrt(a)`: C99's csqrt (the algorithm and special cases of FreeBSD's libm);
- `log`, `sin`, `cos`, `tan`, `sinh`, `cosh`, `tanh`: glibc's clog, csin/ccos/ctan
  (through csinh/ccosh/ctanh of i*a), csinh, ccosh, ctanh, which NumPy's loops call,
  with their scaling and special values; `log1p`, `expm1`, `sign`: NumPy's own formulas;
- `arcsinh`, `arcsin`, `arccos`, `arccosh`: glibc's casinh, casin, cacos, cacosh, all
  through its __kernel_casinh (each case's arguments computed for every element, one
  clog, log1p and atan2 picked between them); `arctanh`, `arctan`: glibc's catanh and its
  mirror catan; their special values exactly (signed zeros too), finite values within 5
  ulps of NumPy's (measured over parts from 1e-17 to 1e17 and at glibc's thresholds);
- `==`/`!=` part by part; `real`, `imag`, `conj`, `complex`, conversions, selects and
  data movement part by part; a sum over the value as real pairs.

Anything else (rsqrt, products, cumulative sums, sorts...) raises `NotLowered`: the kernel
stays on the reference interpreter, NumPy's complex loops, as before. (The IR's pow,
as the interpreter defines it, takes eager NumPy's scalar-exponent paths at every
element, z * z at b = 2, np.sqrt at 0.5, np.reciprocal at -1, and so does a computed
exponent here; eager np.power of two arrays has none, so there jit and eager NumPy
differ: in a part much smaller than |a ** b| by up to thousands of its ulps, and in some
special values' NaNs.) Fusion keeps work on a
complex sum out of its kernel (`fusion/fuse.py`), so that a reduction kernel's complex
values are its sums alone.
"""
import numpy as np

from jitlib.fusion.rewrite import rebuild, scalar_constant, splat
from jitlib.hlo import build, dtypes
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op


class NotLowered(Exception):
    """The body has a complex op this module does not rewrite."""


# ops that move or pick elements without computing: applied to each part alike (their
# non-complex operands, indices, stay as they are)
_PART_BY_PART = frozenset({
    Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.REVERSE, Op.CONCATENATE,
    Op.PAD, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE, Op.GATHER,
})


def lower(body, result_parts=None):
    """`body` (a kernel's Module) over real values only: complex parameters and results as
    real arrays with a trailing axis of 2. Raises NotLowered. `result_parts`, a dict, gets
    {result number: (re, im)} for each complex result written as its two parts side by
    side (a code generator may store them itself rather than loop over the axis of 2)."""
    lowering = _Lowering()
    params = []
    for p in body.params:
        if _complex(p):
            part = dtypes.part_type(p.dtype)
            q = build.parameter(p.attrs["index"], p.shape + (2,), part, p.attrs.get("name"),
                                loc=p.loc)
            lowering.parts[p] = tuple(_take_part(q, k) for k in (0, 1))
        else:
            q = p
            lowering.real[p] = p
        params.append(q)
    for instr in body.instructions:
        if instr.op is not Op.PARAMETER:
            lowering.visit(instr)
    values = [v for r in body.results
              for v in (lowering.parts[r] if _complex(r) else (lowering.real[r],))]
    folded = iter(_folded(Module(body.name, params, values)).results)
    results = []
    for j, r in enumerate(body.results):
        if not _complex(r):
            results.append(next(folded))
            continue
        re, im = next(folded), next(folded)
        results.append(_interleave(re, im))
        if result_parts is not None and results[-1].op is Op.CONCATENATE:
            result_parts[j] = (re, im)
    return Module(body.name, params, results, body.writes)


def _folded(module):
    """The optimizer's exact simplification and constant folding over the lowered values
    (before their parts are joined: folding a join of two constants would make a large
    constant): a real operand's zero imaginary part leaves parts computed from constants
    alone (`abs(0) == 0`), which the code generators expect folded, as every kernel they
    see has been."""
    from jitlib.fusion.pipeline import PASSES, run_pipeline
    return _scalar_constants(run_pipeline(module, PASSES))


def _scalar_constants(module):
    """`module` with each constant array of one repeated value (what folding `0 * 0`
    over a shape leaves) as that value broadcast: kernels take scalar constants, not
    arrays. A constant of several values raises NotLowered."""
    new = {}
    for instr in module.instructions:
        if instr.op is Op.CONSTANT and instr.size > 1:
            value = splat(instr)
            if value is None:
                raise NotLowered("a constant array in the lowered kernel")
            new[instr] = build.full(value, instr.shape, instr.dtype)
        else:
            new[instr] = rebuild(instr, (new[o] for o in instr.operands))
    return Module(module.name, module.params, [new[r] for r in module.results])


def lower_kernel(kind, body, kinds, unsupported, instead):
    """(real body, result parts) of a kernel of `kind` that a backend renders where `kind`
    is one of `kinds`; otherwise raises `unsupported`, its message ending in `instead`
    (how the kernel runs then)."""
    if kind not in kinds:
        raise unsupported(f"complex values in {kind} kernels are not compiled: {instead}")
    parts = {}
    try:
        return lower(body, parts), parts
    except NotLowered as e:
        raise unsupported(f"{e} is not compiled: {instead}") from None


def _complex(instr):
    return instr.op is not Op.FUSION and instr.op is not Op.GET_OUTPUT \
        and dtypes.is_complex(instr.dtype)


def _take_part(pairs, k):
    """The real (k = 0) or imaginary (k = 1) part of a real array with a trailing 2."""
    shape = pairs.shape[:-1]
    start = (0,) * len(shape) + (k,)
    return build.reshape(build.slice(pairs, start, shape + (k + 1,)), shape)


def _interleave(re, im):
    shape = re.shape
    return build.concatenate([build.reshape(re, shape + (1,)), build.reshape(im, shape + (1,))],
                             len(shape))


def _full(value, like):
    return build.full(value, like.shape, like.dtype)


class _Lowering:
    def __init__(self):
        self.real = {}    # real value of the body -> its value in the lowered body
        self.parts = {}   # complex value of the body -> (re, im) of the lowered body

    def visit(self, instr):
        complex_in = [o for o in instr.operands if _complex(o)]
        if not _complex(instr) and not complex_in:
            self.real[instr] = rebuild(instr, (self.real[o] for o in instr.operands))
            return
        rule = _RULES.get(instr.op)
        if rule is None and instr.op in _PART_BY_PART and _complex(instr):
            rule = _part_by_part
        if rule is None:
            raise NotLowered(f"{instr.op.value} on complex values")
        with build.locations(lambda: instr.loc):   # the parts keep the user's line
            value = rule(self, instr)
        if _complex(instr):
            self.parts[instr] = value
        else:
            self.real[instr] = value

    def of(self, operand):
        """An operand's parts; a real operand (complex(re, im)'s, a conversion's) as itself
        with a zero imaginary part."""
        if _complex(operand):
            return self.parts[operand]
        x = self.real[operand]
        return x, _full(0, x)


def _part_by_part(low, instr):
    def part(k):
        operands = tuple(low.parts[o][k] if _complex(o) else low.real[o] for o in instr.operands)
        return build.make(instr.op, operands, instr.attrs, instr.loc)
    return part(0), part(1)


def _constant(low, instr):
    value = np.asarray(instr.attrs["value"].array)
    part = dtypes.part_type(instr.dtype)
    return (build.constant(np.array(value.real, part), part),
            build.constant(np.array(value.imag, part), part))


def _convert(low, instr):
    x = instr.operands[0]
    if _complex(instr):
        part = dtypes.part_type(instr.dtype)
        if _complex(x):
            return tuple(build.convert(p, part) for p in low.parts[x])
        re = build.convert(low.real[x], part)
        return re, _full(0, re)
    re, im = low.parts[x]
    if dtypes.is_bool(instr.dtype):   # NumPy: nonzero where either part is (NaN too)
        zero = _full(0, re)
        return build.binary(Op.OR, build.compare(re, zero, "NE"), build.compare(im, zero, "NE"))
    if dtypes.is_float(instr.dtype) or dtypes.is_integer(instr.dtype):
        return build.convert(re, instr.dtype)   # as astype: the imaginary part goes
    raise NotLowered(f"convert to {instr.dtype}")


def _mul(low, instr):
    return _times(*(low.of(o) for o in instr.operands))


def _div(low, instr):
    return _divide(*(low.of(o) for o in instr.operands))


def _divide(a, b):
    """NumPy's complex division (Smith's), branch for branch, as selects: for a constant
    divisor, the branch and its ratio and scale chosen here; for a real one (a zero
    imaginary part), only the first branch, which gives the same for every divisor."""
    (ar, ai), (br, bi) = a, b
    B = build.binary
    divisor = _scalar(br), _scalar(bi)
    if None not in divisor:
        return _divide_by_constant(ar, ai, *divisor)
    one = _full(1, br)
    abs_br, abs_bi = build.unary(Op.ABS, br), build.unary(Op.ABS, bi)
    # |br| >= |bi| (false for NaN, as NumPy's comparison): rat = bi/br
    rat1 = B(Op.DIV, bi, br)
    scl1 = B(Op.DIV, one, B(Op.ADD, br, B(Op.MUL, bi, rat1)))
    re1 = B(Op.MUL, B(Op.ADD, ar, B(Op.MUL, ai, rat1)), scl1)
    im1 = B(Op.MUL, B(Op.SUB, ai, B(Op.MUL, ar, rat1)), scl1)
    # b == 0: a / |br|, a complex inf or nan
    zero = build.binary(Op.AND, build.compare(abs_br, _full(0, br), "EQ"),
                        build.compare(abs_bi, _full(0, bi), "EQ"))
    re1 = build.select(zero, B(Op.DIV, ar, abs_br), re1)
    im1 = build.select(zero, B(Op.DIV, ai, abs_br), im1)
    if divisor[1] == 0:
        # bi = 0: |br| >= |bi| fails only for a NaN br, where this branch gives NaN too
        return re1, im1
    # else: rat = br/bi
    rat2 = B(Op.DIV, br, bi)
    scl2 = B(Op.DIV, one, B(Op.ADD, bi, B(Op.MUL, br, rat2)))
    re2 = B(Op.MUL, B(Op.ADD, B(Op.MUL, ar, rat2), ai), scl2)
    im2 = B(Op.MUL, B(Op.SUB, B(Op.MUL, ai, rat2), ar), scl2)
    first = build.compare(abs_br, abs_bi, "GE")
    return build.select(first, re1, re2), build.select(first, im1, im2)


def _times(x, y):
    (ar, ai), (br, bi) = x, y
    B = build.binary
    return (B(Op.SUB, B(Op.MUL, ar, br), B(Op.MUL, ai, bi)),
            B(Op.ADD, B(Op.MUL, ar, bi), B(Op.MUL, ai, br)))


def _scalar(instr):
    """The one value of a 0-d constant, broadcast or not (a complex number); None for
    anything else."""
    constant = scalar_constant(instr)
    return None if constant is None else complex(constant.attrs["value"].array)


def _power(low, instr):
    """z ** n for an integer n, |n| < 100, as NumPy's complex power computes it: repeated
    squaring (n = 1, 2, 3 written out), then 1 / z**|n| for negative n; z = 0 gives 0
    for positive n and nan+nanj for negative. Another constant exponent: `_general_power`;
    a computed one: `_computed_power`."""
    base, exponent = instr.operands
    b = _scalar(exponent)
    a = low.of(base)
    if b is None:
        return _computed_power(a, low.of(exponent))
    if b.imag != 0 or not -100 < b.real < 100 or b.real != int(b.real):   # inf, NaN too
        return _general_power(a, b)
    n = int(b.real)
    if n == 0:
        return _full(1, a[0]), _full(0, a[0])
    # n = 1, 2, 3 written out; a negative n from 1 + 0i by squaring, as NumPy's loop
    # (1 * z is not z where a part is infinite)
    if n == -1:
        return _reciprocal(a)
    if n == 1:
        r = a
    elif n == 2:
        r = _times(a, a)
    elif n == 3:
        r = _times(a, _times(a, a))
    else:
        r, p, k = (_full(1, a[0]), _full(0, a[0])), a, abs(n)
        while True:
            if k & 1:
                r = _times(r, p)
            k >>= 1
            if not k:
                break
            p = _times(p, p)
    if n < 0:
        r = _divide((_full(1, a[0]), _full(0, a[0])), r)
    if n == 1:
        return r
    zero = build.binary(Op.AND, build.compare(a[0], _full(0, a[0]), "EQ"),
                        build.compare(a[1], _full(0, a[1]), "EQ"))
    at_zero = _full(0 if n > 0 else np.nan, a[0])
    return tuple(build.select(zero, at_zero, part) for part in r)


def _c_times(x, y):
    """x * y as C's complex product (libgcc's __muldc3, what glibc's cpow multiplies
    with): the product as written, and where both of its parts are NaN, Annex G's
    recomputation: an infinite factor's parts boxed to +-1 or +-0 (and the other
    factor's NaNs made 0), or without one, where a term overflowed, every NaN made 0."""
    (a, b), (c, d) = x, y
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    re, im = _times(x, y)
    inf, zero, one = _full(np.inf, c), _full(0, c), _full(1, c)

    def is_inf(v):
        return C(U(Op.ABS, v), inf, "EQ")

    def is_nan(v):
        return C(v, v, "NE")

    def box(v):
        return _copysign(S(is_inf(v), one, zero), v)

    def unnan(v):
        return S(is_nan(v), _copysign(zero, v), v)

    x_inf, y_inf = B(Op.OR, is_inf(a), is_inf(b)), B(Op.OR, is_inf(c), is_inf(d))
    terms_inf = is_inf(B(Op.MUL, a, c))
    for p, q in ((b, d), (a, d), (b, c)):
        terms_inf = B(Op.OR, terms_inf, is_inf(B(Op.MUL, p, q)))
    a, b = S(x_inf, box(a), a), S(x_inf, box(b), b)
    c, d = S(x_inf, unnan(c), c), S(x_inf, unnan(d), d)
    c, d = S(y_inf, box(c), c), S(y_inf, box(d), d)
    a, b = S(y_inf, unnan(a), a), S(y_inf, unnan(b), b)
    boxed = B(Op.OR, x_inf, y_inf)
    overflowed = B(Op.AND, U(Op.NOT, boxed), terms_inf)
    a, b, c, d = (S(overflowed, unnan(v), v) for v in (a, b, c, d))
    again = B(Op.AND, B(Op.AND, is_nan(re), is_nan(im)), B(Op.OR, boxed, terms_inf))
    re1 = B(Op.MUL, inf, B(Op.SUB, B(Op.MUL, a, c), B(Op.MUL, b, d)))
    im1 = B(Op.MUL, inf, B(Op.ADD, B(Op.MUL, a, d), B(Op.MUL, b, c)))
    return S(again, re1, re), S(again, im1, im)


def _reciprocal(a):
    """NumPy's np.reciprocal of a complex value (what pow's exponent -1 means, as in
    the interpreter): the smaller part over the larger, without Smith's zero case."""
    re, im = a
    B = build.binary
    one = _full(1, re)
    r1 = B(Op.DIV, im, re)
    d1 = B(Op.ADD, re, B(Op.MUL, im, r1))
    r2 = B(Op.DIV, re, im)
    d2 = B(Op.ADD, B(Op.MUL, re, r2), im)
    first = build.compare(build.unary(Op.ABS, im), build.unary(Op.ABS, re), "LE")
    return (build.select(first, B(Op.DIV, one, d1), B(Op.DIV, r2, d2)),
            build.select(first, B(Op.DIV, build.unary(Op.NEG, r1), d1),
                         B(Op.DIV, build.unary(Op.NEG, one), d2)))


def _general_power(a, b):
    """a ** b for a constant b that is not a small integer, as NumPy's nc_pow: 0 at
    a = 0 for Re b > 0 (NaN otherwise), else glibc's cpow, exp(b * log a)."""
    part = a[0].dtype.type
    br, bi = _full(part(b.real), a[0]), _full(part(b.imag), a[0])
    r = _exp_parts(*_c_times((br, bi), _log_parts(*a)))
    zero = build.binary(Op.AND, build.compare(a[0], _full(0, a[0]), "EQ"),
                        build.compare(a[1], _full(0, a[1]), "EQ"))
    at_zero = _full(0 if b.real > 0 else np.nan, a[0])
    return tuple(build.select(zero, at_zero, p) for p in r)


def _computed_power(a, b):
    """a ** b for a computed b, element by element as NumPy's npy_cpow (np.power's loop
    for complex arrays): 1 where b = 0 (a NaN a too); at a = 0, 0 where Re b > 0, else
    nan+nanj; an integral real b, |b| < 100: b = 1, 2, 3 written out, any other by
    repeated squaring from 1 + 0i (each of the seven bits of |b| a select between
    multiplying and not, so the products are NumPy's), then 1 / that (Smith's) for
    negative b; anything else glibc's cpow, exp(b log a). Each element costs every
    branch."""
    (ar, ai), (br, bi) = a, b
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    zero, one, half = _full(0, ar), _full(1, ar), _full(0.5, ar)
    general = _exp_parts(*_c_times(b, _log_parts(ar, ai)))
    # |b| < 100 has seven bits, t's last: t halved (floored) each step
    aa, p, t = (one, zero), a, U(Op.ABS, br)
    for k in range(7):
        t_next = U(Op.FLOOR, B(Op.MUL, t, half))
        bit = C(B(Op.SUB, t, B(Op.ADD, t_next, t_next)), zero, "NE")
        aa = tuple(S(bit, new, old) for new, old in zip(_times(aa, p), aa))
        if k < 6:
            p = _times(p, p)
        t = t_next
    aa = tuple(S(C(br, zero, "LT"), new, old) for new, old in zip(_divide((one, zero), aa), aa))
    square = _times(a, a)
    written = {1: a, 2: square, 3: _times(a, square)}
    for n in (3, 2, 1):
        aa = tuple(S(C(br, _full(n, br), "EQ"), new, old) for new, old in zip(written[n], aa))
    integral = B(Op.AND, B(Op.AND, C(bi, zero, "EQ"), C(U(Op.FLOOR, br), br, "EQ")),
                 B(Op.AND, C(br, _full(-100, br), "GT"), C(br, _full(100, br), "LT")))
    r = tuple(S(integral, n, g) for n, g in zip(aa, general))
    a_zero = B(Op.AND, C(ar, zero, "EQ"), C(ai, zero, "EQ"))
    at_zero = S(C(br, zero, "GT"), zero, _full(np.nan, ar))
    r = tuple(S(a_zero, at_zero, v) for v in r)
    b_zero = B(Op.AND, C(br, zero, "EQ"), C(bi, zero, "EQ"))
    r = S(b_zero, one, r[0]), S(b_zero, zero, r[1])
    # the IR's pow (the interpreter's rule) takes eager NumPy's scalar-exponent paths at
    # every element: z * z at 2, np.sqrt at 0.5, np.reciprocal at -1
    for exponent, value in ((2, lambda: _times(a, a)), (0.5, lambda: _sqrt_parts(ar, ai)),
                            (-1, lambda: _reciprocal(a))):
        hit = B(Op.AND, C(br, _full(exponent, br), "EQ"), C(bi, zero, "EQ"))
        r = tuple(S(hit, new, old) for new, old in zip(value(), r))
    return r


def _divide_by_constant(ar, ai, br, bi):
    """a / b for a constant b: NumPy's branch for b, its ratio and scale computed here in
    the parts' type (the same roundings), so each element costs products, no division."""
    part = ar.dtype.type
    br, bi = part(br.real), part(bi.real)
    B = build.binary
    with np.errstate(all="ignore"):
        if abs(br) >= abs(bi):
            if br == 0 and bi == 0:   # a complex inf or nan, as NumPy divides by |br|
                return B(Op.DIV, ar, _full(abs(br), ar)), B(Op.DIV, ai, _full(abs(br), ai))
            rat = bi / br
            scl = part(1) / (br + bi * rat)
            return (B(Op.MUL, B(Op.ADD, ar, B(Op.MUL, ai, _full(rat, ai))), _full(scl, ar)),
                    B(Op.MUL, B(Op.SUB, ai, B(Op.MUL, ar, _full(rat, ar))), _full(scl, ai)))
        rat = br / bi
        scl = part(1) / (bi + br * rat)
        return (B(Op.MUL, B(Op.ADD, B(Op.MUL, ar, _full(rat, ar)), ai), _full(scl, ar)),
                B(Op.MUL, B(Op.SUB, B(Op.MUL, ai, _full(rat, ai)), ar), _full(scl, ai)))


def _abs(low, instr):
    return _hypot(*low.parts[instr.operands[0]])


def _hypot(re, im, rounded_once=False):
    if rounded_once and re.dtype == np.float32:
        # in double, rounded once as glibc's hypotf: log|z + 1| near |z + 1| = 1 magnifies
        # the ratio form's ulp or two into thousands (3x slower than it, so only there)
        x, y = build.convert(re, np.float64), build.convert(im, np.float64)
        h = build.unary(Op.SQRT, build.binary(Op.ADD, build.binary(Op.MUL, x, x),
                                              build.binary(Op.MUL, y, y)))
        inf = build.binary(Op.OR, build.compare(build.unary(Op.ABS, re), _full(np.inf, re), "EQ"),
                           build.compare(build.unary(Op.ABS, im), _full(np.inf, im), "EQ"))
        return build.select(inf, _full(np.inf, re), build.convert(h, np.float32))
    a, b = build.unary(Op.ABS, re), build.unary(Op.ABS, im)
    a_larger = build.compare(a, b, "GE")
    larger, smaller = build.select(a_larger, a, b), build.select(a_larger, b, a)
    ratio = build.binary(Op.DIV, smaller, larger)
    scaled = build.binary(Op.MUL, larger, build.unary(
        Op.SQRT, build.binary(Op.ADD, _full(1, ratio), build.binary(Op.MUL, ratio, ratio))))
    zero, inf = _full(0, a), _full(np.inf, a)
    # 0/0 and inf/inf are NaN in the ratio: a zero is 0, an inf part is inf even beside
    # a NaN (C's hypot), and a NaN part otherwise is NaN (the compare above sent it on)
    either_inf = build.binary(Op.OR, build.compare(a, inf, "EQ"), build.compare(b, inf, "EQ"))
    out = build.select(build.compare(larger, zero, "EQ"), zero, scaled)
    nan = build.binary(Op.OR, build.compare(a, a, "NE"), build.compare(b, b, "NE"))
    out = build.select(nan, build.binary(Op.ADD, a, b), out)
    return build.select(either_inf, inf, out)


def _signbit(x):
    """Whether x's sign bit is set, -0.0 included (1/-0 is -inf); False for NaN."""
    zero = _full(0, x)
    return build.select(build.compare(x, zero, "EQ"),
                        build.compare(build.binary(Op.DIV, _full(1, x), x), zero, "LT"),
                        build.compare(x, zero, "LT"))


def _copysign(magnitude, sign):
    """|magnitude| with sign's sign bit (magnitude >= 0 or NaN)."""
    return build.select(_signbit(sign), build.unary(Op.NEG, magnitude), magnitude)


def _sqrt(low, instr):
    return _sqrt_parts(*low.parts[instr.operands[0]])


def _sqrt_parts(a, b):
    """C99's csqrt (CACM algorithm 312 with its special cases, as FreeBSD's libm writes
    it): the principal root, imaginary part with b's sign; parts past max/2.414 scaled
    by 1/4 first and the root by 2 after."""
    B, C, S = build.binary, build.compare, build.select
    abs_a, abs_b = build.unary(Op.ABS, a), build.unary(Op.ABS, b)
    big = B(Op.OR, C(abs_a, _full(np.finfo(a.dtype).max / 2.414213562373095, a), "GE"),
            C(abs_b, _full(np.finfo(b.dtype).max / 2.414213562373095, b), "GE"))
    quarter = _full(0.25, a)
    sa, sb = S(big, B(Op.MUL, a, quarter), a), S(big, B(Op.MUL, b, quarter), b)
    # both parts below twice the smallest normal: scaled up by 4**k first and the root
    # down by 2**k after, so that |z| is not rounded as a subnormal
    k = (np.finfo(a.dtype).nmant + 2) // 2
    tiny = B(Op.AND, C(abs_a, _full(2 * np.finfo(a.dtype).tiny, a), "LT"),
             C(abs_b, _full(2 * np.finfo(b.dtype).tiny, b), "LT"))
    up = _full(4.0 ** k, a)
    sa, sb = S(tiny, B(Op.MUL, sa, up), sa), S(tiny, B(Op.MUL, sb, up), sb)
    h, half, two = _hypot(sa, sb), _full(0.5, a), _full(2, a)
    t_pos = build.unary(Op.SQRT, B(Op.MUL, B(Op.ADD, sa, h), half))
    t_neg = build.unary(Op.SQRT, B(Op.MUL, B(Op.ADD, build.unary(Op.NEG, sa), h), half))
    nonneg = C(sa, _full(0, sa), "GE")
    re = S(nonneg, t_pos, B(Op.DIV, build.unary(Op.ABS, sb), B(Op.MUL, two, t_neg)))
    im = S(nonneg, B(Op.DIV, sb, B(Op.MUL, two, t_pos)), _copysign(t_neg, sb))
    re, im = S(big, B(Op.MUL, re, two), re), S(big, B(Op.MUL, im, two), im)
    down = _full(0.5 ** k, a)
    re, im = S(tiny, B(Op.MUL, re, down), re), S(tiny, B(Op.MUL, im, down), im)
    # the special cases, the most binding last
    inf, nan = _full(np.inf, a), _full(np.nan, a)
    b_minus_b = B(Op.SUB, b, b)   # NaN, for b inf or NaN; else 0
    a_inf, a_neg_inf = C(abs_a, inf, "EQ"), C(a, _full(-np.inf, a), "EQ")
    re = S(a_inf, S(a_neg_inf, build.unary(Op.ABS, b_minus_b), inf), re)
    im = S(a_inf, S(a_neg_inf, _copysign(inf, b), _copysign(build.unary(Op.ABS, b_minus_b), b)),
           im)
    a_nan = C(a, a, "NE")
    re, im = S(a_nan, a, re), S(a_nan, nan, im)
    b_inf = C(abs_b, inf, "EQ")
    re, im = S(b_inf, inf, re), S(b_inf, b, im)
    zeros = B(Op.AND, C(a, _full(0, a), "EQ"), C(b, _full(0, b), "EQ"))
    return S(zeros, _full(0, a), re), S(zeros, b, im)


def _exp(low, instr):
    return _exp_parts(*low.parts[instr.operands[0]])


def _exp_parts(re, im):
    """glibc's cexp, which NumPy calls: exp(re) (cos im, sin im), past re = t without
    overflowing on the way, with C99's special values."""
    B, C, S = build.binary, build.compare, build.select
    cos, sin = build.unary(Op.COS, im), build.unary(Op.SIN, im)
    real_axis = C(im, _full(0, im), "EQ")   # exp(x + 0j) = exp(x) + 0j, x = inf too
    far = B(Op.AND, C(re, _full(_exp_t(re.dtype), re), "GT"), build.unary(Op.NOT, real_axis))
    rx, c, s, saturated = _exp_scaled(re, cos, sin)
    # one exp for every element: of x, or past t of what the scaling left
    e = build.unary(Op.EXP, S(far, rx, re))
    e = S(B(Op.AND, far, saturated), _full(np.finfo(re.dtype).max, re), e)
    out_re, out_im = B(Op.MUL, e, S(far, c, cos)), B(Op.MUL, e, S(far, s, sin))
    out_re, out_im = S(real_axis, e, out_re), S(real_axis, im, out_im)
    # an infinite or NaN y beside x = +inf gives inf + NaN i, beside -inf a signed zero
    bad_y = build.unary(Op.NOT, build.unary(Op.IS_FINITE, im))
    plus_inf = build.binary(Op.AND, bad_y, build.compare(re, _full(np.inf, re), "EQ"))
    minus_inf = build.binary(Op.AND, bad_y, build.compare(re, _full(-np.inf, re), "EQ"))
    out_re = build.select(plus_inf, re, build.select(minus_inf, _full(0, re), out_re))
    out_im = build.select(plus_inf, _full(np.nan, im),
                          build.select(minus_inf, _copysign(_full(0, im), im), out_im))
    return out_re, out_im


def _compare(low, instr):
    (ar, ai), (br, bi) = (low.of(o) for o in instr.operands)
    direction = instr.attrs["direction"]
    if direction == "EQ":
        return build.binary(Op.AND, build.compare(ar, br, "EQ"), build.compare(ai, bi, "EQ"))
    if direction == "NE":
        return build.binary(Op.OR, build.compare(ar, br, "NE"), build.compare(ai, bi, "NE"))
    raise NotLowered(f"compare {direction} of complex values")


def _select(low, instr):
    pred = low.real[instr.operands[0]]
    on_true, on_false = (low.of(o) for o in instr.operands[1:])
    return tuple(build.select(pred, t, f) for t, f in zip(on_true, on_false))


def _add_sub(low, instr):
    x, y = (low.of(o) for o in instr.operands)
    return tuple(build.binary(instr.op, a, b) for a, b in zip(x, y))


def _reduce_sum(low, instr):
    # one sum over the value as real pairs: its result is the complex sum's own bytes,
    # which a reduction kernel writes as it is (its parts, sliced, join back into it)
    total = build.reduce(Op.REDUCE_SUM, _interleave(*low.parts[instr.operands[0]]),
                         instr.attrs["dims"])
    return _take_part(total, 0), _take_part(total, 1)


def _neg(low, instr):
    return tuple(build.unary(Op.NEG, p) for p in low.parts[instr.operands[0]])


# -- log, and the trigonometric and hyperbolic functions (glibc's algorithms, which
# NumPy's complex loops call: clog, csinh, ccosh, ctanh; csin, ccos and ctan through them)

def _sinh_and_cosh(x):
    """(sinh x, cosh x) from one expm1 of |x|: (e + e/(e+1)) / 2 and ((e+1) + 1/(e+1)) / 2,
    within an ulp or two of libm's. float32 in double (one rounding at the end, and no
    overflow below glibc's t); float64 past |x| = 22 as exp(|x|/2)^2 / 2, which stays
    finite up to ~710.5."""
    B, U = build.binary, build.unary
    wide = x.dtype == np.float32
    a = U(Op.ABS, build.convert(x, np.float64) if wide else x)
    half = _full(0.5, a)
    e = U(Op.EXPM1, a)
    e1 = B(Op.ADD, e, _full(1, a))
    sinh_a = B(Op.MUL, half, B(Op.ADD, e, B(Op.DIV, e, e1)))
    cosh_a = B(Op.MUL, half, B(Op.ADD, e1, B(Op.DIV, _full(1, a), e1)))
    if not wide:
        h = U(Op.EXP, B(Op.MUL, a, half))
        half_exp = B(Op.MUL, B(Op.MUL, h, half), h)
        big = build.compare(a, _full(22.0, a), "GE")
        sinh_a, cosh_a = build.select(big, half_exp, sinh_a), build.select(big, half_exp, cosh_a)
    else:
        sinh_a, cosh_a = build.convert(sinh_a, np.float32), build.convert(cosh_a, np.float32)
    return _copysign(sinh_a, x), cosh_a


def _two_sum(a, b):
    """(s, e) with s + e == a + b exactly (Knuth's)."""
    B = build.binary
    s = B(Op.ADD, a, b)
    bb = B(Op.SUB, s, a)
    return s, B(Op.ADD, B(Op.SUB, a, B(Op.SUB, s, bb)), B(Op.SUB, b, bb))


def _square_split(x):
    """(hi, lo) with hi + lo == x * x exactly (Veltkamp's split; no backend contracts
    a product and a sum into an fma)."""
    B = build.binary
    t = B(Op.MUL, x, _full(2.0 ** 27 + 1, x))
    hi = B(Op.SUB, t, B(Op.SUB, t, x))
    lo = B(Op.SUB, x, hi)
    sq = B(Op.MUL, x, x)
    err = B(Op.ADD, B(Op.ADD, B(Op.SUB, B(Op.MUL, hi, hi), sq), B(Op.MUL, _full(2, x),
                                                                      B(Op.MUL, hi, lo))),
            B(Op.MUL, lo, lo))
    return sq, err


def _x2y2m1(x, y):
    """x*x + y*y - 1 for 0.5 <= x < 1, y <= x, without the cancellation: complex64's parts
    in double (as glibc's clogf), complex128's squares split exactly and summed with
    their errors carried."""
    B = build.binary
    if x.dtype == np.float32:
        dx, dy = build.convert(x, np.float64), build.convert(y, np.float64)
        d = B(Op.ADD, B(Op.MUL, B(Op.SUB, dx, _full(1, dx)), B(Op.ADD, dx, _full(1, dx))),
              B(Op.MUL, dy, dy))
        return build.convert(d, np.float32)
    (xh, xl), (yh, yl) = _square_split(x), _square_split(y)
    s, e1 = _two_sum(_full(-1, x), xh)
    s, e2 = _two_sum(s, yh)
    s, e3 = _two_sum(s, xl)
    s, e4 = _two_sum(s, yl)
    return B(Op.ADD, s, B(Op.ADD, B(Op.ADD, e1, e2), B(Op.ADD, e3, e4)))


def _log(low, instr):
    return _log_parts(*low.parts[instr.operands[0]])


def _log_parts(x, y, log_of=None, log1p_of=None):
    """glibc's clog: log|z| (log1p of |z|^2 - 1 where |z| is near 1; the parts scaled by
    a power of two first where |z| would overflow or both are subnormal) and atan2 for
    the angle. `log_of`, `log1p_of`: (where, u), the real part log(u), or log1p(u) / 2,
    where `where` instead (x and y finite there): the same log and log1p serve a caller's
    cases of its own (casinh's kernel)."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    ax, ay = U(Op.ABS, x), U(Op.ABS, y)
    x_larger = C(ax, ay, "GE")
    big, small = S(x_larger, ax, ay), S(x_larger, ay, ax)
    info = np.finfo(x.dtype)
    one, half = _full(1, x), _full(0.5, x)

    # one log and one log1p for every element, their arguments picked by case (each
    # case's own call cost a GPU kernel twice jax's time)
    # log|z|, both parts halved past max/2 (a part below 2 * tiny becomes 0) or both
    # scaled up by 2**(mantissa bits) where both are subnormal, then log 2 times the
    # power taken back
    k = info.nmant + 1
    huge = C(big, _full(info.max / 2, x), "GT")
    tiny = C(big, _full(info.tiny, x), "LT")
    factor = S(huge, half, S(tiny, _full(2.0 ** k, x), one))
    small_half = S(C(small, _full(info.tiny * 2, x), "GE"), B(Op.MUL, small, half), _full(0, x))
    h = _hypot(B(Op.MUL, big, factor), S(huge, small_half, B(Op.MUL, small, factor)))
    ln2 = x.dtype.type(np.log(2))
    offset = S(huge, _full(-ln2, x), S(tiny, _full(x.dtype.type(k) * ln2, x), _full(0, x)))
    if log_of is not None:
        h, offset = S(log_of[0], log_of[1], h), S(log_of[0], _full(0, x), offset)
    re = B(Op.SUB, U(Op.LOG, h), offset)
    # |z| near 1: glibc's four cases take log1p(d) / 2, d = |z|^2 - 1 computed each its way
    # (a later case overrides an earlier one, as glibc's order of tests)
    d2m1 = B(Op.MUL, B(Op.SUB, big, one), B(Op.ADD, big, one))
    x2y2 = B(Op.ADD, B(Op.MUL, big, big), B(Op.MUL, small, small))
    below_one = B(Op.AND, C(big, half, "GE"), C(big, one, "LT"))
    near = B(Op.AND, below_one, C(x2y2, half, "GE"))
    below = B(Op.AND, below_one, C(small, _full(info.eps / 2, x), "LT"))
    above = B(Op.AND, B(Op.AND, C(big, one, "GT"), C(big, _full(2, x), "LT")),
              C(small, one, "LT"))
    with_small = S(C(small, _full(info.eps, x), "GE"),
                   B(Op.ADD, d2m1, B(Op.MUL, small, small)), d2m1)
    at_one = C(big, one, "EQ")
    d = S(at_one, B(Op.MUL, small, small),
          S(above, with_small, S(below, d2m1, _x2y2m1(big, small))))
    use_log1p = B(Op.OR, B(Op.OR, near, below), B(Op.OR, above, at_one))
    if log_of is not None:
        use_log1p = B(Op.AND, use_log1p, U(Op.NOT, log_of[0]))
    if log1p_of is not None:
        d, use_log1p = S(log1p_of[0], log1p_of[1], d), B(Op.OR, use_log1p, log1p_of[0])
    re = S(use_log1p, B(Op.MUL, U(Op.LOG1P, d), half), re)
    # a NaN part: NaN, or +inf beside an infinite part
    nan = B(Op.OR, C(x, x, "NE"), C(y, y, "NE"))
    inf = B(Op.OR, C(ax, _full(np.inf, x), "EQ"), C(ay, _full(np.inf, x), "EQ"))
    re = S(nan, S(inf, _full(np.inf, x), _full(np.nan, x)), re)
    return re, B(Op.ATAN2, y, x)


def _exp_t(dtype):
    """glibc's t for exp(x) * (c, s) past overflow: the largest integer with exp(t) finite."""
    return float(int((np.finfo(dtype).maxexp - 1) * np.log(2)))


def _exp_scaled(x, c, s, halved=False):
    """For x > t, as glibc's cexp and csinh take exp(x) (or exp(x) / 2) times c and s:
    (r, c', s', saturated) with exp(x) c = exp(r) c' (or the largest finite number times
    c' where `saturated`, past 3t): exp(t) (halved) multiplied into c and s, up to twice,
    so that a product that is finite does not overflow on the way."""
    B, C, S = build.binary, build.compare, build.select
    t = _exp_t(x.dtype)
    exp_t = x.dtype.type(np.exp(t))
    first = _full(exp_t / 2 if halved else exp_t, x)
    rx = B(Op.SUB, x, _full(t, x))
    c, s = B(Op.MUL, c, first), B(Op.MUL, s, first)
    twice = C(rx, _full(t, x), "GT")
    rx = S(twice, B(Op.SUB, rx, _full(t, x)), rx)
    c = S(twice, B(Op.MUL, c, _full(exp_t, x)), c)
    s = S(twice, B(Op.MUL, s, _full(exp_t, x)), s)
    return rx, c, s, C(rx, _full(t, x), "GT")


def _exp_times(x, c, s, halved=False):
    """exp(x) (or exp(x) / 2) times c and s for x > t (`_exp_scaled`)."""
    rx, c, s, saturated = _exp_scaled(x, c, s, halved)
    ev = build.select(saturated, _full(np.finfo(x.dtype).max, x), build.unary(Op.EXP, rx))
    return build.binary(Op.MUL, ev, c), build.binary(Op.MUL, ev, s)


def _sinh_cosh(x, y, odd):
    """glibc's csinh (odd) or ccosh of x + iy: sinh(x) cos(y) + i cosh(x) sin(y) (cosh's
    the other way round), past |x| = t (exp(t) the largest finite power) as exp(|x|-t) times
    the trig parts scaled by exp(t)/2, so that a finite result does not overflow on the way."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    t = _exp_t(x.dtype)
    sin_y, cos_y = U(Op.SIN, y), U(Op.COS, y)
    ax = U(Op.ABS, x)
    sinh_x, cosh_x = _sinh_and_cosh(x)
    re = B(Op.MUL, sinh_x if odd else cosh_x, cos_y)
    im = B(Op.MUL, cosh_x if odd else sinh_x, sin_y)
    # |x| > t: the odd factor's sign is x's
    neg = _signbit(x)
    if odd:
        cos_y = S(neg, U(Op.NEG, cos_y), cos_y)
    else:
        sin_y = S(neg, U(Op.NEG, sin_y), sin_y)
    far = C(ax, _full(t, x), "GT")
    far_re, far_im = _exp_times(ax, cos_y, sin_y, halved=True)
    re, im = S(far, far_re, re), S(far, far_im, im)
    return _sinh_cosh_special(x, y, odd, re, im)


def _sinh_cosh_special(x, y, odd, re, im):
    """C99's values where a part is not finite and the formula gives NaN where the
    answer is not: an infinite or NaN y (0 or inf beside x = 0 or inf), a NaN x beside
    y = 0."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    nan, inf = _full(np.nan, x), _full(np.inf, x)
    x_zero = C(x, _full(0, x), "EQ")
    x_inf = C(U(Op.ABS, x), inf, "EQ")
    y_bad = U(Op.NOT, U(Op.IS_FINITE, y))
    if odd:
        bad_re = S(x_zero, x, S(x_inf, inf, nan))
        bad_im = nan
    else:
        bad_re = S(x_inf, inf, nan)
        bad_im = S(x_zero, _full(0, x), nan)
    re, im = S(y_bad, bad_re, re), S(y_bad, bad_im, im)
    nan_by_zero = B(Op.AND, C(x, x, "NE"), C(y, _full(0, y), "EQ"))
    return re, S(nan_by_zero, y, im)


def _tanh_parts(x, y):
    """glibc's ctanh: (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y), and past
    |x| = t/2 the real part +-1 and the imaginary 4 sin y cos y / exp(2|x|) (divided in
    two steps so that it underflows gracefully)."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    info = np.finfo(x.dtype)
    t = float(int((info.maxexp - 1) * np.log(2) / 2))
    sin_y, cos_y = U(Op.SIN, y), U(Op.COS, y)
    sinh_x, cosh_x = _sinh_and_cosh(x)
    tiny_x = C(U(Op.ABS, x), _full(info.tiny, x), "LE")
    sinh_x, cosh_x = S(tiny_x, x, sinh_x), S(tiny_x, _full(1, x), cosh_x)
    cos2 = B(Op.MUL, cos_y, cos_y)
    negligible = C(U(Op.ABS, sinh_x), B(Op.MUL, U(Op.ABS, cos_y), _full(info.eps, x)), "LE")
    den = S(negligible, cos2, B(Op.ADD, B(Op.MUL, sinh_x, sinh_x), cos2))
    re = B(Op.DIV, B(Op.MUL, sinh_x, cosh_x), den)
    sc = B(Op.MUL, sin_y, cos_y)
    im = B(Op.DIV, sc, den)
    exp_2t = _full(x.dtype.type(np.exp(2 * t)), x)
    rx = B(Op.SUB, U(Op.ABS, x), _full(t, x))
    far_im = B(Op.DIV, B(Op.MUL, _full(4, x), sc), exp_2t)
    far_im = B(Op.DIV, far_im, S(C(rx, _full(t, x), "GT"), exp_2t,
                                 U(Op.EXP, B(Op.MUL, _full(2, x), rx))))
    one = _copysign(_full(1, x), x)
    far = C(U(Op.ABS, x), _full(t, x), "GT")
    re, im = S(far, one, re), S(far, far_im, im)
    # not finite: x = +-inf gives +-1 and a zero (the sign of sin y cos y where |y| > 1,
    # else y's); x = 0 gives x + NaN i; y = 0 gives z itself; anything else NaN
    x_inf = C(U(Op.ABS, x), _full(np.inf, x), "EQ")
    y_finite = U(Op.IS_FINITE, y)
    zero_im = _copysign(_full(0, x), S(B(Op.AND, y_finite, C(U(Op.ABS, y), _full(1, y), "GT")),
                                        sc, y))
    finite = B(Op.AND, U(Op.IS_FINITE, x), y_finite)
    y_zero = C(y, _full(0, y), "EQ")
    nan = _full(np.nan, x)
    x_zero = C(x, _full(0, x), "EQ")
    bad_re = S(x_inf, one, S(B(Op.OR, y_zero, x_zero), x, nan))
    bad_im = S(x_inf, zero_im, S(y_zero, y, nan))
    return S(finite, re, bad_re), S(finite, im, bad_im)


def _times_minus_i(parts):
    """-i * (a + ib) = b - ia: csin, ctan from csinh, ctanh of i*z (C99's identities,
    which glibc's csin and ctan follow)."""
    return parts[1], build.unary(Op.NEG, parts[0])


def _sinh(low, instr):
    return _sinh_cosh(*low.parts[instr.operands[0]], odd=True)


def _cosh(low, instr):
    return _sinh_cosh(*low.parts[instr.operands[0]], odd=False)


def _tanh(low, instr):
    return _tanh_parts(*low.parts[instr.operands[0]])


def _sin(low, instr):
    x, y = low.parts[instr.operands[0]]
    re, im = _times_minus_i(_sinh_cosh(build.unary(Op.NEG, y), x, odd=True))
    # glibc's csin (not -i csinh(iz)): +inf imaginary part for an infinite y beside a
    # non-finite x
    y_inf = build.compare(build.unary(Op.ABS, y), _full(np.inf, y), "EQ")
    x_bad = build.unary(Op.NOT, build.unary(Op.IS_FINITE, x))
    return re, build.select(build.binary(Op.AND, y_inf, x_bad), _full(np.inf, y), im)


def _cos(low, instr):
    x, y = low.parts[instr.operands[0]]
    return _sinh_cosh(build.unary(Op.NEG, y), x, odd=False)


def _tan(low, instr):
    x, y = low.parts[instr.operands[0]]
    return _times_minus_i(_tanh_parts(build.unary(Op.NEG, y), x))


# -- the inverse functions: glibc's casinh, casin, cacos, cacosh (all four through its
# __kernel_casinh) and catanh, catan (one kernel, mirrored), which NumPy's loops call

def _kernel_asinh(xr, xi, adj):
    """glibc's __kernel_casinh of a finite nonzero xr + i xi (other elements get
    garbage, which the callers' special values replace), the imaginary part as
    pi/2 minus it where `adj` (cacos, cacosh). Its cases on the first quadrant's
    (rx, ix), each element computing every case's arguments: past 1/eps, log(2z);
    near the axes and near ix = 1 the real part log(u) or log1p(v) / 2 of cancellation-
    free u, v, and the angle atan2(p, q); elsewhere clog(z + csqrt(1 + z^2)). One clog,
    whose log and log1p take the cases' u and v, and one atan2."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    eps = float(np.finfo(xr.dtype).eps)

    def f(v):
        return _full(v, xr)

    def cmp(a, v, direction):
        return C(a, v if not isinstance(v, (int, float)) else f(v), direction)

    def add(*vs):
        out = vs[0]
        for v in vs[1:]:
            out = B(Op.ADD, out, v)
        return out

    def mul(a, b):
        return B(Op.MUL, a, b)

    def sqrt(a):
        return U(Op.SQRT, a)

    AND, NOT = (lambda p, q: B(Op.AND, p, q)), (lambda p: U(Op.NOT, p))
    one, two, half = f(1), f(2), f(0.5)
    rx, ix = U(Op.ABS, xr), U(Op.ABS, xi)
    large = B(Op.OR, cmp(rx, 1 / eps, "GE"), cmp(ix, 1 / eps, "GE"))
    case_b = AND(cmp(rx, 0.5, "GE"), cmp(ix, eps / 8, "LT"))
    case_c = AND(cmp(rx, eps / 8, "LT"), cmp(ix, 1.5, "GE"))
    rx_small = cmp(rx, 0.5, "LT")
    above_one = cmp(ix, 1, "GT")
    case_d = AND(AND(above_one, cmp(ix, 1.5, "LT")), rx_small)
    case_e = AND(cmp(ix, 1, "EQ"), rx_small)
    case_f = AND(cmp(ix, 1, "LT"), rx_small)
    tiny_rx = cmp(rx, eps * eps, "LT")
    # b, f (ix < eps): s = hypot(1, rx)
    s_b = _hypot(one, rx)
    # c, d (rx < eps^2): s = sqrt(ix^2 - 1)
    ix2m1 = mul(B(Op.ADD, ix, one), B(Op.SUB, ix, one))
    s_c = sqrt(ix2m1)
    # d and f otherwise: m = ix^2 - 1 or 1 - ix^2, exactly its negation
    onemix2 = mul(B(Op.ADD, one, ix), B(Op.SUB, one, ix))
    m = S(above_one, ix2m1, onemix2)
    rx2 = mul(rx, rx)
    fq = mul(rx2, add(two, rx2, mul(mul(two, ix), ix)))
    d = sqrt(B(Op.ADD, mul(m, m), fq))
    dp = B(Op.ADD, d, m)
    dm = B(Op.DIV, fq, dp)
    r1 = sqrt(B(Op.DIV, B(Op.ADD, S(above_one, dm, dp), rx2), two))
    r2 = B(Op.DIV, mul(rx, ix), r1)
    v_df = add(rx2, S(above_one, dp, dm), mul(two, B(Op.ADD, mul(rx, r1), mul(ix, r2))))
    p_df, q_df = B(Op.ADD, ix, r2), B(Op.ADD, rx, r1)
    v_d1 = mul(two, B(Op.ADD, ix2m1, mul(ix, s_c)))
    # e: ix = 1
    sq_rx = sqrt(rx)
    v_e1 = mul(two, B(Op.ADD, rx, sq_rx))
    de = mul(rx, sqrt(B(Op.ADD, f(4), rx2)))
    s1 = sqrt(B(Op.DIV, B(Op.ADD, de, rx2), two))
    s2 = sqrt(B(Op.DIV, B(Op.SUB, de, rx2), two))
    v_e2 = add(rx2, de, mul(two, B(Op.ADD, mul(rx, s1), s2)))
    # f: ix < 1
    s_f = sqrt(onemix2)
    v_f1 = B(Op.DIV, mul(two, rx), s_f)
    v_f3 = mul(mul(two, rx), B(Op.ADD, rx, s_b))
    ix_tiny = cmp(ix, eps, "LT")
    v = S(case_d, S(tiny_rx, v_d1, v_df),
          S(case_e, S(cmp(rx, eps / 8, "LT"), v_e1, v_e2),
            S(ix_tiny, v_f3, S(tiny_rx, v_f1, v_df))))
    p = S(case_d, S(tiny_rx, s_c, p_df),
          S(case_e, S(cmp(rx, eps / 8, "LT"), one, B(Op.ADD, one, s2)),
            S(ix_tiny, ix, S(tiny_rx, ix, p_df))))
    q = S(case_d, S(tiny_rx, rx, q_df),
          S(case_e, S(cmp(rx, eps / 8, "LT"), sq_rx, B(Op.ADD, rx, s1)),
            S(ix_tiny, s_b, S(tiny_rx, s_f, q_df))))
    # b and c: log(u)
    u = S(case_b, B(Op.ADD, rx, s_b), B(Op.ADD, ix, s_c))
    p = S(case_b, ix, S(case_c, s_c, p))
    q = S(case_b, s_b, S(case_c, rx, q))
    # elsewhere: w = z + csqrt((rx - ix)(rx + ix) + 1 + i 2 rx ix); past 1/eps, z itself
    w = _sqrt_parts(B(Op.ADD, mul(B(Op.SUB, rx, ix), B(Op.ADD, rx, ix)), one),
                    mul(mul(two, rx), ix))
    wr = S(large, rx, B(Op.ADD, w[0], rx))
    wi = S(large, ix, B(Op.ADD, w[1], ix))
    not_large = NOT(large)
    by_log = AND(not_large, B(Op.OR, case_b, case_c))
    by_log1p = AND(not_large, B(Op.OR, case_d, B(Op.OR, case_e, case_f)))
    re = _log_parts(wr, wi, log_of=(by_log, u), log1p_of=(by_log1p, v))[0]
    re = S(large, B(Op.ADD, re, f(xr.dtype.type(np.log(2)))), re)
    clog = B(Op.OR, large, NOT(B(Op.OR, by_log, by_log1p)))
    p, q = S(clog, wi, p), S(clog, wr, q)
    if adj:
        im = U(Op.ABS, B(Op.ATAN2, q, _copysign(p, xi)))
    else:
        im = _copysign(B(Op.ATAN2, p, q), xi)
    return _copysign(re, xr), im


def _is_inf(v):
    return build.compare(build.unary(Op.ABS, v), _full(np.inf, v), "EQ")


def _is_nan(v):
    return build.compare(v, v, "NE")


def _asinh_special(xr, xi):
    """glibc's casinh where a part is infinite or NaN, or both are zero (z itself)."""
    S, U = build.select, build.unary
    part = xr.dtype.type
    nan, inf = _full(np.nan, xr), _full(np.inf, xr)
    xr_finite, xi_finite = U(Op.IS_FINITE, xr), U(Op.IS_FINITE, xi)
    # an infinite xi: +-inf, and pi/2 (finite xr) or pi/4 (infinite) with xi's sign
    angle = S(xr_finite, _full(part(np.pi / 2), xr), _full(part(np.pi / 4), xr))
    re = S(_is_inf(xi), _copysign(inf, xr), S(xr_finite, nan, xr))
    zero_im = build.binary(Op.OR, build.binary(Op.AND, _is_inf(xr), xi_finite),
                           build.binary(Op.AND, _is_nan(xr),
                                        build.compare(xi, _full(0, xi), "EQ")))
    im = S(_is_inf(xi), S(_is_nan(xr), nan, _copysign(angle, xi)),
           S(xr_finite, nan, S(zero_im, _copysign(_full(0, xi), xi), nan)))
    zeros = _both_zero(xr, xi)
    return S(zeros, xr, re), S(zeros, xi, im)


def _both_zero(xr, xi):
    return build.binary(Op.AND, build.compare(xr, _full(0, xr), "EQ"),
                        build.compare(xi, _full(0, xi), "EQ"))


def _ordinary(xr, xi):
    """Both parts finite and not both zero: where glibc's functions take their kernels."""
    B, U = build.binary, build.unary
    return B(Op.AND, B(Op.AND, U(Op.IS_FINITE, xr), U(Op.IS_FINITE, xi)),
             U(Op.NOT, _both_zero(xr, xi)))


def _asin_special(xr, xi):
    """glibc's casin where casinh(i z) is special, and its own NaN cases."""
    S = build.select
    y = _asinh_special(build.unary(Op.NEG, xi), xr)
    re, im = y[1], build.unary(Op.NEG, y[0])
    nan = _full(np.nan, xr)
    re_zero = build.compare(xr, _full(0, xr), "EQ")
    any_inf = build.binary(Op.OR, _is_inf(xr), _is_inf(xi))
    nan_re, nan_im = (S(re_zero, xr, nan),
                      S(re_zero, xi, S(any_inf, _copysign(_full(np.inf, xi), xi), nan)))
    either_nan = build.binary(Op.OR, _is_nan(xr), _is_nan(xi))
    return S(either_nan, nan_re, re), S(either_nan, nan_im, im)


def _asinh(low, instr):
    xr, xi = low.parts[instr.operands[0]]
    ordinary = _ordinary(xr, xi)
    k, s = _kernel_asinh(xr, xi, adj=False), _asinh_special(xr, xi)
    return tuple(build.select(ordinary, kp, sp) for kp, sp in zip(k, s))


def _asin(low, instr):
    # glibc's casin: -i casinh(i z), the kernel on -xi + i xr
    xr, xi = low.parts[instr.operands[0]]
    nxi = build.unary(Op.NEG, xi)
    y = _kernel_asinh(nxi, xr, adj=False)
    k = y[1], build.unary(Op.NEG, y[0])
    s = _asin_special(xr, xi)
    ordinary = _ordinary(xr, xi)
    return tuple(build.select(ordinary, kp, sp) for kp, sp in zip(k, s))


def _acos(low, instr):
    # glibc's cacos: the kernel (adjusted) on -xi + i xr, parts swapped; special
    # values pi/2 - casin(z) (+0 for a zero real part)
    xr, xi = low.parts[instr.operands[0]]
    y = _kernel_asinh(build.unary(Op.NEG, xi), xr, adj=True)
    sr, si = _asin_special(xr, xi)
    sr = build.binary(Op.SUB, _full(xr.dtype.type(np.pi / 2), xr), sr)
    sr = build.select(build.compare(sr, _full(0, sr), "EQ"), _full(0, sr), sr)
    ordinary = _ordinary(xr, xi)
    return (build.select(ordinary, y[1], sr),
            build.select(ordinary, y[0], build.unary(Op.NEG, si)))


def _acosh(low, instr):
    """glibc's cacosh: the kernel (adjusted) on -xi + i xr, signs by xi's; its own
    special values."""
    xr, xi = low.parts[instr.operands[0]]
    B, S, U = build.binary, build.select, build.unary
    part = xr.dtype.type
    yr, yi = _kernel_asinh(U(Op.NEG, xi), xr, adj=True)
    neg = _signbit(xi)
    kr, ki = S(neg, yr, U(Op.NEG, yr)), S(neg, U(Op.NEG, yi), yi)
    nan, inf = _full(np.nan, xr), _full(np.inf, xr)
    pi = _full(part(np.pi), xr)
    xr_inf, xi_inf = _is_inf(xr), _is_inf(xi)
    xr_finite, xi_finite = U(Op.IS_FINITE, xr), U(Op.IS_FINITE, xi)
    xr_zero = build.compare(xr, _full(0, xr), "EQ")
    # an infinite xi: 3pi/4 or pi/4 (infinite xr by its sign), pi/2, NaN (NaN xr)
    corner = S(build.compare(xr, _full(0, xr), "LT"), _full(part(np.pi) - part(np.pi / 4), xr),
               _full(part(np.pi / 4), xr))
    angle = S(xr_inf, corner, _full(part(np.pi / 2), xr))
    im_xi_inf = S(_is_nan(xr), nan, _copysign(angle, xi))
    im_xr_inf = S(xi_finite, _copysign(S(_signbit(xr), pi, _full(0, xr)), xi), nan)
    im_nan = S(xr_zero, _full(part(np.pi / 2), xr), nan)
    sr = S(B(Op.OR, xi_inf, xr_inf), inf, nan)
    si = S(xi_inf, im_xi_inf, S(xr_inf, im_xr_inf, im_nan))
    zeros = _both_zero(xr, xi)
    sr = S(zeros, _full(0, xr), sr)
    si = S(zeros, _copysign(_full(part(np.pi / 2), xr), xi), si)
    ordinary = _ordinary(xr, xi)
    return S(ordinary, kr, sr), S(ordinary, ki, si)


def _atanh_parts(a, b):
    """glibc's catanh of a + ib, all of it, as (p, q); catan(x + iy) is (q, p) of
    y + ix (its formulas are catanh's, mirrored). p: past 16/eps its limit, else
    log((1+a)^2 + b^2) / ((1-a)^2 + b^2)) / 4 (as log1p(4a / den) / 4 above 1/2);
    q: atan2(2b, (1 - a^2 - b^2)) / 2, the denominator cancellation-free."""
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    part = a.dtype.type
    eps = float(np.finfo(a.dtype).eps)

    def f(v):
        return _full(v, a)

    def mul(x, y):
        return B(Op.MUL, x, y)

    one, two, quarter = f(1), f(2), f(0.25)
    ra, rb = U(Op.ABS, a), U(Op.ABS, b)
    pi_2 = _copysign(f(part(np.pi / 2)), b)
    # past 16/eps
    h = _hypot(B(Op.DIV, a, two), B(Op.DIV, b, two))
    p_large = S(C(rb, one, "LE"), B(Op.DIV, one, a),
                S(C(ra, one, "LE"), B(Op.DIV, B(Op.DIV, a, b), b),
                  B(Op.DIV, B(Op.DIV, B(Op.DIV, a, h), h), f(4))))
    # p otherwise: one log, of |b| (a = +-1, tiny b) or of the quotient
    b2 = S(C(rb, f(eps * eps), "GE"), mul(b, b), f(0))
    num = B(Op.ADD, one, a)
    num = B(Op.ADD, b2, mul(num, num))
    den = B(Op.SUB, one, a)
    den = B(Op.ADD, b2, mul(den, den))
    quotient = B(Op.DIV, num, den)
    unit = B(Op.AND, C(ra, one, "EQ"), C(rb, f(eps * eps), "LT"))
    log = U(Op.LOG, S(unit, rb, quotient))
    p_unit = mul(_copysign(f(0.5), a), B(Op.SUB, f(part(np.log(2))), log))
    p_mid = S(C(quotient, f(0.5), "LT"), mul(quarter, log),
              mul(quarter, U(Op.LOG1P, B(Op.DIV, mul(f(4), a), den))))
    p = S(unit, p_unit, p_mid)
    # q: 1 - |z|^2 by the larger part's form
    x_larger = C(ra, rb, "GE")
    big, small = S(x_larger, ra, rb), S(x_larger, rb, ra)
    one_minus = mul(B(Op.SUB, one, big), B(Op.ADD, one, big))
    both = B(Op.SUB, one_minus, mul(small, small))
    den_q = S(C(small, f(eps / 2), "LT"), one_minus,
              S(C(big, one, "GE"), both,
                S(B(Op.OR, C(big, f(0.75), "GE"), C(small, f(0.5), "GE")),
                  U(Op.NEG, _x2y2m1(big, small)), both)))
    q = mul(f(0.5), B(Op.ATAN2, mul(two, b), den_q))
    large = B(Op.OR, C(ra, f(16 / eps), "GE"), C(rb, f(16 / eps), "GE"))
    p, q = S(large, p_large, p), S(large, pi_2, q)
    # special values: an infinite b gives (+-0, +-pi/2); an infinite or zero a (b NaN
    # or finite), +-0 and +-pi/2 or NaN; both zero, z; anything else NaN
    nan = f(np.nan)
    zero_a = _copysign(f(0), a)
    a_inf_or_zero = B(Op.OR, _is_inf(a), C(a, f(0), "EQ"))
    sp = S(_is_inf(b), zero_a, S(a_inf_or_zero, zero_a, nan))
    sq = S(_is_inf(b), pi_2, S(a_inf_or_zero, S(U(Op.IS_FINITE, b), pi_2, nan), nan))
    zeros = _both_zero(a, b)
    sp, sq = S(zeros, a, sp), S(zeros, b, sq)
    ordinary = _ordinary(a, b)
    return S(ordinary, p, sp), S(ordinary, q, sq)


def _atanh(low, instr):
    return _atanh_parts(*low.parts[instr.operands[0]])


def _atan(low, instr):
    xr, xi = low.parts[instr.operands[0]]
    p, q = _atanh_parts(xi, xr)
    return q, p


def _log1p(low, instr):
    # NumPy's own nc_log1p: log|z + 1| + i atan2(y, x + 1)
    x, y = low.parts[instr.operands[0]]
    x1 = build.binary(Op.ADD, x, _full(1, x))
    return build.unary(Op.LOG, _hypot(x1, y, rounded_once=True)), build.binary(Op.ATAN2, y, x1)


def _expm1(low, instr):
    # NumPy's own nc_expm1: expm1(x) cos y - 2 sin^2(y/2) + i exp(x) sin y
    x, y = low.parts[instr.operands[0]]
    B, U = build.binary, build.unary
    a = U(Op.SIN, B(Op.DIV, y, _full(2, y)))
    re = B(Op.SUB, B(Op.MUL, U(Op.EXPM1, x), U(Op.COS, y)), B(Op.MUL, B(Op.MUL, _full(2, a), a), a))
    return re, B(Op.MUL, U(Op.EXP, x), U(Op.SIN, y))


def _sign(low, instr):
    """NumPy 2's sign of a complex value: z / |z|; 0 at 0; NaN where |z| is; where a part
    is infinite, that part's sign (NaN where both are)."""
    x, y = low.parts[instr.operands[0]]
    B, C, S, U = build.binary, build.compare, build.select, build.unary
    h = _hypot(x, y)
    zero, one, nan, inf = _full(0, x), _full(1, x), _full(np.nan, x), _full(np.inf, x)
    unit = lambda v: S(C(v, zero, "GT"), one, U(Op.NEG, one))
    x_inf, y_inf = C(U(Op.ABS, x), inf, "EQ"), C(U(Op.ABS, y), inf, "EQ")
    re = S(C(h, zero, "EQ"), zero, B(Op.DIV, x, h))
    im = S(C(h, zero, "EQ"), zero, B(Op.DIV, y, h))
    re = S(C(h, inf, "EQ"), S(x_inf, S(y_inf, nan, unit(x)), zero), re)
    im = S(C(h, inf, "EQ"), S(x_inf, S(y_inf, nan, zero), unit(y)), im)
    h_nan = C(h, h, "NE")
    return S(h_nan, nan, re), S(h_nan, nan, im)


_RULES = {
    Op.CONSTANT: _constant,
    Op.CONVERT: _convert,
    Op.REAL: lambda low, instr: low.parts[instr.operands[0]][0],
    Op.IMAG: lambda low, instr: low.parts[instr.operands[0]][1],
    Op.CONJ: lambda low, instr: (low.parts[instr.operands[0]][0],
                                 build.unary(Op.NEG, low.parts[instr.operands[0]][1])),
    Op.COMPLEX: lambda low, instr: tuple(low.real[o] for o in instr.operands),
    Op.ADD: _add_sub, Op.SUB: _add_sub, Op.NEG: _neg,
    Op.MUL: _mul, Op.DIV: _div, Op.ABS: _abs, Op.EXP: _exp, Op.SQRT: _sqrt,
    Op.COMPARE: _compare, Op.SELECT: _select, Op.REDUCE_SUM: _reduce_sum, Op.POW: _power,
    Op.LOG: _log, Op.LOG1P: _log1p, Op.EXPM1: _expm1, Op.SIGN: _sign,
    Op.SIN: _sin, Op.COS: _cos, Op.TAN: _tan, Op.SINH: _sinh, Op.COSH: _cosh, Op.TANH: _tanh,
    Op.ASINH: _asinh, Op.ASIN: _asin, Op.ACOS: _acos, Op.ACOSH: _acosh, Op.ATANH: _atanh,
    Op.ATAN: _atan,
}
