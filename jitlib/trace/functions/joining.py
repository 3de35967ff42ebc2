"""Joining and cutting arrays: concatenate, stack, split, pad, repeat, tile, tril, diff."""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions import shapes
from jitlib.trace.functions._common import (
    along_axis, apply, canonical_dtype, contains_tracer, finish, full, given, int_arg,
    static_ints, tracer)
from jitlib.trace.registry import implements


def _arrays(arrays, what):
    if isinstance(arrays, T.Tracer):
        arrays = list(arrays)   # NumPy iterates an array argument along its first axis
    xs = [tracer(a) for a in arrays]
    if not xs:
        raise errors.ShapeError(f"need at least one array to {what}",
                                hint="pass a non-empty sequence of arrays")
    return xs


def _join_dtype(xs, dtype, casting):
    if not given(dtype):
        return dtypes.result_type(*[x.dtype for x in xs])
    dt = canonical_dtype(dtype)
    for x in xs:
        if not np.can_cast(x.dtype, dt, casting):
            raise errors.JitlibTypeError(
                f"Cannot cast array data from {x.dtype!r} to {dt!r} according to the rule "
                f"{casting!r}", hint="convert explicitly with .astype(), or pass casting='unsafe'")
    return dt


def _concat(xs, axis, dtype=None, casting="same_kind"):
    if axis is None:
        xs = [T.Tracer(B.reshape(x.instr, (x.size,))) for x in xs]
        axis = 0
    first = xs[0]
    if first.ndim == 0:
        raise errors.ShapeError("zero-dimensional arrays cannot be concatenated",
                                hint="use np.stack to join scalars, or reshape them to 1-d")
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != first.ndim:
            raise errors.ShapeError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                f"{x.ndim} dimension(s)",
                hint="make the ranks agree first (np.expand_dims, x[None], reshape)")
    ax = T.normalize_axis(axis, first.ndim)
    for i, x in enumerate(xs[1:], 1):
        for d in range(first.ndim):
            if d != ax and x.shape[d] != first.shape[d]:
                raise errors.ShapeError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{first.shape[d]} and the array at index {i} has size {x.shape[d]}",
                    hint="the arrays must agree in every dim but the concatenation axis")
    dt = _join_dtype(xs, dtype, casting)
    return T.Tracer(B.concatenate([B.convert(x.instr, dt) for x in xs], ax))


@implements(np.concatenate)
def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """concatenate (after converting to the promoted dtype); axis=None joins flattened."""
    xs = _arrays(arrays, "concatenate")
    return finish(_concat(xs, axis, dtype, casting), out, "concatenate")


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """reshape each to add the new axis, then concatenate."""
    whole = _stacked_rows(arrays, axis, dtype)
    if whole is not None:
        return finish(whole, out, "stack")
    xs = _arrays(arrays, "stack")
    if any(x.shape != xs[0].shape for x in xs):
        raise errors.ShapeError("all input arrays must have the same shape",
                                hint="np.stack needs arrays of one shape; np.concatenate joins "
                                     "along an existing axis")
    ax = T.normalize_axis(axis, xs[0].ndim + 1)
    shape = xs[0].shape[:ax] + (1,) + xs[0].shape[ax:]
    expanded = [T.Tracer(B.reshape(x.instr, shape)) for x in xs]
    return finish(_concat(expanded, ax, dtype, casting), out, "stack")


