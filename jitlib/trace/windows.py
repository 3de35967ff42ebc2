"""Windows: slices with traced bounds (`A[k + 1:, k]` in a loop over k), kept lazy.

A slice whose start or stop is traced has a length the data decides, as the shrinking
slices of an LU factorization or a triangular solve do. What such code does with it keeps
a static shape: elementwise math between windows of one length, `np.outer`, dot
products, sums and norms, one element (`v[0] += ...`), and a write back through a slice
of the same bounds (`A[k+1:, k] /= A[k, k]`, `A[k+1:, k+1:] -= np.outer(l, u)`). So a
loop over k whose trips differ only in such bounds traces once (trace/loop_capture.py)
instead of once a trip.

A Window keeps its values where they are in the sliced array, at the full extent of each
windowed dim, beside that dim's traced start and length (positions outside hold values no
use reads: reductions and products read zeros there, writes select the window's
region). Windows of the same bounds (`A[k+1:, k]` and `A[k, k+1:]`, and the write
`A[k+1:, k+1:] -= ...`) line up as they are, so an LU step is elementwise work and
masks; windows of other starts but one length are moved to start 0 first. The array
keeps exactly NumPy's values. Anything that needs the window's shape (returning it,
reshape, len(), indexing it other than for one element) raises an error naming the line
that made it.
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
    """Whether `index` has a slice with a traced start or stop (a window). Outside a loop
    body, a bound made of Python int arguments does not count: jit traces again with
    their values (trace/int_ranges.py), and the slice is an ordinary one."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, slice) and any(_traced(b) for b in (p.start, p.stop))
               for p in parts)


def _traced(bound):
    if not isinstance(bound, T.Tracer):
        return False
    if type(bound._weak) is not tuple:
        return True
    from jitlib.trace.context import current_trace
    # a loop's counter promotes like a Python int too: inside a region it makes windows
    return getattr(current_trace(), "outer", None) is not None


def is_window(x):
    return type(x) is Window


