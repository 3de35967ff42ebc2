"""Small numeric building blocks: piecewise, indices, kron, polyval, isin.

Composites of broadcasts, ufuncs and reductions; isin against a set known while
tracing searches it sorted, so large test sets stay cheap.
"""
import collections.abc

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions import reductions
from jitlib.trace.functions._search import count_below
from jitlib.trace.functions._common import apply, canonical_dtype, shape_arg, tracer
from jitlib.trace.registry import implements


# -- piecewise

def _conditions(x, condlist):
    """NumPy's normalisation: a lone condition (not a list of arrays) is wrapped."""
    scalar = np.isscalar(condlist) or (isinstance(condlist, (T.Tracer, np.ndarray))
                                       and condlist.ndim == 0)
    if scalar or (not _array_like(condlist[0]) and x.ndim != 0):
        condlist = [condlist]
    out = []
    for c in condlist:
        c = tracer(c)
        if c.shape != x.shape:
            raise errors.JitlibIndexError(
                f"boolean index did not match indexed array: the condition has shape "
                f"{c.shape} and x has shape {x.shape}",
                hint="each condition must have x's shape (write it from x, e.g. x < 0)")
        out.append(T.Tracer(B.convert(c.instr, dtypes.BOOL)))
    return out


def _array_like(item):
    # NumPy asks isinstance(item, (list, ndarray)); a traced row counts as an ndarray
    return isinstance(item, (list, np.ndarray)) or (isinstance(item, T.Tracer)
                                                    and item.ndim > 0)


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """select of each function of all of x where its condition holds (later ones win).

    The functions must be elementwise; NumPy calls them on the selected values only."""
    x = tracer(x)
    conds = _conditions(x, condlist)
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:   # the extra function covers "none of the above"
        anything = conds[0]
        for c in conds[1:]:
            anything = apply(np.logical_or, anything, c)
        conds.append(apply(np.logical_not, anything))
    elif n != n2:
        raise errors.JitlibValueError(
            f"with {n} condition(s), either {n} or {n + 1} functions are expected",
            hint="pass one function per condition, plus optionally one for the rest")
    y = T.Tracer(B.full(0, x.shape, x.dtype))
    for cond, func in zip(conds, funclist):
        value = func(x, *args, **kw) if isinstance(func, collections.abc.Callable) else func
        value = _assigned(value, x.dtype, x.shape)
        y = T.Tracer(B.select(cond.instr, value, y.instr))
    return y


def _assigned(value, dtype, shape):
    """`value` as `y[cond] = value` stores it: cast to y's dtype, broadcast to its shape."""
    if isinstance(value, T.Tracer):
        v = B.convert(value.instr, dtype)
    else:
        try:
            v = B.constant(np.asarray(value, dtype=dtype))
        except OverflowError as e:
            raise errors.IntegerOverflowError(str(e), hint=f"the values must fit {dtype}") \
                from None
    try:
        return T.broadcast(v, shape)
    except errors.ShapeError:
        raise errors.ShapeError(
            f"a piecewise function returned shape {v.shape} for input of shape {shape}",
            hint="the functions must be elementwise: same shape out as in") from None


# -- indices

@implements(name="indices")
def indices(dimensions, dtype=int, sparse=False):
    """iota per axis (dense: broadcast and stacked; sparse: one reshaped iota per axis)."""
    dims = shape_arg(dimensions, "dimensions")
    dt = canonical_dtype(dtype)
    n = len(dims)
    grids = []
    for i, size in enumerate(dims):
        shape = [1] * n
        shape[i] = size
        grid = B.reshape(B.iota((size,), dt), shape)
        grids.append(T.Tracer(grid if sparse else T.broadcast(grid, dims)))
    if sparse:
        return tuple(grids)
    if not grids:
        return T.Tracer(B.constant(np.zeros((0,), dt)))
    return T.Tracer(B.concatenate([B.reshape(g.instr, (1,) + dims) for g in grids], 0))


# -- kron

@implements(np.kron)
def kron(a, b):
    """broadcast product of a and b with their axes interleaved, then reshape (NumPy's)."""
    b = tracer(b)
    a = tracer(a)
    if a.ndim < b.ndim:
        a = T.Tracer(B.reshape(a.instr, (1,) * (b.ndim - a.ndim) + a.shape))
    nda, ndb = a.ndim, b.ndim
    if nda == 0 or ndb == 0:
        return apply(np.multiply, a, b)
    nd = max(nda, ndb)
    as_ = (1,) * (nd - nda) + a.shape
    bs = (1,) * (nd - ndb) + b.shape
    # a's axes at the even positions, b's at the odd ones
    a_arr = B.reshape(a.instr, tuple(d for s in as_ for d in (s, 1)))
    b_arr = B.reshape(b.instr, tuple(d for s in bs for d in (1, s)))
    product = apply(np.multiply, T.Tracer(a_arr), T.Tracer(b_arr))
    return T.Tracer(B.reshape(product.instr, tuple(p * q for p, q in zip(as_, bs))))


# -- polyval

@implements(np.polyval)
def polyval(p, x):
    """Horner's rule from zeros_like(x), as NumPy writes it."""
    p = tracer(p)
    x = tracer(x)
    y = T.Tracer(B.full(0, x.shape, x.dtype))
    if p.ndim == 0:
        raise errors.JitlibTypeError("iteration over a 0-d array",
                                     hint="pass the coefficients as a 1-D sequence")
    for i in range(p.shape[0]):
        y = apply(np.add, apply(np.multiply, y, x), p[i])
    return y


# -- isin

# A test set known while tracing and larger than this is searched sorted (log2 n
# gathers per element) instead of compared against each element (n compares).
_COMPARE_ALL = 64


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """any(element == each test value); a known test set over 64 values: binary search.

    NaN is in nothing. assume_unique= and kind= only choose NumPy's method."""
    if kind not in (None, "sort", "table"):
        raise errors.JitlibValueError(
            f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.",
            hint="leave kind=None")
    e = tracer(element)
    t = tracer(test_elements)
    dt = dtypes.result_type(e.dtype, t.dtype)
    flat = T.Tracer(B.reshape(B.convert(t.instr, dt), (t.size,)))
    ev = T.Tracer(B.convert(e.instr, dt))
    known = flat._known()
    if t.size == 0:
        found = T.Tracer(B.full(False, e.shape, dtypes.BOOL))
    elif known is not None and t.size > _COMPARE_ALL:
        found = _search_sorted_set(ev, np.unique(known[known == known]))
    else:
        col = T.Tracer(B.reshape(ev.instr, e.shape + (1,)))
        found = reductions.any(apply(np.equal, col, flat), axis=-1)
    return apply(np.logical_not, found) if invert else found


def _search_sorted_set(x, table):
    """Whether each x is in the sorted, NaN-free `table`."""
    tab = T.Tracer(B.constant(table))
    at = apply(np.minimum, count_below(tab, x, inclusive=False), table.shape[0] - 1)
    return apply(np.equal, T.Tracer(B.gather(tab.instr, at.instr, 0)), x)
