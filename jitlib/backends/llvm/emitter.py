"""Elemental LLVM IR emission: each op's value at one index, as LLVM IR text.

The renderer is two tables (tinygrad's renderers-as-tables):

  scalar_rules[op](fn, instr, *values) -> value    elementwise math on compute values
  index_rules[op](el, instr, index) -> value       leaves and movement: which operand
                                                   element to read for an output index

`Elemental.value(instr, index)` walks the body from an output back to its inputs, asking
each operand for the element its consumer needs (XLA's elemental IR emitter). Values are
memoised per (instr, index) inside a scope; kernels open a scope per loop body, since a
value computed inside a loop does not dominate the code after it. The walk, `Index` and
the rules of the movement ops are shared with the Triton backend
(jitlib/backends/elemental.py).

Types. Values live in registers in a compute type: bool is i1, integers are iN, f32 and
the 16-bit floats are `float`, f64 is `double`. In memory bool is i8, f16 is `half`, bf16
is i16 bits. f16 and bf16 arithmetic runs in float and every op's result is rounded back
to the 16-bit grid (`narrow`), because the interpreter (NumPy's half loops, ml_dtypes)
rounds after each op: +, -, *, / and sqrt then agree bit for bit (float has at least
2p+2 bits, so rounding twice is harmless). Conversions round once, as NumPy and ml_dtypes
do (f64 -> f16/bf16 and wide integers -> bf16 go through round-to-odd). Float -> integer
of NaN or out-of-range values is platform-defined, as in C and NumPy: not matched.

Straight-line code only: a select reads both branches, so every load is made in bounds
(indices clamped) and integer division never sees a zero divisor.
"""
import struct

import numpy as np

from jitlib.backends.elemental import INDEX_RULES, ElementalBase
from jitlib.hlo import dtypes
from jitlib.hlo.interpreter import int_cast_bounds
from jitlib.hlo import ops as O
from jitlib.hlo.ops import Op


class Unsupported(Exception):
    """This kernel needs an op, dtype or form the LLVM backend does not emit yet."""


# -- types and literals

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
NARROW = dtypes.NARROW_FLOATS


def bits(dt):
    return 1 if dt == dtypes.BOOL else np.dtype(dt).itemsize * 8


def compute_type(dt):
    """The register type of a `dt` value."""
    dt = np.dtype(dt)
    if dt == F64:
        return "double"
    if dtypes.is_float(dt):
        return "float"
    return f"i{bits(dt)}"


def memory_type(dt):
    """The in-memory element type of `dt`."""
    dt = np.dtype(dt)
    if dtypes.is_bfloat16(dt):
        return "i16"
    return {dtypes.BOOL: "i8", F16: "half"}.get(dt) or compute_type(dt)


def _suffix(ty):
    return {"float": "f32", "double": "f64"}.get(ty, ty)


def _double_hex(value):
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0]


def literal(value, dt):
    """`value` as an LLVM constant of `dt`'s compute type."""
    dt = np.dtype(dt)
    if dt == dtypes.BOOL:
        return "true" if bool(value) else "false"
    if dtypes.is_integer(dt):
        n, v = bits(dt), int(value)
        v &= (1 << n) - 1
        return str(v - (1 << n) if v >> (n - 1) else v)   # LLVM reads iN literals signed
    # float constants print as the double holding the exact value
    return _double_hex(np.asarray(value, dtype=dt).astype(np.float64))


# -- the function being written

