"""Shape functions: reshape, transpose, squeeze, broadcast_to, flip, roll, ...

Where NumPy returns a view, so do we: the result re-derives its value when the
array it views is written, and writes through it land in that array (through
the inverse movement). NumPy's read-only views (broadcast_to, diagonal) refuse
writes. reshape/ravel are views only where NumPy's are: of C-contiguous arrays.
"""
import weakref

import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import (
    apply, index_constant, int_arg, read_only, shape_arg, since, tracer, view)
from jitlib.trace.registry import implements

# Views known to be C-contiguous (as NumPy lays them out), by id; a base array always
# is. (Tracers are unhashable, like ndarrays; a dead view's entry goes with it.)
_CONTIGUOUS = weakref.WeakValueDictionary()


def _is_contiguous(x):
    return isinstance(x, T.Tracer) and (x._base is None or _CONTIGUOUS.get(id(x)) is x)


def _contiguous_view(x, derive, write, what, contiguous):
    y = view(x, derive, write, what)
    if contiguous and isinstance(x, T.Tracer):
        _CONTIGUOUS[id(y)] = y
    return y


# -- reshape

def _resolve_shape(size, shape):
    shape = list(shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise errors.ShapeError("can only specify one unknown dimension",
                                hint="use -1 for at most one dim")
    if any(d < -1 for d in shape):
        raise errors.ShapeError("negative dimensions not allowed",
                                hint="dims must be >= 0, or -1 for one inferred dim")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise errors.ShapeError(
                f"cannot reshape array of size {size} into shape {tuple(shape)}",
                hint="the known dims must divide the array's size")
        shape[unknown[0]] = size // known
    elif known != size:
        raise errors.ShapeError(f"cannot reshape array of size {size} into shape {tuple(shape)}",
                                hint="the new shape must have as many elements as the array")
    return tuple(shape)


def _only_unit_dims_change(old, new):
    return [d for d in old if d != 1] == [d for d in new if d != 1]


def _guarded(x, derive, what):
    """A result NumPy may or may not have copied: exact unless `x` changes afterwards."""
    first = x.instr

    def derive_once(base):
        if base is not first:
            raise errors.UnsupportedError(
                f"{what} of a non-contiguous view is read after the array it views was "
                "written: NumPy copies or views here depending on memory layout, which "
                "jitlib does not track", hint="add .copy() where you want a copy")
        return derive(base)

    def write(base, new):
        raise errors.UnsupportedError(
            f"writing into {what} of a non-contiguous view is not supported: NumPy may "
            "have returned a copy", hint="write into the original array instead")
    return x._make_view(derive_once, write, what)


def reshape_view(x, shape, what="a reshape"):
    """`x` reshaped to `shape` (already resolved), a view where NumPy's would be."""
    shape = tuple(shape)
    if not isinstance(x, T.Tracer):
        return T.Tracer(B.reshape(tracer(x).instr, shape))

    def derive(base):
        return B.reshape(base, shape)

    if _is_contiguous(x) or _only_unit_dims_change(x.shape, shape):
        return _contiguous_view(x, derive, lambda base, new: B.reshape(new, base.shape), what,
                                _is_contiguous(x))
    return _guarded(x, derive, what)


def _check_order(x, order, fname):
    # 'A' and 'K' follow the memory layout, which is C order only for contiguous arrays
    if order == "C" or (order in ("A", "K") and (_is_contiguous(x) or x.ndim <= 1)):
        return
    raise errors.UnsupportedError(
        f"{fname} with order={order!r} is not supported inside jit"
        + ("" if order in ("F", "A", "K") else ": not a valid order"),
        hint="only C order (the default) is traced; for Fortran order, transpose first")


@implements(np.reshape)
def reshape(a, *args, shape=None, order="C", newshape=None, copy=None):
    """reshape (a view of contiguous arrays, as in NumPy); -1 infers one dim; order='C'."""
    args = list(args)
    if args and isinstance(args[-1], str):
        order = args.pop()
    if args:
        shape = args[0] if len(args) == 1 else tuple(args)
    elif shape is None:
        shape = newshape
    if shape is None:
        raise errors.JitlibTypeError("reshape() missing required argument 'shape'",
                                     hint="x.reshape(new_shape)")
    x = tracer(a)
    _check_order(x, order, "reshape")
    new = _resolve_shape(x.size, shape_arg(shape))
    if copy:
        return T.Tracer(B.reshape(x.instr, new))
    return reshape_view(x, new)


@implements(np.ravel)
def ravel(a, order="C"):
    """reshape to 1-d (a view of contiguous arrays, as in NumPy); order='C'."""
    x = tracer(a)
    _check_order(x, order, "ravel")
    return reshape_view(x, (x.size,), "a ravel")


@implements(name="flatten")
def flatten(a, order="C"):
    """reshape to 1-d, always a copy (ndarray.flatten)."""
    x = tracer(a)
    _check_order(x, order, "flatten")
    return T.Tracer(B.reshape(x.instr, (x.size,)))


# -- axis permutations

def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


def permuted(x, perm, what="a transpose"):
    """The transpose view of `x` with output dim i = input dim perm[i]."""
    perm = tuple(perm)
    x = tracer(x)
    moved = [p for p in perm if x.shape[p] != 1]
    contiguous = _is_contiguous(x) and moved == sorted(moved)
    return _contiguous_view(x, lambda base: B.transpose(base, perm),
                            lambda base, new: B.transpose(new, _inverse(perm)), what,
                            contiguous)


@implements(np.transpose, np.permute_dims)
def transpose(a, *axes):
    """transpose (a view): reverses the dims, or permutes them by axes."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    x = tracer(a)
    if axes is None or axes == ():
        perm = tuple(reversed(range(x.ndim)))
    else:
        perm = tuple(T.normalize_axis(ax, x.ndim) for ax in axes)
        if len(perm) != x.ndim or len(set(perm)) != x.ndim:
            raise errors.ShapeError("axes don't match array",
                                    hint="pass a permutation of range(x.ndim)")
    return permuted(x, perm)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    """transpose (a view) exchanging two dims."""
    x = tracer(a)
    i, j = T.normalize_axis(axis1, x.ndim), T.normalize_axis(axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[i], perm[j] = j, i
    return permuted(x, perm, "a swapaxes view")


@implements(*since("matrix_transpose"), name="matrix_transpose")
def matrix_transpose(x, /):
    """transpose (a view) of the last two dims."""
    x = tracer(x)
    if x.ndim < 2:
        raise errors.ShapeError("Input array must be at least 2-dimensional",
                                hint="pass an array of at least 2 dimensions")
    return swapaxes(x, -1, -2)


def _axis_list(axis, ndim):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = [T.normalize_axis(a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise errors.ShapeError("repeated axis", hint="name each axis once")
    return out


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    """transpose (a view) moving dims to new positions."""
    x = tracer(a)
    src, dst = _axis_list(source, x.ndim), _axis_list(destination, x.ndim)
    if len(src) != len(dst):
        raise errors.ShapeError("`source` and `destination` arguments must have the same "
                                "number of elements", hint="pass as many destinations as sources")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permuted(x, order, "a moveaxis view")


# -- adding and removing unit dims

@implements(np.expand_dims)
def expand_dims(a, axis):
    """reshape (a view) inserting size-1 dims at axis (an int or a tuple)."""
    x = tracer(a)
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(axis)
    axes = _axis_list(axis, x.ndim + n_new)
    dims = iter(x.shape)
    shape = [1 if i in axes else next(dims) for i in range(x.ndim + n_new)]
    return reshape_view(x, shape, "an expand_dims view")


@implements(np.squeeze)
def squeeze(a, axis=None):
    """reshape (a view) dropping size-1 dims (all of them, or those named by axis)."""
    x = tracer(a)
    if axis is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = _axis_list(axis, x.ndim)
        if any(x.shape[i] != 1 for i in axes):
            raise errors.ShapeError("cannot select an axis to squeeze out which has size not "
                                    "equal to one", hint="only size-1 dims can be squeezed")
    shape = [d for i, d in enumerate(x.shape) if i not in axes]
    return reshape_view(x, shape, "a squeeze view")


def _atleast(arys, ndim, place):
    out = []
    for a in arys:
        x = tracer(a)
        out.append(x if x.ndim >= ndim else reshape_view(x, place(x.shape), "an atleast view"))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_1d)
def atleast_1d(*arys):
    """reshape (a view) of 0-d arrays to 1-d."""
    return _atleast(arys, 1, lambda s: (1,))


@implements(np.atleast_2d)
def atleast_2d(*arys):
    """reshape (a view) to at least 2-d: (n,) -> (1, n)."""
    return _atleast(arys, 2, lambda s: (1,) * (2 - len(s)) + s)


@implements(np.atleast_3d)
def atleast_3d(*arys):
    """reshape (a view) to at least 3-d: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    shapes = {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,), 2: lambda s: s + (1,)}
    return _atleast(arys, 3, lambda s: shapes[len(s)](s))