def _stacked_rows(arrays, axis, dtype):
    """The rows a captured loop appended (tracer.StackedRow), consecutive, stacked on
    axis 0: that slice of the loop's stacked output, without making a row; else None."""
    if type(arrays) not in (list, tuple) or not arrays or axis != 0 or given(dtype):
        return None
    first = arrays[0]
    if type(first) is not T.StackedRow:
        return None
    stack, row = first.stack, first.row
    for k, x in enumerate(arrays):
        if type(x) is not T.StackedRow or x.stack is not stack or x.row != row + k \
                or not x.as_stacked():
            return None
    start = (row,) + (0,) * (stack.ndim - 1)
    return T.Tracer(B.slice(stack, start, (row + len(arrays),) + stack.shape[1:]))


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """concatenate along axis 1 (axis 0 for 1-d inputs)."""
    xs = [shapes.atleast_1d(a) for a in _arrays(tup, "concatenate")]
    return _concat(xs, 0 if xs[0].ndim == 1 else 1, dtype, casting)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """concatenate along axis 0 of the inputs made at least 2-d."""
    xs = [shapes.atleast_2d(a) for a in _arrays(tup, "concatenate")]
    return _concat(xs, 0, dtype, casting)


@implements(np.dstack)
def dstack(tup):
    """concatenate along axis 2 of the inputs made at least 3-d."""
    xs = [shapes.atleast_3d(a) for a in _arrays(tup, "concatenate")]
    return _concat(xs, 2)


@implements(np.column_stack)
def column_stack(tup):
    """concatenate along axis 1; 1-d inputs become columns."""
    xs = []
    for x in _arrays(tup, "concatenate"):
        if x.ndim < 2:
            x = T.Tracer(B.reshape(x.instr, (x.size, 1)))
        xs.append(x)
    return _concat(xs, 1)


@implements(np.append)
def append(arr, values, axis=None):
    """concatenate (flattened when axis is None)."""
    return _concat([tracer(arr), tracer(values)], axis)


# -- splitting: the pieces are views, as in NumPy

def _split_points(n, indices_or_sections):
    if isinstance(indices_or_sections, (list, tuple, np.ndarray, T.Tracer)):
        points = static_ints(indices_or_sections, "split indices")
        return [0] + list(points) + [n]
    sections = int_arg(indices_or_sections, "the number of sections")
    if sections <= 0:
        raise errors.ShapeError("number sections must be larger than 0.",
                                hint="pass a positive number of sections")
    each, extras = divmod(n, sections)
    sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
    return list(np.cumsum(sizes))


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """slice views between static split points (sections may be unequal)."""
    x = tracer(ary)
    ax = T.normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    points = _split_points(n, indices_or_sections)
    pieces = []
    for st, end in zip(points[:-1], points[1:]):
        start, stop, _ = slice(int(st), int(end)).indices(n)
        pieces.append(shapes.axis_slice(x, ax, start, max(stop, start)))
    return pieces


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    """slice views between static split points (sections must divide the axis)."""
    x = tracer(ary)
    if not isinstance(indices_or_sections, (list, tuple, np.ndarray, T.Tracer)):
        sections = int_arg(indices_or_sections, "the number of sections")
        n = x.shape[T.normalize_axis(axis, x.ndim)]
        if sections > 0 and n % sections:
            raise errors.ShapeError("array split does not result in an equal division",
                                    hint="use np.array_split for unequal pieces")
    return array_split(x, indices_or_sections, axis)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    """split along axis 1 (axis 0 for 1-d arrays)."""
    x = tracer(ary)
    if x.ndim == 0:
        raise errors.ShapeError("hsplit only works on arrays of 1 or more dimensions",
                                hint="use np.split with an explicit axis")
    return split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    """split along axis 0 of an array of 2 or more dims."""
    x = tracer(ary)
    if x.ndim < 2:
        raise errors.ShapeError("vsplit only works on arrays of 2 or more dimensions",
                                hint="use np.split with an explicit axis")
    return split(x, indices_or_sections, 0)


# -- triangles

