"""1-D signal helpers: convolve, correlate, interp, trapezoid.

Each is a composite of slices, gathers and ufuncs with NumPy's dtype rules; none
needs an IR op of its own. (np.gradient, also a stencil, lives in gradient.py.)
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions import joining, reductions
from jitlib.trace.functions._common import apply, index_constant, tracer
from jitlib.trace.functions._search import count_below
from jitlib.trace.registry import implements

# Up to this many taps, a correlation is a sum of shifted copies (one fused elementwise
# kernel); past it, one gather of every window and a row sum, so the IR stays small.
_SHIFTED_TAPS = 32

_MODES = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}


def _mode(mode):
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise errors.JitlibValueError(
            f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})",
            hint="pass mode='valid', 'same' or 'full'") from None


def _signal(x, fname, which):
    """np.array(x, ndmin=1), refusing 2-D and empty input as NumPy does."""
    t = tracer(x)
    if t.ndim == 0:
        t = T.Tracer(B.reshape(t.instr, (1,)))
    if t.ndim > 1:
        raise errors.ShapeError("object too deep for desired array",
                                hint=f"np.{fname} takes 1-D sequences")
    if t.shape[0] == 0:
        what = {"convolve": ("a", "v"), "correlate": ("first array argument",
                                                      "second array argument")}[fname]
        raise errors.ShapeError(f"{what[which]} cannot be empty",
                                hint=f"np.{fname} needs non-empty inputs")
    return t


def _full_correlation(a, v, dt):
    """out[i] = sum_j a[i + j - (m-1)] * v[j] for i < n + m - 1 (zeros outside `a`).

    Bool sums are or-reductions and ints wrap in `dt`, as NumPy's dot loop does."""
    n, m = a.shape[0], v.shape[0]
    if m > n:   # make the shorter signal the kernel: c_av[k] = c_va[-k]
        return T.Tracer(B.reverse(_full_correlation(v, a, dt).instr, (0,)))
    length = n + m - 1
    av = B.convert(a.instr, dt)
    padded = B.pad(av, B.constant(np.zeros((), dt)), (m - 1,), (m - 1,))
    vv = T.Tracer(B.convert(v.instr, dt))
    if m <= _SHIFTED_TAPS:
        total = None
        for j in range(m):
            window = T.Tracer(B.slice(padded, (j,), (j + length,)))
            term = apply(np.multiply, window, T.Tracer(B.reshape(vv[j].instr, ())))
            total = term if total is None else apply(np.add, total, term, dtype=dt)
        return total
    idx = np.arange(length)[:, None] + np.arange(m)[None, :]
    windows = T.Tracer(B.gather(padded, index_constant(idx), 0))
    return reductions.sum(apply(np.multiply, windows, vv), axis=1, dtype=dt)


