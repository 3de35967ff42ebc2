"""Algebraic rules for elementwise ops: identities, self-cancellation, powers, converts, select.

Every rule is exact (the interpreter gives the same bits before and after, NaN payloads
aside) unless decorated `@unsafe`; `options.UNSAFE_MATH` says what each of those breaks.
In the comments, `0` is an integer zero, `0.0` is +0.0, and `c` is a constant or a
broadcast of one.
"""
from jitlib.fusion.rewrite import (RuleTable, full_like, has_value, is_constant,
                                   scalar_constant, splat, unsafe)
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op


def _float(instr):
    return dtypes.is_inexact(instr.dtype)   # complex values round as floats do


# ** canonicalisation **

def constant_to_right(instr, options):
    x, y = instr.operands
    if not is_constant(x) or is_constant(y):
        return None
    # np.maximum(-0.0, 0.0) is -0.0 but np.maximum(0.0, -0.0) is 0.0: float max/min
    # do not commute; add and mul do (NaN payloads aside), integer max/min too.
    if instr.op in (Op.MAX, Op.MIN) and _float(instr):
        return None
    return build.binary(instr.op, y, x, loc=instr.loc)


_MIRRORED = {"EQ": "EQ", "NE": "NE", "LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}


def compare_constant_to_right(instr, options):
    x, y = instr.operands
    if not is_constant(x) or is_constant(y):
        return None
    return build.compare(y, x, _MIRRORED[instr.attrs["direction"]], loc=instr.loc)


# ** additive identities **

def add_zero(instr, options):
    x, y = instr.operands
    return x if not _float(instr) and has_value(y, 0) else None


def add_neg_zero(instr, options):
    x, y = instr.operands
    return x if _float(instr) and has_value(y, -0.0) else None


@unsafe("add_pos_zero")
def add_pos_zero(instr, options):
    x, y = instr.operands
    return x if _float(instr) and has_value(y, 0.0) else None


def sub_zero(instr, options):
    x, y = instr.operands
    return x if has_value(y, 0) else None    # +0.0 for floats: -0.0 - 0.0 is -0.0


def sub_self_int(instr, options):
    x, y = instr.operands
    return full_like(instr, 0, instr.loc) if x is y and not _float(instr) else None


@unsafe("sub_self")
def sub_self(instr, options):
    x, y = instr.operands
    return full_like(instr, 0, instr.loc) if x is y and _float(instr) else None


# ** multiplicative identities **

def mul_one(instr, options):
    x, y = instr.operands
    return x if has_value(y, 1) else None


def mul_zero_int(instr, options):
    x, y = instr.operands
    return y if not _float(instr) and has_value(y, 0) else None


@unsafe("mul_zero")
def mul_zero(instr, options):
    x, y = instr.operands
    return y if _float(instr) and has_value(y, 0.0) else None


def div_one(instr, options):
    x, y = instr.operands
    return x if has_value(y, 1) else None


# ** powers **
# Only a scalar exponent matches (a 0-d constant or a broadcast of one). The interpreter
# then hands NumPy a stride-0 exponent, for which NumPy's power computes x**1 as x and
# x**2 as x*x: bit for bit, measured on every f16/bf16 value and on millions of f32/f64
# values (tests/fusion/test_simplify.py). A materialised exponent array goes through the
# vectorised pow instead, whose f32 x**1 and x**2 can be an ulp off, so it never matches.

def _exponent_is(instr, value):
    e = scalar_constant(instr.operands[1])
    return e is not None and has_value(e, value)


def pow_one(instr, options):
    # complex z ** 1 is np.power's, which need not keep z's bits (-0.0 parts)
    if dtypes.is_complex(instr.dtype):
        return None
    return instr.operands[0] if _exponent_is(instr, 1) else None


def pow_two(instr, options):
    x = instr.operands[0]
    return build.binary(Op.MUL, x, x, loc=instr.loc) if _exponent_is(instr, 2) else None


def pow_half(instr, options):
    # exact: the IR defines pow(x, 0.5) as sqrt(x), NumPy's own fast path (ops.py)
    if not _float(instr) or not _exponent_is(instr, 0.5):
        return None
    return build.unary(Op.SQRT, instr.operands[0], loc=instr.loc)


# ** involutions, idempotence, self-cancellation **

def double_negation(instr, options):
    (x,) = instr.operands
    return x.operands[0] if x.op is instr.op else None


def idempotent_self(instr, options):
    x, y = instr.operands
    return x if x is y else None     # np.maximum(x, x) is x, NaN and -0.0 included


def xor_self(instr, options):
    x, y = instr.operands
    return full_like(instr, 0, instr.loc) if x is y else None


def compare_self_int(instr, options):
    x, y = instr.operands
    if x is not y or _float(x):
        return None
    return full_like(instr, instr.attrs["direction"] in ("EQ", "LE", "GE"), instr.loc)


def compare_bool_constant(instr, options):
    x, c = instr.operands
    direction = instr.attrs["direction"]
    if not dtypes.is_bool(x.dtype) or direction not in ("EQ", "NE"):
        return None
    v = splat(c)
    if v is None:
        return None
    # x == true and x != false are x; x == false and x != true are not x
    return x if bool(v) == (direction == "EQ") else build.unary(Op.NOT, x, loc=instr.loc)


# ** bitwise identities (bool: and, or, xor; integers: bitwise) **

def bitwise_identity(instr, options):
    x, y = instr.operands
    neutral = -1 if instr.op is Op.AND else 0     # -1 is every bit set, true for bool
    return x if has_value(y, neutral) else None


def bitwise_absorb(instr, options):
    x, y = instr.operands
    return y if has_value(y, 0 if instr.op is Op.AND else -1) else None


# ** reassociating constants **

def _reassociate(instr):
    inner, c2 = instr.operands
    if inner.op is not instr.op or not is_constant(c2):
        return None
    x, c1 = inner.operands
    if is_constant(x) or not is_constant(c1):
        return None
    folded = build.binary(instr.op, c1, c2, loc=instr.loc)
    return build.binary(instr.op, x, folded, loc=instr.loc)


def reassociate_int(instr, options):
    # Integer add/mul wrap modulo 2**bits, so any grouping gives the same bits.
    return None if _float(instr) else _reassociate(instr)


@unsafe("reassociate")
def reassociate(instr, options):
    if not _float(instr) or instr.op not in (Op.ADD, Op.MUL):
        return None
    return _reassociate(instr)


# ** converts **

def holds_exactly(wide, narrow) -> bool:
    """Whether dtype `wide` represents every value of dtype `narrow` exactly."""
    if wide == narrow or dtypes.is_bool(narrow):
        return True
    if dtypes.is_bool(wide) or dtypes.is_complex(wide) or dtypes.is_complex(narrow):
        return False    # (a complex round trip is exact, but drops the imaginary part)
    if dtypes.is_float(narrow):
        if not dtypes.is_float(wide):
            return False
        w, n = dtypes.finfo(wide), dtypes.finfo(narrow)
        return w.nmant >= n.nmant and w.maxexp >= n.maxexp and w.minexp <= n.minexp
    lo, hi = dtypes.iinfo(narrow).min, dtypes.iinfo(narrow).max
    if dtypes.is_integer(wide):
        return dtypes.iinfo(wide).min <= lo and hi <= dtypes.iinfo(wide).max
    return max(hi, -lo).bit_length() <= dtypes.finfo(wide).nmant + 1


def convert_same_type(instr, options):
    (x,) = instr.operands
    return x if x.dtype == instr.dtype else None


def convert_convert(instr, options):
    (inner,) = instr.operands
    if inner.op is not Op.CONVERT:
        return None
    x = inner.operands[0]
    if not holds_exactly(inner.dtype, x.dtype):
        return None
    if instr.dtype == x.dtype:
        return x
    # Float -> integer of NaN or out-of-range values is whatever the cast does, and a
    # direct cast does it differently (measured: i8 -> bf16 -> u8, f16 -> f32 -> u32).
    if dtypes.is_float(inner.dtype) and dtypes.is_integer(instr.dtype):
        return None
    return build.convert(x, instr.dtype, loc=instr.loc)


# ** select **

def select_constant_predicate(instr, options):
    p, a, b = instr.operands
    v = splat(p)
    return None if v is None else (a if v else b)


def select_same(instr, options):
    p, a, b = instr.operands
    return a if a is b else None


def select_not(instr, options):
    p, a, b = instr.operands
    if p.op is not Op.NOT:
        return None
    return build.select(p.operands[0], b, a, loc=instr.loc)


RULES = RuleTable([
    # ** canonicalisation: constants to the right, so later rules look only there **
    (O.COMMUTATIVE, constant_to_right),               # c+x -> x+c (not float max/min)
    (Op.COMPARE, compare_constant_to_right),          # c<x -> x>c
    # ** additive identities **
    (Op.ADD, add_zero),                               # x+0 -> x (integers, bool)
    (Op.ADD, add_neg_zero),                           # x+(-0.0) -> x
    (Op.ADD, add_pos_zero),                           # x+0.0 -> x (opt-in)
    (Op.SUB, sub_zero),                               # x-0 -> x, x-0.0 -> x
    (Op.SUB, sub_self_int),                           # x-x -> 0 (integers)
    (Op.SUB, sub_self),                               # x-x -> 0.0 (opt-in)
    # ** multiplicative identities **
    (Op.MUL, mul_one),                                # x*1 -> x
    (Op.MUL, mul_zero_int),                           # x*0 -> 0 (integers, bool)
    (Op.MUL, mul_zero),                               # x*0.0 -> 0.0 (opt-in)
    (Op.DIV, div_one),                                # x/1 -> x
    # ** powers (scalar exponents only) **
    (Op.POW, pow_one),                                # x**1 -> x
    (Op.POW, pow_two),                                # x**2 -> x*x
    (Op.POW, pow_half),                               # x**0.5 -> sqrt(x)
    # ** involutions, idempotence, self-cancellation **
    ({Op.NEG, Op.NOT}, double_negation),              # -(-x) -> x, not(not x) -> x
    ({Op.AND, Op.OR, Op.MAX, Op.MIN}, idempotent_self),   # x&x -> x, max(x,x) -> x
    (Op.XOR, xor_self),                               # x^x -> 0
    (Op.COMPARE, compare_self_int),                   # x==x -> true, x<x -> false (integers)
    (Op.COMPARE, compare_bool_constant),              # p!=false -> p, p==false -> not p
    # ** bitwise identities **
    ({Op.AND, Op.OR, Op.XOR}, bitwise_identity),      # x&~0 -> x, x|0 -> x, x^0 -> x
    ({Op.AND, Op.OR}, bitwise_absorb),                # x&0 -> 0, x|~0 -> ~0
    # ** reassociating constants **
    (O.ASSOCIATIVE, reassociate_int),                 # (x+c1)+c2 -> x+(c1+c2) (integers)
    ({Op.ADD, Op.MUL}, reassociate),                  # the same for floats (opt-in)
    # ** converts **
    (Op.CONVERT, convert_same_type),                  # convert(x: T) to T -> x
    (Op.CONVERT, convert_convert),                    # S -> M -> T => S -> T, M holds S
    # ** select **
    (Op.SELECT, select_constant_predicate),           # select(true, a, b) -> a
    (Op.SELECT, select_same),                         # select(p, a, a) -> a
    (Op.SELECT, select_not),                          # select(not p, a, b) -> select(p, b, a)
])
