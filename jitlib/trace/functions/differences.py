"""Differences of neighbours: np.ediff1d and np.unwrap, as NumPy computes them."""
import numpy as np

from jitlib import errors
from jitlib.trace.functions._common import tracer
from jitlib.trace.registry import implements


def _edge(values, dtype, what):
    v = tracer(values)
    if not np.can_cast(v.dtype, dtype, casting="same_kind"):
        raise errors.JitlibTypeError(f"dtype of `{what}` must be compatible with input `ary` "
                                     "under the `same_kind` rule.",
                                     hint=f"convert {what} to the array's dtype")
    return v.astype(dtype).reshape(-1)


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with to_begin and to_end around them.

    All in ary's dtype; NumPy refuses edge values not castable under same_kind."""
    flat = tracer(ary).reshape(-1)
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts.insert(0, _edge(to_begin, flat.dtype, "to_begin"))
    if to_end is not None:
        parts.append(_edge(to_end, flat.dtype, "to_end"))
    return parts[0] if len(parts) == 1 else np.concatenate(parts).astype(flat.dtype)


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Jumps over discont folded back by multiples of period, in NumPy's steps.

    np.where stands for NumPy's masked copyto."""
    p = tracer(p)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dd.dtype, period)
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high, boundary_ambiguous = period / 2, True
    interval_low = -interval_high
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        ddmod = np.where((ddmod == interval_low) & (dd > 0), interval_high, ddmod
                         ).astype(ddmod.dtype)
    ph_correct = np.where(np.abs(dd) < discont, 0, ddmod - dd).astype(ddmod.dtype)
    axis = axis % p.ndim
    head = tuple(slice(None) if d != axis else slice(0, 1) for d in range(p.ndim))
    tail = tuple(slice(None) if d != axis else slice(1, None) for d in range(p.ndim))
    rest = (p[tail] + np.cumsum(ph_correct, axis=axis)).astype(dtype)
    return np.concatenate([p[head].astype(dtype), rest], axis=axis)