def _triangle(m, k, keep_lower):
    x = tracer(m)
    if x.ndim == 0:
        raise errors.ShapeError("tril/triu need an array of at least 1 dimension",
                                hint="pass an array of at least 1 dimension")
    rows, cols = x.shape[-2:] if x.ndim >= 2 else (x.shape[-1], x.shape[-1])
    k = int_arg(k, "the diagonal offset k")
    offset = B.binary(Op.SUB, B.iota((rows, cols), dtypes.INDEX, 1),
                      B.iota((rows, cols), dtypes.INDEX, 0))
    keep = B.compare(offset, full(k, (rows, cols), dtypes.INDEX), "LE" if keep_lower else "GE")
    shape = T.broadcast_shapes(x.shape, (rows, cols))
    v = T.broadcast(x.instr, shape)
    return T.Tracer(B.select(T.broadcast(keep, shape), v, full(0, shape, v.dtype)))


@implements(np.tril)
def tril(m, k=0):
    """select on an iota comparison: keeps j <= i + k of the last two dims."""
    return _triangle(m, k, True)


@implements(np.triu)
def triu(m, k=0):
    """select on an iota comparison: keeps j >= i + k of the last two dims."""
    return _triangle(m, k, False)


# -- padding

_INDEX_MODES = ("edge", "wrap", "reflect", "symmetric")


def _pairs(value, ndim, what):
    try:
        return np.broadcast_to(np.asarray(value), (ndim, 2))
    except ValueError:
        raise errors.ShapeError(f"{what} {value!r} cannot be broadcast to ({ndim}, 2)",
                                hint="give one (before, after) pair, or one per axis") from None


def _pad_value(value, dtype):
    if isinstance(value, T.Tracer):
        return B.convert(value.instr, dtype)
    return B.constant(np.asarray(value).astype(dtype))


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """pad for mode='constant'; a gather of static indices for edge/wrap/reflect/symmetric."""
    x = tracer(array)
    if x.ndim == 0:
        return T.Tracer(x.instr)
    if contains_tracer(pad_width):
        raise errors.UnsupportedError("np.pad with a traced pad_width is not supported: the "
                                      "result's shape would depend on the data",
                                      hint="pass pad widths as Python ints")
    widths = np.round(_pairs(pad_width, x.ndim, "pad_width")).astype(dtypes.INDEX)
    if (widths < 0).any():
        raise errors.ShapeError("index can't contain negative values",
                                hint="pad widths must be >= 0; crop with slicing instead")
    if mode == "constant":
        values = kwargs.pop("constant_values", 0)
        _no_more(kwargs, mode)
        return _pad_constant(x, widths, values)
    if mode in _INDEX_MODES:
        v = x.instr
        for ax, (before, after) in enumerate(widths):
            if before or after:
                try:
                    idx = np.pad(np.arange(x.shape[ax]), (before, after), mode, **kwargs)
                except ValueError as e:
                    raise errors.ShapeError(
                        str(e), hint="use mode='constant' to pad an empty axis") from None
                if kwargs.get("reflect_type", "even") != "even":
                    raise errors.UnsupportedError("np.pad with reflect_type='odd' is not "
                                                  "supported inside jit",
                                                  hint="use reflect_type='even' (the default)")
                v = B.gather(v, B.constant(idx.astype(dtypes.INDEX)), ax)
        return T.Tracer(v)
    raise errors.UnsupportedError(
        f"np.pad with mode={mode!r} is not supported inside jit",
        hint="supported modes: 'constant', " + ", ".join(repr(m) for m in _INDEX_MODES))


def _no_more(kwargs, mode):
    if kwargs:
        raise errors.JitlibTypeError(f"unsupported keyword arguments for mode '{mode}': "
                                     f"{set(kwargs)}",
                                     hint="drop the keyword arguments this mode does not take")