def _cut(full_corr, n, m, mode, same_start):
    if mode == "full":
        return full_corr
    if mode == "valid":
        start, stop = min(n, m) - 1, max(n, m)
    else:
        start = same_start
        stop = start + max(n, m)
    return T.Tracer(B.slice(full_corr.instr, (start,), (stop,)))


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """Sums of shifted products (a gather of windows for kernels over 32 taps)."""
    mode = _mode(mode)
    x, k = _signal(a, "correlate", 0), _signal(v, "correlate", 1)
    n, m = x.shape[0], k.shape[0]
    dt = dtypes.result_type(x.dtype, k.dtype)
    # NumPy centres 'same' on the longer input; when v is longer it correlates the other
    # way round and reverses, which moves the window's start
    start = (m - 1) // 2 if n >= m else n - 1 - (n - 1) // 2
    return _cut(_full_correlation(x, k, dt), n, m, mode, start)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """correlate with v reversed (NumPy's definition)."""
    mode = _mode(mode)
    x, k = _signal(a, "convolve", 0), _signal(v, "convolve", 1)
    n, m = x.shape[0], k.shape[0]
    dt = dtypes.result_type(x.dtype, k.dtype)
    flipped = T.Tracer(B.reverse(k.instr, (0,)))
    return _cut(_full_correlation(x, flipped, dt), n, m, mode, (min(n, m) - 1) // 2)


# -- interpolation

def _take(values, idx):
    return T.Tracer(B.gather(values.instr, idx.instr, 0))


def _periodic(x, xp, fp, period):
    """NumPy's periodic preparation: everything mod period, xp sorted (with fp), and one
    point copied past each end."""
    if np.ndim(period) != 0:
        raise errors.ShapeError("period must be a scalar", hint="pass one period")
    p = apply(np.absolute, tracer(period, np.float64))
    x = apply(np.remainder, x, p)
    xp = apply(np.remainder, xp, p)
    order = _stable_argsort(xp)
    xp, fp = _take(xp, order), _take(fp, order)
    xp = joining.concatenate([apply(np.subtract, xp[-1:], p), xp, apply(np.add, xp[:1], p)])
    fp = joining.concatenate([fp[-1:], fp, fp[:1]])
    return x, xp, fp


def _stable_argsort(v):
    """argsort of a short 1-D array by ranks: rank_i = #{v_j < v_i} + #{j < i: v_j == v_i},
    then order[r] = the i of rank r. Quadratic, exact, and needs no sort op."""
    n = v.shape[0]
    col, row = T.Tracer(B.reshape(v.instr, (n, 1))), T.Tracer(B.reshape(v.instr, (1, n)))
    earlier = T.Tracer(B.constant(np.tri(n, k=-1, dtype=bool).T))   # [i, j]: j < i
    before = apply(np.logical_or, apply(np.less, row, col),
                   apply(np.logical_and, apply(np.equal, row, col), earlier))
    rank = reductions.sum(before, axis=1)
    positions = T.Tracer(B.constant(np.arange(n, dtype=dtypes.INDEX)[None, :]))
    one_hot = apply(np.equal, T.Tracer(B.reshape(rank.instr, (1, n))),
                    T.Tracer(B.reshape(positions.instr, (n, 1))))   # [r, i]: rank_i == r
    return reductions.sum(apply(np.multiply, one_hot, positions), axis=1)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Binary search of static depth (gathers), then NumPy's slope formula (float64)."""
    x = tracer(x, np.float64)
    xp, fp = tracer(xp, np.float64), tracer(fp, np.float64)
    if xp.ndim != 1 or fp.ndim != 1:
        raise errors.ShapeError("object too deep for desired array",
                                hint="xp and fp must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise errors.ShapeError("fp and xp are not of the same length.",
                                hint="give one fp value per xp point")
    if xp.shape[0] == 0:
        raise errors.ShapeError("array of sample points is empty",
                                hint="pass at least one sample point")
    if period is not None:
        if not isinstance(period, T.Tracer) and period == 0:
            raise errors.JitlibValueError("period must be a non-zero value",
                                          hint="pass a non-zero period, or period=None")
        x, xp, fp = _periodic(x, xp, fp, period)
        left = right = None
    lval = fp[0] if left is None else tracer(left, np.float64)
    rval = fp[-1] if right is None else tracer(right, np.float64)
    for bound in (lval, rval):
        if bound.ndim != 0:
            raise errors.ShapeError("left and right must be scalars",
                                    hint="pass scalar left= and right= values")
    return _interpolate(x, xp, fp, lval, rval)


def _interpolate(x, xp, fp, lval, rval):
    m = xp.shape[0]
    shape = x.shape
    lval, rval = (T.broadcast(v.instr, shape) for v in (lval, rval))
    if m == 1:   # NumPy's own special case: no search, NaN x gives fp[0]
        x0, f0 = (T.broadcast(v[0].instr, shape) for v in (xp, fp))
        r = B.select(B.compare(x.instr, x0, "GT"), rval, f0)
        return T.Tracer(B.select(B.compare(x.instr, x0, "LT"), lval, r))
    j = apply(np.subtract, count_below(xp, x, inclusive=True), 1)    # xp[j] <= x < xp[j + 1]
    jc = apply(np.minimum, apply(np.maximum, j, 0), m - 2)
    x0, x1 = _take(xp, jc), _take(xp, apply(np.add, jc, 1))
    f0, f1 = _take(fp, jc), _take(fp, apply(np.add, jc, 1))
    slope = apply(np.divide, apply(np.subtract, f1, f0), apply(np.subtract, x1, x0))
    y = apply(np.add, apply(np.multiply, slope, apply(np.subtract, x, x0)), f0)
    # if one direction gives NaN (an infinite fp), NumPy tries the other, then fp[j]
    y_back = apply(np.add, apply(np.multiply, slope, apply(np.subtract, x, x1)), f1)
    y = _where(apply(np.isnan, y), y_back, y)
    y = _where(apply(np.logical_and, apply(np.isnan, y), apply(np.equal, f0, f1)), f0, y)
    y = _where(apply(np.equal, x0, x), f0, y)
    last = T.Tracer(T.broadcast(fp[-1].instr, shape))
    xlast = T.Tracer(T.broadcast(xp[-1].instr, shape))
    y = _where(apply(np.equal, x, xlast), last, y)
    y = _where(apply(np.greater, x, xlast), T.Tracer(rval), y)
    y = _where(apply(np.less, j, 0), T.Tracer(lval), y)
    return _where(apply(np.isnan, x), x, y)


def _where(cond, a, b):
    shape = T.broadcast_shapes(cond.shape, a.shape, b.shape)
    return T.Tracer(B.select(T.broadcast(cond.instr, shape), T.broadcast(a.instr, shape),
                             T.broadcast(b.instr, shape)))


# -- integration

@implements(*[getattr(np, n) for n in ("trapezoid",) if hasattr(np, n)], name="trapezoid")
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """sum(d * (y[1:] + y[:-1]) / 2.0) along axis, as NumPy writes it."""
    y = tracer(y)
    nd = y.ndim
    ax = T.normalize_axis(axis, nd)
    if x is None:
        d = dx
    else:
        x = tracer(x)
        if x.ndim == 1:
            d = joining.diff(x)
            shape = [1] * nd
            shape[ax] = d.shape[0]
            d = T.Tracer(B.reshape(d.instr, shape))
        else:
            d = joining.diff(x, axis=ax)
    hi = [slice(None)] * nd
    lo = [slice(None)] * nd
    hi[ax], lo[ax] = slice(1, None), slice(None, -1)
    both = apply(np.add, y[tuple(hi)], y[tuple(lo)])
    return reductions.sum(d * both / 2.0, axis=ax)

