"""`ufunc.at` on a traced array: np.add.at, subtract, multiply, maximum, minimum as one
scatter.

NumPy applies `a[i] = ufunc(a[i], b)` once per index, in index order, computing in the
ufunc's loop dtype and casting each result back into `a`. The scatter op combines in
a's dtype, in index order too, so the two agree whenever the loop dtype is a's dtype,
and for integer add/subtract/multiply (wrapping arithmetic commutes with the cast back).
Otherwise (float32 `a` with float64 values: NumPy rounds each step from float64) the
call is refused with the cast that makes it exact.

Indices follow the indexing rules: negative ones wrap as in NumPy, concrete ones out of
range raise NumPy's IndexError, traced ones out of range are dropped (scatter's rule).
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T

# ufunc -> (method of x.at[...], whether the values are negated first)
_AT = {np.add: ("add", False), np.subtract: ("add", True), np.multiply: ("multiply", False),
       np.maximum: ("max", False), np.minimum: ("min", False)}
_WRAPPING = (np.add, np.subtract, np.multiply)


def supported(ufunc):
    return ufunc in _AT


def ufunc_at(ufunc, loop, target, index, values):
    """`ufunc.at(target, index, values)` written into the traced `target`; `loop` is the
    dtypes NumPy's loop for (target, values) resolves to."""
    name = f"np.{ufunc.__name__}.at"
    if not isinstance(target, T.Tracer):
        raise errors.TracerConversionError(
            f"{name} cannot write traced values into a NumPy array",
            hint="apply it to a traced array (e.g. one made with np.zeros_like)")
    _check_exact(name, ufunc, loop, target.dtype)
    method, negate = _AT[ufunc]
    if negate:
        # a - b == a + (-b) exactly, for floats and for wrapping integers alike
        values = T.Tracer(B.unary(Op.NEG, T.as_instr(values, target.dtype)))
    target._assign(getattr(target.at[index], method)(values))


def _check_exact(name, ufunc, loop, dtype):
    computed = loop[-1]
    if computed == dtype:
        return
    if ufunc in _WRAPPING and dtypes.is_integer(computed) and dtypes.is_integer(dtype):
        return
    raise errors.UnsupportedError(
        f"{name} into a {np.dtype(dtype).name} array with these values computes each step in "
        f"{computed.name} and casts it back, which jitlib's scatter (combining in "
        f"{np.dtype(dtype).name}) does not reproduce exactly",
        hint=f"cast the values to the array's dtype first (values.astype(x.dtype)); NumPy "
             f"then computes in {np.dtype(dtype).name} too")