class FunctionText:
    """One LLVM function as text: fresh names, blocks, declarations, loop hints."""

    def __init__(self, name, params):
        self.name = name
        self.params = params          # [(llvm type, "%name", attributes)]
        self.lines = []
        self.allocas = []
        self.decls = {}               # module-level text, deduplicated
        self.metadata = []
        self.block = "entry"
        self._count = 0
        self.math_calls = 0           # mathlib functions called (each inlined: large)
        self.loops = 0                # counted loops emitted (kernels._counted_loop)
        self.used = []                # internal symbols kept for the vectorizer (wide_math)

    def tmp(self, hint="v"):
        self._count += 1
        return f"%{hint}{self._count}"

    def label(self, hint):
        self._count += 1
        return f"{hint}{self._count}"

    def emit(self, text):
        self.lines.append("  " + text)

    def op(self, text, hint="v"):
        """Emit `%new = text`; return %new."""
        name = self.tmp(hint)
        self.emit(f"{name} = {text}")
        return name

    def start_block(self, label):
        self.lines.append(f"{label}:")
        self.block = label

    def alloca(self, ty):
        # in the entry block, where SROA turns it into registers
        name = self.tmp("acc")
        self.allocas.append(f"  {name} = alloca {ty}")
        return name

    def declare(self, key, text):
        self.decls.setdefault(key, text)

    def call(self, ret, callee, args, hint="c"):
        """Call `callee` (declared by the caller) on [(type, value)]."""
        arg_text = ", ".join(f"{t} {v}" for t, v in args)
        return self.op(f"call {ret} @{callee}({arg_text})", hint)

    def intrinsic(self, base, ty, *args, extra=()):
        """`llvm.<base>.<ty>` on values of type `ty` (plus `extra` [(type, value)])."""
        name = f"llvm.{base}.{_suffix(ty)}"
        arg_types = ", ".join([ty] * len(args) + [t for t, _ in extra])
        self.declare(name, f"declare {ty} @{name}({arg_types})")
        return self.call(ty, name, [(ty, a) for a in args] + list(extra))

    def scalar_hint(self):
        """A fresh `!llvm.loop` node asking LLVM to leave one loop as it is: neither
        vectorized nor unrolled (a loop of a few iterations, where either would only
        cost compile time)."""
        return self._loop_hint('!{!"llvm.loop.vectorize.width", i32 1}',
                               '!{!"llvm.loop.interleave.count", i32 1}',
                               '!{!"llvm.loop.unroll.disable"}')

    def rolled_hint(self):
        """A fresh `!llvm.loop` node asking LLVM not to unroll one loop (an outer loop:
        its copies repeat the whole inner loop)."""
        return self._loop_hint('!{!"llvm.loop.unroll.disable"}')

    def math_loop_hint(self):
        """A fresh `!llvm.loop` node for a loop that calls mathlib functions: never
        unrolled, and 4 interleaved vectors (the count LLVM's cost model chose for these
        loops on the AVX-512 test machine, so sums keep their order and bits; stated,
        because `unroll.disable` alone makes it pick 1). Unrolling copied the inlined
        polynomials: a third more LLVM work, and no faster."""
        return self._loop_hint('!{!"llvm.loop.interleave.count", i32 4}',
                               '!{!"llvm.loop.unroll.disable"}')

    def _loop_hint(self, *properties):
        refs = []
        for text in properties:   # each property node once per function
            line = next((m for m in self.metadata if m.endswith(f" = {text}")), None)
            if line is None:
                line = f"!{len(self.metadata)} = {text}"
                self.metadata.append(line)
            refs.append(line.split(" ", 1)[0])
        n = len(self.metadata)
        self.metadata.append(f"!{n} = distinct !{{!{n}, {', '.join(refs)}}}")
        return f"!{n}"

    def render(self):
        params = ", ".join(" ".join(filter(None, (t, attrs, n))) for t, n, attrs in self.params)
        out = [f'define void @"{self.name}"({params}) nounwind {{', "entry:"]
        out += self.allocas + self.lines + ["}", ""]
        out += list(self.decls.values()) + self.metadata
        if self.used:
            refs = ", ".join(f"ptr @{name}" for name in self.used)
            out.append(f"@llvm.compiler.used = appending global [{len(self.used)} x ptr] "
                       f'[{refs}], section "llvm.metadata"')
        return "\n".join(out) + "\n"


# -- index arithmetic on i64, folded when both sides are known

