"""An ndarray's data pointer without `ndarray.ctypes`: 0.2 us a read against 1.4 us.

The pointer is a field of the array object itself, `DATA_OFFSET` bytes in, found at
import by comparing probes' words with their `.ctypes.data`; where no offset matches
every probe (another Python or NumPy layout) it is None and `.ctypes.data` is used.
program.py's native driver reads the same field from the objects it is passed.
"""
import ctypes

import numpy as np


def _data_offset():
    """Where an ndarray object keeps its data pointer, in bytes, or None if not found."""
    probes = [np.empty(3), np.empty((2, 5), np.int8)]
    offsets = None
    for a in probes:
        words = (ctypes.c_size_t * 6).from_address(id(a))
        found = {8 * i for i, w in enumerate(words) if w == a.ctypes.data}
        offsets = found if offsets is None else offsets & found
    return min(offsets) if offsets else None


DATA_OFFSET = _data_offset()
_word_at = ctypes.c_size_t.from_address


def data_pointer(a):
    """The address of ndarray `a`'s first element (the caller keeps `a` alive)."""
    if DATA_OFFSET is None:
        return a.ctypes.data
    return _word_at(id(a) + DATA_OFFSET).value
