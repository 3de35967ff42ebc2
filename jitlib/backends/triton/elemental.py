"""Elemental Triton emission: each op's value at a block of indices, as source lines.

The same two tables as the LLVM backend (jitlib/backends/llvm/emitter.py), producing
Triton expressions over whole tiles instead of scalar LLVM IR:

  scalar_rules[op](w, instr, *values) -> expr     elementwise math on compute values
  index_rules[op](el, instr, index) -> value      leaves and movement as index arithmetic

An index is a tile of int64 positions (a variable of the kernel, e.g. the flat offsets
`i` of a loop kernel), so broadcasts, transposes, slices, pads and gathers are integer
arithmetic on it and never move data. Every load is masked with the kernel's current
mask; where an op clamps (gather, dynamic_slice, pad, concatenate) the index is clamped
too, so even lanes a `tl.where` discards read inside their buffer.

Semantics follow jitlib/hlo/ops.py: int x/0 == x%0 == 0, round half to even, gather
clamps, NaN-propagating max/min (NaN in the first operand wins, NumPy's tie rule),
float pow exponents 2, 1, 0.5, -1 exact. Float math goes through libdevice (CUDA's
correctly documented math library), division and sqrt are the IEEE-rounded `div_rn` and
`sqrt_rn`, so results match NumPy to libm accuracy, not to Triton's fast approximations.
"""
import numpy as np

from jitlib.backends.elemental import INDEX_RULES, ElementalBase
from jitlib.backends.triton import tanh as tanh_f32
from jitlib.backends.triton.source import (
    F16, F64, NARROW, Unsupported, compute_type, literal, memory_type, narrow, spread)
from jitlib.fusion.fuse import is_widening_float_convert
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op

# float results the interpreter rounds to the 16-bit grid after the op
ROUNDED = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT, Op.TANH, Op.SIN, Op.COS,
                     Op.TAN, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.POW, Op.ATAN2})


# -- integer index arithmetic, folded where both sides are known

class IndexMath:
    def __init__(self, w):
        self.w = w

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self.w.let(f"{a} + {b}", "i")

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self.w.let(f"{a} - {b}", "i")

    def mul(self, a, c):
        if isinstance(a, int):
            return a * c
        if c == 1:
            return a
        if c == 0:
            return 0
        return self.w.let(f"{a} * {c}", "i")

    def clamp(self, a, lo, hi):
        if isinstance(a, int):
            return min(max(a, lo), hi)
        return self.w.let(f"tl.minimum(tl.maximum({a}, {lo}), {hi})", "i")

    def digit(self, lin, stride, n, outermost):
        """The position along a dim of `n` elements and `stride` of a linear position."""
        d = lin if stride == 1 else f"{lin} // {stride}"
        if not outermost:
            d = f"({d}) % {n}"
        return d if d == lin else self.w.let(d, "i")

    def divmod(self, a, k):
        if isinstance(a, int):
            return a // k, a % k
        return self.w.let(f"{a} // {k}", "i"), self.w.let(f"{a} % {k}", "i")

    def ge(self, a, b):
        return _cmp(a, ">=", b)

    def lt(self, a, b):
        return _cmp(a, "<", b)

    def eq(self, a, b):
        return _cmp(a, "==", b)

    def in_range(self, a, n):
        return [_cmp(a, ">=", 0), _cmp(a, "<", n)]

    def all(self, conds):
        conds = [c for c in conds if c is not True]
        if False in conds:
            return False
        return " & ".join(f"({c})" for c in conds) if conds else True


def _cmp(a, op, b):
    """`a op b` as a Triton expression, or as a bool where both sides are known."""
    if isinstance(a, int) and isinstance(b, int):
        return {">=": a >= b, "<": a < b, "==": a == b}[op]
    return f"{a} {op} {b}"


# -- scalar rules

scalar_rules = {}


def _is_float(dt):
    return dtypes.is_float(np.dtype(dt))


def _lit(instr, value, dt=None):
    return literal(value, instr.dtype if dt is None else dt)


def fdiv(a, b, dt):
    """IEEE-rounded division: f32's `/` is an approximation in Triton, f64's is exact."""
    return f"{a} / {b}" if np.dtype(dt) == F64 else f"tl.div_rn({a}, {b})"