def iadd(fn, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if b == 0:
        return a
    if a == 0:
        return b
    return fn.op(f"add nsw i64 {a}, {b}", "i")


def isub(fn, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if b == 0:
        return a
    return fn.op(f"sub nsw i64 {a}, {b}", "i")


def imul(fn, a, c):
    if isinstance(a, int):
        return a * c
    if c == 1:
        return a
    if c == 0:
        return 0
    return fn.op(f"mul nsw i64 {a}, {c}", "i")


def iclamp(fn, a, lo, hi):
    """min(max(a, lo), hi) on signed i64."""
    if isinstance(a, int):
        return min(max(a, lo), hi)
    a = fn.intrinsic("smax", "i64", a, str(lo))
    return fn.intrinsic("smin", "i64", a, str(hi))


class IndexMath:
    """Index arithmetic for the shared movement rules (jitlib/backends/elemental.py)."""

    def __init__(self, fn):
        self.fn = fn

    def add(self, a, b):
        return iadd(self.fn, a, b)

    def sub(self, a, b):
        return isub(self.fn, a, b)

    def mul(self, a, c):
        return imul(self.fn, a, c)

    def clamp(self, a, lo, hi):
        return iclamp(self.fn, a, lo, hi)

    def digit(self, lin, stride, n, outermost):
        """The position along a dim of `n` elements and `stride` of a linear position
        (non-negative, so unsigned division)."""
        d = lin if stride == 1 else self.fn.op(f"udiv i64 {lin}, {stride}", "i")
        return d if outermost else self.fn.op(f"urem i64 {d}, {n}", "i")

    def divmod(self, a, k):
        if isinstance(a, int):
            return a // k, a % k
        return self.fn.op(f"sdiv i64 {a}, {k}", "i"), self.fn.op(f"srem i64 {a}, {k}", "i")

    def ge(self, a, b):
        return self._cmp("sge", a, b)

    def lt(self, a, b):
        return self._cmp("slt", a, b)

    def eq(self, a, b):
        return self._cmp("eq", a, b)

    def in_range(self, a, n):
        return [self._cmp("ult", a, n)]   # 0 <= a < n, as one unsigned compare

    def all(self, conds):
        conds = [c for c in conds if c is not True]
        if False in conds:
            return False
        out = True
        for c in conds:
            out = c if out is True else self.fn.op(f"and i1 {out}, {c}", "c")
        return out

    def _cmp(self, pred, a, b):
        """An i1 comparison of two positions, or a bool where both are known."""
        if isinstance(a, int) and isinstance(b, int):
            return {"sge": a >= b, "slt": a < b, "eq": a == b, "ult": 0 <= a < b}[pred]
        return self.fn.op(f"icmp {pred} i64 {a}, {b}", "c")


# -- conversions between compute values

def narrow(fn, v, dt):
    """Round a float value to the f16/bf16 grid (round to nearest even), as a float."""
    if dt == F16:
        h = fn.op(f"fptrunc float {v} to half", "h")
        return fn.op(f"fpext half {h} to float", "n")
    if dtypes.is_bfloat16(dt):
        b = fn.op(f"bitcast float {v} to i32", "b")
        lsb = fn.op(f"and i32 {fn.op(f'lshr i32 {b}, 16', 'b')}, 1", "b")
        r = fn.op(f"add i32 {b}, {fn.op(f'add i32 {lsb}, 32767', 'b')}", "b")
        r = fn.op(f"and i32 {r}, -65536", "b")
        # ml_dtypes turns every NaN into the quiet NaN of its sign
        q = fn.op(f"or i32 {fn.op(f'and i32 {b}, -2147483648', 'b')}, 2143289344", "b")
        nan = fn.op(f"fcmp uno float {v}, 0.0", "c")
        return fn.op(f"bitcast i32 {fn.op(f'select i1 {nan}, i32 {q}, i32 {r}', 'b')} to float",
                     "n")
    return v


def _double_to_float_odd(fn, d):
    """f64 -> f32 rounding to odd: a later rounding to f16/bf16 is then a single rounding."""
    r = fn.op(f"fptrunc double {d} to float", "r")
    back = fn.op(f"fpext float {r} to double", "r")
    inexact = fn.op(f"fcmp one double {back}, {d}", "c")
    rb = fn.op(f"bitcast float {r} to i32", "r")
    even = fn.op(f"icmp eq i32 {fn.op(f'and i32 {rb}, 1', 'r')}, 0", "c")
    bigger = fn.op(f"fcmp ogt double {fn.intrinsic('fabs', 'double', back)}, "
                   f"{fn.intrinsic('fabs', 'double', d)}", "c")
    adj = fn.op(f"select i1 {bigger}, i32 {fn.op(f'sub i32 {rb}, 1', 'r')}, "
                f"i32 {fn.op(f'add i32 {rb}, 1', 'r')}", "r")
    fix = fn.op(f"and i1 {inexact}, {even}", "c")
    out = fn.op(f"select i1 {fix}, i32 {adj}, i32 {rb}", "r")
    return fn.op(f"bitcast i32 {out} to float", "r")


def _int_to_narrow(fn, v, src, dst):
    """A 32/64-bit integer to f16/bf16 with one rounding, as NumPy and ml_dtypes do."""
    n = bits(src)
    signed = dtypes.is_signed(src)
    if n < 64:
        v = fn.op(f"{'sext' if signed else 'zext'} i{n} {v} to i64", "x")
    mag, neg = v, None
    if signed:
        neg = fn.op(f"icmp slt i64 {v}, 0", "c")
        mag = fn.op(f"select i1 {neg}, i64 {fn.op(f'sub i64 0, {v}', 'x')}, i64 {v}", "x")
    # fold the bits below float's 24 into one sticky bit: uitofp is then exact and the
    # final round to nearest even sees the right halfway information
    lz = fn.intrinsic("ctlz", "i64", mag, extra=[("i1", "false")])
    k = fn.intrinsic("smax", "i64", fn.op(f"sub i64 41, {lz}", "x"), "1")   # 64 - lz - 23
    mask = fn.op(f"sub i64 {fn.op(f'shl i64 1, {k}', 'x')}, 1", "x")
    sticky = fn.op(f"icmp ne i64 {fn.op(f'and i64 {mag}, {mask}', 'x')}, 0", "c")
    sticky = fn.op(f"zext i1 {sticky} to i64", "x")
    sticky = fn.op(f"shl i64 {sticky}, {fn.op(f'sub i64 {k}, 1', 'x')}", "x")
    kept = fn.op(f"and i64 {mag}, {fn.op(f'xor i64 {mask}, -1', 'x')}", "x")
    f = fn.op(f"uitofp i64 {fn.op(f'or i64 {kept}, {sticky}', 'x')} to float", "f")
    if signed:
        f = fn.op(f"select i1 {neg}, float {fn.op(f'fneg float {f}', 'f')}, float {f}", "f")
    return narrow(fn, f, dst)


def convert(fn, v, src, dst):
    """A compute value of dtype `src` as one of dtype `dst` (NumPy's astype, x86)."""
    src, dst = np.dtype(src), np.dtype(dst)
    st, dty = compute_type(src), compute_type(dst)
    if src == dst:
        return v
    if dst == dtypes.BOOL:
        if dtypes.is_float(src):
            return fn.op(f"fcmp une {st} {v}, 0.0", "c")   # NaN is True
        return fn.op(f"icmp ne {st} {v}, 0", "c")
    if src == dtypes.BOOL:
        return fn.op(f"{'uitofp' if dtypes.is_float(dst) else 'zext'} i1 {v} to {dty}", "x")
    if dtypes.is_integer(src) and dtypes.is_integer(dst):
        if bits(dst) < bits(src):
            return fn.op(f"trunc {st} {v} to {dty}", "x")
        if bits(dst) > bits(src):
            return fn.op(f"{'sext' if dtypes.is_signed(src) else 'zext'} {st} {v} to {dty}", "x")
        return v
    if dtypes.is_integer(src):
        if dst in NARROW and bits(src) >= 32:
            return _int_to_narrow(fn, v, src, dst)
        f = fn.op(f"{'sitofp' if dtypes.is_signed(src) else 'uitofp'} {st} {v} to {dty}", "x")
        return narrow(fn, f, dst)
    if dtypes.is_integer(dst):
        return _float_to_int(fn, v, src, dst)
    # float to float
    if dst == F64:
        return fn.op(f"fpext float {v} to double", "x")
    if src == F64:
        if dst == F32:
            return fn.op(f"fptrunc double {v} to float", "x")
        return narrow(fn, _double_to_float_odd(fn, v), dst)
    return narrow(fn, v, dst)   # between float, f16, bf16: all exact in float


def _cvtt(fn, v, st, n):
    """x86's cvtt to an n-bit integer: toward zero, NaN and out-of-range values give the
    minimum (fptosi alone would make them poison)."""
    limit = 2.0 ** (n - 1)
    inside = fn.op(f"fcmp oge {st} {v}, {_double_hex(-limit)}", "c")
    below = fn.op(f"fcmp olt {st} {v}, {_double_hex(limit)}", "c")
    inside = fn.op(f"and i1 {inside}, {below}", "c")
    safe = fn.op(f"select i1 {inside}, {st} {v}, {st} 0.0", "x")
    i = fn.op(f"fptosi {st} {safe} to i{n}", "x")
    return fn.op(f"select i1 {inside}, i{n} {i}, i{n} {-(1 << (n - 1))}", "x")


def _float_to_int(fn, v, src, dst):
    """Float -> integer with the interpreter's meaning for every value (float_to_int)."""
    st, dty = compute_type(src), compute_type(dst)
    if dtypes.is_bfloat16(src):
        # ml_dtypes: toward zero where the result fits, else 0
        lo, hi = int_cast_bounds(dst)
        t = fn.intrinsic("trunc", st, v)
        fits = fn.op(f"fcmp oge {st} {t}, {_double_hex(lo)}", "c")
        fits = fn.op(f"and i1 {fits}, {fn.op(f'fcmp olt {st} {t}, {_double_hex(hi)}', 'c')}",
                     "c")
        t = fn.op(f"select i1 {fits}, {st} {t}, {st} 0.0", "x")
        return fn.op(f"{'fptosi' if dtypes.is_signed(dst) else 'fptoui'} {st} {t} to {dty}",
                     "x")
    if dst == np.uint64:
        top = _double_hex(2.0 ** 63)
        high = fn.op(f"fcmp oge {st} {v}, {top}", "c")
        shifted = fn.op(f"select i1 {high}, {st} {fn.op(f'fsub {st} {v}, {top}', 'x')}, "
                        f"{st} {v}", "x")
        i = _cvtt(fn, shifted, st, 64)
        flipped = fn.op(f"xor i64 {i}, {-(1 << 63)}", "x")
        return fn.op(f"select i1 {high}, i64 {flipped}, i64 {i}", "x")
    wide = 64 if bits(dst) == 64 or dst == np.uint32 else 32
    i = _cvtt(fn, v, st, wide)
    return i if bits(dst) == wide else fn.op(f"trunc i{wide} {i} to {dty}", "x")


def to_compute(fn, v, dt):
    """A loaded memory value as a compute value."""
    if dt == dtypes.BOOL:
        return fn.op(f"icmp ne i8 {v}, 0", "c")
    if dt == F16:
        return fn.op(f"fpext half {v} to float", "x")
    if dtypes.is_bfloat16(dt):
        w = fn.op(f"zext i16 {v} to i32", "x")
        return fn.op(f"bitcast i32 {fn.op(f'shl i32 {w}, 16', 'x')} to float", "x")
    return v


def to_memory(fn, v, dt):
    """A compute value (already on `dt`'s grid) as the value to store."""
    if dt == dtypes.BOOL:
        return fn.op(f"zext i1 {v} to i8", "s")
    if dt == F16:
        return fn.op(f"fptrunc float {v} to half", "s")
    if dtypes.is_bfloat16(dt):
        b = fn.op(f"bitcast float {v} to i32", "s")
        return fn.op(f"trunc i32 {fn.op(f'lshr i32 {b}, 16', 's')} to i16", "s")
    return v


def load(fn, ptr, lin, dt):
    mt = memory_type(dt)
    p = fn.op(f"getelementptr inbounds {mt}, ptr {ptr}, i64 {lin}", "p")
    return to_compute(fn, fn.op(f"load {mt}, ptr {p}", "ld"), dt)


def store(fn, v, ptr, lin, dt):
    mt = memory_type(dt)
    p = fn.op(f"getelementptr inbounds {mt}, ptr {ptr}, i64 {lin}", "p")
    fn.emit(f"store {mt} {to_memory(fn, v, dt)}, ptr {p}")


# -- math functions: the one place that picks libm/intrinsics or jitlib's mathlib

# The functions taken from jitlib/backends/llvm/mathlib.py: straight-line IR, inlined and
# vectorized with the loop, where a libm call keeps LLVM from vectorizing it. The trig
# functions' reduction is accurate only up to a bound (docs/cpu_math_accuracy.md):
# wide_math.py gives lanes past it to libm, one test per vector. erf has no IR op yet:
# an ERF op would lower to math_call(fn, "erf", ...) like the others.
MATHLIB = frozenset({"exp", "expm1", "log", "log1p", "tanh", "logistic", "pow", "atan2",
                     "erf", "sin", "cos", "tan", "exp_nonpositive"})
_INTRINSIC = {"exp", "log", "tanh", "pow", "sqrt"}
_LIBM = {"expm1", "log1p", "atan2"}


def math_call(fn, name, ty, *args):
    """`name`(args) on compute type `ty` ("float" or "double"): LLVM intrinsics and libm,
    or for names in MATHLIB the inlined `@jl_<name>_<f32|f64>` of mathlib.py."""
    if name in MATHLIB:
        value = _mathlib_call(fn, name, ty, args)
        from jitlib.backends.llvm import wide_math
        if name in wide_math.FUNCTIONS:
            value = wide_math.call(fn, name, ty, args[0], value)
        return value
    if name in _INTRINSIC:
        return fn.intrinsic(name, ty, *args)
    if name not in _LIBM:
        raise Unsupported(f"no math function {name}")
    callee = name + ("f" if ty == "float" else "")
    fn.declare(callee, f"declare {ty} @{callee}({', '.join([ty] * len(args))})")
    return fn.call(ty, callee, [(ty, a) for a in args])


def _mathlib_call(fn, name, ty, args):
    from jitlib.backends.llvm import mathlib
    dt = F32 if ty == "float" else F64
    text = mathlib.function_ir(name, dt)
    for line in text.splitlines():
        if line.startswith("declare "):   # keyed by name: ours and mathlib's dedupe
            fn.declare(line.split("@", 1)[1].split("(", 1)[0], line)
    symbol = mathlib.symbol(name, dt)
    fn.declare(symbol, text[text.index("define"):])
    fn.math_calls += 1
    return fn.call(ty, symbol, [(ty, a) for a in args])


# -- scalar rules: elementwise ops on compute values

scalar_rules = {}

# float results the interpreter rounds to the 16-bit grid after the op
ROUNDED = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT, Op.TANH, Op.SIN, Op.COS,
                     Op.TAN, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.POW, Op.ATAN2})


