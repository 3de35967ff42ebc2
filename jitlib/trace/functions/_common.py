"""Helpers every NumPy-function implementation shares: argument coercion, views, `out=`.

Implementations take tracers and concrete values (ndarrays, NumPy and Python
scalars, nested lists that may hold tracers) mixed, and return Tracers.
"""
import operator

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace import ufuncs

NOVALUE = np._NoValue


def since(*names):
    """The NumPy functions of these names that this NumPy has (some arrived in 2.1)."""
    return [getattr(np, name) for name in names if hasattr(np, name)]


def given(value):
    """Whether an optional argument was passed (NumPy's `_NoValue` counts as absent)."""
    return value is not None and value is not NOVALUE


def flag(value):
    """A boolean option that NumPy may pass as `_NoValue`."""
    return False if value is NOVALUE else bool(value)


def contains_tracer(x):
    if isinstance(x, T.Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(contains_tracer(v) for v in x)
    return False


def operand(x):
    """`x` ready for promotion: a Tracer, a Python scalar (kept weak) or an ndarray."""
    if isinstance(x, T.Tracer) or T.is_weak(x):
        return x
    if isinstance(x, (list, tuple)) and contains_tracer(x):
        from jitlib.trace.functions.creation import asarray
        return asarray(x)
    return T.concrete(x)


def tracer(x, dtype=None):
    """`x` as a Tracer; Python scalars become arrays of NumPy's default types (strong)."""
    if isinstance(x, T.Tracer):
        if dtype is not None and x.dtype != dtypes.canonicalize(dtype):
            return T.Tracer(B.convert(x.instr, dtype))
        # a traced Python scalar becomes an array, as np.asarray(2.0) does
        return T.Tracer(x.instr) if x._weak else x
    x = operand(x)
    if isinstance(x, T.Tracer):
        return tracer(x, dtype)
    arr = T.concrete(x)
    if dtype is not None:
        arr = arr.astype(dtypes.canonicalize(dtype))
    return T.Tracer(B.constant(arr))


def canonical_dtype(dtype):
    """A supported np.dtype from what the user passed (np.float32, float, 'i4', ...)."""
    try:
        return dtypes.canonicalize(dtype)
    except TypeError as e:
        raise errors.JitlibTypeError(str(e), hint="use a numeric or bool dtype") from None


def is_inexact(dtype):
    """NumPy's own test for "has NaN" (np.inexact): false for ml_dtypes' bfloat16, whose
    arrays NumPy's nan_to_num, nansum, linalg.norm, ... treat like integers."""
    return issubclass(np.dtype(dtype).type, np.inexact)


def full(value, shape, dtype):
    """A constant array (a broadcast scalar, so large shapes cost nothing)."""
    return B.full(value, shape, dtype)


def index_constant(value):
    return B.constant(np.asarray(value, dtype=dtypes.INDEX))


def apply(ufunc, *inputs, dtype=None):
    """Trace the call `ufunc(*inputs)` with NumPy's loop selection (the ufunc table's rules).

    The result is strong even for Python-scalar inputs, as `ufuncs.apply` makes it for
    every np.* call: eager NumPy returns a NumPy scalar there (np.sqrt(2.0) is np.float64).
    """
    return ufuncs.apply(ufunc, inputs, dtype=dtype)


def apply_operator(ufunc, *inputs):
    """Trace a Python operator (`a + b`, `abs(a)`): Python scalars in, Python scalar out."""
    return ufuncs.apply(ufunc, inputs)


# -- views

def view(x, derive, write=None, what="this view"):
    """A view of `x` (re-derived when `x` is written) if `x` is traced, else a constant."""
    if isinstance(x, T.Tracer):
        return x._make_view(derive, write, what)
    return T.Tracer(derive(tracer(x).instr))


def read_only(what):
    """A `write` for views NumPy makes read-only (broadcast_to, diagonal)."""
    def write(base, new):
        raise errors.UnsupportedError(
            f"assignment destination is read-only: NumPy makes {what} read-only",
            hint="take a .copy() first, or write into the original array")
    return write


# -- results

def finish(result, out, fname):
    """Honour `out=`: write `result` into a traced `out` (cast like NumPy) and return it."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:
        (out,) = out
    if not isinstance(out, T.Tracer):
        raise errors.TracerConversionError(
            f"np.{fname}(..., out=) cannot write a traced result into a NumPy array",
            hint="allocate the output from a traced array (np.empty_like(x)) or use the "
                 "return value")
    if out.shape != result.shape:
        raise errors.ShapeError(
            f"np.{fname}: output array has shape {out.shape}, but the result has shape "
            f"{result.shape}", hint="pass out= of the result's shape, or use the return value")
    out._assign(result)
    return out


def along_axis(x, axis):
    """(value, axis) for NumPy's `axis=None` convention: None means the flattened array."""
    if axis is None:
        return B.reshape(x.instr, (x.size,)), 0
    return x.instr, T.normalize_axis(axis, x.ndim)


def keep_dims(instr, axes, ndim):
    """Re-insert reduced `axes` as size-1 dims (keepdims=True)."""
    shape = list(instr.shape)
    for ax in sorted(axes):
        shape.insert(ax, 1)
    assert len(shape) == ndim
    return B.reshape(instr, shape)


def int_arg(value, what):
    """A static integer argument (shifts, sections, offsets); tracers are refused."""
    if isinstance(value, T.Tracer):
        value = value._concrete(what, "it sets the result's shape or layout, which must be "
                                      "known while tracing: pass a Python int")
    try:
        return operator.index(value)
    except TypeError:
        raise errors.JitlibTypeError(f"{what} must be an integer, got {value!r}",
                                     hint="pass a Python int") from None


def static_ints(values, what):
    """A sequence of static ints (shapes, index lists)."""
    hint = "it must be known while tracing: pass Python ints"
    if isinstance(values, T.Tracer):
        values = values._concrete(what, hint)
    if isinstance(values, (list, tuple)) and contains_tracer(values):
        values = [v._concrete(what, hint) if isinstance(v, T.Tracer) else v for v in values]
    arr = np.asarray(values)
    if arr.size == 0:   # () is a shape (0-d); np.asarray(()) is float64
        return ()
    if arr.dtype.kind not in "iub":
        raise errors.JitlibTypeError(f"{what} must be integers, got {values!r}",
                                     hint="pass Python ints")
    return tuple(int(v) for v in arr.reshape(-1))


def shape_arg(shape, what="shape"):
    """A shape given as an int or a sequence of ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    return static_ints(shape, what)