# -- broadcasting

def _broadcast_view(x, shape):
    x = tracer(x)
    if len(shape) < x.ndim:
        raise errors.ShapeError("input operand has more dimensions than allowed by the axis "
                                "remapping",
                                hint="the target shape needs at least as many dims as the array")
    if T.broadcast_shapes(x.shape, shape) != shape:
        raise errors.ShapeError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {x.shape} and requested shape {shape}",
            hint="each dim must be 1 or equal to the target's (trailing dims align)")
    return view(x, lambda base: T.broadcast(base, shape), read_only("a broadcast_to view"),
                "a broadcast_to view")


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """broadcast_in_dim (a read-only view, as in NumPy)."""
    return _broadcast_view(array, shape_arg(shape))


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    """broadcast_in_dim of each argument to their common shape (read-only views)."""
    xs = [tracer(a) for a in args]
    shape = T.broadcast_shapes(*[x.shape for x in xs])
    if all(x.shape == shape for x in xs):
        return tuple(xs)
    return tuple(_broadcast_view(x, shape) for x in xs)


@implements(np.broadcast_shapes)
def broadcast_shapes(*shapes):
    """Static: the broadcast shape (a tuple)."""
    return T.broadcast_shapes(*[shape_arg(s) for s in shapes])


# -- reversing and rolling