def _is_float(instr):
    return dtypes.is_float(instr.operands[0].dtype)


def _neg(fn, instr, x):
    t = compute_type(instr.dtype)
    return fn.op(f"fneg {t} {x}") if _is_float(instr) else fn.op(f"sub {t} 0, {x}")


def _abs(fn, instr, x):
    t = compute_type(instr.dtype)
    if _is_float(instr):
        return fn.intrinsic("fabs", t, x)
    if dtypes.is_unsigned(instr.dtype):
        return x
    neg = fn.op(f"icmp slt {t} {x}, 0", "c")
    return fn.op(f"select i1 {neg}, {t} {fn.op(f'sub {t} 0, {x}')}, {t} {x}")


def _sign(fn, instr, x):
    t, dt = compute_type(instr.dtype), instr.dtype
    if _is_float(instr):
        gt = fn.op(f"fcmp ogt {t} {x}, 0.0", "c")
        lt = fn.op(f"fcmp olt {t} {x}, 0.0", "c")
        rest = x
        if not dtypes.is_bfloat16(dt):   # NumPy gives +0 for -0; ml_dtypes keeps the zero; NaN stays
            nan = fn.op(f"fcmp uno {t} {x}, 0.0", "c")
            rest = fn.op(f"select i1 {nan}, {t} {x}, {t} 0.0")
        neg = fn.op(f"select i1 {lt}, {t} {literal(-1, dt)}, {t} {rest}")
        return fn.op(f"select i1 {gt}, {t} {literal(1, dt)}, {t} {neg}")
    gt = fn.op(f"icmp {'sgt' if dtypes.is_signed(dt) else 'ugt'} {t} {x}, 0", "c")
    if dtypes.is_unsigned(dt):
        return fn.op(f"zext i1 {gt} to {t}")
    lt = fn.op(f"icmp slt {t} {x}, 0", "c")
    neg = fn.op(f"select i1 {lt}, {t} -1, {t} 0")
    return fn.op(f"select i1 {gt}, {t} 1, {t} {neg}")


