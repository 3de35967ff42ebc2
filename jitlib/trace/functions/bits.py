"""np.unpackbits: each uint8 becomes its eight bits, shifted out and masked."""
import numpy as np

from jitlib import errors
from jitlib.trace.functions._common import int_arg, tracer
from jitlib.trace.registry import implements


@implements(np.unpackbits)
def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """The eight bits of each byte, (a >> shift) & 1, along axis (flat when None).

    count keeps the first `count` bits, pads with zeros past the end, or drops -count."""
    x = tracer(a)
    if x.dtype != np.uint8:
        raise errors.JitlibTypeError("Expected an input array of unsigned byte data type",
                                     hint="pass uint8 data (x.astype(np.uint8))")
    if bitorder not in ("big", "little"):
        raise errors.JitlibValueError("'order' must be either 'little' or 'big'",
                                      hint="pass bitorder='big' or 'little'")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = int_arg(axis, "np.unpackbits' axis") % max(x.ndim, 1)
    moved = np.moveaxis(x, axis, -1)
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    bits = (moved[..., None] >> shifts) & np.uint8(1)
    bits = bits.reshape(moved.shape[:-1] + (moved.shape[-1] * 8,))
    if count is not None:
        count = int_arg(count, "np.unpackbits' count")
        n = bits.shape[-1]
        keep = count if count >= 0 else max(n + count, 0)
        if keep > n:
            pad = np.zeros(bits.shape[:-1] + (keep - n,), np.uint8)
            bits = np.concatenate([bits, pad], axis=-1)
        else:
            bits = bits[..., :keep]
    return np.moveaxis(bits, -1, axis)
