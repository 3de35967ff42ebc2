"""Counting into bins: bincount (a scatter-add) and digitize (a sorted search).

bincount's result is as long as the largest value plus one, which only the data knows:
under jit it needs a static `length=` (through `jitlib.numpy.bincount`, as in JAX), or a
concrete `x`. Values outside [0, length) are dropped (NumPy raises for negative ones;
a traced value cannot raise). Weights are summed in float64 in the order of `x`, as
NumPy sums them.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import full, int_arg, operand, tracer
from jitlib.trace.registry import implements

_LENGTH_HINT = ("pass a static length through jitlib.numpy.bincount(x, length=N) "
                "(values >= N are dropped), as with jax.numpy.bincount")


def scatter_count(index, length, weights=None, dtype=dtypes.INDEX):
    """A (length,) array: how often each position occurs in the int64 Tracer `index`, or
    the sum of `weights` (converted to `dtype`) there, in index order. Positions outside
    [0, length) are dropped, negative ones too (the scatter op's rule, not indexing's)."""
    flat = B.reshape(index.instr, (index.size,))
    if weights is None:
        upd = full(1, (index.size,), dtype)
    else:
        upd = B.convert(B.reshape(tracer(weights).instr, (index.size,)), dtype)
    return T.Tracer(B.scatter(full(0, (length,), dtype), flat, upd, 0, "add"))


def _check_x(x):
    if x.ndim != 1:
        raise errors.ShapeError("object too deep for desired array" if x.ndim else
                                "object of too small depth for desired array",
                                hint="np.bincount counts a 1-d array of non-negative ints")
    if not (dtypes.is_bool(x.dtype) or np.can_cast(x.dtype, np.intp)):
        raise errors.JitlibTypeError(
            f"Cannot cast array data from dtype('{np.dtype(x.dtype).name}') to "
            "dtype('int64') according to the rule 'safe'",
            hint="np.bincount counts integers: pass x.astype(np.int64)")


def _static_length(x, minlength):
    """The result length NumPy gives for the values `x` (an ndarray)."""
    values = x
    if values.size and values.min() < 0:
        raise errors.JitlibValueError("'list' argument must have no negative elements",
                                      hint="np.bincount counts non-negative ints")
    return max(int(values.max()) + 1 if values.size else 0, minlength)


@implements(np.bincount)
def bincount(x, weights=None, minlength=0, *, length=None):
    """scatter-add of ones (int64 counts) or of the weights (float64, in x's order).

    The result has `length` bins: given, or from a concrete x as NumPy finds it."""
    xt = tracer(operand(x))
    _check_x(xt)
    minlength = int_arg(minlength if minlength is not None else 0, "bincount's minlength")
    if minlength < 0:
        raise errors.JitlibValueError("'minlength' must not be negative",
                                      hint="pass minlength >= 0")
    if length is not None:
        length = int_arg(length, "bincount's length")
        if length < 0:
            raise errors.JitlibValueError("'length' must not be negative",
                                          hint="pass length >= 0")
    else:
        known = x._known() if isinstance(x, T.Tracer) else T.concrete(x)
        if known is None:
            raise errors.UnsupportedError(
                "np.bincount's result length (the largest value plus one) depends on the "
                "values, and shapes must be known while tracing", hint=_LENGTH_HINT)
        length = _static_length(known, minlength)
    if weights is not None:
        w = tracer(operand(weights))
        if w.shape != xt.shape:
            raise errors.ShapeError("The weights and list don't have the same length.",
                                    hint="pass one weight per value of x")
        if not (dtypes.is_bool(w.dtype) or np.can_cast(w.dtype, np.float64, "same_kind")):
            raise errors.JitlibTypeError(f"bincount weights of dtype {w.dtype} are not "
                                         "supported", hint="pass real weights")
    index = T.Tracer(B.convert(xt.instr, dtypes.INDEX))
    if weights is None or xt.size == 0:   # NumPy gives int64 zeros for an empty x
        return scatter_count(index, length)
    return scatter_count(index, length, weights, np.float64)


def bincount_eager(x, weights=None, minlength=0, *, length=None):
    """jitlib.numpy.bincount outside a trace: np.bincount, cut or padded to `length`,
    dropping values outside [0, length) as the traced one does."""
    if length is None:
        return np.bincount(x, weights, minlength)
    x = np.asarray(x)
    w = None if weights is None else np.asarray(weights)
    if w is not None and w.shape != x.shape:
        raise ValueError("The weights and list don't have the same length.")
    keep = (x >= 0) & (x < length)
    out = np.bincount(x[keep], None if w is None else w[keep], minlength=length)[:length]
    # float64 for weights, unless x itself is empty (NumPy's int64 zeros then)
    return out.astype(np.float64 if w is not None and x.size else np.intp)


# -- digitize

def _monotonicity(bins):
    """1 increasing, -1 decreasing (non-strictly, as NumPy's check), 0 neither."""
    steps = np.diff(bins)
    if np.all(steps >= 0):
        return 1
    return -1 if np.all(steps <= 0) else 0


@implements(np.digitize)
def digitize(x, bins, right=False):
    """searchsorted of x into the bins, reversed for decreasing bins.

    Right side unless right=True; traced bins are taken as increasing (they cannot be
    checked)."""
    xt = tracer(operand(x))
    side = "left" if right else "right"
    edges = bins._known() if isinstance(bins, T.Tracer) else T.concrete(bins)
    if edges is None:
        return np.searchsorted(bins, xt, side=side)
    if edges.ndim != 1:
        raise errors.ShapeError("object too deep for desired array" if edges.ndim else
                                "object of too small depth for desired array",
                                hint="np.digitize takes 1-d bins")
    mono = _monotonicity(edges)
    if mono == 0:
        raise errors.JitlibValueError("bins must be monotonically increasing or decreasing",
                                      hint="sort the bins")
    if mono == -1:
        return len(edges) - np.searchsorted(edges[::-1].copy(), xt, side=side)
    return np.searchsorted(edges, xt, side=side)