def _math(name):
    def rule(fn, instr, *xs):
        return math_call(fn, name, compute_type(instr.dtype), *xs)
    return rule


def below_row_max(diff):
    """Whether instruction `diff` is `x - max(x)` over x's own rows (reduce_max of x,
    broadcast back along the reduced dims, size-1 dims aside): each element is then
    <= 0 or NaN (a NaN in the row, inf - inf, -inf - -inf), whatever the dtype, since
    x <= max rounds to a difference <= 0. Softmax and logsumexp take exp of it."""
    if diff.op is not Op.SUB:
        return False
    x, b = diff.operands
    if b.op is not Op.BROADCAST_IN_DIM or b.shape != x.shape:
        return False
    m = b.operands[0]
    if m.op is Op.RESHAPE:      # keepdims: only size-1 dims added or dropped
        if _squeeze(m.shape) != _squeeze(m.operands[0].shape):
            return False
        m = m.operands[0]
    if m.op is not Op.REDUCE_MAX or m.operands[0] is not x:
        return False
    # the broadcast must send row k's maximum to row k: its source dims of size > 1,
    # in order, land on x's kept dims of size > 1, in order (reshape keeps that order)
    kept = [d for d in range(len(x.shape)) if d not in m.attrs["dims"] and x.shape[d] != 1]
    targets = [t for t, n in zip(b.attrs["dims"], b.operands[0].shape) if n != 1]
    return targets == kept


def _squeeze(shape):
    return tuple(n for n in shape if n != 1)


def _exp(fn, instr, x):
    # x - max(x): mathlib's form without the clamp those arguments never reach
    restricted = "exp_nonpositive" in MATHLIB and below_row_max(instr.operands[0])
    return math_call(fn, "exp_nonpositive" if restricted else "exp",
                     compute_type(instr.dtype), x)


def _rsqrt(fn, instr, x):
    t, dt = compute_type(instr.dtype), instr.dtype
    s = narrow(fn, fn.intrinsic("sqrt", t, x), dt)
    return narrow(fn, fn.op(f"fdiv {t} {literal(1, dt)}, {s}"), dt)