def _pad_constant(x, widths, values):
    zeros = [0] * x.ndim
    if isinstance(values, T.Tracer):
        if values.ndim != 0:
            raise errors.UnsupportedError("np.pad with traced per-axis constant_values is not "
                                          "supported", hint="pass a traced scalar")
        low, high = list(widths[:, 0]), list(widths[:, 1])
        return T.Tracer(B.pad(x.instr, _pad_value(values, x.dtype), low, high))
    pairs = _pairs(values, x.ndim, "constant_values")
    if (pairs == pairs.flat[0]).all():
        return T.Tracer(B.pad(x.instr, _pad_value(pairs.flat[0], x.dtype), list(widths[:, 0]),
                              list(widths[:, 1])))
    # NumPy fills axis by axis, so later axes own the corners
    v = x.instr
    for ax in range(x.ndim):
        low, high = list(zeros), list(zeros)
        low[ax], high[ax] = widths[ax]
        v = B.pad(v, _pad_value(pairs[ax, 0], x.dtype), low, zeros)
        v = B.pad(v, _pad_value(pairs[ax, 1], x.dtype), zeros, high)
    return T.Tracer(v)


# -- repetition

@implements(np.repeat)
def repeat(a, repeats, axis=None):
    """broadcast_in_dim + reshape for a uniform count, else a gather of static indices."""
    x = tracer(a)
    v, ax = along_axis(x, axis)
    if isinstance(repeats, T.Tracer) or (isinstance(repeats, (list, tuple))
                                         and any(isinstance(r, T.Tracer) for r in repeats)):
        raise errors.UnsupportedError(
            "np.repeat with traced repeats is not supported: the result's shape would "
            "depend on the data", hint="pass the repeat counts as Python ints")
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iub":
        raise errors.JitlibTypeError("repeats must be integers", hint="pass integer repeat counts")
    if (counts < 0).any():
        raise errors.ShapeError("repeats may not contain negative values.",
                                hint="repeat counts must be >= 0")
    n = v.shape[ax]
    if counts.size == 1:
        r = int(counts.reshape(()))
        wide = v.shape[:ax + 1] + (r,) + v.shape[ax + 1:]
        dims = [d for d in range(len(wide)) if d != ax + 1]
        spread = B.broadcast_in_dim(v, wide, dims)
        return T.Tracer(B.reshape(spread, v.shape[:ax] + (n * r,) + v.shape[ax + 1:]))
    if counts.shape != (n,):
        raise errors.ShapeError(f"operands could not be broadcast together with shape ({n},) "
                                f"{counts.shape}",
                                hint="pass one count, or one per element along the axis")
    idx = np.repeat(np.arange(n, dtype=dtypes.INDEX), counts)
    return T.Tracer(B.gather(v, B.constant(idx), ax))


@implements(np.tile)
def tile(A, reps):
    """broadcast_in_dim + reshape: each dim d becomes reps[d] copies."""
    x = tracer(A)
    reps = (int_arg(reps, "reps"),) if np.ndim(reps) == 0 else static_ints(reps, "reps")
    ndim = max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    shape = (1,) * (ndim - x.ndim) + x.shape
    v = B.reshape(x.instr, shape)
    wide = [n for pair in zip(reps, shape) for n in pair]
    spread = B.broadcast_in_dim(v, wide, range(1, 2 * ndim, 2))
    return T.Tracer(B.reshape(spread, [r * s for r, s in zip(reps, shape)]))


# -- differences

@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """slices and subtract (not_equal on bool), n times."""
    x = tracer(a)
    n = int_arg(n, "diff's n")
    if n < 0:
        raise errors.ShapeError(f"order must be non-negative but got {n}", hint="pass n >= 0")
    if n == 0:
        return x
    if x.ndim == 0:
        raise errors.ShapeError("diff requires input that is at least one dimensional",
                                hint="pass an array of at least 1 dimension")
    ax = T.normalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        e = tracer(extra)
        if e.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            e = T.Tracer(T.broadcast(e.instr, shape))
        parts.append(e)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    if len(pieces) > 1:
        x = _concat(pieces, ax)
    op = np.not_equal if dtypes.is_bool(x.dtype) else np.subtract
    for _ in range(n):
        length = x.shape[ax]
        hi = shapes.axis_slice(x, ax, min(1, length), length)
        lo = shapes.axis_slice(x, ax, 0, max(length - 1, 0))
        x = apply(op, T.Tracer(hi.instr), T.Tracer(lo.instr))
    return x
