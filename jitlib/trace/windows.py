"""Windows: slices with traced bounds (`A[k + 1:, k]` in a loop over k), kept lazy.

A slice whose start or stop is traced has a length the data decides, as the shrinking
slices of an LU factorization or a triangular solve do. What such code does with it keeps
a static shape: elementwise math between windows of one length, `np.outer`, dot
products, sums, and a write back through a slice of the same bounds
(`A[k+1:, k] /= A[k, k]`, `A[k+1:, k+1:] -= np.outer(l, u)`). So a loop over k whose
trips differ only in such bounds traces once (trace/loop_capture.py) instead of once a
trip.

A Window keeps its values at the full extent of each windowed dim, left-aligned (its
element i at position i whatever the start), beside that dim's traced length; the
positions past the length hold values no use reads: reductions and products read zeros
there, writes select the window's region. So the array keeps exactly NumPy's values.
Anything that needs the window's shape (returning it, reshape, len(), indexing it)
raises an error naming the line that made it.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T

HINT = ("keep the full extent and select: np.where(np.arange(n) > k, x, 0), or write the "
        "loop with Python int bounds (they unroll)")


def traced_bounds(index):
    """Whether `index` has a slice with a traced start or stop (a window)."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, slice) and any(isinstance(b, T.Tracer) for b in (p.start, p.stop))
               for p in parts)


def is_window(x):
    return type(x) is Window


