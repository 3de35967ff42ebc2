"""The sort op's single-key cases at the speed of NumPy's own unstable sorts.

The sort op is stable with NaN last and -0.0 equal to 0.0 (the interpreter's `_sort`
defines it with np.lexsort's method). NumPy's stable sorts (timsort, radix) run 5-20x
slower than its default quicksort, which on x86 is a vectorized sort; these two
functions get the stable answer out of the unstable sort instead:

- sorted values: an unstable sort is already right except where equal keys have
  different bits: the run of zeros (-0.0 and 0.0) and the NaNs at the end. A stable
  sort leaves those in their original order, so that order is copied back into each
  run (only in the rows that have any).
- the permutation: each key becomes an order-preserving unsigned integer (zeros and
  NaNs made equal first), joined with its position into one u64 (key high, position
  low). The u64s are distinct, so sorting them unstably gives the stable order.

Keys these do not cover (bf16, 64-bit keys for the permutation, axes of 2^32 or more)
return None and the caller takes the general method.
"""
import numpy as np

_NATIVE_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_BITS = {2: np.uint16, 4: np.uint32}


def sorted_values(x, axis):
    """np.sort(x, axis) as a stable sort gives it, or None where not covered."""
    if x.dtype.kind in "biu":
        return np.sort(x, axis)   # equal integers are the same bits: any order is stable
    if x.dtype not in _NATIVE_FLOATS:
        return None
    out = np.sort(x, axis)
    rows, sorted_rows = _rows(x, axis), _rows(out, axis)
    for r in _rows_with_ties(sorted_rows):
        row, dest = rows[r], sorted_rows[r]
        zeros = row[row == 0]
        start = np.searchsorted(dest, zeros.dtype.type(0), side="left")   # NaN last, so the run is found
        dest[start:start + zeros.size] = zeros
        nans = row[np.isnan(row)]
        dest[dest.size - nans.size:] = nans
    if np.may_share_memory(sorted_rows, out):   # the rows were a view: `out` has the fixes
        return out
    return np.ascontiguousarray(
        np.moveaxis(sorted_rows.reshape(_moved_shape(x.shape, axis)), -1, axis))


def _rows_with_ties(sorted_rows):
    """Indices of the sorted rows holding a zero or a NaN: NaNs are last and zeros found
    by bisection, so a few long rows cost no pass over the data; many short rows take
    one vectorized pass instead of a Python loop."""
    if len(sorted_rows) > 256:
        return np.flatnonzero(((sorted_rows == 0) | np.isnan(sorted_rows)).any(axis=1))
    zero = sorted_rows.dtype.type(0)   # a Python 0 would make searchsorted copy the row
    return [r for r, row in enumerate(sorted_rows)
            if np.isnan(row[-1]) or np.searchsorted(row, zero, "left")
            != np.searchsorted(row, zero, "right")]


def stable_argsort(x, axis):
    """np.argsort(x, axis, kind="stable") with NaN last, as int64, or None."""
    n = x.shape[axis]
    key = _order_key(x)
    if key is None or n >= 2 ** 32:
        return None
    position = np.arange(n, dtype=np.uint64).reshape(
        [-1 if d == axis else 1 for d in range(x.ndim)])
    packed = (key.astype(np.uint64) << np.uint64(32)) | position
    packed.sort(axis)
    return (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _order_key(x):
    """Unsigned integers ordered as the sort op orders `x` (NaN last, -0.0 == 0.0), for
    keys of at most 32 bits; None otherwise."""
    dt = x.dtype
    if dt.kind == "b":
        return x.astype(np.uint32)
    if dt.kind in "iu" and dt.itemsize <= 4:
        wide = x.astype(np.int64)
        return (wide - np.iinfo(dt).min).astype(np.uint32) if dt.kind == "i" else wide
    if dt in _NATIVE_FLOATS and dt.itemsize in _BITS:
        uint = _BITS[dt.itemsize]
        sign = uint(1 << (8 * dt.itemsize - 1))
        clean = np.where(x == 0, dt.type(0), x)            # -0.0 sorts as 0.0
        clean = np.where(np.isnan(clean), dt.type(np.nan), clean)   # one NaN, sign clear
        bits = clean.view(uint)
        # negatives: flip every bit (larger magnitude, smaller key); the rest: set the sign
        return np.where(bits & sign, ~bits, bits | sign)
    return None


def _rows(x, axis):
    """`x` with `axis` last, as a 2-D array of rows (a view where NumPy can make one)."""
    return np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])


def _moved_shape(shape, axis):
    return tuple(s for d, s in enumerate(shape) if d != axis) + (shape[axis],)
