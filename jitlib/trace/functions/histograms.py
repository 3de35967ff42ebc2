"""histogram, histogram_bin_edges, histogramdd and histogram2d: NumPy's algorithms, step
for step, on tracers.

The number of bins must be static (an int or an array of edges); the range may be
traced, or left to the data's min and max. Where everything that sets the edges is
concrete, NumPy itself computes them, so they and its argument errors are NumPy's.

- histogram with `bins=int` finds each value's bin as NumPy does: a scaled multiply,
  then corrections by comparing against the edges, the last bin closed. Weights are
  summed per block of 65536 values in float64, in input order (NumPy's bincount per
  block), and the blocks added in order in the weights' dtype.
- histogram with an array of edges counts by searchsorted; weighted, it takes NumPy's
  route (a cumulative sum of the sorted weights, differenced at the edges), with a
  stable sort where NumPy's quicksort may order equal values' weights differently.
- histogramdd and histogram2d count by searchsorted on each axis and one bincount.

A traced range is not checked (NumPy raises for a reversed or infinite one). `density`
normalises by a sum whose order is the backend's, so it may differ from NumPy's in the
last bit.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import contains_tracer, int_arg, operand, tracer
from jitlib.trace.functions.counting import scatter_count
from jitlib.trace.functions.creation import linspace
from jitlib.trace.registry import implements

BLOCK = 65536   # NumPy's block of values per bincount
_AUTO_HINT = "pass the number of bins as an int (or an array of edges)"


def _flat(a, weights):
    """NumPy's _ravel_and_check_weights: bool data counts as uint8."""
    a = tracer(operand(a))
    if dtypes.is_bool(a.dtype):
        a = a.astype(np.uint8)
    if weights is not None:
        weights = tracer(operand(weights))
        if weights.shape != a.shape:
            raise errors.ShapeError("weights should have the same shape as a.",
                                    hint="pass one weight per value")
        weights = weights.reshape(-1)
    return a.reshape(-1), weights


def _known(value):
    """A tracer whose values jit knows (made by np.array inside the function) as those
    values; anything else as it is."""
    if isinstance(value, T.Tracer):
        known = value._known()
        return value if known is None else known
    if isinstance(value, (list, tuple)) and contains_tracer(value):
        return type(value)(_known(v) for v in value)
    return value


def _static(value):
    return value is None or not contains_tracer(_known(value))


def _numpy_error(fname, exc):
    kind = errors.JitlibTypeError if isinstance(exc, TypeError) else errors.JitlibValueError
    return kind(f"np.{fname}: {exc}", hint="fix the argument as NumPy's message says")


def _outer_edges_static(range_):
    """NumPy's _get_outer_edges for a concrete range (or an empty array)."""
    if range_ is None:
        first, last = 0, 1
    else:
        first, last = range_
        if first > last:
            raise errors.JitlibValueError("max must be larger than min in range parameter.",
                                          hint="pass range=(min, max) with min <= max")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise errors.JitlibValueError(f"supplied range of [{first}, {last}] is not finite",
                                          hint="pass a finite range")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _outer_edges_traced(a, range_):
    """NumPy's _get_outer_edges on traced data or a traced range (unchecked)."""
    if range_ is None:
        first, last = np.min(a), np.max(a)
    else:
        first, last = (tracer(operand(r)) for r in range_)
    if dtypes.is_integer(first.dtype) or dtypes.is_bool(first.dtype):
        # NumPy's int edges become float64 once they meet the data; same values
        first, last = first.astype(np.float64), last.astype(np.float64)
    same = np.equal(first, last)
    return np.where(same, first - 0.5, first), np.where(same, last + 0.5, last)


def _bin_count(bins, fname):
    if isinstance(bins, str):
        raise errors.UnsupportedError(
            f"np.{fname}(bins={bins!r}) picks the number of bins from the data, and shapes "
            "must be known while tracing", hint=_AUTO_HINT)
    n = int_arg(bins, f"{fname}'s bins")
    if n < 1:
        raise errors.JitlibValueError("`bins` must be positive, when an integer",
                                      hint="pass bins >= 1")
    return n