@implements(np.flip)
def flip(m, axis=None):
    """reverse (a view) of the dims named by axis (all when None)."""
    x = tracer(m)
    dims = T.normalize_axes(axis, x.ndim)
    return view(x, lambda base: B.reverse(base, dims), lambda base, new: B.reverse(new, dims),
                "a flip view")


@implements(np.fliplr)
def fliplr(m):
    """reverse (a view) of dim 1."""
    x = tracer(m)
    if x.ndim < 2:
        raise errors.ShapeError("Input must be >= 2-d.",
                                hint="pass an array of at least 2 dimensions")
    return flip(x, 1)


@implements(np.flipud)
def flipud(m):
    """reverse (a view) of dim 0."""
    x = tracer(m)
    if x.ndim < 1:
        raise errors.ShapeError("Input must be >= 1-d.",
                                hint="pass an array of at least 1 dimension")
    return flip(x, 0)


def _roll_axis(v, shift, ax):
    n = v.shape[ax]
    if n == 0:
        return v
    if isinstance(shift, T.Tracer):
        # out[i] = x[(i - shift) mod n]: one gather with traced indices
        idx = apply(np.remainder, apply(np.subtract, np.arange(n), shift), n)
        return B.gather(v, B.convert(idx.instr, np.int64), ax)
    shift %= n
    if shift == 0:
        return v
    start = [0] * v.ndim
    head_start = list(start)
    head_start[ax] = n - shift
    tail_limit = list(v.shape)
    tail_limit[ax] = n - shift
    return B.concatenate([B.slice(v, head_start, v.shape), B.slice(v, start, tail_limit)], ax)


def _shift_arg(shift):
    if isinstance(shift, T.Tracer):
        if shift.ndim != 0:
            raise errors.UnsupportedError("np.roll with a traced array of shifts is not "
                                          "supported", hint="roll one axis at a time")
        return shift
    return int_arg(shift, "a roll shift")


@implements(np.roll)
def roll(a, shift, axis=None):
    """slice + concatenate per axis (a gather for a traced shift); axis=None rolls flat."""
    x = tracer(a)
    if axis is None:
        flat = roll(T.Tracer(B.reshape(x.instr, (x.size,))), shift, 0)
        return T.Tracer(B.reshape(flat.instr, x.shape))
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise errors.ShapeError("'shift' and 'axis' should be scalars or 1D sequences",
                                hint="pass one shift per axis")
    v = x.instr
    for s, ax in zip(shifts, axes):
        v = _roll_axis(v, _shift_arg(s), T.normalize_axis(ax, x.ndim))
    return T.Tracer(v)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """flip and transpose (a view), as NumPy composes them."""
    x = tracer(m)
    if len(axes) != 2:
        raise errors.ShapeError("len(axes) must be 2.", hint="pass axes=(a, b)")
    a0, a1 = T.normalize_axis(axes[0], x.ndim), T.normalize_axis(axes[1], x.ndim)
    if a0 == a1:
        raise errors.ShapeError("Axes must be different.", hint="pass two different axes")
    k = int_arg(k, "rot90's k") % 4
    if k == 0:
        return permuted(x, range(x.ndim), "a rot90 view")
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return permuted(flip(x, a1), perm)
    return flip(permuted(x, perm), a1)


# -- slicing along one axis (split, unstack)

def axis_slice(x, axis, start, stop, drop_axis=False, what="a split view"):
    """x[..., start:stop, ...] along `axis` as a writable view (x[..., start] if drop_axis)."""
    x = tracer(x)
    lo = [0] * x.ndim
    lo[axis] = start
    hi = list(x.shape)
    hi[axis] = stop
    part = list(x.shape)
    part[axis] = stop - start
    out_shape = part[:axis] + part[axis + 1:] if drop_axis else part

    def derive(base):
        return B.reshape(B.slice(base, lo, hi), out_shape)

    def write(base, new):
        starts = [index_constant(s) for s in lo]
        return B.dynamic_update_slice(base, B.reshape(new, part), starts)
    contiguous = _is_contiguous(x) and all(d == 1 for d in x.shape[:axis])
    return _contiguous_view(x, derive, write, what, contiguous)


@implements(*since("unstack"), name="unstack")
def unstack(x, /, *, axis=0):
    """slice (writable views) of each position along axis."""
    x = tracer(x)
    if x.ndim == 0:
        raise errors.ShapeError("Input array must be at least 1-d.",
                                hint="pass an array of at least 1 dimension")
    ax = T.normalize_axis(axis, x.ndim)
    return tuple(axis_slice(x, ax, i, i + 1, True, "an unstack view") for i in range(x.shape[ax]))
