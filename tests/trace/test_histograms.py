"""Histograms and scatters inside jit (issue 23, part 4) equal eager NumPy.

ufunc.at, bincount, digitize, histogram and histogram2d run through `check_backends`
on the interpreter, cpu and jax backends. Counts are integers and must be exact; float
sums follow NumPy's order (index order) on the interpreter and cpu, so those are
compared exactly too; jax's scatter keeps no promised order, so it gets a tolerance.
"""
import warnings

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.testing import check_backends

F32, F64, I8, I32, I64 = np.float32, np.float64, np.int8, np.int32, np.int64


def check(fn, *args, exact=True, **kwargs):
    """Every backend against eager NumPy; interpreter and cpu bit for bit when `exact`."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tol = dict(rtol=0, atol=0) if exact else {}
        expected = check_backends(fn, *args, backends=("interpreter", "cpu"), **tol, **kwargs)
        check_backends(fn, *args, backends=("jax",), **kwargs)
    return expected


def rand(*shape, dtype=F64, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def ints(n, high, low=0, seed=1, dtype=I64):
    return np.random.default_rng(seed).integers(low, high, n).astype(dtype)


def raises_like_numpy(fn, *args, match=None):
    """`fn` raises the same exception type eagerly and under jit, and jit's names this
    file (the user's line)."""
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(type(eager.value), match=match) as traced:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert isinstance(traced.value, errors.JitlibError)
    assert "test_histograms.py" in str(traced.value)


def refused(fn, *args, match=None):
    with pytest.raises(errors.UnsupportedError, match=match) as info:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert "test_histograms.py" in str(info.value) and "hint:" in str(info.value)
    return info.value


# -- ufunc.at: each index in order, repeated indices combine

AT_UFUNCS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum]


@pytest.mark.parametrize("ufunc", AT_UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [F64, F32, I64, I32, I8, np.uint8])
def test_ufunc_at_with_repeated_and_negative_indices(ufunc, dtype):
    def f(x, i, v):
        ufunc.at(x, i, v)
        return x
    x = (rand(7, seed=2) * 5).astype(dtype)
    v = (rand(40, seed=3) * 5).astype(dtype)
    check(f, x, ints(40, 7, low=-7), v)


@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.minimum], ids=lambda u: u.__name__)
def test_ufunc_at_nan_and_signed_zero_combine_as_numpy(ufunc):
    def f(x, i, v):
        ufunc.at(x, i, v)
        return x
    v = np.array([np.nan, -0.0, 1.0, -np.inf, 0.0, np.nan, 2.0])
    check(f, np.array([0.0, -0.0, np.nan]), np.array([0, 1, 1, 2, 1, 2, 0]), v)


def test_ufunc_at_on_bool_and_rows():
    def f(b, m, i, r):
        np.add.at(b, i, True)           # logical or
        np.multiply.at(m, i, r)         # whole rows, repeated
        return b, m
    check(f, np.zeros(4, bool), rand(4, 3), np.array([3, 0, 3]), rand(3, 3, seed=5))


def test_ufunc_at_float_sums_follow_index_order_bit_for_bit():
    # 1e16 + 1 + 1 != 1e16 + 2: the order of the additions shows in the result
    def f(x, i, v):
        np.add.at(x, i, v)
        return x
    v = np.array([1e16, 1.0, 1.0, -1e16, 1.0] * 20)
    check(f, np.zeros(3), np.array([0, 0, 0, 0, 1] * 20), v)


def test_ufunc_at_with_a_scalar_and_a_2d_index():
    def f(x, i):
        np.add.at(x, (i, 1), 1)
        np.subtract.at(x, i, 0.5)
        return x
    check(f, np.zeros((4, 3)), np.array([[0, 2], [2, 2]]))


def test_ufunc_at_drops_traced_indices_out_of_range():
    # NumPy raises IndexError; jit cannot raise on traced values, so (like JAX's
    # mode="drop") the update is left out: docs/semantics.md says so
    def f(x, i):
        np.add.at(x, i, 1.0)
        return x
    got = jitlib.jit(f, backend="cpu")(np.zeros(3), np.array([0, 3, -4, 2, -1]))
    assert got.tolist() == [1.0, 0.0, 2.0]


def test_ufunc_at_with_concrete_indices_out_of_range_raises_as_numpy():
    def f(x):
        np.add.at(x, [0, 5], 1.0)
        return x
    raises_like_numpy(f, np.zeros(3), match="out of bounds")


def test_ufunc_at_refuses_a_wider_loop_than_the_array():
    def f(x, v):
        np.add.at(x, [0, 0], v)
        return x
    err = refused(f, np.zeros(2, F32), np.ones(2), match="float64")
    assert "astype" in str(err)
    check(lambda x, v: f(x, v.astype(x.dtype)), np.zeros(2, F32), np.full(2, 0.1))


def test_ufunc_at_of_other_ufuncs_is_refused_with_what_works():
    def f(x):
        np.divide.at(x, [0], 2.0)
        return x
    assert "x.at[i].divide" in str(refused(f, np.ones(2), match="np.divide.at"))