def _edges(a, bins, range_, fname="histogram"):
    """(edges, (first, last, n) for equal bins or None), as NumPy's _get_bin_edges."""
    bins = _known(bins)
    if isinstance(bins, T.Tracer) and bins.ndim or np.ndim(bins) == 1:
        if isinstance(bins, T.Tracer):
            return bins, None
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise errors.JitlibValueError("`bins` must increase monotonically, when an array",
                                          hint="sort the edges")
        return edges, None
    if np.ndim(bins) > 1:
        raise errors.JitlibValueError("`bins` must be 1d, when an array",
                                      hint="pass an int or 1-d edges")
    n = _bin_count(bins, fname)
    if _static(range_) and (range_ is not None or a.size == 0):
        first, last = _outer_edges_static(_known(range_))
        try:   # NumPy's own edges and errors, from an empty array of a's dtype
            edges = np.histogram_bin_edges(np.empty(0, a.dtype), n, (first, last))
        except (ValueError, TypeError) as e:
            raise _numpy_error(fname, e) from None
        return edges, (first, last, n)
    first, last = _outer_edges_traced(a, range_)
    bin_type = T.result_type(first, last, a)
    if not dtypes.is_float(bin_type):
        bin_type = np.float64
    return linspace(first, last, n + 1, endpoint=True, dtype=bin_type), (first, last, n)


def _unsigned_subtract(a, b):
    """a - b as NumPy's histogram takes it: signed ints subtract as their unsigned type."""
    dt = T.result_type(a, b)
    if not dtypes.is_signed(dt):
        return np.subtract(a, b, dtype=dt)
    unsigned = np.dtype(f"u{np.dtype(dt).itemsize}")
    return np.subtract(tracer(operand(a), dt).astype(unsigned),
                       tracer(operand(b), dt).astype(unsigned))


def _equal_bin_index(a, edges, first, last, n):
    """Each value's bin among n equal ones, NumPy's way; -1 for values outside
    [first, last] and NaN (the scatter drops them)."""
    keep = np.logical_and(np.greater_equal(a, first), np.less_equal(a, last))
    a = a.astype(edges.dtype)
    scaled = (_unsigned_subtract(a, first) / _unsigned_subtract(last, first)) * n
    index = np.where(keep, scaled, 0).astype(np.intp)   # NaN has no integer value
    index = np.where(index == n, index - 1, index)
    index = np.where(a < edges[index], index - 1, index)
    index = np.where(np.logical_and(a >= edges[index + 1], index != n - 1), index + 1, index)
    return np.where(keep, index, -1)


