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
- `exp(a)`: exp(ar) * (cos(ai), sin(ai)), with ai == 0 giving (exp(ar), ai) exactly;
- `a ** n` for a constant integer |n| < 100: NumPy's repeated squaring and its zeros;
- `sqrt(a)`: C99's csqrt (the algorithm and special cases of FreeBSD's libm);
- `==`/`!=` part by part; `real`, `imag`, `conj`, `complex`, conversions, selects and
  data movement part by part; a sum over the value as real pairs.

Anything else (log, other powers, trig, products, sorts...) raises `NotLowered`: the kernel
stays on the reference interpreter, NumPy's complex loops, as before.
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
    for positive n and nan+nanj for negative. Other exponents are not lowered."""
    base, exponent = instr.operands
    b = _scalar(exponent)
    if b is None or b.imag != 0 or b.real != int(b.real) or not -100 < b.real < 100:
        raise NotLowered("pow with an exponent other than a constant integer")
    n = int(b.real)
    a = low.of(base)
    if n == 0:
        return _full(1, a[0]), _full(0, a[0])
    if abs(n) == 1:
        r = a
    elif abs(n) == 2:
        r = _times(a, a)
    elif abs(n) == 3:
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
    if abs(n) == 1 and n > 0:
        return r
    zero = build.binary(Op.AND, build.compare(a[0], _full(0, a[0]), "EQ"),
                        build.compare(a[1], _full(0, a[1]), "EQ"))
    at_zero = _full(0 if n > 0 else np.nan, a[0])
    return tuple(build.select(zero, at_zero, part) for part in r)


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


def _hypot(re, im):
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
    """C99's csqrt (CACM algorithm 312 with its special cases, as FreeBSD's libm writes
    it): the principal root, imaginary part with b's sign; parts past max/2.414 scaled
    by 1/4 first and the root by 2 after."""
    a, b = low.parts[instr.operands[0]]
    B, C, S = build.binary, build.compare, build.select
    abs_a, abs_b = build.unary(Op.ABS, a), build.unary(Op.ABS, b)
    big = B(Op.OR, C(abs_a, _full(np.finfo(a.dtype).max / 2.414213562373095, a), "GE"),
            C(abs_b, _full(np.finfo(b.dtype).max / 2.414213562373095, b), "GE"))
    quarter = _full(0.25, a)
    sa, sb = S(big, B(Op.MUL, a, quarter), a), S(big, B(Op.MUL, b, quarter), b)
    h, half, two = _hypot(sa, sb), _full(0.5, a), _full(2, a)
    t_pos = build.unary(Op.SQRT, B(Op.MUL, B(Op.ADD, sa, h), half))
    t_neg = build.unary(Op.SQRT, B(Op.MUL, B(Op.ADD, build.unary(Op.NEG, sa), h), half))
    nonneg = C(sa, _full(0, sa), "GE")
    re = S(nonneg, t_pos, B(Op.DIV, build.unary(Op.ABS, sb), B(Op.MUL, two, t_neg)))
    im = S(nonneg, B(Op.DIV, sb, B(Op.MUL, two, t_pos)), _copysign(t_neg, sb))
    re, im = S(big, B(Op.MUL, re, two), re), S(big, B(Op.MUL, im, two), im)
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
    re, im = low.parts[instr.operands[0]]
    scale = build.unary(Op.EXP, re)
    out_re = build.binary(Op.MUL, scale, build.unary(Op.COS, im))
    out_im = build.binary(Op.MUL, scale, build.unary(Op.SIN, im))
    real_axis = build.compare(im, _full(0, im), "EQ")   # exp(x + 0j) = exp(x) + 0j, x = inf too
    return build.select(real_axis, scale, out_re), build.select(real_axis, im, out_im)


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
}
