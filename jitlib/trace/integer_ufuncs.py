"""The integer ufuncs built from IR arithmetic: gcd, lcm and bitwise_count.

Signed operands work on their magnitudes as the unsigned type of the same width, where
|INT_MIN| fits, and wrap back as NumPy's C loops do (np.gcd(INT_MIN, 0) is INT_MIN).
Shifts are divisions by powers of two of unsigned values. Registered into
ufuncs.BUILDERS on import.
"""
import numpy as np

from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace.ufuncs import _c, _cmp, builder


def _unsigned(dtype):
    return np.dtype(f"u{dtype.itemsize}")


def _magnitude(x):
    """|x| in the unsigned type of x's width (exact, INT_MIN included)."""
    if dtypes.is_unsigned(x.dtype):
        return x
    return B.convert(B.unary(Op.ABS, x), _unsigned(x.dtype))


def _euclid_steps(bits):
    """Steps that Euclid's algorithm may take on `bits`-bit operands: a pair of
    consecutive Fibonacci numbers is the slowest, plus one step when a < b swaps them."""
    a, b, steps = 1, 1, 0
    while b < 2 ** bits:
        a, b, steps = b, a + b, steps + 1
    return steps + 1


def _gcd_unsigned(a, b):
    # (a, b) -> (b, a % b) a fixed number of times: a finished pair (g, 0) stays put,
    # since the IR defines a % 0 as 0
    for _ in range(_euclid_steps(a.dtype.itemsize * 8)):
        a, b = B.select(_cmp(b, _c(0, b), "EQ"), a, b), B.binary(Op.REM, a, b)
    return a


@builder(np.gcd)
def _gcd(a, b):
    return B.convert(_gcd_unsigned(_magnitude(a), _magnitude(b)), a.dtype)


@builder(np.lcm)
def _lcm(a, b):
    # NumPy's |a| / gcd * |b| in the operands' type, wrapping; gcd 0 (a == b == 0)
    # divides to 0, as the IR defines integer x / 0
    g = _gcd(a, b)
    if dtypes.is_signed(a.dtype):
        a, b = B.unary(Op.ABS, a), B.unary(Op.ABS, b)
    return B.binary(Op.MUL, B.binary(Op.DIV, a, g), b)


@builder(np.bitwise_count)
def _bitwise_count(x):
    """The classic SWAR popcount: bit counts of pairs, nibbles, bytes, then the bytes
    summed by one multiplication into the top byte."""
    u = _magnitude(x)
    bits = u.dtype.itemsize * 8
    ones = (2 ** bits - 1) // 255      # 0x0101...01

    def shr(v, n):
        return B.binary(Op.DIV, v, _c(2 ** n, v))

    def mask(v, byte):
        return B.binary(Op.AND, v, _c(ones * byte, v))
    u = B.binary(Op.SUB, u, mask(shr(u, 1), 0x55))
    u = B.binary(Op.ADD, mask(u, 0x33), mask(shr(u, 2), 0x33))
    u = mask(B.binary(Op.ADD, u, shr(u, 4)), 0x0F)
    if bits > 8:
        u = shr(B.binary(Op.MUL, u, _c(ones, u)), bits - 8)
    return B.convert(u, np.dtype(np.uint8))