def _uniform_histogram(a, weights, edges, first, last, n, ntype):
    edges = tracer(edges)
    index = _equal_bin_index(a, edges, first, last, n)
    if weights is None:
        return scatter_count(index, n, dtype=ntype)
    blocks = -(-a.size // BLOCK)
    if blocks <= 1:
        return scatter_count(index, n, weights, np.float64).astype(ntype)
    # one scatter for all blocks, each into its own row: bincount per block in order
    block = np.arange(a.size, dtype=np.intp) // BLOCK
    index = np.where(index < 0, -1, block * n + index)
    rows = scatter_count(index, blocks * n, weights, np.float64).reshape(blocks, n)
    hist = np.zeros(n, ntype)
    for k in range(blocks):
        hist = hist + rows[k].astype(ntype)
    return hist


def _edges_histogram(a, weights, edges, ntype):
    edges = tracer(edges)
    nbins = edges.shape[0] - 1
    if weights is None:
        index = np.searchsorted(edges, a, side="right") - 1
        index = np.where(a == edges[-1], nbins - 1, index)
        index = np.where(index > nbins - 1, -1, index)
        return scatter_count(index, nbins, dtype=ntype)
    cum = np.zeros(edges.shape, ntype)
    zero = np.zeros(1, ntype)
    for i in range(0, a.size, BLOCK):
        tmp_a, tmp_w = a[i:i + BLOCK], weights[i:i + BLOCK]
        order = np.argsort(tmp_a, kind="stable")
        sa, sw = tmp_a[order], tmp_w[order]
        cw = np.concatenate((zero, np.cumsum(sw)))
        at = np.concatenate((np.searchsorted(sa, edges[:-1], "left"),
                             np.searchsorted(sa, edges[-1:], "right")))
        cum = (cum + cw[at]).astype(ntype)   # NumPy adds in place: cast back
    return np.diff(cum)


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's algorithm on tracers: each value's bin, then one scatter-add."""
    a, weights = _flat(a, weights)
    edges, uniform = _edges(a, bins, range)
    ntype = np.dtype(np.intp) if weights is None else np.dtype(weights.dtype)
    if uniform is not None:
        hist = _uniform_histogram(a, weights, edges, *uniform, ntype)
    else:
        hist = _edges_histogram(a, weights, edges, ntype)
    edges = tracer(edges)
    if density:
        widths = np.diff(edges).astype(float)
        return hist / widths / np.sum(hist), edges
    return hist, edges


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges np.histogram would use."""
    a, _ = _flat(a, weights)
    return _edges(a, bins, range, "histogram_bin_edges")[0]


# -- several dimensions

def _dd_edges(column, bins, range_, i):
    """One axis' edges, as histogramdd makes them (linspace without a dtype)."""
    if np.ndim(bins) == 0 and not isinstance(bins, str):
        n = int_arg(bins, f"histogramdd's bins[{i}]")
        if n < 1:
            raise errors.JitlibValueError(f"`bins[{i}]` must be positive, when an integer",
                                          hint="pass bins >= 1")
        if _static(range_) and (range_ is not None or column.size == 0):
            first, last = _outer_edges_static(_known(range_))
            return np.linspace(first, last, n + 1)
        first, last = _outer_edges_traced(column, range_)
        return linspace(first, last, n + 1)
    if isinstance(bins, str):
        raise errors.UnsupportedError(f"histogramdd(bins={bins!r}) is not supported inside jit",
                                      hint=_AUTO_HINT)
    edges, _ = _edges(column, bins, None, "histogramdd")
    return edges


def _sample(sample):
    if isinstance(sample, (list, tuple)):
        return np.stack([tracer(operand(s)) for s in sample], axis=1)
    sample = tracer(operand(sample))
    return sample if sample.ndim == 2 else np.atleast_2d(sample).T


@implements(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """searchsorted on each axis (last edge closed), then one bincount over the grid.

    NumPy's histogramdd: the outlier bins at either end of each axis are cut off."""
    sample = _sample(sample)
    dims = sample.shape[1]
    try:
        count = len(bins)
    except TypeError:   # one int for every axis
        bins, count = [bins] * dims, dims
    if count != dims:
        raise errors.JitlibValueError("The dimension of bins must be equal to the dimension "
                                      "of the sample x.", hint="pass one bins per axis")
    range = (None,) * dims if range is None else range
    if len(range) != dims:
        raise errors.JitlibValueError("range argument must have one entry per dimension",
                                      hint="pass one (min, max) per axis")
    edges = [_dd_edges(sample[:, i], bins[i], range[i], i) for i in np.arange(dims)]
    nbin = [e.shape[0] + 1 for e in edges]
    flat = 0
    for i, e in enumerate(edges):
        count = np.searchsorted(e, sample[:, i], side="right")
        count = np.where(sample[:, i] == e[-1], count - 1, count)
        flat = flat * nbin[i] + count
    hist = scatter_count(tracer(flat), int(np.prod(nbin)),
                         weights, np.float64 if weights is not None else dtypes.INDEX)
    hist = hist.reshape(nbin).astype(float)[(slice(1, -1),) * dims]
    if density:
        total = np.sum(hist)
        for i, e in enumerate(edges):
            shape = [1] * dims
            shape[i] = nbin[i] - 2
            hist = hist / np.diff(e).reshape(shape)
        hist = hist / total
    return hist, [tracer(e) for e in edges]


@implements(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """histogramdd of the two columns."""
    if len(x) != len(y):
        raise errors.JitlibValueError("x and y must have the same length.",
                                      hint="pass x and y of one length")
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count not in (1, 2):
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]