def fsqrt(x, dt):
    return f"tl.sqrt({x})" if np.dtype(dt) == F64 else f"tl.sqrt_rn({x})"


def _neg(w, instr, x):
    # Triton's unary minus is `0 - x`, which makes -(+0.0) +0.0; times -1 flips the sign
    # of zeros too (LLVM turns it into an fneg)
    return f"{x} * -1.0" if _is_float(instr.dtype) else f"-{x}"


def _abs(w, instr, x):
    if instr.dtype == dtypes.BOOL or dtypes.is_unsigned(instr.dtype):
        return x
    return f"tl.abs({x})"


def _sign(w, instr, x):
    one, zero, minus = _lit(instr, 1), _lit(instr, 0), _lit(instr, -1)
    if instr.dtype == dtypes.BOOL:
        return x
    if dtypes.is_unsigned(instr.dtype):
        return f"tl.where({x} > 0, {one}, {zero})"
    rest = zero
    if _is_float(instr.dtype):   # NaN stays; NumPy gives +0 for -0.0, ml_dtypes' bf16 -0
        rest = x if dtypes.name(instr.dtype) == "bf16" else f"tl.where({x} != {x}, {x}, {zero})"
    return f"tl.where({x} > 0, {one}, tl.where({x} < 0, {minus}, {rest}))"


def _math(name):
    def rule(w, instr, *xs):
        return f"libdevice.{name}({', '.join(xs)})"
    return rule


def _tanh(w, instr, x):
    if dtypes.name(instr.dtype) == "f64":
        return f"libdevice.tanh({x})"
    # f32 and the 16-bit types (computed in f32): libdevice's two paths without its branch
    w.helpers.add(tanh_f32.SOURCE)
    return f"{tanh_f32.NAME}({x})"


def _sqrt(w, instr, x):
    return fsqrt(x, instr.dtype)


def _rsqrt(w, instr, x):
    # the interpreter's 1/sqrt(x), each step rounded to the 16-bit grid
    return fdiv(_lit(instr, 1), narrow(fsqrt(x, instr.dtype), instr.dtype), instr.dtype)


def _logistic(w, instr, x):
    # the interpreter's formula: exp(-|x|) never overflows
    dt = instr.dtype
    e = w.let(narrow(f"libdevice.exp(-tl.abs({x}))", dt))
    denom = w.let(narrow(f"{_lit(instr, 1)} + {e}", dt))
    pos = narrow(fdiv(_lit(instr, 1), denom, dt), dt)
    neg = narrow(fdiv(e, denom, dt), dt)
    return f"tl.where({x} >= 0, {pos}, {neg})"


def _floor(w, instr, x):
    return f"tl.floor({x})"


def _ceil(w, instr, x):
    return f"tl.ceil({x})"


def _round(w, instr, x):
    return f"libdevice.rint({x})"   # half to even


def _not(w, instr, x):
    if instr.dtype == dtypes.BOOL:
        return f"{x} == 0"
    return f"{x} ^ {_lit(instr, -1)}"   # all ones (Triton's ~ overflows unsigned constants)


def _is_finite(w, instr, x):
    return f"tl.abs({x}) < {literal(np.inf, instr.operands[0].dtype)}"