def _logistic(fn, instr, x):
    # mathlib's 1-ulp logistic, rounded once to the 16-bit grid; the interpreter's formula
    # (1/(1+e) or e/(1+e), e = exp(-|x|)) rounds three times, so they agree to a few ulps
    t, dt = compute_type(instr.dtype), instr.dtype
    if "logistic" not in MATHLIB:   # the interpreter's formula on whatever exp is in use
        one = literal(1, dt)
        e = narrow(fn, math_call(fn, "exp", t, fn.op(f"fneg {t} {fn.intrinsic('fabs', t, x)}")),
                   dt)
        denom = narrow(fn, fn.op(f"fadd {t} {one}, {e}"), dt)
        pos = narrow(fn, fn.op(f"fdiv {t} {one}, {denom}"), dt)
        neg = narrow(fn, fn.op(f"fdiv {t} {e}, {denom}"), dt)
        ge = fn.op(f"fcmp oge {t} {x}, 0.0", "c")
        return fn.op(f"select i1 {ge}, {t} {pos}, {t} {neg}")
    return narrow(fn, math_call(fn, "logistic", t, x), dt)


def _intrinsic(base):
    def rule(fn, instr, x):
        return fn.intrinsic(base, compute_type(instr.dtype), x)
    return rule


def _not(fn, instr, x):
    t = compute_type(instr.dtype)
    return fn.op(f"xor {t} {x}, {'true' if t == 'i1' else '-1'}")


def _is_finite(fn, instr, x):
    t = compute_type(instr.operands[0].dtype)
    return fn.op(f"fcmp olt {t} {fn.intrinsic('fabs', t, x)}, {_double_hex(np.inf)}", "c")


def _convert(fn, instr, x):
    return convert(fn, x, instr.operands[0].dtype, instr.dtype)


def _arith(float_op, int_op, bool_op=None):
    def rule(fn, instr, x, y):
        t, dt = compute_type(instr.dtype), instr.dtype
        if dtypes.is_float(dt):
            return fn.op(f"{float_op} {t} {x}, {y}")
        return fn.op(f"{bool_op if dt == dtypes.BOOL else int_op} {t} {x}, {y}")
    return rule


def _special_divisor(fn, instr, y):
    """(y == 0 [or y == -1 for signed], a divisor that is y or 1 there)."""
    t, dt = compute_type(instr.dtype), instr.dtype
    special = fn.op(f"icmp eq {t} {y}, 0", "c")
    if dtypes.is_signed(dt):
        special = fn.op(f"or i1 {special}, {fn.op(f'icmp eq {t} {y}, -1', 'c')}", "c")
    return special, fn.op(f"select i1 {special}, {t} 1, {t} {y}")


def _div(fn, instr, x, y):
    t, dt = compute_type(instr.dtype), instr.dtype
    if dtypes.is_float(dt):
        return fn.op(f"fdiv {t} {x}, {y}")
    # C division; x/0 == 0 and x/-1 == -x (wrapping), answered without dividing
    _, safe = _special_divisor(fn, instr, y)
    q = fn.op(f"{'sdiv' if dtypes.is_signed(dt) else 'udiv'} {t} {x}, {safe}")
    if dtypes.is_signed(dt):
        minus = fn.op(f"icmp eq {t} {y}, -1", "c")
        q = fn.op(f"select i1 {minus}, {t} {fn.op(f'sub {t} 0, {x}')}, {t} {q}")
    zero = fn.op(f"icmp eq {t} {y}, 0", "c")
    return fn.op(f"select i1 {zero}, {t} 0, {t} {q}")


def _rem(fn, instr, x, y):
    t, dt = compute_type(instr.dtype), instr.dtype
    if dtypes.is_float(dt):
        return fn.op(f"frem {t} {x}, {y}")   # fmod: exact
    _, safe = _special_divisor(fn, instr, y)   # x % 0 == x % -1 == x % 1 == 0
    return fn.op(f"{'srem' if dtypes.is_signed(dt) else 'urem'} {t} {x}, {safe}")


def _pow(fn, instr, x, y):
    t, dt = compute_type(instr.dtype), instr.dtype
    if dtypes.is_float(dt):
        n = _small_integer_exponent(instr)
        if n is not None:
            return _float_int_power(fn, t, x, n)
        return math_call(fn, "pow", t, x, y)
    # square-and-multiply over every exponent bit, wrapping as NumPy's integer power does
    result, base = "1", x
    n = bits(dt) - (1 if dtypes.is_signed(dt) else 0)
    for k in range(n):
        bit = fn.op(f"and {t} {fn.op(f'lshr {t} {y}, {k}')}, 1")
        on = fn.op(f"icmp ne {t} {bit}, 0", "c")
        result = fn.op(f"select i1 {on}, {t} {fn.op(f'mul {t} {result}, {base}')}, "
                       f"{t} {result}")
        if k + 1 < n:
            base = fn.op(f"mul {t} {base}, {base}")
    if not dtypes.is_signed(dt):
        return result
    # x ** -n: the integer part of 1 / x ** n
    neg = fn.op(f"icmp slt {t} {y}, 0", "c")
    odd = fn.op(f"icmp ne {t} {fn.op(f'and {t} {y}, 1')}, 0", "c")
    minus = fn.op(f"select i1 {odd}, {t} -1, {t} 1")
    recip = fn.op(f"select i1 {fn.op(f'icmp eq {t} {x}, -1', 'c')}, {t} {minus}, {t} 0")
    recip = fn.op(f"select i1 {fn.op(f'icmp eq {t} {x}, 1', 'c')}, {t} 1, {t} {recip}")
    return fn.op(f"select i1 {neg}, {t} {recip}, {t} {result}")


