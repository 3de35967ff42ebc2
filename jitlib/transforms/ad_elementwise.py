"""Partial derivatives of the elementwise ops, shared by forward and reverse mode:
`partials[op](instr) -> [d out / d operand_i, or None for no slope]`. The JVP of such an
op is sum(tangent_i * partial_i), its VJP gives operand i cotangent * partial_i.

Conventions follow JAX: max/min split ties evenly (jnp.maximum), abs has slope 1 at 0,
pow's base slope is y * x^(y-1) even at 0 ** 0 (NaN, as lax.pow with a float exponent),
floor/ceil/round/sign have slope 0.
"""
from jitlib.hlo import build
from jitlib.hlo.ops import Op
from jitlib.transforms.ad_util import (
    as_float, broadcast_like, compare, div, full_like, mul, neg, select, zeros_like)


partials = {}


def _balanced_eq(x, out, other):
    """JAX's tie rule for max/min: x's share of the slope, 1 where x alone is the
    result, 1/2 where both operands are (jax.lax.max's _balanced_eq)."""
    mine = as_float(compare(x, out, "EQ"), out)
    both = select(compare(other, out, "EQ"), full_like(out, 2), full_like(out, 1))
    return div(mine, both)


def _max_min_partials(instr):
    x, y = instr.operands
    return [_balanced_eq(x, instr, y), _balanced_eq(y, instr, x)]


partials[Op.MAX] = _max_min_partials
partials[Op.MIN] = _max_min_partials


def _unary(fn):
    def rule(instr):
        return [fn(instr.operands[0], instr)]
    return rule


def _zero_slope(instr):
    return [None] * len(instr.operands)


for _op in (Op.SIGN, Op.FLOOR, Op.CEIL, Op.ROUND):
    partials[_op] = _zero_slope


def _one_plus(x, y):
    return build.binary(Op.ADD, full_like(x, 1), y)


def _one_minus(x, y):
    return build.binary(Op.SUB, full_like(x, 1), y)


partials[Op.NEG] = _unary(lambda x, y: full_like(x, -1))
# abs: slope +1 at 0, as JAX (select(x >= 0, g, -g))
partials[Op.ABS] = _unary(lambda x, y: select(compare(x, zeros_like(x), "GE"),
                                              full_like(x, 1), full_like(x, -1)))
partials[Op.EXP] = _unary(lambda x, y: y)
partials[Op.EXPM1] = _unary(lambda x, y: _one_plus(x, y))
partials[Op.LOG] = _unary(lambda x, y: div(full_like(x, 1), x))
partials[Op.LOG1P] = _unary(lambda x, y: div(full_like(x, 1), _one_plus(x, x)))
partials[Op.SQRT] = _unary(lambda x, y: div(full_like(x, 0.5), y))
partials[Op.RSQRT] = _unary(lambda x, y: mul(full_like(x, -0.5), div(y, x)))
partials[Op.TANH] = _unary(lambda x, y: _one_minus(x, mul(y, y)))
partials[Op.LOGISTIC] = _unary(lambda x, y: mul(y, _one_minus(x, y)))
partials[Op.SIN] = _unary(lambda x, y: build.unary(Op.COS, x))
partials[Op.COS] = _unary(lambda x, y: neg(build.unary(Op.SIN, x)))
partials[Op.TAN] = _unary(lambda x, y: _one_plus(x, mul(y, y)))


# the complex-only functions, with JAX's formulas
def _rsqrt(v):
    return build.unary(Op.RSQRT, v)


def _inverse(v):
    return div(full_like(v, 1), v)


partials[Op.SINH] = _unary(lambda x, y: build.unary(Op.COSH, x))
partials[Op.COSH] = _unary(lambda x, y: build.unary(Op.SINH, x))
partials[Op.ASIN] = _unary(lambda x, y: _rsqrt(_one_minus(x, mul(x, x))))
partials[Op.ACOS] = _unary(lambda x, y: neg(_rsqrt(_one_minus(x, mul(x, x)))))
partials[Op.ATAN] = _unary(lambda x, y: _inverse(_one_plus(x, mul(x, x))))
partials[Op.ASINH] = _unary(lambda x, y: _rsqrt(_one_plus(x, mul(x, x))))
# 1/(sqrt(x - 1) sqrt(x + 1)), not rsqrt(x*x - 1): that one flips sign across Re x = 0
partials[Op.ACOSH] = _unary(lambda x, y: _inverse(mul(
    build.unary(Op.SQRT, build.binary(Op.SUB, x, full_like(x, 1))),
    build.unary(Op.SQRT, _one_plus(x, x)))))
partials[Op.ATANH] = _unary(lambda x, y: _inverse(mul(_one_plus(x, x), _one_minus(x, x))))


def _add_partials(instr):
    return [full_like(instr, 1), full_like(instr, 1)]


def _sub_partials(instr):
    return [full_like(instr, 1), full_like(instr, -1)]


def _mul_partials(instr):
    x, y = instr.operands
    return [y, x]


def _div_partials(instr):
    x, y = instr.operands
    return [div(full_like(y, 1), y), neg(div(instr, y))]


def _rem_partials(instr):
    # rem = x - y * trunc(x / y): slope 1 in x, -trunc(x / y) in y (as JAX)
    x, y = instr.operands
    quotient = div(x, y)
    truncated = mul(build.unary(Op.SIGN, quotient),
                    build.unary(Op.FLOOR, build.unary(Op.ABS, quotient)))
    return [full_like(x, 1), neg(truncated)]


def _pow_partials(instr):
    # As jax.lax.pow with a float exponent: y * x^(y-1) (NaN at 0 ** 0, as JAX), and
    # log(x) * x^y with log(0) read as log(1).
    x, y = instr.operands
    x_slope = mul(y, build.binary(Op.POW, x, build.binary(Op.SUB, y, full_like(y, 1))))
    safe_x = select(compare(x, zeros_like(x), "EQ"), full_like(x, 1), x)
    y_slope = mul(build.unary(Op.LOG, safe_x), instr)
    return [x_slope, y_slope]


def _atan2_partials(instr):
    # atan2(x, y) = atan(x / y): slopes y / (x^2 + y^2) and -x / (x^2 + y^2)
    x, y = instr.operands
    norm = build.binary(Op.ADD, mul(x, x), mul(y, y))
    return [div(y, norm), neg(div(x, norm))]


partials[Op.ADD] = _add_partials
partials[Op.SUB] = _sub_partials
partials[Op.MUL] = _mul_partials
partials[Op.DIV] = _div_partials
partials[Op.REM] = _rem_partials
partials[Op.POW] = _pow_partials
partials[Op.ATAN2] = _atan2_partials


def clamp_as_max_min(instr):
    """clamp(lo, x, hi) spelled as the min(max(x, lo), hi) the interpreter defines it
    as, so its derivative follows np.clip's (and jnp.clip's) tie rule."""
    lo, x, hi = instr.operands
    lo, hi = (b if b.shape == x.shape else broadcast_like(b, x, ()) for b in (lo, hi))
    return build.binary(Op.MIN, build.binary(Op.MAX, x, lo), hi)
