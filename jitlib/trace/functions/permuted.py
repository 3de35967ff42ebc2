"""Functions that only move elements around, with static positions: np.delete,
np.insert, np.block and sliding_window_view.

NumPy itself decides where each element goes: the same call runs eagerly on arrays of
*positions* (0, 1, 2... for the first operand's elements, the next numbers for the
next operand's), and the trace gathers the operands' flattened values by the positions
that come out. Every rule (negative and repeated indices, boolean masks, broadcasting
inserted values, nesting depth in np.block) and every error is NumPy's own.
"""
import numpy as np

from jitlib import errors
from jitlib.hlo import build as B
from jitlib.hlo import dtypes
from jitlib.hlo.ops import Op
from jitlib.trace import tracer as T
from jitlib.trace.functions._common import (
    contains_tracer, index_constant, read_only, tracer, view)
from jitlib.trace.registry import implements


def _positions(shapes):
    """An int array of each shape, numbering all their elements in order."""
    out, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(np.arange(start, start + size, dtype=np.int64).reshape(shape))
        start += size
    return out


def _gather(values, where, dtype):
    """The elements at `where` (a NumPy int array) of the values laid end to end."""
    flat = [B.reshape(B.convert(v.instr, dtype), (v.size,)) for v in values]
    joined = flat[0] if len(flat) == 1 else B.concatenate(flat, 0)
    picked = B.gather(joined, index_constant(where.reshape(-1)), 0)
    return T.Tracer(B.reshape(picked, where.shape))


def _static_positions(obj, fname):
    if contains_tracer(obj):
        raise errors.UnsupportedError(
            f"np.{fname} with traced positions: the result's shape would depend on them",
            hint="pass the positions as Python ints, slices or NumPy arrays (static)")
    return obj


@implements(np.delete)
def delete(arr, obj, axis=None):
    """np.delete with static positions."""
    x = tracer(arr)
    where = np.delete(_positions([x.shape])[0], _static_positions(obj, "delete"), axis)
    return _gather([x], where, x.dtype)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """np.insert with static positions; values cast to arr's dtype, as NumPy's."""
    x, v = tracer(arr), tracer(values)
    where, inserted = _positions([x.shape, v.shape])
    # NumPy casts values to arr's dtype: int64 positions keep theirs
    where = np.insert(where, _static_positions(obj, "insert"), inserted, axis)
    return _gather([x, v], where, x.dtype)


def _leaves(arrays, depth=0):
    if isinstance(arrays, list):
        return [leaf for a in arrays for leaf in _leaves(a, depth + 1)]
    return [arrays]


def _replace(arrays, positions):
    if isinstance(arrays, list):
        return [_replace(a, positions) for a in arrays]
    return next(positions)


@implements(np.block)
def block(arrays):
    """np.block: NumPy assembles the blocks' positions, in the result dtype of all."""
    leaves = [tracer(leaf) for leaf in _leaves(arrays)]
    dt = dtypes.canonicalize(np.result_type(*(leaf.dtype for leaf in leaves)))
    where = np.block(_replace(arrays, iter(_positions([leaf.shape for leaf in leaves]))))
    return _gather(leaves, np.asarray(where), dt)


@implements(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """Every window of a static shape: a read-only view, as NumPy's by default."""
    if writeable:
        raise errors.UnsupportedError(
            "sliding_window_view(writeable=True): the windows overlap, so one write would "
            "reach several windows", hint="take a .copy() of the windows and write into it")
    x = x if isinstance(x, T.Tracer) else tracer(x)
    where = np.lib.stride_tricks.sliding_window_view(_positions([x.shape])[0], window_shape,
                                                     axis)

    def derive(instr):
        flat = B.reshape(instr, (x.size,))
        return B.gather(flat, _strided_positions(where), 0)
    return view(x, derive, read_only("sliding_window_view's windows"))


def _strided_positions(where):
    """The positions a strided view of `_positions` holds, as IR: each is an affine
    function of its index (offset + sum of index_d * stride_d), so iotas give them where
    a constant would hold one int64 per element (a million windows of 16 were a 128 MB
    constant, hashed, folded and read by the kernel: 4.7 s to the first call)."""
    if where.size == 0:
        return index_constant(np.zeros(where.shape, np.int64))
    positions = index_constant(int(where[(0,) * where.ndim]))
    positions = B.broadcast_in_dim(positions, where.shape, ())
    for d, stride in enumerate(where.strides):
        step = stride // where.itemsize
        if where.shape[d] > 1 and step:
            along = B.iota(where.shape, dtypes.INDEX, d)
            if step != 1:
                along = B.binary(Op.MUL, along, B.broadcast_in_dim(
                    index_constant(step), where.shape, ()))
            positions = B.binary(Op.ADD, positions, along)
    return positions