# x**n for a constant integer n (x**3, r**-3) is a few multiplications instead of pow's
# log and exp: gelu written with x**3 ran 15x slower than with x*x*x (Zen 3, f32).
_MAX_INT_EXPONENT = 64


def _small_integer_exponent(instr):
    """n when pow's exponent is one constant integer, 2 <= |n| <= _MAX_INT_EXPONENT or
    n = -1 (0 and 1 the simplifier has already removed)."""
    from jitlib.fusion.rewrite import scalar_constant
    c = scalar_constant(instr.operands[1])
    if c is None:
        return None
    v = float(c.attrs["value"].array)
    if v != int(v) or not (v == -1 or 2 <= abs(v) <= _MAX_INT_EXPONENT):
        return None
    return int(v)


def _float_int_power(fn, t, x, n):
    """x**n within 0.5 ulp plus about 2^-40 of one (pow's own bound is 1 ulp; x**-1 and
    x**2 are the correctly rounded 1/x and x*x the IR defines). float works in double
    (x*x is exact, and |n| <= 64 products lose under 2^-46), double in double-double,
    raising 1/x for n < 0 so that results in the subnormal range are not lost to an
    overflowing x**|n|. The plain product chain gives C99's special values by itself
    (±0, ±inf and NaN bases, overflow, underflow), so double keeps it wherever it or the
    pair is zero or not finite: there the pair's error terms are NaN or lose the sign of
    zero."""
    def multiply(a, b):
        return fn.op(f"fmul double {a}, {b}")
    if t == "float":
        p = _square_and_multiply(multiply, fn.op(f"fpext float {x} to double"), abs(n))
        if n < 0:
            p = fn.op(f"fdiv double 1.0, {p}")
        return fn.op(f"fptrunc double {p} to float")
    base, pair = x, (x, "0.0")
    if n < 0:
        base = fn.op(f"fdiv double 1.0, {x}")
        pair = _pair_reciprocal(fn, x, "0.0")
    plain = _square_and_multiply(multiply, base, abs(n))
    if n in (-1, 2):             # one correctly rounded operation already
        return plain
    hi, lo = _square_and_multiply(lambda a, b: _pair_mul(fn, a, b), pair, abs(n))
    total = fn.op(f"fadd double {hi}, {lo}")

    def finite_nonzero(v):   # false for NaN too
        magnitude = fn.intrinsic("fabs", "double", v)
        below_inf = fn.op(f"fcmp one double {magnitude}, 0x7FF0000000000000", "c")
        return fn.op(f"and i1 {below_inf}, {fn.op(f'fcmp one double {v}, 0.0', 'c')}", "c")

    ok = fn.op(f"and i1 {finite_nonzero(total)}, {finite_nonzero(plain)}", "c")
    return fn.op(f"select i1 {ok}, double {total}, double {plain}")


def _square_and_multiply(mul, base, n):
    """base**n for n >= 1 with `mul`, from the exponent's low bit up."""
    result = None
    while True:
        if n & 1:
            result = base if result is None else mul(result, base)
        n >>= 1
        if not n:
            return result
        base = mul(base, base)


def _pair_mul(fn, a, b):
    """(ah + al) * (bh + bl) as a normalized double-double (Dekker's product by fma)."""
    (ah, al), (bh, bl) = a, b
    p = fn.op(f"fmul double {ah}, {bh}")
    err = fn.intrinsic("fma", "double", ah, bh, fn.op(f"fneg double {p}"))
    cross = fn.intrinsic("fma", "double", ah, bl, fn.op(f"fmul double {al}, {bh}"))
    err = fn.op(f"fadd double {err}, {cross}")
    hi = fn.op(f"fadd double {p}, {err}")
    lo = fn.op(f"fsub double {err}, {fn.op(f'fsub double {hi}, {p}')}")
    return hi, lo


def _pair_reciprocal(fn, hi, lo):
    """1 / (hi + lo): q = 1/hi corrected by its residual, exact by fma."""
    q = fn.op(f"fdiv double 1.0, {hi}")
    r = fn.intrinsic("fma", "double", fn.op(f"fneg double {q}"), hi, "1.0")
    r = fn.intrinsic("fma", "double", fn.op(f"fneg double {q}"), lo, r)
    return q, fn.op(f"fmul double {q}, {r}")


def minmax(fn, dt, x, y, is_max):
    """np.maximum / np.minimum: NaN in x or y wins (x's first); on ties NumPy returns y,
    except its float16 loop, which returns x."""
    t = compute_type(dt)
    if dtypes.is_float(dt):
        cond = ("oge" if is_max else "ole") if dt == F16 else ("ogt" if is_max else "olt")
        take_x = fn.op(f"fcmp {cond} {t} {x}, {y}", "c")
        take_x = fn.op(f"or i1 {take_x}, {fn.op(f'fcmp uno {t} {x}, 0.0', 'c')}", "c")
    elif dt == dtypes.BOOL:
        return fn.op(f"{'or' if is_max else 'and'} i1 {x}, {y}")
    else:
        sign = "s" if dtypes.is_signed(dt) else "u"
        take_x = fn.op(f"icmp {sign}{'gt' if is_max else 'lt'} {t} {x}, {y}", "c")
    return fn.op(f"select i1 {take_x}, {t} {x}, {t} {y}")


