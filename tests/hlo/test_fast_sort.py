"""The sort op's fast single-key paths (jitlib/hlo/fast_sort.py) against its definition
(interpreter.lexsort: stable passes of np.argsort), bit for bit, on keys full of ties
that differ in bits: -0.0 and 0.0, NaNs of both signs and several payloads, infinities,
repeated values, along every axis."""
import numpy as np
import pytest

from jitlib.hlo import fast_sort
from jitlib.hlo.interpreter import lexsort

rng = np.random.default_rng(7)


def tricky(dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        pool = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 2.0, 1e-30],
                        dt)
        x = rng.choice(pool, size=shape)
        payload = np.array(np.nan, dt).view(f"u{dt.itemsize}") | 1   # another NaN's bits
        flat = x.reshape(-1)
        flat[::7] = np.array(payload).view(dt)
        return x
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    pool = np.array([info.min, info.max, 0, 1, 1, -1 if dt.kind == "i" else 2, 3], dt)
    return rng.choice(pool, size=shape)


DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "uint8", "uint16",
          "uint32", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((40,), 0), ((6, 33), 1), ((6, 33), 0),
                                        ((3, 4, 17), 1)])
def test_fast_paths_are_the_definition_bit_for_bit(dtype, shape, axis):
    x = tricky(dtype, shape)
    want_values = lexsort([x], axis, indices=False)
    got_values = fast_sort.sorted_values(x, axis)
    assert got_values is not None and got_values.dtype == x.dtype
    np.testing.assert_array_equal(got_values.view(f"u{x.dtype.itemsize}")
                                  if x.dtype.kind == "f" else got_values,
                                  want_values.view(f"u{x.dtype.itemsize}")
                                  if x.dtype.kind == "f" else want_values)
    want_perm = lexsort([x], axis, indices=True)
    got_perm = fast_sort.stable_argsort(x, axis)
    if dtype == "float64":
        assert got_perm is None   # 64-bit keys take the general method
    else:
        np.testing.assert_array_equal(got_perm, want_perm)
        assert got_perm.dtype == np.int64


def test_what_is_not_covered_says_so():
    import ml_dtypes
    x = np.ones(4, ml_dtypes.bfloat16)
    assert fast_sort.sorted_values(x, 0) is None and fast_sort.stable_argsort(x, 0) is None
    assert fast_sort.stable_argsort(np.ones(4, np.int64), 0) is None


def test_a_row_without_ties_is_left_alone_and_eager_numpy_agrees():
    x = rng.standard_normal((5, 1000)).astype(np.float32)
    x[2, 10] = -0.0
    x[2, 11] = 0.0
    x[2, 12] = np.nan
    got = fast_sort.sorted_values(x, 1)
    np.testing.assert_array_equal(got, np.sort(x, axis=1, kind="stable"))
    assert np.signbit(got[2, np.flatnonzero(got[2] == 0)]).tolist() == [True, False]
    np.testing.assert_array_equal(fast_sort.stable_argsort(x, 1),
                                  np.argsort(x, axis=1, kind="stable"))
