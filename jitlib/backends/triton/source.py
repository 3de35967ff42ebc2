"""Writing Triton source text: dtypes, literals, and a line writer with fresh names.

Types. Values live in a compute type: bool is tl.int1, integers their own type, f32 and
f64 their own, and f16/bf16 compute in tl.float32 with every rounding op's result rounded
back to the 16-bit grid (`narrow`), as the interpreter's NumPy/ml_dtypes loops round after
each op. In memory each dtype is itself (bool as Triton's i1 pointer, one byte).
"""
import re

import numpy as np

from jitlib.hlo import dtypes


class Unsupported(Exception):
    """This kernel needs an op, dtype or form the Triton backend does not generate yet."""


F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
NARROW = dtypes.NARROW_FLOATS

_TL = {
    "bool": "tl.int1", "i8": "tl.int8", "i16": "tl.int16", "i32": "tl.int32",
    "i64": "tl.int64", "u8": "tl.uint8", "u16": "tl.uint16", "u32": "tl.uint32",
    "u64": "tl.uint64", "f16": "tl.float16", "bf16": "tl.bfloat16", "f32": "tl.float32",
    "f64": "tl.float64",
}


def memory_type(dt):
    """The Triton element type of a `dt` buffer."""
    return _TL[dtypes.name(np.dtype(dt))]


def compute_type(dt):
    """The Triton type `dt` values are computed in."""
    dt = np.dtype(dt)
    return "tl.float32" if dt in NARROW else memory_type(dt)


def pointer_signature(dt):
    """The signature string Triton's launcher derives for a `dt` buffer (e.g. "*fp32")."""
    from triton._utils import canonicalize_ptr_dtype
    return canonicalize_ptr_dtype(np.dtype(dt), False)


def literal(value, dt, shape="[]"):
    """`value` as a Triton expression of `dt`'s compute type (a scalar tensor by default).

    Typed explicitly: a bare Python float is fp32 in Triton, which would round f64
    constants, and inf/NaN have no literal, so those go through their bit pattern."""
    dt = np.dtype(dt)
    ty = compute_type(dt)
    if dt == dtypes.BOOL:
        return f"tl.full({shape}, {int(bool(value))}, tl.int1)"
    if dtypes.is_integer(dt):
        v = int(value)
        if dtypes.is_unsigned(dt):
            v &= (1 << (8 * dt.itemsize)) - 1   # -1 means all ones, as NumPy wraps
        if dt == np.uint64 and v >= 1 << 63:
            return f"tl.full({shape}, {v - (1 << 64)}, tl.int64).to(tl.uint64, bitcast=True)"
        return f"tl.full({shape}, {v}, {ty})"
    x = float(np.asarray(value, dtype=dt))
    # tl.full makes any value equal to 0 a null constant: -0.0 goes through its bits too
    if np.isfinite(x) and not (x == 0 and np.signbit(x)):
        return f"tl.full({shape}, {x!r}, {ty})"
    if dt == F64:
        bits = int(np.array(x, F64).view(np.int64))
        return f"tl.full({shape}, {bits}, tl.int64).to(tl.float64, bitcast=True)"
    bits = int(np.array(x, F32).view(np.int32))
    return f"tl.full({shape}, {bits}, tl.int32).to(tl.float32, bitcast=True)"


def spread(address, mask):
    """A uniform `address` (one element for the whole tile) as a block of the mask's
    shape: tl.load and tl.store refuse a block mask beside a scalar pointer."""
    return f"{address} + tl.zeros({mask}.shape, tl.int64)"


def narrow(expr, dt):
    """`expr` (f32) rounded to the f16/bf16 grid, still as f32; unchanged for other dtypes."""
    dt = np.dtype(dt)
    if dt in NARROW:
        # `a + b` must round as a whole, not just `b`
        whole = expr if expr.isidentifier() else f"({expr})"
        return f"{whole}.to({memory_type(dt)}).to(tl.float32)"
    return expr


# a name the expression reads: not an attribute (tl.where), not a keyword argument (axis=1)
_READS = re.compile(r"(?<![.\w])([A-Za-z_]\w*)(?!\s*=[^=])")
# names whose calls are as uniform as their arguments: Triton's modules and the helpers
# generated code defines beside its kernel (Writer.helpers)
_ALWAYS_UNIFORM = frozenset({"tl", "libdevice", "True", "False", "None", "_tanh_f32"})


class Writer:
    """The body of one function: indented lines and fresh variable names.

    It also knows which names are *uniform*, one value for the whole tile: those marked
    so (a one-element load) and those computed from literals and uniform names only.
    tl.load needs that: a uniform address is a scalar pointer, which refuses a block mask.
    """

    def __init__(self, indent=1):
        self.lines = []
        self.indent = indent
        self._count = 0
        self._uniform = set()
        self.helpers = set()    # source of the @triton.jit helpers the body calls

    def fresh(self, hint="v"):
        self._count += 1
        return f"{hint}{self._count}"

    def line(self, text):
        self.lines.append("    " * self.indent + text)

    def let(self, expr, hint="v", comment=None, uniform=None):
        """Emit `name = expr` and return name; `uniform` overrides what `expr` says."""
        name = self.fresh(hint)
        self.line(f"{name} = {expr}" + (f"  # {comment}" if comment else ""))
        if uniform or (uniform is None and self.is_uniform(expr)):
            self._uniform.add(name)
        return name

    def is_uniform(self, expr):
        """Whether `expr` (a Python int, or source text) has one value for the whole tile."""
        if isinstance(expr, int):
            return True
        return all(n in self._uniform or n in _ALWAYS_UNIFORM for n in _READS.findall(expr))

    def text(self):
        return "\n".join(self.lines)
