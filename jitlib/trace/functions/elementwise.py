"""Elementwise functions that are not ufuncs: where, select, clip, round, isclose, astype...

Each is composed from the ufunc table (`ufuncs.apply`), so dtypes, NaN handling
and Python-scalar promotion (NEP 50) are NumPy's own.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._common import (
    NOVALUE, apply, apply_operator, canonical_dtype, finish, full, int_arg, is_inexact, operand,
    since, tracer)
from jitlib.trace.registry import implements, lookup
from jitlib.trace.ufuncs import BUILDERS


def _select(pred, on_true, on_false, dtype):
    shape = T.broadcast_shapes(*(T.shape_of(v) for v in (pred, on_true, on_false)))
    p = T.broadcast(B.convert(T.as_instr(pred), dtypes.BOOL), shape)
    a = T.broadcast(_choice(on_true, dtype), shape)
    b = T.broadcast(_choice(on_false, dtype), shape)
    return B.select(p, a, b)


def _choice(value, dtype):
    # np.where and np.select cast a Python int into an integer result type unsafely (-1
    # as uint8 is 255, 300 is 44) where a ufunc raises OverflowError: follow each
    if type(value) is int and dtypes.is_integer(dtype):
        return B.constant(np.array(value).astype(dtype))
    if isinstance(value, T.Tracer):
        return B.convert(value.instr, dtype)
    return T.as_instr(value, dtype)


@implements(np.where)
def where(condition, x=None, y=None, /):
    """select (x and y promote like a ufunc's operands; Python scalars are weak)."""
    if x is None and y is None:   # np.nonzero: masked selections that reductions accept
        return lookup("nonzero")(condition)
    if x is None or y is None:
        raise errors.ShapeError("either both or neither of x and y should be given",
                                hint="pass both x and y: np.where(cond, x, y)")
    c, xo, yo = operand(condition), operand(x), operand(y)
    return T.Tracer(_select(c, xo, yo, T.result_type(xo, yo)))


@implements(np.select)
def select(condlist, choicelist, default=0):
    """select chain: the first true condition picks its choice (NumPy's order)."""
    if len(condlist) != len(choicelist):
        raise errors.ShapeError("list of cases must be same length as list of conditions",
                                hint="pass one choice per condition")
    if not choicelist:
        raise errors.ShapeError("select with an empty condition list is not possible",
                                hint="pass at least one condition and choice")
    choices = [operand(c) for c in choicelist] + [operand(default)]
    dt = T.result_type(*choices)
    conds = [operand(c) for c in condlist]
    for i, c in enumerate(conds):
        key = T.promotion_key(c)
        if key is not bool and not (isinstance(key, np.dtype) and dtypes.is_bool(key)):
            raise errors.JitlibTypeError(f"invalid entry {i} in condlist: should be boolean "
                                         "ndarray",
                                         hint="conditions must be bool arrays, e.g. x > 0")
    shape = T.broadcast_shapes(*(T.shape_of(v) for v in conds + choices))
    result = T.broadcast(_choice(choices[-1], dt), shape)
    for cond, choice in reversed(list(zip(conds, choices[:-1]))):
        result = _select(cond, choice, T.Tracer(result), dt)
    return T.Tracer(result)


def _int_bound_is_vacuous(x, bound, below):
    # NumPy drops Python-int bounds outside an integer dtype's range (NEP 50); a Python
    # int argument's range says as much
    bounds = T.known_int_bounds(bound)
    if bounds is None or not dtypes.is_integer(x.dtype):
        return False
    info = np.iinfo(x.dtype)
    lo, hi = bounds
    return (hi is not None and hi <= info.min) if below else (lo is not None and lo >= info.max)


@implements(np.clip)
def clip(a, a_min=NOVALUE, a_max=NOVALUE, out=None, *, min=NOVALUE, max=NOVALUE, **kwargs):
    """minimum(maximum(a, lo), hi) through the ufunc table (NaN and dtypes as NumPy)."""
    if kwargs:
        raise errors.UnsupportedError(f"np.clip with {', '.join(kwargs)}= is not supported",
                                      hint="pass only the array and its bounds")
    if a_min is not NOVALUE or a_max is not NOVALUE:
        if min is not NOVALUE or max is not NOVALUE:
            raise errors.JitlibTypeError("Passing `min` or `max` keyword argument when "
                                         "`a_min` and `a_max` are provided is forbidden.",
                                         hint="pass the bounds either positionally or as min=/max=")
        lo, hi = a_min, a_max
    else:
        lo, hi = min, max
    lo = None if lo is NOVALUE else lo
    hi = None if hi is NOVALUE else hi
    x = tracer(a)
    if _int_bound_is_vacuous(x, lo, True):
        lo = None
    if _int_bound_is_vacuous(x, hi, False):
        hi = None
    if lo is None and hi is None:
        r = apply(np.positive, x)
    elif lo is None:
        r = apply(np.minimum, x, operand(hi))
    elif hi is None:
        r = apply(np.maximum, x, operand(lo))
    else:
        lo, hi = operand(lo), operand(hi)
        dt = _clip_loop_dtype(x, lo, hi)
        r = apply(np.minimum, apply(np.maximum, x, lo, dtype=dt), hi, dtype=dt)
        # (complex values order lexicographically through maximum/minimum: no tie rule)
        if is_inexact(dt) and not dtypes.is_complex(dt) \
                and all(np.prod(T.shape_of(b), dtype=int) == 1 for b in (lo, hi)):
            r = T.Tracer(_keep_sign_of_zero_on_ties(x, lo, hi, r, dt))
    return finish(r, out, "clip")


def _keep_sign_of_zero_on_ties(x, lo, hi, clipped, dt):
    """NumPy's float clip with both bounds one value (its constant-bound SIMD loop,
    measured on NumPy 2.4) is `x < lo ? lo : x`, then `v > hi ? hi : v`: equal in value to
    maximum-then-minimum, but a tie keeps x's zero (clip(-0.0, 0, 1) is -0.0, where
    np.maximum gives 0.0). Its value is taken only where the zero's sign differs, so a
    tie's derivative stays split in two, as JAX's is."""
    shape = clipped.shape
    xv, lov, hiv = (T.broadcast(T.as_instr(v, dt), shape) for v in (x, lo, hi))
    v = B.select(B.compare(xv, lov, "LT"), lov, xv)
    v = B.select(B.compare(v, hiv, "GT"), hiv, v)
    r = clipped.instr
    signbit = BUILDERS[np.signbit]
    sign_differs = B.binary(Op.AND, B.compare(r, B.full(0, shape, dt), "EQ"),
                            B.compare(signbit(r), signbit(v), "NE"))
    return B.select(sign_differs, v, r)


def _clip_loop_dtype(*operands):
    """The output dtype of NumPy's own clip ufunc (bfloat16 clips in float32)."""
    keys = tuple(np.dtype(bool) if k is bool else k for k in map(T.promotion_key, operands))
    try:
        return np._core.umath.clip.resolve_dtypes(keys + (None,))[-1]
    except TypeError as e:
        raise errors.JitlibTypeError(f"np.clip: {e}", hint="convert the bounds to the array's "
                                                           "dtype") from None


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """select: NaN -> nan, inf -> posinf (largest finite), -inf -> neginf (lowest finite)."""
    t = tracer(x)
    v = t.instr
    if not is_inexact(t.dtype):
        return T.Tracer(v)
    info = dtypes.finfo(t.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    r = B.select(B.compare(v, v, "NE"), full(nan, v.shape, v.dtype), v)
    r = B.select(B.compare(v, full(np.inf, v.shape, v.dtype), "EQ"),
                 full(posinf, v.shape, v.dtype), r)
    r = B.select(B.compare(v, full(-np.inf, v.shape, v.dtype), "EQ"),
                 full(neginf, v.shape, v.dtype), r)
    return T.Tracer(r)


@implements(np.round, np.around)
def round(a, decimals=0, out=None):
    """rint; decimals != 0 is NumPy's rint(x * 10**d) / 10**d (ints in float64)."""
    x = tracer(a)
    d = int_arg(decimals, "decimals")
    if dtypes.is_complex(x.dtype):   # NumPy rounds the two parts separately
        re, im = round(x.real, d), round(x.imag, d)
        return finish(T.Tracer(B.binary(Op.COMPLEX, re.instr, im.instr)), out, "round")
    is_int = dtypes.is_integer(x.dtype)
    if is_int and d >= 0:
        return finish(T.Tracer(x.instr), out, "round")
    if d == 0:
        return finish(apply(np.rint, x), out, "round")
    scale = 10.0 ** abs(d)
    scale_up, scale_down = (np.multiply, np.true_divide) if d > 0 else (
        np.true_divide, np.multiply)
    dt = np.dtype(np.float64) if is_int else x.dtype
    scaled = apply(scale_up, x, scale)
    if not np.can_cast(scaled.dtype, dt, "same_kind"):
        raise errors.JitlibTypeError(
            f"Cannot cast ufunc '{scale_up.__name__}' output from {scaled.dtype!r} to {dt!r} "
            "with casting rule 'same_kind'", hint="convert the array to a float dtype first")
    y = B.convert(scaled.instr, dt)
    y = B.convert(apply(np.rint, T.Tracer(y)).instr, dt)
    y = B.convert(apply(scale_down, T.Tracer(y), scale).instr, dt)
    return finish(T.Tracer(B.convert(y, x.dtype)), out, "round")


@implements(np.real)
def real(val):
    """The real part: a view of a complex array (writable, as NumPy's), a real array
    itself."""
    x = tracer(val)
    return x.real if dtypes.is_complex(x.dtype) else x


@implements(np.imag)
def imag(val):
    """The imaginary part; zeros of a real array's dtype."""
    x = tracer(val)
    if dtypes.is_complex(x.dtype):
        return x.imag
    return T.Tracer(full(0, x.shape, x.dtype))


@implements(name="conj")
def conj(x):
    """The complex conjugate (ndarray.conj; np.conj is the conjugate ufunc)."""
    return apply(np.conjugate, tracer(x))


@implements(np.angle)
def angle(z, deg=False):
    """arctan2(imag, real), as NumPy computes it; degrees with deg=True."""
    x = tracer(z)
    if dtypes.is_complex(x.dtype):
        out = apply(np.arctan2, imag(x), real(x))
    else:
        out = apply(np.arctan2, T.Tracer(full(0, x.shape, x.dtype)), x)
    return apply(np.multiply, out, 180 / np.pi) if deg else out


@implements(np.iscomplexobj)
def iscomplexobj(x):
    """Static: whether the dtype is complex."""
    return dtypes.is_complex(tracer(x).dtype)


@implements(np.isrealobj)
def isrealobj(x):
    """Static: whether the dtype is not complex."""
    return not dtypes.is_complex(tracer(x).dtype)


@implements(np.iscomplex)
def iscomplex(x):
    """Elementwise: a nonzero imaginary part."""
    return apply(np.not_equal, imag(x), 0)


@implements(np.isreal)
def isreal(x):
    """Elementwise: a zero imaginary part."""
    return apply(np.equal, imag(x), 0)


# -- comparisons of whole arrays

@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| (and finite b), or a == b: NumPy's formula."""
    x, y, atol, rtol = (operand(v) for v in (a, b, atol, rtol))
    if isinstance(y, T.Tracer) and not y._weak or isinstance(y, np.ndarray):
        y = tracer(y, dtypes.result_type(y.dtype, 1.0))
    elif isinstance(y, T.Tracer):
        y = T.Tracer(B.convert(y.instr, np.float64), weak=True)
    elif isinstance(y, int):
        y = float(y)
    # NumPy writes abs(x - y) and atol + rtol * abs(y) with Python operators
    op = apply_operator
    close = apply(np.less_equal, op(np.absolute, op(np.subtract, x, y)),
                  op(np.add, atol, op(np.multiply, rtol, op(np.absolute, y))))
    result = apply(np.bitwise_or, apply(np.bitwise_and, close, apply(np.isfinite, y)),
                   apply(np.equal, x, y))
    if equal_nan:
        both_nan = apply(np.bitwise_and, apply(np.isnan, x), apply(np.isnan, y))
        result = apply(np.bitwise_or, result, both_nan)
    return T.Tracer(result.instr)


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """all(isclose(...)) as a traced bool (NumPy returns a Python bool)."""
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """all(a1 == a2) as a traced bool; False when the shapes differ (static)."""
    x, y = tracer(a1), tracer(a2)
    if x.shape != y.shape:
        return T.Tracer(B.constant(np.bool_(False)))
    same = apply(np.equal, x, y)
    if equal_nan:
        same = apply(np.bitwise_or, same,
                     apply(np.bitwise_and, apply(np.isnan, x), apply(np.isnan, y)))
    return reductions.all(same)


@implements(np.array_equiv)
def array_equiv(a1, a2):
    """all(a1 == a2) after broadcasting; False when they do not broadcast (static)."""
    x, y = tracer(a1), tracer(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return T.Tracer(B.constant(np.bool_(False)))
    return reductions.all(apply(np.equal, x, y))


# -- dtype and copies

@implements(*since("astype"), name="astype")
def astype(x, dtype, /, *, copy=True, device=None):
    """convert (always a new array; copy= is ignored)."""
    t = tracer(x)
    return T.Tracer(B.convert(t.instr, canonical_dtype(dtype)))


@implements(np.copy)
def copy(a, order="K", subok=False):
    """A new array with the same value (writes to it leave `a` alone)."""
    return T.Tracer(tracer(a).instr)


@implements(name="fill")
def fill(a, value):
    """ndarray.fill: replaces the array's value in place with the broadcast, cast value."""
    if not isinstance(a, T.Tracer):
        raise errors.JitlibTypeError("fill needs a traced array",
                                     hint="call .fill on an array made inside the jitted function")
    a._assign(operand(value))


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    """Writes `val` into a's main diagonal in place: a scatter at the diagonal's positions
    (NumPy's flat stride of sum(cumprod(shape[:-1])) + 1, wrapping past a square block
    of a tall 2-D array when `wrap`)."""
    if not isinstance(a, T.Tracer):
        raise errors.TracerConversionError(
            "np.fill_diagonal cannot write a traced value into a NumPy array from outside "
            "the function", hint="fill an array made inside the function, or an argument")
    shape = a.shape
    if len(shape) < 2:
        raise errors.ShapeError("array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise errors.ShapeError("All dimensions of input must be of equal length")
    if len(shape) == 2:
        step = shape[1] + 1
        end = a.size if wrap else min(a.size, shape[1] * shape[1])
    else:
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = a.size
    flat = np.arange(0, end, step)
    values = operand(val)
    if T.shape_of(values) not in ((), (1,)):
        # NumPy repeats a sequence of values along the diagonal
        values = T.Tracer(T.as_instr(values)) if not isinstance(values, T.Tracer) else values
        flat_values = values.reshape(-1)
        reps = -(-len(flat) // flat_values.shape[0])
        from jitlib.trace.registry import lookup
        values = lookup("tile")(flat_values, reps)[:len(flat)]
    a[np.unravel_index(flat, shape)] = values


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    """Writes `src` (broadcast, cast under `casting`) into `dst` in place, where `where`."""
    if not isinstance(dst, T.Tracer):
        raise errors.TracerConversionError(
            "np.copyto cannot write a traced value into a NumPy array from outside the "
            "function", hint="copy into an array made inside the function, or into an "
                             "argument (writes into arguments reach the caller)")
    if not T.is_weak(src):
        from_dtype = tracer(src).dtype if isinstance(src, T.Tracer) else T.concrete(src).dtype
        if not np.can_cast(from_dtype, dst.dtype, casting):
            raise errors.JitlibTypeError(
                f"Cannot cast array data from {np.dtype(from_dtype)!r} to "
                f"{np.dtype(dst.dtype)!r} according to the rule {casting!r}",
                hint="pass casting='unsafe', or convert with .astype first")
    value = T.broadcast(T.as_instr(operand(src), dst.dtype), dst.shape)
    if where is not True:
        mask = T.broadcast(T.as_instr(where, dtypes.BOOL), dst.shape)
        value = B.select(mask, value, dst.instr)
    dst._assign(value)


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    """Static: NumPy's promotion of the arguments' dtypes (traced Python scalars weak)."""
    keys = []
    for x in arrays_and_dtypes:
        if isinstance(x, T.Tracer):
            key = T.promotion_key(x)
            keys.append(key() if isinstance(key, type) else key)
        else:
            keys.append(x)
    return np.result_type(*keys)


@implements(np.can_cast)
def can_cast(from_, to, casting="safe"):
    """Static: np.can_cast on the traced array's dtype."""
    return np.can_cast(from_.dtype if isinstance(from_, T.Tracer) else from_, to, casting)
