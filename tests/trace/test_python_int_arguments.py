"""Python int arguments against narrow integer arrays: what NumPy does with the value.

NumPy 2 (NEP 50) casts a Python int into the array's integer type, raising OverflowError
where it does not fit, except in comparisons (exact: `uint8_array < 300` is all True) and
in np.where / clip's vacuous bounds. A traced Python int's value is unknown, so each call
keys the cache by the range its value lies in (jitlib.trace.context.int_range), which
decides each of these; before, such a value was converted silently (300 as uint8 is 44).
"""
import warnings

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.trace.context import int_range

U8 = np.array([10, 50, 200], np.uint8)
I16 = np.array([-300, 7, 30000], np.int16)


def _outcome(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return fn(*args)
        except OverflowError as e:
            return e


def _same(got, want):
    if isinstance(want, Exception):
        assert isinstance(got, errors.IntegerOverflowError), got
        assert got.hint and ("out of bounds" in got.message or got.message == str(want))
        return
    assert not isinstance(got, Exception), got
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


PROGRAMS = {
    "compare": lambda a, t: (a < t, a >= t, t == a, t != a, np.greater(t, a)),
    "arithmetic": lambda a, t: (a + t, a * t),
    "where": lambda a, t: (np.where(a > 20, t, a),),
    "clip": lambda a, t: (np.clip(a, 0, t), np.clip(a, t, None)),
}


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("array", [U8, I16], ids=["u8", "i16"])
def test_each_range_does_what_numpy_does_with_the_value(name, array):
    fn = PROGRAMS[name]
    jitted = jitlib.jit(fn, backend="interpreter")
    for t in (5, 255, 256, 300, -1, -129, 40000, 2**40, 2**63, -2**40):
        _same(_outcome(jitted, array, t), _outcome(fn, array, t))


def test_the_range_is_part_of_the_signature():
    f = jitlib.jit(lambda a, t: a < t, backend="interpreter")
    f(U8, 3)
    f(U8, 100)     # same range [0, 127]: cached
    f(U8, 300)     # [256, 32767]: compiled again, and exact
    assert f.cache_info().misses == 2 and f.cache_info().hits == 1
    assert int_range(100) == (0, 127) and int_range(300) == (256, 32767)
    assert int_range(-2**70) == (None, -2**63 - 1)
    assert "a Python int in [0, 127] -> [256, 32767]" in f.recompiles()[-1]


def test_floats_and_wide_arrays_are_unaffected():
    f = jitlib.jit(lambda a, t: a * t + 1, backend="interpreter")
    x = np.linspace(0, 1, 4, dtype=np.float32)
    np.testing.assert_array_equal(f(x, 300), x * 300 + 1)
    assert f(x, 300).dtype == np.float32
    i64 = np.arange(4)
    np.testing.assert_array_equal(f(i64, 2**40), i64 * 2**40 + 1)


# Arithmetic on Python int arguments is exact in Python; the trace follows its range
# (jitlib/trace/int_ranges.py) and, where the range cannot decide, keys the ints by value.
DERIVED = {
    "sum": lambda a, t: (a + (t + 200), a - (t - 1)),
    "product": lambda a, t: (a * (t * 3), a < t * 3),
    "cube": lambda a, t: (a.astype(np.int64) + t * t * t,),
    "negate": lambda a, t: (a + (-t), a + abs(t - 100)),
    "divide": lambda a, t: (a + t // 3, a + t % 7, a + (t << 2)),
    "power": lambda a, t: (a + 2 ** (t % 5), a > t ** 2),
    "bounds": lambda a, t: (np.maximum(a, t + 1), np.minimum(a, t - 1)),
}


@pytest.mark.parametrize("name", DERIVED)
@pytest.mark.parametrize("array", [U8, I16], ids=["u8", "i16"])
def test_arithmetic_on_int_arguments_does_what_numpy_does(name, array):
    fn = DERIVED[name]
    jitted = jitlib.jit(fn, backend="interpreter")
    for t in (0, 5, 55, 100, 127, 200, 255, 300, -1, -129, 40000, 2**21, 2**40, -2**40):
        _same(_outcome(jitted, array, t), _outcome(fn, array, t))


def test_a_range_that_cannot_decide_keys_the_ints_by_value():
    i8 = np.array([-5, 0, 100], np.int8)
    f = jitlib.jit(lambda a, t: a + (t + 1), backend="cpu")
    np.testing.assert_array_equal(f(i8, 5), i8 + 6)   # [1, 128] straddles int8's bound
    np.testing.assert_array_equal(f(i8, 6), i8 + 7)   # so each value compiles
    with pytest.raises(errors.IntegerOverflowError, match="128 out of bounds for int8"):
        f(i8, 127)
    assert f.cache_info().misses == 2
    assert any("a Python int =5 -> =6 (keyed by value" in line for line in f.recompiles())
    g = jitlib.jit(lambda a, t: a + (t + 1), backend="cpu")
    g(I16, 5), g(I16, 6)      # [1, 128] fits int16: one program for the range
    assert g.cache_info().misses == 1


def test_python_ints_compare_with_each_other_as_numpy_ints():
    # two Python scalars resolve to NumPy's object loop; traced they are int64
    f = jitlib.jit(lambda a, t: a * (t == 3) + (t < 5), backend="interpreter")
    np.testing.assert_array_equal(f(U8, 3), U8 * 1 + 1)
    np.testing.assert_array_equal(f(U8, 9), U8 * 0)
    g = jitlib.jit(lambda a, t: a + 1 if t > 1000 else a, backend="interpreter")
    with pytest.raises(errors.TracerConversionError):
        g(U8, 3)
