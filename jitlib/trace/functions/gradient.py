"""np.gradient: central differences inside, one-sided differences at the edges.

NumPy's own formulas, term for term, so rounding matches; the pieces are joined with
a concatenate rather than written into an empty array.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions import joining
from jitlib.trace.functions._common import int_arg, tracer
from jitlib.trace.registry import implements


def _spacings(varargs, f, axes):
    """One spacing per axis: a scalar (uniform) or the 1-D differences of coordinates."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise errors.JitlibTypeError("invalid number of arguments",
                                     hint="pass one spacing, or one per axis")
    return [_axis_spacing(d, f.shape[ax]) for d, ax in zip(varargs, axes)]


def _axis_spacing(distances, length):
    if np.ndim(distances) == 0:
        return distances
    coords = tracer(distances)
    if coords.ndim != 1:
        raise errors.ShapeError("distances must be either scalars or 1d",
                                hint="pass a scalar spacing or a 1-D coordinate array")
    if coords.shape[0] != length:
        raise errors.ShapeError("when 1d, distances must match the length of the "
                                "corresponding dimension", hint="pass one coordinate per point")
    if dtypes.is_integer(coords.dtype):
        coords = tracer(coords, np.float64)
    steps = joining.diff(coords)
    known = steps._known()
    # NumPy turns evenly spaced coordinates into their one step (a value test): decided
    # here when the coordinates are known; traced ones take the general formula, equal
    # to within rounding
    if known is not None and known.size and (known == known[0]).all():
        return steps[0]
    return steps


def _piece(f, axis, start, stop):
    index = [slice(None)] * f.ndim
    index[axis] = slice(start, stop)
    return f[tuple(index)]


def _along(v, axis, ndim):
    """A 1-D spacing array shaped to broadcast along `axis`."""
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def _interior(f, axis, h):
    lo, mid, hi = _piece(f, axis, None, -2), _piece(f, axis, 1, -1), _piece(f, axis, 2, None)
    if np.ndim(h) == 0:
        return (hi - lo) / (2. * h)
    dx1, dx2 = h[0:-1], h[1:]
    a = -(dx2) / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    a, b, c = (_along(v, axis, f.ndim) for v in (a, b, c))
    return a * lo + b * mid + c * hi


def _edges_first_order(f, axis, h):
    uniform = np.ndim(h) == 0
    first = (_piece(f, axis, 1, 2) - _piece(f, axis, 0, 1)) / (h if uniform else h[0])
    last = (_piece(f, axis, -1, None) - _piece(f, axis, -2, -1)) / (h if uniform else h[-1])
    return first, last


def _edges_second_order(f, axis, h):
    if np.ndim(h) == 0:
        a, b, c = -1.5 / h, 2. / h, -0.5 / h
    else:
        dx1, dx2 = h[0], h[1]
        a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
        b = (dx1 + dx2) / (dx1 * dx2)
        c = - dx1 / (dx2 * (dx1 + dx2))
    first = a * _piece(f, axis, 0, 1) + b * _piece(f, axis, 1, 2) + c * _piece(f, axis, 2, 3)
    if np.ndim(h) == 0:
        a, b, c = 0.5 / h, -2. / h, 1.5 / h
    else:
        dx1, dx2 = h[-2], h[-1]
        a = (dx2) / (dx1 * (dx1 + dx2))
        b = - (dx2 + dx1) / (dx1 * dx2)
        c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
    last = (a * _piece(f, axis, -3, -2) + b * _piece(f, axis, -2, -1)
            + c * _piece(f, axis, -1, None))
    return first, last


def _axes(axis, ndim):
    """The axes in the order given (the results follow it), as normalize_axis_tuple."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list)):
        return (T.normalize_axis(axis, ndim),)
    axes = tuple(T.normalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise errors.ShapeError("repeated axis", hint="name each axis once")
    return axes


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's stencils as slices and ufuncs, joined by concatenate."""
    f = tracer(f)
    axes = _axes(axis, f.ndim)
    spacings = _spacings(varargs, f, axes)
    edge_order = int_arg(edge_order, "edge_order")
    if edge_order > 2:
        raise errors.JitlibValueError("'edge_order' greater than 2 not supported",
                                      hint="pass edge_order=1 or 2")
    otype = f.dtype
    if not dtypes.is_float(otype):
        if dtypes.is_integer(otype):
            f = tracer(f, np.float64)
        otype = np.dtype(np.float64)
    outs = []
    for ax, h in zip(axes, spacings):
        if f.shape[ax] < edge_order + 1:
            raise errors.ShapeError(
                "Shape of array too small to calculate a numerical gradient, at least "
                "(edge_order + 1) elements are required.",
                hint="the axis needs edge_order + 1 points")
        edges = _edges_first_order if edge_order == 1 else _edges_second_order
        first, last = edges(f, ax, h)
        parts = [first, _interior(f, ax, h), last]
        parts = [T.Tracer(B.convert(tracer(p).instr, otype)) for p in parts]
        outs.append(joining.concatenate(parts, axis=ax))
    return outs[0] if len(axes) == 1 else tuple(outs)
