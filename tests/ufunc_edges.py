"""Edge values for checking ufuncs bit for bit: shared by the tests of every backend."""
import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                              np.int64, np.uint64)]


def float_edges(dtype):
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    tiny, least, big = (float(info.smallest_subnormal), float(info.smallest_normal),
                        float(info.max))
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 0.1,
                     -0.7, 1e3, 7.75, -1e-3, least, -least, big, -big, big / 2, 2.0 ** -20,
                     tiny, -tiny, 2 * tiny, 3 * tiny, least / 2, -least / 4]).astype(dtype)


def int_edges(dtype):
    info = np.iinfo(dtype)
    values = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, 2, 3, 6, 12, 18, 35,
              64, 100, info.max // 3]
    if info.min < 0:
        values += [-1, -2, -6, -12, -35, info.min // 3]
    fib = [1, 2]   # consecutive Fibonacci numbers: Euclid's slowest pair
    while fib[-1] + fib[-2] <= info.max:
        fib.append(fib[-1] + fib[-2])
    return np.array(values + fib[-2:], dtype)


def same_bits(got, want, label):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, label
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=label)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(g, w, err_msg=label)
    # the sign of a zero counts; a NaN's is not visible to the IR
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.signbit(g) | nan, np.signbit(w) | nan, err_msg=label)