class Window:
    """The lazy value of a slice with traced bounds; see the module docstring."""

    _jitlib_masked = True          # Tracer's protocols step aside for it
    __array_priority__ = 2000      # above Tracer's: operators defer to us
    __hash__ = None
    __slots__ = ("_data", "_lengths", "_starts", "_made_at")

    def __init__(self, data, bounds, made_at):
        self._data = data if isinstance(data, T.Tracer) else T.Tracer(T.as_instr(data))
        # per dim: (start, length) as traced int64 scalars, or None (the whole dim)
        bounds = tuple(bounds)
        self._starts = tuple(None if b is None else b[0] for b in bounds)
        self._lengths = tuple(None if b is None else b[1] for b in bounds)
        self._made_at = made_at

    @property
    def _bounds(self):
        return tuple(None if n is None else (s, n) for s, n in zip(self._starts, self._lengths))

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
        return Window(self._data.T, self._bounds[::-1], self._made_at)

    def _valid(self):
        """Where the data holds the window's elements (bool, the data's shape)."""
        return _valid(self._data.shape, self._bounds)

    def _at_zero(self):
        """The same window with every windowed dim moved to start at 0."""
        data, bounds = self._data.instr, list(self._bounds)
        for dim, b in enumerate(bounds):
            if b is not None and b[0] is not _ZERO():
                data = _shift(data, dim, b[0], left=True)
                bounds[dim] = (_ZERO(), b[1])
        return Window(T.Tracer(data), bounds, self._made_at)

    def _zeroed(self):
        """The data with zeros past the lengths: what sums and products read."""
        return T.Tracer(B.select(self._valid(), self._data.instr,
                                 B.full(0, self._data.shape, self._data.dtype)))

    # -- elementwise math: the same op on the data, lengths checked to agree

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None or "where" in kwargs:
            self._escape(f"np.{ufunc.__name__}.{method} (or out=, where=) of")
        inputs, bounds = _lined_up(inputs)
        result = ufunc(*[w._data if is_window(w) else w for w in inputs], **kwargs)
        if isinstance(result, tuple):
            return tuple(Window(r, bounds, self._made_at) for r in result)
        return Window(result, bounds, self._made_at)

    def __array_function__(self, func, types, args, kwargs):
        rule = _FUNCTIONS.get(func)
        if rule is None:
            self._escape(f"np.{func.__name__} of")
        return rule(*args, **kwargs)

    def astype(self, dtype, copy=True):
        return Window(self._data.astype(dtype), self._bounds, self._made_at)

    def copy(self):
        return Window(self._data, self._bounds, self._made_at)

    # -- one element of a 1-d window: v[0], v[-1] = ..., as Householder steps write them

    def _position(self, index):
        """The data position of element `index` (a Python or traced int, negative from
        the end). Not checked against the length: an index past it reads or writes the
        array's element there, where NumPy raises IndexError."""
        if self.ndim != 1 or self._lengths[0] is None or isinstance(index, tuple) \
                or not (isinstance(index, (int, np.integer)) and not isinstance(index, bool)
                        or isinstance(index, T.Tracer) and index.ndim == 0
                        and dtypes.is_integer(index.dtype)):
            self._escape("indexing other than one element of a 1-d")
        i = B.convert(T.as_instr(index), dtypes.INDEX)
        start, length = self._bounds[0]
        from_end = B.binary(Op.ADD, B.binary(Op.ADD, start, length), i)
        return B.select(B.compare(i, _ZERO(), "LT"), from_end, B.binary(Op.ADD, start, i))

    def __getitem__(self, index):
        at = self._position(index)
        return T.Tracer(B.reshape(B.dynamic_slice(self._data.instr, [at], (1,)), ()))

    def __setitem__(self, index, value):
        at = self._position(index)
        data = self._data.instr
        v = B.convert(T.as_instr(value), data.dtype)
        if v.shape:
            self._escape("writing an array into one element of")
        here = B.compare(B.iota(data.shape, dtypes.INDEX, 0), B.broadcast_to(at, data.shape),
                         "EQ")
        self._data = T.Tracer(B.select(here, B.broadcast_to(v, data.shape), data))

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
        if keepdims:
            kept = [None if ax in axes else b for ax, b in enumerate(self._bounds)]
        else:
            kept = [b for ax, b in enumerate(self._bounds) if ax not in axes]
        return Window(result, kept, self._made_at) if any(b is not None for b in kept) \
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
    """`x[index]` where some slices of `index` have traced bounds: a Window, or, where
    every such slice has a fixed length inside the array, a plain view of that length."""
    full, windowed = _split(x, index)
    fixed = _fixed_lengths(x, index)
    if fixed is not None:
        target = x[full]
        starts, sizes = _box(target.shape, fixed)
        return target._make_view(
            lambda base: B.dynamic_slice(base, starts, sizes),
            lambda base, new: B.dynamic_update_slice(base, new, starts), "the slice")
    data = T.Tracer(x[full].instr)   # a copy: later writes to x must not reach it
    return Window(data, [windowed.get(d) for d in range(data.ndim)], made_at)


def write(x, index, value):
    """`x[index] = value` where some slices have traced bounds: the region of `x` those
    bounds select takes `value` (a Window of the same lengths, or a value broadcast
    along them), everything else keeps its values."""
    full, windowed = _split(x, index)
    fixed = _fixed_lengths(x, index)
    if fixed is not None and not is_window(value):
        target = x[full]
        starts, sizes = _box(target.shape, fixed)
        v = value if isinstance(value, T.Tracer) else T.Tracer(T.as_instr(value))
        update = B.broadcast_to(B.convert(v.instr, x.dtype), tuple(sizes))
        x[full] = T.Tracer(B.dynamic_update_slice(target.instr, update, starts))
        return
    old = x[full].instr
    if is_window(value):
        if value.ndim != len(old.shape) or any(
                (value._lengths[d] is not windowed[d][1]) if d in windowed
                else value._lengths[d] is not None for d in range(value.ndim)):
            value._escape("writing through other bounds than those of")
        new = B.convert(value._data.instr, x.dtype)
        for dim, (start, _) in windowed.items():   # moved to the target's start
            if value._starts[dim] is not start:
                new = _shift(_shift(new, dim, value._starts[dim], left=True), dim, start,
                             left=False)
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
    region = _valid(old.shape, [windowed.get(d) for d in range(len(old.shape))])
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
        if isinstance(p, slice) and any(_traced(b) for b in (p.start, p.stop)):
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


