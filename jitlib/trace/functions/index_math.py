"""Index arithmetic on traced integer arrays: np.ix_, np.unravel_index and
np.ravel_multi_index, with static dimensions.

The dimensions fix the result's shapes, so they must be known while tracing; the
indices may be traced. A compiled program cannot raise, so out-of-range indices under
NumPy's default mode='raise' are not detected (see docs/numpy_support.md).
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import dtypes
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import apply, static_ints, tracer
from jitlib.trace.registry import implements


@implements(np.ix_)
def ix_(*args):
    """Each 1-d sequence reshaped to its own axis of an open mesh."""
    out = []
    for k, seq in enumerate(args):
        new = seq if isinstance(seq, T.Tracer) else np.asarray(seq)
        if isinstance(new, T.Tracer) and new.dtype == bool and new._known() is not None:
            new = new._known()   # a mask made inside the function: its value is known
        if new.ndim != 1:
            raise errors.JitlibValueError("Cross index must be 1 dimensional",
                                          hint="pass 1-d index arrays to np.ix_")
        if not isinstance(new, T.Tracer):
            if new.size == 0 and not isinstance(seq, np.ndarray):
                new = new.astype(np.intp)   # NumPy: an empty list indexes nothing
            if new.dtype == bool:
                new, = new.nonzero()
        elif new.dtype == bool:
            raise errors.UnsupportedError(
                "np.ix_ of a traced boolean mask: its True count fixes the result's shape",
                hint="pass the mask as a NumPy array (static), or integer indices")
        out.append(tracer(new).reshape((1,) * k + (new.size,) + (1,) * (len(args) - k - 1)))
    return tuple(out)


def _index_array(x, fname):
    x = tracer(x)
    if not dtypes.is_integer(x.dtype) and x.dtype != bool:
        raise errors.JitlibTypeError(f"only int indices permitted in np.{fname}",
                                     hint="convert the indices with .astype(int)")
    return x.astype(np.intp)


def _strides(dims, order):
    """Element strides of an array of shape dims, in C or Fortran order."""
    strides, step = [0] * len(dims), 1
    for d in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        strides[d], step = step, step * dims[d]
    return strides


def _order(order, fname):
    if order not in ("C", "F"):
        raise errors.JitlibValueError(f"np.{fname}: only 'C' or 'F' order is permitted",
                                      hint="pass order='C' or order='F'")
    return order


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    """A tuple of coordinate arrays: flat index // stride % dim along each axis."""
    dims = static_ints(shape if isinstance(shape, (tuple, list)) else (shape,),
                       "np.unravel_index's shape")
    flat = _index_array(indices, "unravel_index")
    strides = _strides(dims, _order(order, "unravel_index"))
    return tuple(apply(np.remainder, apply(np.floor_divide, flat, s), d)
                 for s, d in zip(strides, dims))


def _fit(index, dim, mode):
    if mode == "wrap":
        return apply(np.remainder, index, dim)
    if mode == "clip":
        return np.clip(index, 0, dim - 1)
    if mode == "raise":
        return index   # unchecked: a compiled program cannot raise
    raise errors.JitlibValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' "
                                  f"(got {mode!r})", hint="pass mode='raise', 'wrap' or 'clip'")


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """The flat index: the sum of each coordinate times its axis's stride."""
    dims = static_ints(dims if isinstance(dims, (tuple, list)) else (dims,),
                       "np.ravel_multi_index's dims")
    if len(multi_index) != len(dims):
        raise errors.JitlibValueError(
            f"parameter multi_index must be a sequence of length {len(dims)}",
            hint="pass one index array per dimension")
    modes = mode if isinstance(mode, (tuple, list)) else (mode,) * len(dims)
    strides = _strides(dims, _order(order, "ravel_multi_index"))
    total = None
    for index, d, s, m in zip(multi_index, dims, strides, modes):
        term = apply(np.multiply, _fit(_index_array(index, "ravel_multi_index"), d, m), s)
        total = term if total is None else apply(np.add, total, term)
    return total