class Window:
    """The lazy value of a slice with traced bounds; see the module docstring."""

    _jitlib_masked = True          # Tracer's protocols step aside for it
    __array_priority__ = 2000      # above Tracer's: operators defer to us
    __hash__ = None
    __slots__ = ("_data", "_lengths", "_made_at")

    def __init__(self, data, lengths, made_at):
        self._data = data if isinstance(data, T.Tracer) else T.Tracer(T.as_instr(data))
        self._lengths = tuple(lengths)   # per dim: a traced int64 length, or None (whole)
        self._made_at = made_at

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def shape(self):
        self._escape("the shape of")

    @property
    def T(self):   # noqa: N802 - NumPy's name
        return Window(self._data.T, self._lengths[::-1], self._made_at)

    def _valid(self):
        """Where the data holds the window's elements (bool, the data's shape)."""
        return _valid(self._data.shape, self._lengths)

    def _zeroed(self):
        """The data with zeros past the lengths: what sums and products read."""
        return T.Tracer(B.select(self._valid(), self._data.instr,
                                 B.full(0, self._data.shape, self._data.dtype)))

    # -- elementwise math: the same op on the data, lengths checked to agree

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None or "where" in kwargs:
            self._escape(f"np.{ufunc.__name__}.{method} (or out=, where=) of")
        lengths = _merged_lengths(inputs, self._made_at)
        result = ufunc(*[w._data if is_window(w) else w for w in inputs], **kwargs)
        if isinstance(result, tuple):
            return tuple(Window(r, lengths, self._made_at) for r in result)
        return Window(result, lengths, self._made_at)

    def __array_function__(self, func, types, args, kwargs):
        rule = _FUNCTIONS.get(func)
        if rule is None:
            self._escape(f"np.{func.__name__} of")
        return rule(*args, **kwargs)

    def astype(self, dtype, copy=True):
        return Window(self._data.astype(dtype), self._lengths, self._made_at)

    def copy(self):
        return self

    # -- reductions

    def sum(self, axis=None, dtype=None, keepdims=False):
        return self._reduce(np.sum, axis, keepdims, self._zeroed(), dtype=dtype)

    def mean(self, axis=None, dtype=None, keepdims=False):
        total = self.sum(axis, dtype, keepdims)
        axes = T.normalize_axes(axis, self.ndim)
        count = None
        for ax in axes:
            n = (T.Tracer(self._lengths[ax]) if self._lengths[ax] is not None
                 else self._data.shape[ax])
            count = n if count is None else count * n
        return total / count

    def max(self, axis=None, keepdims=False):
        return self._extreme(np.max, -np.inf, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return self._extreme(np.min, np.inf, axis, keepdims)

    def _extreme(self, reduce, identity, axis, keepdims):
        if not dtypes.is_float(self.dtype):
            self._escape(f"{reduce.__name__}() of integer values of")
        fill = T.Tracer(B.full(identity, self._data.shape, self._data.dtype))
        data = T.Tracer(B.select(self._valid(), self._data.instr, fill.instr))
        # an empty window: NaN (NumPy raises, which a compiled program cannot per call)
        out = self._reduce(reduce, axis, keepdims, data)
        empty = self._reduce(np.sum, axis, keepdims,
                             T.Tracer(B.convert(self._valid(), dtypes.INDEX))) == 0
        return np.where(empty, np.asarray(np.nan, self.dtype), out)

    def _reduce(self, reduce, axis, keepdims, data, **options):
        axes = T.normalize_axes(axis, self.ndim)
        result = reduce(data, axis=axes, keepdims=keepdims, **options)
        kept = [n for ax, n in enumerate(self._lengths)
                if ax not in axes or keepdims]
        if keepdims:
            kept = [None if ax in axes else n for ax, n in enumerate(self._lengths)]
        return Window(result, kept, self._made_at) if any(n is not None for n in kept) \
            else result

    # -- operators (NumPy's, through the ufuncs above)

    def __add__(self, o): return np.add(self, o)          # noqa: E704
    def __radd__(self, o): return np.add(o, self)         # noqa: E704
    def __sub__(self, o): return np.subtract(self, o)     # noqa: E704
    def __rsub__(self, o): return np.subtract(o, self)    # noqa: E704
    def __mul__(self, o): return np.multiply(self, o)     # noqa: E704
    def __rmul__(self, o): return np.multiply(o, self)    # noqa: E704
    def __truediv__(self, o): return np.true_divide(self, o)    # noqa: E704
    def __rtruediv__(self, o): return np.true_divide(o, self)   # noqa: E704
    def __pow__(self, o): return np.power(self, o)        # noqa: E704
    def __neg__(self): return np.negative(self)           # noqa: E704
    def __abs__(self): return np.absolute(self)           # noqa: E704
    def __lt__(self, o): return np.less(self, o)          # noqa: E704
    def __le__(self, o): return np.less_equal(self, o)    # noqa: E704
    def __gt__(self, o): return np.greater(self, o)       # noqa: E704
    def __ge__(self, o): return np.greater_equal(self, o)  # noqa: E704
    # x[a:b] op= y makes a new window that the slice assignment then writes back
    __iadd__, __isub__, __imul__, __itruediv__ = __add__, __sub__, __mul__, __truediv__

    def __matmul__(self, o):
        return _matmul(self, o)

    def __rmatmul__(self, o):
        return _matmul(o, self)

    # -- what needs the shape

    def _escape(self, what):
        raise errors.UnsupportedError(
            f"{what} a slice with traced bounds (made at {self._made_at}) is not supported "
            "inside jit: its length is decided by the data",
            hint="elementwise math, np.outer, @ and dot, sum/mean/max/min and writing back "
                 "through a slice of the same bounds work on it; otherwise " + HINT)

    def __len__(self):
        self._escape("len() of")

    def __iter__(self):
        self._escape("iterating over")

    def __getitem__(self, index):
        self._escape("indexing")

    def __setitem__(self, index, value):
        self._escape("writing into")

    def __array__(self, dtype=None, copy=None):
        self._escape("converting to a NumPy array")

    def __bool__(self):
        self._escape("the truth value of")

    def reshape(self, *shape, **kwargs):
        self._escape("reshape of")

    def escaped_output(self, fn_name, index):
        self._escape(f"output {index} of {fn_name}, returning")


# -- reading and writing through traced bounds

def read(x, index, made_at):
    """`x[index]` where some slices of `index` have traced bounds: a Window."""
    full, windowed = _split(x, index)
    y = x[full]
    data = y.instr
    lengths = [None] * len(data.shape)
    for dim, (start, length) in windowed.items():
        data = _shift(data, dim, start, left=True)
        lengths[dim] = length
    return Window(T.Tracer(data), lengths, made_at)


def write(x, index, value):
    """`x[index] = value` where some slices have traced bounds: the region of `x` those
    bounds select takes `value` (a Window of the same lengths, or a value broadcast
    along them), everything else keeps its values."""
    full, windowed = _split(x, index)
    old = x[full].instr
    region = None
    if is_window(value):
        if value.ndim != len(old.shape) or any(
                (value._lengths[d] is not windowed[d][1]) if d in windowed
                else value._lengths[d] is not None for d in range(value.ndim)):
            value._escape("writing through other bounds than those of")
        new = B.convert(value._data.instr, x.dtype)
    else:
        v = value if isinstance(value, T.Tracer) else T.Tracer(T.as_instr(value))
        lead = len(old.shape) - v.ndim
        vshape = (1,) * lead + v.shape if lead >= 0 else None
        if vshape is None or any(m != 1 and (d in windowed or m != old.shape[d])
                                 for d, m in enumerate(vshape)):
            raise errors.UnsupportedError(
                "a value written through a slice with traced bounds must be a scalar or "
                "a window of the same bounds: its length is decided by the data",
                hint=HINT)
        new = B.broadcast_to(B.reshape(B.convert(v.instr, x.dtype), vshape), old.shape)
    for dim, (start, length) in windowed.items():
        new = _shift(new, dim, start, left=False)
        inside = _inside(old.shape, dim, start, length)
        region = inside if region is None else B.binary(Op.AND, region, inside)
    x[full] = T.Tracer(B.select(region, new, old))


def _split(x, index):
    """(index with each traced-bound slice made whole, {result dim: (start, length)})."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(p is None or p is Ellipsis for p in parts) or len(parts) > x.ndim:
        raise errors.UnsupportedError(
            "a slice with traced bounds can be combined with integers and slices only "
            "(no None, ... or arrays)", hint=HINT)
    full, windowed, dim = [], {}, 0
    for axis, p in enumerate(parts):
        if isinstance(p, slice) and any(isinstance(b, T.Tracer) for b in (p.start, p.stop)):
            if p.step not in (None, 1):
                raise errors.UnsupportedError(
                    "a slice with traced bounds must have step 1", hint=HINT)
            windowed[dim] = _bounds(p, x.shape[axis])
            full.append(slice(None))
        else:
            full.append(p)
        if isinstance(p, slice):
            dim += 1
        elif isinstance(p, T.Tracer) and p.ndim or isinstance(p, (list, np.ndarray)):
            raise errors.UnsupportedError(
                "a slice with traced bounds can be combined with integers and slices only "
                "(no index arrays)", hint=HINT)
    return tuple(full), windowed


def _bounds(s, n):
    """(start, length) of slice `s` over a dim of `n`, as traced int64 scalars, with
    NumPy's rules: negative bounds count from the end, then clamp to [0, n]."""
    def bound(b, default):
        if b is None:
            return B.constant(np.int64(default))
        b = B.convert(T.as_instr(b), dtypes.INDEX)
        if b.shape:
            raise errors.UnsupportedError("a slice bound must be a scalar", hint=HINT)
        zero, size = B.constant(np.int64(0)), B.constant(np.int64(n))
        b = B.select(B.compare(b, zero, "LT"), B.binary(Op.ADD, b, size), b)
        return B.clamp(zero, b, size)
    start, stop = bound(s.start, 0), bound(s.stop, n)
    length = B.binary(Op.MAX, B.binary(Op.SUB, stop, start), B.constant(np.int64(0)))
    return start, length


def _shift(x, dim, start, left):
    """x moved along `dim` by `start`: left, x[start + i] to i (zeros past the end);
    right, x[i] to start + i (zeros before start)."""
    n = x.shape[dim]
    zeros = B.full(0, x.shape, x.dtype)
    both = B.concatenate([x, zeros] if left else [zeros, x], dim)
    at = start if left else B.binary(Op.SUB, B.constant(np.int64(n)), start)
    starts = [B.constant(np.int64(0))] * len(x.shape)
    starts[dim] = at
    return B.dynamic_slice(both, starts, x.shape)


def _position(shape, dim):
    return B.iota(shape, dtypes.INDEX, dim)


def _inside(shape, dim, start, length):
    """Whether each position of `shape` lies in [start, start + length) along `dim`."""
    at = _position(shape, dim)
    lo = B.broadcast_to(start, shape)
    hi = B.broadcast_to(B.binary(Op.ADD, start, length), shape)
    return B.binary(Op.AND, B.compare(at, lo, "GE"), B.compare(at, hi, "LT"))


def _valid(shape, lengths):
    valid = None
    for dim, length in enumerate(lengths):
        if length is None:
            continue
        below = B.compare(_position(shape, dim), B.broadcast_to(length, shape), "LT")
        valid = below if valid is None else B.binary(Op.AND, valid, below)
    return valid if valid is not None else B.full(True, shape, np.bool_)


def _merged_lengths(inputs, made_at):
    """The lengths of an elementwise result: per dim (right-aligned, as broadcasting
    aligns), the one length every window there has; an operand that is not a window must
    have size 1 along windowed dims."""
    shapes = [w._data.shape if is_window(w) else np.shape(w) for w in inputs]
    ndim = max(len(s) for s in shapes)
    lengths = [None] * ndim
    for w, shape in zip(inputs, shapes):
        for d in range(len(shape)):
            at = ndim - len(shape) + d
            if is_window(w) and w._lengths[d] is not None:
                if lengths[at] is not None and lengths[at] is not w._lengths[d]:
                    w._escape("elementwise math between windows whose lengths may differ, "
                              "with")
                lengths[at] = w._lengths[d]
    for w, shape in zip(inputs, shapes):
        for d in range(len(shape)):
            at = ndim - len(shape) + d
            if lengths[at] is not None and shape[d] != 1 and not (
                    is_window(w) and w._lengths[d] is lengths[at]):
                _window_of(inputs)._escape("elementwise math between an array of static "
                                           "shape and")
    return lengths


def _window_of(values):
    return next(v for v in values if is_window(v))


def _matmul(a, b):
    """a @ b with windows: zeros past their lengths, the contracted lengths alike."""
    w = _window_of((a, b))
    la = a._lengths if is_window(a) else (None,) * np.ndim(a)
    lb = b._lengths if is_window(b) else (None,) * np.ndim(b)
    if not la or not lb or len(la) > 2 or len(lb) > 2:
        w._escape("@ of more than 2-d operands with")
    if la[-1] is not lb[0 if len(lb) == 1 else -2]:
        w._escape("a product whose contracted lengths may differ, with")
    da = a._zeroed() if is_window(a) else a
    db = b._zeroed() if is_window(b) else b
    out = np.matmul(da, db)
    lengths = list(la[:-1]) + ([lb[-1]] if len(lb) == 2 else [])
    return Window(out, lengths, w._made_at) if any(n is not None for n in lengths) else out


def _outer(a, b, out=None):
    w = _window_of((a, b))
    if out is not None:
        w._escape("np.outer(..., out=) of")
    la = a._lengths if is_window(a) else (None,) * np.ndim(a)
    lb = b._lengths if is_window(b) else (None,) * np.ndim(b)
    if len(la) != 1 or len(lb) != 1:
        w._escape("np.outer of other than 1-d operands with")
    da = a._data if is_window(a) else a
    db = b._data if is_window(b) else b
    return Window(np.outer(da, db), (la[0], lb[0]), w._made_at)


def _dot(a, b, out=None):
    if out is not None:
        _window_of((a, b))._escape("np.dot(..., out=) of")
    return _matmul(a, b)


def _method(name):
    def call(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs)
    return call


_FUNCTIONS = {
    np.outer: _outer, np.dot: _dot, np.matmul: lambda a, b: _matmul(a, b),
    np.sum: _method("sum"), np.mean: _method("mean"), np.max: _method("max"),
    np.min: _method("min"), np.amax: _method("max"), np.amin: _method("min"),
}