def _fixed_lengths(x, index):
    """{result dim: (start, length)} where every slice of `index` with traced bounds is
    `start:start + c` for a Python int c, with the start's known range (a loop counter's,
    trace/int_ranges.py) keeping it inside the dim: NumPy's slice has length c whatever
    the start, so it is a dynamic_slice (`X[s:s + batch]` over range(0, n, batch)). None
    where some slice is not so."""
    parts = index if isinstance(index, tuple) else (index,)
    fixed, dim = {}, 0
    for axis, p in enumerate(parts):
        if isinstance(p, slice) and any(_traced(b) for b in (p.start, p.stop)):
            length = _offset(p.start, p.stop)
            n = x.shape[axis]
            lo, hi = p.start._weak if isinstance(p.start, T.Tracer) and type(
                p.start._weak) is tuple else (None, None)
            if p.step not in (None, 1) or length is None or lo is None or hi is None \
                    or lo < 0 or hi + length > n:
                return None
            fixed[dim] = (B.convert(p.start.instr, dtypes.INDEX), length)
        if isinstance(p, slice):
            dim += 1
    return fixed


def _offset(start, stop):
    """c where traced `stop` is `start + c` for a constant c >= 0, else None."""
    if not isinstance(start, T.Tracer) or not isinstance(stop, T.Tracer):
        return None
    add = stop.instr
    if add.op is not Op.ADD or add.shape != () or start.instr not in add.operands:
        return None
    other = add.operands[1] if add.operands[0] is start.instr else add.operands[0]
    if other.op is not Op.CONSTANT:
        return None
    c = other.attrs["value"].array
    if not np.issubdtype(c.dtype, np.integer) or int(c) < 0:
        return None
    return int(c)


def _box(shape, fixed):
    """(starts, sizes) of a dynamic_slice over `shape` taking `fixed`'s dims."""
    starts = [fixed[d][0] if d in fixed else _ZERO() for d in range(len(shape))]
    sizes = [fixed[d][1] if d in fixed else shape[d] for d in range(len(shape))]
    return starts, sizes


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


def _ZERO():   # noqa: N802 - a constant (instructions are interned: one object)
    return B.constant(np.int64(0))


def _valid(shape, bounds):
    """Whether each position of `shape` lies in [start, start + length) along every
    windowed dim (`bounds`: per dim, (start, length) or None)."""
    valid = None
    for dim, b in enumerate(bounds):
        if b is None:
            continue
        at = B.iota(shape, dtypes.INDEX, dim)
        inside = B.compare(at, B.broadcast_to(B.binary(Op.ADD, b[0], b[1]), shape), "LT")
        if b[0] is not _ZERO():
            inside = B.binary(Op.AND, B.compare(at, B.broadcast_to(b[0], shape), "GE"), inside)
        valid = inside if valid is None else B.binary(Op.AND, valid, inside)
    return valid if valid is not None else B.full(True, shape, np.bool_)