def convert(w, x, src, dst):
    """A compute value of dtype `src` as one of dtype `dst` (NumPy's astype)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return x
    if dst == dtypes.BOOL:
        return f"{x} != 0"    # NaN is True
    if src == dtypes.BOOL:
        return narrow(f"{x}.to({compute_type(dst)})", dst)
    if dtypes.is_integer(dst) and _is_float(src):
        return _float_to_int(w, x, src, dst)
    if dst in NARROW:
        # ints and f64 go through f32 first: a second rounding, off by one 16-bit ulp in
        # rare ties (the LLVM backend rounds once)
        return narrow(f"{x}.to(tl.float32)", dst)
    return f"{x}.to({compute_type(dst)})"


def _cvtt(w, v, src, n):
    """x86's cvtt to an n-bit integer, the IR's meaning (interpreter.float_to_int): toward
    zero; NaN and out-of-range values give the minimum (the GPU's own cast saturates)."""
    limit = 2.0 ** (n - 1)
    inside = w.let(f"({v} >= {literal(-limit, src)}) & ({v} < {literal(limit, src)})")
    i = w.let(f"tl.where({inside}, {v}, {literal(0, src)}).to(tl.int{n})")
    return w.let(f"tl.where({inside}, {i}, {literal(-(1 << (n - 1)), np.dtype(f'i{n // 8}'))})")


def _float_to_int(w, x, src, dst):
    """Float -> integer for every value, NaN and out-of-range included, as the
    interpreter defines it (NumPy's casts on x86-64; ml_dtypes' for bfloat16)."""
    from jitlib.hlo.interpreter import int_cast_bounds
    x = w.let(x)
    if dtypes.is_bfloat16(src):
        lo, hi = int_cast_bounds(dst)
        t = w.let(f"libdevice.trunc({x})")
        fits = f"({t} >= {literal(lo, src)}) & ({t} < {literal(hi, src)})"
        return w.let(f"tl.where({fits}, {t}, {literal(0, src)}).to({compute_type(dst)})")
    if dst == np.uint64:
        top = literal(2.0 ** 63, src)
        high = w.let(f"{x} >= {top}")
        i = _cvtt(w, w.let(f"tl.where({high}, {x} - {top}, {x})"), src, 64)
        flipped = w.let(f"{i} ^ {literal(-(1 << 63), np.int64)}")
        return w.let(f"tl.where({high}, {flipped}, {i}).to(tl.uint64, bitcast=True)")
    wide = 64 if np.dtype(dst).itemsize == 8 or dst == np.uint32 else 32
    i = _cvtt(w, x, src, wide)
    return i if np.dtype(dst) == np.dtype(f"i{wide // 8}") else w.let(
        f"{i}.to({compute_type(dst)})")


def _convert(w, instr, x):
    return convert(w, x, instr.operands[0].dtype, instr.dtype)


def _arith(symbol, bool_symbol=None):
    def rule(w, instr, x, y):
        if instr.dtype == dtypes.BOOL:
            return f"{x} {bool_symbol or symbol} {y}"
        return f"{x} {symbol} {y}"
    return rule


def _safe_divisor(w, instr, y):
    """A divisor that is y, or 1 where y is 0 (or -1 for signed types)."""
    special = f"({y} == 0)"
    if dtypes.is_signed(instr.dtype):
        special = f"(({y} == 0) | ({y} == -1))"
    return w.let(f"tl.where({special}, {_lit(instr, 1)}, {y})")


def _div(w, instr, x, y):
    if _is_float(instr.dtype):
        return fdiv(x, y, instr.dtype)
    # C division: x/0 == 0, x/-1 == -x (wrapping), answered without dividing
    q = f"{x} // {_safe_divisor(w, instr, y)}"
    if dtypes.is_signed(instr.dtype):
        q = f"tl.where({y} == -1, -{x}, {q})"
    return f"tl.where({y} == 0, {_lit(instr, 0)}, {q})"


def _rem(w, instr, x, y):
    if _is_float(instr.dtype):
        # not Triton's float `%`: on NVIDIA it lowers to x - trunc(x/y)*y, which is
        # inexact for large x/y and gives fmod(inf, inf) = inf instead of NaN
        return f"libdevice.fmod({x}, {y})"
    return f"{x} % {_safe_divisor(w, instr, y)}"   # x%0 == x%-1 == 0


def _pow(w, instr, x, y):
    dt = instr.dtype
    if _is_float(dt):
        # exponents 2, 1, 0.5, -1 exactly as NumPy's fast paths compute them
        out = f"libdevice.pow({x}, {y})"
        for e, v in ((2, f"{x} * {x}"), (1, x), (0.5, fsqrt(x, dt)),
                     (-1, fdiv(_lit(instr, 1), x, dt))):
            out = f"tl.where({y} == {e!r}, {v}, {out})"
        return out
    # square-and-multiply over every exponent bit, wrapping as NumPy's integer power
    n = np.dtype(dt).itemsize * 8 - (1 if dtypes.is_signed(dt) else 0)
    r, b, e = w.fresh("p"), w.fresh("p"), w.fresh("p")
    w.line(f"{r} = {_lit(instr, 1)}")
    w.line(f"{b} = {x}")
    w.line(f"{e} = {y}")
    w.line(f"for _ in tl.static_range({n}):")
    w.indent += 1
    w.line(f"{r} = tl.where(({e} & 1) != 0, {r} * {b}, {r})")
    w.line(f"{b} = {b} * {b}")
    w.line(f"{e} = {e} >> 1")
    w.indent -= 1
    if not dtypes.is_signed(dt):
        return r
    # x ** -n: the integer part of 1 / x ** n
    one, zero, minus = _lit(instr, 1), _lit(instr, 0), _lit(instr, -1)
    recip = (f"tl.where({x} == 1, {one}, tl.where({x} == -1, "
             f"tl.where(({y} & 1) != 0, {minus}, {one}), {zero}))")
    return f"tl.where({y} < 0, {recip}, {r})"


def minmax(dt, x, y, is_max, x_never_nan=False):
    """np.maximum / np.minimum: NaN in x or y wins (x's first); on ties NumPy returns y,
    except its float16 loop, which returns x. `x_never_nan` drops x's NaN test."""
    dt = np.dtype(dt)
    if dt == dtypes.BOOL:
        return f"{x} {'|' if is_max else '&'} {y}"
    if _is_float(dt):
        cmp = (">=" if is_max else "<=") if dt == F16 else (">" if is_max else "<")
        picked = f"tl.where({x} {cmp} {y}, {x}, {y})"   # y when y is NaN
        if x_never_nan:
            return picked
        return f"tl.where({x} != {x}, {x}, {picked})"
    return f"tl.where({x} {'>' if is_max else '<'} {y}, {x}, {y})"


def _never_nan(instr):
    """Whether `instr` is a constant (seen through broadcasts and reshapes) with no NaN."""
    while instr.op in (Op.BROADCAST_IN_DIM, Op.RESHAPE):
        instr = instr.operands[0]
    return instr.op is Op.CONSTANT and not np.isnan(instr.attrs["value"].array).any()


def _max(w, instr, x, y):
    return minmax(instr.dtype, x, y, True, _never_nan(instr.operands[0]))


def _min(w, instr, x, y):
    return minmax(instr.dtype, x, y, False, _never_nan(instr.operands[0]))


_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _compare(w, instr, x, y):
    return f"{x} {_COMPARE[instr.attrs['direction']]} {y}"


def _select(w, instr, p, a, b):
    return f"tl.where({p}, {a}, {b})"


def _clamp(w, instr, lo, x, hi):
    return minmax(instr.dtype, w.let(minmax(instr.dtype, x, lo, True,
                                            _never_nan(instr.operands[1]))), hi, False)


scalar_rules.update({
    Op.NEG: _neg, Op.ABS: _abs, Op.SIGN: _sign,
    Op.EXP: _math("exp"), Op.EXPM1: _math("expm1"), Op.LOG: _math("log"),
    Op.LOG1P: _math("log1p"), Op.SQRT: _sqrt, Op.RSQRT: _rsqrt, Op.TANH: _tanh,
    Op.LOGISTIC: _logistic, Op.SIN: _math("sin"), Op.COS: _math("cos"),
    Op.TAN: _math("tan"), Op.FLOOR: _floor, Op.CEIL: _ceil, Op.ROUND: _round,
    Op.NOT: _not, Op.IS_FINITE: _is_finite, Op.CONVERT: _convert,
    Op.ADD: _arith("+", "|"), Op.SUB: _arith("-"), Op.MUL: _arith("*", "&"),
    Op.DIV: _div, Op.REM: _rem, Op.POW: _pow, Op.MAX: _max, Op.MIN: _min,
    Op.ATAN2: _math("atan2"), Op.AND: _arith("&"), Op.OR: _arith("|"),
    Op.XOR: _arith("^"), Op.COMPARE: _compare, Op.SELECT: _select, Op.CLAMP: _clamp,
})


def _complex_part(*args):
    raise Unsupported("complex values are not compiled by this backend")


scalar_rules.update({op: _complex_part for op in O.COMPLEX_PARTS | O.COMPLEX_ONLY})
assert set(scalar_rules) == O.ELEMENTWISE, sorted(O.ELEMENTWISE ^ set(scalar_rules))

# the libdevice functions generated code calls (the interpreter path swaps in NumPy's)
LIBDEVICE = ("exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "tan", "atan2", "pow",
             "rint", "fmod", "trunc")


# -- index rules: leaves and movement (shared with the LLVM backend but for iota:
# INDEX_RULES, jitlib/backends/elemental.py)

def _iota(el, instr, index):
    d = el.dims(index)[instr.attrs["dimension"]] if instr.shape else 0
    if isinstance(d, int):
        return literal(d, instr.dtype)
    return el.w.let(convert(el.w, d, np.int64, instr.dtype))


index_rules = {**INDEX_RULES, Op.IOTA: _iota}


# -- the elemental generator

class Elemental(ElementalBase):
    """Emits values of body instructions at index tiles, loading `inputs` from memory
    (see ElementalBase; `fixed` values are those of the tile being written: a
    reduction's row result, a dot's product). `mask` guards every load. With `raw` set,
    loads keep the memory type (a dot's operand tiles) and only movement is allowed.
    """

    def __init__(self, w, inputs):
        super().__init__(IndexMath(w), inputs)
        self.w = w
        self.mask = None
        self.raw = False

    def _key(self, instr, index):
        # a load takes the shape of its mask: a value loaded under a reduction's row mask
        # ([ROWS, R]) is not the per-row one ([ROWS, 1]) at the same index
        return instr, index.key, self.raw, self.mask

    def load(self, ptr, instr, index):
        lin = self.linear(index)
        # one address for the whole tile, always in bounds: a known element, or one picked
        # by data (x[k] with a traced scalar k), whose index gather/dynamic_slice clamp
        uniform = (instr.size == 1 or self.w.is_uniform(lin)) and not (
            self.raw and self.mask and not isinstance(lin, int))
        if uniform:
            v = f"tl.load({ptr} + {lin})" if lin else f"tl.load({ptr})"
        else:
            mask = f", mask={self.mask}, other=0" if self.mask else ""
            if self.raw and self.mask:
                # a dot operand whose index varies only with the batch (a [B, 1, 1]
                # operand) is one address per program, loaded as a full tile
                lin = spread(lin, self.mask)
            v = f"tl.load({ptr} + {lin}{mask})"
        dt = np.dtype(instr.dtype)
        if self.raw:
            return self.w.let(v, "ld", uniform=uniform)
        if dt == dtypes.BOOL:
            v = f"{v} != 0"
        elif dt in NARROW:
            v = f"{v}.to(tl.float32)"
        return self.w.let(v, "ld", uniform=uniform)

    def _compute(self, instr, index):
        if instr in self.inputs:
            return self.load(self.inputs[instr], instr, index)
        if self.raw and is_widening_float_convert(instr):
            # a dot operand tile stays in its narrow memory type; the dot widens it
            return self.value(instr.operands[0], index)
        rule = scalar_rules.get(instr.op)
        if rule is not None:
            if self.raw:
                raise Unsupported(f"a dot operand computed by {instr.op}")
            expr = rule(self.w, instr, *self.operand_values(instr, index))
            if instr.op in ROUNDED:
                expr = narrow(expr, instr.dtype)
            return self.w.let(expr, comment=_describe(instr))
        return self.index_rule(instr, index)

    index_rules = index_rules
    unsupported = Unsupported
    literal = staticmethod(literal)

    def _select(self, cond, a, b, dt):
        return self.w.let(f"tl.where({cond}, {a}, {b})")

    def as_index(self, value, dt, hi):
        """An integer scalar value as an int64 clamped into [0, hi]."""
        dt = np.dtype(dt)
        if dt == np.uint64:   # past int64's range it is out of range anyway: clamp first
            return self.w.let(f"tl.where({value} > {hi}, {hi}, {value}.to(tl.int64))", "i")
        if dt == dtypes.BOOL:
            value = f"{value}.to(tl.int64)"
        elif dt != np.int64:
            value = self.w.let(f"{value}.to(tl.int64)", "i")
        return self.im.clamp(value, 0, hi)


def _describe(instr):
    loc = instr.loc
    where = f" {loc.file.rsplit('/', 1)[-1]}:{loc.line}" if loc is not None else ""
    return f"{instr.op}{where}"


def store_value(value, dt):
    """The expression stored for a compute value of dtype `dt`."""
    dt = np.dtype(dt)
    return f"{value}.to({memory_type(dt)})" if dt in NARROW else value