def _max(fn, instr, x, y):
    return minmax(fn, instr.dtype, x, y, True)


def _min(fn, instr, x, y):
    return minmax(fn, instr.dtype, x, y, False)


def _atan2(fn, instr, y, x):
    return math_call(fn, "atan2", compute_type(instr.dtype), y, x)


def _bitwise(op):
    def rule(fn, instr, x, y):
        return fn.op(f"{op} {compute_type(instr.dtype)} {x}, {y}")
    return rule


_FCMP = {"EQ": "oeq", "NE": "une", "LT": "olt", "LE": "ole", "GT": "ogt", "GE": "oge"}
_ICMP = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


def _compare(fn, instr, x, y):
    dt, direction = instr.operands[0].dtype, instr.attrs["direction"]
    t = compute_type(dt)
    if dtypes.is_float(dt):
        return fn.op(f"fcmp {_FCMP[direction]} {t} {x}, {y}", "c")
    cond = _ICMP[direction]
    if cond not in ("eq", "ne"):
        cond = ("s" if dtypes.is_signed(dt) else "u") + cond   # bool: False < True
    return fn.op(f"icmp {cond} {t} {x}, {y}", "c")


def _select(fn, instr, pred, a, b):
    t = compute_type(instr.dtype)
    return fn.op(f"select i1 {pred}, {t} {a}, {t} {b}")


def _clamp(fn, instr, lo, x, hi):
    return minmax(fn, instr.dtype, minmax(fn, instr.dtype, x, lo, True), hi, False)


scalar_rules.update({
    Op.NEG: _neg, Op.ABS: _abs, Op.SIGN: _sign,
    Op.EXP: _exp, Op.EXPM1: _math("expm1"), Op.LOG: _math("log"),
    Op.LOG1P: _math("log1p"), Op.SQRT: _math("sqrt"), Op.RSQRT: _rsqrt,
    Op.TANH: _math("tanh"), Op.LOGISTIC: _logistic, Op.SIN: _math("sin"),
    Op.COS: _math("cos"), Op.TAN: _math("tan"),
    Op.FLOOR: _intrinsic("floor"), Op.CEIL: _intrinsic("ceil"),
    Op.ROUND: _intrinsic("roundeven"),   # half to even, whatever the rounding mode
    Op.NOT: _not, Op.IS_FINITE: _is_finite, Op.CONVERT: _convert,
    Op.ADD: _arith("fadd", "add", "or"), Op.SUB: _arith("fsub", "sub"),
    Op.MUL: _arith("fmul", "mul", "and"), Op.DIV: _div, Op.REM: _rem, Op.POW: _pow,
    Op.MAX: _max, Op.MIN: _min, Op.ATAN2: _atan2,
    Op.AND: _bitwise("and"), Op.OR: _bitwise("or"), Op.XOR: _bitwise("xor"),
    Op.COMPARE: _compare, Op.SELECT: _select, Op.CLAMP: _clamp,
})


def _complex_part(*args):
    raise Unsupported("complex values are not compiled by this backend")


scalar_rules.update({op: _complex_part for op in O.COMPLEX_PARTS | O.COMPLEX_ONLY})
assert set(scalar_rules) == O.ELEMENTWISE, sorted(O.ELEMENTWISE ^ set(scalar_rules))


# -- index rules: leaves and movement (shared with the Triton backend but for iota:
# INDEX_RULES, jitlib/backends/elemental.py)

def _iota(el, instr, index):
    d = el.dims(index)[instr.attrs["dimension"]] if instr.shape else 0
    return convert(el.fn, str(d), I64, instr.dtype)


index_rules = {**INDEX_RULES, Op.IOTA: _iota}


# -- the elemental generator

class Elemental(ElementalBase):
    """Emits the value of body instructions at indices, reading `inputs` from memory
    (see ElementalBase); `buffered` maps an instruction to a (pointer, index -> offset)
    pair where a kernel keeps its values in a buffer of its own."""

    def __init__(self, fn, inputs):
        super().__init__(IndexMath(fn), inputs)
        self.fn = fn
        self.buffered = {}

    def _compute(self, instr, index):
        if instr in self.inputs:
            return load(self.fn, self.inputs[instr], self.linear(index), instr.dtype)
        if instr in self.buffered:
            buffer, offset = self.buffered[instr]
            return load(self.fn, buffer, offset(index), instr.dtype)
        rule = scalar_rules.get(instr.op)
        if rule is not None:
            v = rule(self.fn, instr, *self.operand_values(instr, index))
            if instr.op in ROUNDED and instr.dtype in NARROW:
                v = narrow(self.fn, v, instr.dtype)
            return v
        return self.index_rule(instr, index)

    index_rules = index_rules
    unsupported = Unsupported
    literal = staticmethod(literal)

    def _select(self, cond, a, b, dt):
        t = compute_type(dt)
        return self.fn.op(f"select i1 {cond}, {t} {a}, {t} {b}")

    def as_index(self, value, dt, hi):
        """An integer scalar value as an i64 clamped into [0, hi] (u64 never goes
        negative)."""
        fn, n = self.fn, bits(dt)
        if dtypes.is_unsigned(dt) and n == 64:
            return fn.intrinsic("umin", "i64", value, str(hi))
        if n < 64:
            value = fn.op(f"{'sext' if dtypes.is_signed(dt) else 'zext'} i{n} {value} to i64",
                          "i")
        return iclamp(fn, value, 0, hi)