def _lined_up(inputs):
    """(inputs, bounds of an elementwise result): windows of one length per dim
    (right-aligned, as broadcasting aligns dims), moved to start 0 where their starts
    differ; an operand that is not a window must have size 1 along windowed dims."""
    inputs = list(inputs)
    shapes = [w._data.shape if is_window(w) else np.shape(w) for w in inputs]
    ndim = max(len(s) for s in shapes)

    def bounds_of():
        out = [None] * ndim
        for w, shape in zip(inputs, shapes):
            for d in range(len(shape)):
                b = w._bounds[d] if is_window(w) else None
                at = ndim - len(shape) + d
                if b is None:
                    continue
                if out[at] is not None and out[at][1] is not b[1]:
                    w._escape("elementwise math between windows whose lengths may differ, "
                              "with")
                if out[at] is not None and out[at][0] is not b[0]:
                    return None
                out[at] = b
        return out

    bounds = bounds_of()
    if bounds is None:   # one length, other starts: every window from 0
        inputs = [w._at_zero() if is_window(w) else w for w in inputs]
        bounds = bounds_of()
    for w, shape in zip(inputs, shapes):
        for d in range(len(shape)):
            at = ndim - len(shape) + d
            if bounds[at] is not None and shape[d] != 1 and not (
                    is_window(w) and w._bounds[d] is not None):
                _window_of(inputs)._escape("elementwise math between an array of static "
                                           "shape and")
    return inputs, bounds


def _window_of(values):
    return next(v for v in values if is_window(v))


def _bounds_of(x):
    return x._bounds if is_window(x) else (None,) * np.ndim(x)


def _matmul(a, b):
    """a @ b with windows: zeros outside them, the contracted bounds alike (moved to
    start 0 where only the starts differ)."""
    w = _window_of((a, b))
    ba, bb = _bounds_of(a), _bounds_of(b)
    if not ba or not bb or len(ba) > 2 or len(bb) > 2:
        w._escape("@ of more than 2-d operands with")
    ca, cb = ba[-1], bb[0 if len(bb) == 1 else -2]
    if (ca is None) != (cb is None) or ca is not None and ca[1] is not cb[1]:
        w._escape("a product whose contracted lengths may differ, with")
    if ca is not None and ca[0] is not cb[0]:
        a, b = a._at_zero(), b._at_zero()
        ba, bb = a._bounds, b._bounds
    out = np.matmul(a._zeroed() if is_window(a) else a, b._zeroed() if is_window(b) else b)
    bounds = list(ba[:-1]) + ([bb[-1]] if len(bb) == 2 else [])
    return Window(out, bounds, w._made_at) if any(x is not None for x in bounds) else out


def _outer(a, b, out=None):
    w = _window_of((a, b))
    if out is not None:
        w._escape("np.outer(..., out=) of")
    ba, bb = _bounds_of(a), _bounds_of(b)
    if len(ba) != 1 or len(bb) != 1:
        w._escape("np.outer of other than 1-d operands with")
    da = a._data if is_window(a) else a
    db = b._data if is_window(b) else b
    return Window(np.outer(da, db), (ba[0], bb[0]), w._made_at)


def _dot(a, b, out=None):
    if out is not None:
        _window_of((a, b))._escape("np.dot(..., out=) of")
    return _matmul(a, b)


def _method(name):
    def call(a, *args, **kwargs):
        return getattr(a, name)(*args, **kwargs)
    return call


def _norm(x, ord=None, axis=None, keepdims=False):   # noqa: A002 - NumPy's name
    """np.linalg.norm of a window: the 2-norm of its elements (the Frobenius norm of a
    2-d one), sqrt(sum(|x|^2)) over the window alone."""
    if ord is not None or axis is not None or keepdims:
        x._escape("np.linalg.norm(..., ord=, axis=, keepdims=) of")
    a = np.abs(x) if dtypes.is_complex(x.dtype) else x
    return np.sqrt((a * a).sum())


_FUNCTIONS = {
    np.linalg.norm: _norm,
    np.outer: _outer, np.dot: _dot, np.matmul: lambda a, b: _matmul(a, b),
    np.sum: _method("sum"), np.mean: _method("mean"), np.max: _method("max"),
    np.min: _method("min"), np.amax: _method("max"), np.amin: _method("min"),
}
